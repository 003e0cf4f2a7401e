/* `stepsim plan SCENARIO.yaml [--top K] [-o OUT.h5] [--json] ...` (docs/plan.md):
 * the strategies that could train the scenario's model on its cluster at its batch, each
 * planned, the ones whose memory plan fits replayed, and the best printed.
 *
 * Candidates (all GPUs of the topology, G of them; the global batch of the scenario):
 *   tp   divisors of G up to the GPUs per node that split the heads, the MLP and the KV
 *        heads (or are split by them); sequence parallelism on whenever tp > 1
 *   pp   divisors of G/tp up to min(layers, 32); cp 1, or 2, 4, 8 for sequences of 16K+
 *   dp   the rest; ep: each divisor of dp that divides the experts (MoE models)
 *   zero 0..3 (3: FSDP); only 0 when dp·cp = 1; only 1
 *        and 3 from 16 data-parallel ranks on (DDP and ZeRO-2 never win there)
 *   pipeline schedule 1F1B, and interleaved with 2 virtual stages when it applies
 *   micro-batch 1, 2, 4 (dividing the batch per replica); recompute selective or full
 *   optimizer offload to the CPU with ZeRO-1/2/3 on single-node clusters (ZeRO-Offload is
 *        ZeRO-2 with the optimizer on the CPU)
 * Fine-tuning method, precision, sequence and everything else stay the scenario's. The
 * candidates run like a sweep (serially or under mpirun, crash-safe, --resume), except that
 * one whose memory plan does not fit is recorded as oom without being replayed. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/runs.h"
#include "results/h5read.h"
#include "input/load.h"
#include "input/units.h"
#include "plan/plan.h"

#define AXES 12
static const char *const axis_keys[AXES] = {
    "parallel.tp", "parallel.sp", "parallel.pp", "parallel.cp", "parallel.dp",
    "parallel.ep", "parallel.zero", "parallel.pipeline.schedule",
    "parallel.pipeline.virtual_stages", "training.micro_batch", "training.recompute",
    "parallel.offload.optimizer"};

typedef struct cand {
    int tp, pp, cp, dp, ep, zero, vstages, mb;
    bool sp;
    const char *schedule, *recompute, *offload;
} cand;

typedef struct gen {
    cand *c;
    size_t n, cap;
} gen;

static void add(gen *g, cand c)
{
    SIM_GROW(g->c, g->cap, g->n + 1);
    g->c[g->n++] = c;
}

static bool divides(int64_t a, int64_t b)
{
    return a > 0 && b % a == 0;
}

/* Every candidate for scenario `sc` on `gpus` GPUs of `per_node` per node. */
static void candidates(const plan_scenario *sc, int gpus, int per_node, int64_t batch, gen *g)
{
    const model_spec *m = &sc->model;
    bool moe = m->moe.experts > 0, mla = m->attention.kind == MODEL_ATTN_MLA;
    int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;
    static const char *const rcs[] = {"selective", "full"};
    for (int tp = 1; tp <= SIM_MIN(gpus, per_node); tp++) {
        if (!divides(tp, gpus) || m->heads % tp || m->ffn % tp ||
            (!mla && kv % tp && tp % kv) || (moe && m->moe.expert_ffn % tp))
            continue;
        for (int pp = 1; pp <= SIM_MIN(m->layers, 32); pp++) {
            if (!divides(pp, gpus / tp))
                continue;
            for (int cp = 1; cp <= 8; cp *= 2) {
                if (!divides(cp, gpus / tp / pp) || (cp > 1 && sc->training.seq_len < 16384) ||
                    sc->training.seq_len % (2 * cp) || (cp > 1 && !sc->training.flash_attention))
                    continue;
                int dp = gpus / tp / pp / cp;
                for (int ep = 1; ep <= dp; ep++) {
                    if (!divides(ep, dp) || (ep > 1 && (!moe || m->moe.experts % ep)))
                        continue;
                    for (int zero = 0; zero <= 3; zero++) {
                        if ((dp * cp == 1 && zero) ||
                            (dp * cp >= 16 && (zero == 0 || zero == 2)))
                            continue;
                        /* DeepSpeed's pipeline engine runs ZeRO-1 at most */
                        if (zero == 3 && pp > 1 &&
                            sc->parallel.fsdp.implementation == PLAN_DEEPSPEED)
                            continue;
                        for (int v = 1; v <= (pp > 1 ? 2 : 1); v++)
                            for (int mb = 1; mb <= 4; mb *= 2) {
                                if (!divides((int64_t)mb * dp, batch))
                                    continue;
                                int64_t A = batch / ((int64_t)mb * dp);
                                if (v > 1 && (A % pp || 2 * pp > m->layers))
                                    continue;
                                for (size_t r = 0; r < SIM_ARRAY_LEN(rcs); r++)
                                    for (int off = 0; off <= 1; off++) {
                                        if (off && (gpus > per_node || zero == 0))
                                            continue;
                                        add(g, (cand){.tp = tp, .pp = pp, .cp = cp, .dp = dp,
                                                      .ep = ep, .zero = zero, .vstages = v,
                                                      .mb = mb, .sp = tp > 1,
                                                      .schedule = pp == 1  ? "1f1b"
                                                                  : v == 2 ? "interleaved"
                                                                           : "1f1b",
                                                      .recompute = rcs[r],
                                                      .offload = off ? "cpu" : "none"});
                                    }
                            }
                    }
                }
            }
        }
    }
}

