/* Event-driven replay of a trace (see replay.h). */
#include "core/sim.h"

#include <string.h>
#include <time.h>

#include "replay/replay-internal.h"

#define SECONDS_PER_NS 1e-9

/* Wall-clock seconds from t0 to t1 (CLOCK_MONOTONIC). */
static double elapsed_s(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) +
           SECONDS_PER_NS * (double)(t1->tv_nsec - t0->tv_nsec);
}

/* An EV_OP_DONE event's payload: the rank, the rank's place in the group of a collective op
 * (-1 for other ops) and the op's index in the rank's trace. */
static int op_ev_rank(const sim_event *ev)
{
    return ev->a;
}

static int op_ev_member(const sim_event *ev)
{
    return ev->b;
}

static uint32_t op_ev_op(const sim_event *ev)
{
    return (uint32_t)ev->c;
}

static void op_ev_set(sim_event *ev, int rank, int member, uint32_t op)
{
    ev->a = rank;
    ev->b = member;
    ev->c = op;
}

/* An op event of `type` at `t`: EV_OP_DONE (`member`: the rank's place in the group of a
 * collective op, -1 for other ops) or EV_ISSUE (`member`: the op's stream, -1 for p2p). */
static sim_event *push_op_ev(replay_ctx *c, int type, int rank, uint32_t op, sim_time t,
                             int member)
{
    sim_event *ev = sim_eventq_alloc(c->q);
    ev->type = (uint16_t)type;
    op_ev_set(ev, rank, member, op);
    sim_eventq_push(c->q, ev, t);
    return ev;
}

static sim_event *push_op_done(replay_ctx *c, int rank, uint32_t op, sim_time t, int member)
{
    return push_op_ev(c, EV_OP_DONE, rank, op, t, member);
}

/* Whether a collective runs on one of the rank's communication streams. */
static bool comm_running(const rank_state *rs)
{
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        if (rs->busy[TRACE_STREAM_COMM(g)])
            return true;
    return false;
}

/* NCCL kernels occupy SMs and HBM bandwidth: a compute kernel progresses at 1 / (1 + the
 * catalog's comm_interference) while a collective runs on its GPU (docs/calibration.md),
 * for exactly the part of it that overlaps. Called when the rank's communication starts or
 * stops: the kernel in flight, if any, is charged its progress so far at the old rate and
 * its end moved to where the rest takes it at the new one. */
static void retime_kernel(replay_ctx *c, int rank, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    bool slowed = comm_running(rs);
    if (!rs->k_ev || slowed == rs->k_slowed)
        return;
    double f = 1 + plan_gpu(c->p, rank)->comm_interference;
    rs->k_left = fmax(0, rs->k_left - (double)(now - rs->k_at) / (rs->k_slowed ? f : 1));
    rs->k_at = now;
    rs->k_slowed = slowed;
    uint32_t op = op_ev_op(rs->k_ev);
    sim_eventq_cancel(c->q, rs->k_ev);
    rs->k_ev = push_op_done(c, rank, op, now + sim_time_from_ps(rs->k_left * (slowed ? f : 1) + 0.5),
                            -1);
}

static void finish_coll(replay_ctx *c, uint32_t ci, sim_time now)
{
    coll_state *cs = &c->colls[ci];
    const trace_group *g = &c->t->groups[c->t->colls[ci].group];
    if (cs->run) { /* (an estimated one has no executor) */
        sim_pool_put(c->exec_pool, cs->run);
        cs->run = NULL;
    }
    cs->arrived = 0;
    for (int m = 0; m < g->n; m++)
        if (!c->active || c->active[g->ranks[m]])
            push_op_done(c, g->ranks[m], c->member_op[cs->member_first + (uint64_t)m], now, m);
}

static void on_flow_done(void *ctx, uint64_t tag, sim_time now)
{
    replay_ctx *c = ctx;
    if (tag & COPY_TAG) {
        push_op_done(c, (int)((tag >> 32) & 0x7fffffff), (uint32_t)tag, now, -1);
        return;
    }
    uint32_t ci = (uint32_t)tag;
    if (coll_exec_flow_done(c->colls[ci].run, c->topo, c->net, now, tag))
        finish_coll(c, ci, now);
}

