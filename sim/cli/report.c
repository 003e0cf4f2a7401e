/* `stepsim report OUT.h5 [--csv]`: the terminal view of a results file (docs/cli.md).
 *
 * One line per run, the runs that completed (ok, then tight, then oom) sorted by throughput,
 * best first, and after them the OOM runs a plan recorded without timing them (no step time:
 * "not timed"); then where each timed run's idle time and exposed communication went; then the
 * runs that did not complete (skipped, error) with their reasons, and the OOM and tight runs'
 * binding constraints; and,
 * for runs with a token budget (training.tokens), time to train, GPU-hours and cost.
 * --csv prints every run as one comma-separated row (RFC 4180 quoting) instead. Everything
 * comes from each run's summary table. */
#include "core/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/validated.h"
#include "results/h5read.h"

#include "cli/report-internal.h"

static const char *const budget_keys[5] = {"tokens", "steps", "time_to_train_s", "gpu_hours",
                                           "cost"};

/* Reads /runs/NAME/summary into *r; the budget columns are optional (NaN when absent). */
static int read_summary(results_h5r_file *f, const char *name, run_row *r)
{
    char path[512];
    snprintf(path, sizeof path, "/runs/%s/summary", name);
    results_h5r_field fields[8 + N_CAUSES + N_GROUPS + 5 + 4];
    char names[N_CAUSES + N_GROUPS + 5][48];
    size_t n = 0, k = 0;
#define F(col, type, member) fields[n++] = (results_h5r_field){col, type, offsetof(run_row, member)}
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
    bool has_host = true; /* bubble_by_cause.host: absent from files before it was kept */
    for (int c = 0; c < N_CAUSES; c++, k++) {
        snprintf(names[k], sizeof names[k], "bubble_by_cause.%s",
                 replay_cause_name((replay_cause)c));
        if (c == REPLAY_CAUSE_HOST && !(has_host = results_h5r_has_column(f, path, names[k])))
            continue;
        fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                     offsetof(run_row, bubble) + (size_t)c * sizeof(double)};
    }
    for (int g = 0; g < N_GROUPS; g++, k++) {
        snprintf(names[k], sizeof names[k], "exposed_comm_s.%s",
                 plan_group_name((plan_group_class)g));
        fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                     offsetof(run_row, exposed) + (size_t)g * sizeof(double)};
    }
    bool has_budget[5];
    for (int b = 0; b < 5; b++, k++) {
        snprintf(names[k], sizeof names[k], "budget.%s", budget_keys[b]);
        has_budget[b] = results_h5r_has_column(f, path, names[k]);
        if (has_budget[b])
            fields[n++] = (results_h5r_field){names[k], RESULTS_H5R_F64,
                                         offsetof(run_row, budget) + (size_t)b * sizeof(double)};
    }
    results_h5r_table *t = NULL;
    int rc = results_h5r_table_open(f, path, fields, n, sizeof *r, &t);
    if (!rc && results_h5r_table_rows(t) != 1)
        rc = SIM_EINVAL;
    if (!rc) {
        run_row tmp;
        rc = results_h5r_table_read(t, 0, 1, &tmp);
        if (!rc) {
            /* strings are HDF5's: copy them, then give the row back */
            for (int b = 0; b < 5; b++) /* absent from older files */
                if (!has_budget[b])
                    tmp.budget[b] = NAN;
            if (!has_host)
                tmp.bubble[REPLAY_CAUSE_HOST] = 0;
            *r = tmp;
            r->name = sim_strdup(tmp.name ? tmp.name : name);
            r->label = sim_strdup(r->name);
            r->status = sim_strdup(tmp.status ? tmp.status : "");
            r->error = sim_strdup(tmp.error ? tmp.error : "");
            r->binding = sim_strdup(tmp.binding ? tmp.binding : "");
            results_h5r_release(t, &tmp, 1);
        }
    }
    results_h5r_table_close(t);
    return rc;
}

/* ---- run labels -------------------------------------------------------------------------- */

/* One axis value for a label: a mapping's pairs as "k=v k=v", a file as its stem, else
 * "key=value" with the key's last part. */
