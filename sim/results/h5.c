/* HDF5 results writer (see h5.h; the file layout is documented in docs/hdf5-schema.md;
 * table and file primitives in h5table.c).
 *
 * Results rows are written in place, without copies: HDF5 converts them through its own
 * bounded conversion buffer. A NULL `const char *` in a row is stored as a null string,
 * which h5py reads as b"". A streamed timeline is buffered RESULTS_H5_STREAM_CHUNKS chunks at a
 * time and appended to an extendible dataset.
 *
 * Byte-identical output for identical input comes from: object time tracking off on the
 * root group (file creation plist), every group and every dataset; no wall-clock values;
 * objects and attributes created in a fixed order; streamed rows written in whole chunks;
 * struct padding never written.
 *
 * Errors: HDF5's automatic error printing is off while the file is open; a failing HDF5
 * call is reported once, as "cannot write OBJECT: REASON" with the innermost message of
 * HDF5's error stack. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

#include "coll/coll.h"
#include "hw/spec.h"
#include "results/h5.h"
#include "results/h5-internal.h"
#include "trace/trace.h"

#define RESULTS_H5_SCHEMA_VERSION 1

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
        ADD(" copy_d2h copy_h2d copy_read copy_write host; phase:");
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
        for (int c = 0; c < REPLAY_STATUS_COUNT; c++)
            ADD(" %s", replay_status_name((replay_status)c));
    } else {
        sim_free(s);
        return NULL;
    }
#undef ADD
    SIM_ASSERT(at < n, "values text of %s truncated", table);
    return s;
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
    {"path", COL_STR, offsetof(results_h5_input, path), NULL},
    {"hash", COL_STR, offsetof(results_h5_input, hash), NULL},
};

/* The summary row: every scalar of the JSON object of results_json_write_run, in its key order,
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
    int32_t slowest_rank;                     /* -1 without stragglers, jitter, groups */
    double slowest_compute_s, slowest_wait_s; /* NaN without them */
    double budget[5]; /* tokens, steps, time_to_train_s, gpu_hours, cost: NaN when unset */
    int64_t peak_mem_bytes;
    int64_t mem_bytes[PLAN_MEM_COUNT];
    int64_t capacity_bytes;
    const char *binding_constraint;
    int32_t host_node;            /* -1 without offload */
    int64_t host_mem_bytes;       /* 0 without offload */
    int64_t host_capacity_bytes;  /* 0 when not given */
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
    summary_col(sc, "slowest_rank", "rank", COL_I32, offsetof(R, slowest_rank), NULL);
    summary_col(sc, "slowest_rank", "compute_s", COL_F64, offsetof(R, slowest_compute_s), "s");
    summary_col(sc, "slowest_rank", "wait_s", COL_F64, offsetof(R, slowest_wait_s), "s");
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
    summary_col(sc, "host_memory", "node", COL_I32, offsetof(R, host_node), NULL);
    summary_col(sc, "host_memory", "bytes", COL_I64, offsetof(R, host_mem_bytes), "B");
    summary_col(sc, "host_memory", "capacity_bytes", COL_I64, offsetof(R, host_capacity_bytes),
                "B");
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
    row->slowest_rank = s->variable ? s->slowest_rank : -1;
    row->slowest_compute_s = s->variable ? s->slowest_compute_s : NAN;
    row->slowest_wait_s = s->variable ? s->slowest_wait_s : NAN;
    row->budget[0] = s->budget_tokens;
    row->budget[1] = s->budget_steps;
    row->budget[2] = s->time_to_train_s;
    row->budget[3] = s->gpu_hours;
    row->budget[4] = s->cost;
    row->peak_mem_bytes = s->peak_mem_bytes;
    memcpy(row->mem_bytes, s->mem_bytes, sizeof row->mem_bytes);
    row->capacity_bytes = s->capacity_bytes;
    row->binding_constraint = s->binding_constraint ? s->binding_constraint : "";
    row->host_node = s->offloaded ? s->host_node : -1;
    row->host_mem_bytes = s->offloaded ? s->host_mem_bytes : 0;
    row->host_capacity_bytes = s->host_capacity_bytes;
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

/* A table of the results schema, with its `values` attribute. */
static int results_table(h5_writer *w, hid_t loc, const char *loc_name, h5_table t)
{
    char *values = h5_values_text(t.name);
    t.values = values;
    int rc = results__h5_write_table(w, loc, loc_name, &t);
    sim_free(values);
    return rc;
}

/* ---- groups --------------------------------------------------------------------------- */