void replay__memory_row(replay_ctx *c, int rank, sim_time t, int cat, int64_t bytes)
{
    if (c->journal)
        replay__j_mem(c, rank, t, cat, bytes);
    replay__add_memory_row(c->res, rank, t, cat, bytes);
}

/* Applies op `op`'s memory events of one side (start or end). */
static void apply_mem(replay_ctx *c, int rank, uint32_t op, int at_end, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    const trace_op *o = &rs->tr->ops[op];
    if (o->n_mem == 0)
        return;
    bool changed = false;
    for (uint32_t k = 0; k < o->n_mem; k++) {
        const trace_mem *e = &rs->tr->mem[o->mem_first + k];
        if (e->at_end != at_end)
            continue;
        rs->level.bytes[e->cat] += e->bytes;
        rs->level.total += e->bytes;
        changed = true;
        if (c->opt->timeline)
            replay__memory_row(c, rank, now, e->cat, rs->level.bytes[e->cat]);
    }
    if (changed && rs->level.total > rs->peak.total)
        rs->peak = rs->level;
}

/* The step before the reported one has ended on every rank: its end opens the window. */
static void open_window(replay_ctx *c)
{
    int steps = c->steps;
    c->w0 = 0;
    for (int rk = 0; rk < c->p->n_ranks; rk++)
        if (!c->active || c->active[rk])
            c->w0 = SIM_MAX(c->w0, c->ranks[rk].step_end[steps - 2]);
    c->w0_known = true;
    for (int rk = 0; rk < c->p->n_ranks; rk++)
        c->ranks[rk].acc_cursor = c->w0;
}

