/* The verdict of run and mem: binding item, bottleneck and checked remedies (see verdict.h,
 * docs/memory.md "Verdict"). */
#include "core/sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/verdict-internal.h"
#include "plan/estimate.h"
#include "replay/replay.h"

/* The work the remedies may take, in ops of their estimates (plan/estimate.h), so that an
 * OOM verdict on a large cluster costs seconds, not a replay per remedy. Planning costs
 * mostly the generated ops (the borrowed ones a twentieth of that): DeepSeek-V3 on 2,048
 * H800s, every rank generated, plans about 4e7 of them in 1.6 s here; all the candidates
 * together may plan 1e8. A remedy of `run` is replayed for its step time only while it has at
 * most 5e7 ops per step x steps (a few seconds of replay) and the replays 2e8 in all. A
 * candidate past the planning budget is not checked, so not named; one past the replay
 * budget is listed by its memory plan with step_time_s null, its `why` saying so. */
#define PLAN_OPS_BUDGET 1e8
#define REPLAY_OPS_ONE 5e7
#define REPLAY_OPS_BUDGET 2e8

static const double GiB = 1024.0 * 1024.0 * 1024.0;

/* snprintf for the `what` and `why` sentences, which are cut at their buffer's size (a
 * long stack of changes names them all in its `changes`; the sentence may end short). */
