/* ZeRO-3 / FSDP as its implementations run it (docs/strategies.md, "FSDP"): per micro-batch,
 * each unit gathered before its forward and, resharded, again before its backward, a window
 * of gathers ahead (prefetch units, FSDP1's rate limiter, DeepSpeed's prefetch bucket); its
 * gradients reduce-scattered after its backward (DeepSpeed: by reduce bucket), all-reduced
 * across replicas under hybrid sharding; FSDP2's copies in and out of the collective
 * buffers; DeepSpeed's persistent small tensors; parameter shards fetched from host memory
 * under parameter offload. */
#include "core/sim.h"

#include <math.h>

#include "plan/gen-internal.h"

typedef struct ds_count {
    double threshold;
    int64_t kept;  /* elements of the tensors kept whole */
    int gathered;  /* tensors gathered */
} ds_count;

static void count_tensor(int64_t numel, int count, void *ud)
{
    ds_count *c = ud;
    if ((double)numel <= c->threshold)
        c->kept += (int64_t)count * numel;
    else
        c->gathered += count;
}

/* DeepSpeed ZeRO-3 keeps whole, on every rank, each parameter tensor of at most
 * persistence_threshold elements (stage3_param_persistence_threshold): of plan__block_tensors,
 * the elements kept. */
int64_t plan__ds_persistent(const gen *g, model_block blk)
{
    ds_count c = {.threshold = g->sc->parallel.fsdp.persistence_threshold};
    plan__block_tensors(g, blk, count_tensor, &c);
    return c.kept;
}

/* The tensors of a block DeepSpeed gathers (plan__block_tensors above the persistence
 * threshold,
 * at most DS_TENSORS_MAX kinds x counts): each is its own list collective under
 * fsdp.list_collectives. */
#define DS_TENSORS_MAX 32
typedef struct ds_list {
    double threshold;
    int64_t numel[DS_TENSORS_MAX];
    int n;
} ds_list;

static void list_tensor(int64_t numel, int count, void *ud)
{
    ds_list *l = ud;
    for (int i = 0; i < count && (double)numel > l->threshold; i++) {
        SIM_ASSERT(l->n < DS_TENSORS_MAX, "more than %d gathered tensors", DS_TENSORS_MAX);
        l->numel[l->n++] = numel;
    }
}

/* The last position (in the pass's unit order `ord`, of `n` units) whose gather may be in
 * flight while the unit at `pos` computes: `prefetch` units ahead (FSDP1's rate limiter keeps two gathers
 * in flight: at most one ahead); DeepSpeed gathers ahead until its prefetch bucket holds
 * prefetch_bucket parameters, the unit that crosses it included. */
static int gather_reach(const gen *g, const int *ord, int n, int pos)
{
    const plan_parallel *par = &g->sc->parallel;
    int U = n;
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

/* A unit's bytes gathered over the data-parallel group: all but DeepSpeed's persistent
 * parameters and the experts; over the expert-data-parallel group: the experts, unless each
 * rank's experts are its alone (dp = ep: nothing to shard them over); both together. */
double plan__fsdp_dense_bytes(const unit *u)
{
    return u->weight_bytes - u->persist_bytes - u->expert_bytes;
}

double plan__fsdp_expert_bytes(const gen *g, const unit *u)
{
    return g->n_edp > 1 ? u->expert_bytes : 0;
}

static double dense_bytes(const unit *u)
{
    return plan__fsdp_dense_bytes(u);
}

static double expert_gathered(const gen *g, const unit *u)
{
    return plan__fsdp_expert_bytes(g, u);
}

static double gathered_bytes(const gen *g, const unit *u)
{
    if (g->n == 1) /* one rank (parameter offload): the unit comes whole from the host */
        return u->weight_bytes - u->persist_bytes;
    return dense_bytes(u) + expert_gathered(g, u);
}

static bool has_gather(const gen *g, const unit *u)
{
    return gathered_bytes(g, u) > 0;
}


/* parallel.offload.params: a unit's 16-bit shard copied from host memory (`bytes`) into a
 * staging buffer, on the offload stream, when its gather is issued (after `after`, when
 * `have`). Returns the copy. */
static uint32_t fetch_shard(gen *g, int layer, int m, double bytes, uint32_t after, bool have)
{
    if (g->sc->parallel.offload.params == PLAN_OFFLOAD_NVME) {
        /* ZeRO-Infinity: from the rank's drive into host memory first */
        after = plan__add_copy(g, "offload.read_params", TRACE_COPY_READ, TRACE_PHASE_COMM, layer,
                               m, bytes, after, have);
        have = true;
    }
    uint32_t c = plan__add_copy(g, "offload.fetch_params", TRACE_COPY_H2D, TRACE_PHASE_COMM,
                                layer, m, bytes, after, have);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)bytes, false);
    return c;
}

/* One pass over units for gathers: their order, count, whether it is a backward (which
 * gathers only units that have one), the next position to gather, and units to skip
 * (already gathered and kept; NULL: none). */