static void start_op(replay_ctx *c, int rank, uint32_t op, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    const trace_op *o = &rs->tr->ops[op];
    if (o->stream != TRACE_STREAM_ASYNC && op >= rs->hi)
        rs->hi = op + 1; /* (a receive posted at the step's start is no mark of progress) */
    if (o->stream == TRACE_STREAM_ASYNC && o->n_deps == 0)
        rs->n_posted++;
    if (o->stream != TRACE_STREAM_ASYNC) {
        rs->busy[o->stream] = true;
        rs->stream_start[o->stream] = now;
        if (rs->k_ev && o->stream != TRACE_STREAM_COMPUTE)
            retime_kernel(c, rank, now);
    } else {
        /* point-to-point ops overlap each other: their start times are kept by op (a few
         * are in flight at a time) */
        SIM_GROW(rs->async, rs->cap_async, rs->n_async + 1);
        rs->async[rs->n_async++] = (async_start){.op = op, .t = now};
    }
    apply_mem(c, rank, op, 0, now);
    if (o->kind == TRACE_OP_COMPUTE) {
        if (rs->step == c->steps - 1) {
            /* a kernel that follows the previous one with no gap extends its interval:
             * the summary's busy time and bubbles come out the same, and a step of
             * back-to-back kernels keeps a handful of intervals instead of thousands */
            /* (the open interval lives in the rank's state; the array, which other ranks'
             * work has long pushed out of cache, is touched once per gap) */
            if (rs->have_cur && rs->cur.end == now && rs->stream_free[o->stream] == now) {
                rs->cur.end = -1;
            } else {
                if (rs->have_cur)
                    replay__push_iv(c, rs, &rs->cur);
                rs->cur = replay__gap(c, rs, o, now); /* by what it waited for (bubbles.c) */
                rs->have_cur = true;
            }
        }
        if (rank == c->probe_rank)
            c->probe_due = true; /* the instant is a probe (steady.c) */
        sim_time d = replay__op_dur(rs, op);
        if (c->slowdown || c->jitter)
            d = replay__kernel_duration(c, rank, d);
        /* slowed while communication runs on this GPU (retime_kernel); a measured duration
         * is taken as it is */
        double slow = plan_gpu(c->p, rank)->comm_interference;
        if (slow > 0 && o->duration_ps < 0) {
            rs->k_left = (double)d;
            rs->k_at = now;
            rs->k_slowed = comm_running(rs);
            if (rs->k_slowed)
                d = sim_time_from_ps((double)d * (1 + slow) + 0.5);
            rs->k_ev = push_op_done(c, rank, op, now + d, -1);
            return;
        }
        push_op_done(c, rank, op, now + d, -1);
        return;
    }
    if (o->kind == TRACE_OP_HOST) {
        push_op_done(c, rank, op, now + o->duration_ps, -1);
        return;
    }
    if (o->kind == TRACE_OP_COPY) {
        int gpu = hw_topo_gpu_device(c->topo, rank), mem = hw_topo_host_memory(c->topo, rank);
        int drive = hw_topo_storage(c->topo, rank);
        SIM_ASSERT(mem >= 0, "rank %d has no host memory to offload to", rank);
        SIM_ASSERT(drive >= 0 || o->copy < TRACE_COPY_READ, "rank %d has no drive", rank);
        uint64_t tag = COPY_TAG | ((uint64_t)rank << 32) | op;
        int src = o->copy == TRACE_COPY_H2D ? mem
                  : o->copy == TRACE_COPY_D2H ? gpu
                  : o->copy == TRACE_COPY_READ ? drive
                                               : mem;
        int dst = o->copy == TRACE_COPY_H2D ? gpu
                  : o->copy == TRACE_COPY_D2H ? mem
                  : o->copy == TRACE_COPY_READ ? mem
                                               : drive;
        hw_net_start_flow_dev(c->net, now, src, dst, o->bytes, tag);
        return;
    }
    if (rs->comm_inflight++ == 0)
        rs->comm_since = now;
    uint32_t ci = trace_op_coll(rs->tr, o);
    coll_state *cs = &c->colls[ci];
    /* under symmetry the inactive replicas are at the same point: every member's transfers
     * run, on the real topology, once the active members have arrived */
    if (++cs->arrived < cs->arrivals)
        return;
    cs->launched = now;
    if (cs->plan->estimated) {
        c->scheds[cs->plan - c->scheds].runs++;
        if (c->journal)
            replay__j_runs(c, (size_t)(cs->plan - c->scheds));
        finish_coll(c, ci, now + cs->plan->est_ps);
        return;
    }
    SIM_ASSERT(!cs->run, "collective %u started while it runs", ci);
    cs->run = sim_pool_get(c->exec_pool);
    *cs->run = cs->plan->exec;
    if (coll_exec_start(cs->run, c->topo, c->net, now, ci))
        finish_coll(c, ci, now);
}

static void try_start(replay_ctx *c, int rank, int s, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    if (s == TRACE_STREAM_ASYNC)
        return; /* started one by one as their dependencies finish */
    if (rs->busy[s] || rs->head[s] == rs->stream_first[s + 1])
        return;
    uint32_t op = rs->stream_ops[rs->head[s]];
    if (rs->pending[op] != 0)
        return;
    if (rs->hosted) {
        if (rs->issue_wait[s])
            return; /* its EV_ISSUE is queued */
        if (replay__issue_blocked(rs, op)) {
            c->host_bound = true;
            return; /* tried again when the host passes the sync (pass_syncs) */
        }
        sim_time at = replay__issue_time(rs, op);
        if (now < at) {
            c->host_bound = true;
            rs->issue_wait[s] = true;
            push_op_ev(c, EV_ISSUE, rank, op, at, s);
            return;
        }
    }
    start_op(c, rank, op, now);
}

/* A point-to-point op whose dependencies are done: it starts once issued. */
static void start_async(replay_ctx *c, int rank, uint32_t op, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    if (rs->hosted && replay__issue_blocked(rs, op)) {
        c->host_bound = true;
        SIM_GROW(rs->blocked, rs->cap_blocked, rs->n_blocked + 1);
        rs->blocked[rs->n_blocked++] = op;
        return;
    }
    sim_time at = rs->hosted ? replay__issue_time(rs, op) : now;
    if (now < at) {
        c->host_bound = true;
        push_op_ev(c, EV_ISSUE, rank, op, at, -1);
    }
    else
        start_op(c, rank, op, now);
}

