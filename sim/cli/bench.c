/* `stepsim bench`: the simulator's own speed (docs/performance.md).
 *
 * Two parts. The engine floor: the "hold" model of discrete-event simulation (pop the
 * earliest event, push it again a random delay later) on the bare event queue with 10^3 and
 * 10^5 events pending, the latter the depth of a 16K-GPU run: events/s with nothing but the
 * queue, the cost every scenario pays per event at least. Then the reference scenarios, each
 * in a child process (its peak RSS is the child's, from wait4): trace generation, replay,
 * events, flows, re-solves of the flow rates, wall time, events/s, nanoseconds per event
 * against the engine floor, and simulated time over wall time. */
#define _DEFAULT_SOURCE /* wait4: the rusage of one child */
#include "core/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "core/eventq.h"
#include "input/load.h"
#include "plan/plan.h"
#include "replay/replay.h"

/* The memory limit is one on the address space (RLIMIT_AS). AddressSanitizer reserves
 * terabytes of address space for its shadow memory and cannot start under such a limit, so
 * a sanitized build (GCC defines __SANITIZE_ADDRESS__) runs without it. */
#if defined(__SANITIZE_ADDRESS__)
#define LIMIT_ADDRESS_SPACE 0
#else
#define LIMIT_ADDRESS_SPACE 1
#endif

/* The fixed reference set, in this order (docs/performance.md), with each one's GPU count
 * (for --quick, which leaves out those of 1,024 GPUs and more); the last entry runs the
 * 16K-GPU scenario again with simulation.symmetry: dp. */
static const struct bench_ref {
    const char *name;
    const char *file; /* in --dir, without .yaml */
    int gpus;
    bool symmetry;
} bench_set[] = {
    {"small-ddp", "small-ddp", 8, false},
    {"gpt3-175b-1024xa100", "gpt3-175b-1024xa100", 1024, false},
    {"fsdp-70b-256xh100", "fsdp-70b-256xh100", 256, false},
    {"moe-ep-512xh100", "moe-ep-512xh100", 512, false},
    {"mtnlg-530b-3360xa100", "mtnlg-530b-3360xa100", 3360, false},
    {"llama3.1-405b-16384xh100", "llama3.1-405b-16384xh100", 16384, false},
    {"llama3.1-405b-16384xh100-symmetry", "llama3.1-405b-16384xh100", 16384, true},
};
enum { BENCH_N = SIM_ARRAY_LEN(bench_set) };

typedef struct bench_opts {
    bool engine_only, quick, json;
    const char *dir, *only;
    double mem_limit_gib;
} bench_opts;

static const cli_opt options[] = {
    {.name = "--engine-only", .kind = CLI_OPT_FLAG, .offset = offsetof(bench_opts, engine_only)},
    {.name = "--quick", .kind = CLI_OPT_FLAG, .offset = offsetof(bench_opts, quick)},
    {.name = "--only", .kind = CLI_OPT_STRING, .metavar = "NAME[,NAME...]",
     .offset = offsetof(bench_opts, only)},
    {.name = "--dir", .kind = CLI_OPT_STRING, .metavar = "DIR",
     .offset = offsetof(bench_opts, dir)},
    {.name = "--mem-limit", .kind = CLI_OPT_REAL, .metavar = "GIB",
     .offset = offsetof(bench_opts, mem_limit_gib)},
    {.name = "--json", .kind = CLI_OPT_FLAG, .offset = offsetof(bench_opts, json)},
};
static const cli_spec bench_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options)};

/* ---- engine floor ---------------------------------------------------------------------- */

typedef struct engine_result {
    size_t pending;
    uint64_t events;
    double wall_s, events_per_s;
} engine_result;

static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Delays uniform in [0, 2 us) in picoseconds: about one event per 2 us / pending of
 * simulated time, the spacing of a busy cluster. A power-of-two modulus keeps the
 * generator's cost out of the measurement. */
#define HOLD_DELAY_MASK ((UINT64_C(1) << 21) - 1)