typedef struct gather_pass {
    const int *ord;
    int n;
    bool backward;
    int issued;
    const bool *held;
    const uint64_t *kept; /* DeepSpeed: per unit, its tensors still gathered (NULL: none) */
} gather_pass;

/* The tensors of unit `u` DeepSpeed gathers, in the order its forward uses them: ds_list's
 * (above the persistence threshold), the embedding one tensor (two with a learned position
 * table), the LM head one (the head's norms beside it); what a layer holds beyond the listed
 * tensors (MoE layers, MLA's matrices, LoRA's base matrices) one tensor more, last. Fills
 * numel[] and returns the count. */
static int unit_tensors(const gen *g, const unit *u, int64_t numel[DS_TENSORS_MAX + 1])
{
    ds_list l = {.threshold = g->sc->parallel.fsdp.persistence_threshold};
    plan__block_tensors(g, u->blk, list_tensor, &l);
    double listed = 0, all = (double)(u->params - u->persist);
    for (int i = 0; i < l.n; i++)
        listed += (double)l.numel[i];
    const model_spec *m = &g->model;
    if (u->blk == MODEL_BLOCK_EMBED) {
        /* the token embedding (and the learned position table) first, as the forward uses
         * them, then the embedding norm's tensors plan__block_tensors listed */
        int64_t pos = m->position == MODEL_POS_LEARNED ? (int64_t)m->max_seq_len * m->hidden : 0;
        int64_t norms[DS_TENSORS_MAX];
        int k = l.n;
        memcpy(norms, l.numel, (size_t)k * sizeof *norms);
        l.n = 0;
        l.numel[l.n++] = (int64_t)SIM_MAX(all - (double)pos - listed, 1);
        if (pos > 0)
            l.numel[l.n++] = pos;
        for (int i = 0; i < k; i++)
            l.numel[l.n++] = norms[i];
    } else if (all - listed >= 1) {
        /* the embedding, an untied LM head; in a layer what plan__block_tensors does not list
         * (MLA's matrices, LoRA's frozen base matrices, MoE layers), DeepSpeed's too */
        l.numel[l.n++] = (int64_t)(all - listed);
    }
    if (l.n == 0) /* (nothing gathered: one empty tensor) */
        l.numel[l.n++] = (int64_t)SIM_MAX(all, 1);
    memcpy(numel, l.numel, (size_t)l.n * sizeof *numel);
    return l.n;
}

/* The shares of unit `u`'s gathered bytes in its tensors (unit_tensors) in share[]; returns
 * their count. */
static int unit_shares(const gen *g, const unit *u, double share[DS_TENSORS_MAX + 1])
{
    int64_t numel[DS_TENSORS_MAX + 1];
    int n = unit_tensors(g, u, numel);
    double all = 0;
    for (int i = 0; i < n; i++)
        all += (double)numel[i];
    for (int i = 0; i < n; i++)
        share[i] = (double)numel[i] / all;
    return n;
}

/* The share of unit `u`'s gathered dense bytes in the tensors of `mask` (bits of
 * unit_tensors' order). */
static double mask_share(const gen *g, const unit *u, uint64_t mask)
{
    double share[DS_TENSORS_MAX + 1], sum = 0;
    int n = unit_shares(g, u, share), in = 0;
    for (int i = 0; i < n; i++)
        if (mask >> i & 1) {
            sum += share[i];
            in++;
        }
    return in == n ? 1 : sum; /* (all of them: exactly) */
}

/* Every tensor of unit `u` (unit_tensors), as bits. */
static uint64_t all_tensors(const gen *g, const unit *u)
{
    int64_t numel[DS_TENSORS_MAX + 1];
    int n = unit_tensors(g, u, numel);
    return n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
}

/* The dense gather (or reduce-scatter) of unit `u`, `bytes` in all, split into the tensors
 * it runs as one collective each: under fsdp.list_collectives, as DeepSpeed on PyTorch
 * before 1.10 ran it, one list collective per tensor of `mask` (unit_tensors), each one
 * NCCL call and N copies between the flat buffer and the list of N partitions, N launches
 * more of the host (the copies' own GPU time, the tensor's bytes read and written once, is
 * not modelled); else one collective of all of them. Returns the shares of the unit's bytes
 * in share[] and their count. */
static int tensor_shares(const gen *g, const unit *u, uint64_t mask,
                         double share[DS_TENSORS_MAX + 1])
{
    if (!g->sc->parallel.fsdp.list_collectives) {
        share[0] = mask == ~UINT64_C(0) ? 1 : mask_share(g, u, mask);
        return share[0] > 0;
    }
    double all[DS_TENSORS_MAX + 1];
    int n = unit_shares(g, u, all), k = 0;
    for (int i = 0; i < n; i++)
        if (mask >> i & 1)
            share[k++] = all[i];
    return k;
}