/* The host thread of `rank` passes the syncs whose ops and every op before them have ended
 * (at `now`, when the last of them, `op`, ended) and issues what waited for them. */
static void pass_syncs(replay_ctx *c, int rank, uint32_t op, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    uint32_t lo = replay__lo(rs);
    if (rs->sync_op[rs->sync_next] >= lo)
        return;
    /* what the host waited for: the op that ended last, or, for an op of the host thread
     * that takes no time (the copies of a list collective, standing for launches), what it
     * waited for in turn */
    const trace_op *o = &rs->tr->ops[op];
    while (o->kind == TRACE_OP_HOST && o->duration_ps == 0 && o->n_deps > 0) {
        uint32_t last = rs->tr->deps[o->dep_first];
        for (uint32_t d = 1; d < o->n_deps; d++)
            if (rs->end[rs->tr->deps[o->dep_first + d]] > rs->end[last])
                last = rs->tr->deps[o->dep_first + d];
        o = &rs->tr->ops[last];
    }
    int cause = replay__cause_of_op(c, rs, o);
    while (rs->sync_next < rs->n_sync && rs->sync_op[rs->sync_next] < lo) {
        uint32_t k = rs->sync_next;
        sim_time reached = replay__issue_time(rs, rs->sync_op[k]);
        rs->sync_from[k] = SIM_MIN(reached, now);
        rs->sync_cause[k] = (int8_t)cause;
        rs->sync_at[k] = now;
        rs->sync_next++;
    }
    for (int s = 0; s < TRACE_STREAMS; s++)
        try_start(c, rank, s, now);
    size_t n = rs->n_blocked;
    rs->n_blocked = 0;
    uint32_t *ops = rs->blocked;
    rs->blocked = NULL; /* start_async may block some again, into a fresh list */
    size_t cap = rs->cap_blocked;
    rs->cap_blocked = 0;
    for (size_t k = 0; k < n; k++)
        start_async(c, rank, ops[k], now);
    if (!rs->blocked) { /* keep the old list's room */
        rs->blocked = ops;
        rs->cap_blocked = cap;
    } else {
        sim_free(ops);
    }
}

/* An op whose last dependency just finished (or that has none): a stream op starts if it
 * heads its stream, an async op starts (each once issued by the host thread). */
static void ready(replay_ctx *c, int rank, uint32_t op, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    if (rs->tr->ops[op].stream == TRACE_STREAM_ASYNC)
        start_async(c, rank, op, now);
    else
        try_start(c, rank, rs->tr->ops[op].stream, now);
}

static void begin_step(replay_ctx *c, int rank, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    const trace_rank *tr = rs->tr;
    memcpy(rs->pending, rs->n_deps, tr->n_ops * sizeof *rs->pending);
    memset(rs->end, 0xff, tr->n_ops * sizeof *rs->end); /* (all ones: -1) */
    for (int s = 0; s < TRACE_STREAMS; s++) {
        rs->head[s] = rs->stream_first[s];
        rs->busy[s] = false;
        rs->stream_free[s] = now;
        rs->issue_wait[s] = false;
    }
    rs->done_ops = 0;
    rs->step_start = now;
    rs->lo = rs->hi = 0;
    rs->sync_next = 0;
    SIM_ASSERT(rs->n_blocked == 0, "rank %d: async ops blocked at the step's end", rank);
    for (int s = 0; s < TRACE_STREAMS; s++)
        try_start(c, rank, s, now);
    for (uint32_t k = rs->stream_first[TRACE_STREAM_ASYNC];
         k < rs->stream_first[TRACE_STREAM_ASYNC + 1]; k++)
        if (rs->pending[rs->stream_ops[k]] == 0)
            start_async(c, rank, rs->stream_ops[k], now);
}

