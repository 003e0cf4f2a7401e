/* Traces of the data-parallel family: single GPU, DDP, ZeRO-1/2, ZeRO-3 / FSDP full shard
 * and hybrid shard (docs/strategies.md). Each rank runs A = global_batch / (micro_batch x dp)
 * micro-batches of forward and backward over units — the embedding, each layer, the head —
 * then the optimizer.
 *
 * DDP      gradients all-reduced in buckets of parallel.ddp.bucket bytes, filled in backward
 *          order on the last micro-batch only (no_sync before), each issued as its last
 *          gradient appears (overlap) or after backward; optimizer on all parameters.
 *          Per GPU per step: 2 x 2P(n-1)/n bytes sent (ring all-reduce of 2P).
 * ZeRO-1   (Megatron's distributed optimizer) the same buckets reduce-scattered, the optimizer
 *          updates the rank's 1/n shard, then the 16-bit parameters are all-gathered in
 *          buckets. 2P(n-1)/n + 2P(n-1)/n sent. Gradients stay whole.
 * ZeRO-2   as ZeRO-1, but gradients are sharded: buckets are reduce-scattered on every
 *          micro-batch (DeepSpeed reduces at each micro-step) and a bucket's whole gradients
 *          live only until its reduce-scatter ends.
 * ZeRO-3 / FSDP full shard: before each unit's forward its parameters are all-gathered
 *          (2 P_u), and again before its backward unless reshard_after_forward is false; the
 *          unit's gradients are reduce-scattered right after its backward. Prefetch k: the
 *          gather of unit i may start once unit i-k-1 has finished (at most k+1 gathered units
 *          in flight), so with k >= 1 the gather of the next unit overlaps this unit's compute.
 *          Every micro-batch gathers and reduce-scatters again, as PyTorch FSDP does without
 *          no_sync. Per GPU per step with A = 1: 3 x 2P(n-1)/n.
 * Hybrid   FSDP's HYBRID_SHARD: shard inside a node (gathers and reduce-scatters over the
 *          node's ranks), then all-reduce each gradient shard across nodes.
 *
 * Offload (offload.optimizer: cpu, as ZeRO-Offload): the optimizer states and fp32 master
 *          weights live in host memory. After the gradient reduction each unit's gradient
 *          shard is copied to host memory (a flow through the PCIe tree), updated by CPU Adam
 *          — a host-memory-bound pass whose time is the bytes it touches over the socket's
 *          DRAM bandwidth, shared by the ranks that stage there — and its 16-bit parameters
 *          copied back.
 *
 * Pipeline (pp > 1, with DDP or ZeRO-1/2): the units are cut into pp x virtual_stages chunks
 *          (plan/pipeline.c); each stage runs its schedule's forward and backward actions,
 *          receiving activations (gradients) from the previous (next) chunk's stage over an
 *          async point-to-point stream, and reduces each chunk's gradients after its last
 *          backward. Tensor parallelism's collectives are emitted with the kernels
 *          (plan/emit.c).
 *
 * Memory events: a unit's stored activations are allocated when its forward ends and freed
 * when its backward ends (full recompute rebuilds the rest of the layer's activations for
 * the length of its backward); FSDP's gathered parameters and unsharded gradients, and
 * ZeRO-2's bucket gradients, are buffers that live from their gather (or production) to
 * their release. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/gen-internal.h"
#include "plan/pipeline.h"

_Static_assert(TRACE_MEM_CATS == PLAN_MEM_COUNT, "trace and plan memory categories");

/* ---- one rank ------------------------------------------------------------------------ */

/* The parameters of unit `u` this rank updates: all it trains, or with ZeRO its shard of
 * them, dense ones over the data-parallel group and experts' over the expert-data-parallel
 * one (as persistent() counts their states). */
double plan__shard_params(const gen *g, const unit *u)
{
    if (g->zero < 1)
        return (double)u->trainable;
    return (double)(plan__ceil_div(u->trainable - u->trainable_expert, g->n) +
                    plan__ceil_div(u->trainable_expert, g->n_edp));
}

/* training.grad_accumulation: cast_add (DeepSpeed's BF16_Optimizer, update_hp_grads). Once
 * micro-batch `mb`'s backward of units [u0, u1) has run, each of their parameter tensors'
 * 16-bit gradient is cast to fp32 (reads 2 bytes, writes 4) and added into the fp32 buffer
 * (reads 4 + 4, writes 4): 18 bytes a parameter and two eager kernels a tensor, one op here
 * for all of them, timed at the GPU's eager memory curve and issued as 2 x tensors launches;
 * while it runs, the cast's fp32 temporary of the largest tensor is allocated (one tensor's
 * at a time: 4 bytes an element, a buffer). It follows the backward on the compute stream;
 * what DeepSpeed does after the call returns (the gradient's send, the reduction) waits for
 * it. Returns the op, or `after` when there is nothing to accumulate. */
