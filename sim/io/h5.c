/* HDF5 results writer (see h5.h; the file layout is documented in docs/hdf5-schema.md).
 *
 * Every table is a 1-D dataset of a compound type, one member per column. The memory type
 * describes the row struct in memory (results rows are written in place, without copies:
 * HDF5 converts them through its own bounded conversion buffer); the file type is built
 * beside it with explicit little-endian types and packed offsets, so no struct padding
 * (which holds indeterminate bytes) ever reaches the file. Strings are variable-length
 * UTF-8; a NULL `const char *` in a row is stored as a null string, which h5py reads as b"".
 *
 * Byte-identical output for identical input comes from: object time tracking off on the
 * root group (file creation plist), every group and every dataset; no wall-clock values;
 * objects and attributes created in a fixed order; struct padding never written (see
 * above). The file is assembled in memory by HDF5's core driver and written out with plain
 * POSIX calls (io_h5_write says why).
 *
 * Errors: HDF5's automatic error printing is off during the call; a failing HDF5 call is
 * reported once, as "cannot write OBJECT: REASON" with the innermost message of HDF5's
 * error stack. */
#include "core/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <hdf5.h>

#include "coll/coll.h"
#include "hw/topology.h"
#include "io/h5.h"
#include "io/h5-internal.h"
#include "trace/trace.h"

#define IO_H5_SCHEMA_VERSION 1
#define IO_H5_CHUNK_BYTES ((size_t)1 << 20) /* target size of one chunk of a large table */
#define IO_H5_DEFLATE_LEVEL 4
#define IO_H5_REASON_MAX 256
#define IO_H5_RESERVE ((size_t)64 << 20) /* free space kept beyond the file (h5_guard) */
#define IO_H5_STR_HEAP 64.0 /* global-heap bytes budgeted per variable-length string */
#define IO_H5_STREAM_CHUNKS 4 /* a streamed timeline is written this many chunks at a time */

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
 * chunked and deflated whatever their size; the others are contiguous unless empty. */
typedef struct h5_table {
    const char *name;
    const h5_col *cols;
    size_t n_cols;
    size_t row_size;
    const void *rows;
    size_t n_rows;
    bool large;
} h5_table;

typedef struct h5_writer {
    const char *path; /* as the user named it, for messages */
    char *tmp;        /* the file being written: "<path>.tmp-<pid>" */
    sim_diag *diag;
    int rc;
    hid_t str_t;  /* variable-length UTF-8 string */
    hid_t scalar; /* scalar dataspace for attributes */
    hid_t gcpl;   /* group creation: no time tracking */
} h5_writer;

/* ---- errors --------------------------------------------------------------------------- */

/* Records "cannot write WHAT: REASON" (first error only) and returns SIM_EIO. */
static int h5_fail(h5_writer *w, const char *what)
{
    char reason[IO_H5_REASON_MAX];
    io__h5_reason(reason, sizeof reason);
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
        rc = h5_fail(w, what);
        if (a >= 0 && !ok)
            H5Aclose(a);
    }
    return rc;
}

static int h5_attr_str(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
                       const char *value)
{
    const char *v = value ? value : "";
    return h5_attr(w, obj, obj_name, name, w->str_t, w->str_t, &v);
}

static int h5_attr_int(h5_writer *w, hid_t obj, const char *obj_name, const char *name,
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
static hid_t h5_mem_type(const h5_writer *w, const h5_col *cols, size_t n_cols, size_t row_size)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, row_size);
    for (size_t i = 0; t >= 0 && i < n_cols; i++)
        if (H5Tinsert(t, cols[i].name, cols[i].offset, h5_col_mem_type(w, cols[i].type)) < 0) {
            H5Tclose(t);
            t = -1;
        }
    return t;
}

/* The `values` attribute of a table: the closed set of values of each enumeration column,
 * "column: a b c; column: ..." (NULL for tables without one). Built from the name tables
 * the rows are written from, so the list cannot drift from the data. */
static char *h5_values_text(const char *table)
{
    char *s = sim_calloc(2048, 1);
    size_t n = 2048, at = 0;
#define ADD(...) (at += (size_t)snprintf(s + at, n - at, __VA_ARGS__))
    if (strcmp(table, "timeline") == 0) {
        ADD("stream: compute");
        for (int g = 0; g < PLAN_GROUP_COUNT; g++)
            ADD(" %s", plan_group_name((plan_group_class)g));
        ADD(" offload host p2p; kind: compute");
        for (int op = 0; op < COLL_OP_COUNT; op++)
            ADD(" %s", coll_op_name((coll_op)op));
        ADD(" copy_d2h copy_h2d host; phase:");
        for (int ph = 0; ph < TRACE_PHASE_COUNT; ph++)
            ADD(" %s", trace_phase_name((trace_phase)ph));
        ADD("; group:");
        for (int g = 0; g < PLAN_GROUP_COUNT; g++)
            ADD(" %s", plan_group_name((plan_group_class)g));
        ADD(" none");
    } else if (strcmp(table, "bubbles") == 0) {
        ADD("cause:");
        for (int c = 0; c < REPLAY_CAUSE_COUNT; c++)
            ADD(" %s", replay_cause_name((replay_cause)c));
    } else if (strcmp(table, "memory") == 0) {
        ADD("category:");
        for (int c = 0; c < PLAN_MEM_COUNT; c++)
            ADD(" %s", plan_mem_cat_name((plan_mem_cat)c));
    } else if (strcmp(table, "links") == 0) {
        ADD("class:");
        for (int c = 0; c < HW_LINK_CLASS_COUNT; c++)
            ADD(" %s", hw_link_class_name((hw_link_class)c));
    } else if (strcmp(table, "summary") == 0 || strcmp(table, "sweep") == 0) {
        ADD("status:");
        for (int c = 0; c <= REPLAY_STATUS_ERROR; c++)
            ADD(" %s", replay_status_name((replay_status)c));
    } else {
        sim_free(s);
        return NULL;
    }
#undef ADD
    SIM_ASSERT(at < n, "values text of %s truncated", table);
    return s;
}