/* Hands the buffered timeline rows to the sink (streaming), if there is one. */
static void timeline_flush(replay_ctx *c)
{
    replay_results *r = c->res;
    if (!c->opt->timeline_sink || r->n_timeline == 0)
        return;
    if (!c->sink_failed && c->opt->timeline_sink(c->opt->timeline_ud, r->timeline, r->n_timeline))
        c->sink_failed = true;
    r->n_timeline = 0;
}

void replay__timeline_row(replay_ctx *c, int rank, uint32_t op, sim_time start, sim_time end)
{
    if (c->journal)
        replay__j_tl(c, rank, op, start, end);
    static const char *const copy_kind[TRACE_COPY_COUNT] = {"copy_h2d", "copy_d2h",
                                                            "copy_read", "copy_write"};
    replay_results *r = c->res;
    if (c->opt->timeline_sink && r->n_timeline == REPLAY_TIMELINE_BATCH)
        timeline_flush(c);
    rank_state *rs = &c->ranks[rank];
    const trace_op *o = &rs->tr->ops[op];
    SIM_GROW(r->timeline, r->cap_timeline, r->n_timeline + 1);
    replay_timeline_row *row = &r->timeline[r->n_timeline++];
    bool coll = o->kind == TRACE_OP_COLL;
    const trace_coll *tc = coll ? &c->t->colls[trace_op_coll(rs->tr, o)] : NULL;
    trace_op_var v = trace_op_values(rs->tr, op); /* the rank's own values */
    const char *kind = coll                          ? coll_op_name((coll_op)tc->op)
                       : o->kind == TRACE_OP_COPY    ? copy_kind[o->copy]
                       : o->kind == TRACE_OP_HOST    ? "host"
                                                     : "compute";
    *row = (replay_timeline_row){
        .rank = rank,
        .stream = c->stream_names[o->stream],
        .kind = kind,
        .name = trace_name(c->t, o->name),
        .layer = o->layer,
        .microbatch = o->microbatch,
        .phase = trace_phase_name((trace_phase)o->phase),
        .group = coll ? plan_group_name((plan_group_class)c->t->groups[tc->group].cls) : "none",
        .step = rs->step + 1,
        .start_s = sim_time_to_s(start),
        .end_s = sim_time_to_s(end),
        .bytes = coll ? tc->bytes : v.bytes,
        .flops = o->kind == TRACE_OP_COMPUTE ? v.flops : 0,
    };
}

