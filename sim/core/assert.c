/* Assertion failure path (see assert.h). */
#include "core/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Process-wide by nature, like abort() itself: set once by the CLI before any work. */
static void (*abort_hook)(void);

void sim_set_abort_hook(void (*hook)(void))
{
    abort_hook = hook;
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
    if (abort_hook)
        abort_hook();
    abort();
}