/* Whether unit `u`'s backward first runs its forward's matmuls again, and so uses its
 * weights (full or per-op recompute; Megatron's selective recompute re-runs none). */
static bool recomputes_weights(const unit *u)
{
    return u->rc == MODEL_RECOMPUTE_FULL || u->rc == MODEL_RECOMPUTE_OP;
}

/* One use of a tensor in a micro-batch (ds_reuse). */
typedef struct reuse_use {
    int unit, tensor;
    int pass; /* 0 forward, 1 recomputed forward, 2 backward */
    double numel;
} reuse_use;

static size_t add_uses(reuse_use *tr, size_t n, int ui, int pass, const int64_t *numel, int nt)
{
    for (int j = 0; j < nt; j++) {
        int i = pass == 2 ? nt - 1 - j : j;
        tr[n++] = (reuse_use){.unit = ui, .tensor = i, .pass = pass, .numel = (double)numel[i]};
    }
    return n;
}

/* DeepSpeed's release rule (stage3_max_reuse_distance; PartitionedParameterCoordinator): a
 * tensor gathered for one use stays gathered if the parameters used before its next use, in
 * the order of a micro-batch's forward and backward, number fewer than max_reuse_distance
 * elements; else it is freed after its use and gathered again for the next. The trace of a
 * micro-batch: each unit's tensors in forward order, then from the last unit to the first
 * the recomputed forward (recomputes_weights) and the backward in reverse order; the
 * persistent tensors (never gathered) are left out of the distances. Fills
 * g->ds_keep_fwd and g->ds_keep_rc. */
static void ds_reuse(gen *g)
{
    int U = g->n_units;
    reuse_use *tr = sim_calloc((size_t)U * 3 * (DS_TENSORS_MAX + 1), sizeof *tr);
    size_t n = 0;
    int64_t numel[DS_TENSORS_MAX + 1];
    for (int ui = 0; ui < U; ui++)
        if (has_gather(g, &g->units[ui]))
            n = add_uses(tr, n, ui, 0, numel, unit_tensors(g, &g->units[ui], numel));
    for (int ui = U - 1; ui >= 0; ui--) {
        const unit *u = &g->units[ui];
        if (!has_gather(g, u) || !u->has_bwd)
            continue;
        int nt = unit_tensors(g, u, numel);
        if (recomputes_weights(u))
            n = add_uses(tr, n, ui, 1, numel, nt);
        n = add_uses(tr, n, ui, 2, numel, nt);
    }
    /* from the end: each (unit, tensor)'s next use and the elements used before it */
    size_t slots = (size_t)U * (DS_TENSORS_MAX + 1);
    size_t *next = sim_calloc(slots, sizeof *next);
    double *from = sim_calloc(n + 1, sizeof *from); /* elements used from use e on */
    for (size_t i = 0; i < slots; i++)
        next[i] = SIZE_MAX;
    for (size_t e = n; e-- > 0;) {
        from[e] = from[e + 1] + tr[e].numel;
        size_t slot = (size_t)tr[e].unit * (DS_TENSORS_MAX + 1) + (size_t)tr[e].tensor;
        size_t q = next[slot];
        if (q != SIZE_MAX && from[e + 1] - from[q] < g->sc->parallel.fsdp.max_reuse_distance) {
            uint64_t bit = UINT64_C(1) << tr[e].tensor;
            SIM_ASSERT(tr[e].pass < 2, "a backward use followed by another");
            if (tr[e].pass == 0)
                g->ds_keep_fwd[tr[e].unit] |= bit;
            else
                g->ds_keep_rc[tr[e].unit] |= bit;
        }
        next[slot] = e;
    }
    sim_free(from);
    sim_free(next);
    sim_free(tr);
}

void plan__ds_regathers(gen *g, double *bwd, double *rc)
{
    int U = g->n_units;
    g->ds_keep_fwd = sim_calloc((size_t)U, sizeof *g->ds_keep_fwd);
    g->ds_keep_rc = sim_calloc((size_t)U, sizeof *g->ds_keep_rc);
    ds_reuse(g);
    for (int ui = 0; ui < U; ui++) {
        const unit *u = &g->units[ui];
        bwd[ui] = rc[ui] = 0;
        if (!has_gather(g, u))
            continue;
        uint64_t all = all_tensors(g, u);
        bwd[ui] = mask_share(g, u, all & ~g->ds_keep_fwd[ui]);
        if (recomputes_weights(u))
            rc[ui] = mask_share(g, u, all & ~g->ds_keep_rc[ui]);
    }
    sim_free(g->ds_keep_fwd);
    sim_free(g->ds_keep_rc);
    g->ds_keep_fwd = g->ds_keep_rc = NULL;
}

/* fsdp.list_collectives: the N copies of one list collective between the flat buffer and
 * its N partitions, as the host issues them: an op of the host thread taking no time of its
 * own that stands for the N launches (after the gather, whose partitions the copies fill;
 * before the reduce-scatter, whose flat input they fill). Waits for `dep`. */
