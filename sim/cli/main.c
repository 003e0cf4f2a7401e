/* The `stepsim` command: the table of sub-commands (their usage texts and the dispatch) and
 * the commands run, check, mem, trace and replay with their human-readable output.
 * Exit codes (docs/cli.md): 0 success (an OOM verdict is a result), 1 internal error (a
 * failed SIM_ASSERT too: cli_fatal_cleanup removes the temporary and lock first),
 * 2 invalid input — reported as exactly one `...: error: ...` line plus hint lines. */
#include "core/sim.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/output.h"
#include "cli/usage.h"
#include "cli/verdict.h"
#include "results/h5.h"
#include "results/json.h"
#include "input/load.h"
#include "input/suggest.h"
#include "results/h5read.h"
#include "results/tracefile.h"
#include "plan/estimate.h"
#include "plan/plan.h"
#include "replay/replay.h"

#define EXIT_INVALID CLI_EXIT_INVALID

/* The arguments of run, check, mem, trace and replay (each takes those it declares). */
typedef struct cli_args {
    const char *scenario; /* replay: the trace file */
    const char *out;
    const char *topology; /* replay: --topology */
    cli_list sets;
    bool json;
    bool no_timeline;
    bool no_op_sharing, no_isolated_rounds;
    int steps; /* 0 = from the scenario */
    int64_t max_memory; /* --max-memory; 0 = the default budget */
    char command_line[4096];
} cli_args;

#define OPT_SET                                                                             \
    {.name = "--set", .kind = CLI_OPT_LIST, .metavar = "KEY=VALUE",                         \
     .offset = offsetof(cli_args, sets)}
#define OPT_OUTPUT(META, REQUIRED)                                                          \
    {.name = "--output", .alias = "-o", .kind = CLI_OPT_STRING, .metavar = META,            \
     .offset = offsetof(cli_args, out), .required = REQUIRED}
#define OPT_JSON {.name = "--json", .kind = CLI_OPT_FLAG, .offset = offsetof(cli_args, json)}
#define OPT_STEPS                                                                           \
    {.name = "--steps", .kind = CLI_OPT_INT, .metavar = "N", .min = 1, .max = 1000000,       \
     .offset = offsetof(cli_args, steps)}
#define OPT_NO_TIMELINE                                                                     \
    {.name = "--no-timeline", .kind = CLI_OPT_FLAG, .offset = offsetof(cli_args, no_timeline)}
/* verification switches: results are the same without them, so files do not record them */
#define OPT_NO_OP_SHARING                                                                   \
    {.name = "--no-op-sharing", .kind = CLI_OPT_FLAG, .unrecorded = true,                   \
     .offset = offsetof(cli_args, no_op_sharing)}
#define OPT_NO_ISOLATED_ROUNDS                                                              \
    {.name = "--no-isolated-rounds", .kind = CLI_OPT_FLAG, .unrecorded = true,              \
     .offset = offsetof(cli_args, no_isolated_rounds)}

/* the budget changes no result: not recorded */
#define OPT_MAX_MEMORY                                                                      \
    {.name = "--max-memory", .kind = CLI_OPT_BYTES, .metavar = "SIZE", .unrecorded = true,   \
     .offset = offsetof(cli_args, max_memory)}

static const cli_arg scenario_arg[] = {
    {.name = "SCENARIO.yaml", .offset = offsetof(cli_args, scenario)}};
static const cli_arg trace_arg[] = {{.name = "TRACE.h5", .offset = offsetof(cli_args, scenario)}};

static const cli_opt run_opts[] = {OPT_OUTPUT("OUT.h5", false), OPT_SET, OPT_JSON, OPT_STEPS,
                                   OPT_NO_TIMELINE, OPT_NO_OP_SHARING, OPT_NO_ISOLATED_ROUNDS,
                                   OPT_MAX_MEMORY};
