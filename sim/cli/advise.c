/* `stepsim advise SCENARIO.yaml [--set KEY=VALUE]... [--json] [--steps N] [--max-memory SIZE]`
 * (docs/cli.md): the ladder of docs/memory.md ("Remedies") made concrete for the scenario's
 * model, GPUs and batch — LoRA and QLoRA (full fine-tuning only), one GPU with bf16, full
 * recompute and accumulation, DDP, ZeRO-1, ZeRO-2, FSDP, TP+SP, PP — each rung a set of
 * --set changes over the scenario's GPU count, checked as a remedy is (cli_check: loaded,
 * planned, replayed when its memory plan fits and within the work budget), with its status,
 * peak, step time and what stops it. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/verdict.h"
#include "input/load.h"
#include "plan/plan.h"
#include "replay/replay.h"
#include "results/json.h"

typedef struct advise_args {
    const char *scenario;
    cli_list sets;
    bool json;
    int steps;          /* 0 = the scenario's */
    int64_t max_memory; /* 0 = the default budget */
} advise_args;

static const cli_opt options[] = {
    {.name = "--set", .kind = CLI_OPT_LIST, .metavar = "KEY=VALUE",
     .offset = offsetof(advise_args, sets)},
    {.name = "--json", .kind = CLI_OPT_FLAG, .offset = offsetof(advise_args, json)},
    {.name = "--steps", .kind = CLI_OPT_INT, .metavar = "N", .min = 1, .max = 1000000,
     .offset = offsetof(advise_args, steps)},
    {.name = "--max-memory", .kind = CLI_OPT_BYTES, .metavar = "SIZE", .unrecorded = true,
     .offset = offsetof(advise_args, max_memory)},
};
static const cli_arg args[] = {{.name = "SCENARIO.yaml", .offset = offsetof(advise_args, scenario)}};
static const cli_spec advise_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                     .args = args, .n_args = SIM_ARRAY_LEN(args)};

#define RUNGS_MAX 9
static const double GiB = 1024.0 * 1024.0 * 1024.0;

typedef struct rung {
    const char *name;
    results_remedy r;     /* the changes */
    char reason[256];     /* set before the check: the rung has no configuration here */
    cli_checked k;
} rung;

/* The layout keys a rung sets: each only where it differs from the scenario's, and the
 * global batch whenever the data-parallel degree or the micro-batch moves (it would move
 * with them otherwise). */
typedef struct layout {
    int dp, tp, pp, cp, zero;
    bool sp;
    int64_t micro_batch;
} layout;