static void axis_part(const char *axis, const char *v, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    if (v[0] == '{') { /* {dp: 2, zero: 3} */
        for (const char *p = v + 1; *p && *p != '}' && n + 2 < size; p++) {
            if (p[0] == ':' && p[1] == ' ')
                out[n++] = '=', p++;
            else if (p[0] == ',' && p[1] == ' ')
                out[n++] = ' ', p++;
            else
                out[n++] = *p;
        }
        out[n] = '\0';
        return;
    }
    const char *slash = strrchr(v, '/');
    if (strcmp(axis, "topology") == 0 || strcmp(axis, "base") == 0 || strcmp(axis, "model") == 0 ||
        slash) {
        const char *stem = slash ? slash + 1 : v;
        const char *dot = strrchr(stem, '.');
        snprintf(out, size, "%.*s", dot && dot != stem ? (int)(dot - stem) : (int)strlen(stem),
                 stem);
        return;
    }
    const char *last = strrchr(axis, '.');
    snprintf(out, size, "%s=%s", last ? last + 1 : axis, v);
}

typedef struct axis_row {
    char *name;
    char *v[32];
} axis_row;

/* Labels the runs of a sweep or plan by the /sweep axes whose values differ between runs
 * ("tp=2 sp=true / 2x-rtx4090-pcie"); the others keep their names. */
static void label_runs(results_h5r_file *f, run_row *runs, size_t n)
{
    char cols[64][64];
    results_h5r_type types[64];
    size_t nc = results_h5r_columns(f, "/sweep", cols, types, 64);
    size_t first = 0, last = 0; /* the axes: between error and step_time_s */
    for (size_t i = 0; i < nc; i++) {
        if (strcmp(cols[i], "error") == 0)
            first = i + 1;
        if (strcmp(cols[i], "step_time_s") == 0)
            last = i;
    }
    size_t na = last > first ? SIM_MIN(last - first, 32) : 0;
    if (na == 0)
        return;
    results_h5r_field fields[33];
    fields[0] = (results_h5r_field){"name", RESULTS_H5R_STR, offsetof(axis_row, name)};
    for (size_t a = 0; a < na; a++)
        fields[a + 1] = (results_h5r_field){cols[first + a], RESULTS_H5R_STR,
                                            offsetof(axis_row, v) + a * sizeof(char *)};
    results_h5r_table *t = NULL;
    if (results_h5r_table_open(f, "/sweep", fields, na + 1, sizeof(axis_row), &t) != 0)
        return;
    size_t rows = results_h5r_table_rows(t);
    axis_row *r = sim_calloc(rows + 1, sizeof *r);
    if (results_h5r_table_read(t, 0, rows, r) == 0) {
        bool varies[32] = {false};
        for (size_t a = 0; a < na; a++)
            for (size_t i = 1; i < rows; i++)
                varies[a] |= strcmp(r[i].v[a] ? r[i].v[a] : "", r[0].v[a] ? r[0].v[a] : "") != 0;
        for (size_t i = 0; i < rows; i++) {
            /* "k=v" parts of scalar axes joined by spaces, a mapping's or a file's set off
             * by " / " */
            char label[256] = "", part[128];
            size_t len = 0;
            bool prev_scalar = false;
            for (size_t a = 0; a < na; a++) {
                if (!varies[a] || !r[i].v[a])
                    continue;
                axis_part(cols[first + a], r[i].v[a], part, sizeof part);
                bool scalar = r[i].v[a][0] != '{' && strchr(part, '=') != NULL &&
                              !strchr(strchr(part, '=') + 1, '=');
                len += (size_t)snprintf(label + len, sizeof label - SIM_MIN(len, sizeof label),
                                        "%s%s", !len ? "" : scalar && prev_scalar ? " " : " / ",
                                        part);
                prev_scalar = scalar;
            }
            for (size_t k = 0; k < n && label[0] && r[i].name; k++)
                if (strcmp(runs[k].name, r[i].name) == 0) {
                    sim_free(runs[k].label);
                    runs[k].label = sim_strdup(label);
                }
        }
        results_h5r_release(t, r, rows);
    }
    sim_free(r);
    results_h5r_table_close(t);
    /* labels that do not tell runs apart (values cut short, a run repeated) carry the
     * run's name too */
    bool *dup = sim_calloc(n + 1, sizeof *dup);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (runs[i].label && runs[j].label && strcmp(runs[i].label, runs[j].label) == 0)
                dup[i] = dup[j] = true;
    for (size_t i = 0; i < n; i++)
        if (dup[i]) {
            size_t len = strlen(runs[i].label) + strlen(runs[i].name) + 4;
            char *both = sim_calloc(len, 1);
            snprintf(both, len, "%s (%s)", runs[i].label, runs[i].name);
            sim_free(runs[i].label);
            runs[i].label = both;
        }
    sim_free(dup);
}