static uint32_t list_copies(gen *g, const char *name, int layer, int m, uint32_t dep)
{
    trace_op op = {
        .kind = TRACE_OP_HOST,
        .stream = TRACE_STREAM_HOST,
        .phase = TRACE_PHASE_COMM,
        .layer = layer,
        .microbatch = m,
        .name = trace_intern(g->t, name),
        .duration_ps = 0,
    };
    uint32_t c = trace_add_op(g->t, g->rank, &op, &dep, 1);
    trace_set_host(g->t, g->rank, c, (uint32_t)g->n, false);
    return c;
}

/* fsdp.sync_fetch: the host waits, after the last op issued so far, until every op up to it
 * has ended (DeepSpeed's fetch before 0.5 ends in torch.cuda.synchronize()). */
static void host_sync(gen *g)
{
    const trace_rank *tr = &g->t->ranks[g->rank];
    if (tr->n_ops == 0)
        return;
    uint32_t op = (uint32_t)tr->n_ops - 1;
    trace_set_host(g->t, g->rank, op, trace_host_of(tr, op).launches, true);
}

/* The bytes of unit `u`'s dense parameters in the tensors of `mask` (whole bytes). */
static int64_t mask_bytes(const gen *g, const unit *u, uint64_t mask)
{
    return mask ? (int64_t)(dense_bytes(u) * mask_share(g, u, mask)) : 0;
}

/* Whether the pass gathers anything of the unit at order position `ui`. */
static bool gathers_now(const gen *g, const gather_pass *ps, int ui)
{
    const unit *v = &g->units[ui];
    if (!has_gather(g, v) || (ps->backward && !v->has_bwd) || (ps->held && ps->held[ui]))
        return false;
    return !ps->kept || (all_tensors(g, v) & ~ps->kept[ui]) || expert_gathered(g, v) > 0;
}

/* fsdp.sync_fetch with list_collectives: DeepSpeed's _allgather_param of 2021 allocates the
 * tensor's whole gather buffer with torch.zeros (a kernel writing its `bytes`) and then
 * synchronizes the device, so the zeroing's time is the host's too. */
static void zero_and_sync(gen *g, trace_phase ph, int layer, int m, double bytes)
{
    plan__add_vector(g, "fsdp.gather_zero", ph, layer, m, false, bytes, 0, false);
    host_sync(g);
}

/* Gathers unit `u`'s dense tensors of `mask` over the data-parallel group after `after`
 * (when `have`): one collective of them all, or one list collective per tensor
 * (tensor_shares), each after DeepSpeed of 2021's zeroing and sync (zero_and_sync) and
 * followed by its copies (list_copies). Puts the first gather in *first; returns the last.
 * At least one tensor of `mask` has bytes. */
static uint32_t gather_tensors(gen *g, const unit *u, uint64_t mask, trace_phase ph, int m,
                               uint32_t after, bool have, uint32_t *first)
{
    const plan_parallel *par = &g->sc->parallel;
    double share[DS_TENSORS_MAX + 1], dense = dense_bytes(u);
    int nt = tensor_shares(g, u, mask, share);
    SIM_ASSERT(nt > 0, "rank %d: a gather of nothing (layer %d)", g->rank, u->layer);
    uint32_t last = 0;
    for (int k = 0; k < nt; k++) {
        if (par->fsdp.sync_fetch && par->fsdp.list_collectives)
            zero_and_sync(g, ph, u->layer, m, dense * share[k]);
        last = plan__add_coll_op(g, g->g_shard, COLL_ALL_GATHER, dense * share[k], "fsdp.gather",
                                 u->layer, m, &after, have);
        if (k == 0)
            *first = last;
        /* (the unit's kernels wait for the gather, the host's later issues for the copies'
         * launches) */
        if (par->fsdp.list_collectives)
            list_copies(g, "fsdp.gather_copies", u->layer, m, last);
    }
    return last;
}

/* Issues the gathers of the pass's positions up to `reach`, each waiting for the compute of
 * the position before the current one (`after`, when `have`). */
