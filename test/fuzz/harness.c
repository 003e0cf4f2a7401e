/* The fuzz harnesses (harness.h). Every input goes to a temporary file in a directory made once
 * per process under /tmp and removed at exit; the file itself is removed after each call.
 *
 * The YAML targets write it as <dir>/scenarios/fuzz-input.yaml, next to links to the shipped
 * scenarios and test/cli/data's files, with <dir>/topologies and <dir>/workloads linked to the
 * source tree's: the references the shipped files make ("../topologies/x.yaml",
 * "tiny-gpt.yaml", a sweep's base) resolve as they do in the repository, and bare names (a
 * GPU) resolve through the data directories as always (sim/input/load.c). */
#include "core/sim.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/harness.h"
#include "input/load.h"
#include "input/sweep.h"
#include "plan/scenario.h"
#include "replay/results.h"
#include "results/h5read.h"
#include "results/json.h"
#include "results/tracefile.h"
#include "trace/trace.h"

#define PATH_LEN 4096

static char work_dir[64];         /* the per-process directory, "" until made */
static char input_path[PATH_LEN]; /* the YAML input, inside it */
static char h5_path[PATH_LEN];    /* the HDF5 input, inside it */
static FILE *sink;                /* /dev/null: where the results target prints */

/* A finding: say what and stop, so libFuzzer (or the replay test) sees a crash. */
static void finding(const char *fmt, const char *a, int rc)
{
    fprintf(stderr, "fuzz: FINDING: ");
    fprintf(stderr, fmt, a, rc);
    fprintf(stderr, "\n");
    abort();
}

/* rc is 0, or a SIM_E* code with its diagnostic recorded. */
static void expect(const char *call, int rc, const sim_diag *d)
{
    if (rc == 0)
        return;
    if (rc <= SIM__ERR_FIRST || rc >= SIM__ERR_LAST)
        finding("%s returned %d, not a SIM_E* code", call, rc);
    if (!d->set)
        finding("%s returned %d without a diagnostic", call, rc);
    if (getenv("STEPSIM_FUZZ_VERBOSE")) /* which inputs are refused, and why */
        sim_diag_print(d, stderr);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[PATH_LEN];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void cleanup(void)
{
    if (work_dir[0])
        remove_tree(work_dir);
    if (sink)
        fclose(sink);
}

/* Links every *.yaml of `from` into `to`. */
static void link_yaml(const char *from, const char *to)
{
    DIR *d = opendir(from);
    if (!d)
        return;
    struct dirent *e;
    char src[PATH_LEN], dst[PATH_LEN];
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        snprintf(src, sizeof src, "%s/%s", from, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, e->d_name);
        if (symlink(src, dst) != 0 && errno != EEXIST)
            perror(dst);
    }
    closedir(d);
}