/* Writes run `run`'s attributes and tables into its group `g` (path `where`); with
 * `streamed`, its timeline is already there. */
static int h5_write_run(h5_writer *w, hid_t g, const char *where, const h5_summary_cols *sc,
                        const results_h5_run *run, int write_timeline, bool streamed)
{
    const replay_results *r = run->results;
    const replay_summary *s = &r->summary;
    bool full = s->status == REPLAY_STATUS_OK || s->status == REPLAY_STATUS_OOM ||
                s->status == REPLAY_STATUS_TIGHT;
    int rc = results__h5_attr_str(w, g, where, "scenario", run->scenario_yaml);
    if (!rc)
        rc = results__h5_attr_str(w, g, where, "status", replay_status_name(s->status));
    if (!rc)
        rc = results__h5_attr_str(w, g, where, "error", s->error);
    if (!rc && full)
        rc = results__h5_attr_int(w, g, where, "timeline_written", write_timeline ? 1 : 0);

    h5_summary_row srow;
    summary_row_fill(&srow, s);
    h5_table tables[] = {
        {"summary", sc->cols, sc->n, sizeof srow, &srow, 1, false, NULL},
        {"ranks", rank_cols, SIM_ARRAY_LEN(rank_cols), sizeof *r->ranks, r->ranks, r->n_ranks,
         false, NULL},
        {"steps", step_cols, SIM_ARRAY_LEN(step_cols), sizeof *r->steps, r->steps, r->n_steps,
         false, NULL},
        {"timeline", timeline_cols, SIM_ARRAY_LEN(timeline_cols), sizeof *r->timeline,
         r->timeline, write_timeline ? r->n_timeline : 0, true, NULL},
        {"bubbles", bubble_cols, SIM_ARRAY_LEN(bubble_cols), sizeof *r->bubbles, r->bubbles,
         r->n_bubbles, true, NULL},
        {"memory", memory_cols, SIM_ARRAY_LEN(memory_cols), sizeof *r->memory, r->memory,
         r->n_memory, true, NULL},
        {"links", link_cols, SIM_ARRAY_LEN(link_cols), sizeof *r->links, r->links, r->n_links,
         false, NULL},
    };
    size_t n_tables = full ? SIM_ARRAY_LEN(tables) : 1;
    for (size_t i = 0; !rc && i < n_tables; i++)
        if (!(streamed && i == 3))
            rc = results_table(w, g, where, tables[i]);
    return rc;
}

/* "<hash>  <path>\n" per input, as sha256sum prints (the root attribute input_hashes). */
static char *h5_input_hashes_text(const results_h5_input *inputs, size_t n_inputs)
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

static int check_run_name(h5_writer *w, const char *name)
{
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
        return sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                   "run name \"%s\" cannot name an HDF5 group (it is empty, "
                                   "\".\", \"..\" or contains '/')",
                                   name);
    return 0;
}

struct results_h5_file {
    h5_writer w;
    hid_t runs;
    h5_summary_cols sc;
    /* the run whose timeline is being streamed */
    char stream_run[sizeof ((replay_summary *)0)->name];
    hid_t stream_group;
    h5_appender timeline;
    /* /sweep rows of the runs added so far (strings owned) */
    h5_sweep_row *sweep;
    size_t n_sweep, cap_sweep;
    /* sweep axes: names, and per run its value of each (strings owned) */
    char **axis_names;
    size_t n_axes;
    char **axis_values; /* [run][axis] */
};