static void issue_gathers_to(gen *g, gather_pass *ps, int reach, uint32_t *ag, int m,
                             uint32_t after, bool have)
{
    for (; ps->issued <= reach; ps->issued++) {
        int ui = ps->ord[ps->issued];
        const unit *v = &g->units[ui];
        if (!gathers_now(g, ps, ui))
            continue;
        /* the tensors not still gathered from an earlier use (DeepSpeed) */
        uint64_t want = ps->kept ? all_tensors(g, v) & ~ps->kept[ui] : ~UINT64_C(0);
        int64_t kept = ps->kept ? mask_bytes(g, v, ps->kept[ui]) : 0;
        uint32_t dep = after;
        bool have_dep = have;
        bool staged = g->sc->parallel.offload.params != PLAN_OFFLOAD_NONE;
        if (g->n == 1) { /* nothing to gather: the fetched unit is the unit (offload only) */
            SIM_ASSERT(staged, "rank %d: ZeRO-3 over one rank without parameter offload", g->rank);
            ag[ui] = fetch_shard(g, v->layer, m, gathered_bytes(g, v) - (double)kept, after, have);
            continue;
        }
        double dense = dense_bytes(v), ex = expert_gathered(g, v);
        double shard = (dense - (double)kept) / g->n + (ex > 0 ? ex / g->n_edp : 0);
        if (staged) { /* the shard comes from host memory first */
            dep = fetch_shard(g, v->layer, m, shard, after, have);
            have_dep = true;
        }
        /* dense parameters over the data-parallel group (tensor by tensor under
         * list_collectives), then the experts over theirs (on the same stream: the unit is
         * ready when the last is done) */
        uint32_t first = 0;
        bool any = false;
        if (dense - (double)kept > 0) {
            ag[ui] = gather_tensors(g, v, want, ps->backward ? TRACE_PHASE_BWD : TRACE_PHASE_FWD,
                                    m, dep, have_dep, &first);
            any = true;
        }
        if (ex > 0) {
            ag[ui] = plan__add_coll_op(g, g->g_edp, COLL_ALL_GATHER, ex, "fsdp.gather_experts",
                                       v->layer, m, any ? &first : &dep, any || have_dep);
            if (!any)
                first = ag[ui];
        }
        if (staged) /* its staging buffer, freed once gathered */
            trace_add_mem(g->t, g->rank, ag[ui], PLAN_MEM_BUFFERS, -(int64_t)shard, true);
        trace_add_mem(g->t, g->rank, first, PLAN_MEM_BUFFERS, (int64_t)(dense + ex) - kept,
                      false);
    }
}

/* Issues the gathers of the pass's positions up to the reach of `pos`, each waiting for the
 * compute of position pos - 1 (`after`, when `have`). Under fsdp.sync_fetch, DeepSpeed's
 * fetch first: the gather of `pos` itself (unless already in flight), a synchronization,
 * then the prefetches. */
static void issue_gathers(gen *g, gather_pass *ps, int pos, uint32_t *ag, int m, uint32_t after,
                          bool have)
{
    if (g->sc->parallel.fsdp.sync_fetch) {
        issue_gathers_to(g, ps, pos, ag, m, after, have);
        if (gathers_now(g, ps, ps->ord[pos]))
            host_sync(g);
    }
    issue_gathers_to(g, ps, gather_reach(g, ps->ord, ps->n, pos), ag, m, after, have);
}

/* The forward or backward of unit `ui` may start once its gather is done; FSDP2 first copies
 * the gathered bytes out of the all-gather buffer into the unit's parameters (read and
 * write: 2 x the bytes), the buffer freed when the copy ends. Returns the op to wait for. */
static uint32_t gathered(gen *g, int ui, const uint32_t *ag, trace_phase ph, int m)
{
    const unit *u = &g->units[ui];
    if (g->sc->parallel.fsdp.implementation != PLAN_FSDP2 || g->n == 1)
        return ag[ui];
    double b = gathered_bytes(g, u);
    uint32_t c = plan__add_vector(g, "fsdp.copy_out", ph, u->layer, m, false, 2 * b,
                                  ag[ui], true);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)b, false);
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)b, true);
    return c;
}

/* Reduce-scatters `bytes` of gradients after op `after` (FSDP2: after their copy into the
 * reduce-scatter buffer; FSDP1: after their cast to the reduction dtype when it differs),
 * then, under hybrid sharding, all-reduces the shard across replicas. */
static void reduce_grads(gen *g, uint32_t group, double params, double bytes, int layer, int m,
                         uint32_t after)
{
    plan_fsdp_impl im = g->sc->parallel.fsdp.implementation;
    uint32_t dep = after;
    if (im == PLAN_FSDP2 || (im == PLAN_FSDP1 && g->gbytes != g->wbytes)) {
        /* read the 16-bit gradients, write them in the reduction dtype */
        uint32_t c = plan__add_vector(g, im == PLAN_FSDP2 ? "fsdp.copy_in" : "fsdp.grad_cast",
                                      TRACE_PHASE_BWD, layer, m, false,
                                      params * (g->wbytes + g->gbytes), dep, true);
        trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, (int64_t)bytes, false);
        trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)bytes, true);
        dep = c;
    }
    bool experts = group != g->g_shard;
    uint32_t rs = plan__add_coll_op(g, group, COLL_REDUCE_SCATTER, bytes,
                                    experts ? "fsdp.reduce_scatter_experts" : "fsdp.reduce_scatter",
                                    layer, m, &dep, 1);
    trace_add_mem(g->t, g->rank, rs, PLAN_MEM_BUFFERS, -(int64_t)bytes, true);
    if (g->hybrid)
        plan__add_coll_op(g, g->g_rep, COLL_ALL_REDUCE, bytes / g->n, "hsdp.all_reduce", layer,
                          m, &rs, 1);
}

