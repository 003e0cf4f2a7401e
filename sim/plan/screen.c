/* The plan's screen: a candidate's step and peak memory in closed form (see screen.h).
 *
 * Step. Each pipeline chunk's forward and backward of one micro-batch is timed by walking
 * the kernels the generator emits for it (model_block_ops, recompute included) on two
 * streams, compute and tensor-parallel, with the generator's dependency rules (emit.c: a
 * TP collective waits for the latest kernel and the next kernel waits for it; SP's re-gather
 * runs beside the input-gradient GEMM; tp_grad_overlap lets the weight-gradient GEMM run
 * beside its input gradient's collective); expert all-to-alls and ring-attention shifts are
 * waited for likewise. The stages' schedules (plan_pp_schedule, the replay's own) are then
 * evaluated as a DAG with those durations and the point-to-point transfers between stages,
 * which gives the fill, drain and any imbalance exactly where collectives do not contend.
 * After the last backward: the gradients' reduction (buckets overlapping the last
 * backward of each chunk, exposed as a serial bucket queue is, or, with ddp.overlap false,
 * after it whole; experts' and ZeRO-3's follow their units either way), the optimizer
 * kernels or
 * CPU Adam with its copies, and ZeRO-1/2's parameter gathers. ZeRO-3 gathers each unit ahead
 * of its use (one unit of prefetch) and reduce-scatters its gradients after it.
 *
 * Memory. The generator's persistent bytes (dp.c) of each stage's first rank, plus its
 * activations: the most chunk micro-batches its schedule holds at once times the stage's
 * bytes per chunk micro-batch, plus the largest transient (a recomputed layer's rebuilt
 * activations, the loss's logit gradients on the last stage, ZeRO-3's two gathered units),
 * or, when it is more, the optimizer step's fp32 gradients that a cast of 16-bit ones
 * allocates once the activations are freed (optimizer.c).
 *
 * Collectives cost what the replay's selector estimates for them alone on the topology
 * (coll_select), cached per group, operation and size. */
#include "core/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/gpu.h"
#include "hw/topo.h"
#include "plan/gen-internal.h"
#include "plan/pipeline.h"
#include "plan/screen-internal.h"

int plan_screen_create(const plan_scenario *base, plan_screen **out, sim_diag *diag)
{
    plan_screen *s = sim_calloc(1, sizeof *s);
    s->base = base;
    int rc = hw_topo_create(&base->topology, &s->topo, diag);
    if (rc) {
        sim_free(s);
        return rc;
    }
    const hw_topology_spec *ts = &base->topology;
    s->n_gpus = SIM_MAX(1, ts->n_groups);
    s->capacity = INT64_MAX;
    for (int i = 0; i < s->n_gpus; i++) {
        const hw_gpu_spec *spec = ts->n_groups > 0 ? &ts->groups[i].gpu : &ts->gpu;
        s->gpus[i] = hw_gpu_create(spec);
        s->capacity = SIM_MIN(s->capacity, spec->memory_bytes);
    }
    s->host = true;
    for (int r = 0; r < hw_topo_gpu_count(s->topo) && s->host; r++)
        s->host = hw_topo_host_memory(s->topo, r) >= 0;
    s->scratch = sim_calloc((size_t)hw_topo_link_count(s->topo) + 1, sizeof *s->scratch);
    s->list = sim_calloc(1, sizeof *s->list);
    *out = s;
    return 0;
}

bool plan_screen_host_memory(const plan_screen *s)
{
    return s->host;
}

int64_t plan_screen_capacity(const plan_screen *s)
{
    return s->capacity;
}

void plan_screen_destroy(plan_screen *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap_colls; i++)
        sim_free(s->colls[i].gpus);
    sim_free(s->colls);
    plan__screen_pipe_clear(s);
    sim_free(s->scratch);
    sim_free(s->list);
    for (int i = 0; i < s->n_gpus; i++)
        hw_gpu_destroy(s->gpus[i]);
    hw_topo_destroy(s->topo);
    sim_free(s);
}

/* ---- one chunk's passes -------------------------------------------------------------- */

typedef struct streams {
    double lc;                /* end of the latest compute kernel */
    double tp, ep, cp;        /* when each collective stream is free */
    double pending, held, gather, cp_recv;
    bool have_pending, defer, have_held, have_gather;
    int issued;               /* ops the host thread issued: kernels and collectives */
    double launch_s;          /* the host's time per op issued: op k (from 0) of the pass is
                                 issued at host0 + k x launch_s and starts no earlier */
    double host0;             /* when the host issues the pass's first op, from the pass's
                                 start: negative when it ran ahead during the pass before */
} streams;

/* When the next op of the pass is issued (replay__issue_time, from the pass's start). */
static double issue_s(const streams *st)
{
    return st->host0 + st->issued * st->launch_s;
}

typedef struct cand_ctx {
    plan_screen *S;
    const plan_scenario *sc;
    gen *g;
    int32_t *tp_g, *ep_g, *cp_g;
    int n_tp, n_ep, n_cp;
    double attn_seq;
    double ci;         /* the GPU's comm_interference */
    double launch_s;   /* the host's time per op issued (node.host.launch; the slowest node's) */
    const hw_gpu *gpu; /* the GPU model the kernels are timed on (chunk_times: each) */
    int32_t *edp_g;    /* rank 0's expert-data-parallel group */
    int n_edpg;
} cand_ctx;

static double kernel_s(const cand_ctx *c, const model_op *mo)
{
    return sim_time_to_s(hw_gpu_kernel_time(c->gpu, mo->cls, model_op_dtype(&c->g->sh, mo),
                                            mo->flops, mo->bytes, mo->inner, c->attn_seq));
}

/* TP collective `op` at kernel `kernel` (of the bytes of the collective `bytes_op` there,
 * over `bytes_div`: a ring shift moves a piece of the all-gather it stands for). */
static double tp_coll(const cand_ctx *c, const char *kernel, coll_op op, coll_op bytes_op,
                      bool loss, double bytes_div)
{
    double bytes = plan__tp_coll_bytes(c->g, kernel, bytes_op, loss) / bytes_div;
    return plan__screen_coll(c->S, c->tp_g, c->n_tp, op, bytes,
                             plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_TP]));
}

/* A memory-bound kernel (fp32 vector class) of `flops` and `bytes` on the slowest of the
 * cluster's GPU models. */
