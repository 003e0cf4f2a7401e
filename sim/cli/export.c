/* `stepsim export-perfetto OUT.h5 [--run NAME] -o TRACE.json`: a results file's run as Chrome
 * Trace Event JSON, which ui.perfetto.dev and chrome://tracing open (docs/cli.md):
 *
 *   process  one per node ("node N"), pid N
 *   thread   one per GPU stream: tid = rank x 16 + lane, lanes compute 0, dp 1, tp 2, pp 3,
 *            ep 4, cp 5, offload 6, host 7, p2p 8, bubbles 9 ("GPU R compute", ...)
 *   events   every timeline row a complete event ("ph": "X", cat = its group, or "compute"),
 *            with layer, micro-batch, step, kind, phase, bytes and FLOPs in args; every idle
 *            interval of the bubbles table a complete event on the rank's bubbles lane
 *            (cat "bubble", named by its cause); the memory table a counter track per GPU
 *            ("ph": "C", "memory GPU R", one series per category, bytes).
 * Times are microseconds (the format's unit) with nanosecond decimals. Tables are read in
 * slices, so memory stays bounded whatever the file's size; the output is written to a
 * temporary name and renamed when complete. */
#include "core/sim.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/output.h"
#include "results/h5read.h"
#include "results/json.h"

#define SLICE 65536
/* What a slice returns once a signal arrived (not a SIM_E* code). */
#define STOPPED 1
#define LANES 16
#define MEM_CATS 6
#define EXPORT_RANKS_MAX ((size_t)1 << 24) /* as a trace (docs/trace-format.md) */

static const char *const lane_names[] = {"compute", "dp",   "tp",  "pp",      "ep",
                                         "cp",      "offload", "host", "p2p", "bubbles"};
#define LANE_BUBBLES 9
#define LANE_OTHER 10

static const char *const mem_cats[MEM_CATS] = {"params",      "grads",   "optimizer",
                                               "activations", "buffers", "other"};

typedef struct tl_row {
    int32_t rank, layer, microbatch, step;
    char *stream, *kind, *name, *phase, *group;
    double start_s, end_s, bytes, flops;
} tl_row;

typedef struct bubble_row {
    int32_t rank, step;
    double start_s, end_s;
    char *cause;
} bubble_row;

typedef struct mem_row {
    int32_t rank;
    double t_s;
    char *category;
    int64_t bytes;
} mem_row;

typedef struct rank_row {
    int32_t rank, node;
} rank_row;

typedef struct exporter {
    const char *path; /* the results file */
    FILE *out;
    int32_t *node;       /* per rank */
    size_t n_ranks;
    uint16_t *lanes;     /* per rank: bit set of lanes used */
    int64_t *mem;        /* per rank x category: level */
    bool first;          /* no event written yet */
    size_t n_ops, n_bubbles, n_counters;
} exporter;

/* A string cell as read: NULL when the file holds none there (a variable-length string never
 * written, as in rows past the end of what a writer filled): printed as "". */
static const char *str(const char *s)
{
    return s ? s : "";
}

static int lane_of(const char *stream)
{
    for (int i = 0; i < LANE_BUBBLES; i++)
        if (strcmp(stream, lane_names[i]) == 0)
            return i;
    return LANE_OTHER;
}

static void event_start(exporter *x, const char *ph, int32_t rank, int lane)
{
    fputs(x->first ? "\n" : ",\n", x->out);
    x->first = false;
    fprintf(x->out, "{\"ph\":\"%s\",\"pid\":%d", ph, (int)x->node[rank]);
    if (lane >= 0)
        fprintf(x->out, ",\"tid\":%d", (int)rank * LANES + lane);
}

/* A time in microseconds, to the nanosecond. */
static void us(FILE *out, const char *key, double s)
{
    fprintf(out, ",\"%s\":%.3f", key, s * 1e6);
}

/* "PATH: error: cannot write: REASON" for the output; exit code 1 (not the input's fault). */
static int write_error(const char *path)
{
    fprintf(stderr, "%s: error: cannot write: %s\n", path, strerror(errno));
    return CLI_EXIT_INVALID; /* the environment's fault (a full disk), not stepsim's */
}

