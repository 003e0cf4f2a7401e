/* The `stepsim` command: argument parsing, sub-command dispatch, human-readable output.
 * Exit codes (docs/cli.md): 0 success (an OOM verdict is a result), 1 internal error,
 * 2 invalid input — reported as exactly one `...: error: ...` line plus hint lines. */
#include "core/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "results/h5.h"
#include "results/json.h"
#include "input/load.h"
#include "results/tracefile.h"
#include "plan/plan.h"
#include "replay/replay.h"

#define EXIT_INVALID CLI_EXIT_INVALID

typedef struct cli_args {
    const char *cmd;
    const char *scenario;
    const char *out;
    const char *topology; /* replay: --topology */
    const char **sets;
    size_t n_sets;
    bool json;
    bool no_timeline;
    int steps; /* 0 = from the scenario */
    char command_line[4096];
} cli_args;

static const char usage_main[] =
    "usage: stepsim COMMAND [ARGS]\n"
    "\n"
    "Discrete-event simulator of distributed LLM training on GPU clusters.\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml    simulate training steps; print a summary, --json, or -o OUT.h5\n"
    "  check SCENARIO.yaml  validate a scenario (exit 0 valid, 2 invalid)\n"
    "  mem SCENARIO.yaml    the per-GPU memory plan and OOM verdict, without replay\n"
    "  topo TOPOLOGY.yaml   describe a topology: devices, links, bisection, routes\n"
    "  bench-coll ...       time a collective over sizes, like nccl-tests\n"
    "  bench                the simulator's own speed: engine floor and reference scenarios\n"
    "  trace SCENARIO.yaml  write the generated per-rank op DAG (-o TRACE.h5)\n"
    "  replay TRACE.h5      replay a trace file (edited, or with measured durations)\n"
    "  report OUT.h5        the runs of a results file as a table (--csv)\n"
    "  export-perfetto OUT.h5  a run as Chrome Trace Event JSON for ui.perfetto.dev\n"
    "  sweep SWEEP.yaml     run every combination of a sweep file's axes (also under mpirun)\n"
    "  plan SCENARIO.yaml   search the parallel strategies for the model, cluster and batch\n"
    "Run `stepsim COMMAND --help` for a command's options; docs/cli.md has the details.\n";

static const char usage_run[] =
    "usage: stepsim run SCENARIO.yaml [-o OUT.h5] [--set KEY=VALUE]... [--json] [--steps N]\n"
    "                   [--no-timeline]\n"
    "\n"
    "Generates the trace the scenario implies, replays it on the modelled cluster and reports\n"
    "step time, throughput, MFU, bubbles, exposed communication and per-GPU memory.\n"
    "\n"
    "  -o, --output OUT.h5  write the results (HDF5 schema 1, docs/hdf5-schema.md)\n"
    "  --set KEY=VALUE      override a scenario key by dotted path (parallel.dp=4,\n"
    "                       topology.gpu.memory=\"40 GiB\"); VALUE is a YAML flow value\n"
    "  --json               print the summary as one JSON object (docs/json.md)\n"
    "  --steps N            simulate N optimizer steps (overrides simulation.steps)\n"
    "  --no-timeline        do not record the per-op timeline (smaller files)\n";

static const char usage_trace[] =
    "usage: stepsim trace SCENARIO.yaml -o TRACE.h5 [--set KEY=VALUE]...\n"
    "\n"
    "Writes the trace the scenario implies: every rank's ops (compute kernels with FLOPs and\n"
    "bytes, collectives, copies), their dependencies and memory events, in the HDF5 layout\n"
    "of docs/trace-format.md. Edit it, or set measured durations, then `stepsim replay` it.\n";

static const char usage_replay[] =
    "usage: stepsim replay TRACE.h5 [--topology T.yaml] [--set KEY=VALUE]... [-o OUT.h5]\n"
    "                      [--json] [--steps N] [--no-timeline]\n"
    "\n"
    "Replays a trace file on a cluster and reports as `stepsim run` does. The scenario the\n"
    "trace was made from (stored in it) supplies the topology, GPU and simulation settings;\n"
    "--topology replaces the topology, --set changes keys of that scenario (the trace's ops\n"
    "stay as they are: the parallel layout must keep its number of ranks).\n";