static void set_layout(rung *x, const plan_scenario *sc, int64_t gb, const layout *L)
{
    const plan_parallel *par = &sc->parallel;
    if (L->dp != par->dp)
        cli_remedy_set(&x->r, "parallel.dp", "%d", L->dp);
    /* the experts stay spread over as many data-parallel ranks as the layout has of the
     * scenario's expert-parallel ranks (ep must divide dp) */
    int ep = sim_gcd(par->ep, L->dp);
    if (ep != par->ep)
        cli_remedy_set(&x->r, "parallel.ep", "%d", ep);
    if (L->tp != par->tp)
        cli_remedy_set(&x->r, "parallel.tp", "%d", L->tp);
    if (L->sp != par->sp)
        cli_remedy_set(&x->r, "parallel.sp", "%s", L->sp ? "true" : "false");
    if (L->pp != par->pp)
        cli_remedy_set(&x->r, "parallel.pp", "%d", L->pp);
    /* a scenario's own split of the layers fits its own pipeline only */
    if (L->pp != par->pp && par->pipeline.n_stage_layers > 0)
        cli_remedy_set(&x->r, "parallel.pipeline.stage_layers", "auto");
    if (L->cp != par->cp)
        cli_remedy_set(&x->r, "parallel.cp", "%d", L->cp);
    if (L->zero != par->zero)
        cli_remedy_set(&x->r, "parallel.zero", "%d", L->zero);
    if (L->micro_batch != sc->training.micro_batch)
        cli_remedy_set(&x->r, "training.micro_batch", "%lld", (long long)L->micro_batch);
    if (L->dp != par->dp || L->micro_batch != sc->training.micro_batch)
        cli_remedy_set(&x->r, "training.global_batch", "%lld", (long long)gb);
    /* options that no longer apply: parameter offload off ZeRO-3, stragglers on ranks the
     * layout does not have */
    if (par->offload.params != PLAN_OFFLOAD_NONE && L->zero != 3)
        cli_remedy_set(&x->r, "parallel.offload.params", "none");
    if (par->offload.optimizer == PLAN_OFFLOAD_NVME && L->zero != 3) /* ZeRO-3 only */
        cli_remedy_set(&x->r, "parallel.offload.optimizer", "cpu");
    /* schedules a layout no longer admits fall back to 1F1B (DualPipe: an even pp, and an
     * even count of micro-batches of at least 2 pp) */
    bool split = par->pipeline.schedule == PLAN_SCHED_ZB_H1 ||
                 par->pipeline.schedule == PLAN_SCHED_DUALPIPE ||
                 par->pipeline.schedule == PLAN_SCHED_ZBV;
    long long mbs = gb / ((long long)L->micro_batch * L->dp);
    if (split && L->pp > 1 &&
        (L->cp > 1 || L->zero == 3 ||
         (par->pipeline.schedule == PLAN_SCHED_DUALPIPE &&
          (L->pp % 2 != 0 || mbs % 2 != 0 || mbs < 2LL * L->pp))))
        cli_remedy_set(&x->r, "parallel.pipeline.schedule", "1f1b");
    int ranks = L->dp * L->tp * L->pp * L->cp;
    for (int i = 0; i < sc->simulation.n_stragglers; i++)
        if (sc->simulation.stragglers[i].rank >= ranks) {
            cli_remedy_set(&x->r, "simulation.stragglers", "[]");
            break;
        }
}

/* The ladder for the scenario `sc` (planned as `p`), in its order. */
static int ladder(const plan_scenario *sc, const plan *p, rung *out)
{
    const plan_parallel *par = &sc->parallel;
    int n_gpus = par->tp * par->cp * par->pp * par->dp;
    int64_t gb = p->global_batch, mb = sc->training.micro_batch;
    int n = 0;
    rung *x;
    if (sc->training.finetune.method == PLAN_FT_FULL) {
        /* adapters train in bf16 here: stepsim does not model fp8 LoRA (validate.c) */
        bool fp8 = sc->training.precision == HW_DTYPE_FP8;
        x = &out[n++];
        x->name = "lora";
        cli_remedy_set(&x->r, "training.finetune.method", "lora");
        if (fp8)
            cli_remedy_set(&x->r, "training.precision", "bf16");
        x = &out[n++];
        x->name = "qlora";
        cli_remedy_set(&x->r, "training.finetune.method", "qlora");
        if (fp8)
            cli_remedy_set(&x->r, "training.precision", "bf16");
    }
    /* one GPU: bf16 where the GPU has it, full recompute, micro-batch 1 and the rest of the
     * global batch as accumulation */
    x = &out[n++];
    x->name = "1gpu";
    set_layout(x, sc, gb, &(layout){.dp = 1, .tp = 1, .pp = 1, .cp = 1, .micro_batch = 1});
    if (sc->topology.gpu.peak_flops[HW_DTYPE_BF16] > 0 &&
        sc->training.precision != HW_DTYPE_BF16)
        cli_remedy_set(&x->r, "training.precision", "bf16");
    if (sc->training.recompute != MODEL_RECOMPUTE_FULL)
        cli_remedy_set(&x->r, "training.recompute", "full");
    if (sc->training.recompute_every > 1)
        cli_remedy_set(&x->r, "training.recompute_every", "1");
    /* data parallelism over every GPU, the parameters replicated (DDP) or sharded by stage */
    static const char *const dp_names[4] = {"ddp", "zero1", "zero2", "fsdp"};
    for (int z = 0; z <= 3; z++) {
        x = &out[n++];
        x->name = dp_names[z];
        set_layout(x, sc, gb, &(layout){.dp = n_gpus, .tp = 1, .pp = 1, .cp = 1, .zero = z,
                                        .micro_batch = mb});
    }
    /* tensor + sequence parallelism: the largest power of two up to min(8, GPUs per node)
     * that divides the heads and the GPU count */
    int per_node = sc->topology.n_devices == 0 ? sc->topology.gpus_per_node : 1;
    int tp = 1;
    for (int f = 2; f <= SIM_MIN(8, per_node); f *= 2)
        if (sc->model.heads % f == 0 && n_gpus % f == 0)
            tp = f;
    x = &out[n++];
    x->name = "tp+sp";
    if (tp < 2)
        snprintf(x->reason, sizeof x->reason,
                 "no tensor-parallel degree of 2 to %d divides both the %d heads and the %d "
                 "GPU(s) within a node of %d", SIM_MIN(8, SIM_MAX(per_node, 2)),
                 sc->model.heads, n_gpus, per_node);
    else
        set_layout(x, sc, gb, &(layout){.dp = n_gpus / tp, .tp = tp, .pp = 1, .cp = 1,
                                        .zero = 1, .sp = true, .micro_batch = mb});
    /* pipeline stages: over the nodes when there are several and they divide the layers,
     * else 2; tensor parallelism as TP+SP's inside each stage, halved until the stages
     * divide the GPUs (2 GPUs: pp 2 alone) */
    int nodes = sc->topology.n_devices == 0 ? sc->topology.nodes : 1;
    int pp = nodes > 1 && sc->model.layers % nodes == 0 ? nodes : 2;
    while (tp > 1 && n_gpus % (tp * pp) != 0)
        tp /= 2;
    x = &out[n++];
    x->name = "pp";
    if (n_gpus % (tp * pp) != 0 || pp > sc->model.layers)
        snprintf(x->reason, sizeof x->reason,
                 "%d pipeline stage(s) of tp %d do not divide the %d GPU(s) (or the %d layers)",
                 pp, tp, n_gpus, sc->model.layers);
    else
        set_layout(x, sc, gb, &(layout){.dp = n_gpus / (tp * pp), .tp = tp, .pp = pp, .cp = 1,
                                        .zero = 1, .sp = tp > 1, .micro_batch = mb});
    SIM_ASSERT(n <= RUNGS_MAX, "%d rungs", n);
    for (int i = 0; i < n; i++)
        cli_remedy_leave_bf16_optimizer(sc, &out[i].r);
    return n;
}