/* Creates and fills dataset `t->name` in `loc` (whose path is `loc_name`). */
static int h5_write_table(h5_writer *w, hid_t loc, const char *loc_name, const h5_table *t)
{
    char what[512];
    snprintf(what, sizeof what, "%s/%s", strcmp(loc_name, "/") ? loc_name : "", t->name);

    hid_t mem_t = -1, file_t = -1, space = -1, dcpl = -1, dset = -1;
    char *units = NULL;
    int rc = 0;

    size_t file_size = 0;
    for (size_t i = 0; i < t->n_cols; i++)
        file_size += H5Tget_size(h5_col_file_type(w, t->cols[i].type));
    mem_t = h5_mem_type(w, t->cols, t->n_cols, t->row_size);
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
        /* About IO_H5_CHUNK_BYTES per chunk, fewer rows when the table is smaller. */
        hsize_t chunk = IO_H5_CHUNK_BYTES / file_size;
        if (t->n_rows > 0 && t->n_rows < chunk)
            chunk = t->n_rows;
        if (chunk == 0)
            chunk = 1;
        if (H5Pset_chunk(dcpl, 1, &chunk) < 0)
            goto fail;
        if (t->large && H5Pset_deflate(dcpl, IO_H5_DEFLATE_LEVEL) < 0)
            goto fail;
    }
    dset = H5Dcreate2(loc, t->name, file_t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0)
        goto fail;
    if (t->n_rows > 0 && H5Dwrite(dset, mem_t, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->rows) < 0)
        goto fail;
    units = h5_units_text(t);
    rc = h5_attr_str(w, dset, what, "units", units);
    char *values = h5_values_text(t->name);
    if (!rc && values)
        rc = h5_attr_str(w, dset, what, "values", values);
    sim_free(values);
    goto out;
fail:
    rc = h5_fail(w, what);
out:
    sim_free(units);
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc)
        rc = h5_fail(w, what);
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

/* ---- column lists --------------------------------------------------------------------- */

#define MEM_COL(row, cat, name) \
    {name, COL_I64, offsetof(row, mem) + (size_t)(cat) * sizeof(int64_t), "B"}

static const h5_col rank_cols[] = {
    {"rank", COL_I32, offsetof(replay_rank_row, rank), NULL},
    {"node", COL_I32, offsetof(replay_rank_row, node), NULL},
    {"dp", COL_I32, offsetof(replay_rank_row, dp), NULL},
    {"tp", COL_I32, offsetof(replay_rank_row, tp), NULL},
    {"pp", COL_I32, offsetof(replay_rank_row, pp), NULL},
    {"ep", COL_I32, offsetof(replay_rank_row, ep), NULL},
    {"cp", COL_I32, offsetof(replay_rank_row, cp), NULL},
    {"compute_s", COL_F64, offsetof(replay_rank_row, compute_s), "s"},
    {"comm_s", COL_F64, offsetof(replay_rank_row, comm_s), "s"},
    {"idle_s", COL_F64, offsetof(replay_rank_row, idle_s), "s"},
    {"bubble_s", COL_F64, offsetof(replay_rank_row, bubble_s), "s"},
    {"peak_mem_bytes", COL_I64, offsetof(replay_rank_row, peak_mem_bytes), "B"},
    MEM_COL(replay_rank_row, PLAN_MEM_PARAMS, "params"),
    MEM_COL(replay_rank_row, PLAN_MEM_GRADS, "grads"),
    MEM_COL(replay_rank_row, PLAN_MEM_OPTIMIZER, "optimizer"),
    MEM_COL(replay_rank_row, PLAN_MEM_ACTIVATIONS, "activations"),
    MEM_COL(replay_rank_row, PLAN_MEM_BUFFERS, "buffers"),
    MEM_COL(replay_rank_row, PLAN_MEM_OTHER, "other"),
};
#define RANK_COLS_MEM_FIRST 12 /* index of "params" above */

static const h5_col step_cols[] = {
    {"step", COL_I32, offsetof(replay_step_row, step), NULL},
    {"start_s", COL_F64, offsetof(replay_step_row, start_s), "s"},
    {"end_s", COL_F64, offsetof(replay_step_row, end_s), "s"},
};