typedef struct slice_ctx {
    exporter *x;
    const char *path;
    const char *table; /* "/runs/NAME/timeline" */
} slice_ctx;

/* "PATH: /runs/NAME/TABLE row N: error: MSG" (exit 2): a value the file should not hold. */
static int bad_row(const slice_ctx *sc, size_t row, const char *msg)
{
    char where[4700];
    snprintf(where, sizeof where, "%s: %s row %zu", sc->path, sc->table, row);
    return cli_invalid(where, msg, NULL, NULL);
}

static int check_rank(const slice_ctx *sc, size_t row, int32_t rank)
{
    if (rank >= 0 && (size_t)rank < sc->x->n_ranks)
        return 0;
    char msg[128];
    snprintf(msg, sizeof msg, "rank %d, but the ranks table has %zu", (int)rank,
             sc->x->n_ranks);
    return bad_row(sc, row, msg);
}

/* An interval [start, end] in seconds: finite, end >= start (a JSON number cannot be NaN). */
static bool interval_ok(double start, double end)
{
    return isfinite(start) && isfinite(end) && end >= start;
}

static int timeline_slice(void *ud, void *rows_, size_t first, size_t k)
{
    if (*cli_signal_flag())
        return STOPPED; /* between slices: export_run removes the temporary */
    slice_ctx *sc = ud;
    exporter *x = sc->x;
    const tl_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        const tl_row *r = &rows[i];
        int rc = check_rank(sc, first + i, r->rank);
        if (rc)
            return rc;
        if (!interval_ok(r->start_s, r->end_s))
            return bad_row(sc, first + i, "start_s and end_s must be finite, end_s >= start_s");
        if (!(r->bytes >= 0 && r->flops >= 0 && isfinite(r->bytes) && isfinite(r->flops)))
            return bad_row(sc, first + i, "bytes and flops must be finite numbers >= 0");
        int lane = lane_of(str(r->stream));
        x->lanes[r->rank] |= (uint16_t)(1u << lane);
        event_start(x, "X", r->rank, lane);
        fputs(",\"name\":", x->out);
        results_json_string(x->out, str(r->name));
        fputs(",\"cat\":", x->out);
        results_json_string(x->out, r->group && strcmp(r->group, "none") ? r->group : "compute");
        us(x->out, "ts", r->start_s);
        us(x->out, "dur", r->end_s - r->start_s);
        fprintf(x->out, ",\"args\":{\"layer\":%d,\"microbatch\":%d,\"step\":%d,\"kind\":",
                (int)r->layer, (int)r->microbatch, (int)r->step);
        results_json_string(x->out, str(r->kind));
        fputs(",\"phase\":", x->out);
        results_json_string(x->out, str(r->phase));
        fputs(",\"bytes\":", x->out);
        results_json_number(x->out, r->bytes);
        fputs(",\"flops\":", x->out);
        results_json_number(x->out, r->flops);
        fputs("}}", x->out);
        x->n_ops++;
    }
    return 0;
}

static int export_timeline(exporter *x, results_h5r_file *f, const char *path, const char *run)
{
    static const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(tl_row, rank)},
        {"stream", RESULTS_H5R_STR, offsetof(tl_row, stream)},
        {"kind", RESULTS_H5R_STR, offsetof(tl_row, kind)},
        {"name", RESULTS_H5R_STR, offsetof(tl_row, name)},
        {"layer", RESULTS_H5R_I32, offsetof(tl_row, layer)},
        {"microbatch", RESULTS_H5R_I32, offsetof(tl_row, microbatch)},
        {"phase", RESULTS_H5R_STR, offsetof(tl_row, phase)},
        {"group", RESULTS_H5R_STR, offsetof(tl_row, group)},
        {"step", RESULTS_H5R_I32, offsetof(tl_row, step)},
        {"start_s", RESULTS_H5R_F64, offsetof(tl_row, start_s)},
        {"end_s", RESULTS_H5R_F64, offsetof(tl_row, end_s)},
        {"bytes", RESULTS_H5R_F64, offsetof(tl_row, bytes)},
        {"flops", RESULTS_H5R_F64, offsetof(tl_row, flops)},
    };
    char table[512];
    snprintf(table, sizeof table, "/runs/%s/timeline", run);
    slice_ctx sc = {x, path, table};
    return results_h5r_for_each(f, table, fields, SIM_ARRAY_LEN(fields), sizeof(tl_row), SLICE,
                           timeline_slice, &sc);
}