/* ok, tight (a plan's candidate under its --headroom), oom, then the runs not replayed */
static int rank_of_status(const char *s)
{
    return strcmp(s, "ok") == 0 ? 0 : strcmp(s, "tight") == 0 ? 1 : strcmp(s, "oom") == 0 ? 2 : 3;
}

static int by_throughput(const void *a, const void *b)
{
    const run_row *x = a, *y = b;
    int sx = rank_of_status(x->status), sy = rank_of_status(y->status);
    if (sx != sy)
        return sx - sy;
    /* a NaN from a damaged file sorts last: the order stays total (qsort needs it) */
    double tx = isnan(x->tokens_per_s) ? -INFINITY : x->tokens_per_s,
           ty = isnan(y->tokens_per_s) ? -INFINITY : y->tokens_per_s;
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A run the table lists: one that fits or not, timed or (a plan's OOM candidate) not. */
bool cli__report_listed(const run_row *r)
{
    return rank_of_status(r->status) < 3;
}

/* A run that was replayed: it has a step time (a plan's pruned OOM candidate has NaN). */
bool cli__report_completed(const run_row *r)
{
    return cli__report_listed(r) && !isnan(r->step_time_s);
}

/* A duration in the largest unit that keeps it readable. */
void cli_fmt_duration(char *buf, size_t n, double s)
{
    if (!isfinite(s))
        snprintf(buf, n, "-");
    else if (s >= 2 * 86400)
        snprintf(buf, n, "%.1f days", s / 86400);
    else if (s >= 2 * 3600)
        snprintf(buf, n, "%.1f h", s / 3600);
    else if (s >= 120)
        snprintf(buf, n, "%.1f min", s / 60);
    else
        snprintf(buf, n, "%.3g s", s);
}

/* Prints the runs' tables; returns how many completed. */
static size_t print_table(const run_row *runs, size_t n, const char *path)
{
    size_t done = 0, untimed = 0, rest = 0;
    int w = 36; /* the run column: wide enough for the longest label, within reason */
    for (size_t i = 0; i < n; i++)
        w = SIM_MAX(w, SIM_MIN((int)strlen(runs[i].label), 120));
    for (size_t i = 0; i < n; i++) {
        done += cli__report_completed(&runs[i]);
        untimed += cli__report_listed(&runs[i]) && !cli__report_completed(&runs[i]);
        rest += !cli__report_listed(&runs[i]);
    }
    printf("%s: %zu run(s), %zu completed", path, n, done);
    if (untimed)
        printf(", %zu out of memory and not timed", untimed);
    if (rest)
        printf(", %zu skipped or failed", rest);
    printf("%s\n\n", done > 1 ? "; sorted by throughput" : "");
    if (done + untimed > 0) {
        printf("%-*s %-6s %6s %10s %12s %6s %21s %8s\n", w, "run", "status", "GPUs", "step (s)",
               "tokens/s", "MFU", "peak/capacity (GiB)", "bubbles");
        for (size_t i = 0; i < n; i++) {
            const run_row *r = &runs[i];
            if (!cli__report_listed(r))
                continue;
            char mem[32];
            snprintf(mem, sizeof mem, "%.2f / %.2f", (double)r->peak_mem_bytes / 1073741824.0,
                     (double)r->capacity_bytes / 1073741824.0);
            if (cli__report_completed(r))
                printf("%-*.120s %-6s %6d %10.4g %12.6g %5.1f%% %21s %7.1f%%\n", w, r->label,
                       r->status, (int)r->gpus, r->step_time_s, r->tokens_per_s, 100 * r->mfu,
                       mem, 100 * r->bubble_fraction);
            else /* a plan's candidate pruned by its memory plan: nothing to rank it by */
                printf("%-*.120s %-6s %6d %10s %12s %6s %21s %8s\n", w, r->label, r->status,
                       (int)r->gpus, "not timed", "-", "-", mem, "-");
        }
    }
    if (done > 0) {
        printf("\nwhere the time went (share of the step idle by cause; exposed communication "
               "in seconds):\n");
        printf("%-*s", w, "run");
        for (int c = 0; c < N_CAUSES; c++)
            printf(" %8s", replay_cause_name((replay_cause)c));
        printf(" |");
        for (int g = 0; g < N_GROUPS; g++)
            printf(" %8s", plan_group_name((plan_group_class)g));
        printf("\n");
        for (size_t i = 0; i < n; i++) {
            const run_row *r = &runs[i];
            if (!cli__report_completed(r))
                continue;
            printf("%-*.120s", w, r->label);
            for (int c = 0; c < N_CAUSES; c++)
                printf(" %7.1f%%", 100 * r->bubble[c]);
            printf(" |");
            for (int g = 0; g < N_GROUPS; g++)
                printf(" %8.3g", r->exposed[g]);
            printf("\n");
        }
    }
    bool header = false;
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &runs[i];
        if (strcmp(r->status, "oom") != 0 && strcmp(r->status, "tight") != 0 &&
            cli__report_listed(r))
            continue;
        if (!header)
            printf("\nout of memory, too tight, skipped or failed:\n");
        header = true;
        if (cli__report_listed(r))
            printf("  %s: %s: %s\n", r->label, r->status,
                   r->binding[0] ? r->binding : "(no constraint recorded)");
        else
            printf("  %s: %s: %s\n", r->label, r->status,
                   r->error[0] ? r->error : "(no reason recorded)");
    }
    header = false;
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &runs[i];
        if (!cli__report_completed(r) || !isfinite(r->budget[0]))
            continue;
        if (!header)
            printf("\ntraining budget (training.tokens):\n%-*s %14s %12s %16s %12s %12s\n",
                   w, "run", "tokens", "steps", "time to train", "GPU-hours", "cost");
        header = true;
        char t[32], cost[32];
        cli_fmt_duration(t, sizeof t, r->budget[2]);
        if (isfinite(r->budget[4]))
            snprintf(cost, sizeof cost, "%.4g", r->budget[4]);
        else
            snprintf(cost, sizeof cost, "-");
        printf("%-*.120s %14.4g %12.0f %16s %12.4g %12s\n", w, r->label, r->budget[0],
               r->budget[1], t, r->budget[3], cost);
    }
    return done;
}