uint32_t plan__grad_accum(gen *g, int u0, int u1, int mb, uint32_t after)
{
    if (g->sc->training.grad_accumulation != PLAN_GRAD_ACCUM_CAST_ADD)
        return after;
    plan_accum_work w = plan__grad_accum_work(g, u0, u1); /* the rank's units, all */
    if (w.params == 0)
        return after;
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = TRACE_PHASE_BWD,
        .cls = HW_OP_VECTOR,
        .dtype = HW_DTYPE_FP32,
        .layer = TRACE_NO_LAYER,
        .microbatch = mb,
        .name = trace_intern(g->t, "grad_accum"),
        .inner = HW_VECTOR_EAGER,
        .flops = w.params, /* one add a parameter */
        .bytes = w.bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    uint32_t id = trace_add_op(g->t, g->rank, &op, &after, 1);
    trace_set_host(g->t, g->rank, id, (uint32_t)w.launches, false);
    trace_add_mem(g->t, g->rank, id, PLAN_MEM_BUFFERS, w.temp_bytes, false);
    trace_add_mem(g->t, g->rank, id, PLAN_MEM_BUFFERS, -w.temp_bytes, true);
    return id;
}

/* ZeRO-1/2 with parallel.ddp.overlap_param_gather: the gathers of the parameters the last
 * update changed run at the start of the step instead, in forward order, a bucket at a time
 * (units whole, up to the bucket size), and each unit's first forward waits only for its own
 * bucket: the gathers overlap the forward of the units before them (Megatron-Core's
 * --overlap-param-gather). Every step gathers once either way; in steady state this is the
 * next step's forward overlapping the previous update's gather. */
void plan__param_gather_ahead(gen *g)
{
    for (int i = 0; i < g->n_units; i++)
        g->gather_of[i] = UINT32_MAX;
    if (g->zero < 1 || g->zero > 2 || !g->sc->parallel.ddp.overlap_param_gather)
        return;
    double bucket = (double)g->sc->parallel.ddp.bucket_bytes, fill = 0, expert = 0;
    int first = -1;
    for (int i = 0; i <= g->n_units; i++) {
        bool flush = i == g->n_units || (fill > 0 && fill >= bucket);
        if (flush && fill > 0 && g->n > 1) {
            uint32_t c = plan__add_coll_op(g, g->g_shard, COLL_ALL_GATHER, fill, "param_bucket",
                                           TRACE_NO_LAYER, TRACE_NO_MICROBATCH, NULL, 0);
            for (int u = first; u < i; u++)
                g->gather_of[u] = g->mine[u] ? c : UINT32_MAX;
        }
        if (flush) {
            fill = 0;
            first = i;
        }
        if (i == g->n_units)
            break;
        if (!g->mine[i])
            continue;
        if (first < 0)
            first = i;
        fill += (double)(g->units[i].trainable - g->units[i].trainable_expert) * g->wbytes;
        expert += (double)g->units[i].trainable_expert * g->wbytes;
    }
    /* experts' parameters: gathered over the expert-DP group ahead of the step as a whole */
    if (g->n_edp > 1)
        for (double done = 0; done < expert; done += bucket)
            plan__add_coll_op(g, g->g_edp, COLL_ALL_GATHER, SIM_MIN(bucket, expert - done),
                              "expert_param_bucket", TRACE_NO_LAYER, TRACE_NO_MICROBATCH, NULL,
                              0);
}

/* The all-gather unit u's forward waits for, on its first forward of the step (NULL when
 * none). */
const uint32_t *plan__gather_dep(const gen *g, int u, bool first)
{
    return first && g->gather_of[u] != UINT32_MAX ? &g->gather_of[u] : NULL;
}

/* ZeRO-1/2: after the sharded update, gather the updated 16-bit parameters in buckets —
 * dense ones over the data-parallel group, experts' over the expert-DP group. Frozen weights
 * never change: only trained ones are gathered. */
void plan__param_gather(gen *g, uint32_t opt)
{
    if (g->zero < 1 || g->zero > 2 || g->sc->parallel.ddp.overlap_param_gather)
        return;
    double dense = 0, expert = 0;
    for (int i = 0; i < g->n_units; i++)
        if (g->mine[i]) {
            dense += (double)(g->units[i].trainable - g->units[i].trainable_expert) * g->wbytes;
            expert += (double)g->units[i].trainable_expert * g->wbytes;
        }
    double bucket = (double)g->sc->parallel.ddp.bucket_bytes;
    if (g->n > 1)
        for (double done = 0; done < dense; done += bucket)
            plan__add_coll_op(g, g->g_shard, COLL_ALL_GATHER, SIM_MIN(bucket, dense - done),
                              "param_bucket", TRACE_NO_LAYER, TRACE_NO_MICROBATCH, &opt, 1);
    if (g->n_edp > 1)
        for (double done = 0; done < expert; done += bucket)
            plan__add_coll_op(g, g->g_edp, COLL_ALL_GATHER, SIM_MIN(bucket, expert - done),
                              "expert_param_bucket", TRACE_NO_LAYER, TRACE_NO_MICROBATCH, &opt, 1);
}