static void setup(void)
{
    if (work_dir[0])
        return;
    snprintf(work_dir, sizeof work_dir, "/tmp/stepsim-fuzz-XXXXXX");
    if (!mkdtemp(work_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(cleanup);
    char a[PATH_LEN], b[PATH_LEN];
    const char *src = STEPSIM_SOURCE_DIR;
    snprintf(a, sizeof a, "%s/scenarios", work_dir);
    mkdir(a, 0700);
    snprintf(b, sizeof b, "%s/scenarios", src);
    link_yaml(b, a);
    snprintf(b, sizeof b, "%s/test/cli/data", src);
    link_yaml(b, a);
    const char *const dirs[] = {"topologies", "workloads"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", work_dir, dirs[i]);
        snprintf(b, sizeof b, "%s/%s", src, dirs[i]);
        if (symlink(b, a) != 0)
            perror(a);
    }
    snprintf(input_path, sizeof input_path, "%s/scenarios/fuzz-input.yaml", work_dir);
    snprintf(h5_path, sizeof h5_path, "%s/fuzz-input.h5", work_dir);
    sink = fopen("/dev/null", "w");
    if (!sink) {
        perror("fuzz: /dev/null");
        abort();
    }
}

static const char *write_input(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

int fuzz_scenario(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(input_path, data, size);
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    input_scenario_info *info = NULL;
    sim_diag diag = {0};
    int rc = input_scenario_load(path, NULL, 0, sc, &info, &diag);
    expect("input_scenario_load", rc, &diag);
    if (rc == 0 && (!info || !info->resolved_yaml))
        finding("%s succeeded without the resolved scenario (%d)", "input_scenario_load", rc);
    input_scenario_info_destroy(info);
    sim_free(sc);
    unlink(path);
    return 0;
}

int fuzz_topology(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(input_path, data, size);
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    sim_diag diag = {0};
    int rc = input_topology_load(path, NULL, 0, spec, &diag);
    expect("input_topology_load", rc, &diag);
    sim_free(spec);
    unlink(path);
    return 0;
}

int fuzz_sweep(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(input_path, data, size);
    input_sweep *sw = NULL;
    sim_diag diag = {0};
    int rc = input_sweep_load(path, &sw, &diag);
    expect("input_sweep_load", rc, &diag);
    if (rc == 0) {
        /* what `stepsim sweep` asks of every run before running it */
        for (size_t i = 0; i < sw->n_runs && i < 64; i++) {
            size_t n = 0;
            size_t *value_of = sim_calloc(sw->n_axes + 1, sizeof *value_of);
            const char **sets = input_sweep_run_sets(sw, i, &n, value_of);
            if (!input_sweep_run_base(sw, i))
                finding("%s: run %d has no base", "input_sweep_run_base", (int)i);
            sim_free(sets);
            sim_free(value_of);
        }
    }
    input_sweep_destroy(sw);
    unlink(path);
    return 0;
}

int fuzz_trace(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(h5_path, data, size);
    trace *t = NULL;
    results_trace_info info = {0};
    sim_diag diag = {0};
    int rc = results_trace_read(path, &t, &info, &diag);
    expect("results_trace_read", rc, &diag);
    if (rc == 0) {
        trace_destroy(t);
        sim_free(info.scenario_yaml);
    }
    unlink(path);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The results target: what `stepsim report` (sim/cli/report.c) and `stepsim export-perfetto`
 * (sim/cli/export.c) read, with the same fields and the same calls, over every run. */

typedef struct reader {
    results_h5r_file *f;
    sim_diag *diag;
    size_t n_ranks;
} reader;

#define SLICE 1024
/* What a slice callback returns for a row export refuses (not a SIM_E* code). */
#define REFUSED 2

/* A results-layer call's outcome: 0, or a code with the file's diagnostic recorded. The
 * diagnostic keeps only the first error, so each call starts from a clear one. */
static int check(reader *r, const char *call, int rc)
{
    expect(call, rc, r->diag);
    memset(r->diag, 0, sizeof *r->diag);
    return rc;
}

/* As export does: a string cell may be absent (NULL, h5read.h). */
static const char *or_empty(const char *s)
{
    return s ? s : "";
}

typedef struct summary_row {
    char *name, *status, *error, *binding;
    int32_t gpus;
    double step_time_s, tokens_per_s, mfu, bubble_fraction;
    int64_t peak_mem_bytes, capacity_bytes;
    double bubble[REPLAY_CAUSE_COUNT];
    double exposed[PLAN_GROUP_COUNT];
    double budget[5];
} summary_row;

static void read_summary(reader *r, const char *run)
{
    static const char *const budget_keys[5] = {"tokens", "steps", "time_to_train_s",
                                               "gpu_hours", "cost"};
    char path[512];
    snprintf(path, sizeof path, "/runs/%s/summary", run);
    results_h5r_field fields[8 + REPLAY_CAUSE_COUNT + PLAN_GROUP_COUNT + 5 + 4];
    char names[REPLAY_CAUSE_COUNT + PLAN_GROUP_COUNT + 5][48];
    size_t n = 0, k = 0;
#define F(col, type, member) \
    fields[n++] = (results_h5r_field){col, type, offsetof(summary_row, member)}
    F("name", RESULTS_H5R_STR, name);
    F("status", RESULTS_H5R_STR, status);
    F("error", RESULTS_H5R_STR, error);
    F("gpus", RESULTS_H5R_I32, gpus);
    F("step_time_s", RESULTS_H5R_F64, step_time_s);
    F("tokens_per_s", RESULTS_H5R_F64, tokens_per_s);
    F("mfu", RESULTS_H5R_F64, mfu);
    F("bubble_fraction", RESULTS_H5R_F64, bubble_fraction);
    F("peak_mem_bytes", RESULTS_H5R_I64, peak_mem_bytes);
    F("capacity_bytes", RESULTS_H5R_I64, capacity_bytes);
    F("binding_constraint", RESULTS_H5R_STR, binding);
#undef F
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++, k++) {
        snprintf(names[k], sizeof names[k], "bubble_by_cause.%s",
                 replay_cause_name((replay_cause)c));
        fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                          offsetof(summary_row, bubble) + (size_t)c * 8};
    }
    for (int g = 0; g < PLAN_GROUP_COUNT; g++, k++) {
        snprintf(names[k], sizeof names[k], "exposed_comm_s.%s",
                 plan_group_name((plan_group_class)g));
        fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                          offsetof(summary_row, exposed) + (size_t)g * 8};
    }
    for (int b = 0; b < 5; b++, k++) {
        snprintf(names[k], sizeof names[k], "budget.%s", budget_keys[b]);
        if (results_h5r_has_column(r->f, path, names[k]))
            fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                              offsetof(summary_row, budget) + (size_t)b * 8};
    }
    results_h5r_table *t = NULL;
    int rc = check(r, "results_h5r_table_open",
                   results_h5r_table_open(r->f, path, fields, n, sizeof(summary_row), &t));
    if (rc == 0 && results_h5r_table_rows(t) == 1) {
        summary_row row;
        if (check(r, "results_h5r_table_read", results_h5r_table_read(t, 0, 1, &row)) == 0) {
            fprintf(sink, "%s %s %s %s %d %g\n", or_empty(row.name), or_empty(row.status),
                    or_empty(row.error), or_empty(row.binding), (int)row.gpus, row.mfu);
            results_h5r_release(t, &row, 1);
        }
    }
    results_h5r_table_close(t);
}

