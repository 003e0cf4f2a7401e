/* Steady-state skipping (steady.c): the windows of ops a probe looks at, the hash of what
 * repeats unshifted, the full snapshot of the replay's state and its comparison with a later
 * one shifted by a period, and the check that the ops ahead repeat. */
#include "core/sim.h"

#include <string.h>

#include "replay/steady-internal.h"

/* What repeats unshifted from one period to the next (a necessary condition only). */
uint64_t steady__probe_hash(replay_ctx *c)
{
    replay_steady *s = c->steady;
    uint64_t h = sim_eventq_size(c->q);
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        uint32_t lo = steady__rank_lo(rs);
        h = steady__mix(h, (uint64_t)rs->comm_inflight - rs->n_posted);
        h = steady__mix(h, rs->n_async - rs->n_posted);
        uint64_t busy = 0;
        for (int st = 0; st < TRACE_STREAMS; st++)
            busy = busy << 1 | rs->busy[st];
        h = steady__mix(h, busy | (uint64_t)(rs->k_ev != NULL) << 32);
        h = steady__mix(h, (uint64_t)rs->level.total);
        h = steady__mix(h, (uint64_t)(rs->hi > lo ? rs->hi - lo : 0));
        h = steady__mix(h, (uint64_t)(rs->done_ops - lo));
    }
    return h;
}

/* The farthest back (in ops) any op of [from, to) depends. */
uint32_t steady__dep_reach(const trace_rank *tr, uint32_t from, uint32_t to)
{
    uint32_t d = 0;
    for (uint32_t i = from; i < to && i < tr->n_ops; i++) {
        const trace_op *o = &tr->ops[i];
        for (uint32_t k = 0; k < o->n_deps; k++) {
            uint32_t dep = tr->deps[o->dep_first + k];
            if (i - dep > d)
                d = i - dep;
        }
    }
    return d;
}

bool steady__is_coll(const rank_state *rs, uint32_t op)
{
    return rs->tr->ops[op].kind == TRACE_OP_COLL;
}

/* The first collective ordinal of the rank whose op is `op` or later (rank_state.coll_at):
 * the checks and the skip that run over every op of the periods ahead visit the collectives
 * by ordinal, without reading the other ops' 72 bytes. */
uint32_t steady__first_coll(const rank_state *rs, uint32_t op)
{
    size_t lo = 0, hi = rs->tr->n_colls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rs->coll_at[mid] < op)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* Whether window op `op` has started and not finished (r: the snapshot's window, whose
 * point-to-point ops in flight are sorted by op). */
static bool in_flight(const rank_state *rs, const struct rank_snap *r, uint32_t op)
{
    if (rs->end[op] >= 0)
        return false;
    const trace_op *o = &rs->tr->ops[op];
    if (o->stream == TRACE_STREAM_ASYNC) {
        size_t lo = 0, hi = r->n_async;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (r->async[mid].op < op)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < r->n_async && r->async[lo].op == op;
    }
    return rs->busy[o->stream] && rs->stream_ops[rs->head[o->stream]] == op;
}

/* Whether op is posted without dependencies, and when such an op starts: at the step's
 * start, or at its issue by the host thread (replay.c, start_async). Its start is a
 * function of its index, not of the period. */
bool steady__posted(const rank_state *rs, uint32_t op)
{
    const trace_op *o = &rs->tr->ops[op];
    return o->stream == TRACE_STREAM_ASYNC && o->n_deps == 0;
}

sim_time steady__posted_start(const rank_state *rs, uint32_t op)
{
    return rs->hosted ? replay__issue_time(rs, op) : rs->step_start;
}

static int async_cmp(const void *pa, const void *pb)
{
    uint32_t a = ((const async_start *)pa)->op, b = ((const async_start *)pb)->op;
    return (a > b) - (a < b);
}

/* A rank's scalars as take_snap records them (no arrays, no async counts). */
void steady__rank_scalars(replay_ctx *c, int k, rank_snap *r)
{
    rank_state *rs = &c->ranks[c->steady->rank[k]];
    r->lo = steady__rank_lo(rs);
    r->hi = SIM_MAX(rs->hi, r->lo);
    r->done_ops = rs->done_ops;
    memcpy(r->head, rs->head, sizeof r->head);
    memcpy(r->busy, rs->busy, sizeof r->busy);
    memcpy(r->stream_start, rs->stream_start, sizeof r->stream_start);
    r->free0 = rs->stream_free[TRACE_STREAM_COMPUTE];
    r->comm_inflight = rs->comm_inflight;
    r->comm_since = rs->comm_since;
    r->level = rs->level;
    r->have_cur = rs->have_cur;
    r->cur = rs->cur;
    r->acc_cursor = rs->acc_cursor;
    r->k = rs->k_ev != NULL;
    r->k_left = rs->k_left;
    r->k_at = rs->k_at;
    r->k_slowed = rs->k_slowed;
}

