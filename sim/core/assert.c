/* Assertion failure path (see assert.h). */
#include "core/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void sim__assert_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: internal error: assertion `%s' failed: ", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}