/* One validated table's figures, "mean error 3.5% (max 7.2%) on 10 <what>". */
#define TABLE(T) STEPSIM_VALIDATED_##T##_MAPE, STEPSIM_VALIDATED_##T##_MAX, \
                 STEPSIM_VALIDATED_##T##_ROWS
#define FIG "mean error %.1f%% (max %.1f%%) on %d "

/* The longest sequence of a published run in the tables (NeMo's and torchtitan's 8,192),
 * and of the FSDP runs of the MPT cross-check (65,536), which speak for longer FSDP runs. */
#define VALIDATED_SEQ_MAX 8192
#define VALIDATED_FSDP_SEQ_MAX 65536

void cli_cluster_text(const plan_scenario *sc, int gpus, char *buf, size_t size)
{
    if (sc->topology.n_groups == 0) {
        snprintf(buf, size, "%d x %s", gpus, sc->topology.gpu.name);
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int g = 0, k = 0; g < sc->topology.n_groups && k < gpus; g++) {
        const hw_node_group *ng = &sc->topology.groups[g];
        int n = SIM_MIN(gpus - k, ng->nodes * ng->node.gpus_per_node);
        /* this group and the next ones of the same GPU model, as one count */
        while (g + 1 < sc->topology.n_groups && k + n < gpus &&
               !strcmp(sc->topology.groups[g + 1].gpu.name, ng->gpu.name)) {
            const hw_node_group *next = &sc->topology.groups[++g];
            n += SIM_MIN(gpus - k - n, next->nodes * next->node.gpus_per_node);
        }
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%d x %s", k ? " + " : "", n,
                                    ng->gpu.name);
        k += n;
    }
}

