/* Reading results files back (see h5read.h). */
#include "core/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "results/h5-internal.h"
#include "results/h5read.h"

#define REASON_MAX 256
/* zlib's best compression ratio (about 1032:1 on runs of one byte), with room to spare. */
#define DEFLATE_MAX_RATIO 1100.0

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
    /* Walked upward, error 0 is the most specific one: the one worth showing. */
    if (n == 0 && e->desc)
        snprintf(data, REASON_MAX, "%s", e->desc);
    return 0;
}

void results__h5_reason(char *buf, size_t n)
{
    char reason[REASON_MAX] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, reason);
    const char *sys = strstr(reason, "error message = '");
    if (sys) {
        sys += strlen("error message = '");
        const char *end = strchr(sys, '\'');
        size_t len = end ? (size_t)(end - sys) : strlen(sys);
        memmove(reason, sys, len);
        reason[len] = '\0';
    }
    snprintf(buf, n, "%s", reason[0] ? reason : "HDF5 error");
}

struct results_h5r_file {
    char *path;
    sim_diag *diag;
    hid_t file;
    hid_t str_t;
    char **runs;
    size_t n_runs;
    H5E_auto2_t old_func;
    void *old_data;
};

struct results_h5r_table {
    results_h5r_file *f;
    char *path;
    hid_t dset, mem_t;
    size_t rows, row_size;
};