static engine_result engine_hold(size_t pending, uint64_t events)
{
    sim_eventq *q = sim_eventq_create();
    uint64_t rng = SIM_GOLDEN64; /* any non-zero xorshift seed */
    for (size_t i = 0; i < pending; i++)
        sim_eventq_push(q, sim_eventq_alloc(q), (sim_time)(xorshift64(&rng) & HOLD_DELAY_MASK));
    /* warm-up: every event moved once, the buckets at their working size */
    for (size_t i = 0; i < pending; i++) {
        sim_event *ev = sim_eventq_pop(q);
        sim_eventq_push(q, ev, ev->time + (sim_time)(xorshift64(&rng) & HOLD_DELAY_MASK));
    }
    double t0 = cli_wall_s();
    for (uint64_t i = 0; i < events; i++) {
        sim_event *ev = sim_eventq_pop(q);
        sim_eventq_push(q, ev, ev->time + (sim_time)(xorshift64(&rng) & HOLD_DELAY_MASK));
    }
    double wall = cli_wall_s() - t0;
    SIM_ASSERT(sim_eventq_size(q) == pending, "hold lost events");
    sim_eventq_destroy(q);
    return (engine_result){.pending = pending, .events = events, .wall_s = wall,
                           .events_per_s = wall > 0 ? (double)events / wall : 0};
}

/* ---- scenarios ------------------------------------------------------------------------- */

typedef struct scenario_stats {
    int status; /* 0 ok; else what went wrong, in `error` */
    int gpus;
    uint64_t ops, events, flows, solves, rounds, rounds_split, rounds_closed, rounds_evolved;
    int generated; /* ranks whose ops were generated (the others share them) */
    double plan_s, setup_s, replay_s, simulated_s, step_s; /* replay_s includes setup_s */
    char error[200];
} scenario_stats;

typedef struct scenario_result {
    const char *name;
    bool symmetry; /* simulation.symmetry: dp (one replica replayed of the ops counted) */
    scenario_stats st;
    double rss_gib, wall_s;
} scenario_result;

/* In the child: load, generate, replay one step. */
static void run_child(const char *path, bool symmetry, scenario_stats *st)
{
    plan_scenario sc;
    input_scenario_info *info = NULL;
    sim_diag diag = {0};
    double t0 = cli_wall_s();
    int rc = input_scenario_load(path, NULL, 0, &sc, &info, &diag);
    plan *p = NULL;
    if (rc == 0) {
        sc.simulation.steps = 1;
        sc.simulation.timeline = false;
        if (symmetry)
            sc.simulation.symmetry = PLAN_SYMMETRY_DP;
        rc = plan_create(&sc, &(plan_options){.with_trace = true}, &p, &diag);
    }
    if (rc != 0) {
        st->status = 2;
        snprintf(st->error, sizeof st->error, "%.199s", diag.set ? diag.msg : sim_strerror(rc));
        input_scenario_info_destroy(info);
        return;
    }
    st->plan_s = cli_wall_s() - t0;
    st->gpus = p->n_ranks;
    for (int r = 0; r < p->trace->n_ranks; r++) {
        st->ops += p->trace->ranks[r].n_ops;
        st->generated += p->trace->ranks[r].tmpl < 0;
    }
    replay_results *res = replay_results_create();
    replay_options opt = {.no_bubble_rows = true};
    replay_run(p, &opt, res);
    if (res->summary.status == REPLAY_STATUS_ERROR) {
        st->status = 1;
        snprintf(st->error, sizeof st->error, "%.199s", res->summary.error);
    }
    st->events = res->events;
    st->flows = res->flows;
    st->solves = res->flow_solves;
    st->rounds = res->rounds_isolated;
    st->rounds_split = res->rounds_split;
    st->rounds_closed = res->rounds_closed;
    st->rounds_evolved = res->rounds_evolved;
    st->replay_s = res->wall_s;
    st->setup_s = res->setup_s;
    st->simulated_s = res->simulated_s;
    st->step_s = res->summary.step_time_s;
    replay_results_destroy(res);
    plan_destroy(p);
    input_scenario_info_destroy(info);
}