/* DeepSpeed's gradient bucket: the gradients of the units whose backward has run since the
 * last reduce-scatter (parameters and bytes). */
typedef struct rs_bucket {
    double params, bytes;
    int layer; /* the last unit's, for the op's name */
    double *parts; /* fsdp.list_collectives: the bytes of each tensor's reduce-scatter */
    size_t n_parts, cap_parts;
} rs_bucket;

/* Reduce-scatters DeepSpeed's bucket after op `after`: at once, or under
 * fsdp.list_collectives one list reduce-scatter per tensor (N copies into the flat buffer
 * before each NCCL call: tensor_shares); then empties it. */
static void reduce_bucket(gen *g, rs_bucket *b, int m, uint32_t after)
{
    if (b->n_parts == 0) {
        reduce_grads(g, g->g_shard, b->params, b->bytes, b->layer, m, after);
    } else {
        for (size_t k = 0; k < b->n_parts; k++) {
            uint32_t c = list_copies(g, "fsdp.reduce_copies", b->layer, m, after);
            uint32_t rs = plan__add_coll_op(g, g->g_shard, COLL_REDUCE_SCATTER, b->parts[k],
                                            "fsdp.reduce_scatter", b->layer, m, &c, 1);
            trace_add_mem(g->t, g->rank, rs, PLAN_MEM_BUFFERS, -(int64_t)b->parts[k], true);
        }
    }
    b->params = b->bytes = 0;
    b->n_parts = 0;
}

/* A unit's unsharded gradients (`bytes`, held since its backward) reduced after `after`: the
 * dense ones over the data-parallel group, the experts' over the expert-data-parallel group
 * (or, when each rank's experts are its alone, kept as they are: their copy freed). */
static void reduce_unit(gen *g, const unit *u, double bytes, int m, uint32_t after)
{
    double ex = (double)u->trainable_expert * g->gbytes, dense = bytes - ex;
    if (dense > 0)
        reduce_grads(g, g->g_shard, (double)(u->trainable - u->trainable_expert), dense, u->layer,
                     m, after);
    if (ex > 0 && g->n_edp > 1)
        reduce_grads(g, g->g_edp, (double)u->trainable_expert, ex, u->layer, m, after);
    else if (ex > 0)
        trace_add_mem(g->t, g->rank, after, PLAN_MEM_BUFFERS, -(int64_t)ex, true);
}

/* DeepSpeed (plan__emit_bwd's between_passes): after unit `u`'s recomputed forward (its
 * last op `recomputed`), the tensors not kept for the backward (ds_reuse) are freed and
 * gathered again, as the forward gathered them; the backward waits for *dep. */
