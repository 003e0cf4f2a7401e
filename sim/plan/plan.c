/* Rank layout, static memory plan and trace generation (see plan.h).
 *
 * Trace of one step on each data-parallel rank (DDP, PyTorch semantics):
 *   for each of the A = global_batch / (micro_batch x dp) micro-batches:
 *     forward: embedding, layers 0..L-1, head (final norm, LM head, loss)
 *     backward: head, layers L-1..0 (each preceded by its recomputation when activation
 *               recompute is on), embedding
 *   gradients are all-reduced over the dp group only after the last micro-batch
 *   (no_sync() on the others); buckets of `parallel.ddp.bucket` bytes are filled in
 *   backward order and each bucket's all-reduce is issued on the dp stream as soon as its
 *   last gradient is produced (overlap: true) or after the whole backward (overlap: false);
 *   the optimizer step (one fused kernel per block) then waits for the last all-reduce. */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "plan/plan.h"

_Static_assert(TRACE_GROUP_CLASSES == PLAN_GROUP_COUNT, "trace and plan group classes");

void plan_rank_coord(const plan_parallel *par, int rank, plan_coord *out)
{
    int deg[PLAN_GROUP_COUNT] = {par->dp, par->tp, par->pp, 1, par->cp};
    memset(out, 0, sizeof *out);
    int rest = rank;
    for (int i = 0; i < PLAN_GROUP_COUNT; i++) {
        plan_group_class g = par->order[i];
        if (g == PLAN_GROUP_EP)
            continue; /* ep does not multiply the GPU count (DESIGN.md §6) */
        out->c[g] = rest % deg[g];
        rest /= deg[g];
    }
    out->c[PLAN_GROUP_EP] = out->c[PLAN_GROUP_DP] % par->ep;
}

/* ---- memory ------------------------------------------------------------------------ */

static double state_bytes(plan_state_dtype d)
{
    switch (d) {
    case PLAN_STATE_FP32: return 4;
    case PLAN_STATE_BF16: return 2;
    case PLAN_STATE_INT8: return 1 + 4.0 / 2048; /* 8-bit Adam: fp32 scale per 2048 block */
    }
    SIM_ASSERT(0, "state dtype %d", (int)d);
}

/* Weights are held in 16 bits for bf16/fp16 and also for fp8 (which casts per GEMM). */
static int weight_bytes(const plan_training *t)
{
    return t->precision == HW_DTYPE_FP8 ? 2 : hw_dtype_bytes(t->precision);
}

static int optimizer_states(const plan_training *t)
{
    return t->optimizer == PLAN_OPT_ADAM ? 2 : 1; /* Adam m and v; SGD momentum */
}

static void plan_memory(plan *p)
{
    const plan_scenario *sc = p->sc;
    const plan_training *t = &sc->training;
    model_params mp;
    model_count_params(&sc->model, &mp);
    double P = (double)mp.total;

    model_shape sh = {.micro_batch = t->micro_batch, .seq_len = t->seq_len, .tp = sc->parallel.tp,
                      .sp = sc->parallel.sp, .dtype = t->precision,
                      .flash_attention = t->flash_attention};
    double act = sc->model.layers * model_layer_activation_bytes(&sc->model, &sh, t->recompute) +
                 model_embed_activation_bytes(&sc->model, &sh) +
                 model_head_activation_bytes(&sc->model, &sh);
    if (t->recompute == MODEL_RECOMPUTE_FULL)
        /* one layer's activations are rebuilt at a time during backward */
        act += model_layer_activation_bytes(&sc->model, &sh, MODEL_RECOMPUTE_NONE);

    double grad_b = hw_dtype_bytes(t->grad_dtype);
    double opt = optimizer_states(t) * state_bytes(t->optimizer_state);
    if (t->master_weights == PLAN_MASTER_FP32)
        opt += 4;

    /* DDP communication buffers: two buckets in flight (one being filled, one being
     * reduced), gradients otherwise viewed in place (gradient_as_bucket_view / Megatron's
     * contiguous buffer). */
    double buffers = 0;
    if (sc->parallel.dp > 1)
        buffers = SIM_MIN(2.0 * (double)sc->parallel.ddp.bucket_bytes, P * grad_b);

    plan_mem m = {.total = 0};
    m.bytes[PLAN_MEM_PARAMS] = (int64_t)(P * weight_bytes(t));
    m.bytes[PLAN_MEM_GRADS] = (int64_t)(P * grad_b);
    m.bytes[PLAN_MEM_OPTIMIZER] = (int64_t)(P * opt + 0.5);
    m.bytes[PLAN_MEM_ACTIVATIONS] = (int64_t)(act + 0.5);
    m.bytes[PLAN_MEM_BUFFERS] = (int64_t)buffers;
    m.bytes[PLAN_MEM_OTHER] = 0;
    for (int c = 0; c < PLAN_MEM_COUNT; c++)
        m.total += m.bytes[c];

    p->mem = sim_calloc((size_t)p->n_ranks, sizeof *p->mem);
    for (int r = 0; r < p->n_ranks; r++)
        p->mem[r] = m;
    p->capacity_bytes = sc->topology.gpu.memory_bytes;
    p->oom = m.total > p->capacity_bytes;
    p->binding_constraint = NULL;
    if (p->oom) {
        int64_t states = m.bytes[PLAN_MEM_PARAMS] + m.bytes[PLAN_MEM_GRADS] +
                         m.bytes[PLAN_MEM_OPTIMIZER];
        int64_t acts = m.bytes[PLAN_MEM_ACTIVATIONS];
        int64_t bufs = m.bytes[PLAN_MEM_BUFFERS] + m.bytes[PLAN_MEM_OTHER];
        if (states >= acts && states >= bufs)
            p->binding_constraint = "model_states";
        else if (acts >= bufs)
            p->binding_constraint = "activations";
        else
            p->binding_constraint = "buffers";
    }
}