static const char usage_check[] =
    "usage: stepsim check SCENARIO.yaml [--set KEY=VALUE]...\n"
    "\n"
    "Loads and validates the scenario and the files it references. Exit 0 when valid; 2\n"
    "with one FILE:LINE:COL: error: line when not.\n";

static const char usage_mem[] =
    "usage: stepsim mem SCENARIO.yaml [--set KEY=VALUE]... [--json]\n"
    "\n"
    "Prints the per-GPU memory plan (params, grads, optimizer, activations, buffers) and the\n"
    "OOM verdict without replaying the step.\n";

int cli_invalid(const char *what, const char *msg, const char *arg, const char *hint)
{
    if (arg)
        fprintf(stderr, "%s: error: %s '%s'\n", what, msg, arg);
    else
        fprintf(stderr, "%s: error: %s\n", what, msg);
    if (hint)
        fprintf(stderr, "  %s\n", hint);
    return CLI_EXIT_INVALID;
}

static int invalid(const char *what, const char *msg, const char *hint)
{
    fprintf(stderr, "%s: error: %s\n", what, msg);
    if (hint)
        fprintf(stderr, "  %s\n", hint);
    return EXIT_INVALID;
}

static const char *usage_of(const char *cmd)
{
    if (strcmp(cmd, "run") == 0)
        return usage_run;
    if (strcmp(cmd, "check") == 0)
        return usage_check;
    if (strcmp(cmd, "mem") == 0)
        return usage_mem;
    if (strcmp(cmd, "trace") == 0)
        return usage_trace;
    if (strcmp(cmd, "replay") == 0)
        return usage_replay;
    return NULL;
}

/* Returns 0 to go on, -1 when help was printed (exit 0), or EXIT_INVALID. */
static int parse_args(int argc, char **argv, cli_args *a)
{
    char hint[128];
    snprintf(hint, sizeof hint, "see `stepsim %s --help`", a->cmd);
    size_t len = 0;
    for (int i = 0; i < argc && len + 2 < sizeof a->command_line; i++)
        len += (size_t)snprintf(a->command_line + len, sizeof a->command_line - len, "%s%s",
                                i ? " " : "", i == 0 ? "stepsim" : argv[i]);
    bool is_replay = strcmp(a->cmd, "replay") == 0, is_trace = strcmp(a->cmd, "trace") == 0;
    bool is_run = strcmp(a->cmd, "run") == 0 || is_replay, is_mem = strcmp(a->cmd, "mem") == 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_of(a->cmd), stdout);
            return -1;
        }
        if (strcmp(arg, "--set") == 0 || strncmp(arg, "--set=", 6) == 0) {
            const char *v = arg[5] == '=' ? arg + 6 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v)
                return invalid("--set", "expects KEY=VALUE", hint);
            a->sets[a->n_sets++] = v;
        } else if (is_replay && strcmp(arg, "--topology") == 0) {
            if (i + 1 >= argc)
                return invalid(arg, "expects a topology file", hint);
            a->topology = argv[++i];
        } else if ((is_run || is_trace) &&
                   (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0)) {
            if (i + 1 >= argc)
                return invalid(arg, "expects an output file name", hint);
            a->out = argv[++i];
        } else if ((is_run || is_mem) && strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (is_run && strcmp(arg, "--no-timeline") == 0) {
            a->no_timeline = true;
        } else if (is_run && strcmp(arg, "--steps") == 0) {
            if (i + 1 >= argc)
                return invalid("--steps", "expects a number of steps", hint);
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1000000)
                return invalid("--steps", "expects an integer from 1 to 1000000", hint);
            a->steps = (int)n;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown option '%s' for `stepsim %s`", arg, a->cmd);
            return invalid("stepsim", msg, hint);
        } else if (!a->scenario) {
            a->scenario = arg;
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "unexpected argument '%s'", arg);
            return invalid("stepsim", msg, hint);
        }
    }
    if (!a->scenario)
        return invalid("stepsim", is_replay ? "missing TRACE.h5" : "missing SCENARIO.yaml", hint);
    if (is_trace && !a->out)
        return invalid("stepsim", "missing -o TRACE.h5", hint);
    return 0;
}