static int bubble_slice(void *ud, void *rows_, size_t first, size_t k)
{
    if (*cli_signal_flag())
        return STOPPED; /* between slices: export_run removes the temporary */
    slice_ctx *sc = ud;
    exporter *x = sc->x;
    const bubble_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        const bubble_row *r = &rows[i];
        int rc = check_rank(sc, first + i, r->rank);
        if (rc)
            return rc;
        if (!interval_ok(r->start_s, r->end_s))
            return bad_row(sc, first + i, "start_s and end_s must be finite, end_s >= start_s");
        x->lanes[r->rank] |= 1u << LANE_BUBBLES;
        event_start(x, "X", r->rank, LANE_BUBBLES);
        fputs(",\"name\":", x->out);
        results_json_string(x->out, str(r->cause));
        fputs(",\"cat\":\"bubble\"", x->out);
        us(x->out, "ts", r->start_s);
        us(x->out, "dur", r->end_s - r->start_s);
        fprintf(x->out, ",\"args\":{\"step\":%d}}", (int)r->step);
        x->n_bubbles++;
    }
    return 0;
}

static int export_bubbles(exporter *x, results_h5r_file *f, const char *path, const char *run)
{
    static const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(bubble_row, rank)},
        {"step", RESULTS_H5R_I32, offsetof(bubble_row, step)},
        {"start_s", RESULTS_H5R_F64, offsetof(bubble_row, start_s)},
        {"end_s", RESULTS_H5R_F64, offsetof(bubble_row, end_s)},
        {"cause", RESULTS_H5R_STR, offsetof(bubble_row, cause)},
    };
    char table[512];
    snprintf(table, sizeof table, "/runs/%s/bubbles", run);
    slice_ctx sc = {x, path, table};
    return results_h5r_for_each(f, table, fields, SIM_ARRAY_LEN(fields), sizeof(bubble_row), SLICE,
                           bubble_slice, &sc);
}

static int memory_slice(void *ud, void *rows_, size_t first, size_t k)
{
    if (*cli_signal_flag())
        return STOPPED; /* between slices: export_run removes the temporary */
    slice_ctx *sc = ud;
    exporter *x = sc->x;
    const mem_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        const mem_row *r = &rows[i];
        int rc = check_rank(sc, first + i, r->rank);
        if (rc)
            return rc;
        if (!isfinite(r->t_s))
            return bad_row(sc, first + i, "t_s must be finite");
        int64_t *level = &x->mem[(size_t)r->rank * MEM_CATS];
        for (int c = 0; c < MEM_CATS; c++)
            if (strcmp(str(r->category), mem_cats[c]) == 0)
                level[c] = r->bytes;
        event_start(x, "C", r->rank, -1);
        fprintf(x->out, ",\"name\":\"memory GPU %d\"", (int)r->rank);
        us(x->out, "ts", r->t_s);
        fputs(",\"args\":{", x->out);
        for (int c = 0; c < MEM_CATS; c++)
            fprintf(x->out, "%s\"%s\":%lld", c ? "," : "", mem_cats[c], (long long)level[c]);
        fputs("}}", x->out);
        x->n_counters++;
    }
    return 0;
}

static int export_memory(exporter *x, results_h5r_file *f, const char *path, const char *run)
{
    static const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(mem_row, rank)},
        {"t_s", RESULTS_H5R_F64, offsetof(mem_row, t_s)},
        {"category", RESULTS_H5R_STR, offsetof(mem_row, category)},
        {"bytes", RESULTS_H5R_I64, offsetof(mem_row, bytes)},
    };
    char table[512];
    snprintf(table, sizeof table, "/runs/%s/memory", run);
    slice_ctx sc = {x, path, table};
    return results_h5r_for_each(f, table, fields, SIM_ARRAY_LEN(fields), sizeof(mem_row), SLICE,
                           memory_slice, &sc);
}

