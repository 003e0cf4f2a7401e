/* stepsim plan's search space (docs/plan.md, "Candidates"): every layout of the scenario's
 * model on its GPUs, as candidates, overrides and the scenarios the screen estimates. */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "cli/plan-internal.h"

const char *const cli__plan_axis_keys[PLAN_AXES] = {
    "parallel.tp", "parallel.sp", "parallel.pp", "parallel.cp", "parallel.dp",
    "parallel.ep", "parallel.zero", "parallel.pipeline.schedule",
    "parallel.pipeline.virtual_stages", "training.micro_batch", "training.recompute",
    "parallel.offload.optimizer", "parallel.tp_comm_overlap", "parallel.order"};

/* The rank orders searched, inner to outer: Megatron's (pipeline stages outermost), and the
 * pipeline inside data parallelism (a stage's neighbours nearer, its replicas farther). */
static const plan_group_class orders[2][PLAN_GROUP_COUNT] = {
    {PLAN_GROUP_TP, PLAN_GROUP_CP, PLAN_GROUP_EP, PLAN_GROUP_DP, PLAN_GROUP_PP},
    {PLAN_GROUP_TP, PLAN_GROUP_CP, PLAN_GROUP_EP, PLAN_GROUP_PP, PLAN_GROUP_DP}};
const char *const cli__plan_order_names[2] = {"[tp, cp, ep, dp, pp]", "[tp, cp, ep, pp, dp]"};

void cli__plan_cand_add(cand_list *g, cand c)
{
    SIM_GROW(g->c, g->cap, g->n + 1);
    g->c[g->n++] = c;
}

static bool divides(int64_t a, int64_t b)
{
    return a > 0 && b % a == 0;
}

static const char *rc_name(model_recompute rc)
{
    return rc == MODEL_RECOMPUTE_FULL ? "full" : rc == MODEL_RECOMPUTE_SELECTIVE ? "selective"
                                                                                 : "none";
}

/* The last dimensions of a layout: ZeRO stage, schedule and virtual stages, micro-batch,
 * recompute, optimizer offload, TP overlap, rank order. */
static void inner(const plan_scenario *sc, int64_t batch, bool host, cand k, cand_list *g)
{
    const model_spec *m = &sc->model;
    static const model_recompute rcs[] = {MODEL_RECOMPUTE_NONE, MODEL_RECOMPUTE_SELECTIVE,
                                          MODEL_RECOMPUTE_FULL};
    /* Transformer Engine's userbuffers exchange over NVLink: TP overlap is tried where the
     * nodes' GPUs are joined by NVLink or an NVSwitch (not over PCIe, nor on a topology of
     * listed devices) */
    bool nvlink = sc->topology.n_devices == 0 && sc->topology.intra.kind != HW_INTRA_PCIE;
    bool bf16_opt = sc->training.grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD;
    for (int zero = 0; zero <= 3; zero++) {
        if (k.dp * k.cp == 1 && zero)
            continue;
        /* DeepSpeed's pipeline engine runs ZeRO-1 at most */
        if (zero == 3 && k.pp > 1 && sc->parallel.fsdp.implementation == PLAN_DEEPSPEED)
            continue;
        /* DeepSpeed's BF16_Optimizer (grad_accumulation: cast_add) shards the optimizer
         * alone, keeps it on the GPU, and its pipeline engine runs 1F1B: the layouts of
         * that optimizer */
        if (zero >= 2 && bf16_opt)
            continue;
        for (int v = 1; v <= (k.pp > 1 ? m->layers / k.pp : 1); v++) {
            if (v > 1 && (m->layers % (k.pp * v) || bf16_opt))
                continue;
            for (int mb = 1; mb <= 64; mb++) {
                if (!divides((int64_t)mb * k.dp, batch))
                    continue;
                int64_t A = batch / ((int64_t)mb * k.dp);
                if (v > 1 && A % k.pp)
                    continue;
                for (size_t r = 0; r < SIM_ARRAY_LEN(rcs); r++)
                    for (int off = 0; off <= (zero > 0 && host && !bf16_opt); off++)
                        for (int ov = 0; ov <= (k.tp > 1 && nvlink ? 1 : 0); ov++)
                            for (int sp = ov; sp <= (k.tp > 1 ? 1 : 0); sp++)
                                for (int o = 0; o <= (k.pp > 1 && k.dp > 1 ? 1 : 0); o++) {
                                    cand c = k;
                                    c.zero = zero;
                                    c.vstages = v;
                                    c.mb = mb;
                                    c.rc = rcs[r];
                                    c.offload = off;
                                    c.overlap = ov;
                                    c.sp = sp;
                                    c.order = o;
                                    cli__plan_cand_add(g, c);
                                }
            }
        }
    }
}