void verdict__sentence(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

cand *verdict__push(cand_list *l, const char *what)
{
    SIM_ASSERT(l->n < (int)SIM_ARRAY_LEN(l->c), "%d remedy candidates", l->n);
    cand *x = &l->c[l->n];
    memset(x, 0, sizeof *x);
    snprintf(x->what, sizeof x->what, "%s", what);
    x->ladder = l->n++;
    x->depth = 1;
    x->r.step_time_s = NAN;
    return x;
}

/* A remedy under DeepSpeed's BF16_Optimizer (training.grad_accumulation: cast_add), which
 * DeepSpeed runs only for full bf16 training without ZeRO-2/3 or an offloaded optimizer: one
 * that leaves those behind (LoRA adapters, ZeRO-2/3, the optimizer on the CPU, another
 * precision) runs DeepSpeed's other optimizers, whose accumulation stepsim charges as
 * `fused`; one that pipelines a scenario whose pp-1 schedule is not 1F1B runs DeepSpeed's
 * pipeline engine, 1F1B. Adds those changes where `r` makes one. */
void cli_remedy_leave_bf16_optimizer(const plan_scenario *sc, results_remedy *r)
{
    if (sc->training.grad_accumulation != PLAN_GRAD_ACCUM_CAST_ADD)
        return;
    bool leaves = false, pipelines = false, chosen = false;
    for (int k = 0; k < r->n_changes; k++) {
        leaves = leaves ||
                 (!strcmp(r->key[k], "training.finetune.method") && strcmp(r->value[k], "full")) ||
                 (!strcmp(r->key[k], "parallel.offload.optimizer") && strcmp(r->value[k], "none")) ||
                 (!strcmp(r->key[k], "parallel.zero") && atoi(r->value[k]) >= 2) ||
                 !strcmp(r->key[k], "training.precision");
        pipelines = pipelines || (!strcmp(r->key[k], "parallel.pp") && atoi(r->value[k]) > 1);
        chosen = chosen || !strcmp(r->key[k], "parallel.pipeline.schedule");
    }
    if (leaves)
        cli_remedy_set(r, "training.grad_accumulation", "fused");
    else if (pipelines && !chosen && sc->parallel.pipeline.schedule != PLAN_SCHED_1F1B)
        cli_remedy_set(r, "parallel.pipeline.schedule", "1f1b");
}

void cli_remedy_set(results_remedy *r, const char *key, const char *fmt, ...)
{
    SIM_ASSERT(r->n_changes < RESULTS_REMEDY_CHANGES_MAX, "%d changes", r->n_changes);
    int k = r->n_changes++;
    snprintf(r->key[k], sizeof r->key[k], "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->value[k], sizeof r->value[k], fmt, ap);
    va_end(ap);
}

/* Sets the data-parallel degree to `dp`, and the expert-parallel one to as many of the
 * scenario's as divide it (ep must divide dp). */
static void set_dp(results_remedy *r, const plan_parallel *par, int dp)
{
    cli_remedy_set(r, "parallel.dp", "%d", dp);
    int ep = sim_gcd(par->ep, dp);
    if (ep != par->ep)
        cli_remedy_set(r, "parallel.ep", "%d", ep);
}

/* The single changes of the ladder (docs/memory.md) that the scenario has not applied yet,
 * in the ladder's order; the loader and the plan reject those the rest of the scenario does
 * not support. The global batch is kept wherever the change would move it. */
void verdict__generate(const plan_scenario *sc, int64_t global_batch, int topology_gpus,
                     cand_list *l)
{
    const plan_training *t = &sc->training;
    const plan_parallel *par = &sc->parallel;
    long long gb = (long long)global_batch;
    cand *x;
    if (t->finetune.method == PLAN_FT_FULL) {
        x = verdict__push(l, "fine-tune LoRA adapters instead of every weight");
        cli_remedy_set(&x->r, "training.finetune.method", "lora");
        x = verdict__push(l, "fine-tune LoRA adapters on 4-bit weights (QLoRA)");
        cli_remedy_set(&x->r, "training.finetune.method", "qlora");
    } else if (t->finetune.method == PLAN_FT_LORA) {
        x = verdict__push(l, "keep the frozen weights in 4 bits (QLoRA)");
        cli_remedy_set(&x->r, "training.finetune.method", "qlora");
    }
    /* with flash attention the scores are never stored: selective recompute saves next
     * to nothing (docs/models.md) */
    if (t->recompute == MODEL_RECOMPUTE_NONE && !t->flash_attention) {
        x = verdict__push(l, "recompute attention's activations in backward (selective)");
        cli_remedy_set(&x->r, "training.recompute", "selective");
    }
    if (t->recompute != MODEL_RECOMPUTE_FULL || t->recompute_every > 1) {
        x = verdict__push(l, "recompute each layer's activations in backward (full)");
        if (t->recompute != MODEL_RECOMPUTE_FULL)
            cli_remedy_set(&x->r, "training.recompute", "full");
        if (t->recompute_every > 1)
            cli_remedy_set(&x->r, "training.recompute_every", "1");
    }
    /* eager PyTorch keeps what its composite ops' backward reads (docs/models.md, "Activation
     * memory"); torch.compile's fused kernels do not, nor does a fused norm alone */
    if (!t->compile) {
        x = verdict__push(l, "compile the model and its loss (torch.compile's fused norms, "
                             "SwiGLU and cross entropy)");
        cli_remedy_set(&x->r, "training.compile", "true");
        if (t->norm_kernel == PLAN_NORM_COMPOSITE)
            cli_remedy_set(&x->r, "training.norm_kernel", "fused");
        if (t->cross_entropy == PLAN_CE_PYTORCH)
            cli_remedy_set(&x->r, "training.cross_entropy", "compiled");
    }
    if (plan_composite_norm(t) && sc->model.norm == MODEL_NORM_RMSNORM) {
        x = verdict__push(l, "a fused RMSNorm kernel (Liger's, Apex's, torchtitan's "
                             "fused_rmsnorm)");
        cli_remedy_set(&x->r, "training.norm_kernel", "fused");
    }
    if (t->micro_batch > 1) {
        int64_t half = t->micro_batch / 2;
        x = verdict__push(l, "a smaller micro-batch, more accumulation steps, the same global batch");
        cli_remedy_set(&x->r, "training.micro_batch", "%lld", (long long)half);
        cli_remedy_set(&x->r, "training.global_batch", "%lld", gb);
        if (half > 1) {
            x = verdict__push(l, "micro-batch 1, more accumulation steps, the same global batch");
            cli_remedy_set(&x->r, "training.micro_batch", "1");
            cli_remedy_set(&x->r, "training.global_batch", "%lld", gb);
        }
    }
    if (t->optimizer_state == PLAN_STATE_FP32) {
        x = verdict__push(l, "bf16 optimizer states");
        cli_remedy_set(&x->r, "training.optimizer_state", "bf16");
    }
    if (t->optimizer_state != PLAN_STATE_INT8) {
        x = verdict__push(l, "8-bit optimizer states");
        cli_remedy_set(&x->r, "training.optimizer_state", "int8");
    }
    /* ZeRO shards over the data-parallel group: dp x cp ranks, twice that under DualPipe
     * (stages s and pp-1-s share their weights), which does not run ZeRO-3 */
    bool dual = par->pp > 1 && par->pipeline.schedule == PLAN_SCHED_DUALPIPE;
    if (par->dp * par->cp > 1 || dual)
        for (int z = par->zero + 1; z <= (dual ? 2 : 3); z++) {
            static const char *const what[4] = {
                "", "shard the optimizer states over the data-parallel ranks (ZeRO-1)",
                "shard optimizer states and gradients (ZeRO-2)",
                "shard parameters, gradients and optimizer states (ZeRO-3/FSDP)"};
            x = verdict__push(l, what[z]);
            cli_remedy_set(&x->r, "parallel.zero", "%d", z);
        }
    /* DeepSpeed keeps a gathered parameter used again within max_reuse_distance elements:
     * freeing each after its use costs gathers, not a layout */
    if (par->zero == 3 && par->fsdp.implementation == PLAN_DEEPSPEED &&
        par->fsdp.max_reuse_distance > 0) {
        x = verdict__push(l, "free each gathered parameter after its use (DeepSpeed's "
                             "stage3_max_reuse_distance 0)");
        cli_remedy_set(&x->r, "parallel.fsdp.max_reuse_distance", "0");
    }
    if (par->offload.optimizer == PLAN_OFFLOAD_NONE) {
        x = verdict__push(l, "keep the optimizer states on the CPU and update there");
        cli_remedy_set(&x->r, "parallel.offload.optimizer", "cpu");
    }
    if (par->zero == 3 && par->offload.params == PLAN_OFFLOAD_NONE) {
        x = verdict__push(l, "keep the parameter shards on the CPU too, fetched before each "
                             "gather");
        cli_remedy_set(&x->r, "parallel.offload.params", "cpu");
        if (par->offload.optimizer == PLAN_OFFLOAD_NONE)
            cli_remedy_set(&x->r, "parallel.offload.optimizer", "cpu");
    }
    /* tensor parallelism with sequence parallelism inside a node, out of the data-parallel
     * ranks (the GPU count stays) */
    int per_node = sc->topology.n_devices == 0 ? sc->topology.gpus_per_node : 0;
    for (int f = 2; par->tp * f <= per_node && f <= 8; f *= 2)
        if (par->dp % f == 0) {
            x = verdict__push(l, "tensor + sequence parallelism within a node");
            cli_remedy_set(&x->r, "parallel.tp", "%d", par->tp * f);
            cli_remedy_set(&x->r, "parallel.sp", "true");
            set_dp(&x->r, par, par->dp / f);
            cli_remedy_set(&x->r, "training.global_batch", "%lld", gb);
        }
    for (int f = 2; f <= 4 && par->pp * f <= sc->model.layers; f *= 2)
        if (par->dp % f == 0) {
            x = verdict__push(l, "pipeline stages out of the data-parallel ranks");
            cli_remedy_set(&x->r, "parallel.pp", "%d", par->pp * f);
            /* a scenario's own split of the layers fits its own pipeline only */
            if (par->pipeline.n_stage_layers > 0)
                cli_remedy_set(&x->r, "parallel.pipeline.stage_layers", "auto");
            set_dp(&x->r, par, par->dp / f);
            cli_remedy_set(&x->r, "training.global_batch", "%lld", gb);
            /* ZeRO keeps sharding within each stage, but DeepSpeed's pipeline engine and
             * hybrid sharding do not run ZeRO-3 with a pipeline: ZeRO-2 keeps the most */
            if (par->zero == 3 && (par->fsdp.implementation == PLAN_DEEPSPEED ||
                                   par->fsdp.hybrid_shard))
                cli_remedy_set(&x->r, "parallel.zero", "%d", par->dp / f > 1 ? 2 : 0);
        }
    /* the topology's idle GPUs of the same kind: the most data-parallel ranks that divide
     * the global batch */
    int width = par->tp * par->cp * par->pp;
    for (int d = topology_gpus / width; d > par->dp; d--)
        if (gb % (t->micro_batch * d) == 0 && d % par->ep == 0) {
            x = verdict__push(l, "more GPUs of the same kind (the topology's idle ones), as data "
                        "parallelism");
            cli_remedy_set(&x->r, "parallel.dp", "%d", d);
            cli_remedy_set(&x->r, "training.global_batch", "%lld", gb);
            break;
        }
    for (int i = 0; i < l->n; i++)
        cli_remedy_leave_bf16_optimizer(sc, &l->c[i].r);
}

/* The binding item of a plan whose peak is over v->capacity_bytes: on the worst rank of the
 * replay `res` when `replayed` (its rows), else of the plan's walk, with the split at the
 * peak `at_peak` (docs/memory.md, "Binding item"). */
static void bind(const plan *p, const replay_results *res, bool replayed, const plan_mem *at_peak,
                 results_verdict *v)
{
    int w = plan_worst_rank(p, p->peak);
    if (replayed && res->n_ranks == (size_t)p->n_ranks) {
        w = 0;
        for (int r = 1; r < p->n_ranks; r++)
            if (res->ranks[r].peak_mem_bytes - plan_capacity(p, r) >
                res->ranks[w].peak_mem_bytes - plan_capacity(p, w))
                w = r;
    }
    const plan_mem *cross = plan_cross(p, w, at_peak);
    v->has_binding = true;
    v->binding = plan_mem_binding(&p->mem[w], cross, v->capacity_bytes);
    v->binding_bytes = at_peak->bytes[v->binding];
    plan_mem_verdict(at_peak, &p->mem[w], cross, v->capacity_bytes, v->binding_why,
                     sizeof v->binding_why);
}

static void bottleneck(const replay_summary *s, results_verdict *v);

/* The host memory's verdict of plan p into v (binding item `host`, docs/memory.md "Host
 * memory"): false, v untouched, when the offload fits the nodes' memory. */
static bool bind_host(const plan *p, results_verdict *v)
{
    int64_t bytes, cap;
    int node;
    char why[sizeof v->binding_why];
    if (!plan_host_verdict(p, &bytes, &node, &cap, why, sizeof why))
        return false;
    v->has_binding = true;
    v->binding_host = true;
    v->binding_bytes = bytes;
    snprintf(v->binding_why, sizeof v->binding_why, "%s", why);
    return true;
}

/* Loads the scenario as `stepsim run|mem SCENARIO --set ...` would: the command's overrides,
 * then `changes`. */
int verdict__load_with(const cli_verdict_input *in, const results_remedy *changes,
                     plan_scenario *sc, sim_diag *diag)
{
    size_t n = in->n_sets + (size_t)changes->n_changes;
    const char **sets = sim_calloc(n + 1, sizeof *sets);
    char(*own)[104] = sim_calloc((size_t)changes->n_changes + 1, sizeof *own);
    for (size_t i = 0; i < in->n_sets; i++)
        sets[i] = in->sets[i];
    for (int k = 0; k < changes->n_changes; k++) {
        snprintf(own[k], sizeof own[k], "%s=%s", changes->key[k], changes->value[k]);
        sets[in->n_sets + (size_t)k] = own[k];
    }
    int rc = input_scenario_load_opts(in->scenario, sets, n, &in->load, sc, NULL, diag, NULL);
    sim_free(own);
    sim_free(sets);
    return rc;
}

void cli_check(const cli_verdict_input *in, int64_t capacity, const results_remedy *changes,
               cli_check_budget *b, cli_checked *out)
{
    memset(out, 0, sizeof *out);
    out->step_time_s = out->tokens_per_s = NAN;
    out->limit.capacity_bytes = capacity;
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    plan *p = NULL;
    sim_diag diag = {0};
    int rc = verdict__load_with(in, changes, sc, &diag);
    plan_work work = {0};
    if (rc == 0) {
        if (in->steps > 0)
            sc->simulation.steps = in->steps;
        sc->simulation.timeline = false;
        plan_estimate_work(sc, !in->no_op_sharing, &work);
        double cost = work.generated * work.ops_per_rank + work.ops / 20;
        if (b->planned + cost > PLAN_OPS_BUDGET) {
            rc = SIM_EINVAL; /* not checked: past the budget */
            out->over_budget = true;
            b->skipped++;
            snprintf(out->reason, sizeof out->reason,
                     "not checked: planning it (about %.3g ops) is past the work budget left",
                     cost);
        } else {
            b->planned += cost;
        }
    }
    if (!out->over_budget)
        b->checks++;
    if (rc == 0) {
        plan_options po = {.no_op_sharing = in->no_op_sharing};
        rc = plan_create(sc, &po, &p, &diag);
    }
    if (rc == 0) {
        out->valid = true;
        out->gpus = p->n_ranks;
        out->dp = sc->parallel.dp;
        out->tp = sc->parallel.tp;
        out->pp = sc->parallel.pp;
        out->cp = sc->parallel.cp;
        int w = plan_worst_rank(p, p->peak);
        out->walk_peak = p->peak[w].total;
        out->split = p->peak[w];
        out->limit.capacity_bytes = plan_capacity(p, w);
        out->fits = out->walk_peak <= plan_capacity(p, w);
        if (!out->fits)
            bind(p, NULL, false, &out->split, &out->limit);
        else if (bind_host(p, &out->limit))
            out->fits = false;
        plan_destroy(p);
        p = NULL;
    }
    if (rc != 0 && !out->reason[0])
        snprintf(out->reason, sizeof out->reason, "%s",
                 diag.set ? diag.msg : sim_strerror(rc));
    double replay_ops = work.ops * sc->simulation.steps;
    bool replay = rc == 0 && out->fits && in->replayed;
    if (replay && (replay_ops > REPLAY_OPS_ONE || b->replayed + replay_ops > REPLAY_OPS_BUDGET)) {
        replay = false;
        if (sc->parallel.offload.activations != PLAN_OFFLOAD_NONE) {
            /* under activation offload the peak is the replay's (the copies' timing): the
             * memory plan's says nothing of whether it fits (docs/memory.md) */
            out->valid = out->fits = false;
            out->over_budget = true;
            b->checks--; /* not checked after all */
            b->skipped++;
            snprintf(out->reason, sizeof out->reason,
                     "not checked: under activation offload its peak needs a replay, past the "
                     "work budget left (about %.3g ops)", replay_ops);
        } else {
            out->untimed = true; /* listed by its memory plan, untimed */
        }
    }
    if (replay) {
        b->replayed += replay_ops;
        plan_options po = {.with_trace = true, .no_op_sharing = in->no_op_sharing};
        rc = plan_create(sc, &po, &p, &diag);
        out->fits = false;
        if (rc == 0) {
            replay_results *res = replay_results_create();
            replay_options ro = {.no_bubble_rows = true,
                                 .no_isolated_rounds = in->no_isolated_rounds};
            replay_run(p, &ro, res);
            const replay_summary *s = &res->summary;
            if (s->status == REPLAY_STATUS_OK || s->status == REPLAY_STATUS_OOM) {
                out->fits = s->status == REPLAY_STATUS_OK;
                out->limit.capacity_bytes = s->capacity_bytes; /* the replay's tightest GPU */
                out->split.total = s->peak_mem_bytes;
                memcpy(out->split.bytes, s->mem_bytes, sizeof out->split.bytes);
                out->step_time_s = s->step_time_s;
                out->tokens_per_s = s->tokens_per_s;
                if (out->fits)
                    bottleneck(s, &out->limit);
                else if (s->peak_mem_bytes > s->capacity_bytes || !bind_host(p, &out->limit))
                    bind(p, res, true, &out->split, &out->limit);
            }
            replay_results_destroy(res);
            plan_destroy(p);
        }
    }
    sim_free(sc);
}

/* Checks a candidate: cli_check of its changes, against the list's budget. */
void verdict__check(const cli_verdict_input *in, int64_t capacity, cand *x, cli_check_budget *b)
{
    cli_check(in, capacity, &x->r, b, &x->k);
    x->r.step_time_s = x->k.fits ? x->k.step_time_s : NAN;
}

/* Drops the parallel.* changes that set the value the job has already (a stacked change
 * may set dp back to what it was): applying the rest with --set gives the same run. */
static void drop_noops(results_remedy *r, const plan_parallel *par)
{
    static const struct {
        const char *key;
        size_t off;
    } deg[] = {{"parallel.dp", offsetof(plan_parallel, dp)},
               {"parallel.tp", offsetof(plan_parallel, tp)},
               {"parallel.pp", offsetof(plan_parallel, pp)},
               {"parallel.cp", offsetof(plan_parallel, cp)},
               {"parallel.ep", offsetof(plan_parallel, ep)},
               {"parallel.zero", offsetof(plan_parallel, zero)}};
    int n = 0;
    for (int k = 0; k < r->n_changes; k++) {
        char now[48] = "";
        for (size_t d = 0; d < SIM_ARRAY_LEN(deg); d++)
            if (strcmp(r->key[k], deg[d].key) == 0)
                snprintf(now, sizeof now, "%d", *(const int *)((const char *)par + deg[d].off));
        if (strcmp(r->key[k], "parallel.sp") == 0)
            snprintf(now, sizeof now, "%s", par->sp ? "true" : "false");
        if (now[0] && strcmp(now, r->value[k]) == 0)
            continue;
        if (n != k) {
            memcpy(r->key[n], r->key[k], sizeof r->key[n]);
            memcpy(r->value[n], r->value[k], sizeof r->value[n]);
        }
        n++;
    }
    r->n_changes = n;
}

/* Fills a fitting candidate's figures and its `why` against the job's split at the peak. */
static void describe(cand *x, const plan_mem *base, int64_t capacity)
{
    x->r.peak_mem_bytes = x->k.split.total;
    x->r.gpus = x->k.gpus;
    x->r.headroom_bytes = capacity - x->k.split.total;
    int k = 0;
    for (int c = 1; c < PLAN_MEM_COUNT; c++)
        if (base->bytes[c] - x->k.split.bytes[c] > base->bytes[k] - x->k.split.bytes[k])
            k = c;
    verdict__sentence(x->r.why, sizeof x->r.why, "%s: peak %.2f GiB, %s %.2f -> %.2f GiB%s", x->what,
             x->k.split.total / GiB, plan_mem_cat_name((plan_mem_cat)k), base->bytes[k] / GiB,
             x->k.split.bytes[k] / GiB,
             x->k.untimed ? " (by its memory plan; not replayed here, too large to time "
                          "quickly: `stepsim run --set` it)" : "");
}

/* Merges two candidates' changes into `out`; false when they set a key to different
 * values (or need too many changes). */
static bool merge(const cand *a, const cand *b, cand *out)
{
    out->r = a->r;
    for (int k = 0; k < b->r.n_changes; k++) {
        bool same = false;
        for (int i = 0; i < a->r.n_changes; i++)
            if (strcmp(a->r.key[i], b->r.key[k]) == 0) {
                if (strcmp(a->r.value[i], b->r.value[k]) != 0)
                    return false;
                same = true;
            }
        if (same)
            continue;
        if (out->r.n_changes == RESULTS_REMEDY_CHANGES_MAX)
            return false;
        int n = out->r.n_changes++;
        memcpy(out->r.key[n], b->r.key[k], sizeof out->r.key[n]);
        memcpy(out->r.value[n], b->r.value[k], sizeof out->r.value[n]);
    }
    return true;
}

static int by_peak(const void *pa, const void *pb)
{
    const cand *a = *(const cand *const *)pa, *b = *(const cand *const *)pb;
    if (a->k.walk_peak != b->k.walk_peak)
        return a->k.walk_peak < b->k.walk_peak ? -1 : 1;
    return (a->ladder > b->ladder) - (a->ladder < b->ladder);
}

static int by_ladder(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    return (a->ladder > b->ladder) - (a->ladder < b->ladder);
}

/* Fastest first; remedies not timed (NaN) after the timed ones, in the ladder's order. */
static int by_time(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    bool ta = !isnan(a->r.step_time_s), tb = !isnan(b->r.step_time_s);
    if (ta != tb)
        return ta ? -1 : 1;
    if (ta && a->r.step_time_s != b->r.step_time_s)
        return a->r.step_time_s < b->r.step_time_s ? -1 : 1;
    return by_ladder(pa, pb);
}

/* Pairs of the PAIR_FROM valid singles with the lowest peaks, appended to `l`. */
static void pairs(const cli_verdict_input *in, int64_t capacity, cand_list *l)
{
    const cand *best[CANDS_MAX];
    int nb = 0;
    for (int i = 0; i < l->n; i++)
        if (l->c[i].k.valid)
            best[nb++] = &l->c[i];
    qsort(best, (size_t)nb, sizeof *best, by_peak);
    nb = SIM_MIN(nb, PAIR_FROM);
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            const cand *a = best[i]->ladder < best[j]->ladder ? best[i] : best[j];
            const cand *b = a == best[i] ? best[j] : best[i];
            cand m;
            memset(&m, 0, sizeof m);
            if (!merge(a, b, &m))
                continue;
            cand *x = verdict__push(l, "");
            x->r = m.r;
            x->r.step_time_s = NAN;
            x->ladder = 100 * (a->ladder + 1) + b->ladder;
            x->depth = 2;
            verdict__sentence(x->what, sizeof x->what, "%s, and %s", a->what, b->what);
            verdict__check(in, capacity, x, &l->budget);
        }
}

/* `a` then `b` as --set applies them: b's value wins for a key both set. False when the
 * changes would not fit one remedy. */
bool verdict__override(const results_remedy *a, const results_remedy *b, results_remedy *out)
{
    *out = *a;
    for (int k = 0; k < b->n_changes; k++) {
        int i = 0;
        while (i < out->n_changes && strcmp(out->key[i], b->key[k]) != 0)
            i++;
        if (i == out->n_changes) {
            if (out->n_changes == RESULTS_REMEDY_CHANGES_MAX)
                return false;
            out->n_changes++;
            memcpy(out->key[i], b->key[k], sizeof out->key[i]);
        }
        memcpy(out->value[i], b->value[k], sizeof out->value[i]);
    }
    return true;
}

/* When no single change or pair fits: changes stacked greedily on the closest candidate
 * (the valid one with the lowest peak), up to STACK_MAX changes of the ladder: the singles
 * generated on the stacked scenario (generate), each checked on top (override); those that
 * fit are appended to `l` and the stacking stops, else the lowest peak below the current
 * one is stacked on. Returns the most changes stacked in a candidate checked (0: none). */
int verdict__stack(const cli_verdict_input *in, int64_t global_batch, int topology_gpus,
                 int64_t capacity, cand_list *l, cli_check_budget *b)
{
    cand *cur = sim_calloc(1, sizeof *cur), *next = sim_calloc(1, sizeof *next),
         *x = sim_calloc(1, sizeof *x);
    cand_list *g = sim_calloc(1, sizeof *g);
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    int best = -1, reached = 0;
    for (int i = 0; i < l->n; i++)
        if (l->c[i].k.valid && (best < 0 || l->c[i].k.walk_peak < l->c[best].k.walk_peak))
            best = i;
    if (best >= 0)
        *cur = l->c[best];
    for (int d = cur->depth + 1; best >= 0 && d <= STACK_MAX; d++) {
        sim_diag diag = {0};
        memset(sc, 0, sizeof *sc);
        if (verdict__load_with(in, &cur->r, sc, &diag) != 0)
            break;
        g->n = 0;
        verdict__generate(sc, global_batch, topology_gpus, g);
        bool have = false, fits = false;
        for (int i = 0; i < g->n; i++) {
            memset(x, 0, sizeof *x);
            if (!verdict__override(&cur->r, &g->c[i].r, &x->r))
                continue;
            x->r.step_time_s = NAN;
            verdict__check(in, capacity, x, b);
            reached = d;
            verdict__sentence(x->what, sizeof x->what, "%s, and %s", cur->what, g->c[i].what);
            x->ladder = 10000 * d + i;
            x->depth = d;
            if (x->k.fits) {
                cand *y = verdict__push(l, "");
                *y = *x;
                fits = true;
            } else if (x->k.valid && x->k.walk_peak < cur->k.walk_peak &&
                       (!have || x->k.walk_peak < next->k.walk_peak)) {
                *next = *x;
                have = true;
            }
        }
        if (fits || !have)
            break;
        *cur = *next;
    }
    sim_free(sc);
    sim_free(g);
    sim_free(x);
    sim_free(next);
    sim_free(cur);
    return reached;
}

/* What limits the step of a replayed run: the largest of the shares of its window —
 * computing (1 − bubble_fraction), exposed communication (all groups; the group is the one
 * with the most), pipeline bubbles, offload copies, other idle time (host: kernels not yet
 * issued, waits on other compute) — first on ties. */
static void bottleneck(const replay_summary *s, results_verdict *v)
{
    double share[RESULTS_BOTTLENECK_COUNT] = {0};
    share[RESULTS_BOTTLENECK_COMPUTE] = 1 - s->bubble_fraction;
    int group = -1;
    for (int g = 0; g < PLAN_GROUP_COUNT; g++) {
        double b = s->bubble_by_cause[REPLAY_CAUSE_DP + g];
        share[RESULTS_BOTTLENECK_EXPOSED_COMM] += b;
        if (b > 0 && (group < 0 || b > s->bubble_by_cause[REPLAY_CAUSE_DP + group]))
            group = g;
    }
    share[RESULTS_BOTTLENECK_BUBBLES] = s->bubble_by_cause[REPLAY_CAUSE_PIPELINE];
    share[RESULTS_BOTTLENECK_OFFLOAD] = s->bubble_by_cause[REPLAY_CAUSE_OFFLOAD];
    share[RESULTS_BOTTLENECK_HOST] =
        s->bubble_by_cause[REPLAY_CAUSE_HOST] + s->bubble_by_cause[REPLAY_CAUSE_OTHER];
    int k = 0;
    for (int b = 1; b < RESULTS_BOTTLENECK_COUNT; b++)
        if (share[b] > share[k])
            k = b;
    v->has_bottleneck = true;
    v->bottleneck = (results_bottleneck)k;
    v->bottleneck_group = k == RESULTS_BOTTLENECK_EXPOSED_COMM ? group : -1;
    v->bottleneck_share = SIM_MAX(0.0, SIM_MIN(1.0, share[k]));
}

void cli_verdict_build(const cli_verdict_input *in, const plan *p, const replay_results *res,
                       results_verdict *v, char *constraint, size_t size)
{
    const replay_summary *s = &res->summary;
    memset(v, 0, sizeof *v);
    constraint[0] = '\0';
    v->capacity_bytes = s->capacity_bytes;
    v->headroom_bytes = s->capacity_bytes - s->peak_mem_bytes;
    /* out of memory: the GPUs', or the host's that the offload fills (fill_memory) */
    v->oom = s->status == REPLAY_STATUS_OOM || s->peak_mem_bytes > s->capacity_bytes;
    if (in->replayed)
        bottleneck(s, v);
    if (!v->oom)
        return;

    /* the worst rank and its split at the peak: the replay's rows, or the plan's walk */
    plan_mem at_peak = {{0}, s->peak_mem_bytes};
    memcpy(at_peak.bytes, s->mem_bytes, sizeof at_peak.bytes);
    if (s->peak_mem_bytes > s->capacity_bytes || !bind_host(p, v))
        bind(p, res, in->replayed, &at_peak, v);
    if (in->no_remedies)
        return;

    cand_list *l = sim_calloc(1, sizeof *l);
    verdict__generate(p->sc, p->global_batch, p->topology_gpus, l);
    int singles = l->n, fit = 0;
    for (int i = 0; i < singles; i++) {
        verdict__check(in, v->capacity_bytes, &l->c[i], &l->budget);
        fit += l->c[i].k.fits;
    }
    bool paired = fit == 0;
    int stacked = 0;
    if (paired) {
        pairs(in, v->capacity_bytes, l);
        for (int i = singles; i < l->n; i++)
            fit += l->c[i].k.fits;
        if (fit == 0)
            stacked = verdict__stack(in, p->global_batch, p->topology_gpus, v->capacity_bytes, l,
                            &l->budget);
    }
    int n_fit = 0;
    cand *out = sim_calloc((size_t)l->n + 2, sizeof *out);
    for (int i = 0; i < l->n; i++)
        if (l->c[i].k.fits) {
            describe(&l->c[i], &at_peak, v->capacity_bytes);
            out[n_fit++] = l->c[i];
        }
    /* nothing fits on the topology's GPUs: the smallest count of the same kind that does */
    int checks = l->budget.checks; /* on the job's GPUs */
    char note[SIM_DIAG_MSG_MAX], how[WHAT_MAX];
    int64_t gpus = 0;
    note[0] = '\0';
    if (n_fit == 0 && verdict__scale_out(in, p, v->capacity_bytes, &l->budget, &out[0], &gpus, how,
                                sizeof how, note, sizeof note)) {
        verdict__sentence(out[0].what, sizeof out[0].what, "no change checked fits on the job's %d "
                 "GPU(s); the smallest count found to fit is %lld: %s", p->n_ranks,
                 (long long)gpus, how);
        describe(&out[0], &at_peak, v->capacity_bytes);
        n_fit = 1;
    }
    qsort(out, (size_t)n_fit, sizeof *out, in->replayed && !in->ladder_order ? by_time : by_ladder);
    v->n_remedies = (size_t)n_fit;
    v->remedies = sim_calloc((size_t)n_fit + 1, sizeof *v->remedies);
    for (int i = 0; i < n_fit; i++) {
        v->remedies[i] = out[i].r;
        drop_noops(&v->remedies[i], &p->sc->parallel);
    }

    int len = snprintf(constraint, size, "%s; ", v->binding_why);
    if (len < 0 || (size_t)len >= size) {
        /* the sentence alone fills the buffer */
    } else if (n_fit == 0) {
        snprintf(constraint + len, size - (size_t)len,
                 "none of the %d change(s) checked fits%s, nor more GPUs of the same kind (%s; "
                 "docs/memory.md)", checks, stacked > 0 ? ", alone, paired or stacked"
                 : paired && l->n > singles ? ", alone or paired" : "", note);
    } else {
        const results_remedy *b = &v->remedies[0];
        len += snprintf(constraint + len, size - (size_t)len, "checked: ");
        for (int k = 0; k < b->n_changes && len > 0 && (size_t)len < size; k++)
            len += snprintf(constraint + len, size - (size_t)len, "--set %s=%s ", b->key[k],
                            b->value[k]);
        if (len > 0 && (size_t)len < size && gpus > 0)
            snprintf(constraint + len, size - (size_t)len, "fits at %.2f GiB on %lld GPUs, the "
                     "smallest count found (none of the %d change(s) checked fits on the "
                     "job's %d GPUs%s)", b->peak_mem_bytes / GiB, (long long)gpus, checks,
                     p->n_ranks, stacked > 0 ? ", alone, paired or stacked" : ", alone or paired");
        else if (len > 0 && (size_t)len < size)
            snprintf(constraint + len, size - (size_t)len, "fits at %.2f GiB (%d of %d "
                     "change(s) checked fit%s)", b->peak_mem_bytes / GiB, n_fit, checks,
                     stacked > 0 ? "; stacked, as none fits alone or paired" : "");
    }
    sim_free(out);
    sim_free(l);
}

void cli_verdict_free(results_verdict *v)
{
    sim_free(v->remedies);
    v->remedies = NULL;
    v->n_remedies = 0;
}

void cli_verdict_print(FILE *f, const results_verdict *v)
{
    fprintf(f, "  headroom        %.2f GiB%s\n", v->headroom_bytes / GiB,
            !v->oom               ? ""
            : v->binding_host ? " on the GPUs (the host's memory is over)"
                              : " (over the capacity)");
    if (v->has_bottleneck) {
        fprintf(f, "  bottleneck      %s", results_bottleneck_name(v->bottleneck));
        if (v->bottleneck_group >= 0)
            fprintf(f, " (%s)", plan_group_name((plan_group_class)v->bottleneck_group));
        fprintf(f, ", %.1f%% of the step\n", 100 * v->bottleneck_share);
    }
    if (!v->oom)
        return;
    if (v->binding_host)
        fprintf(f, "  binding item    host memory, %.2f GiB offloaded on one node\n",
                v->binding_bytes / GiB);
    else
        fprintf(f, "  binding item    %s, %.2f GiB at the peak\n", plan_mem_cat_name(v->binding),
                v->binding_bytes / GiB);
    if (v->n_remedies == 0)
        fprintf(f, "  remedies        none of the changes checked fits\n");
    for (size_t i = 0; i < v->n_remedies; i++) {
        const results_remedy *m = &v->remedies[i];
        fprintf(f, "  %-16s", i == 0 ? "remedies" : "");
        for (int k = 0; k < m->n_changes; k++)
            fprintf(f, "%s--set %s=%s", k ? " " : "", m->key[k], m->value[k]);
        fprintf(f, "\n                    %d GPUs, peak %.2f GiB, headroom %.2f GiB", m->gpus,
                m->peak_mem_bytes / GiB, m->headroom_bytes / GiB);
        if (!isnan(m->step_time_s))
            fprintf(f, ", step %.6g s", m->step_time_s);
        fprintf(f, "\n                    %s\n", m->why);
    }
}