full_snap *steady__take_snap(replay_ctx *c, sim_time now, const uint32_t *reach)
{
    replay_steady *s = c->steady;
    full_snap *f = sim_calloc(1, sizeof *f);
    f->t = now;
    f->step = s->step;
    f->r = sim_calloc((size_t)s->n, sizeof *f->r);
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        rank_snap *r = &f->r[k];
        steady__rank_scalars(c, k, r);
        r->d = SIM_MIN(reach[k], r->lo);
        /* point-to-point ops in flight: in the window, and posted ones beyond it, which
         * wait, unchanged, until the window reaches them (an op past the window has no
         * dependency: one would have marked it; so it was posted at the step's start or
         * at its issue) */
        size_t n_win = 0;
        for (size_t q = 0; q < rs->n_async; q++)
            n_win += rs->async[q].op < r->hi;
        r->async = sim_calloc(n_win + 1, sizeof *r->async);
        for (size_t q = 0; q < rs->n_async; q++) {
            uint32_t op = rs->async[q].op;
            if (op < r->hi) {
                r->async[r->n_async++] = rs->async[q];
            } else {
                r->beyond++;
                r->beyond_max = SIM_MAX(r->beyond_max, op);
            }
        }
        qsort(r->async, r->n_async, sizeof *r->async, async_cmp);
        size_t w = r->hi - r->lo, wd = w + r->d;
        r->pending = sim_calloc(w + 1, sizeof *r->pending);
        memcpy(r->pending, rs->pending + r->lo, w * sizeof *r->pending);
        r->end = sim_calloc(wd + 1, sizeof *r->end);
        r->launched = sim_calloc(wd + 1, sizeof *r->launched);
        r->arrived = sim_calloc(w + 1, sizeof *r->arrived);
        for (size_t i = 0; i < wd; i++) {
            uint32_t op = r->lo - r->d + (uint32_t)i;
            r->end[i] = rs->end[op];
            r->launched[i] = -1;
            if (steady__is_coll(rs, op) && rs->end[op] >= 0)
                r->launched[i] = c->colls[trace_op_coll(rs->tr, &rs->tr->ops[op])].launched;
        }
        for (size_t i = 0; i < w; i++) {
            uint32_t op = r->lo + (uint32_t)i;
            r->arrived[i] = -1;
            if (steady__is_coll(rs, op) && in_flight(rs, r, op))
                r->arrived[i] = c->colls[trace_op_coll(rs->tr, &rs->tr->ops[op])].arrived;
        }
    }
    size_t n = sim_eventq_size(c->q);
    SIM_GROW(s->evs, s->cap_evs, n + 1);
    sim_eventq_list(c->q, s->evs);
    f->ev = sim_calloc(n + 1, sizeof *f->ev);
    f->n_ev = n;
    for (size_t k = 0; k < n; k++) {
        const sim_event *e = s->evs[k];
        f->ev[k] = (ev_snap){.t = e->time, .type = e->type, .a = e->a, .b = e->b, .c = e->c};
    }
    return f;
}

/* ---- comparison -------------------------------------------------------------------- */

bool steady__rel_eq(sim_time a, sim_time ta, sim_time b, sim_time tb)
{
    return a - ta == b - tb;
}

/* The open busy interval a period later: the kernel it ends with is the period's
 * (relative), and it opened either in the period (relative) or before both instants and
 * stayed open through the period, back-to-back kernels extending it (the same opening). */
bool steady__iv_opened_same(const busy_iv *a, const busy_iv *b)
{
    return a->start == b->start && a->gap_start == b->gap_start && a->split == b->split &&
           a->ready == b->ready;
}

static bool iv_eq(const busy_iv *a, sim_time ta, const busy_iv *b, sim_time tb)
{
    bool opened = steady__iv_opened_same(a, b) ||
                  (steady__rel_eq(a->start, ta, b->start, tb) &&
                   steady__rel_eq(a->gap_start, ta, b->gap_start, tb) &&
                   steady__rel_eq(a->split, ta, b->split, tb) && steady__rel_eq(a->ready, ta, b->ready, tb));
    return opened && (a->end < 0 ? b->end < 0 : b->end >= 0 && steady__rel_eq(a->end, ta, b->end, tb)) &&
           a->cause == b->cause && a->early == b->early;
}

