/* ZeRO-3 / FSDP as its implementations run it (docs/strategies.md, "FSDP"): per micro-batch,
 * each unit gathered before its forward and, resharded, again before its backward, a window
 * of gathers ahead (prefetch units, FSDP1's rate limiter, DeepSpeed's prefetch bucket); its
 * gradients reduce-scattered after its backward (DeepSpeed: by reduce bucket), all-reduced
 * across replicas under hybrid sharding; FSDP2's copies in and out of the collective
 * buffers; DeepSpeed's persistent small tensors; parameter shards fetched from host memory
 * under parameter offload. */
#include "core/sim.h"

#include "plan/gen-internal.h"

/* DeepSpeed ZeRO-3 keeps whole, on every rank, each parameter tensor of at most
 * persistence_threshold elements (stage3_param_persistence_threshold): the tensors as
 * Hugging Face's modules hold them, this rank's tensor-parallel slice of each: per layer the
 * norms' weights (and LayerNorm biases), q/k norms, the q, k, v, o, gate, up and down matrices
 * and their biases; the final norm in the head. MLA layers' own matrices, LoRA adapters and
 * QLoRA's base matrices are counted as gathered. */
int64_t plan__ds_persistent(const gen *g, model_block blk)
{
    const model_spec *m = &g->model;
    double thr = g->sc->parallel.fsdp.persistence_threshold;
    int64_t h = m->hidden, t = g->sc->parallel.tp, sum = 0;
    int64_t norm_tensors = m->norm == MODEL_NORM_LAYERNORM ? 2 : 1;
#define KEEP(numel, count)                                                                     \
    do {                                                                                       \
        if ((double)(numel) <= thr)                                                            \
            sum += (int64_t)(count) * (numel);                                                 \
    } while (0)
    if (blk == MODEL_BLOCK_HEAD) {
        KEEP(h, norm_tensors);
        return sum;
    }
    if (blk != MODEL_BLOCK_LAYER)
        return 0;
    KEEP(h, 2 * norm_tensors);
    if (m->attention.kind == MODEL_ATTN_MLA)
        return sum;
    int64_t heads = m->heads, kvh = m->kv_heads ? m->kv_heads : heads;
    int64_t d = m->head_dim ? m->head_dim : h / heads;
    int64_t q = heads / t * d, kv = (kvh >= t ? kvh / t : 1) * d, f = m->ffn / t;
    int64_t ups = m->activation == MODEL_ACT_SWIGLU ? 2 : 1;
    if (m->qk_norm)
        KEEP(d, 2);
    if (m->bias) {
        KEEP(q, 1);
        KEEP(kv, 2);
        KEEP(h, 2); /* o and down: row-parallel, whole on every TP rank */
        KEEP(f, ups);
    }
    if (g->sh.ft.method == MODEL_FT_FULL) {
        KEEP(h * q, 2); /* q and o */
        KEEP(h * kv, 2);
        KEEP(h * f, ups + 1);
    }
#undef KEEP
    return sum;
}

/* The last position (in the pass's unit order `ord`) whose gather may be in flight while
 * the unit at `pos` computes: `prefetch` units ahead (FSDP1's rate limiter keeps two gathers
 * in flight: at most one ahead); DeepSpeed gathers ahead until its prefetch bucket holds
 * prefetch_bucket parameters, the unit that crosses it included. */
static int gather_reach(const gen *g, const int *ord, int pos)
{
    const plan_parallel *par = &g->sc->parallel;
    int U = g->n_units;
    if (par->fsdp.implementation != PLAN_DEEPSPEED) {
        int k = par->fsdp.prefetch;
        if (par->fsdp.implementation == PLAN_FSDP1 && par->fsdp.limit_all_gathers)
            k = SIM_MIN(k, 1);
        return SIM_MIN(pos + k, U - 1);
    }
    double sum = 0;
    int j = pos;
    while (j + 1 < U && sum < par->fsdp.prefetch_bucket) {
        j++;
        sum += (double)(g->units[ord[j]].params - g->units[ord[j]].persist);
    }
    return j;
}

/* The unit's bytes that are gathered: all but DeepSpeed's persistent parameters. */
static double gathered_bytes(const unit *u)
{
    return u->weight_bytes - u->persist_bytes;
}

static bool has_gather(const unit *u)
{
    return gathered_bytes(u) > 0;
}

/* A memory-bound copy of FSDP2 (or FSDP1's gradient cast) on the compute stream. */
static uint32_t fsdp_copy(gen *g, const char *name, trace_phase ph, int layer, int mb,
                          double bytes, uint32_t dep)
{
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = (uint8_t)ph,
        .cls = HW_OP_VECTOR,
        .dtype = HW_DTYPE_FP32,
        .layer = layer,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    return trace_add_op(g->t, g->rank, &op, &dep, 1);
}