int results_h5_open(const char *path, const char *command, const results_h5_input *inputs,
               size_t n_inputs, results_h5_file **out, sim_diag *diag)
{
    SIM_ASSERT(path && out && (inputs || !n_inputs), "path %p", (const void *)path);
    results_h5_file *f = sim_calloc(1, sizeof *f);
    h5_writer *w = &f->w;
    f->runs = f->stream_group = -1;
    f->timeline.dset = f->timeline.mem_t = -1;
    summary_cols_init(&f->sc);
    *out = f;
    int rc = results__h5_create(w, path, diag,
                           results__h5_rows_bytes(input_cols, SIM_ARRAY_LEN(input_cols), n_inputs));
    if (!rc)
        rc = results__h5_attr_str(w, w->file, "/", "stepsim_version", STEPSIM_VERSION);
    if (!rc)
        rc = results__h5_attr_int(w, w->file, "/", "schema_version", RESULTS_H5_SCHEMA_VERSION);
    if (!rc)
        rc = results__h5_attr_str(w, w->file, "/", "command", command);
    if (!rc) {
        char *hashes = h5_input_hashes_text(inputs, n_inputs);
        rc = results__h5_attr_str(w, w->file, "/", "input_hashes", hashes);
        sim_free(hashes);
    }
    if (!rc)
        rc = results_table(w, w->file, "/",
                           (h5_table){"inputs", input_cols, SIM_ARRAY_LEN(input_cols),
                                      sizeof *inputs, inputs, n_inputs, false, NULL});
    if (!rc) {
        f->runs = H5Gcreate2(w->file, "runs", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
        if (f->runs < 0)
            rc = results__h5_fail(w, "/runs");
    }
    return rc;
}

static void stream_end(results_h5_file *f)
{
    results__h5_append_end(&f->timeline);
    if (f->stream_group >= 0 && H5Gclose(f->stream_group) < 0)
        results__h5_fail(&f->w, "run group");
    f->stream_group = -1;
}

/* Creates run group `name` and its empty, extendible timeline. */
static int stream_begin(results_h5_file *f, const char *name)
{
    h5_writer *w = &f->w;
    if (check_run_name(w, name))
        return w->rc = SIM_EINVAL;
    char where[300];
    snprintf(where, sizeof where, "/runs/%s", name);
    htri_t exists = H5Lexists(f->runs, name, H5P_DEFAULT);
    if (exists < 0)
        return results__h5_fail(w, where);
    if (exists > 0)
        return w->rc = sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                           "two runs are named \"%s\"", name);
    snprintf(f->stream_run, sizeof f->stream_run, "%s", name);
    f->stream_group = H5Gcreate2(f->runs, name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
    if (f->stream_group < 0)
        return results__h5_fail(w, where);
    char *values = h5_values_text("timeline");
    h5_table t = {"timeline", timeline_cols, SIM_ARRAY_LEN(timeline_cols),
                  sizeof(replay_timeline_row), NULL, 0, true, values};
    results__h5_append_begin(&f->timeline, w, f->stream_group, where, &t);
    sim_free(values);
    return w->rc;
}

int results_h5_stream_timeline(results_h5_file *f, const char *name,
                               const replay_timeline_row *rows, size_t n)
{
    if (f->w.rc)
        return f->w.rc;
    if (f->stream_group < 0 || strcmp(f->stream_run, name) != 0) {
        SIM_ASSERT(f->stream_group < 0, "timeline of run %s streamed while %s is open", name,
                   f->stream_run);
        if (stream_begin(f, name) != 0)
            return f->w.rc; /* no group to append to: the error goes up, the file is aborted */
    }
    results__h5_append(&f->timeline, rows, n);
    return f->w.rc;
}

/* The /sweep row of a run just added (strings copied). */
static void sweep_row(results_h5_file *f, const replay_summary *s)
{
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
    if (f->n_axes) {
        f->axis_values = sim_realloc_array(f->axis_values, f->n_sweep * f->n_axes,
                                           sizeof *f->axis_values);
        for (size_t k = 0; k < f->n_axes; k++)
            f->axis_values[(f->n_sweep - 1) * f->n_axes + k] = sim_strdup("");
    }
}

int results_h5_add_run(results_h5_file *f, const results_h5_run *run, int write_timeline)
{
    h5_writer *w = &f->w;
    if (w->rc)
        return w->rc;
    const replay_results *r = run->results;
    const replay_summary *s = &r->summary;
    SIM_ASSERT(memchr(s->name, '\0', sizeof s->name), "run name not terminated");
    char where[300];
    snprintf(where, sizeof where, "/runs/%s", s->name);
    bool streamed = f->stream_group >= 0 && strcmp(f->stream_run, s->name) == 0;
    hid_t g = -1;
    int rc = 0;
    if (streamed) {
        rc = results__h5_append_end(&f->timeline);
        g = f->stream_group;
    } else {
        SIM_ASSERT(f->stream_group < 0, "run %s added while %s streams", s->name, f->stream_run);
        rc = check_run_name(w, s->name) ? (w->rc = SIM_EINVAL) : 0;
        htri_t exists = rc ? 0 : H5Lexists(f->runs, s->name, H5P_DEFAULT);
        if (!rc && exists < 0)
            rc = results__h5_fail(w, where);
        else if (!rc && exists > 0)
            rc = w->rc = sim_diag_error_code(w->diag, SIM_EINVAL, w->path, 0, 0,
                                             "two runs are named \"%s\"", s->name);
        if (!rc) {
            g = H5Gcreate2(f->runs, s->name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
            if (g < 0)
                rc = results__h5_fail(w, where);
        }
    }
    size_t in_memory = streamed || !write_timeline ? 0 : r->n_timeline;
    if (!rc)
        rc = results__h5_guard(
            w, results__h5_rows_bytes(timeline_cols, SIM_ARRAY_LEN(timeline_cols), in_memory) +
                   results__h5_rows_bytes(bubble_cols, SIM_ARRAY_LEN(bubble_cols), r->n_bubbles) +
                   results__h5_rows_bytes(memory_cols, SIM_ARRAY_LEN(memory_cols), r->n_memory) +
                   results__h5_rows_bytes(rank_cols, SIM_ARRAY_LEN(rank_cols), r->n_ranks) +
                   results__h5_rows_bytes(link_cols, SIM_ARRAY_LEN(link_cols), r->n_links) +
                   (double)strlen(run->scenario_yaml ? run->scenario_yaml : ""));
    if (!rc)
        rc = h5_write_run(w, g, where, &f->sc, run, write_timeline, streamed);
    if (streamed)
        stream_end(f);
    else if (g >= 0 && H5Gclose(g) < 0 && !rc)
        rc = results__h5_fail(w, where);
    if (!rc) {
        sweep_row(f, s);
    }
    return w->rc ? w->rc : rc;
}

/* /sweep: the fixed columns with one string column per axis after `error` (the value as
 * YAML text). Rows are built in a buffer: the fixed row, then the axis values' pointers. */
static void write_sweep(results_h5_file *f)
{
    h5_writer *w = &f->w;
    size_t n_fixed = SIM_ARRAY_LEN(sweep_cols), n_cols = n_fixed + f->n_axes;
    size_t row = sizeof(h5_sweep_row) + f->n_axes * sizeof(char *);
    h5_col *cols = sim_calloc(n_cols, sizeof *cols);
    size_t k = 0;
    for (size_t i = 0; i < n_fixed; i++) {
        cols[k++] = sweep_cols[i];
        if (strcmp(sweep_cols[i].name, "error") == 0)
            for (size_t a = 0; a < f->n_axes; a++)
                cols[k++] = (h5_col){f->axis_names[a], COL_STR,
                                     sizeof(h5_sweep_row) + a * sizeof(char *), NULL};
    }
    char *rows = sim_calloc(f->n_sweep + 1, row);
    for (size_t r = 0; r < f->n_sweep; r++) {
        memcpy(rows + r * row, &f->sweep[r], sizeof(h5_sweep_row));
        for (size_t a = 0; a < f->n_axes; a++)
            memcpy(rows + r * row + sizeof(h5_sweep_row) + a * sizeof(char *),
                   &f->axis_values[r * f->n_axes + a], sizeof(char *));
    }
    if (!results__h5_guard(w, results__h5_rows_bytes(cols, n_cols, f->n_sweep)))
        results_table(w, w->file, "/",
                      (h5_table){"sweep", cols, n_cols, row, rows, f->n_sweep, false, NULL});
    sim_free(rows);
    sim_free(cols);
}

void results_h5_sweep_axes(results_h5_file *f, const char *const *names, size_t n)
{
    SIM_ASSERT(f->n_sweep == 0 && f->n_axes == 0, "axes set after runs");
    f->axis_names = sim_calloc(n + 1, sizeof *f->axis_names);
    for (size_t i = 0; i < n; i++)
        f->axis_names[i] = sim_strdup(names[i]);
    f->n_axes = n;
}

void results_h5_run_axes(results_h5_file *f, const char *const *values)
{
    SIM_ASSERT(f->n_sweep > 0, "no run to give axis values to");
    for (size_t a = 0; a < f->n_axes; a++) {
        char **slot = &f->axis_values[(f->n_sweep - 1) * f->n_axes + a];
        sim_free(*slot);
        *slot = sim_strdup(values[a]);
    }
}

/* Reads the summary row of /runs/NAME in `src` back into *s (the fields /sweep needs). */
static int read_summary_row(h5_writer *w, hid_t src, const char *name, replay_summary *s)
{
    typedef struct {
        char *name, *status, *error;
        double step_time_s, tokens_per_s, mfu, bubble_fraction;
        int64_t peak_mem_bytes;
    } row_t;
    static const h5_col cols[] = {
        {"name", COL_STR, offsetof(row_t, name), NULL},
        {"status", COL_STR, offsetof(row_t, status), NULL},
        {"error", COL_STR, offsetof(row_t, error), NULL},
        {"step_time_s", COL_F64, offsetof(row_t, step_time_s), NULL},
        {"tokens_per_s", COL_F64, offsetof(row_t, tokens_per_s), NULL},
        {"mfu", COL_F64, offsetof(row_t, mfu), NULL},
        {"bubble_fraction", COL_F64, offsetof(row_t, bubble_fraction), NULL},
        {"peak_mem_bytes", COL_I64, offsetof(row_t, peak_mem_bytes), NULL},
    };
    char path[300];
    snprintf(path, sizeof path, "/runs/%s/summary", name);
    hid_t d = H5Dopen2(src, path, H5P_DEFAULT);
    hid_t t = results__h5_mem_type(w, cols, SIM_ARRAY_LEN(cols), sizeof(row_t));
    row_t r;
    memset(&r, 0, sizeof r);
    int rc = d < 0 || t < 0 || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &r) < 0
                 ? results__h5_fail(w, path)
                 : 0;
    if (!rc) {
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", r.name ? r.name : name);
        snprintf(s->error, sizeof s->error, "%s", r.error ? r.error : "");
        s->status = REPLAY_STATUS_ERROR;
        for (int k = 0; k < REPLAY_STATUS_COUNT; k++)
            if (r.status && strcmp(r.status, replay_status_name((replay_status)k)) == 0)
                s->status = (replay_status)k;
        s->step_time_s = r.step_time_s;
        s->tokens_per_s = r.tokens_per_s;
        s->mfu = r.mfu;
        s->bubble_fraction = r.bubble_fraction;
        s->peak_mem_bytes = r.peak_mem_bytes;
        hid_t space = H5Dget_space(d);
        H5Dvlen_reclaim(t, space, H5P_DEFAULT, &r);
        H5Sclose(space);
    }
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    return rc;
}

int results_h5_copy_run(results_h5_file *f, const char *src_path, const char *name)
{
    h5_writer *w = &f->w;
    if (w->rc)
        return w->rc;
    SIM_ASSERT(f->stream_group < 0, "copy while %s streams", f->stream_run);
    struct stat st;
    if (results__h5_guard(w, stat(src_path, &st) == 0 ? (double)st.st_size : 0))
        return w->rc;
    char where[300];
    snprintf(where, sizeof where, "/runs/%s", name);
    hid_t src = H5Fopen(src_path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (src < 0)
        return results__h5_fail(w, src_path);
    replay_summary s;
    int rc = read_summary_row(w, src, name, &s);
    if (!rc && H5Ocopy(src, where, f->runs, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
        rc = results__h5_fail(w, where);
    H5Fclose(src);
    if (!rc)
        sweep_row(f, &s);
    return w->rc ? w->rc : rc;
}

static void h5_file_free(results_h5_file *f)
{
    for (size_t i = 0; i < f->n_sweep * f->n_axes; i++)
        sim_free(f->axis_values[i]);
    sim_free(f->axis_values);
    for (size_t i = 0; i < f->n_axes; i++)
        sim_free(f->axis_names[i]);
    sim_free(f->axis_names);
    for (size_t i = 0; i < f->n_sweep; i++) {
        sim_free((char *)f->sweep[i].name);
        sim_free((char *)f->sweep[i].error);
    }
    sim_free(f->sweep);
    sim_free(f);
}

int results_h5_close(results_h5_file *f)
{
    h5_writer *w = &f->w;
    SIM_ASSERT(w->rc || f->stream_group < 0, "run %s streamed but never added", f->stream_run);
    if (!w->rc && (f->n_sweep > 1 || f->n_axes > 0))
        write_sweep(f);
    stream_end(f);
    if (f->runs >= 0 && H5Gclose(f->runs) < 0)
        results__h5_fail(w, "/runs");
    int rc = results__h5_finish(w);
    h5_file_free(f);
    return rc;
}

void results_h5_abort(results_h5_file *f)
{
    if (!f)
        return;
    if (!f->w.rc)
        f->w.rc = SIM_EIO; /* makes results__h5_finish remove the file */
    stream_end(f);
    if (f->runs >= 0)
        H5Gclose(f->runs);
    results__h5_finish(&f->w);
    h5_file_free(f);
}

int results_h5_write(const char *path, const char *command, const results_h5_input *inputs,
                size_t n_inputs, const results_h5_run *runs, size_t n_runs, int write_timeline,
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
    results_h5_file *f = NULL;
    int rc = results_h5_open(path, command, inputs, n_inputs, &f, diag);
    for (size_t i = 0; !rc && i < n_runs; i++)
        rc = results_h5_add_run(f, &runs[i], write_timeline);
    if (rc) {
        results_h5_abort(f);
        return rc;
    }
    return results_h5_close(f);
}