/* The part of snaps_match for one rank that needs no arrays: window bounds, stream heads
 * and their busy state, the compute stream's release, memory level, the open interval and
 * bubble cursor, the kernel in flight; and (`in_flight`: y's async counts are known)
 * communication in flight. */
bool steady__rank_scalars_match(replay_ctx *c, int k, const rank_snap *x, sim_time ta,
                               const rank_snap *y, sim_time tb, bool in_flight_known)
{
    replay_steady *s = c->steady;
    const rank_state *rs = &c->ranks[s->rank[k]];
    bool last = c->w0_known && s->step == c->steps - 1;
    uint32_t P = s->P[k];
    if (y->lo != x->lo + P || y->hi != x->hi + P)
        return false;
    for (int st = 0; st < TRACE_STREAM_ASYNC; st++) {
        uint32_t end = rs->stream_first[st + 1];
        if (x->head[st] == end) {
            if (y->head[st] != end)
                return false;
        } else if (x->head[st] == y->head[st] && !y->busy[st] &&
                   rs->stream_ops[y->head[st]] >= y->hi) {
            /* parked: its next op lies past the window (the skip stops short of it) */
        } else if (y->head[st] >= end ||
                   rs->stream_ops[y->head[st]] != rs->stream_ops[x->head[st]] + P) {
            return false;
        }
        if (x->busy[st] != y->busy[st])
            return false;
        if (x->busy[st] && !steady__rel_eq(x->stream_start[st], ta, y->stream_start[st], tb))
            return false;
    }
    if (!steady__rel_eq(x->free0, ta, y->free0, tb) || memcmp(&x->level, &y->level, sizeof x->level))
        return false;
    /* communication in flight: the window's alike, and since the same relative time, or
     * (posted ops beyond the window keeping it up) the same time */
    if (in_flight_known &&
        (x->comm_inflight - (int)x->beyond != y->comm_inflight - (int)y->beyond ||
         (x->comm_inflight > 0 && !steady__rel_eq(x->comm_since, ta, y->comm_since, tb) &&
          !(x->comm_since == y->comm_since && y->beyond > 0))))
        return false;
    /* (the bubble cursor, like the interval, is either the period's or unmoved) */
    if (last && (x->have_cur != y->have_cur ||
                 !(steady__rel_eq(x->acc_cursor, ta, y->acc_cursor, tb) ||
                   x->acc_cursor == y->acc_cursor) ||
                 (x->have_cur && !iv_eq(&x->cur, ta, &y->cur, tb))))
        return false;
    return x->k == y->k && (!x->k || (x->k_left == y->k_left && x->k_slowed == y->k_slowed &&
                                      steady__rel_eq(x->k_at, ta, y->k_at, tb)));
}

/* Whether state `b` is state `a` a period later (s->P holds each rank's ops per period). */
bool steady__snaps_match(replay_ctx *c, const full_snap *a, const full_snap *b)
{
    replay_steady *s = c->steady;
    sim_time ta = a->t, tb = b->t;
    for (int k = 0; k < s->n; k++) {
        const rank_state *rs = &c->ranks[s->rank[k]];
        const rank_snap *x = &a->r[k], *y = &b->r[k];
        uint32_t P = s->P[k];
        if (y->d < x->d || !steady__rank_scalars_match(c, k, x, ta, y, tb, true))
            return false;
        if (x->n_async != y->n_async)
            return false;
        for (size_t i = 0; i < x->n_async; i++) {
            uint32_t op = x->async[i].op;
            if (y->async[i].op != op + P)
                return false;
            bool px = steady__posted(rs, op) && x->async[i].t == steady__posted_start(rs, op);
            bool py = steady__posted(rs, op + P) && y->async[i].t == steady__posted_start(rs, op + P);
            if (px != py || (!px && !steady__rel_eq(x->async[i].t, ta, y->async[i].t, tb)))
                return false;
        }
        size_t w = x->hi - x->lo;
        if (memcmp(x->pending, y->pending, w * sizeof *x->pending) != 0)
            return false;
        for (size_t i = 0; i < w; i++)
            if (x->arrived[i] != y->arrived[i])
                return false;
        /* end times and launches from lo - d on, aligned on lo */
        for (size_t i = 0; i < w + x->d; i++) {
            size_t j = i + (y->d - x->d);
            sim_time ex = x->end[i], ey = y->end[j];
            if ((ex < 0) != (ey < 0) || (ex >= 0 && !steady__rel_eq(ex, ta, ey, tb)))
                return false;
            sim_time lx = x->launched[i], ly = y->launched[j];
            if ((lx < 0) != (ly < 0) || (lx >= 0 && !steady__rel_eq(lx, ta, ly, tb)))
                return false;
        }
    }
    if (a->n_ev != b->n_ev)
        return false;
    for (size_t k = 0; k < a->n_ev; k++) {
        const ev_snap *x = &a->ev[k], *y = &b->ev[k];
        if (x->type != EV_OP_DONE || y->type != EV_OP_DONE || x->a != y->a || x->b != y->b ||
            !steady__rel_eq(x->t, ta, y->t, tb))
            return false;
        int idx = s->idx_of[x->a];
        if (idx < 0 || y->c != x->c + (int64_t)s->P[idx])
            return false;
    }
    /* (an idle net carries nothing into its future: its free flow and round slots need not
     * be in the same order, a slot's index being a handle, never an order — the solver
     * breaks ties by link, member lists keep attach order, events their sequence; and its
     * rate threshold is reset by the next flow's attach before any re-solve reads it) */
    return true;
}