static void gen_bucketed(gen *g)
{
    uint32_t last_bwd = 0;
    plan__param_gather_ahead(g);
    for (int64_t mb = 0; mb < g->A; mb++) {
        int m = (int)mb;
        bool bucketing = g->n > 1 && (g->zero == 2 || mb == g->A - 1);
        for (int i = 0; i < g->n_units; i++) {
            const uint32_t *dep = plan__gather_dep(g, i, mb == 0);
            plan__emit_fwd(g, &g->units[i], m, dep, dep != NULL);
        }
        bool any = false;
        for (int i = g->n_units - 1; i >= 0; i--) {
            span b = plan__emit_bwd(g, &g->units[i], m, bucketing, NULL, 0);
            if (b.any)
                last_bwd = b.last;
            any = any || b.any;
        }
        if (any)
            last_bwd = plan__grad_accum(g, 0, g->n_units, m, last_bwd);
        if (bucketing)
            plan__bucket_flush(g, last_bwd, m);
    }
    uint32_t deps[2] = {last_bwd, 0};
    size_t nd = 1;
    if (g->have_last_coll)
        deps[nd++] = g->last_coll;
    uint32_t opt = plan__emit_step(g, deps, nd);
    plan__param_gather(g, opt);
}

/* ---- set-up -------------------------------------------------------------------------- */

/* Persistent bytes per rank: model states sharded per the strategy, DDP buckets, framework.
 * Frozen weights (LoRA/QLoRA) have no gradients, master copies or optimizer states. */
void plan__persistent(gen *g, plan_mem *m)
{
    const plan_training *t = &g->sc->training;
    double states = t->optimizer == PLAN_OPT_ADAM ? 2 : 1;
    double K = states * plan__state_bytes(t->optimizer_state) +
               (t->master_weights == PLAN_MASTER_FP32 ? 4 : 0);
    double weights = 0, whole = 0; /* whole: DeepSpeed's persistent parameters */
    double fp8 = 0, fp8_exp = 0;    /* fp8 weight elements (unit.fp8_weights), experts' */
    double experts = 0;             /* experts' weights: sharded over the expert-DP group */
    int64_t dense = 0, expert = 0;
    for (int i = 0; i < g->n_units; i++) {
        if (!g->mine[i])
            continue;
        weights += g->units[i].weight_bytes;
        fp8 += g->units[i].fp8_weights;
        fp8_exp += g->units[i].fp8_expert_weights;
        whole += g->units[i].persist_bytes;
        experts += g->units[i].expert_bytes;
        dense += g->units[i].trainable - g->units[i].trainable_expert;
        expert += g->units[i].trainable_expert;
    }
    int n = g->n, ne = g->n_edp; /* experts are shared by fewer ranks */
    double trained = (double)(dense + expert);
    double sharded = (double)(plan__ceil_div(dense, n) + plan__ceil_div(expert, ne));
    memset(m, 0, sizeof *m);
    const plan_parallel *par = &g->sc->parallel;
    bool off_params = par->offload.params != PLAN_OFFLOAD_NONE; /* zero 3 (validated) */
    double shard = g->zero == 3 ? (weights - whole - experts) / n + experts / ne : 0;
    /* PyTorch's FSDP with fp32 master weights keeps no 16-bit shard of what it trains: the
     * sharded parameter is the fp32 master (in K), cast to 16 bits into each gather's input
     * (plan__grad_store_bytes); frozen weights stay sharded as stored */
    double kept = shard; /* under FSDP's fp32 layout the frozen weights' shards only */
    if (plan__torch_fsdp_master(g))
        kept = fmax(0, (weights - whole - experts - (double)dense * g->wbytes) / n +
                           (experts - (double)expert * g->wbytes) / ne);
    m->bytes[PLAN_MEM_PARAMS] =
        (int64_t)ceil(g->zero == 3 ? (off_params ? 0 : kept) + whole : weights);
    m->bytes[PLAN_MEM_GRADS] =
        (int64_t)((g->zero >= 2 ? sharded : trained) * plan__grad_store_bytes(g));
    /* cast_add (zero <= 1, validated): the fp32 buffer, whatever the reduction's dtype (a bf16
     * reduction casts it first), and the 16-bit gradients beside it */
    if (t->grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD)
        m->bytes[PLAN_MEM_GRADS] = (int64_t)(trained * (4 + g->wbytes));
    m->bytes[PLAN_MEM_OPTIMIZER] =
        g->sc->parallel.offload.optimizer != PLAN_OFFLOAD_NONE
            ? 0 /* states and master weights in host memory (or on its drives) */
            : (int64_t)((g->zero >= 1 ? sharded : trained) * K + 0.5);
    /* DDP and ZeRO-1 fill buckets while the previous is reduced: two buckets in flight;
     * gradients are otherwise viewed in place (gradient_as_bucket_view, Megatron's buffer) */
    if (g->n > 1 && g->zero <= 1)
        m->bytes[PLAN_MEM_BUFFERS] =
            (int64_t)SIM_MIN(2.0 * (double)g->sc->parallel.ddp.bucket_bytes, trained * g->gbytes);
    /* Transformer Engine's fp8 weights and their transposes, cast in the step's first
     * micro-batch and kept (docs/models.md, "fp8"); where ZeRO-3 gathers the weights each is
     * cast from the gathered weight for its use and freed with it (not counted), but for
     * the experts it leaves whole on each rank (plan__weights_resident) */
    if (!plan__gathers_weights(g))
        m->bytes[PLAN_MEM_BUFFERS] += (int64_t)(2 * fp8);
    else if (g->n_edp <= 1)
        m->bytes[PLAN_MEM_BUFFERS] += (int64_t)(2 * fp8_exp);
    m->bytes[PLAN_MEM_OTHER] =
        PLAN_FRAMEWORK_BYTES + (g->p->n_ranks > 1 ? PLAN_NCCL_BUFFER_BYTES : 0);
    for (int c = 0; c < PLAN_MEM_COUNT; c++)
        m->total += m->bytes[c];
    /* host memory the offload holds: master weights and states with the gradients copied
     * for CPU Adam; with parameter offload, the 16-bit shard too */
    double host = 0, hg = plan__host_grad_bytes(g);
    if (par->offload.optimizer == PLAN_OFFLOAD_CPU)
        host += (g->zero >= 1 ? sharded : trained) * (K + hg);
    else if (par->offload.optimizer == PLAN_OFFLOAD_NVME) /* the states are on the drives */
        host += (g->zero >= 1 ? sharded : trained) * hg;
    if (par->offload.params == PLAN_OFFLOAD_CPU)
        host += kept;
    if (par->offload.activations == PLAN_OFFLOAD_CPU)
        host += plan__offloaded_activations(g);
    g->p->host_bytes[g->rank] = (int64_t)ceil(host);
}

