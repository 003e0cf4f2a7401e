/* Checks, lock and signal flag of the commands that write a file (output.h). */
#include "core/sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output.h"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

int cli_output_check(const char *opt, const char *path, const char *const *inputs,
                     size_t n_inputs)
{
    if (!path[0])
        return cli_invalid(opt, "the output path is empty", NULL,
                           "name the file to write, e.g. -o out.h5");
    struct stat st, lst;
    if (lstat(path, &lst) != 0)
        return 0; /* absent: created by the rename; an unwritable place fails on creation */
    if (stat(path, &st) != 0)
        return 0; /* a dangling symlink: the rename replaces the link */
    if (!S_ISREG(st.st_mode)) {
        char msg[160];
        snprintf(msg, sizeof msg, "the output exists and is %s%s; refusing to replace it",
                 kind_of(st.st_mode), S_ISLNK(lst.st_mode) ? " (through a symlink)" : "");
        return cli_invalid(path, msg, NULL, "write the results to a regular file");
    }
    for (size_t i = 0; i < n_inputs; i++) {
        struct stat in;
        if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev &&
            in.st_ino == st.st_ino)
            return cli_invalid(path, "the output would overwrite an input of this command:",
                               inputs[i], "write the results elsewhere");
    }
    return 0;
}

/* The pid recorded in a lock file, or 0. */
static long lock_owner(int fd)
{
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* What a failed assertion removes on its way out (cli_fatal_cleanup): the lock file and the
 * temporary of each output whose lock this process holds. Fixed slots of copied paths: the
 * hook runs where malloc may be broken and may only unlink. The second mutable global of the
 * program, for the same reason as `received` below: a dying process reaches nothing else. */
#define CLEANUP_SLOTS 8
#define CLEANUP_PATH 4352
static char cleanup_paths[CLEANUP_SLOTS][CLEANUP_PATH];

static void cleanup_add(const char *path)
{
    if (strlen(path) >= CLEANUP_PATH)
        return; /* open() would have refused it already */
    for (size_t i = 0; i < CLEANUP_SLOTS; i++)
        if (!cleanup_paths[i][0]) {
            memcpy(cleanup_paths[i], path, strlen(path) + 1);
            return;
        }
}

static void cleanup_drop(const char *path)
{
    for (size_t i = 0; i < CLEANUP_SLOTS; i++)
        if (strcmp(cleanup_paths[i], path) == 0) {
            cleanup_paths[i][0] = '\0';
            return;
        }
}

/* "PATH.tmp-PID", the temporary every writer of PATH uses (h5table.c, export.c). */
static void temporary_of(const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "%s.tmp-%ld", path, (long)getpid());
}

void cli_fatal_cleanup(void)
{
    for (size_t i = 0; i < CLEANUP_SLOTS; i++)
        if (cleanup_paths[i][0])
            unlink(cleanup_paths[i]);
}

int cli_output_lock_take(cli_output_lock *l, const char *path)
{
    *l = (cli_output_lock){.fd = -1};
    size_t len = strlen(path) + 8;
    char *lp = sim_calloc(len, 1);
    snprintf(lp, len, "%s.lock", path);
    for (;;) {
        int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            fprintf(stderr, "%s: error: cannot create the lock file '%s': %s\n", path, lp,
                    strerror(errno));
            sim_free(lp);
            return CLI_EXIT_INVALID;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            long pid = lock_owner(fd);
            close(fd);
            sim_free(lp);
            if (pid > 0)
                fprintf(stderr, "%s: error: another stepsim is writing it (pid %ld)\n", path,
                        pid);
            else
                fprintf(stderr, "%s: error: another stepsim is writing it\n", path);
            return CLI_EXIT_INVALID;
        }
        /* the holder before us may have removed the file between our open and flock: then
         * we hold a lock nobody else sees; start again on the file now at that path */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lp, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
                /* the pid is only for the message of the next process: the lock holds */
            }
            l->path = lp;
            l->fd = fd;
            char tmp[CLEANUP_PATH];
            temporary_of(path, tmp, sizeof tmp);
            cleanup_add(tmp);
            cleanup_add(lp);
            return 0;
        }
        close(fd);
    }
}

void cli_output_lock_release(cli_output_lock *l)
{
    if (!l->path)
        return;
    char tmp[CLEANUP_PATH];
    size_t len = strlen(l->path) - strlen(".lock");
    snprintf(tmp, sizeof tmp, "%.*s", (int)len, l->path);
    char t2[CLEANUP_PATH + 32];
    temporary_of(tmp, t2, sizeof t2);
    cleanup_drop(t2);
    cleanup_drop(l->path);
    unlink(l->path); /* before closing: a waiting process then re-checks the path */
    close(l->fd);
    sim_free(l->path);
    *l = (cli_output_lock){.fd = -1};
}

int cli_output_remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    char *dir = sim_calloc(dlen + 2, 1);
    if (slash)
        memcpy(dir, path, dlen ? dlen : 1); /* "/x" lives in "/" */
    else
        dir[0] = '.';
    DIR *d = opendir(dir);
    int removed = 0;
    size_t blen = strlen(base);
    while (d) {
        struct dirent *e = readdir(d);
        if (!e)
            break;
        const char *n = e->d_name;
        if (strncmp(n, base, blen) != 0 || strncmp(n + blen, ".tmp-", 5) != 0)
            continue;
        const char *digits = n + blen + 5;
        if (!*digits || strspn(digits, "0123456789") != strlen(digits))
            continue;
        size_t plen = strlen(dir) + strlen(n) + 2;
        char *p = sim_calloc(plen, 1);
        snprintf(p, plen, "%s/%s", dir, n);
        removed += unlink(p) == 0;
        sim_free(p);
    }
    if (d)
        closedir(d);
    sim_free(dir);
    return removed;
}

/* The one mutable global of the program: a signal handler can reach nothing else. */
static volatile sig_atomic_t received;

static void on_signal(int sig)
{
    if (!received)
        received = sig;
}

void cli_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* reads and writes go on; the loops poll the flag */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

const volatile sig_atomic_t *cli_signal_flag(void)
{
    return &received;
}

int cli_signal_exit(const char *what)
{
    return cli_signal_report(received, what);
}

int cli_signal_report(int sig, const char *what)
{
    if (!sig)
        return 0;
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    fprintf(stderr, "stepsim: interrupted by %s; %s\n", name, what);
    return 128 + sig;
}
