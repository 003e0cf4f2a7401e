/* Scenario defaults and enum names (docs/scenario-format.md). */
#include "core/sim.h"

#include <string.h>

#include "coll/coll.h"
#include "plan/scenario.h"

const char *plan_group_name(plan_group_class g)
{
    static const char *const names[PLAN_GROUP_COUNT] = {"dp", "tp", "pp", "ep", "cp"};
    SIM_ASSERT(g >= 0 && g < PLAN_GROUP_COUNT, "group %d", (int)g);
    return names[g];
}

const char *plan_coll_algo_name(plan_coll_algo a)
{
    static const char *const names[PLAN_COLL_ALGO_COUNT] = {
        "auto", "ring", "tree", "hd", "direct", "hierarchical", "nvls", "pairwise"};
    SIM_ASSERT(a >= 0 && a < PLAN_COLL_ALGO_COUNT, "algo %d", (int)a);
    return names[a];
}

bool plan_composite_norm(const plan_training *t)
{
    return t->norm_kernel == PLAN_NORM_COMPOSITE ||
           (t->norm_kernel == PLAN_NORM_DEFAULT && !t->compile);
}

void plan_scenario_defaults(plan_scenario *sc)
{
    memset(sc, 0, sizeof *sc);
    plan_training *t = &sc->training;
    t->seq_len = 2048;
    t->global_batch = 0; /* required */
    t->micro_batch = 1;
    t->precision = HW_DTYPE_BF16;
    t->master_weights = PLAN_MASTER_FP32;
    t->grad_dtype = HW_DTYPE_BF16;
    t->optimizer = PLAN_OPT_ADAM;
    t->optimizer_state = PLAN_STATE_FP32;
    t->recompute = MODEL_RECOMPUTE_NONE;
    t->recompute_every = 1;
    t->flash_attention = true;
    t->compile = true;
    t->finetune.method = PLAN_FT_FULL;
    t->finetune.rank = 16;
    t->moe_routing_skew = 0.0;
    t->moe_capacity_factor = 0.0;

    plan_parallel *p = &sc->parallel;
    p->dp = p->tp = p->pp = p->ep = p->cp = 1;
    p->sp = false;
    p->zero = 0;
    p->fsdp.reshard_after_forward = true;
    p->fsdp.prefetch = 1;
    p->fsdp.hybrid_shard = false;
    p->fsdp.implementation = PLAN_FSDP2;
    p->fsdp.limit_all_gathers = true;
    /* DeepSpeed's defaults (deepspeed/runtime/zero/config.py): stage3_prefetch_bucket_size
     * 5e7, reduce_bucket_size 5e8, stage3_param_persistence_threshold 1e5 elements,
     * stage3_max_reuse_distance 1e9, sub_group_size 1e9 */
    p->fsdp.prefetch_bucket = 5e7;
    p->fsdp.reduce_bucket = 5e8;
    p->fsdp.persistence_threshold = 1e5;
    p->fsdp.max_reuse_distance = 1e9;
    p->fsdp.sub_group_size = 1e9;
    p->ddp.bucket_bytes = INT64_C(25) << 20; /* 25 MiB, PyTorch DDP's default */
    p->ddp.overlap = true;
    p->pipeline.schedule = PLAN_SCHED_1F1B;
    p->pipeline.virtual_stages = 1;
    p->pipeline.n_stage_layers = 0;
    p->tp_comm_overlap = false;
    p->tp_grad_overlap = true;
    p->offload.optimizer = PLAN_OFFLOAD_NONE;
    p->offload.params = PLAN_OFFLOAD_NONE;
    p->offload.activations = PLAN_OFFLOAD_NONE;
    p->order[0] = PLAN_GROUP_TP;
    p->order[1] = PLAN_GROUP_CP;
    p->order[2] = PLAN_GROUP_EP;
    p->order[3] = PLAN_GROUP_DP;
    p->order[4] = PLAN_GROUP_PP;

    plan_simulation *s = &sc->simulation;
    s->steps = 2;
    s->seed = 1;
    s->timeline = true;
    s->symmetry = PLAN_SYMMETRY_NONE;
    s->symmetry_collectives = PLAN_SYMCOLL_ESTIMATE;
    s->steady_state = PLAN_STEADY_AUTO;
    s->jitter = 0.0;

    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        sc->collectives[g] = PLAN_COLL_AUTO;
}

int plan_coll_algo_id(plan_coll_algo a)
{
    static const int map[PLAN_COLL_ALGO_COUNT] = {
        [PLAN_COLL_AUTO] = -1,           [PLAN_COLL_RING] = COLL_ALGO_RING,
        [PLAN_COLL_TREE] = COLL_ALGO_TREE, [PLAN_COLL_HD] = COLL_ALGO_HD,
        [PLAN_COLL_DIRECT] = COLL_ALGO_DIRECT, [PLAN_COLL_HIERARCHICAL] = COLL_ALGO_HIERARCHICAL,
        [PLAN_COLL_NVLS] = COLL_ALGO_NVLS, [PLAN_COLL_PAIRWISE] = COLL_ALGO_PAIRWISE};
    SIM_ASSERT(a >= 0 && a < PLAN_COLL_ALGO_COUNT, "algo %d", (int)a);
    return map[a];
}
