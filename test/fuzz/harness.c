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

#include "cli/cli.h"
#include "fuzz/harness.h"
#include "input/load.h"
#include "input/sweep.h"
#include "plan/plan.h"
#include "plan/scenario.h"
#include "replay/replay.h"
#include "results/h5read.h"
#include "results/tracefile.h"
#include "trace/trace.h"

#define PATH_LEN 4096
/* The memory budget of the runs the scenario harness plans and replays (docs/cli.md): small,
 * so that every accepted input replays in a fraction of a second. */
#define FUZZ_RUN_BUDGET (32.0 * 1024 * 1024)

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
    /* a hang in libhdf5 ends the pre-walk's child well within libFuzzer's -timeout=10 */
    setenv("STEPSIM_PREWALK_LIMIT_S", "4", 0);
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
    /* one step under a small budget: what the loader accepts is also planned and replayed,
     * in bounded time and memory (values it accepts must not abort the run) */
    input_load_options lo = {.steps = 1, .max_memory_bytes = FUZZ_RUN_BUDGET};
    int rc = input_scenario_load_opts(path, NULL, 0, &lo, sc, &info, &diag, NULL);
    expect("input_scenario_load", rc, &diag);
    if (rc == 0 && (!info || !info->resolved_yaml))
        finding("%s succeeded without the resolved scenario (%d)", "input_scenario_load", rc);
    input_scenario_info_destroy(info);
    if (rc == 0) {
        sc->simulation.steps = 1;
        sc->simulation.timeline = false;
        plan *p = NULL;
        memset(&diag, 0, sizeof diag);
        rc = plan_create(sc, &(plan_options){.with_trace = true}, &p, &diag);
        expect("plan_create", rc, &diag);
        if (rc == 0) {
            replay_results *res = replay_results_create();
            replay_run(p, &(replay_options){.no_bubble_rows = true}, res);
            if (res->summary.status == REPLAY_STATUS_ERROR && !res->beyond_horizon)
                finding("replay_run of a loaded scenario ended in error: %s (%d)",
                        res->summary.error, 0);
            replay_results_destroy(res);
            plan_destroy(p);
        }
    }
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

/* An input the pre-walk refused because libhdf5 crashed or hung on it: kept, when
 * STEPSIM_FUZZ_HDF5_CRASHES names a directory (scripts/fuzz.sh sets it), as
 * <dir>/hdf5-<fnv1a64 of the bytes>, for test/fuzz/regressions/. */
static void keep_hdf5_crash(const sim_diag *d, const uint8_t *data, size_t size)
{
    const char *dir = getenv("STEPSIM_FUZZ_HDF5_CRASHES");
    if (!dir || !d->set ||
        (!strstr(d->msg, "libhdf5 crashed") && !strstr(d->msg, "reading it took more than")))
        return;
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/hdf5-%016llx", dir,
             (unsigned long long)sim_fnv1a64(SIM_FNV64_OFFSET, data, size));
    write_input(path, data, size);
}

int fuzz_trace(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(h5_path, data, size);
    trace *t = NULL;
    results_trace_info info = {0};
    sim_diag diag = {0};
    /* as `stepsim replay`: the forked pre-walk first, so a crash or hang inside libhdf5
     * refuses the file instead of stopping the fuzzer */
    int rc = results_h5r_prewalk(path, 0, &diag);
    expect("results_h5r_prewalk", rc, &diag);
    keep_hdf5_crash(&diag, data, size);
    if (rc == 0) {
        rc = results_trace_read(path, &t, &info, &diag);
        expect("results_trace_read", rc, &diag);
    }
    if (rc == 0) {
        trace_destroy(t);
        sim_free(info.scenario_yaml);
    }
    unlink(path);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The results target: `stepsim report` (its table and --csv) and `stepsim export-perfetto`
 * of every run, through the commands' own code (sim/cli is a library), stdout to /dev/null.
 * Each must exit 0, or 2 after one error line for a file it refuses; anything else, or a
 * crash, is a finding. */

static void expect_exit(const char *what, int rc)
{
    if (rc != 0 && rc != CLI_EXIT_INVALID)
        finding("%s exited %d, not 0 or 2", what, rc);
}

static void export_run(const char *path, const char *run)
{
    static const cli_command cmd = {.name = "export-perfetto", .usage = ""};
    char out[PATH_LEN];
    snprintf(out, sizeof out, "%s/fuzz-export.json", work_dir);
    char *argv[] = {"stepsim", "export-perfetto", (char *)path, "--run", (char *)run, "-o", out,
                    NULL};
    expect_exit("export-perfetto", cli_export_perfetto(&cmd, 7, argv));
    unlink(out);
}

int fuzz_results(const uint8_t *data, size_t size)
{
    setup();
    const char *path = write_input(h5_path, data, size);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fileno(sink), STDOUT_FILENO);
    /* report and export-perfetto pre-walk the file in a child (results_h5r_prewalk), and so
     * does the harness before it opens the file itself to list the runs */
    sim_diag diag = {0};
    int walked = results_h5r_prewalk(path, 0, &diag);
    expect("results_h5r_prewalk", walked, &diag);
    keep_hdf5_crash(&diag, data, size);
    int rc = cli_report_file(path, false);
    expect_exit("report", rc);
    if (walked && rc != CLI_EXIT_INVALID)
        finding("%s: report exited %d on a file the pre-walk refused", path, rc);
    if (!walked)
        expect_exit("report --csv", cli_report_file(path, true));
    results_h5r_file *f = NULL;
    if (!walked && results_h5r_open(path, &f, &diag) == 0) {
        const char *const *names;
        size_t n = results_h5r_runs(f, &names);
        for (size_t i = 0; i < n; i++)
            export_run(path, names[i]);
        results_h5r_close(f);
    }
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
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
