/* Reading stepsim's HDF5 results files (docs/hdf5-schema.md) back: the runs of a file, their
 * attributes, and any table in bounded slices of rows converted into a caller's struct
 * (columns matched by name, so files with extra columns read the same). Used by `stepsim
 * report` and `stepsim export-perfetto`.
 *
 * Errors are one diagnostic line against the file ("<path>: error: ..."), SIM_EINVAL for a
 * file that is not a stepsim results file or lacks what was asked for, SIM_EIO when it cannot
 * be opened or read. HDF5's automatic error printing is off inside every call. */
#ifndef SIM_RESULTS_H5READ_H
#define SIM_RESULTS_H5READ_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

typedef enum results_h5r_type {
    RESULTS_H5R_I32,
    RESULTS_H5R_I64,
    RESULTS_H5R_F64,
    RESULTS_H5R_STR
} results_h5r_type;

/* One column to read into field `offset` of the caller's row struct: int32_t, int64_t,
 * double, or char * (a string the reader allocates; results_h5r_release frees it; NULL where
 * the file holds no string, e.g. in rows a writer never filled: callers must allow for it). */
typedef struct results_h5r_field {
    const char *name;
    results_h5r_type type;
    size_t offset;
} results_h5r_field;

typedef struct results_h5r_file results_h5r_file;
typedef struct results_h5r_table results_h5r_table;

/* Opens results file `path` read-only; checks the root attribute schema_version is 1 and
 * lists its runs. */
int results_h5r_open(const char *path, results_h5r_file **out, sim_diag *diag);
/* Opens any HDF5 file whose root attribute `version_attr` is `version`, e.g. a trace file
 * (trace_format_version 1); `what` names the kind of file in messages. */
int results_h5r_open_kind(const char *path, const char *version_attr, int version, const char *what,
                     results_h5r_file **out, sim_diag *diag);
void results_h5r_close(results_h5r_file *f);

/* The run group names under /runs, in the file's (alphabetical) link order. The array and
 * names belong to f. */
size_t results_h5r_runs(const results_h5r_file *f, const char *const **names);

/* String attribute `attr` of object `obj` ("/" or "/runs/NAME"), as a new string
 * (sim_free); NULL with diag set when absent. Integer attributes: results_h5r_attr_int. */
char *results_h5r_attr_str(results_h5r_file *f, const char *obj, const char *attr);
int results_h5r_attr_int(results_h5r_file *f, const char *obj, const char *attr, int *value);
int results_h5r_attr_f64(results_h5r_file *f, const char *obj, const char *attr, double *value);

/* Opens table `path` ("/runs/NAME/timeline") for rows of `row_size` bytes with `fields`
 * (which must all exist in the table). A table that claims more rows than its storage can
 * hold, even deflated at zlib's best ratio, is refused (SIM_EINVAL): its rows were never
 * written, and reading them would only allocate or loop. */
int results_h5r_table_open(results_h5r_file *f, const char *path, const results_h5r_field *fields,
                      size_t n_fields, size_t row_size, results_h5r_table **out);
size_t results_h5r_table_rows(const results_h5r_table *t);
/* Rows of the one-dimensional dataset at `path` as its dataspace declares them, without
 * reading it; 0 when there is no such dataset (its reader then says what is wrong). */
double results_h5r_dataset_rows(results_h5r_file *f, const char *path);
/* Whether table `path` exists and has column `column` (files from older versions may
 * lack recent columns). Records no error. */
bool results_h5r_has_column(results_h5r_file *f, const char *path, const char *column);
/* Reads rows [first, first + n) into `rows` (n x row_size bytes). */
int results_h5r_table_read(results_h5r_table *t, size_t first, size_t n, void *rows);
/* The columns of the table at `path` (a compound dataset) that are integers, floats or
 * strings, in order: up to `max` names (63 characters at most) and the type each reads as
 * (integers of more than 4 bytes as I64); 0 when there is no such table. */
size_t results_h5r_columns(results_h5r_file *f, const char *path, char (*names)[64],
                           results_h5r_type *types, size_t max);
/* Frees the strings of n rows read by results_h5r_table_read. */
void results_h5r_release(results_h5r_table *t, void *rows, size_t n);
void results_h5r_table_close(results_h5r_table *t);

/* Reads table `path` in slices of at most `slice` rows, calling fn(ud, rows, first, n) on
 * each (rows valid during the call only); stops at the first non-zero return, which it
 * returns. Memory: one slice. */
typedef int (*results_h5r_slice_fn)(void *ud, void *rows, size_t first, size_t n);
int results_h5r_for_each(results_h5r_file *f, const char *path, const results_h5r_field *fields,
                         size_t n_fields, size_t row_size, size_t slice, results_h5r_slice_fn fn,
                         void *ud);

/* The pre-walk of an HDF5 input (docs/cli.md, "Exit codes and errors"): libhdf5 itself can
 * crash, hang or overrun its buffers on a corrupted file, which no check in our process can
 * survive. So before a serial command's reader opens `path`, a forked child opens it and
 * reads every attribute and every dataset (in slices of 4 MiB, variable-length strings
 * included), following every link as the readers' paths would. The child's output goes to
 * /dev/null and it leaves with _exit; the parent flushes its stdio first. Returns 0 when the
 * child read everything and exited 0, and also when the file is not a regular file or not
 * HDF5 at all (the reader then says so in its own words). Otherwise SIM_EINVAL with diag
 * set, "PATH: error: corrupted HDF5 file (REASON)" and a hint, where REASON says whether
 * libhdf5 crashed (the signal), failed (its message), or took longer than `limit_s` seconds
 * (the child is killed). `limit_s` <= 0: the environment's STEPSIM_PREWALK_LIMIT_S (seconds)
 * when set to a number > 0, else results_h5r_prewalk_limit_s of the file's size.
 *
 * Forks: only for serial commands (replay, report, export-perfetto), never in a process
 * that runs under mpirun. */
#define RESULTS_H5R_PREWALK_BASE_S 60.0
#define RESULTS_H5R_PREWALK_BYTES_PER_S 1048576.0
int results_h5r_prewalk(const char *path, double limit_s, sim_diag *diag);
/* The default time limit: RESULTS_H5R_PREWALK_BASE_S plus one second per MiB of file
 * (RESULTS_H5R_PREWALK_BYTES_PER_S): a minute for small files, 65 min for a 4 GiB trace. */
double results_h5r_prewalk_limit_s(double file_bytes);

#endif
