/* The pre-walk of an HDF5 input (h5read.h): libhdf5 itself crashes, loops or overruns its
 * buffers on some corrupted files (the fuzzer found heap overflows in H5HG_read, overlapping
 * memcpy and endless loops on damaged global heaps), which no check of ours can prevent once
 * it runs in our process. So a forked child reads everything first: every link (hard, soft
 * and external, as the readers' paths would follow them), every attribute, every dataset in
 * slices of at most WALK_SLICE_BYTES, variable-length strings included. Only a child that
 * exits 0 lets the real reader open the file. */
#include "core/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "results/h5-internal.h"
#include "results/h5read.h"

#define WALK_SLICE_BYTES ((size_t)4 << 20)
/* As h5read.c: rows that were written take at least their bytes / this in storage. */
#define WALK_DEFLATE_MAX_RATIO 1100.0
#define CHILD_OK 0
#define CHILD_HDF5_ERROR 3

/* Under a sanitizer (the fuzz build) a report in the child would run the fuzzer's death
 * callback, which saves the input as a crash of the fuzzer's own process; the child clears
 * it. Absent (NULL) in a build without a sanitizer. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

typedef struct walk {
    hid_t file;
    char where[512]; /* the object being read, for the reason */
    int failed;
} walk;

static void walk_fail(walk *w, const char *what, const char *name)
{
    if (!w->failed)
        snprintf(w->where, sizeof w->where, "%s %s", what, name);
    w->failed = 1;
}

/* Closes what read_attr and read_dataset opened (negative: not opened). */
static void close_types(hid_t mt, hid_t space, hid_t ft)
{
    if (mt >= 0)
        H5Tclose(mt);
    if (space >= 0)
        H5Sclose(space);
    if (ft >= 0)
        H5Tclose(ft);
}

/* Reads an attribute whole as its native type (at most WALK_SLICE_BYTES) and gives its
 * variable-length data back. */
static int read_attr(hid_t a)
{
    hid_t ft = H5Aget_type(a), space = H5Aget_space(a);
    hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
    int rc = -1;
    if (mt >= 0 && n >= 0 && size > 0 && (size_t)n <= WALK_SLICE_BYTES / size) {
        void *buf = sim_calloc((size_t)n + 1, size);
        if (n == 0 || H5Aread(a, mt, buf) >= 0) {
            rc = 0;
            if (n > 0 && H5Tdetect_class(mt, H5T_VLEN) + H5Tdetect_class(mt, H5T_STRING) > 0)
                H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf);
        }
        sim_free(buf);
    }
    close_types(mt, space, ft);
    return rc;
}

static herr_t visit_attr(hid_t obj, const char *name, const H5A_info_t *info, void *ud)
{
    (void)info;
    walk *w = ud;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0 || read_attr(a) != 0)
        walk_fail(w, "attribute", name);
    if (a >= 0)
        H5Aclose(a);
    return w->failed ? -1 : 0;
}

/* Reads a dataset along its first dimension, at most WALK_SLICE_BYTES at a time. A dataset
 * claiming more elements than its storage can hold is left to the reader, which refuses it
 * (h5read.c): reading it would only allocate or loop. */
static int read_dataset(hid_t d)
{
    hid_t ft = H5Dget_type(d), space = H5Dget_space(d);
    hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
    hsize_t dims[H5S_MAX_RANK];
    int rc = -1;
    if (mt < 0 || rank < 0 || size == 0 || H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        goto out;
    hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n <= 0 || H5Sget_simple_extent_type(space) == H5S_NULL) {
        rc = n < 0 ? -1 : 0;
        goto out;
    }
    if ((double)n * (double)H5Tget_size(ft) / WALK_DEFLATE_MAX_RATIO >
        (double)H5Dget_storage_size(d)) {
        rc = 0;
        goto out;
    }
    if (rank == 0) { /* a scalar: one element */
        rank = 1;
        dims[0] = 1;
    }
    double row = (double)size; /* bytes of one index of the first dimension */
    for (int i = 1; i < rank; i++)
        row *= (double)dims[i];
    if (row > (double)WALK_SLICE_BYTES)
        goto out; /* stepsim writes 1-D tables: a row this wide is no input of ours */
    hsize_t per = (hsize_t)((double)WALK_SLICE_BYTES / row);
    if (per == 0)
        per = 1;
    void *buf = sim_calloc((size_t)(per * (hsize_t)row / size) + 1, size);
    bool vlen = H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tdetect_class(mt, H5T_STRING) > 0;
    rc = 0;
    bool scalar = H5Sget_simple_extent_type(space) == H5S_SCALAR;
    for (hsize_t at = 0; rc == 0 && at < dims[0]; at += per) {
        hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
        for (int i = 0; i < rank; i++)
            count[i] = dims[i];
        start[0] = at;
        count[0] = dims[0] - at < per ? dims[0] - at : per;
        hid_t ms = H5Screate_simple(rank, count, NULL);
        if (ms < 0 ||
            (!scalar &&
             H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0) ||
            H5Dread(d, mt, scalar ? H5S_ALL : ms, scalar ? H5S_ALL : space, H5P_DEFAULT,
                    buf) < 0)
            rc = -1;
        else if (vlen)
            H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, buf);
        if (ms >= 0)
            H5Sclose(ms);
    }
    sim_free(buf);