void cli_print_accuracy(FILE *f, bool timing, const plan_scenario *sc)
{
    static const char mem[] = "memory formulas exact to 0.5% (docs/validation.md)";
    const char *lead = "  accuracy        ";
    if (!timing) {
        fprintf(f, "%smemory formulas exact to 0.5%% against the published ZeRO and activation "
                   "tables (docs/validation.md)\n", lead);
        /* offloaded activations leave the GPU when their copies end, which only a replay
         * times: `mem` replays such a scenario (main.c, cmd_mem; docs/memory.md) */
        if (sc && sc->parallel.offload.activations != PLAN_OFFLOAD_NONE)
            fprintf(f, "  replayed        activation offload: this peak and the remedies' are "
                       "the replay's, which times each copy to the host, as `stepsim run` "
                       "does\n");
        return;
    }
    if (!sc) {
        fprintf(f, "%sstep time vs published runs: " FIG "Megatron-LM A100 rows of 2021, " FIG
                   "of 2022, " FIG "Megatron-Core H100 rows, " FIG "NeMo H100 rows, " FIG
                   "NeMo fp8 rows, " FIG "torchtitan FSDP2 rows, " FIG "DeepSpeed ZeRO-3 rows "
                   "of 2021 (stepsim too fast); %s\n", lead, TABLE(A100), TABLE(A100_2022),
                TABLE(H100), TABLE(NEMO), TABLE(NEMO_FP8), TABLE(TORCHTITAN), TABLE(ZERO_3), mem);
        return;
    }
    /* the kind of run: which published runs speak for it (docs/validation.md) */
    const char *gpu = sc->topology.gpu.name;
    const plan_parallel *par = &sc->parallel;
    bool a100 = strncmp(gpu, "a100", 4) == 0, h100 = strncmp(gpu, "h100", 4) == 0;
    bool pcie = sc->topology.n_devices == 0 && sc->topology.gpus_per_node > 1 &&
                sc->topology.intra.kind == HW_INTRA_PCIE;
    bool fsdp = par->zero == 3, moe = sc->model.moe.experts > 0;
    bool offload = par->offload.optimizer != PLAN_OFFLOAD_NONE;
    bool lora = sc->training.finetune.method != PLAN_FT_FULL;
    bool fp8 = sc->training.precision == HW_DTYPE_FP8;
    int64_t seq = sc->training.seq_len;
    bool mixed = sc->topology.n_groups > 0;
    /* sharded data parallelism as PyTorch runs it past 8,192 tokens: MosaicML's MPT runs */
    bool torch_fsdp = fsdp && par->fsdp.implementation != PLAN_DEEPSPEED && !fp8;
    bool long_fsdp = torch_fsdp && seq > VALIDATED_SEQ_MAX && seq <= VALIDATED_FSDP_SEQ_MAX;
    const char *outside = !a100 && !h100 ? "on this GPU"
                          : mixed        ? "on mixed clusters"
                          : pcie         ? "on PCIe nodes"
                          : moe          ? "with mixture-of-experts models"
                          : offload      ? "with the optimizer offloaded"
                          : lora         ? "with LoRA/QLoRA"
                          : fp8 && fsdp  ? "in fp8 with sharded data parallelism"
                          : fp8 && !h100 ? "in fp8 on this GPU"
                          : fp8 && sc->training.fp8_recipe == PLAN_FP8_CURRENT
                              ? "in fp8 with current scaling"
                          : seq > VALIDATED_SEQ_MAX && !long_fsdp ? "at this sequence length"
                                                                  : NULL;
    if (outside) {
        /* no published run of this kind: say so, and what the tables that exist show */
        double lo = SIM_MIN(SIM_MIN(STEPSIM_VALIDATED_A100_MAPE, STEPSIM_VALIDATED_H100_MAPE),
                            SIM_MIN(STEPSIM_VALIDATED_A100_2022_MAPE, STEPSIM_VALIDATED_NEMO_MAPE));
        double hi = SIM_MAX(SIM_MAX(STEPSIM_VALIDATED_A100_MAPE, STEPSIM_VALIDATED_H100_MAPE),
                            SIM_MAX(STEPSIM_VALIDATED_A100_2022_MAPE, STEPSIM_VALIDATED_NEMO_MAPE));
        fprintf(f, "%sstep time not validated %s (%s%s%s)%s; on published Megatron/NeMo runs "
                   "of A100 and H100 the mean error is %.1f-%.1f%%, on torchtitan's FSDP2 runs "
                   "%.1f%% (A100) and %.1f%% (H100; stepsim too fast); %s\n", lead, outside,
                !a100 && !h100 ? gpu : "none in docs/validation.md",
                !a100 && !h100 ? ": its GEMM rate is an estimate, docs/calibration.md" : "",
                seq > VALIDATED_SEQ_MAX && (a100 || h100) && !pcie && !moe && !offload && !lora
                    ? (torch_fsdp && seq > VALIDATED_FSDP_SEQ_MAX
                           ? ", whose longest runs are 8,192 tokens, 65,536 in its "
                             "cross-check of FSDP"
                           : ", whose longest runs are 8,192 tokens")
                    : "",
                /* what is checked on PCIe machines: the links, not a step */
                pcie ? "; its PCIe links are checked against measured GPU-to-GPU copy rates "
                       "(docs/calibration.md, \"Interconnects\")"
                     : "",
                lo, hi, STEPSIM_VALIDATED_TORCHTITAN_A100_MAPE,
                STEPSIM_VALIDATED_TORCHTITAN_H100_MAPE, mem);
        return;
    }
    if (fp8) {
        /* Transformer Engine's fp8 recipe: NeMo's fp8 rows speak for it */
        fprintf(f, "%sfp8 step time vs NeMo's fp8 Llama 3.1 runs on H100: " FIG "rows (the fp8 "
                   "GEMM rate is an estimate, docs/calibration.md); fp8 memory (cached fp8 "
                   "weights, fp8 activations) from Transformer Engine's code, not checked "
                   "against a published peak\n", lead, TABLE(NEMO_FP8));
    } else if (fsdp && par->fsdp.implementation == PLAN_DEEPSPEED) {
        /* the one published DeepSpeed ZeRO-3 table is one stepsim does not reproduce */
        fprintf(f, "%sDeepSpeed ZeRO-3 step time vs the Megatron-LM paper's ZeRO-3 runs on A100 "
                   "(2021, run as DeepSpeed's code of then: fsdp.sync_fetch, list_collectives): "
                   FIG "rows, stepsim too fast (those runs lost more host time than modelled: "
                   "docs/validation.md); %s\n", lead,
                TABLE(ZERO_3), mem);
    } else if (long_fsdp) {
        /* past the tables' 8,192 tokens: the MPT cross-check's runs of 16,384-65,536 */
        static const struct {
            double mape, max, signed_mean;
            int rows;
        } mpt[2] = {{STEPSIM_VALIDATED_MPT_H100_LONG_MAPE, STEPSIM_VALIDATED_MPT_H100_LONG_MAX,
                     STEPSIM_VALIDATED_MPT_H100_LONG_SIGNED, STEPSIM_VALIDATED_MPT_H100_LONG_ROWS},
                    {STEPSIM_VALIDATED_MPT_A100_LONG_MAPE, STEPSIM_VALIDATED_MPT_A100_LONG_MAX,
                     STEPSIM_VALIDATED_MPT_A100_LONG_SIGNED, STEPSIM_VALIDATED_MPT_A100_LONG_ROWS}};
        fprintf(f, "%sFSDP step time at long sequences vs MosaicML's MPT FSDP runs of "
                   "16,384-65,536 tokens on %s (a cross-check, docs/validation.md): " FIG
                   "rows, stepsim too %s (signed mean %+.1f%%); %s\n", lead, a100 ? "A100" : "H100",
                mpt[a100].mape, mpt[a100].max, mpt[a100].rows,
                mpt[a100].signed_mean < 0 ? "slow" : "fast", mpt[a100].signed_mean, mem);
    } else if (a100 && sc->training.grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD) {
        /* DeepSpeed's BF16_Optimizer: BigScience's Megatron-DeepSpeed runs speak for it */
        fprintf(f, "%sstep time vs BigScience's Megatron-DeepSpeed runs on A100 (BLOOM-176B "
                   "and its layout benchmarks; a cross-check, docs/validation.md): " FIG
                   "rows, stepsim too %s (signed mean %+.1f%%); %s\n", lead, TABLE(BIGSCIENCE),
                STEPSIM_VALIDATED_BIGSCIENCE_SIGNED < 0 ? "slow" : "fast",
                (double)STEPSIM_VALIDATED_BIGSCIENCE_SIGNED, mem);
    } else if (fsdp && a100) {
        fprintf(f, "%sFSDP step time vs torchtitan's FSDP2 runs on A100: " FIG "rows "
                   "(docs/validation.md); %s\n", lead, TABLE(TORCHTITAN_A100), mem);
    } else if (fsdp) {
        fprintf(f, "%sFSDP step time vs torchtitan's FSDP2 runs on H100: " FIG "rows, stepsim "
                   "too fast on most (async TP and the H100 SXM row the most: "
                   "docs/validation.md); %s\n", lead, TABLE(TORCHTITAN_H100), mem);
    } else if (a100) {
        fprintf(f, "%sstep time vs published A100 runs: " FIG "Megatron-LM rows of 2021, "
                   FIG "of 2022%s; %s\n", lead, TABLE(A100), TABLE(A100_2022),
                par->tp * par->pp * par->cp > 1 ? " (3D: tensor and pipeline parallel)" : "",
                mem);
    } else {
        fprintf(f, "%sstep time vs published H100 runs: " FIG "NeMo Llama 3.1 rows, " FIG
                   "Megatron-Core rows (its GEMM and attention rates are estimates, "
                   "docs/calibration.md); %s\n", lead, TABLE(NEMO), TABLE(H100), mem);
    }
}