/* training.finetune -> the model's fine-tuning description (no targets listed = all seven) */
model_ft plan__finetune_of(const plan_training *t)
{
    static const struct {
        const char *name;
        unsigned bit;
    } bits[] = {{"q", MODEL_TARGET_Q},       {"k", MODEL_TARGET_K},   {"v", MODEL_TARGET_V},
                {"o", MODEL_TARGET_O},       {"gate", MODEL_TARGET_GATE},
                {"up", MODEL_TARGET_UP},     {"down", MODEL_TARGET_DOWN}};
    model_ft ft = {.method = t->finetune.method == PLAN_FT_LORA    ? MODEL_FT_LORA
                             : t->finetune.method == PLAN_FT_QLORA ? MODEL_FT_QLORA
                                                                   : MODEL_FT_FULL,
                   .rank = t->finetune.rank,
                   .targets = t->finetune.n_targets ? 0 : MODEL_TARGET_ALL};
    for (int i = 0; i < t->finetune.n_targets; i++)
        for (size_t b = 0; b < SIM_ARRAY_LEN(bits); b++)
            if (strcmp(t->finetune.targets[i], bits[b].name) == 0)
                ft.targets |= bits[b].bit;
    return ft;
}

/* Parameters whose gradients a block's backward produces on this rank under `ft` (only the
 * experts' with `experts_only`). */
static int64_t block_grad_params(const gen *g, model_block blk, model_ft ft, bool experts_only)
{
    model_shape sh = g->sh;
    sh.ft = ft;
    model_op_list ops;
    model_block_ops(&g->model, &sh, blk, MODEL_PHASE_BWD, &ops);
    int64_t n = 0;
    for (int i = 0; i < ops.n; i++)
        if (!experts_only || strncmp(ops.op[i].name, "moe.expert", 10) == 0)
            n += ops.op[i].grad_params;
    return n;
}

/* Activation bytes one layer keeps per micro-batch under `rc` (MoE layers for `tokens`
 * routed assignments on this rank). */
static double layer_act_bytes(const gen *g, bool is_moe, model_recompute rc, double tokens)
{
    return is_moe ? model_moe_layer_activation_bytes(&g->model, &g->sh, rc, tokens)
                  : model_layer_activation_bytes(&g->model, &g->sh, rc);
}

/* Units with this rank's share of parameters: what its full-training backward would produce
 * gradients for (TP splits, tied embeddings and replicated norms included), the trained part
 * under the scenario's fine-tuning, and the bytes its weights take as stored. */