static const char *status_of(const rung *x)
{
    return !x->k.valid ? "invalid" : x->k.fits ? "ok" : "oom";
}

/* The peak a rung reports: the replay's when it was replayed, else the memory plan's (what
 * `run` and `mem` with its changes report). */
static int64_t peak_of(const rung *x)
{
    return x->k.valid ? x->k.split.total : 0;
}

/* The capacity of the GPU the rung's peak is on (mixed clusters differ by rank; the run's
 * `capacity` where the check does not say). */
static int64_t cap_of(const rung *x, int64_t capacity)
{
    return x->k.valid && x->k.limit.capacity_bytes > 0 ? x->k.limit.capacity_bytes : capacity;
}

/* What stops the rung, one phrase: the bottleneck of a replayed rung that fits, the binding
 * item of one that does not, the reason of an invalid one. */
static void limit_of(const rung *x, char *buf, size_t size)
{
    const results_verdict *v = &x->k.limit;
    if (!x->k.valid)
        snprintf(buf, size, "%s", x->k.reason);
    else if (!x->k.fits)
        snprintf(buf, size, "%s %.2f GiB at the peak: %s", results_verdict_item(v),
                 v->binding_bytes / GiB, v->binding_why);
    else if (!v->has_bottleneck)
        snprintf(buf, size, "not replayed: too large to time quickly (`stepsim run --set` it)");
    else if (v->bottleneck_group >= 0)
        snprintf(buf, size, "%s (%s), %.1f%% of the step", results_bottleneck_name(v->bottleneck),
                 plan_group_name((plan_group_class)v->bottleneck_group),
                 100 * v->bottleneck_share);
    else
        snprintf(buf, size, "%s, %.1f%% of the step", results_bottleneck_name(v->bottleneck),
                 100 * v->bottleneck_share);
}

static void number_or_null(FILE *f, double v)
{
    if (isnan(v))
        fputs("null", f);
    else
        results_json_number(f, v);
}