/* The candidates as a run list: one override per axis (strings owned by the list). */
static void plan_runs(sweep_ctx *c, const gen *g, const char *base, const char *name,
                      int64_t batch, bool every_layer, bool offload_params, char *text)
{
    run_list *L = &c->L;
    *L = (run_list){.base = base, .name = name, .source = base, .text = text, .n_runs = g->n,
                    .n_axes = AXES, .prune_oom = true};
    L->axis_names = sim_calloc(AXES + 1, sizeof *L->axis_names);
    for (int k = 0; k < AXES; k++)
        L->axis_names[k] = axis_keys[k];
    L->sets = sim_calloc(g->n + 1, sizeof *L->sets);
    L->n_sets = sim_calloc(g->n + 1, sizeof *L->n_sets);
    L->values = sim_calloc(g->n + 1, sizeof *L->values);
    for (size_t i = 0; i < g->n; i++) {
        const cand *k = &g->c[i];
        char v[AXES][32];
        snprintf(v[0], 32, "%d", k->tp);
        snprintf(v[1], 32, "%s", k->sp ? "true" : "false");
        snprintf(v[2], 32, "%d", k->pp);
        snprintf(v[3], 32, "%d", k->cp);
        snprintf(v[4], 32, "%d", k->dp);
        snprintf(v[5], 32, "%d", k->ep);
        snprintf(v[6], 32, "%d", k->zero);
        snprintf(v[7], 32, "%s", k->schedule);
        snprintf(v[8], 32, "%d", k->vstages);
        snprintf(v[9], 32, "%d", k->mb);
        snprintf(v[10], 32, "%s", k->recompute);
        snprintf(v[11], 32, "%s", k->offload);
        L->sets[i] = sim_calloc(AXES + 3, sizeof *L->sets[i]);
        L->values[i] = sim_calloc(AXES + 1, sizeof *L->values[i]);
        for (int a = 0; a < AXES; a++) {
            size_t len = strlen(axis_keys[a]) + strlen(v[a]) + 2;
            char *set = sim_calloc(len, 1);
            snprintf(set, len, "%s=%s", axis_keys[a], v[a]);
            L->sets[i][a] = set;
            L->values[i][a] = set + strlen(axis_keys[a]) + 1;
        }
        /* the batch stays the scenario's whatever dp is */
        char *gb = sim_calloc(64, 1);
        snprintf(gb, 64, "training.global_batch=%lld", (long long)batch);
        L->sets[i][AXES] = gb;
        L->n_sets[i] = AXES + 1;
        /* the recompute axis applies to every layer, whatever recompute_every the scenario
         * gave */
        if (every_layer)
            L->sets[i][L->n_sets[i]++] = sim_strdup("training.recompute_every=1");
        /* the scenario's parameter offload where it applies (ZeRO-3 over several ranks with
         * the optimizer offloaded), none elsewhere */
        if (offload_params && (k->zero != 3 || strcmp(k->offload, "cpu")))
            L->sets[i][L->n_sets[i]++] = sim_strdup("parallel.offload.params=none");
    }
}

static void free_plan_runs(run_list *L)
{
    for (size_t i = 0; i < L->n_runs; i++) {
        for (size_t k = 0; k < L->n_sets[i]; k++)
            sim_free((char *)L->sets[i][k]);
        sim_free(L->sets[i]);
        sim_free(L->values[i]);
    }
    sim_free(L->sets);
    sim_free(L->n_sets);
    sim_free(L->values);
    sim_free(L->axis_names);
}

/* ---- the ranked table ------------------------------------------------------------------ */

