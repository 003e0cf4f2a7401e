/* What a rank's idle compute stream waited for (replay.h, "Bubbles"; docs/json.md): the gap
 * before each kernel of the reported step by its causes, the idle tail after the rank's last
 * kernel, and the rows and per-cause sums they add to. */
#include "core/sim.h"

#include "replay/replay-internal.h"

replay_cause replay__cause_of_group(int cls)
{
    static const replay_cause map[PLAN_GROUP_COUNT] = {
        [PLAN_GROUP_DP] = REPLAY_CAUSE_DP, [PLAN_GROUP_TP] = REPLAY_CAUSE_TP,
        [PLAN_GROUP_PP] = REPLAY_CAUSE_PP, [PLAN_GROUP_EP] = REPLAY_CAUSE_EP,
        [PLAN_GROUP_CP] = REPLAY_CAUSE_CP};
    return map[cls];
}

void replay__add_bubble(replay_ctx *c, int rank, int step, sim_time a, sim_time b, int cause,
                         double *idle_by_cause)
{
    if (b <= a)
        return;
    idle_by_cause[cause] += (double)(b - a);
    if (c->opt->no_bubble_rows)
        return;
    replay_results *r = c->res;
    SIM_GROW(r->bubbles, r->cap_bubbles, r->n_bubbles + 1);
    r->bubbles[r->n_bubbles++] = (replay_bubble_row){
        .rank = rank, .step = step, .start_s = sim_time_to_s(a), .end_s = sim_time_to_s(b),
        .cause = replay_cause_name((replay_cause)cause)};
}

/* A gap segment [a, b) of `cause`; where that is the host's, its first *wait of time was the
 * host waiting at syncs for ops to end (busy_iv.sync_wait), counted to `sync_cause`. */
static void host_bubble(replay_ctx *c, int rk, sim_time a, sim_time b, int cause,
                        int sync_cause, sim_time *wait, double *idle)
{
    if (cause == REPLAY_CAUSE_HOST && *wait > 0 && b > a) {
        sim_time m = a + SIM_MIN(*wait, b - a);
        replay__add_bubble(c, rk, c->steps, a, m, sync_cause, idle);
        *wait -= m - a;
        a = m;
    }
    replay__add_bubble(c, rk, c->steps, a, b, cause, idle);
}

/* One interval of the reported step, in the rank's order, against the window's start w0:
 * its busy time, then the gap before it by cause: until the stream was released for it
 * (e.g. the rank had not started the step yet), then waiting for its dependency. Every
 * time here is at most the step's end, so nothing is clipped at the window's end. */
static void account_iv(replay_ctx *c, int rk, rank_state *rs, const busy_iv *iv)
{
    sim_time w0 = c->w0, cursor = rs->acc_cursor;
    int steps = c->steps;
    sim_time a = SIM_MAX(iv->start, w0), b = iv->end;
    if (b > a)
        rs->acc_busy += (double)(b - a);
    replay__add_bubble(c, rk, steps, cursor, SIM_MAX(iv->gap_start, w0),
                       c->p->sc->parallel.pp > 1 ? REPLAY_CAUSE_PIPELINE : REPLAY_CAUSE_OTHER,
                       rs->acc_idle);
    sim_time g0 = SIM_MAX(cursor, SIM_MAX(iv->gap_start, w0));
    sim_time split = SIM_MIN(SIM_MAX(iv->split, g0), iv->start);
    sim_time ready = SIM_MIN(SIM_MAX(iv->ready, split), iv->start);
    sim_time wait = iv->sync_wait; /* host time that was a sync's wait: its cause */
    host_bubble(c, rk, g0, split, iv->early, iv->sync_cause, &wait, rs->acc_idle);
    replay__add_bubble(c, rk, steps, split, ready, iv->cause, rs->acc_idle);
    host_bubble(c, rk, ready, iv->start, REPLAY_CAUSE_HOST, iv->sync_cause, &wait, rs->acc_idle);
    rs->acc_cursor = SIM_MAX(cursor, b);
}

/* An interval that closes before the window opens (the step before the reported one has
 * not ended everywhere yet) ended before the window's start w0, as did its gap: clipped to
 * the window it counts nothing, so it is not kept. */
void replay__push_iv(replay_ctx *c, rank_state *rs, const busy_iv *iv)
{
    if (c->journal)
        replay__j_iv(c, (int)(rs - c->ranks), iv);
    if (c->w0_known)
        account_iv(c, (int)(rs - c->ranks), rs, iv);
}

int replay__cause_of_op(const replay_ctx *c, const rank_state *rs, const trace_op *o)
{
    if (o->kind == TRACE_OP_COLL)
        return replay__cause_of_group(
            c->t->groups[c->t->colls[trace_op_coll(rs->tr, o)].group].cls);
    return o->kind == TRACE_OP_COMPUTE ? REPLAY_CAUSE_OTHER : REPLAY_CAUSE_OFFLOAD;
}