/* Process and thread names (and their order) for what was used. */
static void export_names(exporter *x)
{
    int32_t last_node = -1;
    for (size_t r = 0; r < x->n_ranks; r++) {
        int32_t node = x->node[r];
        if (node != last_node) {
            event_start(x, "M", (int32_t)r, -1);
            fprintf(x->out, ",\"name\":\"process_name\",\"args\":{\"name\":\"node %d\"}}",
                    (int)node);
            event_start(x, "M", (int32_t)r, -1);
            fprintf(x->out, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
                    (int)node);
            last_node = node;
        }
        for (int lane = 0; lane <= LANE_OTHER; lane++) {
            if (!(x->lanes[r] & (1u << lane)))
                continue;
            event_start(x, "M", (int32_t)r, lane);
            fprintf(x->out, ",\"name\":\"thread_name\",\"args\":{\"name\":\"GPU %zu %s\"}}", r,
                    lane == LANE_OTHER ? "other" : lane_names[lane]);
            event_start(x, "M", (int32_t)r, lane);
            fprintf(x->out, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%zu}}",
                    r * LANES + (size_t)lane);
        }
    }
}

static int read_ranks(exporter *x, results_h5r_file *f, const char *run)
{
    static const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(rank_row, rank)},
        {"node", RESULTS_H5R_I32, offsetof(rank_row, node)},
    };
    char table[512];
    snprintf(table, sizeof table, "/runs/%s/ranks", run);
    results_h5r_table *t = NULL;
    int rc = results_h5r_table_open(f, table, fields, SIM_ARRAY_LEN(fields), sizeof(rank_row), &t);
    if (rc)
        return rc;
    size_t n = results_h5r_table_rows(t);
    if (n > EXPORT_RANKS_MAX) { /* per-rank state is allocated before any row is read */
        char what[600];
        snprintf(what, sizeof what, "%s: %s", x->path, table);
        results_h5r_table_close(t);
        return cli_invalid(what, "more than 2^24 ranks", NULL, NULL);
    }
    rank_row *rows = sim_calloc(n + 1, sizeof *rows);
    rc = results_h5r_table_read(t, 0, n, rows);
    x->n_ranks = n;
    x->node = sim_calloc(n + 1, sizeof *x->node);
    x->lanes = sim_calloc(n + 1, sizeof *x->lanes);
    x->mem = sim_calloc((n + 1) * MEM_CATS, sizeof *x->mem);
    for (size_t i = 0; !rc && i < n; i++)
        if (rows[i].rank >= 0 && (size_t)rows[i].rank < n)
            x->node[rows[i].rank] = rows[i].node;
    sim_free(rows);
    results_h5r_table_close(t);
    return rc;
}

/* The run to export: --run, or the file's only run. */
int cli_results_open(const char *path, results_h5r_file **f, sim_diag *diag)
{
    *f = NULL;
    int rc = results_h5r_prewalk(path, 0, diag); /* libhdf5 may crash on a bad file */
    if (rc == 0)
        rc = results_h5r_open(path, f, diag);
    if (rc) {
        sim_diag_print(diag, stderr);
        return cli_exit_of(rc);
    }
    return 0;
}

int cli_pick_run(results_h5r_file *f, const char *path, const char *want, const char **run)
{
    const char *const *names;
    size_t n = results_h5r_runs(f, &names);
    if (want) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], want) == 0) {
                *run = names[i];
                return 0;
            }
        char hint[512] = "runs in the file:";
        for (size_t i = 0; i < n && strlen(hint) < sizeof hint - 80; i++)
            snprintf(hint + strlen(hint), sizeof hint - strlen(hint), " %s", names[i]);
        return cli_invalid(path, "no run named", want, hint);
    }
    if (n == 1) {
        *run = names[0];
        return 0;
    }
    if (n == 0)
        return cli_invalid(path, "the file holds no run", NULL, NULL);
    char hint[512] = "choose one with --run:";
    for (size_t i = 0; i < n && strlen(hint) < sizeof hint - 80; i++)
        snprintf(hint + strlen(hint), sizeof hint - strlen(hint), " %s", names[i]);
    return cli_invalid(path, "the file holds several runs", NULL, hint);
}