static const h5_col timeline_cols[] = {
    {"rank", COL_I32, offsetof(replay_timeline_row, rank), NULL},
    {"stream", COL_STR, offsetof(replay_timeline_row, stream), NULL},
    {"kind", COL_STR, offsetof(replay_timeline_row, kind), NULL},
    {"name", COL_STR, offsetof(replay_timeline_row, name), NULL},
    {"layer", COL_I32, offsetof(replay_timeline_row, layer), NULL},
    {"microbatch", COL_I32, offsetof(replay_timeline_row, microbatch), NULL},
    {"phase", COL_STR, offsetof(replay_timeline_row, phase), NULL},
    {"group", COL_STR, offsetof(replay_timeline_row, group), NULL},
    {"step", COL_I32, offsetof(replay_timeline_row, step), NULL},
    {"start_s", COL_F64, offsetof(replay_timeline_row, start_s), "s"},
    {"end_s", COL_F64, offsetof(replay_timeline_row, end_s), "s"},
    {"bytes", COL_F64, offsetof(replay_timeline_row, bytes), "B"},
    {"flops", COL_F64, offsetof(replay_timeline_row, flops), "FLOP"},
};

static const h5_col bubble_cols[] = {
    {"rank", COL_I32, offsetof(replay_bubble_row, rank), NULL},
    {"step", COL_I32, offsetof(replay_bubble_row, step), NULL},
    {"start_s", COL_F64, offsetof(replay_bubble_row, start_s), "s"},
    {"end_s", COL_F64, offsetof(replay_bubble_row, end_s), "s"},
    {"cause", COL_STR, offsetof(replay_bubble_row, cause), NULL},
};

static const h5_col memory_cols[] = {
    {"rank", COL_I32, offsetof(replay_memory_row, rank), NULL},
    {"t_s", COL_F64, offsetof(replay_memory_row, t_s), "s"},
    {"category", COL_STR, offsetof(replay_memory_row, category), NULL},
    {"bytes", COL_I64, offsetof(replay_memory_row, bytes), "B"},
};

static const h5_col link_cols[] = {
    {"link", COL_I32, offsetof(replay_link_row, link), NULL},
    {"src", COL_STR, offsetof(replay_link_row, src), NULL},
    {"dst", COL_STR, offsetof(replay_link_row, dst), NULL},
    {"class", COL_STR, offsetof(replay_link_row, cls), NULL},
    {"bytes", COL_F64, offsetof(replay_link_row, bytes), "B"},
    {"busy_s", COL_F64, offsetof(replay_link_row, busy_s), "s"},
    {"utilization", COL_F64, offsetof(replay_link_row, utilization), "1"},
};

static const h5_col input_cols[] = {
    {"path", COL_STR, offsetof(io_h5_input, path), NULL},
    {"hash", COL_STR, offsetof(io_h5_input, hash), NULL},
};

/* The summary row: every scalar of the JSON object of io_json_write_run, in its key order,
 * nested objects flattened as "object.key". Strings are "" when the JSON has null. */
typedef struct h5_summary_row {
    const char *name, *status, *error;
    int32_t gpus, steps;
    double step_time_s, tokens_per_s, samples_per_s, tflops_per_gpu, mfu, hfu;
    double bubble_fraction;
    double bubble_by_cause[REPLAY_CAUSE_COUNT];
    double exposed_comm_s[PLAN_GROUP_COUNT];
    double comm_bytes_per_gpu[REPLAY_COMM_COUNT];
    double moe_dropped_fraction, moe_load_max_over_mean; /* NaN for dense models */
    double budget[5]; /* tokens, steps, time_to_train_s, gpu_hours, cost: NaN when unset */
    int64_t peak_mem_bytes;
    int64_t mem_bytes[PLAN_MEM_COUNT];
    int64_t capacity_bytes;
    const char *binding_constraint;
} h5_summary_row;

#define SUMMARY_COLS_MAX 64
#define SUMMARY_NAME_MAX 48

/* Summary columns are partly generated from the enum name tables (so they cannot drift
 * from the JSON keys); the names live in the struct. */
typedef struct h5_summary_cols {
    h5_col cols[SUMMARY_COLS_MAX];
    char names[SUMMARY_COLS_MAX][SUMMARY_NAME_MAX];
    size_t n;
} h5_summary_cols;

static void summary_col(h5_summary_cols *sc, const char *prefix, const char *key,
                        h5_col_type type, size_t offset, const char *unit)
{
    SIM_ASSERT(sc->n < SUMMARY_COLS_MAX, "%zu summary columns", sc->n);
    char *name = sc->names[sc->n];
    int len = snprintf(name, SUMMARY_NAME_MAX, "%s%s%s", prefix ? prefix : "", prefix ? "." : "",
                       key);
    SIM_ASSERT(len > 0 && len < SUMMARY_NAME_MAX, "summary column %s.%s", prefix, key);
    sc->cols[sc->n++] = (h5_col){name, type, offset, unit};
}