typedef struct row {
    int32_t index;
    char *status, *error;
    double step_time_s, tokens_per_s, mfu;
    int64_t peak;
    char *axis[AXES];
    int64_t capacity;
    char *binding;
    double exposed[PLAN_GROUP_COUNT]; /* exposed_comm_s.*, from the summary */
} row;

static void describe(const row *r, char *buf, size_t n)
{
    /* tp, sp, pp, cp, dp, ep, zero, schedule, vstages, mb, recompute, offload */
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "tp%s%s pp%s", r->axis[0],
                           strcmp(r->axis[1], "true") == 0 ? "+sp" : "", r->axis[2]);
    if (strcmp(r->axis[2], "1") != 0)
        at += (size_t)snprintf(buf + at, n - at, "%s",
                               strcmp(r->axis[7], "interleaved") == 0 ? "(il2)" : "(1f1b)");
    if (strcmp(r->axis[3], "1") != 0)
        at += (size_t)snprintf(buf + at, n - at, " cp%s", r->axis[3]);
    at += (size_t)snprintf(buf + at, n - at, " dp%s", r->axis[4]);
    if (strcmp(r->axis[5], "1") != 0)
        at += (size_t)snprintf(buf + at, n - at, " ep%s", r->axis[5]);
    static const char *const zn[] = {"ddp", "zero1", "zero2", "fsdp"};
    int z = atoi(r->axis[6]);
    at += (size_t)snprintf(buf + at, n - at, " %s mb%s %s%s", zn[z & 3], r->axis[9],
                           strcmp(r->axis[10], "full") == 0 ? "full-rc" : "sel-rc",
                           strcmp(r->axis[11], "cpu") == 0 ? " offload" : "");
}

static int by_tokens(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->tokens_per_s != y->tokens_per_s)
        return x->tokens_per_s > y->tokens_per_s ? -1 : 1;
    return x->index - y->index;
}

static int by_overshoot(const void *a, const void *b)
{
    const row *x = a, *y = b;
    double ox = (double)x->peak / (double)SIM_MAX(x->capacity, 1);
    double oy = (double)y->peak / (double)SIM_MAX(y->capacity, 1);
    if (ox != oy)
        return ox < oy ? -1 : 1;
    return x->index - y->index;
}

/* `bytes` as GiB, or MiB below a GiB (a headroom of a few MB). */
static void fmt_size(char *buf, size_t n, double bytes)
{
    if (fabs(bytes) < 1073741824.0)
        snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
    else
        snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
}

/* How far a ranked strategy is from the next constraint: its memory headroom (bytes and share
 * of the capacity) and the share of its step that is exposed communication, with the group
 * that exposes most. */
static void margins(const row *r, char *mem, size_t nm, char *comm, size_t nc)
{
    char left[32];
    double cap = (double)SIM_MAX(r->capacity, 1), l = cap - (double)r->peak;
    fmt_size(left, sizeof left, l);
    snprintf(mem, nm, "%s %4.1f%%", left, 100 * l / cap);
    double sum = 0;
    int most = 0;
    for (int g = 0; g < PLAN_GROUP_COUNT; g++) {
        sum += r->exposed[g];
        if (r->exposed[g] > r->exposed[most])
            most = g;
    }
    if (sum > 0)
        snprintf(comm, nc, "%4.1f%% %s", 100 * sum / r->step_time_s,
                 plan_group_name((plan_group_class)most));
    else
        snprintf(comm, nc, "0%%");
}

