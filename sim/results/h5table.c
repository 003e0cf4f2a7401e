/* Writing HDF5 tables and files (see h5-internal.h): the primitives the results writer
 * (h5.c) and the trace writer (tracefile.c) share. */
#include "core/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <hdf5.h>

#include "results/h5-internal.h"

/* ---- errors --------------------------------------------------------------------------- */

/* Records "cannot write WHAT: REASON" (first error only) and returns SIM_EIO. */
int results__h5_fail(h5_writer *w, const char *what)
{
    char reason[RESULTS_H5_REASON_MAX];
    results__h5_reason(reason, sizeof reason);
    if (!w->rc)
        w->rc = sim_diag_error_code(w->diag, SIM_EIO, w->path, 0, 0, "cannot write %s: %s", what,
                                    reason);
    return SIM_EIO;
}

/* ---- attributes ----------------------------------------------------------------------- */

/* Creates scalar attribute `name` of file type `file_t` on `obj` and writes *value (memory type
 * `mem_t`) into it. The error is recorded before anything else is called: every HDF5 API call
 * clears the error stack that h5_fail reads. */
static int h5_attr(h5_writer *w, hid_t obj, const char *obj_name, const char *name, hid_t file_t,
                   hid_t mem_t, const void *value)
{
    hid_t a = H5Acreate2(obj, name, file_t, w->scalar, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, mem_t, value) >= 0;
    int rc = 0;
    if (!ok || (a >= 0 && H5Aclose(a) < 0)) {
        char what[512];
        snprintf(what, sizeof what, "attribute %s of %s", name, obj_name);
        rc = results__h5_fail(w, what);
        if (a >= 0 && !ok)
            H5Aclose(a);
    }
    return rc;
}

int results__h5_attr_str(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                       const char *value)
{
    const char *v = value ? value : "";
    return h5_attr(w, obj, obj_name, name, w->str_t, w->str_t, &v);
}

int results__h5_attr_f64(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                    double value)
{
    return h5_attr(w, obj, obj_name, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

int results__h5_attr_int(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                       int32_t value)
{
    return h5_attr(w, obj, obj_name, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value);
}

/* ---- tables --------------------------------------------------------------------------- */

static hid_t h5_col_mem_type(const h5_writer *w, h5_col_type t)
{
    switch (t) {
    case COL_I32: return H5T_NATIVE_INT32;
    case COL_I64: return H5T_NATIVE_INT64;
    case COL_F64: return H5T_NATIVE_DOUBLE;
    case COL_STR: return w->str_t;
    }
    SIM_ASSERT(0, "column type %d", (int)t);
}

static hid_t h5_col_file_type(const h5_writer *w, h5_col_type t)
{
    switch (t) {
    case COL_I32: return H5T_STD_I32LE;
    case COL_I64: return H5T_STD_I64LE;
    case COL_F64: return H5T_IEEE_F64LE;
    case COL_STR: return w->str_t;
    }
    SIM_ASSERT(0, "column type %d", (int)t);
}

/* "col: unit, col: unit" for the columns that have a unit (the table's `units` attribute).
 * Returns a string owned by the caller (sim_free). */
static char *h5_units_text(const h5_table *t)
{
    size_t len = 1;
    for (size_t i = 0; i < t->n_cols; i++)
        if (t->cols[i].unit)
            len += strlen(t->cols[i].name) + strlen(t->cols[i].unit) + 4;
    char *s = sim_calloc(len, 1);
    size_t at = 0;
    for (size_t i = 0; i < t->n_cols; i++) {
        if (!t->cols[i].unit)
            continue;
        at += (size_t)snprintf(s + at, len - at, "%s%s: %s", at ? ", " : "", t->cols[i].name,
                               t->cols[i].unit);
    }
    return s;
}

/* The compound type of a row struct in memory (-1 on failure). */
hid_t results__h5_mem_type(const h5_writer *w, const h5_col *cols, size_t n_cols, size_t row_size)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, row_size);
    for (size_t i = 0; t >= 0 && i < n_cols; i++)
        if (H5Tinsert(t, cols[i].name, cols[i].offset, h5_col_mem_type(w, cols[i].type)) < 0) {
            H5Tclose(t);
            t = -1;
        }
    return t;
}