/* The rank's idle time [from, to) after its last kernel of the reported step, until the
 * step's last op ended it: along the chain of latest-ending dependencies back from that op,
 * each op's stretch — from its latest dependency's end to its own — goes to the op's cause.
 * A ZeRO-Offload step that ends with the parameters' all-gather is then the gradients'
 * reduce-scatter (dp), the copies and CPU Adam (offload) and the all-gather (dp), not dp
 * all through. The ops' end times are the last step's (begin_step resets them). */
void replay__tail_bubbles(replay_ctx *c, int rk, const rank_state *rs, sim_time from,
                          sim_time to, double *idle_by_cause)
{
    const trace_rank *tr = rs->tr;
    uint32_t x = rs->tail_op;
    sim_time hi = to;
    while (hi > from) {
        const trace_op *o = &tr->ops[x];
        sim_time latest = -1;
        uint32_t next = x;
        for (uint32_t d = 0; d < o->n_deps; d++) {
            uint32_t dep = tr->deps[o->dep_first + d];
            if (rs->end[dep] > latest) {
                latest = rs->end[dep];
                next = dep;
            }
        }
        sim_time lo = SIM_MAX(from, SIM_MIN(latest, hi));
        /* (no dependency: latest is -1 and the stretch reaches back to `from`) */
        replay__add_bubble(c, rk, c->steps, lo, hi, replay__cause_of_op(c, rs, o), idle_by_cause);
        hi = lo;
        x = next;
    }
}

/* The gap before compute op `o`, which starts at `now` on its stream, as an interval whose
 * start and causes are set (its end is the kernel's: the caller's). Of its dependencies the
 * one that finished last names the cause; a pipeline transfer splits it: waiting for the
 * other stage to produce is the pipeline bubble, the transfer itself is pp time. */
busy_iv replay__gap(replay_ctx *c, const rank_state *rs, const trace_op *o, sim_time now)
{
    int8_t cause = REPLAY_CAUSE_OTHER, early = REPLAY_CAUSE_OTHER;
    sim_time latest = -1, split = rs->stream_free[o->stream];
    uint32_t latest_dep = 0;
    for (uint32_t d = 0; d < o->n_deps; d++) {
        uint32_t dep = rs->tr->deps[o->dep_first + d];
        if (rs->end[dep] <= latest)
            continue;
        latest = rs->end[dep];
        latest_dep = dep;
        const trace_op *dop = &rs->tr->ops[dep];
        split = rs->stream_free[o->stream];
        if (dop->kind == TRACE_OP_COLL) {
            uint32_t dci = trace_op_coll(rs->tr, dop);
            int cls = c->t->groups[c->t->colls[dci].group].cls;
            cause = (int8_t)replay__cause_of_group(cls);
            if (cls == PLAN_GROUP_PP) {
                early = REPLAY_CAUSE_PIPELINE;
                split = SIM_MAX(split, c->colls[dci].launched);
            }
        } else {
            cause = dop->kind == TRACE_OP_COMPUTE ? REPLAY_CAUSE_OTHER
                                                  : REPLAY_CAUSE_OFFLOAD;
        }
    }
    /* a collective or copy waited for (not a pipeline transfer) that the host issued
     * after the stream fell idle: the wait until its issue is the host thread's */
    if (rs->hosted && latest >= 0 && early == REPLAY_CAUSE_OTHER &&
        rs->tr->ops[latest_dep].kind != TRACE_OP_COMPUTE) {
        sim_time iss = replay__issue_time(rs, latest_dep);
        if (iss > split) {
            c->host_bound = true;
            early = REPLAY_CAUSE_HOST;
            split = SIM_MIN(iss, latest);
        }
    }
    /* ready before now: the wait since then is the host thread's (replay__issue_time); the
     * part of the gap before it keeps its dependency's causes */
    sim_time ready_at = SIM_MAX(latest, rs->stream_free[o->stream]);
    /* the host's syncs passed while the stream was idle before this op: the part of each
     * wait inside the gap (a sync waits for ops to end, which is their cause's time, not the
     * host's launches) */
    sim_time gap0 = rs->stream_free[o->stream], wait = 0;
    int8_t sync_cause = REPLAY_CAUSE_HOST;
    uint32_t op = (uint32_t)(o - rs->tr->ops);
    for (uint32_t k = rs->sync_next; k-- > 0;) {
        if (rs->sync_op[k] >= op)
            continue; /* (a sync after the op: passed since it was issued) */
        if (rs->sync_at[k] <= gap0)
            break;
        sim_time from = SIM_MAX(rs->sync_from[k], gap0), to = SIM_MIN(rs->sync_at[k], now);
        if (to > from)
            wait += to - from;
        if (sync_cause == REPLAY_CAUSE_HOST)
            sync_cause = rs->sync_cause[k]; /* the last sync's */
    }
    return (busy_iv){.start = now, .end = -1, .gap_start = gap0, .split = split,
                     .ready = ready_at, .sync_wait = wait, .cause = cause, .early = early,
                     .sync_cause = sync_cause};
}