static double vector_s(const plan_screen *S, double flops, double bytes)
{
    double t = 0;
    for (int i = 0; i < S->n_gpus; i++)
        t = fmax(t, sim_time_to_s(hw_gpu_kernel_time(S->gpus[i], HW_OP_VECTOR, HW_DTYPE_FP32,
                                                     flops, bytes, 0, 0)));
    return t;
}

/* training.grad_accumulation: cast_add's accumulation after a chunk's backward of units
 * [u0, u1) (dp.c plan__grad_accum: 18 bytes a parameter at the eager memory curve); 0
 * otherwise. Its launches are not counted: the host issues them while the backward's
 * kernels still run (the replay agrees to 0.3% on Qwen3-0.6B in eager PyTorch, where
 * counting them made the screen 5% slow). */
static double grad_accum_s(const plan_screen *S, const gen *g, int u0, int u1)
{
    if (g->sc->training.grad_accumulation != PLAN_GRAD_ACCUM_CAST_ADD)
        return 0;
    plan_accum_work w = plan__grad_accum_work(g, u0, u1);
    double t = 0;
    for (int i = 0; i < S->n_gpus && w.params > 0; i++)
        t = fmax(t, sim_time_to_s(hw_gpu_kernel_time(S->gpus[i], HW_OP_VECTOR, HW_DTYPE_FP32,
                                                     w.params, w.bytes, HW_VECTOR_EAGER, 0)));
    return t;
}

/* A kernel of `dur` alone that starts at `start` while communication runs on its GPU until
 * `comm_end`: it progresses at 1 / (1 + ci) for the part that overlaps (the replay's
 * comm_interference, replay.c retime_kernel). */
static double slowed(double start, double dur, double comm_end, double ci)
{
    double ov = comm_end - start;
    if (ov <= 0 || ci <= 0)
        return dur;
    if (ov >= dur * (1 + ci))
        return dur * (1 + ci);
    return ov + (dur - ov / (1 + ci));
}

/* A kernel that waits for what add_compute makes it wait for, slowed by the collectives
 * running beside it; returns its end. */
static double run_kernel(streams *st, double dur, bool wgrad_kernel, double ci)
{
    double start = fmax(st->lc, issue_s(st));
    if (st->have_held) {
        start = fmax(start, st->held);
        st->have_held = false;
    }
    bool wgrad = (st->have_gather || (st->have_pending && st->defer)) && wgrad_kernel;
    if (wgrad && st->have_gather) {
        start = fmax(start, st->gather);
        st->have_gather = false;
    }
    if (st->have_pending && st->defer && wgrad) {
        st->held = st->pending;
        st->have_held = true;
        st->have_pending = false;
    } else if (st->have_pending) {
        start = fmax(start, st->pending);
        st->have_pending = false;
    }
    st->defer = false;
    st->lc = start + slowed(start, dur, fmax(st->tp, fmax(st->ep, st->cp)), ci);
    st->issued++;
    return st->lc;
}

/* A collective on a stream after the latest kernel; the next kernel waits for it. */
static void blocking(streams *st, double *stream, double dur)
{
    *stream = fmax(fmax(*stream, st->lc), issue_s(st)) + dur;
    st->pending = *stream;
    st->have_pending = true;
    st->issued++;
}

/* A memory-bound kernel of DTensor's SP moving `bytes` (emit.c sp_kernel: a copy of the
 * 2bsh tensor, async TP's reduction): after the latest kernel and `dep`, slowed like the
 * others by the collectives beside it. */
static void sp_kernel(const cand_ctx *c, streams *st, double bytes, double dep)
{
    model_op mo = {.cls = HW_OP_VECTOR, .bytes = bytes};
    double start = fmax(fmax(st->lc, dep), issue_s(st));
    st->lc = start + slowed(start, kernel_s(c, &mo), fmax(st->tp, fmax(st->ep, st->cp)), c->ci);
    st->issued++;
}

/* One kernel with its TP collectives (emit_kernel's rules). */
static void run_op(const cand_ctx *c, streams *st, const model_op *mo, model_phase ph,
                   bool op_recompute)
{
    gen *g = c->g;
    coll_op bop = 0, aop = 0;
    bool bl = false, al = false, bw = false, aw = false;
    bool before = g->tp > 1 && plan__tp_point(mo->name, ph, true, g->sp, &bop, &bl, &bw);
    bool after = g->tp > 1 && plan__tp_point(mo->name, ph, false, g->sp, &aop, &al, &aw);
    if (op_recompute && after && aop == COLL_REDUCE_SCATTER)
        after = false;
    bool wk = plan__ends_with(mo->name, ".wgrad");
    double dur = kernel_s(c, mo);
    bool copies = c->sc->parallel.sp_implementation == PLAN_SP_DTENSOR;
    if (before && bw) {
        if (c->sc->training.finetune.method == PLAN_FT_FULL && !copies) { /* emit.c regather */
            st->tp = fmax(st->tp, st->lc) + tp_coll(c, mo->name, bop, bop, bl, 1);
            st->gather = st->tp;
            st->have_gather = true;
            st->issued++;
        }
        before = false;
    }
    if (plan__tp_fusable(c->sc, mo->name) && mo->cls == HW_OP_MATMUL &&
        ((before && bop == COLL_ALL_GATHER && !after) ||
         (after && aop == COLL_REDUCE_SCATTER && !before))) {
        bool ring = before;
        int pieces = ring || copies ? g->tp : 4; /* emit.c's TP_OVERLAP_SPLITS; torch's t */
        model_op piece = *mo;
        piece.flops /= pieces;
        piece.bytes /= pieces;
        double pd = kernel_s(c, &piece);
        if (ring) {
            if (copies) /* torch's copy of the shard into its symmetric buffer (emit.c) */
                sp_kernel(c, st, 2 * plan__tp_coll_bytes(g, mo->name, bop, false) / pieces, 0);
            double shift = tp_coll(c, mo->name, COLL_RING_SHIFT, bop, false, pieces);
            double t0 = fmax(st->tp, st->lc);
            run_kernel(st, pd, wk, c->ci);
            for (int i = 1; i < pieces; i++) {
                st->pending = t0 + i * shift;
                st->have_pending = true;
                run_kernel(st, pd, false, c->ci);
            }
            st->tp = fmax(st->tp, t0 + (pieces - 1) * shift);
            st->issued += pieces - 1; /* the shifts (emit_overlapped) */
        } else {
            double rs = tp_coll(c, mo->name, aop, aop, al, pieces);
            for (int i = 0; i < pieces; i++) {
                run_kernel(st, pd, i == 0 && wk, c->ci);
                st->have_pending = false;
                st->tp = fmax(st->tp, st->lc) + rs;
                st->issued++;
            }
            st->pending = st->tp;
            st->have_pending = true;
            st->defer = c->sc->parallel.tp_grad_overlap && ph == MODEL_PHASE_BWD &&
                        plan__ends_with(mo->name, ".dgrad");
            if (copies) { /* torch's reduction of the t partial chunks (emit_overlapped) */
                double out = plan__tp_bytes(g, al);
                sp_kernel(c, st, out * (1 + 1.0 / g->tp), st->pending);
                st->have_pending = false;
            }
        }
        return;
    }
    if (before) {
        blocking(st, &st->tp, tp_coll(c, mo->name, bop, bop, bl, 1));
        if (copies && (bop == COLL_ALL_GATHER || bop == COLL_REDUCE_SCATTER)) {
            sp_kernel(c, st, 2 * plan__tp_coll_bytes(g, mo->name, bop, bl), st->pending);
            st->have_pending = false;
        }
    }
    run_kernel(st, dur, wk, c->ci);
    if (after) {
        if (copies && (aop == COLL_ALL_GATHER || aop == COLL_REDUCE_SCATTER))
            sp_kernel(c, st, 2 * plan__tp_coll_bytes(g, mo->name, aop, al), 0);
        blocking(st, &st->tp, tp_coll(c, mo->name, aop, aop, al, 1));
    }
    st->defer = after && c->sc->parallel.tp_grad_overlap && ph == MODEL_PHASE_BWD &&
                plan__ends_with(mo->name, ".dgrad");
}