static void quiet(results_h5r_file *f)
{
    H5Eget_auto2(H5E_DEFAULT, &f->old_func, &f->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void loud(const results_h5r_file *f)
{
    H5Eset_auto2(H5E_DEFAULT, f->old_func, f->old_data);
}

static int fail(results_h5r_file *f, int code, const char *what)
{
    char reason[REASON_MAX];
    results__h5_reason(reason, sizeof reason);
    return sim_diag_error_code(f->diag, code, f->path, 0, 0, "%s: %s", what, reason);
}

static herr_t add_run(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    results_h5r_file *f = data;
    f->runs = sim_realloc_array(f->runs, f->n_runs + 1, sizeof *f->runs);
    f->runs[f->n_runs++] = sim_strdup(name);
    return 0;
}

int results_h5r_open_kind(const char *path, const char *version_attr, int want, const char *what,
                     results_h5r_file **out, sim_diag *diag)
{
    results_h5r_file *f = sim_calloc(1, sizeof *f);
    f->path = sim_strdup(path);
    f->diag = diag;
    f->file = f->str_t = -1;
    *out = NULL;
    quiet(f);
    int rc = 0;
    const char *kind;
    int probe = sim_open_regular(path, &kind); /* H5Fopen would block on a FIFO */
    if (probe < 0 && kind) {
        rc = sim_diag_error_code(diag, SIM_EINVAL, path, 0, 0, "not a regular file (%s)", kind);
    } else if (probe < 0) {
        rc = sim_diag_error_code(diag, SIM_EINVAL, path, 0, 0, "cannot open file: %s",
                                 strerror(errno));
    } else {
        close(probe);
        if (H5Fis_hdf5(path) <= 0)
            rc = sim_diag_error_code(diag, SIM_EINVAL, path, 0, 0,
                                     "not an HDF5 file (expected a stepsim %s)", what);
    }
    if (!rc) {
        f->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f->file < 0)
            rc = fail(f, SIM_EIO, "cannot open file");
    }
    if (!rc) {
        f->str_t = H5Tcopy(H5T_C_S1);
        H5Tset_size(f->str_t, H5T_VARIABLE);
        H5Tset_cset(f->str_t, H5T_CSET_UTF8);
    }
    int version = 0;
    if (!rc && (H5Aexists(f->file, version_attr) <= 0 ||
                results_h5r_attr_int(f, "/", version_attr, &version) != 0 || version != want))
        rc = sim_diag_error_code(diag, SIM_EINVAL, path, 0, 0,
                                 "not a stepsim %s of version %d (root attribute %s is missing "
                                 "or %d)", what, want, version_attr, version);
    loud(f);
    if (rc) {
        results_h5r_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

int results_h5r_open(const char *path, results_h5r_file **out, sim_diag *diag)
{
    int rc = results_h5r_open_kind(path, "schema_version", 1, "results file", out, diag);
    if (rc)
        return rc;
    results_h5r_file *f = *out;
    quiet(f);
    if (H5Lexists(f->file, "runs", H5P_DEFAULT) <= 0) {
        rc = sim_diag_error_code(diag, SIM_EINVAL, path, 0, 0, "no /runs group");
    } else {
        hid_t g = H5Gopen2(f->file, "runs", H5P_DEFAULT);
        if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_run, f) < 0)
            rc = fail(f, SIM_EIO, "cannot read /runs");
        if (g >= 0)
            H5Gclose(g);
    }
    loud(f);
    if (rc) {
        results_h5r_close(f);
        *out = NULL;
    }
    return rc;
}

void results_h5r_close(results_h5r_file *f)
{
    if (!f)
        return;
    quiet(f);
    if (f->str_t >= 0)
        H5Tclose(f->str_t);
    if (f->file >= 0)
        H5Fclose(f->file);
    loud(f);
    for (size_t i = 0; i < f->n_runs; i++)
        sim_free(f->runs[i]);
    sim_free(f->runs);
    sim_free(f->path);
    sim_free(f);
}

size_t results_h5r_runs(const results_h5r_file *f, const char *const **names)
{
    *names = (const char *const *)f->runs;
    return f->n_runs;
}

/* Opens attribute `attr` of `obj`, or records why not. */
static hid_t open_attr(results_h5r_file *f, const char *obj, const char *attr)
{
    if (H5Aexists_by_name(f->file, obj, attr, H5P_DEFAULT) <= 0) {
        sim_diag_error_code(f->diag, SIM_EINVAL, f->path, 0, 0, "%s has no attribute %s", obj,
                            attr);
        return -1;
    }
    hid_t a = H5Aopen_by_name(f->file, obj, attr, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        fail(f, SIM_EIO, "cannot read attribute");
    return a;
}

char *results_h5r_attr_str(results_h5r_file *f, const char *obj, const char *attr)
{
    quiet(f);
    char *out = NULL, *v = NULL;
    hid_t a = open_attr(f, obj, attr);
    if (a >= 0) {
        if (H5Aread(a, f->str_t, &v) >= 0) {
            out = sim_strdup(v ? v : "");
            H5free_memory(v);
        } else {
            fail(f, SIM_EIO, "cannot read attribute");
        }
        H5Aclose(a);
    }
    loud(f);
    return out;
}

/* A scalar attribute read as memory type `t` into *value. */
static int attr_number(results_h5r_file *f, const char *obj, const char *attr, hid_t t, void *value)
{
    quiet(f);
    int rc = SIM_EINVAL;
    hid_t a = open_attr(f, obj, attr);
    if (a >= 0) {
        rc = H5Aread(a, t, value) >= 0 ? 0 : fail(f, SIM_EIO, "cannot read attribute");
        H5Aclose(a);
    }
    loud(f);
    return rc;
}

int results_h5r_attr_int(results_h5r_file *f, const char *obj, const char *attr, int *value)
{
    return attr_number(f, obj, attr, H5T_NATIVE_INT, value);
}

int results_h5r_attr_f64(results_h5r_file *f, const char *obj, const char *attr, double *value)
{
    return attr_number(f, obj, attr, H5T_NATIVE_DOUBLE, value);
}

int results_h5r_table_open(results_h5r_file *f, const char *path, const results_h5r_field *fields,
                      size_t n_fields, size_t row_size, results_h5r_table **out)
{
    quiet(f);
    *out = NULL;
    int rc = 0;
    hid_t dset = -1, file_t = -1, mem_t = -1, space = -1;
    if (H5Lexists(f->file, path, H5P_DEFAULT) <= 0) {
        /* H5Lexists fails on a missing intermediate group: both mean "no such table" */
        rc = sim_diag_error_code(f->diag, SIM_EINVAL, f->path, 0, 0, "no table %s", path);
        goto out;
    }
    dset = H5Dopen2(f->file, path, H5P_DEFAULT);
    file_t = dset >= 0 ? H5Dget_type(dset) : -1;
    if (dset < 0 || file_t < 0 || H5Tget_class(file_t) != H5T_COMPOUND) {
        rc = sim_diag_error_code(f->diag, SIM_EINVAL, f->path, 0, 0, "%s is not a table", path);
        goto out;
    }
    mem_t = H5Tcreate(H5T_COMPOUND, row_size);
    for (size_t i = 0; i < n_fields; i++) {
        if (H5Tget_member_index(file_t, fields[i].name) < 0) {
            rc = sim_diag_error_code(f->diag, SIM_EINVAL, f->path, 0, 0,
                                     "table %s has no column %s", path, fields[i].name);
            goto out;
        }
        hid_t t = fields[i].type == RESULTS_H5R_I32   ? H5T_NATIVE_INT32
                  : fields[i].type == RESULTS_H5R_I64 ? H5T_NATIVE_INT64
                  : fields[i].type == RESULTS_H5R_F64 ? H5T_NATIVE_DOUBLE
                                                 : f->str_t;
        if (H5Tinsert(mem_t, fields[i].name, fields[i].offset, t) < 0) {
            rc = fail(f, SIM_EIO, "cannot read table");
            goto out;
        }
    }
    space = H5Dget_space(dset);
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (n < 0) {
        rc = fail(f, SIM_EIO, "cannot read table");
        goto out;
    }
    /* Rows that were written take storage: at least their bytes / DEFLATE_MAX_RATIO. A table
     * claiming more (a few bytes of header saying 2^40 rows) would have readers allocate or
     * loop for rows that are not there. */
    double need = (double)n * (double)H5Tget_size(file_t) / DEFLATE_MAX_RATIO;
    if (n > 0 && (double)H5Dget_storage_size(dset) < need) {
        rc = sim_diag_error_code(f->diag, SIM_EINVAL, f->path, 0, 0,
                                 "%s claims %lld rows but stores only %llu bytes", path,
                                 (long long)n, (unsigned long long)H5Dget_storage_size(dset));
        goto out;
    }
    results_h5r_table *t = sim_calloc(1, sizeof *t);
    *t = (results_h5r_table){.f = f, .path = sim_strdup(path), .dset = dset, .mem_t = mem_t,
                        .rows = (size_t)n, .row_size = row_size};
    dset = mem_t = -1;
    *out = t;
out:
    if (space >= 0)
        H5Sclose(space);
    if (file_t >= 0)
        H5Tclose(file_t);
    if (mem_t >= 0)
        H5Tclose(mem_t);
    if (dset >= 0)
        H5Dclose(dset);
    loud(f);
    return rc;
}

bool results_h5r_has_column(results_h5r_file *f, const char *path, const char *column)
{
    quiet(f);
    bool has = false;
    if (H5Lexists(f->file, path, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f->file, path, H5P_DEFAULT);
        hid_t t = d >= 0 ? H5Dget_type(d) : -1;
        has = t >= 0 && H5Tget_class(t) == H5T_COMPOUND && H5Tget_member_index(t, column) >= 0;
        if (t >= 0)
            H5Tclose(t);
        if (d >= 0)
            H5Dclose(d);
    }
    loud(f);
    return has;
}

size_t results_h5r_columns(results_h5r_file *f, const char *path, char (*names)[64],
                           results_h5r_type *types, size_t max)
{
    quiet(f);
    size_t n = 0;
    if (H5Lexists(f->file, path, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f->file, path, H5P_DEFAULT);
        hid_t t = d >= 0 ? H5Dget_type(d) : -1;
        int members = t >= 0 && H5Tget_class(t) == H5T_COMPOUND ? H5Tget_nmembers(t) : 0;
        for (int i = 0; i < members && n < max; i++) {
            char *name = H5Tget_member_name(t, (unsigned)i);
            H5T_class_t cls = H5Tget_member_class(t, (unsigned)i);
            hid_t mt = H5Tget_member_type(t, (unsigned)i);
            size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
            if (mt >= 0)
                H5Tclose(mt);
            if (name && (cls == H5T_INTEGER || cls == H5T_FLOAT || cls == H5T_STRING)) {
                snprintf(names[n], 64, "%s", name);
                types[n++] = cls == H5T_STRING  ? RESULTS_H5R_STR
                             : cls == H5T_FLOAT ? RESULTS_H5R_F64
                             : size > 4         ? RESULTS_H5R_I64
                                                : RESULTS_H5R_I32;
            }
            H5free_memory(name);
        }
        if (t >= 0)
            H5Tclose(t);
        if (d >= 0)
            H5Dclose(d);
    }
    loud(f);
    return n;
}

size_t results_h5r_table_rows(const results_h5r_table *t)
{
    return t->rows;
}

int results_h5r_table_read(results_h5r_table *t, size_t first, size_t n, void *rows)
{
    SIM_ASSERT(first + n <= t->rows, "rows %zu..%zu of %zu", first, first + n, t->rows);
    if (n == 0)
        return 0;
    quiet(t->f);
    memset(rows, 0, n * t->row_size);
    hsize_t start = first, count = n;
    hid_t fspace = H5Dget_space(t->dset), mspace = H5Screate_simple(1, &count, NULL);
    int rc = 0;
    if (fspace < 0 || mspace < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        H5Dread(t->dset, t->mem_t, mspace, fspace, H5P_DEFAULT, rows) < 0) {
        char what[300];
        snprintf(what, sizeof what, "cannot read %s", t->path);
        rc = fail(t->f, SIM_EIO, what);
    }
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    loud(t->f);
    return rc;
}

void results_h5r_release(results_h5r_table *t, void *rows, size_t n)
{
    if (n == 0)
        return;
    hsize_t count = n;
    hid_t mspace = H5Screate_simple(1, &count, NULL);
    H5Dvlen_reclaim(t->mem_t, mspace, H5P_DEFAULT, rows);
    H5Sclose(mspace);
}

void results_h5r_table_close(results_h5r_table *t)
{
    if (!t)
        return;
    quiet(t->f);
    H5Tclose(t->mem_t);
    H5Dclose(t->dset);
    loud(t->f);
    sim_free(t->path);
    sim_free(t);
}

int results_h5r_for_each(results_h5r_file *f, const char *path, const results_h5r_field *fields,
                         size_t n_fields, size_t row_size, size_t slice, results_h5r_slice_fn fn,
                         void *ud)
{
    results_h5r_table *t = NULL;
    int rc = results_h5r_table_open(f, path, fields, n_fields, row_size, &t);
    if (rc)
        return rc;
    size_t n = results_h5r_table_rows(t);
    void *rows = sim_calloc(slice, row_size);
    for (size_t at = 0; !rc && at < n; at += slice) {
        size_t k = n - at < slice ? n - at : slice;
        rc = results_h5r_table_read(t, at, k, rows);
        if (!rc) {
            rc = fn(ud, rows, at, k);
            results_h5r_release(t, rows, k);
        }
    }
    sim_free(rows);
    results_h5r_table_close(t);
    return rc;
}

double results_h5r_dataset_rows(results_h5r_file *f, const char *path)
{
    double rows = 0;
    H5E_BEGIN_TRY
    {
        hid_t d = H5Lexists(f->file, path, H5P_DEFAULT) > 0
                      ? H5Dopen2(f->file, path, H5P_DEFAULT) : -1;
        hid_t space = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t dims[1] = {0};
        if (space >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
            H5Sget_simple_extent_dims(space, dims, NULL) == 1)
            rows = (double)dims[0];
        if (space >= 0)
            H5Sclose(space);
        if (d >= 0)
            H5Dclose(d);
    }
    H5E_END_TRY;
    return rows;
}