#undef FIG
#undef TABLE

static void csv_string(const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void csv_number(double v)
{
    if (isfinite(v))
        printf("%.17g", v);
}

static void print_csv(const run_row *runs, size_t n)
{
    printf("name,status,error,gpus,step_time_s,tokens_per_s,mfu,bubble_fraction,"
           "peak_mem_bytes,capacity_bytes");
    for (int c = 0; c < N_CAUSES; c++)
        printf(",bubble_by_cause.%s", replay_cause_name((replay_cause)c));
    for (int g = 0; g < N_GROUPS; g++)
        printf(",exposed_comm_s.%s", plan_group_name((plan_group_class)g));
    for (int b = 0; b < 5; b++)
        printf(",budget.%s", budget_keys[b]);
    printf(",binding_constraint,label\n");
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &runs[i];
        csv_string(r->name);
        putchar(',');
        csv_string(r->status);
        putchar(',');
        csv_string(r->error);
        printf(",%d,", (int)r->gpus);
        csv_number(r->step_time_s);
        putchar(',');
        csv_number(r->tokens_per_s);
        putchar(',');
        csv_number(r->mfu);
        putchar(',');
        csv_number(r->bubble_fraction);
        printf(",%lld,%lld", (long long)r->peak_mem_bytes, (long long)r->capacity_bytes);
        for (int c = 0; c < N_CAUSES; c++) {
            putchar(',');
            csv_number(r->bubble[c]);
        }
        for (int g = 0; g < N_GROUPS; g++) {
            putchar(',');
            csv_number(r->exposed[g]);
        }
        for (int b = 0; b < 5; b++) {
            putchar(',');
            csv_number(r->budget[b]);
        }
        putchar(',');
        csv_string(r->binding);
        putchar(',');
        csv_string(r->label);
        putchar('\n');
    }
}