/* One pass over unit u (emit_pass): the kernels, recompute's filter, the expert all-to-alls
 * around the expert kernels, ring attention's shifts. */
static void run_pass(const cand_ctx *c, streams *st, const unit *u, model_phase ph,
                     bool recompute)
{
    gen *g = c->g;
    model_op_list *ops = c->S->list;
    model_block_ops(&g->model, &g->sh, u->blk, ph, ops);
    int first_exp = -1, last_exp = -1;
    for (int i = 0; i < ops->n; i++)
        if (plan__is_expert(ops->op[i].name) && !ops->op[i].weight_cast) { /* (emit_pass) */
            last_exp = i;
            if (first_exp < 0)
                first_exp = i;
        }
    double a2a = 0;
    if (first_exp >= 0) {
        double bytes = (double)g->sh.micro_batch * (double)g->sh.seq_len / g->cp *
                       g->model.moe.top_k * g->model.hidden * 2.0;
        a2a = plan__screen_coll(c->S, c->ep_g, c->n_ep, COLL_ALL_TO_ALL, bytes,
                        plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_EP]));
    }
    bool op_rc = recompute && u->rc == MODEL_RECOMPUTE_OP;
    bool early_stop = c->sc->training.recompute_early_stop;
    for (int i = 0; i < ops->n; i++) {
        model_op mo = ops->op[i];
        double share = recompute ? model_recompute_share(&mo, u->rc, early_stop) : 1;
        if (share <= 0)
            continue;
        if (mo.weight_cast && plan__weights_resident(g, mo.name)) {
            /* an fp8 weight cast runs in the unit's first forward of the step only
             * (emit_pass): its share of every micro-batch the chunk runs (DualPipe's
             * chunks run half each), an estimate (the kernel's efficiency at its whole size
             * is not kept) */
            if (recompute)
                continue;
            bool dual = g->pp > 1 && c->sc->parallel.pipeline.schedule == PLAN_SCHED_DUALPIPE;
            double runs = dual ? (double)g->A / 2 : (double)g->A;
            mo.flops /= runs;
            mo.bytes /= runs;
        }
        mo.flops *= share;
        mo.bytes *= share;
        if (i == first_exp)
            blocking(st, &st->ep, a2a);
        if (mo.cp_step > 0) {
            /* ring attention: step j computes on the block the shift before it brought */
            double kv = model_cp_kv_bytes(&g->model, &g->sh);
            bool bwd = ph == MODEL_PHASE_BWD;
            int j = mo.cp_step, n = g->cp;
            double bytes = j == 1 ? kv : bwd ? (j < n ? 2 * kv : kv) : (j < n ? kv : 0);
            double shift = plan__screen_coll(c->S, c->cp_g, c->n_cp, COLL_RING_SHIFT, bytes,
                                     plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_CP]));
            double recv = st->cp_recv;
            if (bytes > 0) {
                st->cp = fmax(st->cp, st->lc) + shift;
                st->issued++;
            }
            run_op(c, st, &mo, ph, op_rc);
            if (j > 1)
                st->lc = fmax(st->lc, recv + kernel_s(c, &mo));
            st->cp_recv = st->cp;
            if (j == n && bwd)
                blocking(st, &st->cp, plan__screen_coll(c->S, c->cp_g, c->n_cp, COLL_RING_SHIFT, kv,
                                                plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_CP])));
        } else {
            run_op(c, st, &mo, ph, op_rc);
        }
        if (i == last_exp)
            blocking(st, &st->ep, a2a);
    }
}

/* Forward and backward of units u0..u1-1 for one micro-batch, each from idle streams.
 *
 * The host thread issues the ops one every launch_s (replay__issue_time), the host-bound
 * regime of short kernels. Over the whole model (no pipeline, no per-unit FSDP walk) each
 * op starts no earlier than its issue, and the backward's first op is issued when the
 * forward's last issue ended, which may be before the forward's kernels end. A walk over
 * part of the model (a pipeline stage, an FSDP unit) starts its host at 0 where the replay's
 * has run ahead over the units before, so there a pass is bounded by its ops' issue as a
 * whole only; under a pipeline the replay's host also runs ahead while its stage waits to
 * fill, which this bound does not credit: it errs long there (docs/plan.md). */