static const cli_opt check_opts[] = {OPT_SET, OPT_MAX_MEMORY};
static const cli_opt mem_opts[] = {OPT_SET, OPT_JSON, OPT_NO_OP_SHARING, OPT_MAX_MEMORY};
static const cli_opt trace_opts[] = {OPT_OUTPUT("TRACE.h5", true), OPT_SET, OPT_MAX_MEMORY};
static const cli_opt replay_opts[] = {
    {.name = "--topology", .kind = CLI_OPT_STRING, .metavar = "T.yaml",
     .offset = offsetof(cli_args, topology)},
    OPT_SET, OPT_OUTPUT("OUT.h5", false), OPT_JSON, OPT_STEPS, OPT_NO_TIMELINE,
    OPT_NO_ISOLATED_ROUNDS, OPT_MAX_MEMORY};

#define SPEC(OPTS, ARGS)                                                                    \
    {.opts = OPTS, .n_opts = SIM_ARRAY_LEN(OPTS), .args = ARGS, .n_args = SIM_ARRAY_LEN(ARGS)}
static const cli_spec run_spec = SPEC(run_opts, scenario_arg);
static const cli_spec check_spec = SPEC(check_opts, scenario_arg);
static const cli_spec mem_spec = SPEC(mem_opts, scenario_arg);
static const cli_spec trace_spec = SPEC(trace_opts, scenario_arg);
static const cli_spec replay_spec = SPEC(replay_opts, trace_arg);

/* Reads the arguments of `spec` and runs `body` on them; returns the exit code. */
static int with_args(const cli_command *cmd, const cli_spec *spec, int argc, char **argv,
                     int (*body)(const cli_args *a))
{
    cli_args *a = sim_calloc(1, sizeof *a);
    int rc = cli_opts_parse(cmd, spec, argc, argv, a);
    if (rc == 0) {
        cli_command_line(spec, argc, argv, a->command_line, sizeof a->command_line);
        rc = body(a);
    }
    cli_opts_free(spec, a);
    sim_free(a);
    return rc == CLI_OPTS_HELP ? 0 : rc;
}