void cli__plan_candidates(const plan_scenario *sc, int gpus, int per_node, int64_t batch,
                          bool host, cand_list *g)
{
    const model_spec *m = &sc->model;
    bool moe = m->moe.experts > 0, mla = m->attention.kind == MODEL_ATTN_MLA;
    int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;
    for (int tp = 1; tp <= SIM_MIN(gpus, per_node); tp++) {
        if (!divides(tp, gpus) || m->heads % tp || m->ffn % tp ||
            (!mla && kv % tp && tp % kv) || (moe && m->moe.expert_ffn % tp))
            continue;
        for (int pp = 1; pp <= m->layers; pp++) {
            if (!divides(pp, gpus / tp))
                continue;
            for (int cp = 1; cp <= 8; cp *= 2) {
                if (!divides(cp, gpus / tp / pp) || (cp > 1 && sc->training.seq_len < 16384) ||
                    sc->training.seq_len % (2 * cp) || (cp > 1 && !sc->training.flash_attention) ||
                    (cp > 1 && m->position == MODEL_POS_ALIBI))
                    continue;
                int dp = gpus / tp / pp / cp;
                for (int ep = 1; ep <= dp; ep++) {
                    if (!divides(ep, dp) || (ep > 1 && (!moe || m->moe.experts % ep)))
                        continue;
                    inner(sc, batch, host,
                          (cand){.tp = tp, .pp = pp, .cp = cp, .dp = dp, .ep = ep}, g);
                }
            }
        }
    }
}

void cli__plan_cand_scenario(const plan_scenario *base, const cand *k, int64_t batch,
                             plan_scenario *x)
{
    *x = *base;
    plan_parallel *p = &x->parallel;
    p->tp = k->tp;
    p->sp = k->sp;
    p->pp = k->pp;
    p->cp = k->cp;
    p->dp = k->dp;
    p->ep = k->ep;
    p->zero = k->zero;
    p->pipeline.schedule = k->pp > 1 && k->vstages > 1 ? PLAN_SCHED_INTERLEAVED : PLAN_SCHED_1F1B;
    p->pipeline.virtual_stages = k->vstages;
    p->tp_comm_overlap = k->overlap;
    memcpy(p->order, orders[k->order], sizeof p->order);
    p->offload.optimizer = k->offload ? PLAN_OFFLOAD_CPU : PLAN_OFFLOAD_NONE;
    if (k->zero != 3 || !k->offload)
        p->offload.params = PLAN_OFFLOAD_NONE;
    x->training.micro_batch = k->mb;
    x->training.recompute = k->rc;
    x->training.recompute_every = 1;
    x->training.global_batch = batch;
    p->pipeline.n_stage_layers = 0;
    p->fsdp.hybrid_shard = false;
}

void cli__plan_cand_values(const cand *k, char v[PLAN_AXES][32])
{
    snprintf(v[0], 32, "%d", k->tp);
    snprintf(v[1], 32, "%s", k->sp ? "true" : "false");
    snprintf(v[2], 32, "%d", k->pp);
    snprintf(v[3], 32, "%d", k->cp);
    snprintf(v[4], 32, "%d", k->dp);
    snprintf(v[5], 32, "%d", k->ep);
    snprintf(v[6], 32, "%d", k->zero);
    snprintf(v[7], 32, "%s", k->pp > 1 && k->vstages > 1 ? "interleaved" : "1f1b");
    snprintf(v[8], 32, "%d", k->vstages);
    snprintf(v[9], 32, "%d", k->mb);
    snprintf(v[10], 32, "%s", rc_name(k->rc));
    snprintf(v[11], 32, "%s", k->offload ? "cpu" : "none");
    snprintf(v[12], 32, "%s", k->overlap ? "true" : "false");
    snprintf(v[13], 32, "%s", cli__plan_order_names[k->order]);
}