static void summary_cols_init(h5_summary_cols *sc)
{
    typedef h5_summary_row R;
    sc->n = 0;
    summary_col(sc, NULL, "name", COL_STR, offsetof(R, name), NULL);
    summary_col(sc, NULL, "status", COL_STR, offsetof(R, status), NULL);
    summary_col(sc, NULL, "error", COL_STR, offsetof(R, error), NULL);
    summary_col(sc, NULL, "gpus", COL_I32, offsetof(R, gpus), NULL);
    summary_col(sc, NULL, "steps", COL_I32, offsetof(R, steps), NULL);
    summary_col(sc, NULL, "step_time_s", COL_F64, offsetof(R, step_time_s), "s");
    summary_col(sc, NULL, "tokens_per_s", COL_F64, offsetof(R, tokens_per_s), "tokens/s");
    summary_col(sc, NULL, "samples_per_s", COL_F64, offsetof(R, samples_per_s), "samples/s");
    summary_col(sc, NULL, "tflops_per_gpu", COL_F64, offsetof(R, tflops_per_gpu), "TFLOP/s");
    summary_col(sc, NULL, "mfu", COL_F64, offsetof(R, mfu), "1");
    summary_col(sc, NULL, "hfu", COL_F64, offsetof(R, hfu), "1");
    summary_col(sc, NULL, "bubble_fraction", COL_F64, offsetof(R, bubble_fraction), "1");
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++)
        summary_col(sc, "bubble_by_cause", replay_cause_name((replay_cause)c), COL_F64,
                    offsetof(R, bubble_by_cause) + (size_t)c * sizeof(double), "1");
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        summary_col(sc, "exposed_comm_s", plan_group_name((plan_group_class)g), COL_F64,
                    offsetof(R, exposed_comm_s) + (size_t)g * sizeof(double), "s");
    for (int g = 0; g < REPLAY_COMM_COUNT; g++)
        summary_col(sc, "comm_bytes_per_gpu",
                    g == REPLAY_COMM_OFFLOAD ? "offload" : plan_group_name((plan_group_class)g),
                    COL_F64, offsetof(R, comm_bytes_per_gpu) + (size_t)g * sizeof(double), "B");
    /* JSON has the moe object only for MoE models; the table, shared by a sweep's runs,
     * always has the columns and NaN where they do not apply */
    summary_col(sc, "moe", "dropped_fraction", COL_F64, offsetof(R, moe_dropped_fraction), "1");
    summary_col(sc, "moe", "load_max_over_mean", COL_F64, offsetof(R, moe_load_max_over_mean),
                "1");
    static const char *const budget_keys[5] = {"tokens", "steps", "time_to_train_s",
                                               "gpu_hours", "cost"};
    static const char *const budget_units[5] = {"tokens", "1", "s", "h", "price"};
    for (int k = 0; k < 5; k++)
        summary_col(sc, "budget", budget_keys[k], COL_F64,
                    offsetof(R, budget) + (size_t)k * sizeof(double), budget_units[k]);
    summary_col(sc, NULL, "peak_mem_bytes", COL_I64, offsetof(R, peak_mem_bytes), "B");
    for (int c = 0; c < PLAN_MEM_COUNT; c++)
        summary_col(sc, "mem_bytes", plan_mem_cat_name((plan_mem_cat)c), COL_I64,
                    offsetof(R, mem_bytes) + (size_t)c * sizeof(int64_t), "B");
    summary_col(sc, NULL, "capacity_bytes", COL_I64, offsetof(R, capacity_bytes), "B");
    summary_col(sc, NULL, "binding_constraint", COL_STR, offsetof(R, binding_constraint), NULL);
}

static void summary_row_fill(h5_summary_row *row, const replay_summary *s)
{
    memset(row, 0, sizeof *row);
    row->name = s->name;
    row->status = replay_status_name(s->status);
    row->error = s->error;
    row->gpus = s->gpus;
    row->steps = s->steps;
    row->step_time_s = s->step_time_s;
    row->tokens_per_s = s->tokens_per_s;
    row->samples_per_s = s->samples_per_s;
    row->tflops_per_gpu = s->tflops_per_gpu;
    row->mfu = s->mfu;
    row->hfu = s->hfu;
    row->bubble_fraction = s->bubble_fraction;
    memcpy(row->bubble_by_cause, s->bubble_by_cause, sizeof row->bubble_by_cause);
    memcpy(row->exposed_comm_s, s->exposed_comm_s, sizeof row->exposed_comm_s);
    memcpy(row->comm_bytes_per_gpu, s->comm_bytes_per_gpu, sizeof row->comm_bytes_per_gpu);
    row->moe_dropped_fraction = s->moe ? s->moe_dropped_fraction : NAN;
    row->moe_load_max_over_mean = s->moe ? s->moe_load_max_over_mean : NAN;
    row->budget[0] = s->budget_tokens;
    row->budget[1] = s->budget_steps;
    row->budget[2] = s->time_to_train_s;
    row->budget[3] = s->gpu_hours;
    row->budget[4] = s->cost;
    row->peak_mem_bytes = s->peak_mem_bytes;
    memcpy(row->mem_bytes, s->mem_bytes, sizeof row->mem_bytes);
    row->capacity_bytes = s->capacity_bytes;
    row->binding_constraint = s->binding_constraint ? s->binding_constraint : "";
}

/* /sweep: one row per run, in file order. */
typedef struct h5_sweep_row {
    int32_t index;
    const char *name, *status, *error;
    double step_time_s, tokens_per_s, mfu;
    int64_t peak_mem_bytes;
    double bubble_fraction;
} h5_sweep_row;