static void chunk_walk(const cand_ctx *c, int u0, int u1, double *f, double *b)
{
    gen *g = c->g;
    bool per_op = u0 == 0 && u1 == g->n_units;
    double L = per_op ? c->launch_s : 0;
    streams st = {.launch_s = L};
    for (int u = u0; u < u1; u++)
        run_pass(c, &st, &g->units[u], MODEL_PHASE_FWD, false);
    *f = fmax(fmax(st.lc, st.have_pending ? st.pending : 0), st.issued * c->launch_s);
    double host0 = per_op ? st.issued * c->launch_s - *f : 0;
    st = (streams){.launch_s = L, .host0 = host0};
    for (int u = u1 - 1; u >= u0; u--) {
        const unit *un = &g->units[u];
        bool layer = un->blk == MODEL_BLOCK_LAYER || un->blk == MODEL_BLOCK_MOE;
        if (layer && un->rc != MODEL_RECOMPUTE_NONE)
            run_pass(c, &st, un, MODEL_PHASE_FWD, true);
        run_pass(c, &st, un, MODEL_PHASE_BWD, false);
    }
    *b = fmax(fmax(st.lc, st.have_pending ? st.pending : 0), host0 + st.issued * c->launch_s);
}

/* chunk_walk, memoized: on what the walk depends (the shape, the recompute, the overlaps,
 * the units and the groups' GPUs). */
static void chunk_times(const cand_ctx *c, int u0, int u1, double *f, double *b)
{
    const plan_scenario *sc = c->sc;
    const plan_parallel *par = &sc->parallel;
    size_t nk = 12 + (size_t)c->n_tp + (size_t)c->n_ep + (size_t)c->n_cp;
    double *key = sim_calloc(nk, sizeof *key);
    double head[12] = {par->tp, par->sp, par->tp_comm_overlap, par->tp_grad_overlap, par->cp,
                       par->ep, sc->training.micro_batch, sc->training.recompute,
                       sc->training.recompute_every, u0, u1, c->g->n_units};
    memcpy(key, head, sizeof head);
    size_t k = 12;
    for (int i = 0; i < c->n_tp; i++)
        key[k++] = c->tp_g[i];
    for (int i = 0; i < c->n_ep; i++)
        key[k++] = c->ep_g[i];
    for (int i = 0; i < c->n_cp; i++)
        key[k++] = c->cp_g[i];
    bool found;
    memo *m = plan__memo_slot(&c->S->chunks, key, nk, &found);
    if (found) {
        *f = m->v[0];
        *b = m->v[1];
    } else {
        /* on a cluster of several GPU models, the slowest one's (a pipeline or data-parallel
         * group waits for it) */
        cand_ctx on = *c;
        *f = *b = 0;
        for (int i = 0; i < c->S->n_gpus; i++) {
            double fi, bi;
            on.gpu = c->S->gpus[i];
            chunk_walk(&on, u0, u1, &fi, &bi);
            *f = fmax(*f, fi);
            *b = fmax(*b, bi);
        }
        plan__memo_put(&c->S->chunks, m, key, nk, *f, *b);
    }
    sim_free(key);
}

/* ZeRO-3's gather of unit u (fsdp.c): `share` of its dense bytes over the data-parallel
 * group (1: all; DeepSpeed gathers less of what it kept), then, with `experts`, its
 * experts' over the expert-data-parallel group (none when each rank's experts are its
 * alone); the bytes gathered into *bytes. */
static double unit_gather(const cand_ctx *c, const unit *u, const int32_t *shard, int n_sh,
                          int algo, double share, bool experts, double *bytes)
{
    double dense = plan__fsdp_dense_bytes(u) * share;
    double ex = experts ? plan__fsdp_expert_bytes(c->g, u) : 0;
    *bytes = dense + ex;
    return plan__screen_coll(c->S, shard, n_sh, COLL_ALL_GATHER, dense, algo) +
           plan__screen_coll(c->S, c->edp_g, c->n_edpg, COLL_ALL_GATHER, ex, algo);
}

/* ZeRO-3's reduce-scatter of unit u's gradients, the dense ones over the data-parallel group,
 * the experts' over the expert-data-parallel group. */
static double unit_reduce(const cand_ctx *c, const unit *u, const int32_t *shard, int n_sh,
                          int algo)
{
    const gen *g = c->g;
    double ex = (double)u->trainable_expert * g->gbytes;
    double dense = plan__unit_grad_bytes(g, u) - ex;
    return plan__screen_coll(c->S, shard, n_sh, COLL_REDUCE_SCATTER, dense, algo) +
           (g->n_edp > 1 ? plan__screen_coll(c->S, c->edp_g, c->n_edpg, COLL_REDUCE_SCATTER, ex, algo)
                         : 0);
}

/* ZeRO-3 without a pipeline (fsdp.c): per micro-batch, each unit's gather issued on the
 * data-parallel stream once the unit `prefetch` places before it starts (FSDP1's limiter:
 * one ahead), FSDP2's copy out of the gather buffer before the unit's kernels and its copy
 * into the reduce-scatter buffer after its backward, the reduce-scatter queued behind the
 * gathers; gathered again for the backward when resharded after forward. Two micro-batches
 * are walked and the second's time repeats for the rest. */