/* Whether op i + P of rank index k does what op i does, P ops later, as far as the rank's
 * op arrays tell (kind, stream, dependencies, memory events, successors, duration, bytes). */
static bool op_shape_repeats(replay_ctx *c, int k, uint32_t i)
{
    replay_steady *s = c->steady;
    rank_state *rs = &c->ranks[s->rank[k]];
    const trace_rank *tr = rs->tr;
    uint32_t P = s->P[k], j = i + P;
    if (j >= tr->n_ops)
        return false;
    const trace_op *a = &tr->ops[i], *b = &tr->ops[j];
    if (a->kind != b->kind || a->stream != b->stream || a->phase != b->phase ||
        a->cls != b->cls || a->dtype != b->dtype || a->recompute != b->recompute ||
        a->copy != b->copy || a->n_deps != b->n_deps || a->n_mem != b->n_mem ||
        a->duration_ps != b->duration_ps)
        return false;
    for (uint32_t d = 0; d < a->n_deps; d++)
        if (tr->deps[b->dep_first + d] != tr->deps[a->dep_first + d] + P)
            return false;
    for (uint32_t m = 0; m < a->n_mem; m++) {
        const trace_mem *x = &tr->mem[a->mem_first + m], *y = &tr->mem[b->mem_first + m];
        if (x->bytes != y->bytes || x->cat != y->cat || x->at_end != y->at_end)
            return false;
    }
    uint32_t na = rs->succ_first[i + 1] - rs->succ_first[i];
    if (na != rs->succ_first[j + 1] - rs->succ_first[j])
        return false;
    for (uint32_t q = 0; q < na; q++)
        if (rs->succ[rs->succ_first[j] + q] != rs->succ[rs->succ_first[i] + q] + P)
            return false;
    if (a->kind == TRACE_OP_COMPUTE)
        return replay__op_dur(rs, i) == replay__op_dur(rs, j);
    return a->kind != TRACE_OP_COPY || a->bytes == b->bytes;
}

/* For the collective of ordinal oa of rank index k, whose op is i: whether that of ordinal ob,
 * op i + P, is its instance a period later
 * (the same schedule, group and size; every simulated member's op P of its own ops on).
 * `seen`, when given, marks the instances found to repeat: a member of one reaches the same
 * instance a period on (the members' ops are checked) and the same answer, so it is checked
 * once for all its simulated members. */
static bool coll_repeats(replay_ctx *c, int k, uint32_t oa, uint32_t ob, uint64_t *seen)
{
    replay_steady *s = c->steady;
    const trace_rank *tr = c->ranks[s->rank[k]].tr;
    uint32_t ca = tr->colls[oa];
    if (seen && (seen[ca >> 6] >> (ca & 63) & 1))
        return true;
    uint32_t cb = tr->colls[ob];
    const coll_state *x = &c->colls[ca], *y = &c->colls[cb];
    const trace_coll *tx = &c->t->colls[ca], *ty = &c->t->colls[cb];
    if (x->plan != y->plan || x->arrivals != y->arrivals || tx->group != ty->group ||
        tx->op != ty->op || tx->bytes != ty->bytes || tx->root != ty->root)
        return false;
    const trace_group *g = &c->t->groups[tx->group];
    for (int m = 0; m < g->n; m++) {
        int idx = s->idx_of[g->ranks[m]];
        if (idx >= 0 && c->member_op[y->member_first + (uint64_t)m] !=
                            c->member_op[x->member_first + (uint64_t)m] + s->P[idx])
            return false;
    }
    if (seen)
        seen[ca >> 6] |= UINT64_C(1) << (ca & 63);
    return true;
}