/* ---- trace generation -------------------------------------------------------------- */

typedef struct gen {
    plan *p;
    trace *t;
    model_shape sh;
    int rank;
    uint32_t dp_group;
    /* gradient bucketing of the last micro-batch */
    bool bucketing;
    double bucket_fill;   /* bytes in the open bucket */
    int bucket_index;
    uint32_t *bucket_coll; /* collective instance per bucket, shared by all ranks */
    size_t n_bucket_coll, cap_bucket_coll;
    double *closed;        /* sizes of the buckets closed during backward (overlap: false) */
    size_t n_closed, cap_closed;
    uint32_t last_allreduce;
    bool have_allreduce;
    double model_flops, hardware_flops;
} gen;

static uint32_t add_compute(gen *g, const model_op *mo, trace_phase phase, int layer, int mb,
                            bool recompute)
{
    char name[96];
    snprintf(name, sizeof name, "%s%s", recompute ? "recompute." : "", mo->name);
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = (uint8_t)phase,
        .cls = (uint8_t)mo->cls,
        .dtype = (uint8_t)g->sh.dtype,
        .recompute = recompute,
        .layer = layer,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .flops = mo->flops,
        .model_flops = mo->model_flops,
        .bytes = mo->bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    if (!recompute)
        g->model_flops += mo->model_flops;
    g->hardware_flops += mo->model_flops;
    return trace_add_op(g->t, g->rank, &op, NULL, 0);
}