static double physical_gib(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size / (1u << 30) : 16;
}

/* Forks a child for one scenario; its statistics come back through a pipe. */
static scenario_result run_scenario(const bench_opts *o, const struct bench_ref *ref)
{
    scenario_result r = {.name = ref->name, .symmetry = ref->symmetry};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.yaml", o->dir, ref->file);
    int fd[2];
    if (pipe(fd) != 0) {
        r.st.status = 1;
        snprintf(r.st.error, sizeof r.st.error, "pipe: %s", strerror(errno));
        return r;
    }
    fflush(NULL);
    double t0 = cli_wall_s();
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        if (LIMIT_ADDRESS_SPACE) {
            struct rlimit lim;
            lim.rlim_cur = lim.rlim_max = (rlim_t)(o->mem_limit_gib * (double)(1u << 30));
            setrlimit(RLIMIT_AS, &lim);
        }
        scenario_stats st = {0};
        run_child(path, ref->symmetry, &st);
        ssize_t w = write(fd[1], &st, sizeof st);
        _exit(w == (ssize_t)sizeof st ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        r.st.status = 1;
        snprintf(r.st.error, sizeof r.st.error, "fork: %s", strerror(errno));
        return r;
    }
    ssize_t got = 0;
    while (got < (ssize_t)sizeof r.st) {
        ssize_t n = read(fd[0], (char *)&r.st + got, sizeof r.st - (size_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += n;
    }
    close(fd[0]);
    int wstatus = 0;
    struct rusage ru = {0};
    while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR) {
    }
    r.wall_s = cli_wall_s() - t0;
    r.rss_gib = (double)ru.ru_maxrss * 1024.0 / (double)(1u << 30); /* ru_maxrss is KiB */
    if (got != (ssize_t)sizeof r.st) {
        memset(&r.st, 0, sizeof r.st);
        r.st.status = 1;
        if (WIFSIGNALED(wstatus))
            snprintf(r.st.error, sizeof r.st.error,
                     "killed by signal %d (%s) at %.2f GiB RSS; an allocation beyond the "
                     "%.1f GiB limit aborts", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)),
                     r.rss_gib, o->mem_limit_gib);
        else
            snprintf(r.st.error, sizeof r.st.error, "exited with status %d",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    }
    return r;
}

/* ---- output ---------------------------------------------------------------------------- */

/* The event loop's cost per event: replay time after its set-up (choosing every
 * collective's algorithm, routing its transfers, per-rank state). */
static double ns_per_event(const scenario_result *r)
{
    return r->st.events ? 1e9 * (r->st.replay_s - r->st.setup_s) / (double)r->st.events : 0;
}

/* Peak RSS per op of the step: what a row's memory costs per op. Rows of fewer ops than
 * BYTES_PER_OP_MIN_OPS are mostly the process's own pages (6-7 MiB: code, libraries,
 * catalog), so the spread across rows (issue 29: within 2x) is taken over the others, the
 * symmetric row excepted (it replays one data-parallel replica's share of its ops). */
#define BYTES_PER_OP_MIN_OPS 1000000

static double bytes_per_op(const scenario_result *r)
{
    return r->st.ops > 0 ? r->rss_gib * (double)(1u << 30) / (double)r->st.ops : 0;
}

/* The smallest and largest bytes per op over the rows that ran with at least
 * BYTES_PER_OP_MIN_OPS ops; false when fewer than two did. */
static bool bytes_per_op_spread(const scenario_result *s, size_t n_s, double *lo, double *hi)
{
    int n = 0;
    for (size_t i = 0; i < n_s; i++) {
        if (s[i].st.status != 0 || s[i].st.ops < BYTES_PER_OP_MIN_OPS || s[i].symmetry)
            continue;
        double b = bytes_per_op(&s[i]);
        *lo = n ? fmin(*lo, b) : b;
        *hi = n ? fmax(*hi, b) : b;
        n++;
    }
    return n >= 2;
}