/* parallel.offload.params: a unit's 16-bit shard copied from host memory (`bytes`) into a
 * staging buffer, on the offload stream, when its gather is issued (after `after`, when
 * `have`). Returns the copy. */
static uint32_t fetch_shard(gen *g, int layer, int m, double bytes, uint32_t after, bool have)
{
    trace_op op = {
        .kind = TRACE_OP_COPY,
        .stream = TRACE_STREAM_OFFLOAD,
        .phase = TRACE_PHASE_COMM,
        .to_host = false,
        .layer = layer,
        .microbatch = m,
        .name = trace_intern(g->t, "offload.fetch_params"),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    uint32_t c = trace_add_op(g->t, g->rank, &op, have ? &after : NULL, have);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)bytes, false);
    return c;
}

/* Issues, for the pass whose unit order is `ord`, the gathers of positions up to the reach
 * of `pos`, each waiting for the compute of position pos - 1 (`after`, when `have`); the
 * backward gathers only units that have a backward. */
static void issue_gathers(gen *g, const int *ord, bool backward, int pos, int *issued,
                          uint32_t *ag, int m, uint32_t after, bool have)
{
    int reach = gather_reach(g, ord, pos);
    for (; *issued <= reach; (*issued)++) {
        const unit *v = &g->units[ord[*issued]];
        if (!has_gather(v) || (backward && !v->has_bwd))
            continue;
        uint32_t dep = after;
        bool staged = g->sc->parallel.offload.params == PLAN_OFFLOAD_CPU;
        double shard = gathered_bytes(v) / g->n;
        if (staged) { /* the shard comes from host memory first */
            dep = fetch_shard(g, v->layer, m, shard, after, have);
            have = true;
        }
        ag[ord[*issued]] = plan__add_coll_op(g, g->g_shard, COLL_ALL_GATHER, gathered_bytes(v),
                                             "fsdp.gather", v->layer, m, &dep, have);
        if (staged) /* its staging buffer, freed once gathered */
            trace_add_mem(g->t, g->rank, ag[ord[*issued]], PLAN_MEM_BUFFERS, -(int64_t)shard,
                          true);
        trace_add_mem(g->t, g->rank, ag[ord[*issued]], PLAN_MEM_BUFFERS,
                      (int64_t)gathered_bytes(v), false);
    }
}

/* The forward or backward of unit `ui` may start once its gather is done; FSDP2 first copies
 * the gathered bytes out of the all-gather buffer into the unit's parameters (read and
 * write: 2 x the bytes), the buffer freed when the copy ends. Returns the op to wait for. */
static uint32_t gathered(gen *g, int ui, const uint32_t *ag, trace_phase ph, int m)
{
    const unit *u = &g->units[ui];
    if (g->sc->parallel.fsdp.implementation != PLAN_FSDP2)
        return ag[ui];
    double b = gathered_bytes(u);
    uint32_t c = fsdp_copy(g, "fsdp.copy_out", ph, u->layer, m, 2 * b, ag[ui]);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)b, false);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)b, true);
    return c;
}

/* DeepSpeed's gradient bucket: the gradients of the units whose backward has run since the
 * last reduce-scatter (parameters and bytes). */
typedef struct rs_bucket {
    double params, bytes;
    int layer; /* the last unit's, for the op's name */
} rs_bucket;

/* Reduce-scatters `bytes` of gradients after op `after` (FSDP2: after their copy into the
 * reduce-scatter buffer; FSDP1: after their cast to the reduction dtype when it differs),
 * then, under hybrid sharding, all-reduces the shard across replicas. */
static void reduce_grads(gen *g, double params, double bytes, int layer, int m, uint32_t after)
{
    plan_fsdp_impl im = g->sc->parallel.fsdp.implementation;
    uint32_t dep = after;
    if (im == PLAN_FSDP2 || (im == PLAN_FSDP1 && g->gbytes != g->wbytes)) {
        /* read the 16-bit gradients, write them in the reduction dtype */
        uint32_t c = fsdp_copy(g, im == PLAN_FSDP2 ? "fsdp.copy_in" : "fsdp.grad_cast",
                               TRACE_PHASE_BWD, layer, m, params * (g->wbytes + g->gbytes), dep);
        trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)bytes, false);
        trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)bytes, true);
        dep = c;
    }
    uint32_t rs = plan__add_coll_op(g, g->g_shard, COLL_REDUCE_SCATTER, bytes,
                                    "fsdp.reduce_scatter", layer, m, &dep, 1);
    trace_add_mem(g->t, g->rank, rs, PLAN_MEM_BUFFERS, -(int64_t)bytes, true);
    if (g->hybrid)
        plan__add_coll_op(g, g->g_rep, COLL_ALL_REDUCE, bytes / g->n, "hsdp.all_reduce", layer,
                          m, &rs, 1);
}

