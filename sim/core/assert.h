/* Internal invariants. A failed SIM_ASSERT prints file:line, the expression and a formatted
 * message with the values involved to stderr, flushes it and calls abort() (SIGABRT; under
 * mpirun, Open MPI sees the rank die by a signal and terminates the whole job). Never used
 * for bad input: that is an error returned to the caller. */
#ifndef SIM_CORE_ASSERT_H
#define SIM_CORE_ASSERT_H

#define SIM_ASSERT(expr, ...)                                                   \
    do {                                                                        \
        if (!(expr))                                                            \
            sim__assert_fail(__FILE__, __LINE__, #expr, __VA_ARGS__);           \
    } while (0)

_Noreturn void sim__assert_fail(const char *file, int line, const char *expr,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