typedef struct report_args {
    const char *in, *html;
    bool csv;
} report_args;

static const cli_opt options[] = {
    {.name = "--csv", .kind = CLI_OPT_FLAG, .offset = offsetof(report_args, csv)},
    {.name = "--html", .kind = CLI_OPT_STRING, .metavar = "REPORT.html",
     .offset = offsetof(report_args, html)}};
static const cli_arg args[] = {{.name = "OUT.h5", .offset = offsetof(report_args, in)}};
static const cli_spec spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options), .args = args,
                              .n_args = SIM_ARRAY_LEN(args)};

static int report_body(void *parsed, int argc, char **argv)
{
    report_args *a = parsed;
    (void)argc;
    (void)argv;
    if (a->html && a->csv)
        return cli_invalid("--html", "and --csv are two views: give one", NULL, NULL);
    return cli_report_file_as(a->in, a->csv, a->html);
}

int cli_report(const cli_command *cmd, int argc, char **argv)
{
    report_args a = {0};
    return cli_opts_run(cmd, &spec, argc, argv, &a, report_body);
}

/* A sweep over a list of scenario files (docs/sweeps.md): which file each run started from,
 * since its name (<sweep>-<index>) does not say. Nothing for other files. */
typedef struct base_row {
    char *name, *base;
} base_row;