typedef struct rank_row {
    int32_t rank, node;
} rank_row;

static void read_ranks(reader *r, const char *run)
{
    static const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(rank_row, rank)},
        {"node", RESULTS_H5R_I32, offsetof(rank_row, node)},
    };
    char path[512];
    snprintf(path, sizeof path, "/runs/%s/ranks", run);
    results_h5r_table *t = NULL;
    r->n_ranks = 0;
    if (check(r, "results_h5r_table_open",
              results_h5r_table_open(r->f, path, fields, 2, sizeof(rank_row), &t)) != 0)
        return;
    size_t n = results_h5r_table_rows(t);
    rank_row *rows = sim_calloc(n + 1, sizeof *rows);
    if (check(r, "results_h5r_table_read", results_h5r_table_read(t, 0, n, rows)) == 0)
        r->n_ranks = n;
    sim_free(rows);
    results_h5r_table_close(t);
}

typedef struct tl_row {
    int32_t rank, layer, microbatch, step;
    char *stream, *kind, *name, *phase, *group;
    double start_s, end_s, bytes, flops;
} tl_row;

static int timeline_slice(void *ud, void *rows_, size_t first, size_t k)
{
    (void)first;
    reader *r = ud;
    const tl_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        if (rows[i].rank < 0 || (size_t)rows[i].rank >= r->n_ranks)
            return REFUSED; /* export refuses the row */
        results_json_string(sink, or_empty(rows[i].stream));
        results_json_string(sink, or_empty(rows[i].kind));
        results_json_string(sink, or_empty(rows[i].name));
        results_json_string(sink, or_empty(rows[i].phase));
        results_json_string(sink, or_empty(rows[i].group));
        results_json_number(sink, rows[i].bytes);
        results_json_number(sink, rows[i].flops);
        results_json_number(sink, rows[i].end_s - rows[i].start_s);
    }
    return 0;
}

typedef struct bubble_row {
    int32_t rank, step;
    double start_s, end_s;
    char *cause;
} bubble_row;

static int bubble_slice(void *ud, void *rows_, size_t first, size_t k)
{
    (void)first;
    reader *r = ud;
    const bubble_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        if (rows[i].rank < 0 || (size_t)rows[i].rank >= r->n_ranks)
            return REFUSED;
        results_json_string(sink, or_empty(rows[i].cause));
        results_json_number(sink, rows[i].end_s - rows[i].start_s);
    }
    return 0;
}

typedef struct mem_row {
    int32_t rank;
    double t_s;
    char *category;
    int64_t bytes;
} mem_row;

static int memory_slice(void *ud, void *rows_, size_t first, size_t k)
{
    (void)first;
    reader *r = ud;
    const mem_row *rows = rows_;
    for (size_t i = 0; i < k; i++) {
        if (rows[i].rank < 0 || (size_t)rows[i].rank >= r->n_ranks)
            return REFUSED;
        results_json_string(sink, or_empty(rows[i].category));
        results_json_number(sink, rows[i].t_s);
    }
    return 0;
}

typedef struct name_row {
    char *a, *b;
} name_row;

static int names_slice(void *ud, void *rows_, size_t first, size_t k)
{
    (void)ud;
    (void)first;
    const name_row *rows = rows_;
    for (size_t i = 0; i < k; i++)
        fprintf(sink, "%s %s\n", or_empty(rows[i].a), or_empty(rows[i].b));
    return 0;
}

/* results_h5r_for_each over `table` ("/runs/<run>/<table>" when run is not NULL); a callback's
 * refusal is not the library's error, so only the library's own errors are checked. */
static void for_each(reader *r, const char *run, const char *table,
                     const results_h5r_field *fields, size_t n_fields, size_t row_size,
                     results_h5r_slice_fn fn)
{
    char path[512];
    if (run)
        snprintf(path, sizeof path, "/runs/%s/%s", run, table);
    else
        snprintf(path, sizeof path, "/%s", table);
    int rc = results_h5r_for_each(r->f, path, fields, n_fields, row_size, SLICE, fn, r);
    if (rc == REFUSED)
        rc = 0;
    check(r, "results_h5r_for_each", rc);
}