static void print_tables(const engine_result *e, size_t n_e, const scenario_result *s,
                         size_t n_s)
{
    printf("engine floor (hold model: pop the earliest event, push it 0-2 us later)\n");
    printf("  %10s %12s %10s %12s %8s\n", "pending", "events", "wall s", "events/s", "ns/ev");
    for (size_t i = 0; i < n_e; i++)
        printf("  %10zu %12" PRIu64 " %10.3f %12.4g %8.1f\n", e[i].pending, e[i].events,
               e[i].wall_s, e[i].events_per_s, 1e9 / e[i].events_per_s);
    if (n_s == 0)
        return;
    double floor_ns = n_e ? 1e9 / e[n_e - 1].events_per_s : 0;
    printf("\nscenarios (one step each; x floor = ns/event over the 10^%d-pending floor)\n",
           n_e && e[n_e - 1].pending >= 100000 ? 5 : 3);
    printf("  %-33s %6s %6s %11s %11s %10s %10s %9s %7s %7s %8s %10s %7s %7s %8s %6s %9s\n",
           "scenario", "GPUs", "gen'd", "ops", "events", "flows", "solves", "1-ev rnds",
           "gen s", "setup s", "replay s", "events/s", "ns/ev", "x floor", "RSS GiB", "B/op",
           "sim/wall");
    for (size_t i = 0; i < n_s; i++) {
        const scenario_result *r = &s[i];
        if (r->st.status != 0) {
            printf("  %-33s failed after %.1f s: %s\n", r->name, r->wall_s, r->st.error);
            continue;
        }
        double ns = ns_per_event(r);
        printf("  %-33s %6d %6d %11" PRIu64 " %11" PRIu64 " %10" PRIu64 " %10" PRIu64
               " %9" PRIu64 " %7.2f %7.2f %8.2f %10.4g %7.1f %7.1f %8.2f %6.1f %9.3g\n",
               r->name, r->st.gpus, r->st.generated, r->st.ops, r->st.events, r->st.flows,
               r->st.solves, r->st.rounds, r->st.plan_s, r->st.setup_s, r->st.replay_s,
               ns > 0 ? 1e9 / ns : 0, ns,
               floor_ns > 0 ? ns / floor_ns : 0, r->rss_gib, bytes_per_op(r),
               r->st.replay_s + r->st.plan_s > 0
                   ? r->st.simulated_s / (r->st.replay_s + r->st.plan_s) : 0);
    }
    double lo, hi;
    if (bytes_per_op_spread(s, n_s, &lo, &hi))
        printf("bytes per op over the rows of %d M ops or more (symmetry aside): %.1f to %.1f "
               "(%.2fx)\n",
               BYTES_PER_OP_MIN_OPS / 1000000, lo, hi, hi / lo);
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void print_json(const engine_result *e, size_t n_e, const scenario_result *s,
                       size_t n_s)
{
    printf("{\"engine\": [");
    for (size_t i = 0; i < n_e; i++)
        printf("%s{\"pending\": %zu, \"events\": %" PRIu64 ", \"wall_s\": %.6g, "
               "\"events_per_s\": %.6g}", i ? ", " : "", e[i].pending, e[i].events,
               e[i].wall_s, e[i].events_per_s);
    printf("], \"scenarios\": [");
    for (size_t i = 0; i < n_s; i++) {
        const scenario_result *r = &s[i];
        printf("%s{\"name\": ", i ? ", " : "");
        print_json_string(r->name);
        printf(", \"status\": \"%s\"", r->st.status ? "failed" : "ok");
        if (r->st.status) {
            printf(", \"error\": ");
            print_json_string(r->st.error);
        }
        printf(", \"gpus\": %d, \"ranks_generated\": %d, \"ops\": %" PRIu64
               ", \"events\": %" PRIu64 ", \"flows\": %" PRIu64 ", \"flow_solves\": %" PRIu64
               ", \"rounds_isolated\": %" PRIu64 ", \"rounds_split\": %" PRIu64
               ", \"rounds_closed\": %" PRIu64 ", \"rounds_evolved\": %" PRIu64
               ", \"generate_s\": %.6g, \"setup_s\": %.6g, \"replay_s\": %.6g"
               ", \"ns_per_event\": %.6g"
               ", \"peak_rss_gib\": %.4g, \"bytes_per_op\": %.4g"
               ", \"simulated_s\": %.9g, \"step_time_s\": %.9g}",
               r->st.gpus, r->st.generated, r->st.ops, r->st.events, r->st.flows, r->st.solves,
               r->st.rounds, r->st.rounds_split, r->st.rounds_closed, r->st.rounds_evolved,
               r->st.plan_s, r->st.setup_s, r->st.replay_s, ns_per_event(r), r->rss_gib,
               bytes_per_op(r), r->st.simulated_s, r->st.step_s);
    }
    printf("]");
    double lo, hi;
    if (bytes_per_op_spread(s, n_s, &lo, &hi))
        printf(", \"bytes_per_op_spread\": {\"min_ops\": %d, \"min\": %.4g, \"max\": %.4g}",
               BYTES_PER_OP_MIN_OPS, lo, hi);
    printf("}\n");
}

/* ---- command --------------------------------------------------------------------------- */

static bool selected(const bench_opts *o, const char *name)
{
    if (!o->only)
        return true;
    size_t n = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

static int bench_body(void *parsed, int argc, char **argv)
{
    bench_opts *o = parsed;
    (void)argc;
    (void)argv;
    if (o->only)
        for (const char *p = o->only; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            bool known = false;
            for (size_t k = 0; k < BENCH_N; k++)
                known |=
                    strlen(bench_set[k].name) == len && strncmp(bench_set[k].name, p, len) == 0;
            if (!known) {
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)SIM_MIN(len, 200), p);
                return cli_invalid("stepsim bench", "no reference scenario", name,
                                   "the set: small-ddp, gpt3-175b-1024xa100, fsdp-70b-256xh100, "
                                   "moe-ep-512xh100, llama3.1-405b-16384xh100, "
                                   "llama3.1-405b-16384xh100-symmetry");
            }
            p += len + (end != NULL);
        }
    if (!o->engine_only) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.yaml", o->dir, bench_set[0].name);
        if (access(path, R_OK) != 0)
            return cli_invalid("stepsim bench", "cannot read the reference scenarios in", o->dir,
                               "run from the repository root, or pass --dir with the "
                               "folder holding them (scenarios/bench)");
    }

    if (!LIMIT_ADDRESS_SPACE && !o->engine_only)
        fprintf(stderr, "stepsim bench: an AddressSanitizer build: the scenarios run without "
                        "the --mem-limit address-space limit (its shadow memory needs more)\n");
    uint64_t n_events = o->quick ? 2000000 : 20000000;
    engine_result e[2] = {engine_hold(1000, n_events), engine_hold(100000, n_events)};
    scenario_result s[BENCH_N];
    size_t n_s = 0;
    for (size_t k = 0; k < BENCH_N && !o->engine_only; k++) {
        if (!selected(o, bench_set[k].name) || (o->quick && !o->only && bench_set[k].gpus >= 1024))
            continue;
        if (!o->json)
            fprintf(stderr, "stepsim bench: %s ...\n", bench_set[k].name);
        s[n_s++] = run_scenario(o, &bench_set[k]);
    }
    if (o->json)
        print_json(e, 2, s, n_s);
    else
        print_tables(e, 2, s, n_s);
    for (size_t i = 0; i < n_s; i++)
        if (s[i].st.status != 0)
            return 1;
    return 0;
}

int cli_bench(const cli_command *cmd, int argc, char **argv)
{
    bench_opts o = {.dir = "scenarios/bench", .mem_limit_gib = 0.9 * physical_gib()};
    return cli_opts_run(cmd, &bench_spec, argc, argv, &o, bench_body);
}
