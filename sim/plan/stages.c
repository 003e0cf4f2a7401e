/* Pipeline parallelism's ranks (pp > 1, with DDP, ZeRO-1/2 or ZeRO-3): each stage runs its
 * schedule's actions (plan/pipeline.c) on the chunks it holds, receiving activations
 * (gradients) from the stage of the previous (next) chunk over the async point-to-point
 * stream and sending them on, and reduces each chunk's gradients after its last backward.
 *
 * Transfers: under every schedule but DualPipe a receive is posted when its action starts and
 * a send as soon as its data is ready, the way Megatron's schedules overlap them. DualPipe's
 * implementation batches them instead: its schedule lists when each is added to a batch and
 * when the batch is issued (after the stage's previous compute) and waited for (before the
 * next), so a send completes only once its receiver has posted the matching receive. */
#include "core/sim.h"

#include <string.h>

#include "plan/gen-internal.h"
#include "plan/pipeline.h"

/* A pipeline transfer of one micro-batch's activations (or their gradients) across a chunk
 * boundary on the async stream, after `dep` when `have_dep`. */
double plan__p2p_bytes(const gen *g)
{
    double bytes = (double)g->sh.micro_batch * (double)g->sh.seq_len / g->cp *
                   g->model.hidden * 2.0;
    if (g->tp > 1) /* Megatron's scatter/gather: each TP rank sends its 1/t slice */
        bytes /= g->tp;
    return bytes;
}