static int plan_finish(sweep_ctx *c)
{
    if (c->a->json) { /* the same objects as a sweep prints */
        cli__runs_print_json(c);
        return 0;
    }
    sim_diag diag = {0};
    results_h5r_file *f = NULL;
    int rc = results_h5r_open(c->a->out, &f, &diag);
    results_h5r_field fields[8 + AXES];
    size_t nf = 0;
    fields[nf++] = (results_h5r_field){"index", RESULTS_H5R_I32, offsetof(row, index)};
    fields[nf++] = (results_h5r_field){"status", RESULTS_H5R_STR, offsetof(row, status)};
    fields[nf++] = (results_h5r_field){"error", RESULTS_H5R_STR, offsetof(row, error)};
    fields[nf++] = (results_h5r_field){"step_time_s", RESULTS_H5R_F64, offsetof(row, step_time_s)};
    fields[nf++] =
        (results_h5r_field){"tokens_per_s", RESULTS_H5R_F64, offsetof(row, tokens_per_s)};
    fields[nf++] = (results_h5r_field){"mfu", RESULTS_H5R_F64, offsetof(row, mfu)};
    fields[nf++] = (results_h5r_field){"peak_mem_bytes", RESULTS_H5R_I64, offsetof(row, peak)};
    for (int a = 0; a < AXES; a++)
        fields[nf++] = (results_h5r_field){axis_keys[a], RESULTS_H5R_STR,
                                      offsetof(row, axis) + (size_t)a * sizeof(char *)};
    results_h5r_table *t = NULL;
    if (!rc)
        rc = results_h5r_table_open(f, "/sweep", fields, nf, sizeof(row), &t);
    size_t n = rc ? 0 : results_h5r_table_rows(t);
    row *rows = sim_calloc(n + 1, sizeof *rows);
    if (!rc)
        rc = results_h5r_table_read(t, 0, n, rows);
    /* each run's capacity, binding constraint and exposed communication, from its summary */
    results_h5r_field sf[2 + PLAN_GROUP_COUNT] = {
        {"capacity_bytes", RESULTS_H5R_I64, offsetof(row, capacity)},
        {"binding_constraint", RESULTS_H5R_STR, offsetof(row, binding)},
    };
    char exposed_cols[PLAN_GROUP_COUNT][40];
    for (int g = 0; g < PLAN_GROUP_COUNT; g++) {
        snprintf(exposed_cols[g], sizeof exposed_cols[g], "exposed_comm_s.%s",
                 plan_group_name((plan_group_class)g));
        sf[2 + g] = (results_h5r_field){exposed_cols[g], RESULTS_H5R_F64,
                                        offsetof(row, exposed) + (size_t)g * sizeof(double)};
    }
    for (size_t i = 0; !rc && i < n; i++) {
        char path[300];
        snprintf(path, sizeof path, "/runs/%s-%d/summary", c->L.name, rows[i].index);
        results_h5r_table *s = NULL;
        row tmp = {0};
        if (results_h5r_table_open(f, path, sf, SIM_ARRAY_LEN(sf), sizeof(row), &s) == 0 &&
            results_h5r_table_read(s, 0, 1, &tmp) == 0) {
            rows[i].capacity = tmp.capacity;
            rows[i].binding = sim_strdup(tmp.binding ? tmp.binding : "");
            memcpy(rows[i].exposed, tmp.exposed, sizeof rows[i].exposed);
            results_h5r_release(s, &tmp, 1);
        }
        results_h5r_table_close(s);
    }
    if (rc) {
        sim_diag_print(&diag, stderr);
    } else {
        /* every candidate in exactly one count: ranked (ok), timed but under the headroom
         * (tight), over the capacity by the memory plan (oom, not replayed) or by the replay
         * (oom, timed), invalid here (skipped), failed (error) */
        size_t n_ok = 0, n_tight = 0, n_oom = 0, n_oom_timed = 0, n_skip = 0, n_err = 0;
        row *ok = sim_calloc(n + 1, sizeof *ok), *oom = sim_calloc(n + 1, sizeof *oom);
        row *tight = sim_calloc(n + 1, sizeof *tight);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].status, "ok") == 0) {
                ok[n_ok++] = rows[i];
            } else if (strcmp(rows[i].status, "tight") == 0) {
                tight[n_tight++] = rows[i];
            } else if (strcmp(rows[i].status, "oom") == 0) {
                n_oom_timed += !isnan(rows[i].step_time_s);
                oom[n_oom++] = rows[i];
            } else if (strcmp(rows[i].status, "skipped") == 0) {
                n_skip++;
            } else {
                n_err++;
            }
        }
        qsort(ok, n_ok, sizeof *ok, by_tokens);
        qsort(tight, n_tight, sizeof *tight, by_tokens);
        qsort(oom, n_oom, sizeof *oom, by_overshoot);
        printf("stepsim plan: %zu candidate strategies: %zu fit and were timed", n, n_ok);
        if (n_tight)
            printf(", %zu fit but leave less than the headroom (timed, not ranked)",
                   n_tight);
        printf(", %zu do not fit (not replayed)", n_oom - n_oom_timed);
        if (n_oom_timed)
            printf(", %zu do not fit by the replay's peak (timed, not ranked)", n_oom_timed);
        printf(", %zu invalid here", n_skip);
        if (n_err)
            printf(", %zu failed", n_err);
        printf("\n\n");
        if (n_ok) {
            printf("%4s  %-52s %9s %12s %6s %13s %15s %11s\n", "rank", "strategy", "step (s)",
                   "tokens/s", "MFU", "memory (GiB)", "headroom", "exp. comm");
            for (size_t i = 0; i < n_ok && i < (size_t)c->a->top; i++) {
                char d[160], mem[48], left[48], comm[48];
                describe(&ok[i], d, sizeof d);
                snprintf(mem, sizeof mem, "%.1f of %.1f", (double)ok[i].peak / 1073741824.0,
                         (double)ok[i].capacity / 1073741824.0);
                margins(&ok[i], left, sizeof left, comm, sizeof comm);
                printf("%4zu  %-52s %9.4g %12.6g %5.1f%% %13s %15s %11s\n", i + 1, d,
                       ok[i].step_time_s, ok[i].tokens_per_s, 100 * ok[i].mfu, mem, left, comm);
            }
            printf("\n(headroom: capacity minus peak memory; exp. comm: the share of the step "
                   "that is communication no computation hides, and the group exposing most)\n");
            printf("(run %s-%d in the results for the winner's tables)\n", c->L.name,
                   ok[0].index);
        }
        if (n_tight) {
            char asked[32], d[160];
            double cap = (double)tight[0].capacity;
            fmt_size(asked, sizeof asked,
                     c->L.headroom_bytes > 0 ? (double)c->L.headroom_bytes
                                             : c->L.headroom_fraction * cap);
            describe(&tight[0], d, sizeof d);
            printf("\n%zu more fit but leave less than the headroom of %s (--headroom), so are "
                   "not ranked; the fastest of them:\n  %s: %.6g tokens/s; %s\n", n_tight, asked,
                   d, tight[0].tokens_per_s, tight[0].binding);
        }
        if (n_oom) {
            printf("\nclosest that do not fit:\n");
            for (size_t i = 0; i < n_oom && i < 3; i++) {
                char d[160];
                describe(&oom[i], d, sizeof d);
                printf("  %s: needs %.1f GiB > %.1f GiB: %s\n", d,
                       (double)oom[i].peak / 1073741824.0,
                       (double)oom[i].capacity / 1073741824.0, oom[i].binding);
            }
        }
        sim_free(ok);
        sim_free(oom);
        sim_free(tight);
    }
    if (t)
        results_h5r_release(t, rows, n);
    for (size_t i = 0; i < n; i++)
        sim_free(rows[i].binding);
    sim_free(rows);
    results_h5r_table_close(t);
    results_h5r_close(f);
    return rc ? 1 : 0;
}

