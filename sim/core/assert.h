/* Internal invariants. A failed SIM_ASSERT prints file:line, the expression and a formatted
 * message with the values involved, calls the abort hook (the CLI installs MPI_Abort under
 * MPI) and aborts. Never used for bad input: that is an error returned to the caller. */
#ifndef SIM_CORE_ASSERT_H
#define SIM_CORE_ASSERT_H

#define SIM_ASSERT(expr, ...)                                                   \
    do {                                                                        \
        if (!(expr))                                                            \
            sim__assert_fail(__FILE__, __LINE__, #expr, __VA_ARGS__);           \
    } while (0)

_Noreturn void sim__assert_fail(const char *file, int line, const char *expr,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Installs a function called before abort() on a failed assertion. The hook is process-wide
 * state by nature (it mirrors abort() itself); set it once at start-up. NULL removes it. */
void sim_set_abort_hook(void (*hook)(void));

#endif