void plan__build_units(gen *g)
{
    const plan_scenario *sc = g->sc;
    int L = g->model.layers;
    g->n_units = L + 2;
    g->units = sim_calloc((size_t)g->n_units, sizeof *g->units);
    const model_ft full = {.method = MODEL_FT_FULL};
    model_params mp;
    model_count_params(&g->model, &mp);
    int64_t norms = mp.per_layer - model_layer_matrix_params(&g->model); /* replicated */
    bool moe = g->model.moe.experts > 0;
    static const model_block blocks[4] = {MODEL_BLOCK_EMBED, MODEL_BLOCK_LAYER, MODEL_BLOCK_HEAD,
                                          MODEL_BLOCK_MOE};
    for (int b = 0; b < (moe ? 4 : 3); b++) {
        int64_t params = block_grad_params(g, blocks[b], full, false);
        int64_t trained = block_grad_params(g, blocks[b], g->sh.ft, false);
        double bytes = (double)params * g->wbytes;
        if (g->sh.ft.method == MODEL_FT_QLORA && blocks[b] == MODEL_BLOCK_LAYER)
            bytes = (double)(params - norms) * model_qlora_weight_bytes() + (double)norms * 2;
        if (g->sh.ft.method != MODEL_FT_FULL) /* the adapters are stored besides */
            bytes += (double)trained * g->wbytes;
        unit u = {.blk = blocks[b], .layer = TRACE_NO_LAYER,
                  .params = params + (g->sh.ft.method != MODEL_FT_FULL ? trained : 0),
                  .trainable = trained,
                  .trainable_expert = blocks[b] == MODEL_BLOCK_MOE
                                          ? block_grad_params(g, blocks[b], g->sh.ft, true) : 0,
                  .expert_bytes = blocks[b] == MODEL_BLOCK_MOE
                                      ? (double)block_grad_params(g, blocks[b], full, true) *
                                            g->wbytes
                                      : 0,
                  .weight_bytes = bytes};
        if (blocks[b] == MODEL_BLOCK_EMBED) {
            u.act = model_embed_activation_bytes(&g->model, &g->sh);
            g->units[0] = u;
        } else if (blocks[b] == MODEL_BLOCK_HEAD) {
            u.act = model_head_activation_bytes(&g->model, &g->sh);
            g->units[L + 1] = u;
        } else {
            /* MoE layers: activation bytes for the expected (uniform) routing: the rank's
             * experts process T·top_k tokens. Layer l recomputes when (l + 1) is a multiple
             * of recompute_every; full and per-op recompute rebuild, while the layer's
             * backward runs, what the layer without recompute would keep. */
            bool is_moe = blocks[b] == MODEL_BLOCK_MOE;
            double tokens = (double)g->sh.micro_batch * (double)g->sh.seq_len / g->cp *
                            (moe ? g->model.moe.top_k : 0);
            for (int l = 0; l < L; l++) {
                bool layer_moe = moe && l >= g->model.moe.dense_layers;
                if (layer_moe != is_moe)
                    continue;
                model_recompute rc = (l + 1) % sc->training.recompute_every == 0
                                         ? sc->training.recompute
                                         : MODEL_RECOMPUTE_NONE;
                u.layer = l;
                u.rc = rc;
                u.act = layer_act_bytes(g, is_moe, rc, tokens);
                u.act_extra = rc == MODEL_RECOMPUTE_FULL || rc == MODEL_RECOMPUTE_OP
                                  ? layer_act_bytes(g, is_moe, MODEL_RECOMPUTE_NONE, tokens) -
                                        u.act
                                  : 0;
                g->units[1 + l] = u;
            }
        }
    }
    bool ds = g->zero == 3 && sc->parallel.fsdp.implementation == PLAN_DEEPSPEED;
    for (int i = 0; i < g->n_units; i++) {
        unit *u = &g->units[i];
        model_op_list ops;
        model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_FWD, &ops);
        for (int k = 0; k < ops.n; k++)
            if (ops.op[k].weight_cast) { /* a weight cast's FLOPs are its k x n elements */
                u->fp8_weights += ops.op[k].flops;
                if (plan__is_expert(ops.op[k].name))
                    u->fp8_expert_weights += ops.op[k].flops;
            }
        model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_BWD, &ops);
        u->has_bwd = ops.n > 0;
        if (ds) {
            u->persist = SIM_MIN(plan__ds_persistent(g, u->blk), u->params);
            u->persist_bytes = SIM_MIN((double)u->persist * g->wbytes, u->weight_bytes);
        }
    }
}

/* Stage 1: the generator's view of the scenario: the model (vocabulary padded), the shape
 * of a micro-batch, bytes per weight and gradient, the pipeline's chunks. */
