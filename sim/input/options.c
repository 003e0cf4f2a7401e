/* Checks across the options of one strategy (called by input__scenario_finish): each
 * parallel.fsdp option belongs to an implementation, stragglers name existing ranks and need
 * every replica simulated, parameter offload needs ZeRO-3 with the optimizer offloaded. */
#include "core/sim.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "input/keys.h"

/* simulation.stragglers: [{ranks: [3, 7], slowdown: 1.25}, ...]: each rank at most once,
 * slowdown a number in (0, 100]; whether the ranks exist is checked with the layout. */
/* An error of simulation.stragglers with the form it takes as the hint. */
static int straggler_error(input_schema_ctx *ctx, const input_ynode *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int straggler_error(input_schema_ctx *ctx, const input_ynode *at, const char *fmt, ...)
{
    char msg[SIM_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    input_schema_error(ctx, SIM_EINVAL, at, "%s", msg);
    sim_diag_hint(ctx->diag, "simulation.stragglers lists each slowed rank once: [{ranks: [3, 7], "
                             "slowdown: 1.25}, {ranks: [12], slowdown: 2}]");
    return SIM_EINVAL;
}

int input__stragglers_fn(const input_key *key, const input_ynode *v, void *base,
                         input_schema_ctx *ctx)
{
    (void)key;
    plan_simulation *s = base;
    static const char example[] = "[{ranks: [3], slowdown: 1.25}]";
    int rc;
    if (!input__expect_list(ctx, v, example, &rc))
        return rc;
    s->n_stragglers = 0;
    for (size_t i = 0; i < v->n; i++) {
        const input_ynode *item = v->items[i];
        char what[INPUT_SCHEMA_PATH_MAX + 48];
        snprintf(what, sizeof what, "%s[%zu]", ctx->path, i);
        if (item->kind != INPUT_YMAP)
            return straggler_error(ctx, item,
                                      "%s: expected a mapping such as {ranks: [3], slowdown: "
                                      "1.25}, got %s",
                                      what, input_ykind_name(item->kind));
        const input_ynode *ranks = NULL, *slow = NULL;
        for (size_t j = 0; j < item->n; j++) {
            const input_ypair *pr = &item->pairs[j];
            if (!strcmp(pr->key->text, "ranks"))
                ranks = pr->value;
            else if (!strcmp(pr->key->text, "slowdown"))
                slow = pr->value;
            else {
                input_schema_error(ctx, SIM_EINVAL, pr->key, "unknown key '%s' in %s",
                                   pr->key->text, what);
                sim_diag_hint(ctx->diag, "valid keys here: ranks, slowdown");
                return SIM_EINVAL;
            }
        }
        if (!ranks || !slow)
            return straggler_error(ctx, item, "missing required key '%s' in '%s'",
                                      ranks ? "slowdown" : "ranks", what);
        double f;
        char sw[INPUT_SCHEMA_PATH_MAX + 64];
        snprintf(sw, sizeof sw, "%s.slowdown", what);
        if ((rc = input_schema_float(ctx, sw, slow, &f)))
            return rc;
        if (!(f > 0 && f <= 100))
            return straggler_error(ctx, slow,
                                      "%s: must be greater than 0 and at most 100 (got %s)", sw,
                                      slow->text);
        snprintf(sw, sizeof sw, "%s.ranks", what);
        if (ranks->kind != INPUT_YSEQ || ranks->n == 0)
            return straggler_error(ctx, ranks,
                                      "%s: expected a non-empty list of ranks such as [3]", sw);
        for (size_t j = 0; j < ranks->n; j++) {
            char rw[INPUT_SCHEMA_PATH_MAX + 96];
            snprintf(rw, sizeof rw, "%s[%zu]", sw, j);
            int64_t r;
            if ((rc = input_schema_int(ctx, rw, ranks->items[j], &r)))
                return rc;
            if (r < 0 || r >= 1048576)
                return straggler_error(ctx, ranks->items[j],
                                          "%s: a rank from 0 to 1048575 (got %s)", rw,
                                          ranks->items[j]->text);
            for (int k = 0; k < s->n_stragglers; k++)
                if (s->stragglers[k].rank == r)
                    return straggler_error(ctx, ranks->items[j],
                                              "%s: rank %lld is listed twice", rw, (long long)r);
            if (s->n_stragglers == PLAN_STRAGGLERS_MAX)
                return straggler_error(ctx, ranks->items[j],
                                          "%s: at most %d ranks in all", ctx->path,
                                          PLAN_STRAGGLERS_MAX);
            s->stragglers[s->n_stragglers++] = (plan_straggler){.rank = (int32_t)r, .slowdown = f};
        }
    }
    return 0;
}


/* parallel.fsdp: an option given for an implementation that has no such thing would be
 * silently ignored, so it is an error, as are the FSDP options DeepSpeed has no counterpart
 * of (docs/strategies.md, "FSDP"). */
static int check_fsdp(const input_ynode *root, const plan_parallel *p, input_schema_ctx *ctx)
{
    static const struct {
        const char *key;
        plan_fsdp_impl only; /* the implementation it belongs to */
        bool not_deepspeed;  /* instead: every implementation but DeepSpeed */
        const char *hint;
        size_t as_deepspeed; /* a boolean option: offset of its value in plan_parallel ... */
        bool deepspeed_runs; /* ... which DeepSpeed accepts when it is what DeepSpeed does */
    } opts[] = {
        {"limit_all_gathers", PLAN_FSDP1, false,
         "FSDP2 and DeepSpeed have no rate limiter; set implementation: fsdp1 or drop it", 0,
         false},
        {"prefetch_bucket", PLAN_DEEPSPEED, false,
         "FSDP1 and FSDP2 prefetch by units: use parallel.fsdp.prefetch", 0, false},
        {"reduce_bucket", PLAN_DEEPSPEED, false,
         "FSDP reduce-scatters each unit's gradients on their own", 0, false},
        {"persistence_threshold", PLAN_DEEPSPEED, false,
         "FSDP shards every parameter; set implementation: deepspeed or drop it", 0, false},
        {"max_reuse_distance", PLAN_DEEPSPEED, false,
         "FSDP frees what it gathered by unit (reshard_after_forward); set implementation: "
         "deepspeed or drop it", 0, false},
        {"sub_group_size", PLAN_DEEPSPEED, false,
         "FSDP's optimizer steps on fp32 gradients it already keeps; set implementation: "
         "deepspeed or drop it", 0, false},
        {"sync_fetch", PLAN_DEEPSPEED, false,
         "the blocking fetch is DeepSpeed's (before 0.5); set implementation: deepspeed or drop "
         "it", 0, false},
        {"list_collectives", PLAN_DEEPSPEED, false,
         "per-tensor list collectives are DeepSpeed's on PyTorch before 1.10; set "
         "implementation: deepspeed or drop it", 0, false},
        {"prefetch", PLAN_FSDP2, true, "DeepSpeed prefetches by parameters: use "
                                       "parallel.fsdp.prefetch_bucket (elements)", 0, false},
        {"reshard_after_forward", PLAN_FSDP2, true,
         "DeepSpeed releases each gathered parameter after use unless it is used again within "
         "parallel.fsdp.max_reuse_distance elements: set that instead",
         offsetof(plan_parallel, fsdp.reshard_after_forward), true},
        {"hybrid_shard", PLAN_FSDP2, true,
         "DeepSpeed's hierarchical partitioning (ZeRO++ hpZ) is not modelled; use fsdp1 or "
         "fsdp2",
         offsetof(plan_parallel, fsdp.hybrid_shard), false},
    };
    static const char *const impl[] = {[PLAN_FSDP2] = "fsdp2", [PLAN_FSDP1] = "fsdp1",
                                       [PLAN_DEEPSPEED] = "deepspeed"};
    plan_fsdp_impl im = p->fsdp.implementation;
    for (size_t i = 0; i < SIM_ARRAY_LEN(opts); i++) {
        char path[64];
        snprintf(path, sizeof path, "parallel.fsdp.%s", opts[i].key);
        const input_ynode *at = input__given(root, path);
        bool ok = opts[i].not_deepspeed ? im != PLAN_DEEPSPEED : im == opts[i].only;
        if (opts[i].as_deepspeed) { /* DeepSpeed reshards after forward, over all ranks */
            bool v;
            memcpy(&v, (const char *)p + opts[i].as_deepspeed, sizeof v);
            ok = ok || v == opts[i].deepspeed_runs;
        }
        if (!at || ok)
            continue;
        char only[32] = "";
        if (!opts[i].not_deepspeed)
            snprintf(only, sizeof only, " (only of %s)", impl[opts[i].only]);
        input_schema_error(ctx, SIM_EINVAL, at, "%s: not an option of implementation %s%s",
                           path, impl[im], only);
        sim_diag_hint(ctx->diag, "%s", opts[i].hint);
        return SIM_EINVAL;
    }
    return 0;
}

/* simulation.stragglers and jitter: every rank listed exists, and every rank is simulated
 * (symmetry takes the replicas for copies of one, which a slowed rank is not). */
static int check_variability(const input_ynode *root, const plan_scenario *sc,
                             input_schema_ctx *ctx)
{
    const plan_simulation *s = &sc->simulation;
    const plan_parallel *p = &sc->parallel;
    bool mixed = sc->topology.n_groups > 0;
    if (s->symmetry == PLAN_SYMMETRY_DP && (s->n_stragglers > 0 || s->jitter > 0 || mixed)) {
        const char *key = s->n_stragglers > 0 ? "simulation.stragglers"
                          : s->jitter > 0     ? "simulation.jitter"
                                              : "topology.node_groups";
        input_schema_error(ctx, SIM_EINVAL, input__locate(root, key, "simulation"),
                           "%s: every replica must be simulated, but simulation.symmetry is dp",
                           key);
        sim_diag_hint(ctx->diag, "set simulation.symmetry: none (replicas differ once a rank is "
                                 "slowed, its kernels vary or its GPU differs)");
        return SIM_EINVAL;
    }
    long long ranks = (long long)p->dp * p->tp * p->pp * p->cp;
    const input_ynode *list = input__given(root, "simulation.stragglers");
    for (int i = 0; i < s->n_stragglers; i++) {
        if (s->stragglers[i].rank < ranks)
            continue;
        /* the item that lists it: walk the list in the order the loader read it */
        const input_ynode *at = list;
        int seen = 0;
        for (size_t e = 0; list && e < list->n && at == list; e++) {
            const input_ypair *r = input_ymap_find(list->items[e], "ranks");
            for (size_t j = 0; r && j < r->value->n; j++, seen++)
                if (seen == i)
                    at = r->value->items[j];
        }
        input_schema_error(ctx, SIM_EINVAL, at ? at : root,
                           "simulation.stragglers: rank %d does not exist (the run has %lld "
                           "ranks, 0 to %lld)",
                           s->stragglers[i].rank, ranks, ranks - 1);
        sim_diag_hint(ctx->diag, "ranks are numbered tp fastest, then cp, ep, dp, pp "
                                 "(parallel.order); `stepsim run --json` names the slowest");
        return SIM_EINVAL;
    }
    return 0;
}

int input__check_parallel_options(const input_ynode *root, const plan_scenario *sc,
                                  input_schema_ctx *ctx)
{
    const plan_parallel *p = &sc->parallel;
    int rc = check_fsdp(root, p, ctx);
    if (!rc && p->fsdp.list_collectives &&
        (sc->model.attention.kind == MODEL_ATTN_MLA ||
         sc->training.finetune.method != PLAN_FT_FULL)) {
        /* the tensors each get their own collective: listed for MHA models trained in full
         * (DeepSpeed's ZeRO-3 has no MoE: input__check_parallel refuses it) */
        input_schema_error(ctx, SIM_EINVAL,
                           input__locate(root, "parallel.fsdp.list_collectives", "parallel"),
                           "parallel.fsdp.list_collectives: modelled for multi-head attention "
                           "models trained in full only");
        sim_diag_hint(ctx->diag, "drop it for MLA or LoRA models (docs/strategies.md, "
                                 "\"FSDP\")");
        rc = SIM_EINVAL;
    }
    if (!rc)
        rc = check_variability(root, sc, ctx);
    bool offload_params = p->offload.params != PLAN_OFFLOAD_NONE;
    const input_ynode *at = input__locate(root, "parallel.offload.params", "parallel");
    if (!rc && offload_params &&
        (p->zero != 3 || p->offload.optimizer == PLAN_OFFLOAD_NONE)) {
        /* the shards live on the host; the master weights and the update with them */
        bool z3 = p->zero == 3;
        input_schema_error(ctx, SIM_EINVAL, at,
                           "parallel.offload.params: parameter offload needs %s",
                           z3 ? "the optimizer offloaded too (parallel.offload.optimizer: cpu)"
                              : "sharded parameters (parallel.zero: 3)");
        sim_diag_hint(ctx->diag, z3 ? "the 16-bit shards are updated where the fp32 master "
                                      "copies are: set parallel.offload.optimizer: cpu"
                                    : "only ZeRO-3/FSDP gathers parameters before use (DeepSpeed "
                                      "offload_param, FSDP CPUOffload): set parallel.zero: 3");
        rc = SIM_EINVAL;
    }
    plan_schedule sched = p->pipeline.schedule;
    bool split = sched == PLAN_SCHED_ZB_H1 || sched == PLAN_SCHED_DUALPIPE ||
                 sched == PLAN_SCHED_ZBV;
    if (!rc && split && p->pp > 1 && (p->cp > 1 || p->zero == 3)) {
        rc = input_schema_error(ctx, SIM_ENOTSUP,
                                input__locate(root, "parallel.pipeline.schedule", "parallel"),
                                "parallel.pipeline.schedule: %s with %s is not supported yet",
                                sched == PLAN_SCHED_ZB_H1      ? "zb-h1"
                                : sched == PLAN_SCHED_DUALPIPE ? "dualpipe"
                                                               : "zbv",
                                p->cp > 1 ? "context parallelism" : "FSDP/ZeRO-3");
        sim_diag_hint(ctx->diag, "1f1b or interleaved run with it");
    }
    bool nvme_params = p->offload.params == PLAN_OFFLOAD_NVME;
    int bare = -1; /* a node group without drives (mixed clusters: each group has its own) */
    for (int g = 0; g < sc->topology.n_groups && bare < 0; g++)
        if (sc->topology.groups[g].node.storage.count == 0)
            bare = g;
    if (!rc && (p->offload.optimizer == PLAN_OFFLOAD_NVME || nvme_params) &&
        sc->topology.n_devices == 0 &&
        (sc->topology.n_groups > 0 ? bare >= 0 : sc->topology.storage.count == 0)) {
        const char *key = nvme_params ? "parallel.offload.params" : "parallel.offload.optimizer";
        if (bare >= 0)
            rc = input_schema_error(ctx, SIM_EINVAL, input__locate(root, key, "parallel"),
                                    "%s: nvme needs NVMe drives on every node, and topology "
                                    "'%s' has none in node_groups[%d]", key, sc->topology.name,
                                    bare);
        else
            rc = input_schema_error(ctx, SIM_EINVAL, input__locate(root, key, "parallel"),
                                    "%s: nvme needs NVMe drives, and topology '%s' has none",
                                    key, sc->topology.name);
        sim_diag_hint(ctx->diag, "give them as %s.storage: {kind: nvme, count: 8} "
                                 "(docs/scenario-format.md)",
                      bare >= 0 ? "each node group's node" : "topology.node");
    }
    if (!rc && p->offload.optimizer == PLAN_OFFLOAD_NVME && p->zero != 3) {
        rc = input_schema_error(ctx, SIM_EINVAL,
                                input__locate(root, "parallel.offload.optimizer", "parallel"),
                                "parallel.offload.optimizer: nvme (ZeRO-Infinity) needs "
                                "parallel.zero: 3");
        sim_diag_hint(ctx->diag, "DeepSpeed swaps optimizer states to NVMe under ZeRO stage 3 "
                                 "only; cpu works with every stage");
    }
    if (!rc && p->zero == 3 && p->pp > 1 && p->fsdp.hybrid_shard)
        rc = input_schema_error(ctx, SIM_ENOTSUP,
                                input__locate(root, "parallel.fsdp.hybrid_shard", "parallel"),
                                "parallel.fsdp.hybrid_shard: hybrid sharding with pipeline "
                                "parallelism is not supported yet");
    return rc;
}