/* Creates and fills dataset `t->name` in `loc` (whose path is `loc_name`). */
int results__h5_write_table(h5_writer *w, hid_t loc, const char *loc_name, const h5_table *t)
{
    char what[512];
    snprintf(what, sizeof what, "%s/%s", strcmp(loc_name, "/") ? loc_name : "", t->name);

    hid_t mem_t = -1, file_t = -1, space = -1, dcpl = -1, dset = -1;
    char *units = NULL;
    int rc = 0;

    size_t file_size = 0;
    for (size_t i = 0; i < t->n_cols; i++)
        file_size += H5Tget_size(h5_col_file_type(w, t->cols[i].type));
    mem_t = results__h5_mem_type(w, t->cols, t->n_cols, t->row_size);
    file_t = H5Tcreate(H5T_COMPOUND, file_size);
    if (mem_t < 0 || file_t < 0)
        goto fail;
    size_t file_off = 0;
    for (size_t i = 0; i < t->n_cols; i++) {
        const h5_col *c = &t->cols[i];
        hid_t ft = h5_col_file_type(w, c->type);
        if (H5Tinsert(file_t, c->name, file_off, ft) < 0)
            goto fail;
        file_off += H5Tget_size(ft);
    }

    bool chunked = t->large || t->n_rows == 0;
    hsize_t dims = t->n_rows, maxdims = chunked ? H5S_UNLIMITED : t->n_rows;
    space = H5Screate_simple(1, &dims, &maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (space < 0 || dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0)
        goto fail;
    if (chunked) {
        /* About RESULTS_H5_CHUNK_BYTES per chunk, fewer rows when the table is smaller. */
        hsize_t chunk = RESULTS_H5_CHUNK_BYTES / file_size;
        if (t->n_rows > 0 && t->n_rows < chunk)
            chunk = t->n_rows;
        if (chunk == 0)
            chunk = 1;
        if (H5Pset_chunk(dcpl, 1, &chunk) < 0)
            goto fail;
        if (t->large && H5Pset_deflate(dcpl, RESULTS_H5_DEFLATE_LEVEL) < 0)
            goto fail;
    }
    dset = H5Dcreate2(loc, t->name, file_t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0)
        goto fail;
    if (t->n_rows > 0 && H5Dwrite(dset, mem_t, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->rows) < 0)
        goto fail;
    units = h5_units_text(t);
    rc = results__h5_attr_str(w, dset, what, "units", units);
    if (!rc && t->values)
        rc = results__h5_attr_str(w, dset, what, "values", t->values);
    goto out;
fail:
    rc = results__h5_fail(w, what);
out:
    sim_free(units);
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc)
        rc = results__h5_fail(w, what);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (file_t >= 0)
        H5Tclose(file_t);
    if (mem_t >= 0)
        H5Tclose(mem_t);
    return rc;
}


/* Makes the rename durable: fsync the directory that holds `path` (best effort: some file
 * systems refuse fsync on a directory, and the data itself is already synced). */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? sim_strdup(path) : sim_strdup(".");
    if (slash)
        dir[slash == path ? 1 : (size_t)(slash - path)] = '\0';
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    sim_free(dir);
}

int results__h5_guard(h5_writer *w, double growth)
{
    if (w->rc)
        return w->rc;
    struct stat st;
    double size = stat(w->tmp, &st) == 0 ? (double)st.st_size : 0;
    double need = size + growth + (double)RESULTS_H5_RESERVE;
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        need > (double)lim.rlim_cur)
        return w->rc = sim_diag_error_code(w->diag, SIM_EIO, w->path, 0, 0,
                                           "cannot write file: %s", strerror(EFBIG));
    struct statvfs vfs;
    if (statvfs(w->tmp, &vfs) == 0 &&
        size + (double)vfs.f_bavail * (double)vfs.f_frsize < need)
        return w->rc = sim_diag_error_code(w->diag, SIM_EIO, w->path, 0, 0,
                                           "cannot write file: %s", strerror(ENOSPC));
    return 0;
}

/* Bytes a table's rows may take in the file before compression: the packed row plus the
 * variable-length strings' global-heap entries (at most RESULTS_H5_STR_HEAP bytes each). */
double results__h5_rows_bytes(const h5_col *cols, size_t n_cols, size_t n_rows)
{
    double row = 0;
    for (size_t i = 0; i < n_cols; i++)
        row += cols[i].type == COL_STR ? 16 + RESULTS_H5_STR_HEAP : 8;
    return row * (double)n_rows;
}


int results__h5_create(h5_writer *w, const char *path, sim_diag *diag, double growth)
{
    *w = (h5_writer){.path = path, .diag = diag, .file = -1, .str_t = -1, .scalar = -1,
                     .gcpl = -1};
    size_t tmp_len = strlen(path) + 32;
    w->tmp = sim_calloc(tmp_len, 1);
    snprintf(w->tmp, tmp_len, "%s.tmp-%ld", path, (long)getpid());
    H5Eget_auto2(H5E_DEFAULT, &w->old_func, &w->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        w->rc = sim_diag_error_code(diag, SIM_EIO, path, 0, 0, "cannot create file: %s",
                                    strerror(errno));
        sim_free(w->tmp);
        w->tmp = NULL;
        return w->rc;
    }
    close(fd);
    if (results__h5_guard(w, growth))
        return w->rc;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    w->str_t = H5Tcopy(H5T_C_S1);
    w->scalar = H5Screate(H5S_SCALAR);
    w->gcpl = H5Pcreate(H5P_GROUP_CREATE);
    /* The root group takes its creation properties from the file creation plist. */
    if (fcpl < 0 || w->str_t < 0 || H5Tset_size(w->str_t, H5T_VARIABLE) < 0 ||
        H5Tset_cset(w->str_t, H5T_CSET_UTF8) < 0 || w->scalar < 0 || w->gcpl < 0 ||
        H5Pset_obj_track_times(w->gcpl, 0) < 0 || H5Pset_obj_track_times(fcpl, 0) < 0) {
        results__h5_fail(w, "file");
    } else {
        w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
        if (w->file < 0)
            results__h5_fail(w, "file");
    }
    if (fcpl >= 0)
        H5Pclose(fcpl);
    return w->rc;
}