void plan__init_gen(gen *g, plan *p, bool sharing)
{
    const plan_scenario *sc = p->sc;
    *g = (gen){.p = p, .sc = sc, .sharing = sharing, .zero = sc->parallel.zero,
               .A = p->accum_steps, .model = sc->model, .tp = sc->parallel.tp,
               .sp = sc->parallel.sp, .cp = sc->parallel.cp};
    /* Megatron pads the vocabulary to a multiple of 128 x tp (make-vocab-size-divisible-by) */
    if (g->tp > 1) {
        int64_t multiple = 128 * (int64_t)g->tp;
        g->model.vocab = (g->model.vocab + multiple - 1) / multiple * multiple;
    }
    g->sh = (model_shape){.micro_batch = sc->training.micro_batch,
                          .seq_len = sc->training.seq_len,
                          .tp = sc->parallel.tp,
                          .sp = sc->parallel.sp,
                          .cp = sc->parallel.cp,
                          .dtype = sc->training.precision,
                          .flash_attention = sc->training.flash_attention,
                          .eager = !sc->training.compile,
                          .composite_norm = plan_composite_norm(&sc->training),
                          .fused_loss = sc->training.cross_entropy == PLAN_CE_COMPILED,
                          .fp8_current = sc->training.precision == HW_DTYPE_FP8 &&
                                         sc->training.fp8_recipe == PLAN_FP8_CURRENT,
                          .sp_dtensor = sc->parallel.sp &&
                                        sc->parallel.sp_implementation == PLAN_SP_DTENSOR,
                          .ft = plan__finetune_of(&sc->training)};
    g->wbytes =
        sc->training.precision == HW_DTYPE_FP8 ? 2 : hw_dtype_bytes(sc->training.precision);
    g->gbytes = hw_dtype_bytes(sc->training.grad_dtype);
    int pp = sc->parallel.pp;
    g->pp = pp;
    plan_schedule sched = sc->parallel.pipeline.schedule;
    g->vstages = pp > 1 ? plan_pp_stage_chunks(sched, sc->parallel.pipeline.virtual_stages) : 1;
    g->chunks = pp > 1 ? plan_pp_chunks(sched, pp, g->vstages) : 1;
    g->pp_slots = g->chunks * (pp > 1 && sched == PLAN_SCHED_DUALPIPE ? 2 : 1);
}

/* Stage 2: refuses the combinations the generator cannot build, and sets the expert layout
 * and whether FSDP shards within a node (hybrid). */
static int check_strategy(gen *g, sim_diag *diag)
{
    const plan_scenario *sc = g->sc;
    int dp = sc->parallel.dp, pp = sc->parallel.pp;
    if (g->chunks > sc->model.layers)
        return sim_diag_error(diag, "scenario", 0, 0,
                              "%d pipeline chunks (pp %d x virtual_stages %d) for %d layers",
                              g->chunks, pp, g->vstages, sc->model.layers);
    if (pp > 1 && g->vstages > 1 && sc->parallel.pipeline.schedule == PLAN_SCHED_INTERLEAVED &&
        g->A % pp != 0)
        return sim_diag_error(diag, "scenario", 0, 0,
                              "the interleaved schedule needs the micro-batches per pipeline "
                              "(%lld) to be a multiple of pp (%d)", (long long)g->A, pp);
    if (pp > 1 && sc->parallel.pipeline.schedule == PLAN_SCHED_ZBV && (g->zero == 3 || g->cp > 1))
        return sim_diag_error(diag, "scenario", 0, 0,
                              "zbv with neither ZeRO-3 nor context parallelism");
    if (pp > 1 && sc->parallel.pipeline.schedule == PLAN_SCHED_DUALPIPE &&
        (pp % 2 != 0 || g->A % 2 != 0 || g->A < 2 * pp || g->zero == 3 || g->cp > 1))
        return sim_diag_error(diag, "scenario", 0, 0,
                              "dualpipe needs an even pp (%d), an even number of micro-batches "
                              "per pipeline of at least 2 x pp (%lld), and neither ZeRO-3 nor "
                              "context parallelism", pp, (long long)g->A);
    g->ep = sc->parallel.ep;
    g->n_local = g->model.moe.experts > 0 ? g->model.moe.experts / g->ep : 0;
    g->sh.ep = g->ep;
    g->hybrid = g->zero == 3 && sc->parallel.fsdp.hybrid_shard && dp * g->cp > 1;
    return 0;
}

/* Stage 3 (optimizer offload): per rank, the ranks staging in the same host memory; an error
 * when a GPU reaches none. */
