/* What the HDF5 writers (h5.c: results files, tracefile.c: trace files; primitives in
 * h5table.c) and the reader (h5read.c) share. Conventions: every table is a 1-D dataset of
 * a compound type, one member per column; the memory type describes the caller's row
 * struct, the file type is packed little-endian (no struct padding reaches the file);
 * strings are variable-length UTF-8; object time tracking is off, so the same calls give
 * byte-identical files. */
#ifndef SIM_RESULTS_H5_INTERNAL_H
#define SIM_RESULTS_H5_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <hdf5.h>

#include "core/error.h"

#define RESULTS_H5_CHUNK_BYTES ((size_t)1 << 20) /* target size of one chunk of a large table */
#define RESULTS_H5_DEFLATE_LEVEL 4
#define RESULTS_H5_REASON_MAX 256
#define RESULTS_H5_RESERVE                                                                         \
    ((size_t)64 << 20)           /* free space kept beyond the file (results__h5_guard) */
#define RESULTS_H5_STR_HEAP 64.0 /* global-heap bytes budgeted per variable-length string */

typedef enum h5_col_type { COL_I32, COL_I64, COL_F64, COL_STR } h5_col_type;

/* One column: its name, type, offset of the field in the row struct and unit (NULL for
 * identifiers and labels, which `units` does not list). */
typedef struct h5_col {
    const char *name;
    h5_col_type type;
    size_t offset;
    const char *unit;
} h5_col;

/* One table to write: `n_rows` rows of `row_size` bytes at `rows`. `large` tables are
 * chunked and deflated whatever their size; the others are contiguous unless empty.
 * `values` (may be NULL) becomes the table's `values` attribute. */
typedef struct h5_table {
    const char *name;
    const h5_col *cols;
    size_t n_cols;
    size_t row_size;
    const void *rows;
    size_t n_rows;
    bool large;
    const char *values;
} h5_table;

/* A file being written: "<path>.tmp-<pid>", renamed over `path` when complete. */
typedef struct h5_writer {
    const char *path; /* as the user named it, for messages */
    char *tmp;        /* the file being written */
    sim_diag *diag;
    int rc;           /* the first error (sticky) */
    hid_t file;
    hid_t str_t;  /* variable-length UTF-8 string */
    hid_t scalar; /* scalar dataspace for attributes */
    hid_t gcpl;   /* group creation: no time tracking */
    H5E_auto2_t old_func; /* HDF5's error printer, off between results__h5_create and _finish */
    void *old_data;
} h5_writer;

/* The innermost message of HDF5's current error stack, reduced to the system's message when
 * there is one (HDF5's descriptions of failed system calls carry "error message = '...'"
 * among other fields); "HDF5 error" when the stack is empty. */
void results__h5_reason(char *buf, size_t n);

/* Creates the temporary file (plain POSIX first, so an unwritable place fails with errno's
 * reason), checks `growth` bytes fit (results__h5_guard), then opens it with HDF5. Turns HDF5's
 * error printing off until results__h5_finish. Returns 0 or the error (w->rc). */
int results__h5_create(h5_writer *w, const char *path, sim_diag *diag, double growth);
/* Closes the file and its shared objects; with no error so far fsyncs it and renames it over
 * w->path, else removes it. Restores HDF5's error printing. Returns w->rc. */
int results__h5_finish(h5_writer *w);

/* Records "cannot write WHAT: REASON" (first error only) and returns SIM_EIO. */
int results__h5_fail(h5_writer *w, const char *what);
int results__h5_attr_str(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                    const char *value);
int results__h5_attr_int(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                    int32_t value);
int results__h5_attr_f64(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                    double value);
/* The compound type of a row struct in memory (-1 on failure). */
hid_t results__h5_mem_type(const h5_writer *w, const h5_col *cols, size_t n_cols, size_t row_size);
/* Creates and fills dataset `t->name` in `loc` (whose path is `loc_name`), with its `units`
 * (and `values`) attribute. */
int results__h5_write_table(h5_writer *w, hid_t loc, const char *loc_name, const h5_table *t);
/* A table written in pieces: created empty (chunked, deflated, extendible) by
 * results__h5_append_begin from a template (n_rows 0), filled by results__h5_append, which buffers
 * rows and writes RESULTS_H5_APPEND_CHUNKS whole chunks at a time (so the file does not depend on
 * how the rows were handed over), and completed by results__h5_append_end. Memory: the buffer. */
#define RESULTS_H5_APPEND_CHUNKS 4
typedef struct h5_appender {
    h5_writer *w;
    char what[512];
    const h5_col *cols;
    size_t n_cols, row_size;
    hid_t dset, mem_t;
    hsize_t rows, chunk;
    char *buf;
    size_t n_buf, cap_buf; /* rows */
} h5_appender;
int results__h5_append_begin(h5_appender *a, h5_writer *w, hid_t loc, const char *loc_name,
                        const h5_table *t);
int results__h5_append(h5_appender *a, const void *rows, size_t n);
/* Writes what is buffered and closes the dataset; safe on a failed or unopened appender. */
int results__h5_append_end(h5_appender *a);

/* The space guard. HDF5 1.10.8 cannot fail a write gracefully: a failed flush makes H5Fclose
 * fail and leaves a half-destroyed file object that crashes the process at exit (HDF5 issue
 * #2257, fixed in 1.10.10/1.14.1). So the writers never let HDF5 reach a full disk or the
 * file-size limit: before anything that may grow the file by up to `growth` bytes, this
 * checks that the file's size + growth + RESULTS_H5_RESERVE (HDF5's caches, flushed later) fits
 * under both the free space and RLIMIT_FSIZE, and fails with the system's own words
 * (ENOSPC, EFBIG) otherwise. */
int results__h5_guard(h5_writer *w, double growth);
/* Bytes rows may take in the file before compression (packed row plus string heap). */
double results__h5_rows_bytes(const h5_col *cols, size_t n_cols, size_t n_rows);

#endif