static void print_bytes(FILE *f, double b)
{
    fprintf(f, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

static void print_summary(FILE *f, const plan *p, const replay_results *r, bool replayed,
                          const results_verdict *v)
{
    const replay_summary *s = &r->summary;
    const plan_scenario *sc = p->sc;
    fprintf(f, "%s: %s\n", s->name, s->status == REPLAY_STATUS_OOM ? "OUT OF MEMORY" : "fits");
    char cluster[512];
    cli_cluster_text(sc, s->gpus, cluster, sizeof cluster);
    fprintf(f, "  cluster         %s", cluster);
    if (p->topology_gpus > s->gpus)
        fprintf(f, " (of %d in topology '%s')", p->topology_gpus, sc->topology.name);
    else
        fprintf(f, " (topology '%s')", sc->topology.name);
    fprintf(f, "\n  model           %s, seq %lld, global batch %lld = %lld micro-batch(es) of %lld"
               " x dp %d\n",
            sc->model.name, (long long)sc->training.seq_len, (long long)p->global_batch,
            (long long)p->accum_steps, (long long)sc->training.micro_batch, sc->parallel.dp);
    if (replayed && s->symmetry_dp)
        fprintf(f, "  symmetry        dp: one data-parallel replica%s (%d of %d GPUs) simulated, "
                   "the others taken as identical; collectives across replicas %s all %d\n",
                sc->parallel.ep > 1 ? " (an expert-parallel block)" : "",
                p->n_ranks / sc->parallel.dp * sc->parallel.ep, p->n_ranks,
                s->symmetry_estimated ? "estimated by the cost model on" : "ran as flows on",
                p->n_ranks);
    if (replayed && s->steady_periods > 0)
        fprintf(f, "  steady state    %" PRIu64 " repeating period(s) skipped, %.4g s and "
                   "%.3g M ops in all (exact: the results of simulation.steady_state: off)\n",
                s->steady_periods, s->steady_skipped_s, (double)s->steady_ops / 1e6);
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
        if (s->comm_bytes_per_gpu[REPLAY_COMM_OFFLOAD] > 0)
            fprintf(f, "  offload         %.4g GB to and from host memory per GPU, %.4g s "
                       "waited for\n",
                    s->comm_bytes_per_gpu[REPLAY_COMM_OFFLOAD] / 1e9,
                    s->bubble_by_cause[REPLAY_CAUSE_OFFLOAD] * s->step_time_s);
        if (s->bubble_by_cause[REPLAY_CAUSE_HOST] >= 0.01) {
            /* the host thread bounds the step: say what that rests on (the slowest host's) */
            fprintf(f, "  host            %.4g s a step per GPU waiting for the host thread to issue "
                       "kernels (%s: %.4g us an op; an estimate, docs/calibration.md \"Host "
                       "launch\")\n",
                    s->bubble_by_cause[REPLAY_CAUSE_HOST] * s->step_time_s,
                    sc->training.compile ? "node.host.launch.compiled" : "node.host.launch.eager",
                    sim_time_to_s(hw_topology_launch_max_ps(&sc->topology,
                                                            sc->training.compile)) * 1e6);
        }
        if (s->moe)
            fprintf(
                f,
                "  experts         busiest %.3g x the mean load, %.2f%% of assignments dropped\n",
                s->moe_load_max_over_mean, 100 * s->moe_dropped_fraction);
        if (s->variable)
            fprintf(f, "  slowest rank    %d: %.4g s of compute, the others wait %.4g s per step "
                       "for it\n",
                    s->slowest_rank, s->slowest_compute_s, s->slowest_wait_s);
        if (isfinite(s->budget_tokens)) { /* training.tokens */
            char t[32];
            cli_fmt_duration(t, sizeof t, s->time_to_train_s);
            fprintf(f, "  time to train   %s for %.4g tokens (%.0f steps), %.4g GPU-hours", t,
                    s->budget_tokens, s->budget_steps, s->gpu_hours);
            if (isfinite(s->cost))
                fprintf(f, ", cost %.4g", s->cost);
            fputc('\n', f);
        }
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
    if (s->offloaded) {
        fprintf(f, "  host memory     ");
        print_bytes(f, (double)s->host_mem_bytes);
        fprintf(f, " offloaded on node %d", s->host_node);
        if (s->host_capacity_bytes > 0) {
            fprintf(f, " of ");
            print_bytes(f, (double)s->host_capacity_bytes);
            fputc('\n', f);
        } else {
            fprintf(f, " (topology.node.host.memory not given: not checked)\n");
        }
    }
    if (s->binding_constraint)
        fprintf(f, "  binding         %s\n", s->binding_constraint);
    if (v)
        cli_verdict_print(f, v);
    cli_print_accuracy(f, replayed, p->sc);
}

/* A loaded scenario and its plan; what every sub-command starts from. */
typedef struct cli_job {
    plan_scenario sc;
    input_scenario_info *info;
    plan *p;
    cli_output_lock lock; /* of -o, while it is written */
} cli_job;

static void job_clear(cli_job *j)
{
    cli_output_lock_release(&j->lock);
    plan_destroy(j->p);
    input_scenario_info_destroy(j->info);
}

/* Before any work on a command with -o: refuses an empty path and a target that is not a
 * regular file; installs the signal handlers (output.h). Returns 0 or EXIT_INVALID. */
static int out_precheck(const cli_args *a)
{
    cli_signals_install();
    return a->out ? cli_output_check("--output", a->out, NULL, 0) : 0;
}

/* Once the inputs are known: refuses -o naming one of them (`first`, the file the command
 * was given, and the job's inputs), takes the output's lock and removes the temporaries a
 * killed writer left. Returns 0 or the exit code. */
static int out_guard(const cli_args *a, cli_job *j, const char *first)
{
    if (!a->out)
        return 0;
    size_t n = j->info ? j->info->n_inputs : 0;
    const char **in = sim_calloc(n + 1, sizeof *in);
    in[0] = first;
    for (size_t i = 0; i < n; i++)
        in[i + 1] = j->info->inputs[i].path;
    int rc = cli_output_check("--output", a->out, in, n + 1);
    sim_free(in);
    if (rc == 0)
        rc = cli_output_lock_take(&j->lock, a->out);
    if (rc == 0)
        cli_output_remove_stale(a->out);
    return rc;
}

/* Loads the scenario, applies the CLI overrides and builds the plan (with the trace when
 * `with_trace`), refusing one over the memory budget: the whole run's when `replayed` (the
 * commands that build a whole trace, and `check`, which answers for `run`), else the plan's
 * alone (`mem`, which keeps one rank's ops at a time). Bad input is printed as one error
 * line; returns 0 or EXIT_INVALID. */
static int job_load(const cli_args *a, bool with_trace, bool replayed, cli_job *j)
{
    sim_diag diag = {0};
    input_load_options lo = {.steps = a->steps, .no_op_sharing = a->no_op_sharing,
                             .max_memory_bytes = cli_memory_budget(a->max_memory),
                             .plan_only = !replayed};
    int rc = input_scenario_load_opts(a->scenario, a->sets.v, a->sets.n, &lo, &j->sc, &j->info,
                                      &diag, NULL);
    if (rc != 0) {
        if (!diag.set)
            sim_diag_error(&diag, a->scenario, 0, 0, "%s", sim_strerror(rc));
        sim_diag_print(&diag, stderr);
        return EXIT_INVALID;
    }
    if (j->info && j->info->notes)
        fprintf(stderr, "%s\n", j->info->notes);
    if ((rc = out_guard(a, j, a->scenario)) != 0)
        return rc;
    if (a->steps > 0)
        j->sc.simulation.steps = a->steps;
    if (a->no_timeline)
        j->sc.simulation.timeline = false;
    plan_options po = {.with_trace = with_trace, .no_op_sharing = a->no_op_sharing};
    rc = plan_create(&j->sc, &po, &j->p, &diag);
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

static int finish_h5(results_h5_file *f, const cli_job *j, const replay_results *res,
                     sim_diag *diag)
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

/* How the job was loaded, for the remedies of its verdict (cli/verdict.h). */
static cli_verdict_input verdict_input(const cli_args *a, bool replayed)
{
    return (cli_verdict_input){
        .scenario = a->scenario,
        .sets = (const char *const *)a->sets.v,
        .n_sets = a->sets.n,
        .load = {.steps = a->steps, .no_op_sharing = a->no_op_sharing,
                 .max_memory_bytes = cli_memory_budget(a->max_memory),
                 .plan_only = !replayed},
        .steps = a->steps,
        .no_op_sharing = a->no_op_sharing,
        .no_isolated_rounds = a->no_isolated_rounds,
        .replayed = replayed};
}

/* Replays the job's plan and reports: the summary (or --json) on stdout, -o OUT.h5 with the
 * timeline streamed into it. `input_error`: a failed replay (a deadlock) is the input's
 * fault (exit 2, a trace read from a file) rather than an internal error (exit 1).
 * `remedies`: check the verdict's remedies (`run`; not `replay`, whose trace no change of
 * the scenario would regenerate). */
static int replay_and_report(const cli_args *a, cli_job *j, bool input_error, bool remedies)
{
    results_h5_file *f = NULL;
    sim_diag diag = {0};
    int orc = a->out ? open_h5(a, j, &f, &diag) : 0;
    if (orc != 0) {
        sim_diag_print(&diag, stderr);
        results_h5_abort(f);
        return cli_exit_of(orc);
    }
    /* Test hook (test_cli.py, mode hostile): no input reaches a failed assertion, so the
     * exit code 1 and the cleanup of a failed one are provoked here, once the temporary and
     * the lock exist. Read by the CLI only, never by the library. */
    if (f && getenv("STEPSIM_TEST_ASSERT"))
        SIM_ASSERT(!getenv("STEPSIM_TEST_ASSERT"), "STEPSIM_TEST_ASSERT is set (a test hook)");
    int rc = 0;
    replay_results *res = replay_results_create();
    h5_sink sink = {.f = f, .run = j->sc.name};
    replay_options opt = {.timeline = j->sc.simulation.timeline,
                          .timeline_sink = f ? stream_rows : NULL,
                          .timeline_ud = &sink,
                          .progress = print_progress,
                          .progress_ud = j->sc.name,
                          .progress_every_s = 15,
                          .no_bubble_rows = f == NULL, /* only a results file holds them */
                          .no_isolated_rounds = a->no_isolated_rounds,
                          .cancel = cli_signal_flag()};
    replay_run(j->p, &opt, res);
    results_verdict verdict = {0};
    bool have_verdict = !res->cancelled && !*cli_signal_flag() &&
                        res->summary.status != REPLAY_STATUS_ERROR;
    if (have_verdict) {
        cli_verdict_input vi = verdict_input(a, true);
        vi.no_remedies = !remedies;
        char constraint[1024];
        cli_verdict_build(&vi, j->p, res, &verdict, constraint, sizeof constraint);
        if (constraint[0])
            res->summary.binding_constraint = replay_results_intern(res, constraint);
    }
    if (res->cancelled || *cli_signal_flag()) {
        results_h5_abort(f); /* removes the temporary */
        rc = cli_signal_exit(f ? "nothing written" : "stopped");
    } else if (res->summary.status == REPLAY_STATUS_ERROR) {
        fprintf(stderr, "%s: error: %s\n", a->scenario, res->summary.error);
        results_h5_abort(f);
        rc = input_error || res->beyond_horizon ? EXIT_INVALID : 1;
    } else if (f) {
        int wrc = finish_h5(f, j, res, &diag);
        if (wrc) {
            sim_diag_print(&diag, stderr);
            rc = cli_exit_of(wrc);
        }
    }
    if (rc == 0) {
        if (a->json)
            results_json_write_run_verdict(stdout, res, have_verdict ? &verdict : NULL);
        else
            print_summary(stdout, j->p, res, true, have_verdict ? &verdict : NULL);
        int own = 0, own_values = 0;
        unsigned long long ops = 0;
        for (int r = 0; r < j->p->trace->n_ranks; r++) {
            own += j->p->trace->ranks[r].tmpl < 0;
            own_values += j->p->trace->ranks[r].n_var > 0;
            ops += j->p->trace->ranks[r].n_ops;
        }
        /* MoE ranks are all generated, then borrow with their own expert kernels' values */
        char values[96] = "";
        if (own_values > 0)
            snprintf(values, sizeof values, " (%d with their own expert-kernel values)",
                     own_values);
        fprintf(stderr, "stepsim: simulated %d step(s) of %d GPU(s) (%llu ops per step) in "
                        "%.3f s wall, %llu events (%.3g events/s); ops held for %d rank(s), "
                        "the others share them%s\n",
                j->sc.simulation.steps, j->p->n_ranks, ops, res->wall_s,
                (unsigned long long)res->events,
                res->wall_s > 0 ? (double)res->events / res->wall_s : 0.0, own, values);
    }
    cli_verdict_free(&verdict);
    replay_results_destroy(res);
    return rc;
}

static int cmd_run(const cli_args *a)
{
    int rc = out_precheck(a);
    if (rc)
        return rc;
    cli_job *j = sim_calloc(1, sizeof *j);
    rc = job_load(a, true, true, j);
    if (rc == 0 && (rc = cli_signal_exit("nothing written")) == 0)
        rc = replay_and_report(a, j, false, true);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int cmd_trace(const cli_args *a)
{
    int rc = out_precheck(a);
    if (rc)
        return rc;
    cli_job *j = sim_calloc(1, sizeof *j);
    rc = job_load(a, true, true, j);
    if (rc == 0)
        rc = cli_signal_exit("nothing written");
    if (rc == 0) {
        sim_diag diag = {0};
        int wrc = results_trace_write(a->out, a->command_line, j->info->resolved_yaml, j->p,
                                      &diag);
        if (wrc) {
            sim_diag_print(&diag, stderr);
            rc = cli_exit_of(wrc);
        } else {
            size_t ops = 0;
            for (int r = 0; r < j->p->trace->n_ranks; r++)
                ops += j->p->trace->ranks[r].n_ops;
            fprintf(stderr, "stepsim: %s: %d rank(s), %zu ops, %zu collective instances -> %s\n",
                    j->sc.name, j->p->n_ranks, ops, j->p->trace->n_colls, a->out);
            /* the file is written in one pass: a signal during it is acted on after */
            rc = cli_signal_exit("the trace was written whole before stopping");
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
    const char **sets = sim_calloc(a->sets.n + 2, sizeof *sets);
    size_t n = 0;
    char topo[4200];
    if (a->topology) {
        snprintf(topo, sizeof topo, "topology=%s", a->topology);
        sets[n++] = topo;
    }
    for (size_t i = 0; i < a->sets.n; i++)
        sets[n++] = a->sets.v[i];
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

/* Refuses a trace file whose declared rows need more memory than the budget, before they
 * are read (a compressed file may declare far more than its size). */
static int trace_budget(const cli_args *a, sim_diag *diag)
{
    sim_diag ignored = {0};
    results_trace_rows n;
    if (results_trace_count(a->scenario, &n, &ignored) != 0)
        return 0; /* not a trace file: the reader says so */
    double need = plan_estimate_trace_bytes(n.ops, n.deps, n.mem_events, n.ranks);
    double budget = cli_memory_budget(a->max_memory);
    if (budget <= 0 || need <= budget)
        return 0;
    sim_diag_error(diag, a->scenario, 0, 0,
                   "the replay needs about %.3g GiB (%.3g ops, %.3g dependencies, %.3g memory "
                   "events), more than the memory budget of %.3g GiB", need / 1073741824.0,
                   n.ops, n.deps, n.mem_events, budget / 1073741824.0);
    sim_diag_hint(diag, "raise the budget with --max-memory SIZE (default: 80%% of the memory "
                        "stepsim may use)");
    return SIM_EINVAL;
}

static int cmd_replay(const cli_args *a)
{
    const char *given[] = {a->scenario, a->topology};
    int rc = out_precheck(a);
    if (rc == 0 && a->out)
        rc = cli_output_check("--output", a->out, given, SIM_ARRAY_LEN(given));
    if (rc)
        return rc;
    sim_diag diag = {0};
    trace *t = NULL;
    results_trace_info info = {0};
    rc = results_h5r_prewalk(a->scenario, 0, &diag); /* libhdf5 may crash on a bad file */
    if (rc == 0)
        rc = trace_budget(a, &diag);
    if (rc == 0)
        rc = results_trace_read(a->scenario, &t, &info, &diag);
    if (rc) {
        sim_diag_print(&diag, stderr);
        return cli_exit_of(rc);
    }
    cli_job *j = sim_calloc(1, sizeof *j);
    rc = load_embedded(a, info.scenario_yaml, j);
    if (rc == 0)
        rc = out_guard(a, j, a->scenario);
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
    if (rc == 0 && (rc = cli_signal_exit("nothing written")) == 0)
        rc = replay_and_report(a, j, true, false);
    sim_free(info.scenario_yaml);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int cmd_check(const cli_args *a)
{
    cli_job *j = sim_calloc(1, sizeof *j);
    int rc = job_load(a, false, true, j);
    if (rc == 0)
        printf("%s: ok (%d GPU(s), %s)\n", a->scenario, j->p->n_ranks, j->sc.name);
    job_clear(j);
    sim_free(j);
    return rc;
}

/* Whether the scenario (with the command's --set) offloads activations: read without a
 * memory budget, printing nothing; false when it does not load (job_load then says why). */
static bool offloads_activations(const cli_args *a)
{
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    sim_diag diag = {0};
    input_load_options lo = {.steps = a->steps, .no_op_sharing = a->no_op_sharing,
                             .plan_only = true};
    bool yes = input_scenario_load_opts(a->scenario, a->sets.v, a->sets.n, &lo, sc, NULL, &diag,
                                        NULL) == 0 &&
               sc->parallel.offload.activations != PLAN_OFFLOAD_NONE;
    sim_free(sc);
    return yes;
}

/* `mem`: the memory plan in program order, or, under activation offload, the replay's: an
 * offloaded activation leaves the GPU when its copy to the host ends, which only the replay
 * times (copies slower than the compute queue up; docs/memory.md), so such a scenario is
 * replayed as `run --no-timeline` would, remedies included, and `mem` answers what `run`
 * does. */
static int cmd_mem(const cli_args *a)
{
    bool timed = offloads_activations(a);
    if (timed)
        cli_signals_install(); /* a replay stops on SIGINT/SIGTERM, as run's does */
    cli_job *j = sim_calloc(1, sizeof *j);
    /* under activation offload with the trace and the whole run's memory budget (run's) */
    int rc = job_load(a, timed, timed, j);
    replay_results *res = rc == 0 ? replay_results_create() : NULL;
    if (res && timed) {
        replay_options opt = {.progress = print_progress,
                              .progress_ud = j->sc.name,
                              .progress_every_s = 15,
                              .no_bubble_rows = true,
                              .no_isolated_rounds = a->no_isolated_rounds,
                              .cancel = cli_signal_flag()};
        replay_run(j->p, &opt, res);
        if (res->cancelled || *cli_signal_flag()) {
            rc = cli_signal_exit("stopped");
        } else if (res->summary.status == REPLAY_STATUS_ERROR) {
            fprintf(stderr, "%s: error: %s\n", a->scenario, res->summary.error);
            rc = res->beyond_horizon ? EXIT_INVALID : 1;
        }
    } else if (res) {
        replay_memory_only(j->p, res);
    }
    if (res && rc == 0) {
        results_verdict verdict;
        cli_verdict_input vi = verdict_input(a, timed);
        vi.ladder_order = true;
        char constraint[1024];
        cli_verdict_build(&vi, j->p, res, &verdict, constraint, sizeof constraint);
        if (constraint[0])
            res->summary.binding_constraint = replay_results_intern(res, constraint);
        verdict.has_bottleneck = false; /* a memory answer: the step's limit is run's to say */
        if (timed) /* a signal during the remedies */
            rc = cli_signal_exit("stopped");
        if (rc == 0) {
            if (a->json)
                results_json_write_mem(stdout, &res->summary, &verdict);
            else
                print_summary(stdout, j->p, res, false, &verdict);
            if (timed)
                fprintf(stderr, "stepsim: %s: activation offload: replayed %d step(s) of %d "
                                "GPU(s) to time the copies to the host (%.3f s wall)\n",
                        j->sc.name, j->sc.simulation.steps, j->p->n_ranks, res->wall_s);
        }
        cli_verdict_free(&verdict);
    }
    replay_results_destroy(res);
    job_clear(j);
    sim_free(j);
    return rc;
}

static int run_main(const cli_command *cmd, int argc, char **argv)
{
    return with_args(cmd, &run_spec, argc, argv, cmd_run);
}

static int check_main(const cli_command *cmd, int argc, char **argv)
{
    return with_args(cmd, &check_spec, argc, argv, cmd_check);
}

static int mem_main(const cli_command *cmd, int argc, char **argv)
{
    return with_args(cmd, &mem_spec, argc, argv, cmd_mem);
}

static int trace_main(const cli_command *cmd, int argc, char **argv)
{
    return with_args(cmd, &trace_spec, argc, argv, cmd_trace);
}

static int replay_main(const cli_command *cmd, int argc, char **argv)
{
    return with_args(cmd, &replay_spec, argc, argv, cmd_replay);
}

/* ---- the command table (usage texts in usage.c) ---- */

static const cli_command cli_commands[] = {
    {.name = "advise", .args = "SCENARIO.yaml", .usage = cli_usage_advise, .run = cli_advise,
     .summary = "the ladder for the scenario: each rung's fit, throughput and limit"},
    {.name = "run", .args = "SCENARIO.yaml", .usage = cli_usage_run, .run = run_main,
     .summary = "simulate training steps; print a summary, --json, or -o OUT.h5"},
    {.name = "check", .args = "SCENARIO.yaml", .usage = cli_usage_check, .run = check_main,
     .summary = "validate a scenario (exit 0 valid, 2 invalid)"},
    {.name = "mem", .args = "SCENARIO.yaml", .usage = cli_usage_mem, .run = mem_main,
     .summary = "the per-GPU memory plan and OOM verdict (replayed under activation offload)"},
    {.name = "topo", .args = "TOPOLOGY.yaml", .usage = cli_usage_topo, .run = cli_topo,
     .summary = "describe a topology: devices, links, bisection, routes"},
    {.name = "import", .args = "FRAMEWORK SOURCE", .usage = cli_usage_import, .run = cli_import,
     .summary = "a DeepSpeed/Accelerate/torchtitan/Megatron config as a scenario (-o)"},
    {.name = "bench-coll", .args = "--op OP ...", .usage = cli_usage_bench_coll,
     .run = cli_bench_coll, .summary = "time a collective over sizes, like nccl-tests"},
    {.name = "bench", .args = "", .usage = cli_usage_bench, .run = cli_bench,
     .summary = "the simulator's own speed: engine floor and reference scenarios"},
    {.name = "trace", .args = "SCENARIO.yaml", .usage = cli_usage_trace, .run = trace_main,
     .summary = "write the generated per-rank op DAG (-o TRACE.h5)"},
    {.name = "replay", .args = "TRACE.h5", .usage = cli_usage_replay, .run = replay_main,
     .summary = "replay a trace file (edited, or with measured durations)"},
    {.name = "report", .args = "OUT.h5", .usage = cli_usage_report, .run = cli_report,
     .summary = "the runs of a results file as a table (--csv)"},
    {.name = "export-perfetto", .args = "OUT.h5", .usage = cli_usage_export,
     .run = cli_export_perfetto,
     .summary = "a run as Chrome Trace Event JSON for ui.perfetto.dev"},
    {.name = "export-csv", .args = "OUT.h5 TABLE", .usage = cli_usage_export_csv,
     .run = cli_export_csv, .summary = "a table of a results file as CSV (strings as text)"},
    {.name = "sweep", .args = "SWEEP.yaml", .usage = cli_usage_sweep, .run = cli_sweep,
     .summary = "run every combination of a sweep file's axes (also under mpirun)"},
    {.name = "plan", .args = "SCENARIO.yaml", .usage = cli_usage_plan, .run = cli_plan,
     .summary = "search the parallel strategies for the model, cluster and batch"},
};

static void print_usage(FILE *f)
{
    fputs("usage: stepsim COMMAND [ARGS]\n"
          "\n"
          "Discrete-event simulator of distributed LLM training on GPU clusters.\n"
          "\n"
          "commands:\n", f);
    for (size_t k = 0; k < SIM_ARRAY_LEN(cli_commands); k++) {
        const cli_command *c = &cli_commands[k];
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", c->name, c->args[0] ? " " : "", c->args);
        fprintf(f, "  %-22s  %s\n", head, c->summary);
    }
    fputs("\n"
          "Options take their value as `--opt VALUE` or `--opt=VALUE`. `stepsim COMMAND\n"
          "--help` (or `stepsim help COMMAND`) prints a command's options, `stepsim --version`\n"
          "the version; docs/cli.md has the details.\n", f);
}

static const cli_command *find_command(const char *name)
{
    for (size_t k = 0; k < SIM_ARRAY_LEN(cli_commands); k++)
        if (strcmp(cli_commands[k].name, name) == 0)
            return &cli_commands[k];
    return NULL;
}

/* The error line, then the commands as hint lines of at most 96 columns. */
static int unknown_command(const char *name)
{
    const char *names[SIM_ARRAY_LEN(cli_commands)];
    for (size_t k = 0; k < SIM_ARRAY_LEN(cli_commands); k++)
        names[k] = cli_commands[k].name;
    const char *near = input_suggest(name, names, SIM_ARRAY_LEN(names));
    fprintf(stderr, "stepsim: error: unknown command '%s'", name);
    if (near)
        fprintf(stderr, "; did you mean '%s'?", near);
    int col = fprintf(stderr, "\n  commands:") - 1;
    for (size_t k = 0; k < SIM_ARRAY_LEN(cli_commands); k++) {
        bool last = k + 1 == SIM_ARRAY_LEN(cli_commands);
        if (col + 2 + (int)strlen(names[k]) > 96)
            col = fprintf(stderr, "\n   ") - 1;
        col += fprintf(stderr, " %s%s", names[k], last ? "" : ",");
    }
    fprintf(stderr, "\n  see `stepsim --help`\n");
    return EXIT_INVALID;
}

int main(int argc, char **argv)
{
    sim_set_fatal_hook(cli_fatal_cleanup);
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_INVALID;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 ||
        (strcmp(name, "help") == 0 && argc == 2)) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) {
        printf("stepsim %s\n", STEPSIM_VERSION);
        return 0;
    }
    if (strcmp(name, "help") == 0) {
        const cli_command *c = find_command(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        if (argc > 3)
            return cli_invalid("stepsim", "unexpected argument", argv[3],
                               "usage: stepsim help COMMAND");
        fputs(c->usage, stdout);
        return 0;
    }
    const cli_command *c = find_command(name);
    return c ? c->run(c, argc, argv) : unknown_command(name);
}
