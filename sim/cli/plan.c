/* `stepsim plan SCENARIO.yaml [--top K] [--replay-top K] [-o OUT.h5] [--json] ...`
 * (docs/plan.md): the strategies that could train the scenario's model on its cluster at its
 * batch (plan_space.c), searched in two tiers. Every candidate is estimated by the screen
 * (plan/screen.c: step time and peak memory in closed form, the ranks of an MPI run each
 * taking a share); the best --replay-top that fit by it, and the three rejects closest to
 * fitting, then run like a sweep (serially or under mpirun, crash-safe, --resume), except
 * that one whose memory plan does not fit is recorded as oom without being replayed. The
 * table ranks the replayed, with the screen's error against them. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/plan-internal.h"
#include "cli/runs.h"
#include "results/h5read.h"
#include "input/load.h"
#include "input/units.h"
#include "plan/plan.h"
#include "plan/screen.h"

/* Rejected strategies listed (and so planned) after the ranking. */
#define PLAN_REJECTS_SHOWN 3

/* The candidates as a run list: one override per axis (strings owned by the list). */
static void plan_runs(sweep_ctx *c, const cand_list *g, const char *base, const char *name,
                      int64_t batch, bool every_layer, bool offload_params, bool symmetric,
                      bool explicit_stages, bool hybrid, char *text)
{
    run_list *L = &c->L;
    *L = (run_list){.base = base, .name = name, .source = base, .text = text, .n_runs = g->n,
                    .n_axes = PLAN_AXES, .prune_oom = true};
    L->axis_names = sim_calloc(PLAN_AXES + 1, sizeof *L->axis_names);
    for (int k = 0; k < PLAN_AXES; k++)
        L->axis_names[k] = cli__plan_axis_keys[k];
    L->sets = sim_calloc(g->n + 1, sizeof *L->sets);
    L->n_sets = sim_calloc(g->n + 1, sizeof *L->n_sets);
    L->values = sim_calloc(g->n + 1, sizeof *L->values);
    for (size_t i = 0; i < g->n; i++) {
        const cand *k = &g->c[i];
        char v[PLAN_AXES][32];
        cli__plan_cand_values(k, v);
        L->sets[i] = sim_calloc(PLAN_AXES + 6, sizeof *L->sets[i]);
        L->values[i] = sim_calloc(PLAN_AXES + 1, sizeof *L->values[i]);
        for (int a = 0; a < PLAN_AXES; a++) {
            size_t len = strlen(cli__plan_axis_keys[a]) + strlen(v[a]) + 2;
            char *set = sim_calloc(len, 1);
            snprintf(set, len, "%s=%s", cli__plan_axis_keys[a], v[a]);
            L->sets[i][a] = set;
            L->values[i][a] = set + strlen(cli__plan_axis_keys[a]) + 1;
        }
        /* the batch stays the scenario's whatever dp is */
        char *gb = sim_calloc(64, 1);
        snprintf(gb, 64, "training.global_batch=%lld", (long long)batch);
        L->sets[i][PLAN_AXES] = gb;
        L->n_sets[i] = PLAN_AXES + 1;
        /* the recompute axis applies to every layer, whatever recompute_every the scenario
         * gave */
        if (every_layer)
            L->sets[i][L->n_sets[i]++] = sim_strdup("training.recompute_every=1");
        /* the scenario's parameter offload where it applies (ZeRO-3 over several ranks with
         * the optimizer offloaded), none elsewhere */
        if (offload_params && (k->zero != 3 || !k->offload))
            L->sets[i][L->n_sets[i]++] = sim_strdup("parallel.offload.params=none");
        /* the candidate's own pipeline split and full sharding: the scenario's explicit
         * stage_layers fit its own pp only, and hybrid sharding takes neither TP nor CP */
        if (explicit_stages)
            L->sets[i][L->n_sets[i]++] = sim_strdup("parallel.pipeline.stage_layers=auto");
        if (hybrid)
            L->sets[i][L->n_sets[i]++] = sim_strdup("parallel.fsdp.hybrid_shard=false");
        /* one data-parallel replica replayed, unless --full-replays (docs/plan.md) */
        if (symmetric && k->dp / k->ep > 1)
            L->sets[i][L->n_sets[i]++] = sim_strdup("simulation.symmetry=dp");
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
    char *axis[PLAN_AXES];
    int64_t capacity;
    char *binding;
    double exposed[PLAN_GROUP_COUNT]; /* exposed_comm_s.*, from the summary */
} row;

static void describe(const row *r, char *buf, size_t n)
{
    /* tp, sp, pp, cp, dp, ep, zero, schedule, vstages, mb, recompute, offload, overlap,
     * order */
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "tp%s%s%s pp%s", r->axis[0],
                           strcmp(r->axis[1], "true") == 0 ? "+sp" : "",
                           strcmp(r->axis[12], "true") == 0 ? "+ovl" : "", r->axis[2]);
    if (strcmp(r->axis[2], "1") != 0) {
        if (strcmp(r->axis[7], "interleaved") == 0)
            at += (size_t)snprintf(buf + at, n - at, "(il%s)", r->axis[8]);
        else
            at += (size_t)snprintf(buf + at, n - at, "(1f1b)");
    }
    if (strcmp(r->axis[3], "1") != 0)
        at += (size_t)snprintf(buf + at, n - at, " cp%s", r->axis[3]);
    at += (size_t)snprintf(buf + at, n - at, " dp%s", r->axis[4]);
    if (strcmp(r->axis[5], "1") != 0)
        at += (size_t)snprintf(buf + at, n - at, " ep%s", r->axis[5]);
    static const char *const zn[] = {"ddp", "zero1", "zero2", "fsdp"};
    int z = atoi(r->axis[6]);
    at += (size_t)snprintf(buf + at, n - at, " %s mb%s %s%s%s", zn[z & 3], r->axis[9],
                           strcmp(r->axis[10], "full") == 0        ? "full-rc"
                           : strcmp(r->axis[10], "selective") == 0 ? "sel-rc"
                                                                    : "no-rc",
                           strcmp(r->axis[11], "cpu") == 0 ? " offload" : "",
                           strcmp(r->axis[13], cli__plan_order_names[1]) == 0 ? " pp-in-dp" : "");
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

/* The screen's side of a plan, for plan_finish: the replayed candidates' screened step
 * times (by run index) and the counts of the final summary. */
static struct screen_state {
    const double *step_s; /* [run]: the screen's step time */
    size_t candidates, screened, pruned;
    double screen_cpu_s, start;
    /* the next rejects by the screen, closest to fitting first, not planned */
    char rej_axes[PLAN_REJECTS_SHOWN][PLAN_AXES][32];
    double rej_peak[PLAN_REJECTS_SHOWN];
    int n_rej;
    bool symmetric; /* the replays of data-parallel candidates ran one replica */
} screen_state;
static int64_t sc_capacity; /* the GPUs' capacity, for the screen's rejects */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const double *rank_x;

static int by_rank_x(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return rank_x[i] < rank_x[j] ? -1 : rank_x[i] > rank_x[j] ? 1 : (i > j) - (i < j);
}

/* Ranks (1-based, ties averaged) of x[0..n). */
static void ranks_of(const double *x, size_t n, double *out)
{
    size_t *idx = sim_calloc(n + 1, sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    rank_x = x;
    qsort(idx, n, sizeof *idx, by_rank_x);
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && x[idx[b]] == x[idx[a]])
            b++;
        for (size_t k = a; k < b; k++) /* positions a+1 .. b share their mean */
            out[idx[k]] = (double)(a + 1 + b) / 2;
        a = b;
    }
    sim_free(idx);
}