static uint32_t add_p2p(gen *g, uint32_t group, const char *name, int mb, bool have_dep,
                        uint32_t dep)
{
    double bytes = plan__p2p_bytes(g);
    trace_op o = {
        .kind = TRACE_OP_COLL,
        .stream = TRACE_STREAM_ASYNC,
        .phase = TRACE_PHASE_COMM,
        .layer = TRACE_NO_LAYER,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .coll = plan__coll_next(g, group, COLL_SEND_RECV, bytes),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    return trace_add_op(g->t, g->rank, &o, have_dep ? &dep : NULL, have_dep);
}

/* The pair group of boundary b (chunks b and b+1) for micro-batches of direction `dir`:
 * activations (`fwd`) or gradients. */
static uint32_t pp_group(const gen *g, bool fwd, int dir, int b)
{
    SIM_ASSERT(b >= 0 && b + 1 < g->chunks && dir * g->chunks + b < g->pp_slots,
               "boundary %d direction %d", b, dir);
    return (fwd ? g->pp_fwd : g->pp_bwd)[dir * g->chunks + b];
}

/* DualPipe's transfers of the open batch, issued at a commit. */
typedef struct batch {
    plan_pp_action posted[8]; /* added, not yet issued */
    int n_posted;
    uint32_t wait[8];         /* issued: the next action waits for them */
    int n_wait;
} batch;

static void batch_commit(gen *g, batch *bt)
{
    for (int i = 0; i < bt->n_posted; i++) {
        const plan_pp_action *a = &bt->posted[i];
        int c = plan_pp_chunk_of(PLAN_SCHED_DUALPIPE, g->pp, g->stage, a->vchunk);
        bool recv = a->kind == PLAN_PP_RECV;
        /* activations come from chunk c-1 and go to c+1; gradients the other way */
        int b = a->fwd == recv ? c - 1 : c;
        const char *name = a->fwd ? (recv ? "pp.recv_activation" : "pp.send_activation")
                                  : (recv ? "pp.recv_gradient" : "pp.send_gradient");
        SIM_ASSERT(bt->n_wait < (int)SIM_ARRAY_LEN(bt->wait), "%d transfers", bt->n_wait);
        bt->wait[bt->n_wait++] = add_p2p(g, pp_group(g, a->fwd, a->dir, b), name, a->mb,
                                         g->have_compute, g->last_compute);
    }
    bt->n_posted = 0;
}

/* One chunk's forward of micro-batch `mb` (units u0..u1-1), the first kernel after `deps`;
 * returns the last kernel's span. */
static span chunk_fwd(gen *g, int u0, int u1, int mb, bool first_mb, const uint32_t *deps,
                      size_t nd)
{
    span last = {0};
    for (int u = u0; u < u1; u++) {
        uint32_t all[10];
        size_t n = 0;
        if (u == u0)
            for (size_t i = 0; i < nd; i++)
                all[n++] = deps[i];
        const uint32_t *gd = plan__gather_dep(g, u, first_mb);
        if (gd)
            all[n++] = *gd;
        span sp = plan__emit_fwd(g, &g->units[u], mb, all, n);
        if (sp.any)
            last = sp;
    }
    return last;
}

/* One chunk's backward (or one part of it), the first kernel with one after `deps`. */
static span chunk_bwd(gen *g, int u0, int u1, int mb, bool bucketing, const uint32_t *deps,
                      size_t nd)
{
    span last = {0};
    bool first = true;
    for (int u = u1 - 1; u >= u0; u--) {
        span sp = plan__emit_bwd(g, &g->units[u], mb, bucketing, first ? deps : NULL,
                                 first ? nd : 0);
        if (sp.any) {
            last = sp;
            first = false;
        }
    }
    return last;
}

/* The stage's schedule into `out` (room for PLAN_PP_ACTIONS); its count. */
static int stage_schedule(const gen *g, plan_pp_action *out)
{
    plan_schedule sched = g->sc->parallel.pipeline.schedule;
    int m = (int)g->A;
    if (!g->pp_all)
        return plan_pp_schedule(sched, g->pp, g->vstages, m, g->stage, out);
    int n = g->pp_n[g->stage];
    memcpy(out, &g->pp_all[(size_t)g->stage * (size_t)PLAN_PP_ACTIONS(m, g->vstages)],
           (size_t)n * sizeof *out);
    return n;
}

/* Whether chunks b and b+1 run on different stages (ZB-V's turn at stage p-1 does not). */
static bool remote(const gen *g, int b)
{
    plan_schedule sched = g->sc->parallel.pipeline.schedule;
    return plan_pp_stage_of(sched, g->pp, b, 0) != plan_pp_stage_of(sched, g->pp, b + 1, 0);
}

void plan__gen_pipeline(gen *g)
{
    const plan_parallel *par = &g->sc->parallel;
    plan_schedule sched = par->pipeline.schedule;
    int p = g->pp, v = g->vstages, m = (int)g->A;
    bool batched = sched == PLAN_SCHED_DUALPIPE;
    plan_pp_action *acts = sim_calloc((size_t)PLAN_PP_ACTIONS(m, v), sizeof *acts);
    int n_acts = stage_schedule(g, acts);
    /* each virtual chunk's last backward in this stage's order carries the reduction (with
     * the backward split, its last weight pass); its first forward waits for a gather ahead */
    int *last_bwd_of = sim_calloc((size_t)v, sizeof *last_bwd_of);
    int *first_fwd_of = sim_calloc((size_t)v, sizeof *first_fwd_of);
    for (int i = n_acts - 1; i >= 0; i--)
        if (acts[i].kind == PLAN_PP_RUN && acts[i].fwd)
            first_fwd_of[acts[i].vchunk] = i;
    for (int i = 0; i < n_acts; i++)
        if (acts[i].kind == PLAN_PP_RUN && !acts[i].fwd && acts[i].part != PLAN_PP_INPUT)
            last_bwd_of[acts[i].vchunk] = i;
    uint32_t last_bwd = 0;
    plan__param_gather_ahead(g);
    bool fsdp = plan__gathers_weights(g);
    SIM_ASSERT(!(fsdp && batched), "dualpipe with ZeRO-3");
    if (fsdp)
        plan__fsdp_pp_begin(g);
    batch bt = {0};
    for (int i = 0; i < n_acts; i++) {
        const plan_pp_action *a = &acts[i];
        if (a->kind == PLAN_PP_RECV || a->kind == PLAN_PP_SEND) {
            SIM_ASSERT(bt.n_posted < (int)SIM_ARRAY_LEN(bt.posted), "%d posted", bt.n_posted);
            bt.posted[bt.n_posted++] = *a;
            continue;
        }
        if (a->kind == PLAN_PP_COMMIT) {
            batch_commit(g, &bt);
            continue;
        }
        int c = plan_pp_chunk_of(sched, p, g->stage, a->vchunk);
        int u0 = g->chunk_first[c], u1 = g->chunk_first[c + 1];
        /* what the action's first kernel waits for: its batch, or its own receive */
        uint32_t deps[8];
        size_t nd = 0;
        if (batched) {
            for (int k = 0; k < bt.n_wait; k++)
                deps[nd++] = bt.wait[k];
            bt.n_wait = 0;
        }
        if (a->fwd) {
            if (c > 0 && !batched && remote(g, c - 1))
                deps[nd++] = add_p2p(g, pp_group(g, true, 0, c - 1), "pp.recv_activation",
                                     a->mb, false, 0);
            span last;
            if (fsdp)
                last = plan__fsdp_pp_fwd(g, u0, u1, a->mb, deps[0], nd > 0);
            else
                last = chunk_fwd(g, u0, u1, a->mb, i == first_fwd_of[a->vchunk], deps, nd);
            if (c < g->chunks - 1 && !batched && remote(g, c))
                add_p2p(g, pp_group(g, true, 0, c), "pp.send_activation", a->mb, last.any,
                        last.last);
        } else {
            /* a zero-bubble weight pass: no transfer, and the gradients it produces fill the
             * buckets */
            bool weight = a->part == PLAN_PP_WEIGHT;
            if (c < g->chunks - 1 && !weight && !batched && remote(g, c))
                deps[nd++] = add_p2p(g, pp_group(g, false, 0, c), "pp.recv_gradient", a->mb,
                                     false, 0);
            g->bwd_part = a->part;
            bool bucketing = !fsdp && g->n > 1 && a->part != PLAN_PP_INPUT &&
                             (g->zero == 2 || i == last_bwd_of[a->vchunk]);
            span last;
            if (fsdp)
                last = plan__fsdp_pp_bwd(g, u0, u1, a->mb, i == last_bwd_of[a->vchunk],
                                         deps[0], nd > 0);
            else
                last = chunk_bwd(g, u0, u1, a->mb, bucketing, deps, nd);
            if (last.any && !fsdp && a->part != PLAN_PP_INPUT)
                last.last = plan__grad_accum(g, u0, u1, a->mb, last.last);
            if (last.any)
                last_bwd = last.last;
            if (bucketing)
                plan__bucket_flush(g, last_bwd, a->mb);
            if (c > 0 && !weight && !batched && remote(g, c - 1))
                add_p2p(g, pp_group(g, false, 0, c - 1), "pp.send_gradient", a->mb, last.any,
                        last.last);
            g->bwd_part = PLAN_PP_FULL;
        }
    }
    SIM_ASSERT(bt.n_posted == 0, "%d transfers never issued", bt.n_posted);
    /* the optimizer waits for the backward, the gradients' last collective and the step's
     * last batch of transfers */
    uint32_t deps[10] = {last_bwd};
    size_t nd = 1;
    if (g->have_last_coll)
        deps[nd++] = g->last_coll;
    for (int k = 0; k < bt.n_wait; k++)
        deps[nd++] = bt.wait[k];
    uint32_t opt = plan__emit_step(g, deps, nd);
    plan__param_gather(g, opt);
    if (fsdp)
        plan__fsdp_pp_end(g);
    sim_free(acts);
    sim_free(last_bwd_of);
    sim_free(first_fwd_of);
}

/* Activation offload: the most bytes the rank's layers hold in host memory at once. A chunk's
 * layers' activations go out after its forward of a micro-batch and come back when its
 * backward (or input-gradient pass) of that micro-batch starts, so the host holds the
 * micro-batch chunks whose forward has run and backward not yet begun, in the stage's
 * schedule; one micro-batch without pipelining. */
double plan__offloaded_activations(const gen *g)
{
    int C = g->chunks, v = g->vstages;
    plan_schedule sched = g->sc->parallel.pipeline.schedule;
    double *chunk = sim_calloc((size_t)C + 1, sizeof *chunk);
    for (int c = 0; c < C; c++)
        for (int u = g->chunk_first[c]; u < g->chunk_first[c + 1]; u++)
            if (g->units[u].blk == MODEL_BLOCK_LAYER || g->units[u].blk == MODEL_BLOCK_MOE)
                chunk[c] += g->units[u].act;
    double most = 0;
    if (g->pp == 1) {
        most = chunk[0];
    } else {
        int m = (int)g->A;
        plan_pp_action *acts = sim_calloc((size_t)PLAN_PP_ACTIONS(m, v), sizeof *acts);
        int n = stage_schedule(g, acts);
        double held = 0;
        for (int i = 0; i < n; i++) {
            if (acts[i].kind != PLAN_PP_RUN)
                continue;
            double bytes = chunk[plan_pp_chunk_of(sched, g->pp, g->stage, acts[i].vchunk)];
            if (acts[i].fwd)
                held += bytes;
            else if (acts[i].part != PLAN_PP_WEIGHT)
                held -= bytes;
            most = SIM_MAX(most, held);
        }
        sim_free(acts);
    }
    sim_free(chunk);
    return most;
}