static bool ds_regather(gen *g, const unit *u, int m, uint32_t recomputed, uint32_t *dep)
{
    int ui = (int)(u - g->units);
    if (!has_gather(g, u) || !recomputes_weights(u))
        return false;
    uint64_t want = all_tensors(g, u) & ~g->ds_keep_rc[ui];
    int64_t bytes = mask_bytes(g, u, want);
    if (bytes <= 0)
        return false;
    const plan_parallel *par = &g->sc->parallel;
    trace_add_mem(g->t, g->rank, recomputed, PLAN_MEM_BUFFERS, -bytes, true);
    bool staged = par->offload.params != PLAN_OFFLOAD_NONE;
    uint32_t after = recomputed, first = 0;
    if (g->n == 1) { /* (offload only) the fetched shard is the tensors */
        SIM_ASSERT(staged, "rank %d: ZeRO-3 over one rank without parameter offload", g->rank);
        *dep = fetch_shard(g, u->layer, m, (double)bytes, recomputed, true);
        return true;
    }
    double shard = (double)bytes / g->n;
    if (staged)
        after = fetch_shard(g, u->layer, m, shard, recomputed, true);
    *dep = gather_tensors(g, u, want, TRACE_PHASE_BWD, m, after, true, &first);
    if (staged)
        trace_add_mem(g->t, g->rank, *dep, PLAN_MEM_BUFFERS, -(int64_t)shard, true);
    trace_add_mem(g->t, g->rank, first, PLAN_MEM_BUFFERS, bytes, false);
    if (par->fsdp.sync_fetch) /* the fetch waits for the gathers */
        host_sync(g);
    return true;
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
    if (ds) { /* DeepSpeed keeps what it uses again soon (ds_reuse) */
        g->ds_keep_fwd = sim_calloc((size_t)U, sizeof *g->ds_keep_fwd);
        g->ds_keep_rc = sim_calloc((size_t)U, sizeof *g->ds_keep_rc);
        ds_reuse(g);
        g->between_passes = ds_regather;
    }
    uint32_t last = 0;
    for (int64_t mb = 0; mb < g->A; mb++) {
        int m = (int)mb;
        /* forward: gathers issued while the unit before computes (gather_reach) */
        gather_pass fp = {.ord = fwd_ord, .n = U};
        for (int f = 0; f < U; f++) {
            issue_gathers(g, &fp, f, ag, m, f ? fwd[f - 1].last : 0, f > 0);
            const unit *u = &g->units[f];
            uint32_t ready = has_gather(g, u) ? gathered(g, f, ag, TRACE_PHASE_FWD, m) : 0;
            fwd[f] = plan__emit_fwd(g, u, m, &ready, has_gather(g, u) ? 1 : 0);
            if (has_gather(g, u) && (reshard || !u->has_bwd)) /* (DeepSpeed: but the kept) */
                trace_add_mem(g->t, g->rank, fwd[f].last, PLAN_MEM_BUFFERS,
                              -((int64_t)gathered_bytes(g, u) -
                                (ds ? mask_bytes(g, u, g->ds_keep_fwd[f]) : 0)),
                              true);
        }
        /* backward in reverse unit order: b-th backward is unit U-1-b (frozen units whose
         * backward is empty take part in neither gathers nor reductions) */
        gather_pass bp = {.ord = bwd_ord, .n = U, .backward = true,
                          .kept = ds ? g->ds_keep_fwd : NULL};
        rs_bucket bucket = {0};
        for (int b = 0; b < U; b++) {
            int ui = U - 1 - b;
            const unit *u = &g->units[ui];
            if (reshard) { /* the same window over the backward order */
                const span *prev = b ? &bwd[U - b] : NULL;
                issue_gathers(g, &bp, b, ag, m, prev && prev->any ? prev->last : 0,
                              prev && prev->any);
            }
            if (!u->has_bwd) {
                bwd[ui] = (span){0};
                continue;
            }
            uint32_t ready = 0;
            size_t nr = 0;
            if (has_gather(g, u) && reshard) {
                ready = gathered(g, ui, ag, TRACE_PHASE_BWD, m);
                nr = 1;
            }
            bwd[ui] = plan__emit_bwd(g, u, m, false, nr ? &ready : NULL, nr);
            double gb = plan__unit_grad_bytes(g, u);
            if (has_gather(g, u))
                trace_add_mem(g->t, g->rank, bwd[ui].last, PLAN_MEM_BUFFERS,
                              -(int64_t)gathered_bytes(g, u), true);
            last = bwd[ui].last;
            if (gb <= 0 || g->n == 1) /* one rank: its gradients are its shard already */
                continue;
            /* unsharded gradients live from the unit's backward to its reduce-scatter */
            trace_add_mem(g->t, g->rank, bwd[ui].first, PLAN_MEM_BUFFERS, (int64_t)gb, false);
            if (!ds) {
                reduce_unit(g, u, gb, m, bwd[ui].last);
                continue;
            }
            /* DeepSpeed: reduce-scattered once the bucket holds reduce_bucket parameters,
             * and at the end of the backward */
            bucket.params += (double)u->trainable;
            bucket.bytes += gb;
            bucket.layer = u->layer;
            if (par->fsdp.list_collectives) {
                double share[DS_TENSORS_MAX + 1];
                int nt = tensor_shares(g, u, ~UINT64_C(0), share);
                SIM_GROW(bucket.parts, bucket.cap_parts, bucket.n_parts + (size_t)nt);
                /* each tensor's gradient bytes, whole, the last taking the rest (the parts'
                 * memory events release exactly what the unit's allocated) */
                double left = gb;
                for (int k = 0; k < nt; k++) {
                    double part = k + 1 < nt ? floor(gb * share[k]) : left;
                    left -= part;
                    bucket.parts[bucket.n_parts++] = part;
                }
            }
            if (bucket.params >= par->fsdp.reduce_bucket)
                reduce_bucket(g, &bucket, m, last);
        }
        if (bucket.bytes > 0)
            reduce_bucket(g, &bucket, m, last);
        sim_free(bucket.parts);
    }
    uint32_t deps[2] = {last, g->last_coll};
    plan__emit_step(g, deps, g->have_last_coll ? 2 : 1);
    sim_free(g->ds_keep_fwd);
    sim_free(g->ds_keep_rc);
    g->ds_keep_fwd = g->ds_keep_rc = NULL;
    g->between_passes = NULL;
    sim_free(ag);
    sim_free(fwd_ord);
    sim_free(bwd_ord);
    sim_free(fwd);
    sim_free(bwd);
}


/* ---- with pipeline parallelism ---------------------------------------------------------
 *
 * Each stage's units are sharded over the stage's data-parallel group. As
 * torch.distributed.pipelining runs FSDP, gradients are synchronised on the last micro-batch
 * only: each unit's gradients accumulate unsharded from its first backward of the step and
 * are reduce-scattered after the backward of its chunk's last micro-batch. With
 * reshard_after_forward the units are gathered before every forward and every backward and
 * freed after each; without, each is gathered at its first forward of the step and kept
 * until its last backward. Per rank per step, stage parameters P_s (16-bit bytes 2P_s):
 * (2A + 1) x 2P_s(n-1)/n bytes sent with resharding, 2 x 2P_s(n-1)/n without. */