/* The screen against the replay over the timed candidates: mean and largest relative error
 * of the step time, and Spearman's rank correlation (NaN when fewer than two, or constant). */
typedef struct screen_check {
    size_t n;
    double mean, max, rho;
} screen_check;

static screen_check screen_vs_replay(const double *screen, const double *replay, size_t n)
{
    screen_check k = {.n = n, .rho = NAN};
    double *rs = sim_calloc(n + 1, sizeof *rs), *rr = sim_calloc(n + 1, sizeof *rr);
    for (size_t i = 0; i < n; i++) {
        double e = fabs(screen[i] - replay[i]) / replay[i];
        k.mean += e / (double)n;
        k.max = fmax(k.max, e);
    }
    if (n >= 2) {
        ranks_of(screen, n, rs);
        ranks_of(replay, n, rr);
        double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
        for (size_t i = 0; i < n; i++) {
            ma += rs[i] / (double)n;
            mb += rr[i] / (double)n;
        }
        for (size_t i = 0; i < n; i++) {
            sab += (rs[i] - ma) * (rr[i] - mb);
            saa += (rs[i] - ma) * (rs[i] - ma);
            sbb += (rr[i] - mb) * (rr[i] - mb);
        }
        if (saa > 0 && sbb > 0)
            k.rho = sab / sqrt(saa * sbb);
    }
    if (n == 0)
        k.mean = k.max = NAN;
    sim_free(rs);
    sim_free(rr);
    return k;
}