static const cli_opt options[] = {
    CLI_RUNS_OPTS(false),
    {.name = "--top", .kind = CLI_OPT_INT, .metavar = "K", .min = 1, .max = 1000000,
     .offset = offsetof(sweep_args, top)},
    {.name = "--headroom", .kind = CLI_OPT_STRING, .metavar = "SIZE|FRACTION",
     .offset = offsetof(sweep_args, headroom)},
};

/* --headroom: a size with its unit (2GiB), or a plain number from 0 to below 1, a fraction of
 * each candidate's capacity. Absent: DEFAULT_HEADROOM (docs/plan.md says why). */
#define DEFAULT_HEADROOM 0.05
static int parse_headroom(const char *v, run_list *L)
{
    L->headroom_bytes = 0;
    L->headroom_fraction = DEFAULT_HEADROOM;
    if (!v)
        return 0;
    char *end;
    double x = strtod(v, &end);
    if (*v && !*end) {
        L->headroom_fraction = x;
        return x >= 0 && x < 1 ? 0 : -1;
    }
    L->headroom_fraction = 0;
    return input_parse_bytes(v, &L->headroom_bytes) == 0 ? 0 : -1;
}
static const cli_arg args[] = {{.name = "SCENARIO.yaml", .offset = offsetof(sweep_args, file)}};
static const cli_spec plan_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                   .args = args, .n_args = SIM_ARRAY_LEN(args)};

