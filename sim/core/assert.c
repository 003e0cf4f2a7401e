/* Assertion failure path (see assert.h). */
#include "core/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* The one mutable state of core: set once by the CLI before any work, read only on the way
 * out of a failed assertion, where no context object can be reached. */
static void (*fatal_hook)(void);
static volatile int failing;

void sim_set_fatal_hook(void (*hook)(void))
{
    fatal_hook = hook;
}

void sim__assert_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: internal error: assertion `%s' failed: ", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    if (!failing) {
        failing = 1;
        if (fatal_hook)
            fatal_hook();
    }
    _exit(1);
}