void plan__fsdp_pp_begin(gen *g)
{
    size_t U = (size_t)g->n_units;
    g->fsdp_ag = sim_calloc(U, sizeof *g->fsdp_ag);
    g->fsdp_held = sim_calloc(U, sizeof *g->fsdp_held);
    g->fsdp_grads = sim_calloc(U, sizeof *g->fsdp_grads);
}

void plan__fsdp_pp_end(gen *g)
{
    for (int u = 0; u < g->n_units; u++)
        SIM_ASSERT(!g->fsdp_held[u] && !g->fsdp_grads[u],
                   "rank %d: unit %d still gathered or holding gradients", g->rank, u);
    sim_free(g->fsdp_ag);
    sim_free(g->fsdp_held);
    sim_free(g->fsdp_grads);
    g->fsdp_ag = NULL;
    g->fsdp_held = g->fsdp_grads = NULL;
}

/* The units of one chunk, in forward (or backward) order. */
static int *chunk_order(int u0, int u1, bool backward)
{
    int *ord = sim_calloc((size_t)(u1 - u0 + 1), sizeof *ord);
    for (int i = 0; i < u1 - u0; i++)
        ord[i] = backward ? u1 - 1 - i : u0 + i;
    return ord;
}

span plan__fsdp_pp_fwd(gen *g, int u0, int u1, int mb, uint32_t recv, bool have_recv)
{
    bool reshard = g->sc->parallel.fsdp.reshard_after_forward;
    int *ord = chunk_order(u0, u1, false);
    gather_pass ps = {.ord = ord, .n = u1 - u0, .held = g->fsdp_held};
    span last = {0};
    for (int f = 0; f < u1 - u0; f++) {
        int ui = ord[f];
        const unit *u = &g->units[ui];
        /* the first gathers wait for the kernel before the chunk (the CPU issues them there) */
        issue_gathers(g, &ps, f, g->fsdp_ag, mb, last.any ? last.last : g->last_compute,
                      last.any || g->have_compute);
        uint32_t deps[2];
        size_t nd = 0;
        if (have_recv && f == 0)
            deps[nd++] = recv;
        bool fresh = has_gather(g, u) && !g->fsdp_held[ui];
        if (fresh)
            deps[nd++] = gathered(g, ui, g->fsdp_ag, TRACE_PHASE_FWD, mb);
        span sp = plan__emit_fwd(g, u, mb, deps, nd);
        SIM_ASSERT(sp.any, "unit %d has no forward kernel", ui);
        if (fresh && (reshard || !u->has_bwd))
            trace_add_mem(g->t, g->rank, sp.last, PLAN_MEM_BUFFERS, -(int64_t)gathered_bytes(g, u),
                          true);
        else if (fresh)
            g->fsdp_held[ui] = true;
        last = sp;
    }
    sim_free(ord);
    return last;
}

span plan__fsdp_pp_bwd(gen *g, int u0, int u1, int mb, bool last_mb, uint32_t recv,
                       bool have_recv)
{
    int *ord = chunk_order(u0, u1, true);
    gather_pass ps = {.ord = ord, .n = u1 - u0, .backward = true, .held = g->fsdp_held};
    span last = {0};
    for (int b = 0; b < u1 - u0; b++) {
        int ui = ord[b];
        const unit *u = &g->units[ui];
        issue_gathers(g, &ps, b, g->fsdp_ag, mb, last.any ? last.last : g->last_compute,
                      last.any || g->have_compute);
        if (!u->has_bwd)
            continue;
        uint32_t deps[2];
        size_t nd = 0;
        if (have_recv && !last.any)
            deps[nd++] = recv;
        bool fresh = has_gather(g, u) && !g->fsdp_held[ui];
        if (fresh)
            deps[nd++] = gathered(g, ui, g->fsdp_ag, TRACE_PHASE_BWD, mb);
        span sp = plan__emit_bwd(g, u, mb, false, deps, nd);
        SIM_ASSERT(sp.any, "unit %d has no backward kernel", ui);
        if (fresh || (g->fsdp_held[ui] && last_mb)) {
            trace_add_mem(g->t, g->rank, sp.last, PLAN_MEM_BUFFERS, -(int64_t)gathered_bytes(g, u),
                          true);
            g->fsdp_held[ui] = false;
        }
        double gb = g->n > 1 ? plan__unit_grad_bytes(g, u) : 0; /* one rank: nothing to sync */
        if (gb > 0 && !g->fsdp_grads[ui]) { /* accumulated unsharded until the last */
            trace_add_mem(g->t, g->rank, sp.first, PLAN_MEM_BUFFERS, (int64_t)gb, false);
            g->fsdp_grads[ui] = true;
        }
        if (gb > 0 && last_mb) {
            reduce_unit(g, u, gb, mb, sp.last);
            g->fsdp_grads[ui] = false;
        }
        last = sp;
    }
    sim_free(ord);
    return last;
}