static int plan_body(void *parsed, int argc, char **argv)
{
    sweep_args *a = parsed;
    int rc = 0;
    cli_command_line(&plan_spec, argc, argv, a->command, sizeof a->command);
    a->no_timeline = true; /* a plan compares summaries; -o keeps them */
    sweep_ctx c = {.a = a, .size = 1};
    c.mpi = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    if (c.mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    }
    cli_signals_install(); /* after MPI_Init: ours, whatever it installs */
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    input_scenario_info *info = NULL;
    sim_diag diag = {0};
    run_list headroom = {0};
    if (parse_headroom(a->headroom, &headroom) != 0) {
        if (c.rank == 0)
            fprintf(stderr, "--headroom: error: expects a size such as 2GiB, or a fraction of "
                            "the capacity from 0 to below 1 such as 0.05, got '%s'\n  see "
                            "`stepsim plan --help`\n", a->headroom);
        rc = CLI_EXIT_INVALID;
    }
    if (!rc && input_scenario_load(a->file, NULL, 0, sc, &info, &diag) != 0) {
        if (c.rank == 0)
            sim_diag_print(&diag, stderr);
        rc = CLI_EXIT_INVALID;
    }
    if (!rc && a->out) { /* before the candidates line; cli__runs_execute takes the lock */
        const char **in = sim_calloc(info->n_inputs + 1, sizeof *in);
        in[0] = a->file;
        for (size_t i = 0; i < info->n_inputs; i++)
            in[i + 1] = info->inputs[i].path;
        if (c.rank == 0)
            rc = cli_output_check("--output", a->out, in, info->n_inputs + 1);
        sim_free(in);
        if (c.mpi)
            MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    char tmpdir[] = "/tmp/stepsim-plan-XXXXXX";
    char *tmp_out = NULL;
    if (!rc && !a->out) {
        /* rank 0 makes the directory; all ranks must use the same path */
        int ok = c.rank == 0 ? mkdtemp(tmpdir) != NULL : 1;
        if (c.mpi) {
            MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Bcast(tmpdir, (int)sizeof tmpdir, MPI_CHAR, 0, MPI_COMM_WORLD);
        }
        tmp_out = sim_calloc(strlen(tmpdir) + 16, 1);
        sprintf(tmp_out, "%s/plan.h5", tmpdir);
        a->out = tmp_out;
        c.scratch = true;
        rc = ok ? 0 : 1;
    }
    if (!rc) {
        int gpus = sc->topology.n_devices > 0 ? sc->parallel.tp * sc->parallel.cp *
                                                    sc->parallel.pp * sc->parallel.dp
                                              : sc->topology.nodes * sc->topology.gpus_per_node;
        int per_node = sc->topology.n_devices > 0 ? gpus : sc->topology.gpus_per_node;
        int64_t batch = sc->training.global_batch > 0
                            ? sc->training.global_batch
                            : sc->training.micro_batch * sc->parallel.dp;
        gen g = {0};
        candidates(sc, gpus, per_node, batch, &g);
        /* what the candidates depend on: the resolved scenario, the candidate count and the
         * headroom that makes a run tight */
        size_t tl = strlen(info->resolved_yaml) + 160;
        char *full = sim_calloc(tl, 1);
        snprintf(full, tl, "plan: %d GPUs, batch %lld, %zu candidates, headroom %lld B or %.17g\n%s",
                 gpus, (long long)batch, g.n, (long long)headroom.headroom_bytes,
                 headroom.headroom_fraction, info->resolved_yaml);
        if (c.rank == 0)
            fprintf(stderr, "stepsim plan: %zu candidate strategies for %s on %d GPUs (global "
                            "batch %lld)\n", g.n, sc->model.name, gpus, (long long)batch);
        if (g.n == 0) {
            if (c.rank == 0)
                fprintf(stderr, "%s: error: no parallel layout splits this model on %d GPUs\n",
                        a->file, gpus);
            rc = CLI_EXIT_INVALID;
        } else {
            plan_runs(&c, &g, a->file, sc->name, batch, sc->training.recompute_every > 1,
                      sc->parallel.offload.params != PLAN_OFFLOAD_NONE, full);
            c.L.headroom_bytes = headroom.headroom_bytes;
            c.L.headroom_fraction = headroom.headroom_fraction;
            rc = cli__runs_execute(&c, plan_finish);
            free_plan_runs(&c.L);
        }
        sim_free(g.c);
        sim_free(full);
    }
    if (tmp_out && c.rank == 0) {
        if (c.dir) /* the runs of a stopped plan without -o: nothing could resume them */
            cli__runs_remove_dir(c.dir);
        unlink(tmp_out);
        rmdir(tmpdir);
    }
    sim_free(tmp_out);
    sim_free(c.dir);
    input_scenario_info_destroy(info);
    sim_free(sc);
    if (c.mpi)
        MPI_Finalize();
    return rc;
}

int cli_plan(const cli_command *cmd, int argc, char **argv)
{
    sweep_args a = {.top = 10};
    return cli_opts_run(cmd, &plan_spec, argc, argv, &a, plan_body);
}