static uint32_t add_allreduce(gen *g, double bytes, uint32_t dep)
{
    size_t b = (size_t)g->bucket_index++;
    if (b >= g->n_bucket_coll) {
        SIM_GROW(g->bucket_coll, g->cap_bucket_coll, b + 1);
        g->bucket_coll[b] = trace_add_coll(g->t, COLL_ALL_REDUCE,
                                           g->p->sc->collectives[PLAN_GROUP_DP], g->dp_group,
                                           bytes, 0);
        g->n_bucket_coll = b + 1;
    }
    char name[32];
    snprintf(name, sizeof name, "grad_bucket%zu", b);
    trace_op op = {
        .kind = TRACE_OP_COLL,
        .stream = TRACE_STREAM_COMM(PLAN_GROUP_DP),
        .phase = TRACE_PHASE_COMM,
        .layer = TRACE_NO_LAYER,
        .microbatch = TRACE_NO_MICROBATCH,
        .name = trace_intern(g->t, name),
        .coll = g->bucket_coll[b],
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    g->last_allreduce = trace_add_op(g->t, g->rank, &op, &dep, 1);
    g->have_allreduce = true;
    return g->last_allreduce;
}

/* Runs one block's kernels; wgrad kernels of the last micro-batch feed the buckets. */
static void emit_block(gen *g, model_block blk, model_phase ph, int layer, int mb,
                       bool recompute_only_attn, bool recompute)
{
    model_op_list ops;
    model_block_ops(&g->p->sc->model, &g->sh, blk, ph, &ops);
    double grad_b = hw_dtype_bytes(g->p->sc->training.grad_dtype);
    for (int i = 0; i < ops.n; i++) {
        const model_op *mo = &ops.op[i];
        if (recompute_only_attn && !mo->attn_core)
            continue;
        trace_phase phase = ph == MODEL_PHASE_FWD && !recompute ? TRACE_PHASE_FWD
                                                                : TRACE_PHASE_BWD;
        uint32_t idx = add_compute(g, mo, phase, layer, mb, recompute);
        if (!g->bucketing || mo->grad_params <= 0)
            continue;
        g->bucket_fill += (double)mo->grad_params * grad_b;
        if (g->bucket_fill >= (double)g->p->sc->parallel.ddp.bucket_bytes) {
            if (g->p->sc->parallel.ddp.overlap) {
                add_allreduce(g, g->bucket_fill, idx);
            } else {
                SIM_GROW(g->closed, g->cap_closed, g->n_closed + 1);
                g->closed[g->n_closed++] = g->bucket_fill;
            }
            g->bucket_fill = 0;
        }
    }
}

static void emit_layer_backward(gen *g, int layer, int mb)
{
    model_recompute rc = g->p->sc->training.recompute;
    if (rc == MODEL_RECOMPUTE_FULL)
        emit_block(g, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, layer, mb, false, true);
    else if (rc == MODEL_RECOMPUTE_SELECTIVE)
        emit_block(g, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, layer, mb, true, true);
    emit_block(g, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, layer, mb, false, false);
}

/* One fused optimizer kernel over `params` parameters. Bytes per parameter: read the
 * gradient twice (global-norm clipping, then the update), read and write the 16-bit
 * weights, the fp32 master copy and every optimizer state. */
static uint32_t add_optimizer(gen *g, const char *name, int layer, int64_t params,
                              const uint32_t *deps, size_t n_deps)
{
    const plan_training *t = &g->p->sc->training;
    double per = 2.0 * hw_dtype_bytes(t->grad_dtype) + 2.0 * weight_bytes(t) +
                 2.0 * optimizer_states(t) * state_bytes(t->optimizer_state);
    if (t->master_weights == PLAN_MASTER_FP32)
        per += 8;
    /* Adam: ~12 FLOPs per parameter (moments, bias correction, sqrt, divide, decay);
     * momentum SGD ~4. Memory-bound either way. */
    double flops_per = t->optimizer == PLAN_OPT_ADAM ? 12 : 4;
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = TRACE_PHASE_OPT,
        .cls = HW_OP_VECTOR,
        .dtype = HW_DTYPE_FP32,
        .layer = layer,
        .microbatch = TRACE_NO_MICROBATCH,
        .name = trace_intern(g->t, name),
        .flops = flops_per * (double)params,
        .bytes = per * (double)params,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    return trace_add_op(g->t, g->rank, &op, deps, n_deps);
}

static void gen_rank(gen *g)
{
    const plan_scenario *sc = g->p->sc;
    int L = sc->model.layers;
    int64_t A = g->p->accum_steps;
    g->bucket_index = 0;
    g->bucket_fill = 0;
    g->n_closed = 0;
    g->have_allreduce = false;
    uint32_t last_bwd = 0;
    for (int64_t mb = 0; mb < A; mb++) {
        int m = (int)mb;
        g->bucketing = sc->parallel.dp > 1 && mb == A - 1;
        emit_block(g, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, TRACE_NO_LAYER, m, false, false);
        for (int l = 0; l < L; l++)
            emit_block(g, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, l, m, false, false);
        emit_block(g, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, TRACE_NO_LAYER, m, false, false);
        emit_block(g, MODEL_BLOCK_HEAD, MODEL_PHASE_BWD, TRACE_NO_LAYER, m, false, false);
        for (int l = L - 1; l >= 0; l--)
            emit_layer_backward(g, l, m);
        emit_block(g, MODEL_BLOCK_EMBED, MODEL_PHASE_BWD, TRACE_NO_LAYER, m, false, false);
        last_bwd = (uint32_t)g->t->ranks[g->rank].n_ops - 1;
    }
    if (sc->parallel.dp > 1) {
        /* Without overlap every bucket waits for the end of backward; with it, only the
         * last, partly filled one does. */
        for (size_t b = 0; b < g->n_closed; b++)
            add_allreduce(g, g->closed[b], last_bwd);
        if (g->bucket_fill > 0)
            add_allreduce(g, g->bucket_fill, last_bwd);
    }
    uint32_t deps[2] = {last_bwd, 0};
    size_t n_deps = 1;
    if (g->have_allreduce)
        deps[n_deps++] = g->last_allreduce;
    model_params mp;
    model_count_params(&sc->model, &mp);
    add_optimizer(g, "optimizer.embed", TRACE_NO_LAYER, mp.embedding, deps, n_deps);
    for (int l = 0; l < L; l++)
        add_optimizer(g, "optimizer.layer", l, mp.per_layer, deps, n_deps);
    add_optimizer(g, "optimizer.head", TRACE_NO_LAYER, mp.final_norm + mp.head, deps, n_deps);
}

static void plan_trace(plan *p)
{
    const plan_scenario *sc = p->sc;
    gen g = {.p = p};
    g.t = trace_create(p->n_ranks);
    g.sh = (model_shape){.micro_batch = sc->training.micro_batch,
                         .seq_len = sc->training.seq_len,
                         .tp = sc->parallel.tp,
                         .sp = sc->parallel.sp,
                         .dtype = sc->training.precision,
                         .flash_attention = sc->training.flash_attention};
    int32_t *members = sim_calloc((size_t)p->n_ranks, sizeof *members);
    for (int r = 0; r < p->n_ranks; r++)
        members[r] = r; /* DDP only: one dp group of every rank, in dp order */
    g.dp_group = trace_add_group(g.t, PLAN_GROUP_DP, p->n_ranks, members);
    sim_free(members);
    for (int r = 0; r < p->n_ranks; r++) {
        g.rank = r;
        gen_rank(&g);
    }
    sim_free(g.bucket_coll);
    sim_free(g.closed);
    p->trace = g.t;
    p->model_flops_per_step = g.model_flops;
    p->hardware_flops_per_step = g.hardware_flops;
    SIM_ASSERT(trace__check(p->trace) == 0, "generated trace is inconsistent");
}

int plan_create(const plan_scenario *sc, bool with_trace, plan **out, sim_diag *diag)
{
    const plan_parallel *par = &sc->parallel;
    hw_topo *topo = NULL;
    int rc = hw_topo_create(&sc->topology, &topo, diag);
    if (rc != 0)
        return rc;
    int n = par->tp * par->cp * par->pp * par->dp;
    int have = hw_topo_gpu_count(topo);
    if (n > have)
        rc = sim_diag_error(diag, "scenario", 0, 0,
                            "the parallel layout needs %d GPUs but topology '%s' has %d", n,
                            sc->topology.name, have);
    else if (par->tp != 1 || par->pp != 1 || par->cp != 1 || par->ep != 1 || par->zero != 0)
        rc = sim_diag_error_code(diag, SIM_ENOTSUP, "scenario", 0, 0,
                                 "only single-GPU and DDP plans are supported yet");
    int64_t gb = sc->training.global_batch;
    if (gb == 0)
        gb = sc->training.micro_batch * par->dp;
    if (rc == 0 && gb % (sc->training.micro_batch * par->dp) != 0)
        rc = sim_diag_error(diag, "scenario", 0, 0,
                            "global_batch %lld is not a multiple of micro_batch x dp = %lld",
                            (long long)gb, (long long)(sc->training.micro_batch * par->dp));
    if (rc != 0) {
        hw_topo_destroy(topo);
        return rc;
    }

    plan *p = sim_calloc(1, sizeof *p);
    p->sc = sc;
    p->n_ranks = n;
    p->topology_gpus = have;
    p->topo = topo;
    p->global_batch = gb;
    p->accum_steps = gb / (sc->training.micro_batch * par->dp);
    p->coords = sim_calloc((size_t)n, sizeof *p->coords);
    for (int r = 0; r < n; r++) {
        plan_rank_coord(par, r, &p->coords[r]);
        p->coords[r].node = hw_topo_device(topo, hw_topo_gpu_device(topo, r))->node;
    }
    plan_memory(p);
    if (with_trace)
        plan_trace(p);
    *out = p;
    return 0;
}

void plan_destroy(plan *p)
{
    if (!p)
        return;
    trace_destroy(p->trace);
    hw_topo_destroy(p->topo);
    sim_free(p->coords);
    sim_free(p->mem);
    sim_free(p);
}
