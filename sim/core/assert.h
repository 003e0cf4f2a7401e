/* Internal invariants. A failed SIM_ASSERT prints file:line, the expression and a formatted
 * message with the values involved to stderr and flushes it, runs the fatal hook once (the
 * CLI's: it removes its temporary output and lock) and ends the process with _exit(1); under
 * mpirun, Open MPI sees the rank exit with a non-zero code and terminates the whole job.
 * Never used for bad input: that is an error returned to the caller. */
#ifndef SIM_CORE_ASSERT_H
#define SIM_CORE_ASSERT_H

#define SIM_ASSERT(expr, ...)                                                   \
    do {                                                                        \
        if (!(expr))                                                            \
            sim__assert_fail(__FILE__, __LINE__, #expr, __VA_ARGS__);           \
    } while (0)

_Noreturn void sim__assert_fail(const char *file, int line, const char *expr,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Sets the function a failed SIM_ASSERT calls after its message and before _exit(1) (NULL:
 * none). Core knows nothing of what it cleans; the hook must only do async-signal-safe work
 * (unlink) and not return to the simulation. A failure inside the hook does not call it
 * again. */
void sim_set_fatal_hook(void (*hook)(void));

#endif