static int print_base_row(void *ud, void *rows, size_t first, size_t n)
{
    (void)ud;
    const base_row *r = rows;
    if (first == 0)
        printf("\nscenario files (the sweep's base list):\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-34s %s\n", r[i].name ? r[i].name : "", r[i].base ? r[i].base : "");
    return 0;
}

static void print_bases(results_h5r_file *f)
{
    if (!results_h5r_has_column(f, "/sweep", "base"))
        return;
    const results_h5r_field fields[] = {{"name", RESULTS_H5R_STR, offsetof(base_row, name)},
                                   {"base", RESULTS_H5R_STR, offsetof(base_row, base)}};
    results_h5r_for_each(f, "/sweep", fields, 2, sizeof(base_row), 4096, print_base_row, NULL);
}

int cli_report_file(const char *in, bool csv)
{
    return cli_report_file_as(in, csv, NULL);
}

int cli_report_file_as(const char *in, bool csv, const char *html)
{
    sim_diag diag = {0};
    results_h5r_file *f = NULL;
    int rc = cli_results_open(in, &f, &diag);
    if (rc)
        return rc;
    const char *const *names;
    size_t n = results_h5r_runs(f, &names);
    run_row *runs = sim_calloc(n + 1, sizeof *runs);
    size_t got = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = read_summary(f, names[i], &runs[got]);
        got += rc == 0;
    }
    if (rc) {
        if (!diag.set)
            sim_diag_error(&diag, in, 0, 0, "/runs/%s/summary: expected one row", names[got]);
        sim_diag_print(&diag, stderr);
        rc = cli_exit_of(rc);
    } else {
        label_runs(f, runs, got);
        qsort(runs, got, sizeof *runs, by_throughput);
        if (html) {
            rc = cli__report_html(f, in, runs, got, html);
        } else if (csv) {
            print_csv(runs, got);
        } else {
            size_t done = print_table(runs, got, in);
            print_bases(f);
            if (done > 0) {
                printf("\n");
                cli_print_accuracy(stdout, true, NULL); /* the runs may be of several kinds */
            }
        }
    }
    for (size_t i = 0; i < got; i++) {
        sim_free(runs[i].name);
        sim_free(runs[i].status);
        sim_free(runs[i].error);
        sim_free(runs[i].binding);
        sim_free(runs[i].label);
    }
    sim_free(runs);
    results_h5r_close(f);
    return rc;
}