out:
    close_types(mt, space, ft);
    return rc;
}

/* Opens object `name` as the readers' paths would (following soft and external links) and
 * reads its attributes, and its data when it is a dataset. An object that cannot be opened is
 * no crash: the reader says so itself if it needs it. */
static int walk_object(hid_t loc, const char *name, walk *w)
{
    hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
    if (o < 0)
        return 0;
    H5O_info_t info;
    if (H5Oget_info2(o, &info, H5O_INFO_BASIC) < 0) {
        walk_fail(w, "object", name);
    } else {
        hsize_t idx = 0;
        if (H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, visit_attr, w) < 0)
            walk_fail(w, "attributes of", name);
        if (!w->failed && info.type == H5O_TYPE_DATASET && read_dataset(o) != 0)
            walk_fail(w, "dataset", name);
    }
    H5Oclose(o);
    return w->failed ? -1 : 0;
}

static herr_t visit_link(hid_t g, const char *name, const H5L_info_t *info, void *ud)
{
    (void)info;
    walk *w = ud;
    return walk_object(g, name, w) ? -1 : 0;
}

/* The child: walks the file and writes the reason of a failure to `fd`. Never returns. */
static void child(const char *path, int fd)
{
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGILL, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(NULL);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) { /* nothing of the child's reaches the user: the parent says what failed */
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(null);
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    walk w = {.file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)};
    if (w.file < 0) {
        walk_fail(&w, "file", "");
    } else {
        if (walk_object(w.file, "/", &w) == 0 &&
            H5Lvisit(w.file, H5_INDEX_NAME, H5_ITER_INC, visit_link, &w) < 0)
            walk_fail(&w, "links of", "/");
    }
    int code = CHILD_OK;
    if (w.failed) {
        char reason[RESULTS_H5_REASON_MAX], msg[RESULTS_H5_REASON_MAX + 600];
        results__h5_reason(reason, sizeof reason);
        int len = snprintf(msg, sizeof msg, "%s: %s", w.where, reason);
        if (len > 0)
            (void)!write(fd, msg, SIM_MIN((size_t)len, sizeof msg - 1));
        code = CHILD_HDF5_ERROR;
    }
    _exit(code); /* no atexit handler, no flush of the parent's buffers */
}

double results_h5r_prewalk_limit_s(double file_bytes)
{
    return RESULTS_H5R_PREWALK_BASE_S + file_bytes / RESULTS_H5R_PREWALK_BYTES_PER_S;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int corrupted(sim_diag *diag, const char *path, const char *why)
{
    int rc = sim_diag_error(diag, path, 0, 0, "corrupted HDF5 file (%s)", why);
    sim_diag_hint(diag, "libhdf5 cannot read it safely; write the file again (stepsim "
                        "trace, run or sweep) or restore it from a copy");
    return rc;
}

int results_h5r_prewalk(const char *path, double limit_s, sim_diag *diag)
{
    const char *kind;
    int probe = sim_open_regular(path, &kind);
    if (probe < 0)
        return 0; /* not a regular file, or not there: the reader says so */
    struct stat st;
    double size = fstat(probe, &st) == 0 ? (double)st.st_size : 0;
    close(probe);
    H5E_auto2_t old_func;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    htri_t is = H5Fis_hdf5(path); /* the signature only */
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    if (is <= 0)
        return 0; /* "not an HDF5 file", from the reader */
    const char *env = getenv("STEPSIM_PREWALK_LIMIT_S");
    if (limit_s <= 0 && env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v > 0 && v < 1e9)
            limit_s = v;
    }
    if (limit_s <= 0)
        limit_s = results_h5r_prewalk_limit_s(size);
    int fds[2];
    if (pipe(fds) != 0)
        return sim_diag_error_code(diag, SIM_EIO, path, 0, 0, "cannot check the file: %s",
                                   strerror(errno));
    fflush(NULL); /* the child must not write out the parent's buffers */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return sim_diag_error_code(diag, SIM_EIO, path, 0, 0, "cannot check the file: %s",
                                   strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        child(path, fds[1]);
    }
    close(fds[1]);
    /* The child's reason, until it closes the pipe (it exits) or the time is up. */
    char reason[RESULTS_H5_REASON_MAX + 600] = "";
    size_t got = 0;
    double deadline = now_s() + limit_s;
    bool timed_out = false;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, left > 3600 ? 3600 * 1000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* the loop's clock decides */
        ssize_t k = read(fds[0], reason + got, sizeof reason - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* end of file: the child is gone */
        got += (size_t)k;
        if (got == sizeof reason - 1)
            break;
    }
    reason[got] = '\0';
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char why[RESULTS_H5_REASON_MAX + 700];
    if (timed_out) {
        snprintf(why, sizeof why, "reading it took more than %.0f s", limit_s);
    } else if (WIFSIGNALED(status)) {
        snprintf(why, sizeof why, "libhdf5 crashed reading it: %s", strsignal(WTERMSIG(status)));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK) {
        return 0;
    } else if (reason[0]) {
        snprintf(why, sizeof why, "%s", reason);
    } else {
        snprintf(why, sizeof why, "libhdf5 failed reading it (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return corrupted(diag, path, why);
}