static double fsdp_walk(const cand_ctx *c, const int32_t *shard, int n_sh, int m)
{
    gen *g = c->g;
    const plan_parallel *par = &c->sc->parallel;
    int U = g->n_units, algo = plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_DP]);
    bool fsdp2 = par->fsdp.implementation == PLAN_FSDP2;
    int ahead = par->fsdp.implementation == PLAN_FSDP1 && par->fsdp.limit_all_gathers
                    ? 1 : SIM_MAX(1, par->fsdp.prefetch);
    double *F = sim_calloc((size_t)U, sizeof *F), *B = sim_calloc((size_t)U, sizeof *B);
    double *ag = sim_calloc((size_t)U, sizeof *ag), *rs = sim_calloc((size_t)U, sizeof *rs);
    double *cout = sim_calloc((size_t)U, sizeof *cout), *cin = sim_calloc((size_t)U, sizeof *cin);
    double *ready = sim_calloc((size_t)U, sizeof *ready);
    /* DeepSpeed: the backward gathers what its release rule freed after the forward, and a
     * recomputing unit gathers again what it freed after the recomputed forward */
    double *agb = sim_calloc((size_t)U, sizeof *agb), *agr = sim_calloc((size_t)U, sizeof *agr);
    bool ds = par->fsdp.implementation == PLAN_DEEPSPEED;
    if (ds)
        plan__ds_regathers(g, agb, agr); /* (shares first, times below) */
    for (int u = 0; u < U; u++) {
        const unit *un = &g->units[u];
        chunk_times(c, u, u + 1, &F[u], &B[u]);
        double w, unused;
        ag[u] = unit_gather(c, un, shard, n_sh, algo, 1, true, &w);
        agb[u] = ds ? unit_gather(c, un, shard, n_sh, algo, agb[u], true, &unused) : ag[u];
        agr[u] = ds ? unit_gather(c, un, shard, n_sh, algo, agr[u], false, &unused) : 0;
        rs[u] = unit_reduce(c, un, shard, n_sh, algo);
        if (fsdp2) {
            cout[u] = vector_s(c->S, 0, 2 * w);
            cin[u] = vector_s(c->S, 0, (double)un->trainable * (g->wbytes + g->gbytes));
        }
    }
    double comp = 0, dp = 0, end[2] = {0, 0};
    for (int mb = 0; mb < SIM_MIN(m, 2); mb++) {
        for (int pass = 0; pass < 2; pass++) {
            bool bwd = pass == 1;
            if (bwd && !par->fsdp.reshard_after_forward) {
                for (int u = U - 1; u >= 0; u--) {
                    comp += slowed(comp, B[u] + cin[u], dp, c->ci);
                    dp = fmax(dp, comp) + rs[u];
                }
                continue;
            }
            int issued = 0;
            for (int k = 0; k < U; k++) {
                int u = bwd ? U - 1 - k : k;
                for (; issued < U && issued <= k + ahead; issued++) {
                    int v = bwd ? U - 1 - issued : issued;
                    dp = fmax(dp, comp) + (bwd ? agb[v] : ag[v]);
                    ready[v] = dp;
                }
                double at = fmax(comp, ready[u]);
                if (bwd && agr[u] > 0) { /* the recomputed forward, the gathers, the rest */
                    double rc = at + slowed(at, F[u], dp, c->ci);
                    dp = fmax(dp, rc) + agr[u];
                    at = fmax(rc, dp);
                    comp = at + slowed(at, B[u] - F[u] + cin[u], dp, c->ci);
                } else {
                    comp = at + slowed(at, cout[u] + (bwd ? B[u] + cin[u] : F[u]), dp, c->ci);
                }
                if (bwd)
                    dp = fmax(dp, comp) + rs[u];
            }
        }
        end[mb] = fmax(comp, dp);
    }
    sim_free(F);
    sim_free(B);
    sim_free(ag);
    sim_free(rs);
    sim_free(cout);
    sim_free(cin);
    sim_free(ready);
    sim_free(agb);
    sim_free(agr);
    return m == 1 ? end[0] : end[0] + (m - 1) * (end[1] - end[0]);
}

/* ZeRO-3 with a pipeline (fsdp.c plan__fsdp_pp_fwd/bwd): a chunk's units gathered before
 * each forward and, resharded after it, again before each backward, `prefetch` units ahead
 * on the data-parallel stream, FSDP2 copying each out of the gather buffer; gradients kept
 * unsharded until the last micro-batch (reduced in the tail). One chunk micro-batch from an
 * idle stream: into *f and *b. */
static void fsdp_chunk(const cand_ctx *c, int u0, int u1, const int32_t *shard, int n_sh,
                       double *f, double *b)
{
    gen *g = c->g;
    const plan_parallel *par = &c->sc->parallel;
    int algo = plan_coll_algo_id(c->sc->collectives[PLAN_GROUP_DP]);
    bool fsdp2 = par->fsdp.implementation == PLAN_FSDP2;
    int ahead = par->fsdp.implementation == PLAN_FSDP1 && par->fsdp.limit_all_gathers
                    ? 1 : SIM_MAX(1, par->fsdp.prefetch);
    for (int pass = 0; pass < 2; pass++) {
        bool bwd = pass == 1;
        double comp = 0, dp = 0;
        int n = u1 - u0, issued = 0;
        double *ready = sim_calloc((size_t)n + 1, sizeof *ready);
        for (int k = 0; k < n; k++) {
            int u = bwd ? u1 - 1 - k : u0 + k;
            const unit *un = &g->units[u];
            double fu, bu;
            chunk_times(c, u, u + 1, &fu, &bu);
            bool gathers = !bwd || par->fsdp.reshard_after_forward;
            for (; gathers && issued < n && issued <= k + ahead; issued++) {
                const unit *v = &g->units[bwd ? u1 - 1 - issued : u0 + issued];
                double vb;
                dp = fmax(dp, comp) + unit_gather(c, v, shard, n_sh, algo, 1, true, &vb);
                ready[issued] = dp;
            }
            double at = gathers ? fmax(comp, ready[k]) : comp;
            double ub = plan__fsdp_dense_bytes(un) + plan__fsdp_expert_bytes(g, un);
            double copy = gathers && fsdp2 ? vector_s(c->S, 0, 2 * ub) : 0;
            comp = at + slowed(at, copy + (bwd ? bu : fu), dp, c->ci);
        }
        *(bwd ? b : f) = comp;
        sim_free(ready);
    }
}

/* ---- a candidate --------------------------------------------------------------------- */

/* Gradient reduction of `bytes` in buckets of `bucket` on a queue, the buckets produced
 * evenly over a backward of `b` seconds, each taking `c_b` (the last, smaller one `c_last`):
 * what remains after the backward. Bucket i is ready at (i+1)·b/n; the queue ends at the
 * latest of ready_i plus the buckets from i on. */
static double bucket_tail(double b, int nb, double c_b, double c_last)
{
    double end = 0;
    for (int i = 0; i < nb; i++) {
        double ready = (i + 1) * b / nb;
        end = fmax(end, ready) + (i == nb - 1 ? c_last : c_b);
    }
    return fmax(0, end - b);
}