static int export_run(results_h5r_file *f, const char *path, const char *run, const char *out_path,
                      size_t *n_events)
{
    exporter x = {.first = true, .path = path};
    int rc = read_ranks(&x, f, run);
    char *tmp = NULL;
    if (!rc) {
        size_t len = strlen(out_path) + 32;
        tmp = sim_calloc(len, 1);
        snprintf(tmp, len, "%s.tmp-%ld", out_path, (long)getpid());
        x.out = fopen(tmp, "w");
        if (!x.out)
            rc = write_error(out_path);
    }
    if (!rc) {
        fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"stepsim\",\"run\":", x.out);
        results_json_string(x.out, run);
        fputs("},\"traceEvents\":[", x.out);
        rc = export_timeline(&x, f, path, run);
        if (!rc)
            rc = export_bubbles(&x, f, path, run);
        if (!rc)
            rc = export_memory(&x, f, path, run);
        if (!rc) {
            export_names(&x);
            fputs("\n]}\n", x.out);
        }
        if (fflush(x.out) != 0 || ferror(x.out) || fsync(fileno(x.out)) != 0) {
            if (!rc)
                rc = write_error(out_path);
        }
        fclose(x.out);
        if (!rc && rename(tmp, out_path) != 0)
            rc = write_error(out_path);
        if (rc)
            unlink(tmp);
    }
    *n_events = x.n_ops + x.n_bubbles + x.n_counters;
    if (!rc)
        fprintf(stderr, "stepsim: %s: %zu op events, %zu bubble events, %zu memory counter "
                        "events -> %s (open it in ui.perfetto.dev)\n",
                run, x.n_ops, x.n_bubbles, x.n_counters, out_path);
    sim_free(tmp);
    sim_free(x.node);
    sim_free(x.lanes);
    sim_free(x.mem);
    return rc;
}

typedef struct export_args {
    const char *in, *run, *out;
} export_args;

static const cli_opt options[] = {
    {.name = "--run", .kind = CLI_OPT_STRING, .metavar = "NAME",
     .offset = offsetof(export_args, run)},
    {.name = "--output", .alias = "-o", .kind = CLI_OPT_STRING, .metavar = "TRACE.json",
     .required = true, .offset = offsetof(export_args, out)},
};
static const cli_arg args[] = {{.name = "OUT.h5", .offset = offsetof(export_args, in)}};
static const cli_spec spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options), .args = args,
                              .n_args = SIM_ARRAY_LEN(args)};

static int export_body(void *parsed, int argc, char **argv)
{
    export_args *a = parsed;
    (void)argc;
    (void)argv;
    const char *inputs[] = {a->in};
    cli_signals_install();
    cli_output_lock lock = {.fd = -1};
    int rc = cli_output_check("--output", a->out, inputs, SIM_ARRAY_LEN(inputs));
    if (rc == 0)
        rc = cli_output_lock_take(&lock, a->out);
    if (rc)
        return rc;
    cli_output_remove_stale(a->out);
    sim_diag diag = {0};
    results_h5r_file *f = NULL;
    if ((rc = cli_results_open(a->in, &f, &diag))) {
        cli_output_lock_release(&lock);
        return rc;
    }
    const char *name = NULL;
    rc = cli_pick_run(f, a->in, a->run, &name);
    size_t n_events = 0;
    if (!rc) {
        rc = export_run(f, a->in, name, a->out, &n_events);
        if (rc && diag.set) { /* a table missing or unreadable */
            sim_diag_print(&diag, stderr);
            rc = cli_exit_of(rc);
        }
    }
    results_h5r_close(f);
    cli_output_lock_release(&lock);
    /* a signal after the last slice lets the export finish: the file is whole */
    int stopped = rc ? cli_signal_exit("nothing written") : 0;
    return stopped ? stopped : rc;
}

int cli_export_perfetto(const cli_command *cmd, int argc, char **argv)
{
    export_args a = {0};
    return cli_opts_run(cmd, &spec, argc, argv, &a, export_body);
}