static const h5_col sweep_cols[] = {
    {"index", COL_I32, offsetof(h5_sweep_row, index), NULL},
    {"name", COL_STR, offsetof(h5_sweep_row, name), NULL},
    {"status", COL_STR, offsetof(h5_sweep_row, status), NULL},
    {"error", COL_STR, offsetof(h5_sweep_row, error), NULL},
    {"step_time_s", COL_F64, offsetof(h5_sweep_row, step_time_s), "s"},
    {"tokens_per_s", COL_F64, offsetof(h5_sweep_row, tokens_per_s), "tokens/s"},
    {"mfu", COL_F64, offsetof(h5_sweep_row, mfu), "1"},
    {"peak_mem_bytes", COL_I64, offsetof(h5_sweep_row, peak_mem_bytes), "B"},
    {"bubble_fraction", COL_F64, offsetof(h5_sweep_row, bubble_fraction), "1"},
};

/* ---- groups --------------------------------------------------------------------------- */

/* Writes run `run`'s attributes and tables into its group `g` (path `where`); with
 * `streamed`, its timeline is already there. */
static int h5_write_run(h5_writer *w, hid_t g, const char *where, const h5_summary_cols *sc,
                        const io_h5_run *run, int write_timeline, bool streamed)
{
    const replay_results *r = run->results;
    const replay_summary *s = &r->summary;
    bool full = s->status == REPLAY_STATUS_OK || s->status == REPLAY_STATUS_OOM;
    int rc = h5_attr_str(w, g, where, "scenario", run->scenario_yaml);
    if (!rc)
        rc = h5_attr_str(w, g, where, "status", replay_status_name(s->status));
    if (!rc)
        rc = h5_attr_str(w, g, where, "error", s->error);
    if (!rc && full)
        rc = h5_attr_int(w, g, where, "timeline_written", write_timeline ? 1 : 0);

    h5_summary_row srow;
    summary_row_fill(&srow, s);
    h5_table tables[] = {
        {"summary", sc->cols, sc->n, sizeof srow, &srow, 1, false},
        {"ranks", rank_cols, SIM_ARRAY_LEN(rank_cols), sizeof *r->ranks, r->ranks, r->n_ranks,
         false},
        {"steps", step_cols, SIM_ARRAY_LEN(step_cols), sizeof *r->steps, r->steps, r->n_steps,
         false},
        {"timeline", timeline_cols, SIM_ARRAY_LEN(timeline_cols), sizeof *r->timeline,
         r->timeline, write_timeline ? r->n_timeline : 0, true},
        {"bubbles", bubble_cols, SIM_ARRAY_LEN(bubble_cols), sizeof *r->bubbles, r->bubbles,
         r->n_bubbles, true},
        {"memory", memory_cols, SIM_ARRAY_LEN(memory_cols), sizeof *r->memory, r->memory,
         r->n_memory, true},
        {"links", link_cols, SIM_ARRAY_LEN(link_cols), sizeof *r->links, r->links, r->n_links,
         false},
    };
    size_t n_tables = full ? SIM_ARRAY_LEN(tables) : 1;
    for (size_t i = 0; !rc && i < n_tables; i++)
        if (!(streamed && i == 3))
            rc = h5_write_table(w, g, where, &tables[i]);
    return rc;
}

/* "<hash>  <path>\n" per input, as sha256sum prints (the root attribute input_hashes). */
static char *h5_input_hashes_text(const io_h5_input *inputs, size_t n_inputs)
{
    size_t len = 1;
    for (size_t i = 0; i < n_inputs; i++)
        len += strlen(inputs[i].hash ? inputs[i].hash : "") +
               strlen(inputs[i].path ? inputs[i].path : "") + 3;
    char *s = sim_calloc(len, 1);
    size_t at = 0;
    for (size_t i = 0; i < n_inputs; i++)
        at += (size_t)snprintf(s + at, len - at, "%s  %s\n", inputs[i].hash ? inputs[i].hash : "",
                               inputs[i].path ? inputs[i].path : "");
    return s;
}

/* ---- the file ------------------------------------------------------------------------- */

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

static int check_run_name(h5_writer *w, const char *name)
{
    if (!name[0] || strcmp(name, ".") == 0 || strchr(name, '/'))
        return sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                   "run name \"%s\" cannot name an HDF5 group (it is empty, "
                                   "\".\" or contains '/')",
                                   name);
    return 0;
}

/* The space guard. HDF5 1.10.8 cannot fail a write gracefully: a failed flush makes H5Fclose
 * fail and leaves a half-destroyed file object that crashes the process at exit (HDF5 issue
 * #2257, fixed in 1.10.10/1.14.1). So the writer never lets HDF5 reach a full disk or the
 * file-size limit: before anything that may grow the file by up to `growth` bytes it checks
 * that the file's current size + growth + IO_H5_RESERVE (HDF5's caches, flushed later) fits
 * under both the free space of the file system and RLIMIT_FSIZE, and fails with the
 * system's own words (ENOSPC, EFBIG) otherwise. */