static void read_run(reader *r, const char *run)
{
    static const results_h5r_field tl[] = {
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
    static const results_h5r_field bubbles[] = {
        {"rank", RESULTS_H5R_I32, offsetof(bubble_row, rank)},
        {"step", RESULTS_H5R_I32, offsetof(bubble_row, step)},
        {"start_s", RESULTS_H5R_F64, offsetof(bubble_row, start_s)},
        {"end_s", RESULTS_H5R_F64, offsetof(bubble_row, end_s)},
        {"cause", RESULTS_H5R_STR, offsetof(bubble_row, cause)},
    };
    static const results_h5r_field memory[] = {
        {"rank", RESULTS_H5R_I32, offsetof(mem_row, rank)},
        {"t_s", RESULTS_H5R_F64, offsetof(mem_row, t_s)},
        {"category", RESULTS_H5R_STR, offsetof(mem_row, category)},
        {"bytes", RESULTS_H5R_I64, offsetof(mem_row, bytes)},
    };
    static const results_h5r_field links[] = {
        {"src", RESULTS_H5R_STR, offsetof(name_row, a)},
        {"dst", RESULTS_H5R_STR, offsetof(name_row, b)},
    };
    char obj[512];
    snprintf(obj, sizeof obj, "/runs/%s", run);
    const char *const attrs[] = {"scenario", "status", "error"};
    for (size_t i = 0; i < SIM_ARRAY_LEN(attrs); i++) {
        char *s = results_h5r_attr_str(r->f, obj, attrs[i]);
        check(r, "results_h5r_attr_str", s ? 0 : SIM_EINVAL);
        sim_free(s);
    }
    int written = 0;
    check(r, "results_h5r_attr_int",
          results_h5r_attr_int(r->f, obj, "timeline_written", &written) ? SIM_EINVAL : 0);
    read_summary(r, run);
    read_ranks(r, run);
    for_each(r, run, "timeline", tl, SIM_ARRAY_LEN(tl), sizeof(tl_row), timeline_slice);
    for_each(r, run, "bubbles", bubbles, SIM_ARRAY_LEN(bubbles), sizeof(bubble_row),
             bubble_slice);
    for_each(r, run, "memory", memory, SIM_ARRAY_LEN(memory), sizeof(mem_row), memory_slice);
    for_each(r, run, "links", links, SIM_ARRAY_LEN(links), sizeof(name_row), names_slice);
}

int fuzz_results(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(h5_path, data, size);
    sim_diag diag = {0};
    reader r = {.diag = &diag};
    int rc = results_h5r_open(path, &r.f, &diag);
    expect("results_h5r_open", rc, &diag);
    if (rc == 0) {
        memset(&diag, 0, sizeof diag);
        const char *const root[] = {"stepsim_version", "command", "input_hashes"};
        for (size_t i = 0; i < SIM_ARRAY_LEN(root); i++) {
            char *s = results_h5r_attr_str(r.f, "/", root[i]);
            check(&r, "results_h5r_attr_str", s ? 0 : SIM_EINVAL);
            sim_free(s);
        }
        const char *const *names;
        size_t n = results_h5r_runs(r.f, &names);
        for (size_t i = 0; i < n; i++)
            read_run(&r, names[i]);
        static const results_h5r_field inputs[] = {
            {"path", RESULTS_H5R_STR, offsetof(name_row, a)},
            {"hash", RESULTS_H5R_STR, offsetof(name_row, b)},
        };
        for_each(&r, NULL, "inputs", inputs, 2, sizeof(name_row), names_slice);
        if (results_h5r_has_column(r.f, "/sweep", "base")) { /* report's base list */
            static const results_h5r_field sweep[] = {
                {"name", RESULTS_H5R_STR, offsetof(name_row, a)},
                {"base", RESULTS_H5R_STR, offsetof(name_row, b)},
            };
            for_each(&r, NULL, "sweep", sweep, 2, sizeof(name_row), names_slice);
        }
        results_h5r_close(r.f);
    }
    unlink(path);
    return 0;
}

fuzz_fn fuzz_target(const char *target)
{
    static const struct {
        const char *name;
        fuzz_fn fn;
    } targets[] = {{"scenario", fuzz_scenario}, {"topology", fuzz_topology},
                   {"sweep", fuzz_sweep},       {"trace", fuzz_trace},
                   {"results", fuzz_results}};
    for (size_t i = 0; i < SIM_ARRAY_LEN(targets); i++)
        if (strcmp(target, targets[i].name) == 0)
            return targets[i].fn;
    return NULL;
}