static void json_number(const char *key, double v, bool last)
{
    if (isfinite(v))
        printf("\"%s\": %.17g%s", key, v, last ? "" : ", ");
    else
        printf("\"%s\": null%s", key, last ? "" : ", ");
}

static int plan_finish(sweep_ctx *c)
{
    sim_diag diag = {0};
    results_h5r_file *f = NULL;
    int rc = results_h5r_open(c->a->out, &f, &diag);
    results_h5r_field fields[8 + PLAN_AXES];
    size_t nf = 0;
    fields[nf++] = (results_h5r_field){"index", RESULTS_H5R_I32, offsetof(row, index)};
    fields[nf++] = (results_h5r_field){"status", RESULTS_H5R_STR, offsetof(row, status)};
    fields[nf++] = (results_h5r_field){"error", RESULTS_H5R_STR, offsetof(row, error)};
    fields[nf++] = (results_h5r_field){"step_time_s", RESULTS_H5R_F64, offsetof(row, step_time_s)};
    fields[nf++] =
        (results_h5r_field){"tokens_per_s", RESULTS_H5R_F64, offsetof(row, tokens_per_s)};
    fields[nf++] = (results_h5r_field){"mfu", RESULTS_H5R_F64, offsetof(row, mfu)};
    fields[nf++] = (results_h5r_field){"peak_mem_bytes", RESULTS_H5R_I64, offsetof(row, peak)};
    for (int a = 0; a < PLAN_AXES; a++)
        fields[nf++] = (results_h5r_field){cli__plan_axis_keys[a], RESULTS_H5R_STR,
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
    screen_check chk = {.mean = NAN, .max = NAN, .rho = NAN};
    if (!rc) {
        double *sv = sim_calloc(n + 1, sizeof *sv), *rv = sim_calloc(n + 1, sizeof *rv);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(rows[i].step_time_s) && rows[i].index >= 0 &&
                (size_t)rows[i].index < c->L.n_runs) {
                sv[k] = screen_state.step_s[rows[i].index];
                rv[k++] = rows[i].step_time_s;
            }
        chk = screen_vs_replay(sv, rv, k);
        sim_free(sv);
        sim_free(rv);
    }
    if (rc) {
        sim_diag_print(&diag, stderr);
    } else if (c->a->json) { /* the same objects as a sweep prints, then the search's */
        cli__runs_print_json(c);
        printf("{\"candidates\": %zu, \"screened\": %zu, \"pruned_by_memory\": %zu, "
               "\"simulated\": %zu, ", screen_state.candidates, screen_state.screened,
               screen_state.pruned, c->L.n_runs);
        json_number("screen_mean_error", chk.mean, false);
        json_number("screen_max_error", chk.max, false);
        json_number("screen_rank_correlation", chk.rho, false);
        json_number("screen_per_cpu_s",
                    screen_state.screen_cpu_s > 0
                        ? (double)screen_state.screened / screen_state.screen_cpu_s
                        : NAN,
                    false);
        json_number("wall_s", now_s() - screen_state.start, true);
        printf("}\n");
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
        printf("stepsim plan: %zu candidate strategies screened", screen_state.candidates);
        if (screen_state.screen_cpu_s > 0)
            printf(" (%.0f per CPU-second)",
                   (double)screen_state.screened / screen_state.screen_cpu_s);
        printf(", %zu do not fit by the screen's memory estimate; the best %zu by the screen "
               "replayed:\n", screen_state.pruned, n);
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
            printf("%4s  %-60s %9s %9s %12s %6s %13s %15s %11s\n", "rank", "strategy",
                   "step (s)", "screen", "tokens/s", "MFU", "memory (GiB)", "headroom",
                   "exp. comm");
            for (size_t i = 0; i < n_ok && i < (size_t)c->a->top; i++) {
                char d[200], mem[48], left[48], comm[48];
                describe(&ok[i], d, sizeof d);
                snprintf(mem, sizeof mem, "%.1f of %.1f", (double)ok[i].peak / 1073741824.0,
                         (double)ok[i].capacity / 1073741824.0);
                margins(&ok[i], left, sizeof left, comm, sizeof comm);
                printf("%4zu  %-60s %9.4g %9.4g %12.6g %5.1f%% %13s %15s %11s\n", i + 1, d,
                       ok[i].step_time_s, screen_state.step_s[ok[i].index], ok[i].tokens_per_s,
                       100 * ok[i].mfu, mem, left, comm);
            }
            printf("\n(screen: the step time the screen estimated; headroom: capacity minus peak memory; exp. comm: the share of the step "
                   "that is communication no computation hides, and the group exposing most)\n");
            printf("(run %s-%d in the results for the winner's tables)\n", c->L.name,
                   ok[0].index);
            if (screen_state.symmetric)
                printf("(replayed with one data-parallel replica, or expert-parallel block, "
                       "each: confirm the winner with `stepsim run`, or search with "
                       "--full-replays)\n");
        }
        if (chk.n > 0) {
            /* no correlation with fewer than two, or a constant list: said in words, as the
             * JSON's null */
            char rho[64];
            if (isnan(chk.rho))
                snprintf(rho, sizeof rho,
                         "rank correlation undefined (fewer than two, or all equal)");
            else
                snprintf(rho, sizeof rho, "rank correlation %.2f", chk.rho);
            printf("\nscreen against replay on the %zu timed: step time within %.1f%% on "
                   "average (at most %.1f%%), %s\n", chk.n, 100 * chk.mean, 100 * chk.max, rho);
        }
        if (n_tight) {
            char asked[32], d[200];
            double cap = (double)tight[0].capacity;
            fmt_size(asked, sizeof asked,
                     c->L.headroom_bytes > 0 ? (double)c->L.headroom_bytes
                                             : c->L.headroom_fraction * cap);
            describe(&tight[0], d, sizeof d);
            printf("\n%zu more fit but leave less than the headroom of %s (--headroom), so are "
                   "not ranked; the fastest of them:\n  %s: %.6g tokens/s; %s\n", n_tight, asked,
                   d, tight[0].tokens_per_s, tight[0].binding);
        }
        if (n_oom || screen_state.n_rej) {
            printf("\nclosest that do not fit:\n");
            for (size_t i = 0; i < n_oom && i < PLAN_REJECTS_SHOWN; i++) {
                char d[200];
                describe(&oom[i], d, sizeof d);
                printf("  %s: needs %.1f GiB > %.1f GiB: %s\n", d,
                       (double)oom[i].peak / 1073741824.0,
                       (double)oom[i].capacity / 1073741824.0, oom[i].binding);
            }
            /* the memory plans confirmed fewer: the next by the screen's estimate */
            double cap = (double)sc_capacity;
            for (int i = 0; i + n_oom < PLAN_REJECTS_SHOWN && i < screen_state.n_rej; i++) {
                row r = {0};
                char d[200];
                for (int a = 0; a < PLAN_AXES; a++)
                    r.axis[a] = screen_state.rej_axes[i][a];
                describe(&r, d, sizeof d);
                printf("  %s: needs about %.1f GiB > %.1f GiB (the screen's estimate; not "
                       "planned)\n", d, screen_state.rej_peak[i] / 1073741824.0,
                       cap / 1073741824.0);
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
    {.name = "--replay-top", .kind = CLI_OPT_INT, .metavar = "K", .min = 1, .max = 1000000000,
     .offset = offsetof(sweep_args, replay_top)},
    {.name = "--full-replays", .kind = CLI_OPT_FLAG, .offset = offsetof(sweep_args, full_replays)},
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
static const double *sort_est;
static double sort_capacity, sort_headroom;

/* The screen's class of candidate k: 0 leaves the headroom by the screen's peak, 1 fits but
 * closer to the capacity, 2 does not fit. */
static int screen_class(size_t k)
{
    double peak = sort_est[2 * k + 1];
    return peak <= sort_capacity - sort_headroom ? 0 : peak <= sort_capacity ? 1 : 2;
}

/* The screen's ranking: the candidates that leave the headroom, fastest first; then those
 * that fit closer to the capacity, fastest first; then the others, closest to fitting first;
 * ties by candidate index. */
static int by_screen(const void *a, const void *b)
{
    size_t k = *(const size_t *)a, q = *(const size_t *)b;
    int ck = screen_class(k), cq = screen_class(q);
    if (ck != cq)
        return ck < cq ? -1 : 1;
    double xk = ck < 2 ? sort_est[2 * k] : sort_est[2 * k + 1];
    double xq = cq < 2 ? sort_est[2 * q] : sort_est[2 * q + 1];
    if (xk != xq && !(isnan(xk) && isnan(xq)))
        return isnan(xq) || xk < xq ? -1 : 1;
    return k < q ? -1 : k > q;
}

/* Screens every candidate of `all` (under mpirun, each rank a share, then all of them all
 * the estimates) and puts into `best`, in candidate order, the --replay-top best by the
 * screen (by_screen) that fit the capacity by it, and the rejects closest to fitting. *screen
 * gets their screened step times by run index. */
static int screen_all(sweep_ctx *c, plan_screen *S, const plan_scenario *sc, const cand_list *all,
                      int64_t batch, int gpus, const run_list *headroom, cand_list *best,
                      double **screen)
{
    size_t n = all->n;
    double *est = sim_calloc(2 * n + 2, sizeof *est); /* step_s, peak bytes */
    double t0 = now_s(), cpu0 = (double)clock() / CLOCKS_PER_SEC, shown = t0;
    size_t done = 0;
    plan_scenario *x = sim_calloc(1, sizeof *x);
    const volatile sig_atomic_t *sig = cli_signal_flag();
    for (size_t i = (size_t)c->rank; i < n && !*sig; i += (size_t)c->size) {
        plan_screen_est e;
        cli__plan_cand_scenario(sc, &all->c[i], batch, x);
        plan_screen_eval(S, x, false, &e); /* (no time for what does not fit) */
        est[2 * i] = e.step_s;
        est[2 * i + 1] = (double)e.peak_bytes;
        done++;
        if (c->a->progress && c->rank == 0 && (done & 1023) == 0 && now_s() - shown > 1) {
            shown = now_s();
            fprintf(stderr, "\rstepsim plan: screened %zu of %zu (%.0f per second)",
                    done * (size_t)c->size, n, (double)done / (shown - t0));
        }
    }
    double cpu = (double)clock() / CLOCKS_PER_SEC - cpu0;
    int stop = *sig;
    if (c->mpi) {
        MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, est, (int)(2 * n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (stop) { /* nothing written yet: nothing to keep */
        if (c->a->progress && c->rank == 0)
            fprintf(stderr, "\n");
        sim_free(est);
        sim_free(x);
        int code = cli_signal_report(stop, "the plan stopped while screening; nothing was written");
        return c->rank == 0 ? code : 128 + stop;
    }
    double capacity = (double)plan_screen_capacity(S);
    size_t *order = sim_calloc(n + 1, sizeof *order), pruned = 0;
    for (size_t i = 0; i < n; i++) {
        order[i] = i;
        pruned += !(est[2 * i + 1] <= capacity);
    }
    sort_est = est;
    sort_capacity = capacity;
    sort_headroom = headroom->headroom_bytes > 0 ? (double)headroom->headroom_bytes
                                                 : headroom->headroom_fraction * capacity;
    qsort(order, n, sizeof *order, by_screen);
    /* the K best that fit by the screen (order[0..fit)), and the rejects closest to fitting
     * (order[fit..]): three, whose memory plans name what breaks ("closest that do not
     * fit"), or as many as fill the K when fewer fit */
    size_t fit = n - pruned, K = SIM_MIN(fit, (size_t)c->a->replay_top);
    size_t rejects = SIM_MIN(pruned, SIM_MAX((size_t)PLAN_REJECTS_SHOWN,
                                             (size_t)c->a->replay_top - K));
    bool *pick = sim_calloc(n + 1, sizeof *pick);
    for (size_t i = 0; i < K; i++)
        pick[order[i]] = true;
    for (size_t i = fit; i < fit + rejects; i++) {
        /* a reject is replayed if its memory plan fits after all: timed by the screen too */
        plan_screen_est e;
        cli__plan_cand_scenario(sc, &all->c[order[i]], batch, x);
        plan_screen_eval(S, x, true, &e);
        est[2 * order[i]] = e.step_s;
        pick[order[i]] = true;
    }
    K += rejects;
    *screen = sim_calloc(K + 1, sizeof **screen);
    screen_state.n_rej = 0;
    for (size_t i = fit + rejects; i < n && screen_state.n_rej < PLAN_REJECTS_SHOWN; i++)
        if (!(est[2 * order[i] + 1] <= capacity)) {
            int r = screen_state.n_rej++;
            cli__plan_cand_values(&all->c[order[i]], screen_state.rej_axes[r]);
            screen_state.rej_peak[r] = est[2 * order[i] + 1];
        }
    sc_capacity = plan_screen_capacity(S);
    for (size_t i = 0; i < n; i++)
        if (pick[i]) {
            (*screen)[best->n] = est[2 * i];
            cli__plan_cand_add(best, all->c[i]);
        }
    screen_state.step_s = *screen;
    screen_state.screened = n;
    screen_state.pruned = pruned;
    screen_state.screen_cpu_s = cpu;
    if (c->rank == 0) {
        if (c->a->progress)
            fprintf(stderr, "\r");
        fprintf(stderr, "stepsim plan: %zu candidate strategies for %s on %d GPUs (global "
                        "batch %lld) screened in %.1f s (%.0f per CPU-second); %zu do not fit "
                        "by the screen's memory estimate; replaying the best %zu\n",
                n, sc->model.name, gpus, (long long)batch, now_s() - t0,
                cpu > 0 ? (double)n / cpu : 0.0, pruned, K);
    }
    sim_free(x);
    sim_free(order);
    sim_free(pick);
    sim_free(est);
    return 0;
}

static const cli_arg args[] = {{.name = "SCENARIO.yaml", .offset = offsetof(sweep_args, file)}};
static const cli_spec plan_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                   .args = args, .n_args = SIM_ARRAY_LEN(args)};

static int plan_body(void *parsed, int argc, char **argv)
{
    sweep_args *a = parsed;
    int rc = 0;
    double start = now_s();
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
        cand_list all = {0}, g = {0};
        plan_screen *S = NULL;
        if (plan_screen_create(sc, &S, &diag) != 0) {
            if (c.rank == 0) /* the loader built this topology: not expected */
                sim_diag_print(&diag, stderr);
            rc = 1;
        } else {
            cli__plan_candidates(sc, gpus, per_node, batch, plan_screen_host_memory(S), &all);
        }
        screen_state = (struct screen_state){.candidates = all.n, .start = start};
        double *screen = NULL;
        if (!rc && all.n > 0)
            rc = screen_all(&c, S, sc, &all, batch, gpus, &headroom, &g, &screen);
        plan_screen_destroy(S);
        /* what the candidates depend on: the resolved scenario, the candidate count and the
         * headroom that makes a run tight */
        size_t tl = strlen(info->resolved_yaml) + 160;
        char *full = sim_calloc(tl, 1);
        snprintf(full, tl, "plan: %d GPUs, batch %lld, %zu candidates, %zu replayed%s, headroom "
                           "%lld B or %.17g\n%s",
                 gpus, (long long)batch, all.n, g.n, a->full_replays ? " in full" : "",
                 (long long)headroom.headroom_bytes, headroom.headroom_fraction,
                 info->resolved_yaml);
        if (rc) {
            /* stopped by a signal, or the screen's topology could not be built (on stderr) */
        } else if (all.n == 0) {
            if (c.rank == 0)
                fprintf(stderr, "%s: error: no parallel layout splits this model on %d GPUs\n",
                        a->file, gpus);
            rc = CLI_EXIT_INVALID;
        } else {
            /* replays of one data-parallel replica (expert-parallel block) where symmetry
             * applies: no symmetry asked already, no jitter, stragglers or node groups
             * (scenario-format.md) */
            bool symmetric = !a->full_replays && sc->topology.n_groups == 0 &&
                             sc->simulation.symmetry == PLAN_SYMMETRY_NONE &&
                             sc->simulation.jitter == 0 && sc->simulation.n_stragglers == 0;
            screen_state.symmetric = symmetric;
            plan_runs(&c, &g, a->file, sc->name, batch, sc->training.recompute_every > 1,
                      sc->parallel.offload.params != PLAN_OFFLOAD_NONE, symmetric,
                      sc->parallel.pipeline.n_stage_layers > 0, sc->parallel.fsdp.hybrid_shard,
                      full);
            c.L.headroom_bytes = headroom.headroom_bytes;
            c.L.headroom_fraction = headroom.headroom_fraction;
            rc = cli__runs_execute(&c, plan_finish);
            free_plan_runs(&c.L);
        }
        sim_free(screen);
        sim_free(all.c);
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
    sweep_args a = {.top = 10, .replay_top = 32};
    return cli_opts_run(cmd, &plan_spec, argc, argv, &a, plan_body);
}