static void op_done(replay_ctx *c, int rank, uint32_t op, int member, sim_time now)
{
    rank_state *rs = &c->ranks[rank];
    const trace_op *o = &rs->tr->ops[op];
    rs->end[op] = now;
    apply_mem(c, rank, op, 1, now);
    bool async = o->stream == TRACE_STREAM_ASYNC;
    sim_time start;
    if (async) {
        size_t k = 0;
        while (rs->async[k].op != op)
            k++;
        SIM_ASSERT(k < rs->n_async, "rank %d: async op %u not started", rank, op);
        start = rs->async[k].t;
        rs->async[k] = rs->async[--rs->n_async];
        rs->n_posted -= o->n_deps == 0;
    } else {
        start = rs->stream_start[o->stream];
    }
    if (!async) {
        rs->busy[o->stream] = false;
        rs->stream_free[o->stream] = now;
        rs->head[o->stream]++;
        if (o->stream == TRACE_STREAM_COMPUTE)
            rs->k_ev = NULL; /* popped: the loop frees it */
        else if (rs->k_ev)
            retime_kernel(c, rank, now);
    }
    rs->done_ops++;
    if (c->opt->timeline)
        replay__timeline_row(c, rank, op, start, now);
    if (rs->step == c->steps - 1) {
        if (o->kind == TRACE_OP_COMPUTE) {
            rs->cur.end = now;
        } else if (o->kind == TRACE_OP_COPY) {
            rs->comm_sent[REPLAY_COMM_OFFLOAD] += o->bytes;
            if (c->journal)
                replay__j_sent(c, rank, REPLAY_COMM_OFFLOAD, o->bytes);
        } else if (o->kind == TRACE_OP_COLL) {
            uint32_t ci = trace_op_coll(rs->tr, o);
            const trace_coll *tc = &c->t->colls[ci];
            const trace_group *g = &c->t->groups[tc->group];
            /* (finish_coll numbered the members from the group's rank list) */
            SIM_ASSERT(member >= 0 && member < g->n, "rank %d: member %d of its collective",
                       rank, member);
            /* symmetry: a collective across replicas stands for all of them, so its active
             * member is credited the members' mean (their sum over the group's size, as the
             * full replay averages it); otherwise the member's own bytes */
            const sched_entry *e = c->colls[ci].plan;
            double sent = c->colls[ci].arrivals < g->n ? e->sent_mean : e->sent[member];
            rs->comm_sent[g->cls] += sent;
            if (c->journal)
                replay__j_sent(c, rank, g->cls, sent);
        }
    }
    /* communication busy time: the union of the rank's collective ops' intervals (a
     * pipeline's receives are posted long before their data comes, and overlap), inside the
     * reported step's window (w0 is known from its opening on: an interval that closes
     * before it lies before it) */
    if (o->kind == TRACE_OP_COLL && --rs->comm_inflight == 0 && c->w0_known) {
        double busy = (double)(now - SIM_MAX(rs->comm_since, c->w0));
        rs->comm_busy_ps += busy;
        if (c->journal)
            replay__j_cbusy(c, rank, busy);
    }
    /* (after the interval's end above: what the host issues now may start a kernel) */
    if (rs->sync_next < rs->n_sync)
        pass_syncs(c, rank, op, now);
    for (uint32_t k = rs->succ_first[op]; k < rs->succ_first[op + 1]; k++) {
        uint32_t s = rs->succ[k];
        rs->pending[s]--;
        if (s >= rs->hi)
            rs->hi = s + 1;
    }
    if (!async)
        try_start(c, rank, o->stream, now);
    for (uint32_t k = rs->succ_first[op]; k < rs->succ_first[op + 1]; k++) {
        uint32_t s = rs->succ[k];
        if (rs->pending[s] == 0)
            ready(c, rank, s, now);
    }
    if (rs->done_ops == rs->tr->n_ops) {
        /* idle time after the rank's last compute op waits for the chain that ended its
         * step (tail_bubbles) */
        rs->tail_op = op;
        rs->step_end[rs->step] = now;
        if (rs->step == c->steps - 2 && --c->before_w0 == 0)
            open_window(c);
        if (++rs->step < c->steps)
            begin_step(c, rank, now);
    }
}


/* Calls the progress callback when its interval has passed (checked every 4096 events, so
 * the clock read stays off the per-event path). */
static void report_progress(replay_ctx *c, sim_time now, const struct timespec *t0,
                            double *next_report)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double wall = elapsed_s(t0, &t);
    if (wall < *next_report)
        return;
    *next_report = wall + c->opt->progress_every_s;
    int done = c->steps;
    for (int r = 0; r < c->p->n_ranks; r++)
        done = c->ranks[r].step < done ? c->ranks[r].step : done;
    replay_progress at = {.steps_done = done, .steps = c->steps,
                          .simulated_s = sim_time_to_s(now),
                          .events = (unsigned long long)sim_eventq_pushed(c->q), .wall_s = wall};
    c->opt->progress(c->opt->progress_ud, &at);
}