void plan_screen_eval(plan_screen *S, const plan_scenario *sc, bool time_all,
                      plan_screen_est *out)
{
    const plan_parallel *par = &sc->parallel;
    *out = (plan_screen_est){.capacity_bytes = S->capacity};
    int n_ranks = par->tp * par->cp * par->pp * par->dp;
    int64_t gb = sc->training.global_batch > 0 ? sc->training.global_batch
                                               : sc->training.micro_batch * par->dp;
    int64_t host = 0;
    plan P = {.sc = sc, .n_ranks = n_ranks, .global_batch = gb,
              .accum_steps = gb / SIM_MAX(1, sc->training.micro_batch * par->dp),
              .host_bytes = &host, .capacity_bytes = S->capacity};
    gen *g = sim_calloc(1, sizeof *g);
    plan__init_gen(g, &P, false);
    g->ep = par->ep;
    g->n_local = g->model.moe.experts > 0 ? g->model.moe.experts / g->ep : 0;
    g->sh.ep = g->ep;
    g->n = par->dp * par->cp;
    g->n_edp = par->cp * par->dp / par->ep;
    plan__build_units(g);
    int C = g->chunks, pp = g->pp, v = g->vstages, m = (int)g->A;
    g->chunk_first = sim_calloc((size_t)C + 1, sizeof *g->chunk_first);
    int *layers = sim_calloc((size_t)C, sizeof *layers);
    if (par->pipeline.n_stage_layers == C)
        memcpy(layers, par->pipeline.stage_layers, (size_t)C * sizeof *layers);
    else
        plan_pp_partition(sc->model.layers, C, layers);
    for (int ch = 0; ch < C; ch++)
        g->chunk_first[ch + 1] = g->chunk_first[ch] + layers[ch] + (ch == 0 ? 1 : 0);
    g->chunk_first[C] = g->n_units;
    sim_free(layers);
    g->mine = sim_calloc((size_t)g->n_units, sizeof *g->mine);

    cand_ctx c = {.S = S, .sc = sc, .g = g,
                  .attn_seq = (double)sc->training.seq_len / SIM_MAX(1, par->cp),
                  .ci = sc->topology.gpu.comm_interference, .gpu = S->gpus[0]};
    c.launch_s = sim_time_to_s(hw_topology_launch_max_ps(&sc->topology, sc->training.compile));
    int32_t *buf = sim_calloc(4 * (size_t)n_ranks + 4, sizeof *buf);
    c.tp_g = buf;
    c.n_tp = plan__screen_members(par, 0, 1u << PLAN_GROUP_TP, c.tp_g);
    c.cp_g = c.tp_g + c.n_tp;
    c.n_cp = plan__screen_members(par, 0, 1u << PLAN_GROUP_CP, c.cp_g);
    c.ep_g = c.cp_g + c.n_cp;
    c.n_ep = par->ep > 1 ? plan__screen_members(par, 0, 1u << PLAN_GROUP_EP, c.ep_g) : 1;
    int32_t *shard = sim_calloc((size_t)n_ranks + 1, sizeof *shard);
    c.edp_g = sim_calloc((size_t)n_ranks + 1, sizeof *c.edp_g);
    c.n_edpg = plan__screen_members(par, 0, PLAN_SCREEN_EDP, c.edp_g);

    /* each stage's memory first: a candidate that does not fit is not timed (unless asked:
     * its step time is then never read) */
    int64_t peak = 0;
    int stage0 = g->stage, rank0 = g->rank;
    for (int s = 0; s < pp; s++) {
        g->stage = s;
        for (int u = 0; u < g->n_units; u++)
            g->mine[u] = false;
        double stage_act = 0, extra = 0, weights_max = 0;
        for (int k = 0; k < v; k++) {
            int ch = pp > 1 ? plan_pp_chunk_of(par->pipeline.schedule, pp, s, k) : 0;
            for (int u = g->chunk_first[ch]; u < g->chunk_first[ch + 1]; u++) {
                const unit *un = &g->units[u];
                g->mine[u] = true;
                stage_act += un->act;
                extra = fmax(extra, un->act_extra);
                weights_max = fmax(weights_max, un->weight_bytes);
            }
        }
        g->rank = 0;
        plan_mem mem;
        plan__persistent(g, &mem);
        /* per chunk: the bytes a micro-batch's forward leaves, and the most its backward
         * adds for a while (a recomputed layer's rebuilt activations; on the head's chunk the
         * loss's logit gradients) */
        double ca[2 * PLAN_SCREEN_CHUNKS_MAX + 2] = {0};
        double *cact = ca, *ctr = ca + C;
        bool walkable = C <= PLAN_SCREEN_CHUNKS_MAX;
        for (int ch = 0; ch < C && walkable; ch++)
            for (int u = g->chunk_first[ch]; u < g->chunk_first[ch + 1]; u++) {
                const unit *un = &g->units[u];
                cact[ch] += un->act;
                double t = un->act_extra;
                if (u == g->n_units - 1) {
                    double during, after;
                    model_loss_grad_bytes(&g->model, &g->sh,
                                          sc->training.cross_entropy == PLAN_CE_VOCAB_PARALLEL,
                                          &during, &after);
                    t = fmax(t, after);
                }
                ctr[ch] = fmax(ctr[ch], t);
            }
        double act = 0, transient = 0;
        if (pp > 1 && walkable) {
            act = plan__screen_activation_peak(S, sc, pp, v, m, s, cact, ctr);
        } else {
            int held = pp > 1 ? plan__screen_inflight(S, sc, pp, v, m, s) : 1;
            act = stage_act / v * held;
            transient = extra;
            for (int ch = 0; ch < C && walkable; ch++)
                transient = fmax(transient, ctr[ch]);
        }
        if (g->zero == 3 && g->n > 1 && pp == 1) {
            transient = fmax(transient, 2 * weights_max);
        } else if (g->zero == 3 && g->n > 1) {
            /* with a pipeline, ZeRO-3 keeps each unit's gradients unsharded from its first
             * micro-batch to its last, and, unless it reshards after forward, the unit
             * gathered too (fsdp.c); resharding, the gathers ahead are in flight */
            double whole = 0;
            for (int u = 0; u < g->n_units; u++)
                if (g->mine[u])
                    whole += plan__unit_grad_bytes(g, &g->units[u]) +
                             (par->fsdp.reshard_after_forward ? 0 : g->units[u].weight_bytes);
            act += whole;
            if (par->fsdp.reshard_after_forward)
                transient = fmax(transient, (1 + SIM_MAX(1, par->fsdp.prefetch)) * weights_max);
        }
        /* cast_add: the cast's fp32 temporary of the stage's largest tensor (dp.c
         * plan__grad_accum), counted over the activation peak */
        if (sc->training.grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD)
            for (int u = 0; u < g->n_units; u++)
                if (g->mine[u])
                    transient = fmax(transient, (double)plan__grad_accum_work(g, u, u + 1).temp_bytes);
        peak = SIM_MAX(peak, mem.total + (int64_t)(act + transient));
        /* the optimizer step's fp32 gradients, once the activations are freed, or with
         * the optimizer offloaded a unit's gradient cast for its copy to the host
         * (optimizer.c) */
        double step_temp = plan__optimizer_grad_bytes(g);
        if (par->offload.optimizer != PLAN_OFFLOAD_NONE &&
            plan__host_grad_bytes(g) > plan__grad_store_bytes(g))
            for (int u = 0; u < g->n_units; u++)
                if (g->mine[u])
                    step_temp = fmax(step_temp, ceil(plan__shard_params(g, &g->units[u]) *
                                                     plan__host_grad_bytes(g)));
        peak = SIM_MAX(peak, mem.total + (int64_t)ceil(step_temp));
    }
    out->peak_bytes = peak;
    double *f = NULL, *b = NULL, *p2p = NULL;
    if (!time_all && peak > S->capacity) {
        out->step_s = out->compute_s = out->bubble_s = out->tail_s = NAN;
        goto done;
    }
    g->stage = stage0;
    g->rank = rank0;
    for (int u = 0; u < g->n_units; u++)
        g->mine[u] = false;

    /* chunk times, from idle streams (the chunk's ranks are alike: its first's groups) */
    f = sim_calloc((size_t)C, sizeof *f);
    b = sim_calloc((size_t)C, sizeof *b);
    int n_shard0 = plan__screen_members(par, 0, (1u << PLAN_GROUP_DP) | (1u << PLAN_GROUP_CP),
                           shard);
    for (int ch = 0; ch < C; ch++) {
        if (g->zero == 3 && g->n > 1 && pp > 1)
            fsdp_chunk(&c, g->chunk_first[ch], g->chunk_first[ch + 1], shard, n_shard0, &f[ch],
                       &b[ch]);
        else
            chunk_times(&c, g->chunk_first[ch], g->chunk_first[ch + 1], &f[ch], &b[ch]);
        b[ch] += grad_accum_s(S, g, g->chunk_first[ch], g->chunk_first[ch + 1]);
    }
    /* each chunk boundary's transfer, between the first ranks of its two stages */
    p2p = sim_calloc((size_t)C + 1, sizeof *p2p);
    double p2p_bytes = plan__p2p_bytes(g);
    for (int ch = 0; ch + 1 < C && pp > 1; ch++) {
        int s0 = plan_pp_stage_of(par->pipeline.schedule, pp, ch, 0);
        int s1 = plan_pp_stage_of(par->pipeline.schedule, pp, ch + 1, 0);
        int32_t pair[2] = {plan__screen_stage_rank(par, s0), plan__screen_stage_rank(par, s1)};
        p2p[ch] = s0 == s1 ? 0
                           : plan__screen_coll(S, pair, 2, COLL_SEND_RECV, p2p_bytes,
                                       plan_coll_algo_id(sc->collectives[PLAN_GROUP_PP]));
    }
    double T = 0, busiest = 0;
    if (pp > 1) {
        T = plan__screen_pipeline(S, sc, pp, v, m, f, b, p2p);
    } else {
        T = m * (f[0] + b[0]);
    }
    for (int s = 0; s < pp; s++) {
        double work = 0;
        for (int k = 0; k < v; k++) {
            int ch = pp > 1 ? plan_pp_chunk_of(par->pipeline.schedule, pp, s, k) : 0;
            work += m * (f[ch] + b[ch]);
        }
        busiest = fmax(busiest, work);
    }

    /* each stage: what follows its last backward */
    double step = 0;
    for (int s = 0; s < pp; s++) {
        g->stage = s;
        g->rank = 0;
        for (int u = 0; u < g->n_units; u++)
            g->mine[u] = false;
        for (int k = 0; k < v; k++) {
            int ch = pp > 1 ? plan_pp_chunk_of(par->pipeline.schedule, pp, s, k) : 0;
            for (int u = g->chunk_first[ch]; u < g->chunk_first[ch + 1]; u++)
                g->mine[u] = true;
        }
        /* the chunk whose backward the stage runs last: its first */
        int last_ch = pp > 1 ? plan_pp_chunk_of(par->pipeline.schedule, pp, s, 0) : 0;
        int rank = plan__screen_stage_rank(par, s);
        double grads = 0, opt_params = 0;

        /* the tail: reduction of the gradients, optimizer, gathers */
        int n_sh = plan__screen_members(par, rank, (1u << PLAN_GROUP_DP) | (1u << PLAN_GROUP_CP),
                           shard);
        int algo = plan_coll_algo_id(sc->collectives[PLAN_GROUP_DP]);
        double tail = 0;
        for (int u = 0; u < g->n_units; u++)
            if (g->mine[u]) {
                grads += plan__unit_grad_bytes(g, &g->units[u]);
                opt_params += plan__shard_params(g, &g->units[u]);
            }
        double bucket = (double)par->ddp.bucket_bytes;
        if (n_sh > 1 && (g->zero <= 2 || pp > 1) && grads > 0) {
            /* the last chunk's gradients reduce beside its last backward; the others' were
             * reduced earlier */
            double last = 0; /* the buckets' bytes: with ep > 1 the experts' go apart */
            for (int u = g->chunk_first[last_ch]; u < g->chunk_first[last_ch + 1]; u++)
                last += plan__unit_grad_bytes(g, &g->units[u]) -
                        (g->ep > 1 ? (double)g->units[u].trainable_expert * g->gbytes : 0);
            last = fmax(last, 1);
            coll_op op = plan__grad_reduce_op(g);
            int nb = (int)ceil(last / bucket);
            double cb = plan__screen_coll(S, shard, n_sh, op, fmin(bucket, last), algo);
            double cl = plan__screen_coll(S, shard, n_sh, op, last - (nb - 1) * bucket, algo);
            double r = (nb - 1) * cb + cl; /* the chunk's reduction, one micro-batch */
            /* overlapped, the buckets reduce as the backward fills them; not, after it (but
             * ZeRO-3's reduce-scatters, which follow each unit's backward either way) */
            bool overlapped = par->ddp.overlap || g->zero == 3;
            double exposed = overlapped ? bucket_tail(b[last_ch], SIM_MAX(nb, 1), cb, cl) : r;
            /* experts' gradients (ep > 1): reduced over the expert-data-parallel group
             * after each unit's backward, on the same stream; with them the queue holds
             * r + r_e over nb + units items produced evenly over the backward, and ends
             * max(last item, b/N + R - b) after it (bucket_tail's two ends) */
            if (g->ep > 1 && g->n_edp > 1) {
                int32_t *egrp = sim_calloc((size_t)n_ranks + 1, sizeof *egrp);
                int ne = plan__screen_members(par, rank, PLAN_SCREEN_EDP, egrp);
                double r_e = 0;
                int units = 0;
                for (int u = g->chunk_first[last_ch]; u < g->chunk_first[last_ch + 1]; u++)
                    if (g->units[u].trainable_expert > 0) {
                        r_e += plan__screen_coll(S, egrp, ne, op,
                                         (double)g->units[u].trainable_expert * g->gbytes, algo);
                        units++;
                    }
                sim_free(egrp);
                if (units > 0) {
                    double N = nb + units, R = r + r_e, bb = b[last_ch];
                    /* not overlapped, the experts' still follow their units' backwards (the
                     * queue's end past the backward's) and the dense buckets queue after */
                    exposed = overlapped ? fmax(cl, bb / N + R - bb)
                                         : bucket_tail(bb, units, r_e / units, r_e / units) + r;
                    r = R;
                }
            }
            tail += exposed;
            /* kernels beside the reductions run slower (comm_interference): the last
             * backward's, and under ZeRO-2 (which reduces every micro-batch) every
             * micro-batch's, for as long as both run; a reduction longer than a
             * micro-batch's kernels sets the pace instead */
            double overlap = fmin(r - exposed, b[last_ch]);
            if (g->zero == 2) {
                double mb_s = 0;
                for (int k = 0; k < v; k++) {
                    int ch = pp > 1 ? plan_pp_chunk_of(par->pipeline.schedule, pp, s, k) : 0;
                    mb_s += f[ch] + b[ch];
                }
                double r_all = r * grads / last;
                overlap += (m - 1) * fmin(r_all, mb_s);
                tail += (m - 1) * fmax(0, r_all - mb_s);
            }
            tail += c.ci * overlap;
        }
        if (par->offload.optimizer != PLAN_OFFLOAD_NONE) {
            int mem_dev = hw_topo_host_memory(S->topo, rank);
            int node_of = hw_topo_device(S->topo, hw_topo_gpu_device(S->topo, rank))->node;
            const hw_node_spec *node = hw_topology_node_spec(&sc->topology, node_of);
            int sharers = 0;
            for (int r = 0; r < n_ranks; r++)
                sharers += hw_topo_host_memory(S->topo, r) == mem_dev;
            double bw = hw_topo_memory_bw_Bps(S->topo, mem_dev) * node->host.memory_efficiency /
                        SIM_MAX(sharers, 1);
            double pcie = hw_pcie_bw_Bps(node->pcie.gen, node->pcie.lanes);
            /* per unit: the gradients (cast to the host's dtype on the GPU first when it
             * differs, the next cast after this copy) down, CPU Adam, parameters up,
             * pipelined over the units (optimizer.c emit_offload_step): the busiest of the three,
             * plus the others' share of one unit */
            double hg = plan__host_grad_bytes(g);
            double down = opt_params * hg / pcie;
            /* the updated 16-bit parameters back up, unless they stay on the host (with
             * params: nvme they go to the drive, which the screen times as PCIe) */
            double up = par->offload.params == PLAN_OFFLOAD_CPU ? 0 : opt_params * g->wbytes / pcie;
            double cpu = opt_params * plan__cpu_adam_bytes_per_param(g) / bw;
            int units = 0;
            for (int u = 0; u < g->n_units; u++) {
                units += g->mine[u];
                double prm = g->mine[u] ? plan__shard_params(g, &g->units[u]) : 0;
                if (prm > 0 && hg > plan__grad_store_bytes(g))
                    down += vector_s(S, 0, prm * (g->gbytes + hg));
            }
            double most = fmax(down, fmax(cpu, up));
            tail += most + (down + cpu + up - most) / SIM_MAX(units, 1);
        } else {
            double per = plan__optimizer_bytes_per_param(g);
            double flops = sc->training.optimizer == PLAN_OPT_ADAM ? 12 : 4;
            for (int u = 0; u < g->n_units; u++)
                if (g->mine[u] && g->units[u].trainable > 0) {
                    double prm = plan__shard_params(g, &g->units[u]);
                    tail += vector_s(S, flops * prm, per * prm);
                }
        }
        if ((g->zero == 1 || g->zero == 2) && !par->ddp.overlap_param_gather) {
            /* the updated parameters gathered in buckets (dp.c plan__param_gather): the dense
             * ones over the data-parallel group, the experts' over the expert-data-parallel
             * one */
            double dense = 0, expert = 0;
            for (int u = 0; u < g->n_units; u++)
                if (g->mine[u]) {
                    dense += (double)(g->units[u].trainable - g->units[u].trainable_expert) *
                             g->wbytes;
                    expert += (double)g->units[u].trainable_expert * g->wbytes;
                }
            if (n_sh > 1 && dense > 0) {
                int nb = (int)ceil(dense / bucket);
                tail += (nb - 1) * plan__screen_coll(S, shard, n_sh, COLL_ALL_GATHER, bucket, algo) +
                        plan__screen_coll(S, shard, n_sh, COLL_ALL_GATHER, dense - (nb - 1) * bucket,
                                          algo);
            }
            if (g->n_edp > 1 && expert > 0) {
                int32_t *egrp = sim_calloc((size_t)n_ranks + 1, sizeof *egrp);
                int ne = plan__screen_members(par, rank, PLAN_SCREEN_EDP, egrp);
                int nb = (int)ceil(expert / bucket);
                tail += (nb - 1) * plan__screen_coll(S, egrp, ne, COLL_ALL_GATHER, bucket, algo) +
                        plan__screen_coll(S, egrp, ne, COLL_ALL_GATHER, expert - (nb - 1) * bucket,
                                          algo);
                sim_free(egrp);
            }
        }
        /* the stage's last backward ends before the pipeline's by the backwards of the
         * chunks after it that stage 0 still runs: stage s ends about s chunk backwards
         * earlier */
        double end = pp > 1 ? T - s * b[last_ch] : T;
        step = fmax(step, end + tail);
        out->tail_s = fmax(out->tail_s, tail);
    }
    /* ZeRO-3 without a pipeline: the micro-batches' gathers and reduce-scatters walked
     * (fsdp_walk) instead of the kernels alone */
    if (g->zero == 3 && g->n > 1 && pp == 1) {
        int n_sh = plan__screen_members(par, 0, (1u << PLAN_GROUP_DP) | (1u << PLAN_GROUP_CP),
                           shard);
        step += fsdp_walk(&c, shard, n_sh, m) - T;
    }
    out->step_s = step;
    out->compute_s = busiest;
    out->bubble_s = fmax(0, T - busiest);
done:
    sim_free(f);
    sim_free(b);
    sim_free(p2p);
    sim_free(buf);
    sim_free(shard);
    sim_free(c.edp_g);
    sim_free(g->units);
    sim_free(g->chunk_first);
    sim_free(g->mine);
    sim_free(g);
}