static void print_bytes(FILE *f, double b)
{
    fprintf(f, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

static void print_summary(FILE *f, const plan *p, const replay_results *r, bool replayed)
{
    const replay_summary *s = &r->summary;
    const plan_scenario *sc = p->sc;
    fprintf(f, "%s: %s\n", s->name, s->status == REPLAY_STATUS_OOM ? "OUT OF MEMORY" : "fits");
    fprintf(f, "  cluster         %d x %s", s->gpus, sc->topology.gpu.name);
    if (p->topology_gpus > s->gpus)
        fprintf(f, " (of %d in topology '%s')", p->topology_gpus, sc->topology.name);
    else
        fprintf(f, " (topology '%s')", sc->topology.name);
    fprintf(f, "\n  model           %s, seq %lld, global batch %lld = %lld micro-batch(es) of %lld"
               " x dp %d\n",
            sc->model.name, (long long)sc->training.seq_len, (long long)p->global_batch,
            (long long)p->accum_steps, (long long)sc->training.micro_batch, sc->parallel.dp);
    if (replayed && s->symmetry_dp)
        fprintf(f, "  symmetry        dp: one data-parallel replica (%d of %d GPUs) simulated, the "
                   "others taken as identical; collectives across replicas %s all %d\n",
                p->n_ranks / sc->parallel.dp, p->n_ranks,
                s->symmetry_estimated ? "estimated by the cost model on" : "ran as flows on",
                p->n_ranks);
    if (replayed) {
        fprintf(f, "  step time       %.6g s", s->step_time_s);
        if (s->steps > 1)
            fprintf(f, " (median of steps 2..%d)", s->steps);
        fprintf(f, "\n  throughput      %.6g tokens/s, %.4g samples/s\n", s->tokens_per_s,
                s->samples_per_s);
        fprintf(f, "  compute         %.4g TFLOP/s per GPU, MFU %.1f%%, HFU %.1f%%\n",
                s->tflops_per_gpu, 100 * s->mfu, 100 * s->hfu);
        fprintf(f, "  bubbles         %.2f%% of the step", 100 * s->bubble_fraction);
        const char *sep = " (";
        for (int c = 0; c < REPLAY_CAUSE_COUNT; c++)
            if (s->bubble_by_cause[c] > 0) {
                fprintf(f, "%s%s %.2f%%", sep, replay_cause_name((replay_cause)c),
                        100 * s->bubble_by_cause[c]);
                sep = ", ";
            }
        fprintf(f, "%s\n", sep[0] == ',' ? ")" : "");
        for (int g = 0; g < PLAN_GROUP_COUNT; g++)
            if (s->comm_bytes_per_gpu[g] > 0)
                fprintf(f, "  %-2s traffic      %.4g GB sent per GPU, %.4g s exposed\n",
                        plan_group_name((plan_group_class)g), s->comm_bytes_per_gpu[g] / 1e9,
                        s->exposed_comm_s[g]);
        if (s->moe)
            fprintf(f, "  experts         busiest %.3g x the mean load, %.2f%% of assignments dropped\n",
                    s->moe_load_max_over_mean, 100 * s->moe_dropped_fraction);
    }
    fprintf(f, "  memory (peak)   ");
    print_bytes(f, (double)s->peak_mem_bytes);
    fprintf(f, " of ");
    print_bytes(f, (double)s->capacity_bytes);
    fprintf(f, "\n ");
    for (int c = 0; c < PLAN_MEM_COUNT; c++) {
        fprintf(f, " %s ", plan_mem_cat_name((plan_mem_cat)c));
        print_bytes(f, (double)s->mem_bytes[c]);
        fputc(c + 1 < PLAN_MEM_COUNT ? ',' : '\n', f);
    }
    if (s->binding_constraint)
        fprintf(f, "  binding         %s\n", s->binding_constraint);
    cli_print_accuracy(f, replayed, p->sc->topology.gpu.name);
}

/* A loaded scenario and its plan; what every sub-command starts from. */
typedef struct cli_job {
    plan_scenario sc;
    input_scenario_info *info;
    plan *p;
} cli_job;

static void job_clear(cli_job *j)
{
    plan_destroy(j->p);
    input_scenario_info_destroy(j->info);
}

/* Loads the scenario, applies the CLI overrides and builds the plan (with the trace when
 * `with_trace`). Bad input is printed as one error line; returns 0 or EXIT_INVALID. */
static int job_load(const cli_args *a, bool with_trace, cli_job *j)
{
    sim_diag diag = {0};
    int rc = input_scenario_load(a->scenario, a->sets, a->n_sets, &j->sc, &j->info, &diag);
    if (rc != 0) {
        if (!diag.set)
            sim_diag_error(&diag, a->scenario, 0, 0, "%s", sim_strerror(rc));
        sim_diag_print(&diag, stderr);
        return EXIT_INVALID;
    }
    if (a->steps > 0)
        j->sc.simulation.steps = a->steps;
    if (a->no_timeline)
        j->sc.simulation.timeline = false;
    rc = plan_create(&j->sc, with_trace, &j->p, &diag);
    if (rc != 0) {
        /* the plan has no file positions: report against the scenario file */
        snprintf(diag.file, sizeof diag.file, "%s", a->scenario);
        sim_diag_print(&diag, stderr);
        return EXIT_INVALID;
    }
    if (j->p->warning[0])
        fprintf(stderr, "%s: warning: %s\n", a->scenario, j->p->warning);
    return 0;
}

/* Starts the results file before the replay, so an unwritable path fails at once; the
 * replay streams its timeline into it. */
static int open_h5(const cli_args *a, const cli_job *j, results_h5_file **f, sim_diag *diag)
{
    const input_scenario_info *info = j->info;
    results_h5_input *inputs = sim_calloc(info->n_inputs + 1, sizeof *inputs);
    for (size_t i = 0; i < info->n_inputs; i++)
        inputs[i] = (results_h5_input){.path = info->inputs[i].path, .hash = info->inputs[i].hash};
    int rc = results_h5_open(a->out, a->command_line, inputs, info->n_inputs, f, diag);
    sim_free(inputs);
    return rc;
}

typedef struct h5_sink {
    results_h5_file *f;
    const char *run;
} h5_sink;

static int stream_rows(void *ud, const replay_timeline_row *rows, size_t n)
{
    h5_sink *s = ud;
    return results_h5_stream_timeline(s->f, s->run, rows, n);
}

static int finish_h5(results_h5_file *f, const cli_job *j, const replay_results *res, sim_diag *diag)
{
    results_h5_run run = {.results = res, .scenario_yaml = j->info->resolved_yaml};
    int rc = results_h5_add_run(f, &run, j->sc.simulation.timeline);
    if (rc) {
        results_h5_abort(f);
        return rc;
    }
    (void)diag;
    return results_h5_close(f);
}

/* A progress line on stderr for replays that take a while (every 15 s of wall time). */
static void print_progress(void *ud, const replay_progress *at)
{
    const char *name = ud;
    fprintf(stderr, "stepsim: %s: %d of %d step(s) done on every GPU, %.4g s simulated, "
                    "%.3g M events, %.0f s wall\n",
            name, at->steps_done, at->steps, at->simulated_s, (double)at->events / 1e6,
            at->wall_s);
}

/* Replays the job's plan and reports: the summary (or --json) on stdout, -o OUT.h5 with the
 * timeline streamed into it. `input_error`: a failed replay (a deadlock) is the input's
 * fault (exit 2, a trace read from a file) rather than an internal error (exit 1). */
static int replay_and_report(const cli_args *a, cli_job *j, bool input_error)
{
    results_h5_file *f = NULL;
    sim_diag diag = {0};
    if (a->out && open_h5(a, j, &f, &diag) != 0) {
        sim_diag_print(&diag, stderr);
        results_h5_abort(f);
        return 1;
    }
    int rc = 0;
    replay_results *res = replay_results_create();
    h5_sink sink = {.f = f, .run = j->sc.name};
    replay_options opt = {.timeline = j->sc.simulation.timeline,
                          .timeline_sink = f ? stream_rows : NULL,
                          .timeline_ud = &sink,
                          .progress = print_progress,
                          .progress_ud = j->sc.name,
                          .progress_every_s = 15,
                          .no_bubble_rows = f == NULL /* only a results file holds them */};
    replay_run(j->p, &opt, res);
    if (res->summary.status == REPLAY_STATUS_ERROR) {
        fprintf(stderr, "%s: error: %s\n", a->scenario, res->summary.error);
        results_h5_abort(f);
        rc = input_error ? EXIT_INVALID : 1;
    } else if (f) {
        int wrc = finish_h5(f, j, res, &diag);
        if (wrc) {
            sim_diag_print(&diag, stderr);
            rc = wrc == SIM_EINVAL ? EXIT_INVALID : 1;
        }
    }
    if (rc == 0) {
        if (a->json)
            results_json_write_run(stdout, res);
        else
            print_summary(stdout, j->p, res, true);
        int own = 0;
        unsigned long long ops = 0;
        for (int r = 0; r < j->p->trace->n_ranks; r++) {
            own += j->p->trace->ranks[r].tmpl < 0;
            ops += j->p->trace->ranks[r].n_ops;
        }
        fprintf(stderr, "stepsim: simulated %d step(s) of %d GPU(s) (%llu ops per step) in "
                        "%.3f s wall, %llu events (%.3g events/s); ops generated for %d "
                        "rank(s), the others share them\n",
                j->sc.simulation.steps, j->p->n_ranks, ops, res->wall_s,
                (unsigned long long)res->events,
                res->wall_s > 0 ? (double)res->events / res->wall_s : 0.0, own);
    }
    replay_results_destroy(res);
    return rc;
}

static int cmd_run(const cli_args *a)
{
    cli_job *j = sim_calloc(1, sizeof *j);
    int rc = job_load(a, true, j);
    if (rc == 0)
        rc = replay_and_report(a, j, false);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int cmd_trace(const cli_args *a)
{
    cli_job *j = sim_calloc(1, sizeof *j);
    int rc = job_load(a, true, j);
    if (rc == 0) {
        sim_diag diag = {0};
        if (results_trace_write(a->out, a->command_line, j->info->resolved_yaml, j->p, &diag)) {
            sim_diag_print(&diag, stderr);
            rc = 1;
        } else {
            size_t ops = 0;
            for (int r = 0; r < j->p->trace->n_ranks; r++)
                ops += j->p->trace->ranks[r].n_ops;
            fprintf(stderr, "stepsim: %s: %d rank(s), %zu ops, %zu collective instances -> %s\n",
                    j->sc.name, j->p->n_ranks, ops, j->p->trace->n_colls, a->out);
        }
    }
    job_clear(j);
    sim_free(j);
    return rc;
}

/* Loads the scenario stored in a trace file, with --topology and --set applied: written to
 * a temporary file the loader reads (its references are inlined already). */
static int load_embedded(const cli_args *a, const char *yaml, cli_job *j)
{
    char path[] = "/tmp/stepsim-replay-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "stepsim: error: cannot create a temporary file: %s\n", strerror(errno));
        return 1;
    }
    FILE *f = fdopen(fd, "w");
    bool ok = f && fputs(yaml, f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    const char **sets = sim_calloc(a->n_sets + 2, sizeof *sets);
    size_t n = 0;
    char topo[4200];
    if (a->topology) {
        snprintf(topo, sizeof topo, "topology=%s", a->topology);
        sets[n++] = topo;
    }
    for (size_t i = 0; i < a->n_sets; i++)
        sets[n++] = a->sets[i];
    sim_diag diag = {0};
    int rc = ok ? input_scenario_load(path, sets, n, &j->sc, &j->info, &diag) : SIM_EIO;
    unlink(path);
    sim_free(sets);
    if (rc) {
        if (!diag.set)
            sim_diag_error(&diag, a->scenario, 0, 0, "the scenario stored in the trace: %s",
                           sim_strerror(rc));
        if (strcmp(diag.file, path) == 0) /* a problem in the stored text itself */
            snprintf(diag.file, sizeof diag.file, "%s (stored scenario)", a->scenario);
        sim_diag_print(&diag, stderr);
        return EXIT_INVALID;
    }
    if (a->steps > 0)
        j->sc.simulation.steps = a->steps;
    if (a->no_timeline)
        j->sc.simulation.timeline = false;
    /* the results file names the trace, not the temporary copy of its scenario */
    if (j->info->n_inputs > 0) {
        sim_free(j->info->inputs[0].path);
        size_t len = strlen(a->scenario) + 16;
        j->info->inputs[0].path = sim_calloc(len, 1);
        snprintf(j->info->inputs[0].path, len, "%s:scenario", a->scenario);
    }
    return 0;
}

static int cmd_replay(const cli_args *a)
{
    sim_diag diag = {0};
    trace *t = NULL;
    results_trace_info info;
    int rc = results_trace_read(a->scenario, &t, &info, &diag);
    if (rc) {
        sim_diag_print(&diag, stderr);
        return rc == SIM_EINVAL ? EXIT_INVALID : 1;
    }
    cli_job *j = sim_calloc(1, sizeof *j);
    rc = load_embedded(a, info.scenario_yaml, j);
    if (rc == 0) {
        plan_trace_figures fig = {
            .global_batch = info.global_batch,
            .model_flops_per_step = info.model_flops_per_step,
            .hardware_flops_per_step = info.hardware_flops_per_step,
            .moe = info.moe,
            .moe_dropped_fraction = info.moe_dropped_fraction,
            .moe_load_max_over_mean = info.moe_load_max_over_mean,
        };
        rc = plan_from_trace(&j->sc, t, &fig, &j->p, &diag);
        t = NULL; /* the plan owns it (or freed it) */
        if (rc) {
            snprintf(diag.file, sizeof diag.file, "%s", a->scenario);
            sim_diag_print(&diag, stderr);
            rc = EXIT_INVALID;
        }
    }
    trace_destroy(t);
    if (rc == 0)
        rc = replay_and_report(a, j, true);
    sim_free(info.scenario_yaml);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int cmd_check(const cli_args *a)
{
    cli_job *j = sim_calloc(1, sizeof *j);
    int rc = job_load(a, false, j);
    if (rc == 0)
        printf("%s: ok (%d GPU(s), %s)\n", a->scenario, j->p->n_ranks, j->sc.name);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int cmd_mem(const cli_args *a)
{
    cli_job *j = sim_calloc(1, sizeof *j);
    int rc = job_load(a, false, j);
    if (rc == 0) {
        replay_results *res = replay_results_create();
        replay_memory_only(j->p, res);
        if (a->json)
            results_json_write_mem(stdout, &res->summary);
        else
            print_summary(stdout, j->p, res, false);
        replay_results_destroy(res);
    }
    job_clear(j);
    sim_free(j);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        const char *u = argc >= 3 && strcmp(argv[1], "help") == 0 ? usage_of(argv[2]) : NULL;
        fputs(u ? u : usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INVALID : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("stepsim %s\n", STEPSIM_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "topo") == 0)
        return cli_topo(argc, argv);
    if (strcmp(argv[1], "bench-coll") == 0)
        return cli_bench_coll(argc, argv);
    if (strcmp(argv[1], "bench") == 0)
        return cli_bench(argc, argv);
    if (strcmp(argv[1], "export-perfetto") == 0)
        return cli_export_perfetto(argc, argv);
    if (strcmp(argv[1], "report") == 0)
        return cli_report(argc, argv);
    if (strcmp(argv[1], "sweep") == 0)
        return cli_sweep(argc, argv);
    if (strcmp(argv[1], "plan") == 0)
        return cli_plan(argc, argv);
    cli_args a = {.cmd = argv[1]};
    if (!usage_of(a.cmd)) {
        char msg[256];
        snprintf(msg, sizeof msg, "unknown command '%s'", a.cmd);
        return invalid("stepsim", msg, "commands: run, check, mem, topo, bench-coll, bench, trace, replay, report, "
                                         "export-perfetto (see `stepsim --help`)");
    }
    a.sets = sim_calloc((size_t)argc, sizeof *a.sets);
    int rc = parse_args(argc, argv, &a);
    if (rc == 0) {
        if (strcmp(a.cmd, "run") == 0)
            rc = cmd_run(&a);
        else if (strcmp(a.cmd, "check") == 0)
            rc = cmd_check(&a);
        else if (strcmp(a.cmd, "trace") == 0)
            rc = cmd_trace(&a);
        else if (strcmp(a.cmd, "replay") == 0)
            rc = cmd_replay(&a);
        else
            rc = cmd_mem(&a);
    } else if (rc < 0) {
        rc = 0;
    }
    sim_free(a.sets);
    return rc;
}