static int count_mem_sharers(gen *g, sim_diag *diag)
{
    const plan *p = g->p;
    int n = p->n_ranks;
    g->mem_sharers = sim_calloc((size_t)n, sizeof *g->mem_sharers);
    const plan_parallel *par = &g->sc->parallel;
    bool any = par->offload.optimizer != PLAN_OFFLOAD_NONE ||
               par->offload.params != PLAN_OFFLOAD_NONE ||
               par->offload.activations != PLAN_OFFLOAD_NONE;
    for (int r = 0; r < n && any; r++)
        if (hw_topo_host_memory(p->topo, r) < 0)
            return sim_diag_error(diag, "scenario", 0, 0,
                                  "parallel.offload needs host memory, and GPU %d reaches none "
                                  "in topology '%s'", r, g->sc->topology.name);
    for (int r = 0; r < n; r++)
        if ((par->offload.optimizer == PLAN_OFFLOAD_NVME ||
             par->offload.params == PLAN_OFFLOAD_NVME) && hw_topo_storage(p->topo, r) < 0)
            return sim_diag_error(diag, "scenario", 0, 0,
                                  "offload to nvme needs an NVMe drive that reaches each GPU's "
                                  "host memory, and GPU %d has none in topology '%s' (add "
                                  "node.storage: {kind: nvme, count: N}, or link a storage "
                                  "device to a cpu)",
                                  r, g->sc->topology.name);
    if (par->offload.optimizer == PLAN_OFFLOAD_NONE)
        return 0;
    for (int r = 0; r < n; r++) {
        int mem = hw_topo_host_memory(p->topo, r);
        for (int q = 0; q < n; q++)
            g->mem_sharers[r] += hw_topo_host_memory(p->topo, q) == mem;
    }
    return 0;
}

/* Stage 4: the units (embedding, layers, head), their split into pipeline chunks (the
 * embedding with chunk 0, the head with the last), and the per-group collective sequences. */
static void build_layout(gen *g)
{
    const plan_scenario *sc = g->sc;
    g->seq = sim_calloc(g->t->n_groups, sizeof *g->seq);
    g->seq_pos = sim_calloc(g->t->n_groups, sizeof *g->seq_pos);
    plan__build_units(g);
    g->act_fetch = sim_calloc((size_t)g->n_units + 1, sizeof *g->act_fetch);
    g->act_fetch_mb = sim_calloc((size_t)g->n_units + 1, sizeof *g->act_fetch_mb);
    g->wcast_done = sim_calloc((size_t)g->n_units + 1, sizeof *g->wcast_done);
    g->cp_kv = model_cp_kv_bytes(&g->model, &g->sh);
    g->gather_of = sim_calloc((size_t)g->n_units + 1, sizeof *g->gather_of);
    int C = g->chunks;
    g->chunk_first = sim_calloc((size_t)C + 1, sizeof *g->chunk_first);
    int *layers = sim_calloc((size_t)C, sizeof *layers);
    if (sc->parallel.pipeline.n_stage_layers == C)
        for (int c = 0; c < C; c++)
            layers[c] = sc->parallel.pipeline.stage_layers[c];
    else
        plan_pp_partition(sc->model.layers, C, layers);
    g->chunk_first[0] = 0;
    for (int c = 0; c < C; c++)
        g->chunk_first[c + 1] = g->chunk_first[c] + layers[c] + (c == 0 ? 1 : 0);
    g->chunk_first[C] = g->n_units; /* the head joins the last chunk */
    sim_free(layers);
    g->mine = sim_calloc((size_t)g->n_units, sizeof *g->mine);
    /* ZB-V's order comes from the whole pipeline at once: built once, read by each stage */
    if (g->pp > 1 && sc->parallel.pipeline.schedule == PLAN_SCHED_ZBV) {
        int m = (int)g->A;
        g->pp_all = sim_calloc((size_t)g->pp * (size_t)PLAN_PP_ACTIONS(m, g->vstages),
                               sizeof *g->pp_all);
        g->pp_n = sim_calloc((size_t)g->pp, sizeof *g->pp_n);
        plan_pp_schedule_all(PLAN_SCHED_ZBV, g->pp, g->vstages, m, g->pp_all, g->pp_n);
    }
}

/* Stage 5: room for the MoE routing, one draw per EP group (none for a dense model). */
static void alloc_routing(gen *g)
{
    size_t per_block = (size_t)g->model.layers * (size_t)g->A;
    int n_blocks = g->n_local > 0 ? g->cp * g->sc->parallel.dp / g->ep : 0;
    g->route = sim_calloc(per_block * (size_t)g->n_local, sizeof *g->route);
    g->moe_drawn = sim_calloc((size_t)n_blocks, sizeof *g->moe_drawn);
    g->moe_counts = sim_calloc((size_t)n_blocks * per_block * (size_t)g->model.moe.experts,
                               sizeof *g->moe_counts);
    g->moe_sent = sim_calloc((size_t)n_blocks * per_block, sizeof *g->moe_sent);
}

/* Stage 6, one rank: its groups, units and persistent memory; then its ops, borrowed from an
 * identical rank's template when plan/share.c finds one, else generated by the strategy
 * (pipeline, FSDP, or bucketed DDP/ZeRO-1/2). Streaming walks the rank at once. */