static void write_json(FILE *f, const rung *x, int64_t capacity)
{
    const results_verdict *v = &x->k.limit;
    bool timed = x->k.valid && !isnan(x->k.step_time_s);
    char limit[1024];
    limit_of(x, limit, sizeof limit);
    fputs("{\"rung\":", f);
    results_json_string(f, x->name);
    fputs(",\"changes\":{", f);
    for (int k = 0; k < x->r.n_changes; k++) {
        fputs(k ? "," : "", f);
        results_json_string(f, x->r.key[k]);
        fputc(':', f);
        results_json_string(f, x->r.value[k]);
    }
    fprintf(f, "},\"status\":\"%s\",\"peak_mem_bytes\":%lld,\"headroom_bytes\":%lld,", status_of(x),
            (long long)peak_of(x),
            (long long)(x->k.valid ? cap_of(x, capacity) - peak_of(x) : 0));
    fputs("\"step_time_s\":", f);
    number_or_null(f, timed ? x->k.step_time_s : NAN);
    fputs(",\"tokens_per_s\":", f);
    number_or_null(f, timed ? x->k.tokens_per_s : NAN);
    fputs(",\"limit\":", f);
    results_json_string(f, limit);
    fputs(",\"binding\":", f);
    if (x->k.valid && !x->k.fits) {
        fputs("{\"item\":", f);
        results_json_string(f, results_verdict_item(v));
        fprintf(f, ",\"bytes\":%lld,\"why\":", (long long)v->binding_bytes);
        results_json_string(f, v->binding_why);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs(",\"bottleneck\":", f);
    if (x->k.valid && x->k.fits && v->has_bottleneck) {
        fputs("{\"kind\":", f);
        results_json_string(f, results_bottleneck_name(v->bottleneck));
        fputs(",\"group\":", f);
        if (v->bottleneck_group >= 0)
            results_json_string(f, plan_group_name((plan_group_class)v->bottleneck_group));
        else
            fputs("null", f);
        fputs(",\"share\":", f);
        results_json_number(f, v->bottleneck_share);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs("}\n", f);
}

/* Whether the rung changes what is trained (LoRA or QLoRA instead of every weight). */
static bool changes_method(const rung *x)
{
    for (int k = 0; k < x->r.n_changes; k++)
        if (strcmp(x->r.key[k], "training.finetune.method") == 0)
            return true;
    return false;
}

static void write_table(FILE *f, const plan_scenario *sc, int n_gpus, int64_t gb,
                        int64_t capacity, const rung *rungs, int n)
{
    char cluster[512];
    cli_cluster_text(sc, n_gpus, cluster, sizeof cluster);
    if (sc->topology.n_groups > 0) /* each rung's headroom is its tightest GPU's */
        fprintf(f, "%s: the ladder on %s, global batch %lld, headroom on each rung's "
                   "tightest GPU\n", sc->name, cluster, (long long)gb);
    else
        fprintf(f, "%s: the ladder on %s, global batch %lld, %.2f GiB per GPU\n", sc->name,
                cluster, (long long)gb, capacity / GiB);
    fprintf(f, "  %-6s %-7s %10s %10s %12s %14s  %s\n", "rung", "status", "peak GiB",
            "headroom", "step s", "tokens/s", "limit");
    int best = -1, best_adapter = -1;
    for (int i = 0; i < n; i++) {
        const rung *x = &rungs[i];
        bool timed = x->k.valid && !isnan(x->k.step_time_s);
        char limit[1024], peak[32] = "-", head[32] = "-", step[32] = "-", tok[32] = "-";
        limit_of(x, limit, sizeof limit);
        if (x->k.valid) {
            snprintf(peak, sizeof peak, "%.2f", peak_of(x) / GiB);
            snprintf(head, sizeof head, "%.2f", (cap_of(x, capacity) - peak_of(x)) / GiB);
        }
        if (timed) {
            snprintf(step, sizeof step, "%.6g", x->k.step_time_s);
            snprintf(tok, sizeof tok, "%.6g", x->k.tokens_per_s);
        }
        fprintf(f, "  %-6s %-7s %10s %10s %12s %14s  %s\n", x->name, status_of(x), peak, head,
                step, tok, limit);
        fprintf(f, "  %-6s ", "");
        if (x->r.n_changes == 0)
            fprintf(f, "%s", x->reason[0] ? "(no configuration)" : "(the scenario as given)");
        for (int k = 0; k < x->r.n_changes; k++)
            fprintf(f, "%s--set %s=%s", k ? " " : "", x->r.key[k], x->r.value[k]);
        fputc('\n', f);
        /* LoRA and QLoRA change what is trained: the fastest of them is named apart */
        int *which = changes_method(x) ? &best_adapter : &best;
        if (timed && x->k.fits &&
            (*which < 0 || x->k.step_time_s < rungs[*which].k.step_time_s))
            *which = i;
    }
    if (best >= 0)
        fprintf(f, "fastest that fits: %s, %.6g s per step, %.6g tokens/s\n", rungs[best].name,
                rungs[best].k.step_time_s, rungs[best].k.tokens_per_s);
    else
        fprintf(f, "fastest that fits: none of the rungs timed fits\n");
    if (best_adapter >= 0 &&
        (best < 0 || rungs[best_adapter].k.step_time_s < rungs[best].k.step_time_s))
        fprintf(f, "faster still if adapters are enough instead of training every weight: %s, "
                   "%.6g s per step, %.6g tokens/s\n", rungs[best_adapter].name,
                rungs[best_adapter].k.step_time_s, rungs[best_adapter].k.tokens_per_s);
}

static int advise_body(void *parsed, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const advise_args *a = parsed;
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    plan *p = NULL;
    sim_diag diag = {0};
    /* the scenario itself is planned only (as `mem` does): its ladder's rungs are what run */
    input_load_options lo = {.steps = a->steps,
                             .max_memory_bytes = cli_memory_budget(a->max_memory),
                             .plan_only = true};
    int rc = input_scenario_load_opts(a->scenario, a->sets.v, a->sets.n, &lo, sc, NULL, &diag,
                                      NULL);
    if (rc == 0) {
        plan_options po = {0};
        rc = plan_create(sc, &po, &p, &diag);
        if (rc != 0)
            snprintf(diag.file, sizeof diag.file, "%s", a->scenario);
    }
    if (rc != 0) {
        if (!diag.set)
            sim_diag_error(&diag, a->scenario, 0, 0, "%s", sim_strerror(rc));
        sim_diag_print(&diag, stderr);
        plan_destroy(p);
        sim_free(sc);
        return CLI_EXIT_INVALID;
    }
    replay_results *res = replay_results_create();
    replay_memory_only(p, res);
    int64_t capacity = res->summary.capacity_bytes;
    replay_results_destroy(res);

    rung rungs[RUNGS_MAX];
    memset(rungs, 0, sizeof rungs);
    int n = ladder(sc, p, rungs);
    cli_verdict_input in = {
        .scenario = a->scenario,
        .sets = (const char *const *)a->sets.v,
        .n_sets = a->sets.n,
        .load = {.steps = a->steps, .max_memory_bytes = cli_memory_budget(a->max_memory)},
        .steps = a->steps,
        .replayed = true};
    cli_check_budget budget = {0};
    for (int i = 0; i < n; i++) {
        if (rungs[i].reason[0]) {
            memset(&rungs[i].k, 0, sizeof rungs[i].k);
            snprintf(rungs[i].k.reason, sizeof rungs[i].k.reason, "%s", rungs[i].reason);
            continue;
        }
        cli_check(&in, capacity, &rungs[i].r, &budget, &rungs[i].k);
    }
    int n_gpus = sc->parallel.tp * sc->parallel.cp * sc->parallel.pp * sc->parallel.dp;
    if (a->json)
        for (int i = 0; i < n; i++)
            write_json(stdout, &rungs[i], capacity);
    else
        write_table(stdout, sc, n_gpus, p->global_batch, capacity, rungs, n);
    plan_destroy(p);
    sim_free(sc);
    return 0;
}

int cli_advise(const cli_command *cmd, int argc, char **argv)
{
    advise_args a = {0};
    return cli_opts_run(cmd, &advise_spec, argc, argv, &a, advise_body);
}
