/* Error codes and diagnostics.
 *
 * Functions that can fail return 0 or a negative SIM_E* code; the X-macro table yields
 * both the enum and the message strings. Bad input (files, flags) additionally fills a
 * sim_diag with the location and text that the CLI prints as one line
 * `FILE:LINE:COL: error: message`, optionally followed by hint lines starting with two spaces. */
#ifndef SIM_CORE_ERROR_H
#define SIM_CORE_ERROR_H

#include <stdarg.h>
#include <stdio.h>

#define SIM_ERRNO_MAP(X)                                          \
    X(NOMEM,    "out of memory")                                  \
    X(INVAL,    "invalid input")                                  \
    X(NOENT,    "no such file")                                   \
    X(IO,       "input/output error")                         \
    X(NOTSUP,   "not supported yet")                              \
    X(INTERNAL, "internal error")

enum {
    SIM_OK = 0,
#define SIM__ERR_ENUM(name, msg) SIM_E##name,
    SIM__ERR_FIRST = -64,
    SIM_ERRNO_MAP(SIM__ERR_ENUM)
#undef SIM__ERR_ENUM
    SIM__ERR_LAST
};

/* Message for a SIM_E* code (or "ok" for 0). Returns a static string; cannot fail. */
const char *sim_strerror(int err);

/* Where and what went wrong in an input. `file` is the path as the user named it, or a
 * pseudo-origin such as "--set KEY=VALUE" (then line is 0 and no position is printed). */
#define SIM_DIAG_FILE_MAX 1024
#define SIM_DIAG_MSG_MAX 1024
#define SIM_DIAG_HINT_MAX 2048
typedef struct sim_diag {
    int set; /* 1 once the first error was recorded; later ones are ignored */
    char file[SIM_DIAG_FILE_MAX];
    int line, col; /* 1-based; 0 = no position */
    char msg[SIM_DIAG_MSG_MAX];
    char hints[SIM_DIAG_HINT_MAX]; /* "\n"-separated hint lines, without the indent */
} sim_diag;

/* Records the first error only (the one the user should fix first). Returns SIM_EINVAL so
 * callers can write `return sim_diag_error(d, ...)`. `d` may be NULL (then only returns). */
int sim_diag_error(sim_diag *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Same with an explicit error code to return (SIM_ENOENT, SIM_ENOTSUP...). */
int sim_diag_error_code(sim_diag *d, int code, const char *file, int line, int col,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Appends a hint line to the recorded error (ignored when no error is recorded or when the
 * error was recorded before this hint's producer ran: hints attach to the current error). */
void sim_diag_hint(sim_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints `FILE:LINE:COL: error: msg` (or `FILE: error: msg` without a position) and the
 * hints, each on its own line starting with two spaces. */
void sim_diag_print(const sim_diag *d, FILE *out);

/* Opens input file `path` read-only (close-on-exec) and checks, on the open descriptor, that
 * it is a regular file: a FIFO would block the open and every read for ever, a directory or
 * a device is no input. The open does not wait (O_NONBLOCK, cleared again before the
 * descriptor is returned). Returns the descriptor; or -1 with errno set when the file cannot
 * be opened; or -1 with errno 0 and *kind naming what it is ("a FIFO", "a directory", "a
 * character device", "a block device", "a socket") when it is not a regular file. */
int sim_open_regular(const char *path, const char **kind);

#endif