static void gen_rank(gen *g, plan_share *share, int r, bool stream)
{
    plan *p = g->p;
    int dp = g->sc->parallel.dp, pp = g->pp;
    plan__groups_select(g, r);
    for (int u = 0; u < g->n_units; u++)
        g->mine[u] = false;
    for (int k = 0; k < g->vstages; k++) {
        int c = pp > 1 ? plan_pp_chunk_of(g->sc->parallel.pipeline.schedule, pp, g->stage, k)
                       : 0;
        for (int u = g->chunk_first[c]; u < g->chunk_first[c + 1]; u++)
            g->mine[u] = true;
    }
    memset(g->seq_pos, 0, g->t->n_groups * sizeof *g->seq_pos);
    for (int u = 0; u < g->n_units; u++) {
        g->act_fetch_mb[u] = -1;
        g->wcast_done[u] = false;
    }
    plan__persistent(g, &p->mem[r]);
    memcpy(g->t->ranks[r].base_mem, p->mem[r].bytes, sizeof g->t->ranks[r].base_mem);
    if (plan__share_clone(g, share, r)) {
        if (stream) {
            p->trace = g->t;
            plan__walk_rank(p, r);
            trace_release_rank(g->t, r);
        }
        return;
    }
    if (g->n_local > 0)
        plan__route_tokens(g, p->coords[r].c[PLAN_GROUP_CP] * (dp / g->ep) +
                            p->coords[r].c[PLAN_GROUP_DP] / g->ep,
                     p->coords[r].c[PLAN_GROUP_EP]);
    g->have_last_coll = false;
    g->have_pending = false;
    g->defer_pending = false;
    g->have_held = false;
    g->have_gather = false;
    g->have_compute = false;
    g->fill = 0;
    g->n_deferred = 0;
    double mf = g->model_flops, hf = g->hardware_flops;
    if (pp > 1)
        plan__gen_pipeline(g);
    else if (plan__gathers_weights(g))
        plan__gen_fsdp(g);
    else
        gen_bucketed(g);
    share->model_flops[r] = g->model_flops - mf;
    share->hardware_flops[r] = g->hardware_flops - hf;
    if (stream || share->users[r] > 0)
        trace_finish_rank(g->t, r);
    plan__share_template_done(g, share, r);
    plan__share_adopt(g, share, r);
    if (stream) {
        p->trace = g->t;
        plan__walk_rank(p, r);
        /* a template stays until the end: later ranks borrow its ops */
        if (share->users[r] == 0)
            trace_release_rank(g->t, r);
    }
}

/* Stage 7: the plan takes the trace, the step's FLOPs and the MoE statistics. */
static void publish(gen *g, bool stream)
{
    plan *p = g->p;
    if (!stream)
        trace_finish(g->t);
    p->trace = g->t;
    p->model_flops_per_step = g->model_flops;
    p->hardware_flops_per_step = g->hardware_flops;
    p->moe = g->n_local > 0;
    if (g->moe_draws > 0) {
        p->moe_dropped_fraction = g->moe_dropped / g->moe_assigned;
        p->moe_load_max_over_mean = g->moe_imbalance_sum / g->moe_draws;
    }
}

/* Stage 8: frees the generator's state (the trace now belongs to the plan). */
static void free_gen(gen *g)
{
    for (size_t i = 0; i < g->t->n_groups; i++)
        sim_free(g->seq[i].ids);
    sim_free(g->seq);
    sim_free(g->seq_pos);
    sim_free(g->units);
    sim_free(g->deferred);
    sim_free(g->mem_sharers);
    sim_free(g->act_fetch);
    sim_free(g->act_fetch_mb);
    sim_free(g->wcast_done);
    plan__groups_destroy(g);
    sim_free(g->route);
    sim_free(g->moe_drawn);
    sim_free(g->moe_counts);
    sim_free(g->moe_sent);
    sim_free(g->chunk_first);
    sim_free(g->mine);
    sim_free(g->gather_of);
    sim_free(g->pp_all);
    sim_free(g->pp_n);
}

int plan__dp_trace(plan *p, bool stream, bool sharing, sim_diag *diag)
{
    gen g;
    plan__init_gen(&g, p, sharing);
    int rc = check_strategy(&g, diag);
    if (rc != 0)
        return rc;
    rc = plan__groups_create(&g, diag);
    if (rc == 0)
        rc = count_mem_sharers(&g, diag);
    if (rc != 0)
        goto fail;
    build_layout(&g);
    alloc_routing(&g);
    p->mem = sim_calloc((size_t)p->n_ranks, sizeof *p->mem);
    p->host_bytes = sim_calloc((size_t)p->n_ranks, sizeof *p->host_bytes);
    plan_share share;
    plan__share_init(&g, &share, stream);
    for (int r = 0; r < p->n_ranks; r++)
        gen_rank(&g, &share, r, stream);
    plan__share_clear(&share);
    publish(&g, stream);
    free_gen(&g);
    SIM_ASSERT(stream || trace__check(p->trace) == 0, "generated trace is inconsistent");
    return 0;
fail:
    sim_free(g.mem_sharers);
    trace_destroy(g.t);
    plan__groups_destroy(&g);
    return rc;
}