int results__h5_finish(h5_writer *w)
{
    if (w->file >= 0 && H5Fclose(w->file) < 0)
        results__h5_fail(w, "file");
    w->file = -1;
    if (w->gcpl >= 0)
        H5Pclose(w->gcpl);
    if (w->scalar >= 0)
        H5Sclose(w->scalar);
    if (w->str_t >= 0)
        H5Tclose(w->str_t);
    w->gcpl = w->scalar = w->str_t = -1;
    H5Eset_auto2(H5E_DEFAULT, w->old_func, w->old_data);
    if (!w->rc && w->tmp) {
        int fd = open(w->tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) < 0)
            w->rc = sim_diag_error_code(w->diag, SIM_EIO, w->path, 0, 0,
                                        "cannot write file: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (!w->rc && rename(w->tmp, w->path) < 0)
        w->rc = sim_diag_error_code(w->diag, SIM_EIO, w->path, 0, 0, "cannot create file: %s",
                                    strerror(errno));
    if (w->rc && w->tmp)
        unlink(w->tmp);
    else if (!w->rc)
        sync_parent_dir(w->path);
    sim_free(w->tmp);
    w->tmp = NULL;
    return w->rc;
}

/* Writes the buffered rows (whole chunks, or all with `all`) at the end of the dataset. */
static int append_flush(h5_appender *a, bool all)
{
    h5_writer *w = a->w;
    size_t n = all ? a->n_buf : a->n_buf / a->chunk * a->chunk;
    if (w->rc || n == 0)
        return w->rc;
    if (results__h5_guard(w, results__h5_rows_bytes(a->cols, a->n_cols, n)))
        return w->rc;
    hsize_t start = a->rows, count = n, total = a->rows + n;
    hid_t fspace = -1, mspace = -1;
    if (H5Dset_extent(a->dset, &total) < 0 || (fspace = H5Dget_space(a->dset)) < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        (mspace = H5Screate_simple(1, &count, NULL)) < 0 ||
        H5Dwrite(a->dset, a->mem_t, mspace, fspace, H5P_DEFAULT, a->buf) < 0)
        results__h5_fail(w, a->what);
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    a->rows = total;
    memmove(a->buf, a->buf + n * a->row_size, (a->n_buf - n) * a->row_size);
    a->n_buf -= n;
    return w->rc;
}

int results__h5_append_begin(h5_appender *a, h5_writer *w, hid_t loc, const char *loc_name,
                        const h5_table *t)
{
    SIM_ASSERT(t->n_rows == 0 && t->large, "append to %s: the template must be empty, large",
               t->name);
    *a = (h5_appender){.w = w, .cols = t->cols, .n_cols = t->n_cols, .row_size = t->row_size,
                       .dset = -1, .mem_t = -1};
    snprintf(a->what, sizeof a->what, "%s/%s", strcmp(loc_name, "/") ? loc_name : "", t->name);
    if (results__h5_write_table(w, loc, loc_name, t))
        return w->rc;
    a->dset = H5Dopen2(loc, t->name, H5P_DEFAULT);
    hid_t dcpl = a->dset >= 0 ? H5Dget_create_plist(a->dset) : -1;
    a->mem_t = results__h5_mem_type(w, t->cols, t->n_cols, t->row_size);
    if (dcpl < 0 || a->mem_t < 0 || H5Pget_chunk(dcpl, 1, &a->chunk) != 1)
        results__h5_fail(w, a->what);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    a->cap_buf = (size_t)a->chunk * RESULTS_H5_APPEND_CHUNKS;
    a->buf = sim_calloc(a->cap_buf + 1, a->row_size);
    return w->rc;
}

int results__h5_append(h5_appender *a, const void *rows, size_t n)
{
    const char *p = rows;
    while (n > 0 && !a->w->rc) {
        size_t k = SIM_MIN(n, a->cap_buf - a->n_buf);
        memcpy(a->buf + a->n_buf * a->row_size, p, k * a->row_size);
        a->n_buf += k;
        p += k * a->row_size;
        n -= k;
        if (a->n_buf == a->cap_buf)
            append_flush(a, false);
    }
    return a->w->rc;
}

int results__h5_append_end(h5_appender *a)
{
    if (a->dset >= 0) {
        append_flush(a, true);
        if (H5Dclose(a->dset) < 0)
            results__h5_fail(a->w, a->what);
    }
    if (a->mem_t >= 0)
        H5Tclose(a->mem_t);
    sim_free(a->buf);
    a->buf = NULL;
    a->dset = a->mem_t = -1;
    a->n_buf = 0;
    return a->w ? a->w->rc : 0;
}