void plan__gen_fsdp(gen *g)
{
    const plan_parallel *par = &g->sc->parallel;
    int U = g->n_units;
    bool reshard = par->fsdp.reshard_after_forward;
    bool ds = par->fsdp.implementation == PLAN_DEEPSPEED;
    uint32_t *ag = sim_calloc((size_t)U, sizeof *ag);
    int *fwd_ord = sim_calloc((size_t)U, sizeof *fwd_ord);
    int *bwd_ord = sim_calloc((size_t)U, sizeof *bwd_ord);
    for (int i = 0; i < U; i++) {
        fwd_ord[i] = i;
        bwd_ord[i] = U - 1 - i;
    }
    span *fwd = sim_calloc((size_t)U, sizeof *fwd), *bwd = sim_calloc((size_t)U, sizeof *bwd);
    uint32_t last = 0;
    for (int64_t mb = 0; mb < g->A; mb++) {
        int m = (int)mb;
        /* forward: gathers issued while the unit before computes (gather_reach) */
        int issued = 0;
        for (int f = 0; f < U; f++) {
            issue_gathers(g, fwd_ord, false, f, &issued, ag, m, f ? fwd[f - 1].last : 0, f > 0);
            const unit *u = &g->units[f];
            uint32_t ready = has_gather(u) ? gathered(g, f, ag, TRACE_PHASE_FWD, m) : 0;
            fwd[f] = plan__emit_fwd(g, u, m, &ready, has_gather(u) ? 1 : 0);
            if (has_gather(u) && (reshard || !u->has_bwd))
                trace_add_mem(g->t, g->rank, fwd[f].last, PLAN_MEM_BUFFERS,
                              -(int64_t)gathered_bytes(u), true);
        }
        /* backward in reverse unit order: b-th backward is unit U-1-b (frozen units whose
         * backward is empty take part in neither gathers nor reductions) */
        issued = 0;
        rs_bucket bucket = {0};
        for (int b = 0; b < U; b++) {
            int ui = U - 1 - b;
            const unit *u = &g->units[ui];
            if (reshard) { /* the same window over the backward order */
                const span *prev = b ? &bwd[U - b] : NULL;
                issue_gathers(g, bwd_ord, true, b, &issued, ag, m, prev && prev->any ? prev->last : 0,
                              prev && prev->any);
            }
            if (!u->has_bwd) {
                bwd[ui] = (span){0};
                continue;
            }
            uint32_t ready = 0;
            size_t nr = 0;
            if (has_gather(u) && reshard) {
                ready = gathered(g, ui, ag, TRACE_PHASE_BWD, m);
                nr = 1;
            }
            bwd[ui] = plan__emit_bwd(g, u, m, false, nr ? &ready : NULL, nr);
            double gb = plan__unit_grad_bytes(g, u);
            if (has_gather(u))
                trace_add_mem(g->t, g->rank, bwd[ui].last, PLAN_MEM_BUFFERS,
                              -(int64_t)gathered_bytes(u), true);
            last = bwd[ui].last;
            if (gb <= 0)
                continue;
            /* unsharded gradients live from the unit's backward to its reduce-scatter */
            trace_add_mem(g->t, g->rank, bwd[ui].first, PLAN_MEM_BUFFERS, (int64_t)gb, false);
            if (!ds) {
                reduce_grads(g, (double)u->trainable, gb, u->layer, m, bwd[ui].last);
                continue;
            }
            /* DeepSpeed: reduce-scattered once the bucket holds reduce_bucket parameters,
             * and at the end of the backward */
            bucket.params += (double)u->trainable;
            bucket.bytes += gb;
            bucket.layer = u->layer;
            if (bucket.params >= par->fsdp.reduce_bucket) {
                reduce_grads(g, bucket.params, bucket.bytes, bucket.layer, m, last);
                bucket = (rs_bucket){0};
            }
        }
        if (bucket.bytes > 0)
            reduce_grads(g, bucket.params, bucket.bytes, bucket.layer, m, last);
    }
    uint32_t deps[2] = {last, g->last_coll};
    plan__emit_step(g, deps, g->have_last_coll ? 2 : 1);
    sim_free(ag);
    sim_free(fwd_ord);
    sim_free(bwd_ord);
    sim_free(fwd);
    sim_free(bwd);
}