/* Whether ops [from, to) of rank index k repeat P ops on (the period just simulated, for
 * one more period at least). */
bool steady__window_repeats(replay_ctx *c, int k, uint32_t from, uint32_t to)
{
    const trace_rank *tr = c->ranks[c->steady->rank[k]].tr;
    for (uint32_t i = from; i < to; i++)
        if (!op_shape_repeats(c, k, i) ||
            (tr->ops[i].kind == TRACE_OP_COLL &&
             !coll_repeats(c, k, tr->ops[i].coll, tr->ops[i + c->steady->P[k]].coll, NULL)))
            return false;
    return true;
}

/* How many periods (at most `m`) the ops ahead repeat for: op i + P must do what op i does
 * for every op the periods touch (from the snapshot's first unfinished op, lo, up to the
 * window's end or a stream's next op, top, plus m - 1 periods: m periods <= (E - top) / P
 * + 1, E the first op that does not repeat). Ranks that share their op arrays (trace.h, "Shared ranks"), the same
 * P and lo repeat alike but for their collectives: their arrays are compared once. */
uint32_t steady__repeats_for(replay_ctx *c, const full_snap *a, const full_snap *b, uint32_t m)
{
    replay_steady *s = c->steady;
    uint32_t *shape = sim_calloc((size_t)s->n, sizeof *shape);
    uint64_t *seen = sim_calloc(c->t->n_colls / 64 + 1, sizeof *seen);
    for (int k = 0; k < s->n && m > 0; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        const trace_rank *tr = rs->tr;
        uint32_t from = a->r[k].lo, P = s->P[k];
        /* what the periods touch: the window, and a stream's next op (one that moved a
         * period on may head it from past the window: the op m periods on must be its
         * image) */
        uint32_t top = b->r[k].hi;
        for (int st = 0; st < TRACE_STREAM_ASYNC; st++) {
            uint32_t hx = a->r[k].head[st], hy = b->r[k].head[st];
            if (hx != hy && hy < rs->stream_first[st + 1])
                top = SIM_MAX(top, rs->stream_ops[hy] + 1);
        }
        /* no need to look past what m periods touch */
        uint64_t need = (uint64_t)top + (uint64_t)(m - 1) * P;
        uint32_t stop = (uint32_t)SIM_MIN(need, (uint64_t)tr->n_ops), end = UINT32_MAX;
        for (int q = 0; q < k && end == UINT32_MAX; q++) {
            const rank_state *rq = &c->ranks[s->rank[q]];
            if (rq->tr->ops == tr->ops && rq->succ == rs->succ && !rq->var_dur && !rs->var_dur &&
                s->P[q] == P && a->r[q].lo == from)
                end = shape[q]; /* (found up to an earlier, larger stop: min below) */
        }
        if (end == UINT32_MAX) {
            end = from;
            while (end < stop && op_shape_repeats(c, k, end))
                end++;
        }
        end = SIM_MIN(end, stop);
        shape[k] = end;
        /* the collectives before `end` (their ops repeat P on, kinds included: the
         * ordinals of op i and op i + P differ by the same Q for every i there) */
        uint32_t E = end;
        if (end > from) {
            uint32_t o = steady__first_coll(rs, from), Q = steady__first_coll(rs, from + P) - o;
            for (; o < tr->n_colls && rs->coll_at[o] < end; o++) {
                SIM_ASSERT(rs->coll_at[o + Q] == rs->coll_at[o] + P, "rank %d: collective %u",
                           s->rank[k], o);
                if (!coll_repeats(c, k, o, o + Q, seen)) {
                    E = rs->coll_at[o];
                    break;
                }
            }
        }
        /* E == stop: repeats as far as m periods need */
        uint32_t mk = E >= stop && stop == need ? m : E >= top ? (E - top) / P + 1 : 0;
        m = SIM_MIN(m, mk);
    }
    sim_free(seen);
    sim_free(shape);
    return m;
}