static int h5_guard(h5_writer *w, double growth)
{
    if (w->rc)
        return w->rc;
    struct stat st;
    double size = stat(w->tmp, &st) == 0 ? (double)st.st_size : 0;
    double need = size + growth + (double)IO_H5_RESERVE;
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
 * variable-length strings' global-heap entries (at most IO_H5_STR_HEAP bytes each). */
static double h5_rows_bytes(const h5_col *cols, size_t n_cols, size_t n_rows)
{
    double row = 0;
    for (size_t i = 0; i < n_cols; i++)
        row += cols[i].type == COL_STR ? 16 + IO_H5_STR_HEAP : 8;
    return row * (double)n_rows;
}

struct io_h5_file {
    h5_writer w;
    hid_t file, runs;
    h5_summary_cols sc;
    /* the run whose timeline is being streamed */
    char stream_run[sizeof ((replay_summary *)0)->name];
    hid_t stream_group, stream_dset, stream_mem_t;
    hsize_t stream_rows, stream_chunk;
    replay_timeline_row *buf;
    size_t n_buf, cap_buf;
    /* /sweep rows of the runs added so far (strings owned) */
    h5_sweep_row *sweep;
    size_t n_sweep, cap_sweep;
    H5E_auto2_t old_func;
    void *old_data;
};

static void h5_quiet(io_h5_file *f)
{
    H5Eget_auto2(H5E_DEFAULT, &f->old_func, &f->old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void h5_loud(io_h5_file *f)
{
    H5Eset_auto2(H5E_DEFAULT, f->old_func, f->old_data);
}

int io_h5_open(const char *path, const char *command, const io_h5_input *inputs,
               size_t n_inputs, io_h5_file **out, sim_diag *diag)
{
    SIM_ASSERT(path && out && (inputs || !n_inputs), "path %p", (const void *)path);
    io_h5_file *f = sim_calloc(1, sizeof *f);
    h5_writer *w = &f->w;
    *w = (h5_writer){.path = path, .diag = diag, .str_t = -1, .scalar = -1, .gcpl = -1};
    f->file = f->runs = f->stream_group = f->stream_dset = f->stream_mem_t = -1;
    size_t tmp_len = strlen(path) + 32;
    w->tmp = sim_calloc(tmp_len, 1);
    snprintf(w->tmp, tmp_len, "%s.tmp-%ld", path, (long)getpid());
    summary_cols_init(&f->sc);
    *out = f;

    /* Create the file with plain POSIX first, so an unwritable location fails fast, with
     * errno's reason, and the space guard has a file system to ask about. */
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        w->rc = sim_diag_error_code(diag, SIM_EIO, path, 0, 0, "cannot create file: %s",
                                    strerror(errno));
        sim_free(w->tmp);
        w->tmp = NULL;
        return w->rc;
    }
    close(fd);
    if (h5_guard(w, h5_rows_bytes(input_cols, SIM_ARRAY_LEN(input_cols), n_inputs)))
        return w->rc;

    h5_quiet(f);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    w->str_t = H5Tcopy(H5T_C_S1);
    w->scalar = H5Screate(H5S_SCALAR);
    w->gcpl = H5Pcreate(H5P_GROUP_CREATE);
    /* The root group takes its creation properties from the file creation plist. */
    if (fcpl < 0 || w->str_t < 0 || H5Tset_size(w->str_t, H5T_VARIABLE) < 0 ||
        H5Tset_cset(w->str_t, H5T_CSET_UTF8) < 0 || w->scalar < 0 || w->gcpl < 0 ||
        H5Pset_obj_track_times(w->gcpl, 0) < 0 || H5Pset_obj_track_times(fcpl, 0) < 0) {
        h5_fail(w, "file");
    } else {
        f->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
        if (f->file < 0)
            h5_fail(w, "file");
    }
    if (fcpl >= 0)
        H5Pclose(fcpl);
    int rc = w->rc;
    if (!rc)
        rc = h5_attr_str(w, f->file, "/", "stepsim_version", STEPSIM_VERSION);
    if (!rc)
        rc = h5_attr_int(w, f->file, "/", "schema_version", IO_H5_SCHEMA_VERSION);
    if (!rc)
        rc = h5_attr_str(w, f->file, "/", "command", command);
    if (!rc) {
        char *hashes = h5_input_hashes_text(inputs, n_inputs);
        rc = h5_attr_str(w, f->file, "/", "input_hashes", hashes);
        sim_free(hashes);
    }
    if (!rc) {
        h5_table t = {"inputs", input_cols, SIM_ARRAY_LEN(input_cols), sizeof *inputs, inputs,
                      n_inputs, false};
        rc = h5_write_table(w, f->file, "/", &t);
    }
    if (!rc) {
        f->runs = H5Gcreate2(f->file, "runs", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
        if (f->runs < 0)
            rc = h5_fail(w, "/runs");
    }
    h5_loud(f);
    return rc;
}

/* Writes the buffered rows (a whole number of chunks, or all with `all`) at the end of the
 * streamed timeline. */
static int stream_flush(io_h5_file *f, bool all)
{
    h5_writer *w = &f->w;
    size_t n = all ? f->n_buf : f->n_buf / f->stream_chunk * f->stream_chunk;
    if (w->rc || n == 0)
        return w->rc;
    char what[512];
    snprintf(what, sizeof what, "/runs/%s/timeline", f->stream_run);
    if (h5_guard(w, h5_rows_bytes(timeline_cols, SIM_ARRAY_LEN(timeline_cols), n)))
        return w->rc;
    hsize_t start = f->stream_rows, count = n, total = f->stream_rows + n;
    hid_t fspace = -1, mspace = -1;
    if (H5Dset_extent(f->stream_dset, &total) < 0 || (fspace = H5Dget_space(f->stream_dset)) < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        (mspace = H5Screate_simple(1, &count, NULL)) < 0 ||
        H5Dwrite(f->stream_dset, f->stream_mem_t, mspace, fspace, H5P_DEFAULT, f->buf) < 0)
        h5_fail(w, what);
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    f->stream_rows = total;
    memmove(f->buf, f->buf + n, (f->n_buf - n) * sizeof *f->buf);
    f->n_buf -= n;
    return w->rc;
}

static void stream_end(io_h5_file *f)
{
    if (f->stream_dset >= 0 && H5Dclose(f->stream_dset) < 0)
        h5_fail(&f->w, "timeline");
    if (f->stream_mem_t >= 0)
        H5Tclose(f->stream_mem_t);
    if (f->stream_group >= 0 && H5Gclose(f->stream_group) < 0)
        h5_fail(&f->w, "run group");
    f->stream_dset = f->stream_mem_t = f->stream_group = -1;
    f->n_buf = 0;
}

/* Creates run group `name` and its empty, extendible timeline. */
static int stream_begin(io_h5_file *f, const char *name)
{
    h5_writer *w = &f->w;
    if (check_run_name(w, name))
        return w->rc = SIM_EINVAL;
    char where[300];
    snprintf(where, sizeof where, "/runs/%s", name);
    htri_t exists = H5Lexists(f->runs, name, H5P_DEFAULT);
    if (exists < 0)
        return h5_fail(w, where);
    if (exists > 0)
        return w->rc = sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                           "two runs are named \"%s\"", name);
    snprintf(f->stream_run, sizeof f->stream_run, "%s", name);
    f->stream_group = H5Gcreate2(f->runs, name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
    if (f->stream_group < 0)
        return h5_fail(w, where);
    h5_table t = {"timeline", timeline_cols, SIM_ARRAY_LEN(timeline_cols),
                  sizeof(replay_timeline_row), NULL, 0, true};
    if (h5_write_table(w, f->stream_group, where, &t))
        return w->rc;
    f->stream_dset = H5Dopen2(f->stream_group, "timeline", H5P_DEFAULT);
    hid_t dcpl = f->stream_dset >= 0 ? H5Dget_create_plist(f->stream_dset) : -1;
    f->stream_mem_t = h5_mem_type(w, timeline_cols, SIM_ARRAY_LEN(timeline_cols),
                                  sizeof(replay_timeline_row));
    if (dcpl < 0 || f->stream_mem_t < 0 || H5Pget_chunk(dcpl, 1, &f->stream_chunk) != 1)
        h5_fail(w, where);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    f->stream_rows = 0;
    /* IO_H5_STREAM_CHUNKS chunks of rows, written as they fill */
    f->cap_buf = (size_t)f->stream_chunk * IO_H5_STREAM_CHUNKS;
    f->buf = sim_realloc_array(f->buf, f->cap_buf, sizeof *f->buf);
    return w->rc;
}

int io_h5_stream_timeline(io_h5_file *f, const char *name, const replay_timeline_row *rows,
                          size_t n)
{
    if (f->w.rc)
        return f->w.rc;
    h5_quiet(f);
    if (f->stream_group < 0 || strcmp(f->stream_run, name) != 0) {
        SIM_ASSERT(f->stream_group < 0, "timeline of run %s streamed while %s is open", name,
                   f->stream_run);
        stream_begin(f, name);
    }
    for (size_t i = 0; i < n && !f->w.rc; i++) {
        f->buf[f->n_buf++] = rows[i];
        if (f->n_buf == f->cap_buf)
            stream_flush(f, false);
    }
    h5_loud(f);
    return f->w.rc;
}

int io_h5_add_run(io_h5_file *f, const io_h5_run *run, int write_timeline)
{
    h5_writer *w = &f->w;
    if (w->rc)
        return w->rc;
    const replay_results *r = run->results;
    const replay_summary *s = &r->summary;
    SIM_ASSERT(memchr(s->name, '\0', sizeof s->name), "run name not terminated");
    char where[300];
    snprintf(where, sizeof where, "/runs/%s", s->name);
    h5_quiet(f);
    bool streamed = f->stream_group >= 0 && strcmp(f->stream_run, s->name) == 0;
    hid_t g = -1;
    int rc = 0;
    if (streamed) {
        rc = stream_flush(f, true);
        g = f->stream_group;
    } else {
        SIM_ASSERT(f->stream_group < 0, "run %s added while %s streams", s->name, f->stream_run);
        rc = check_run_name(w, s->name) ? (w->rc = SIM_EINVAL) : 0;
        htri_t exists = rc ? 0 : H5Lexists(f->runs, s->name, H5P_DEFAULT);
        if (!rc && exists < 0)
            rc = h5_fail(w, where);
        else if (!rc && exists > 0)
            rc = w->rc = sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                             "two runs are named \"%s\"", s->name);
        if (!rc) {
            g = H5Gcreate2(f->runs, s->name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
            if (g < 0)
                rc = h5_fail(w, where);
        }
    }
    size_t in_memory = streamed || !write_timeline ? 0 : r->n_timeline;
    if (!rc)
        rc = h5_guard(w, h5_rows_bytes(timeline_cols, SIM_ARRAY_LEN(timeline_cols), in_memory) +
                             h5_rows_bytes(bubble_cols, SIM_ARRAY_LEN(bubble_cols), r->n_bubbles) +
                             h5_rows_bytes(memory_cols, SIM_ARRAY_LEN(memory_cols), r->n_memory) +
                             h5_rows_bytes(rank_cols, SIM_ARRAY_LEN(rank_cols), r->n_ranks) +
                             h5_rows_bytes(link_cols, SIM_ARRAY_LEN(link_cols), r->n_links) +
                             (double)strlen(run->scenario_yaml ? run->scenario_yaml : ""));
    if (!rc)
        rc = h5_write_run(w, g, where, &f->sc, run, write_timeline, streamed);
    if (streamed)
        stream_end(f);
    else if (g >= 0 && H5Gclose(g) < 0 && !rc)
        rc = h5_fail(w, where);
    if (!rc) {
        SIM_GROW(f->sweep, f->cap_sweep, f->n_sweep + 1);
        f->sweep[f->n_sweep] = (h5_sweep_row){
            .index = (int32_t)f->n_sweep,
            .name = sim_strdup(s->name),
            .status = replay_status_name(s->status),
            .error = sim_strdup(s->error),
            .step_time_s = s->step_time_s,
            .tokens_per_s = s->tokens_per_s,
            .mfu = s->mfu,
            .peak_mem_bytes = s->peak_mem_bytes,
            .bubble_fraction = s->bubble_fraction,
        };
        f->n_sweep++;
    }
    h5_loud(f);
    return w->rc ? w->rc : rc;
}

static void h5_file_free(io_h5_file *f)
{
    h5_writer *w = &f->w;
    if (w->gcpl >= 0)
        H5Pclose(w->gcpl);
    if (w->scalar >= 0)
        H5Sclose(w->scalar);
    if (w->str_t >= 0)
        H5Tclose(w->str_t);
    for (size_t i = 0; i < f->n_sweep; i++) {
        sim_free((char *)f->sweep[i].name);
        sim_free((char *)f->sweep[i].error);
    }
    sim_free(f->sweep);
    sim_free(f->buf);
    sim_free(w->tmp);
    sim_free(f);
}

/* Closes every HDF5 object of the file; records a failure. */
static void h5_file_close_objects(io_h5_file *f)
{
    stream_end(f);
    if (f->runs >= 0 && H5Gclose(f->runs) < 0)
        h5_fail(&f->w, "/runs");
    f->runs = -1;
    if (f->file >= 0 && H5Fclose(f->file) < 0)
        h5_fail(&f->w, "file");
    f->file = -1;
}

int io_h5_close(io_h5_file *f)
{
    h5_writer *w = &f->w;
    h5_quiet(f);
    SIM_ASSERT(w->rc || f->stream_group < 0, "run %s streamed but never added", f->stream_run);
    if (!w->rc && f->n_sweep > 1 &&
        !h5_guard(w, h5_rows_bytes(sweep_cols, SIM_ARRAY_LEN(sweep_cols), f->n_sweep))) {
        h5_table t = {"sweep", sweep_cols, SIM_ARRAY_LEN(sweep_cols), sizeof *f->sweep,
                      f->sweep, f->n_sweep, false};
        h5_write_table(w, f->file, "/", &t);
    }
    h5_file_close_objects(f);
    h5_loud(f);
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
    int rc = w->rc;
    h5_file_free(f);
    return rc;
}

void io_h5_abort(io_h5_file *f)
{
    if (!f)
        return;
    h5_quiet(f);
    h5_file_close_objects(f);
    h5_loud(f);
    if (f->w.tmp)
        unlink(f->w.tmp);
    h5_file_free(f);
}

int io_h5_write(const char *path, const char *command, const io_h5_input *inputs,
                size_t n_inputs, const io_h5_run *runs, size_t n_runs, int write_timeline,
                sim_diag *diag)
{
    SIM_ASSERT(path && (inputs || !n_inputs) && (runs || !n_runs), "path %p", (const void *)path);
    /* names are checked before anything is created */
    h5_writer names = {.path = path, .diag = diag};
    for (size_t i = 0; i < n_runs; i++) {
        SIM_ASSERT(runs[i].results, "run %zu has no results", i);
        int rc = check_run_name(&names, runs[i].results->summary.name);
        if (rc)
            return rc;
    }
    io_h5_file *f = NULL;
    int rc = io_h5_open(path, command, inputs, n_inputs, &f, diag);
    for (size_t i = 0; !rc && i < n_runs; i++)
        rc = io_h5_add_run(f, &runs[i], write_timeline);
    if (rc) {
        io_h5_abort(f);
        return rc;
    }
    return io_h5_close(f);
}