void replay_run(const plan *p, const replay_options *opt, replay_results *out)
{
    SIM_ASSERT(p->trace != NULL, "replay of a plan without a trace");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    replay_ctx c = {.p = p, .t = p->trace, .opt = opt, .res = out,
                    .steps = p->sc->simulation.steps, .w0_known = p->sc->simulation.steps == 1};
    c.probe_rank = -1;
    c.stream_names[TRACE_STREAM_COMPUTE] = "compute";
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        c.stream_names[TRACE_STREAM_COMM(g)] = plan_group_name((plan_group_class)g);
    c.stream_names[TRACE_STREAM_OFFLOAD] = "offload";
    c.stream_names[TRACE_STREAM_HOST] = "host";
    c.stream_names[TRACE_STREAM_ASYNC] = "p2p";
    c.q = sim_eventq_create();
    const hw_topology_spec *ts = &p->sc->topology;
    for (int g = 0; g < SIM_MAX(1, ts->n_groups); g++)
        c.gpus[g] = hw_gpu_create(ts->n_groups > 0 ? &ts->groups[g].gpu : &ts->gpu);
    c.gpu_of = sim_calloc((size_t)p->n_ranks, sizeof *c.gpu_of);
    for (int r = 0; r < p->n_ranks; r++)
        c.gpu_of[r] = (uint8_t)hw_topology_group_of(ts, p->coords[r].node);
    c.topo = p->topo;
    c.net = hw_net_create(c.topo, c.q, EV_NET, on_flow_done, &c);
    if (opt->no_isolated_rounds) /* every transfer an ordinary flow (tests compare the two) */
        hw_net_set_rounds(c.net, false);
    c.ranks = sim_calloc((size_t)p->n_ranks, sizeof *c.ranks);
    if (p->sc->simulation.symmetry == PLAN_SYMMETRY_DP && p->sc->parallel.dp > 1)
        replay__init_symmetry(&c);
    for (int r = 0; r < p->n_ranks; r++)
        if (!c.active || c.active[r])
            replay__init_rank(&c, r);
    replay__init_colls(&c);
    replay__init_variability(&c);
    replay__steady_init(&c);
    c.before_w0 = c.active ? c.n_active : p->n_ranks;
    for (int r = 0; r < p->n_ranks; r++) {
        if (c.active && !c.active[r])
            continue;
        c.ranks[r].level = c.ranks[r].peak = p->mem[r];
        for (int cat = 0; cat < PLAN_MEM_COUNT; cat++)
            replay__memory_row(&c, r, 0, cat, p->mem[r].bytes[cat]);
    }
    for (int r = 0; r < p->n_ranks; r++)
        if (!c.active || c.active[r])
            begin_step(&c, r, 0);

    struct timespec t_loop;
    clock_gettime(CLOCK_MONOTONIC, &t_loop);
    out->setup_s = elapsed_s(&t0, &t_loop);
    sim_time now = 0;
    sim_event *ev;
    double next_report = opt->progress_every_s;
    for (uint64_t popped = 1; (ev = sim_eventq_pop(c.q)) != NULL; popped++) {
        SIM_ASSERT(ev->time >= now, "time went backwards: %lld < %lld", (long long)ev->time,
                   (long long)now);
        now = ev->time;
        if (now >= SIM_TIME_HORIZON) {
            out->beyond_horizon = true; /* ev and the queued events go with the queue's pool */
            break;
        }
        if ((popped & 0xfff) == 0) {
            if (opt->progress)
                report_progress(&c, now, &t0, &next_report);
            if (opt->cancel && *opt->cancel) {
                out->cancelled = true; /* ev and the queued events go with the queue's pool */
                break;
            }
        }
        if (ev->type == EV_NET) {
            hw_net_handle(c.net, ev);
        } else {
            int rank = op_ev_rank(ev), member = op_ev_member(ev);
            uint32_t op = op_ev_op(ev);
            bool issue = ev->type == EV_ISSUE;
            sim_eventq_free(c.q, ev);
            if (!issue) {
                op_done(&c, rank, op, member, now);
            } else if (member < 0) {
                start_op(&c, rank, op, now);
            } else {
                /* `member` is the stream whose head the host thread has just issued */
                c.ranks[rank].issue_wait[member] = false;
                try_start(&c, rank, member, now);
            }
        }
        /* steady state: an instant to compare, once all its events have run */
        if (c.probe_due && sim_eventq_peek_time(c.q) > now) {
            c.probe_due = false;
            if (popped - c.probe_at >= c.probe_gap) {
                c.probe_at = popped;
                replay__steady_probe(&c, &now);
            }
        }
    }
    hw_net_finish(c.net, now);
    replay__add_estimated_traffic(&c);
    timeline_flush(&c);
    int stalled = -1;
    for (int r = 0; r < p->n_ranks && stalled < 0; r++)
        if ((!c.active || c.active[r]) && c.ranks[r].step != c.steps)
            stalled = r;

    plan_mem *peaks = sim_calloc((size_t)p->n_ranks, sizeof *peaks);
    for (int r = 0; r < p->n_ranks; r++)
        peaks[r] = c.ranks[c.active && !c.active[r] ? c.twin[r] : r].peak;
    replay__fill_memory(p, peaks, out);
    sim_free(peaks);
    if (out->cancelled) {
        out->summary.status = REPLAY_STATUS_ERROR;
        snprintf(out->summary.error, sizeof out->summary.error,
                 "cancelled at %.6g s simulated", sim_time_to_s(now));
    } else if (out->beyond_horizon) {
        int step = 0;
        for (int r = 0; r < p->n_ranks; r++)
            if ((!c.active || c.active[r]) && c.ranks[r].step < c.steps)
                step = step ? SIM_MIN(step, c.ranks[r].step + 1) : c.ranks[r].step + 1;
        out->summary.status = REPLAY_STATUS_ERROR;
        snprintf(out->summary.error, sizeof out->summary.error,
                 "simulated time reached the horizon of %.0f s (2^61 ps, about 26.7 days) in "
                 "step %d of %d: an op or a transfer takes longer than stepsim represents "
                 "(docs/engine.md, \"Horizon\")",
                 sim_time_to_s(SIM_TIME_HORIZON), step, c.steps);
    } else if (stalled < 0) {
        replay__summarize(&c);
    } else {
        /* a trace whose ops wait on each other in a cycle (across ranks, through
         * collectives or stream order): only a trace read from a file can do that */
        const rank_state *rs = &c.ranks[stalled];
        size_t op = 0;
        while (op + 1 < rs->tr->n_ops && rs->pending[op] == 0)
            op++;
        out->summary.status = REPLAY_STATUS_ERROR;
        if (rs->sync_next < rs->n_sync && rs->sync_op[rs->sync_next] < op) {
            /* the host waits at a sync for an op up to it that never ends */
            uint32_t so = rs->sync_op[rs->sync_next], lo = rs->lo;
            while (lo < so && rs->end[lo] >= 0)
                lo++;
            snprintf(out->summary.error, sizeof out->summary.error,
                     "deadlock: rank %d stalls in step %d: its host waits at the sync on op %u "
                     "(%s) of %zu for op %u (%s), which never ends (ops after the sync are not "
                     "issued until every op up to it has ended)",
                     stalled, rs->step + 1, so, trace_name(c.t, rs->tr->ops[so].name),
                     rs->tr->n_ops, lo, trace_name(c.t, rs->tr->ops[lo].name));
        } else {
            snprintf(out->summary.error, sizeof out->summary.error,
                     "deadlock: rank %d stalls in step %d at op %zu (%s) of %zu; its "
                     "dependencies or a collective's other members never get there",
                     stalled, rs->step + 1, op,
                     rs->tr->n_ops ? trace_name(c.t, rs->tr->ops[op].name) : "-",
                     rs->tr->n_ops);
        }
    }
    out->events = sim_eventq_pushed(c.q);
    out->flows = hw_net_flows_done(c.net);
    out->flow_solves = hw_net_solves(c.net);
    out->rounds_isolated = hw_net_rounds_isolated(c.net);
    out->rounds_split = hw_net_rounds_split(c.net);
    out->rounds_closed = hw_net_rounds_closed(c.net);
    out->rounds_evolved = hw_net_rounds_evolved(c.net);
    out->simulated_s = sim_time_to_s(now);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = elapsed_s(&t0, &t1);

    replay__steady_free(&c);
    replay__clear(&c);
    hw_net_destroy(c.net);
    for (int g = 0; g < SIM_MAX(1, p->sc->topology.n_groups); g++)
        hw_gpu_destroy(c.gpus[g]);
    sim_free(c.gpu_of);
    sim_eventq_destroy(c.q);
}
