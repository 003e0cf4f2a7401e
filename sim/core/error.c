/* Error strings and input diagnostics (see error.h). */
#include "core/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sim_strerror(int err)
{
    switch (err) {
    case SIM_OK:
        return "ok";
#define SIM__ERR_CASE(name, msg) \
    case SIM_E##name:            \
        return msg;
        SIM_ERRNO_MAP(SIM__ERR_CASE)
#undef SIM__ERR_CASE
    default:
        return "unknown error";
    }
}

/* Rewrites `s` (a buffer of `size` bytes) with its control characters escaped (\n, \r, \t,
 * \xHH), so that a value quoted from an input file keeps the error on one line; truncates at
 * the buffer's end. */
static void escape_controls(char *s, size_t size)
{
    char tmp[SIM_MAX(SIM_DIAG_MSG_MAX, SIM_DIAG_FILE_MAX)];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 < sizeof tmp; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            tmp[n++] = (char)*p;
            continue;
        }
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, *p == '\n'   ? "\\n"
                                                       : *p == '\r' ? "\\r"
                                                       : *p == '\t' ? "\\t"
                                                                    : "\\x%02x",
                              *p);
    }
    tmp[n] = '\0';
    snprintf(s, size, "%s", tmp);
}

static int diag_vset(sim_diag *d, int code, const char *file, int line, int col, const char *fmt,
                     va_list ap)
{
    if (!d || d->set)
        return code;
    d->set = 1;
    snprintf(d->file, sizeof d->file, "%s", file ? file : "");
    d->line = line;
    d->col = col;
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    escape_controls(d->msg, sizeof d->msg);
    escape_controls(d->file, sizeof d->file);
    d->hints[0] = '\0';
    return code;
}

int sim_diag_error(sim_diag *d, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = diag_vset(d, SIM_EINVAL, file, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

int sim_diag_error_code(sim_diag *d, int code, const char *file, int line, int col,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = diag_vset(d, code, file, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

void sim_diag_hint(sim_diag *d, const char *fmt, ...)
{
    if (!d || !d->set)
        return;
    size_t len = strlen(d->hints);
    if (len + 2 >= sizeof d->hints)
        return;
    if (len > 0)
        d->hints[len++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->hints + len, sizeof d->hints - len, fmt, ap);
    va_end(ap);
}

void sim_diag_print(const sim_diag *d, FILE *out)
{
    if (!d->set)
        return;
    if (d->line > 0)
        fprintf(out, "%s:%d:%d: error: %s\n", d->file, d->line, d->col > 0 ? d->col : 1, d->msg);
    else
        fprintf(out, "%s: error: %s\n", d->file, d->msg);
    const char *h = d->hints;
    while (*h) {
        const char *nl = strchr(h, '\n');
        size_t n = nl ? (size_t)(nl - h) : strlen(h);
        fprintf(out, "  %.*s\n", (int)n, h);
        h += n + (nl ? 1 : 0);
    }
}

int sim_open_regular(const char *path, const char **kind)
{
    *kind = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        *kind = S_ISDIR(st.st_mode)    ? "a directory"
                : S_ISFIFO(st.st_mode) ? "a FIFO"
                : S_ISCHR(st.st_mode)  ? "a character device"
                : S_ISBLK(st.st_mode)  ? "a block device"
                : S_ISSOCK(st.st_mode) ? "a socket"
                                       : "of another kind";
        close(fd);
        errno = 0;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}
