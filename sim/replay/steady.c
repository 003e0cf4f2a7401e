/* Exact steady-state skipping (simulation.steady_state: auto; docs/performance.md, "Steady
 * state"). A pipeline's or an accumulation loop's micro-batches repeat: once the whole
 * simulated state at one instant equals the state one period earlier, shifted by the period
 * in time and by each rank's ops of a period in op index, and the ops ahead repeat with the
 * same shifts, the replay would go on repeating the period it has just simulated. The skip
 * then moves the state forward by whole periods at once, and adds to the results what the
 * skipped periods would have added by repeating, in order, every addition the verified
 * period made (integer link counters: m times the period's sums).
 *
 * Probes. The first simulated rank starting a compute kernel marks an instant, taken once
 * every event of it has run and when the network is idle (no flow, no round), so that what
 * remains (a kernel in flight, collectives waiting for members, posted receives, the queued
 * events) can be compared as it is. Each probe's token hashes what must repeat unshifted
 * and how far each rank moved since the previous probe; a rolling hash over the tokens
 * finds the smallest lag L whose last two windows of L tokens are equal: a snapshot is
 * armed and the journal of additions starts. Later probes that hash like it, every rank
 * moved on alike, are compared with it in full (snaps_match), shifted; equal and with the
 * ops ahead repeating, the skip runs (skip). Unequal, the snapshot waits for a later
 * probe, up to TRY_MAX comparisons or 64 lags.
 *
 * What is compared: every simulated rank's window of ops between the first unfinished one
 * and the last touched one (unfinished dependency counts, end times, collectives' arrivals
 * and launch times), end times back as far as any op of the period depends, stream heads,
 * busy streams and their start, the compute stream's release, the kernel in flight (work
 * left, slowed or not), posted point-to-point ops, communication in flight, memory level,
 * the open busy interval and the bubble cursor; the queued events in (time, sequence)
 * order. Declined: kernel jitter (a draw per kernel), a host thread (node.host.launch)
 * that held an op back in the period or issues a period's ops slower than the GPU runs
 * them (issue times grow with the op index, not the period). A trace whose ops do not
 * repeat (MoE routing that differs by micro-batch) never passes the check. */
#include "core/sim.h"

#include <string.h>

#include "replay/steady-internal.h"

/* ---- journal ----------------------------------------------------------------------- */

static jentry *jput(replay_ctx *c, int kind)
{
    replay_steady *s = c->steady;
    SIM_GROW(s->j, s->cap_j, s->n_j + 1);
    jentry *e = &s->j[s->n_j++];
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    return e;
}

void replay__j_iv(replay_ctx *c, int rank, const busy_iv *iv)
{
    jentry *e = jput(c, J_IV);
    e->rank = rank;
    e->iv = *iv;
}

void replay__j_mem(replay_ctx *c, int rank, sim_time t, int cat, int64_t bytes)
{
    jentry *e = jput(c, J_MEM);
    e->rank = rank;
    e->cls = (int8_t)cat;
    e->x.t0 = t;
    e->x.bytes = bytes;
}

void replay__j_tl(replay_ctx *c, int rank, uint32_t op, sim_time start, sim_time end)
{
    jentry *e = jput(c, J_TL);
    e->rank = rank;
    e->x.op = op;
    e->x.t0 = start;
    e->x.t1 = end;
}

void replay__j_sent(replay_ctx *c, int rank, int cls, double bytes)
{
    jentry *e = jput(c, J_SENT);
    e->rank = rank;
    e->cls = (int8_t)cls;
    e->v = bytes;
}

void replay__j_cbusy(replay_ctx *c, int rank, double ps)
{
    jentry *e = jput(c, J_CBUSY);
    e->rank = rank;
    e->v = ps;
}

void replay__j_runs(replay_ctx *c, size_t sched)
{
    jentry *e = jput(c, J_RUNS);
    e->rank = (int32_t)sched;
}

static void j_link(void *ud, int link, int64_t whole, uint64_t frac, sim_time busy_ps)
{
    replay_steady *s = ((replay_ctx *)ud)->steady;
    if (!s->jtouch[link]) {
        s->jtouch[link] = true;
        SIM_GROW(s->jtouched, s->cap_jtouched, s->n_jtouched + 1);
        s->jtouched[s->n_jtouched++] = link;
    }
    uint64_t f = s->jfrac[link] + frac; /* (kept below 2^32: m times it fits 64 bits) */
    s->jbytes[link] += whole + (int64_t)(f >> 32);
    s->jfrac[link] = f & UINT32_MAX;
    s->jbusy[link] += busy_ps;
}

static void journal_clear(replay_steady *s)
{
    s->n_j = 0;
    for (size_t q = 0; q < s->n_jtouched; q++) {
        int32_t li = s->jtouched[q];
        s->jbusy[li] = s->jbytes[li] = 0;
        s->jfrac[li] = 0;
        s->jtouch[li] = false;
    }
    s->n_jtouched = 0;
}

static void journal_on(replay_ctx *c)
{
    journal_clear(c->steady);
    c->journal = true;
    hw_net_set_journal(c->net, j_link, c);
}

static void journal_off(replay_ctx *c)
{
    c->journal = false;
    hw_net_set_journal(c->net, NULL, NULL);
}

/* ---- set-up ------------------------------------------------------------------------ */

void replay__steady_init(replay_ctx *c)
{
    const plan_scenario *sc = c->p->sc;
    if (sc->simulation.steady_state == PLAN_STEADY_OFF) {
        c->steady_declined = "off";
        return;
    }
    if (c->jitter) {
        c->steady_declined = "jitter";
        return;
    }
    for (int r = 0; r < c->p->n_ranks; r++)
        if (c->t->ranks[r].n_host > 0) { /* the host's clock is not a function of the op */
            c->steady_declined = "host";
            return;
        }
    int n = 0, first = -1;
    for (int r = 0; r < c->p->n_ranks; r++) {
        if (c->active && !c->active[r])
            continue;
        if (first < 0)
            first = r;
        n++;
    }
    if (n == 0)
        return;
    replay_steady *s = sim_calloc(1, sizeof *s);
    s->n = n;
    s->rank = sim_calloc((size_t)n, sizeof *s->rank);
    s->idx_of = sim_calloc((size_t)c->p->n_ranks, sizeof *s->idx_of);
    for (int r = 0, k = 0; r < c->p->n_ranks; r++) {
        s->idx_of[r] = -1;
        if (!c->active || c->active[r]) {
            s->idx_of[r] = k;
            s->rank[k++] = r;
        }
    }
    c->probe_rank = first;
    /* a probe costs a few ns per simulated rank: past PROBE_RANKS_FREE ranks, probes are
     * at least as many events apart as there are ranks (then they fall at instants that
     * repeat only once the spacing's phase in the period does: a longer lag, found the
     * same way) */
    c->probe_gap = n > PROBE_RANKS_FREE ? (uint64_t)n : 0;
    s->ring = SIM_MAX(64, SIM_MIN(RING_MAX, RING_CELLS / n));
    s->prev = sim_calloc((size_t)s->ring, sizeof *s->prev);
    s->roll = sim_calloc((size_t)s->ring, sizeof *s->roll);
    s->pr = sim_calloc((size_t)s->ring * (size_t)n, sizeof *s->pr);
    s->P = sim_calloc((size_t)n, sizeof *s->P);
    size_t n_links = (size_t)hw_net_link_count(c->net) + 1;
    s->jbusy = sim_calloc(n_links, sizeof *s->jbusy);
    s->jbytes = sim_calloc(n_links, sizeof *s->jbytes);
    s->jfrac = sim_calloc(n_links, sizeof *s->jfrac);
    s->jtouch = sim_calloc(n_links, sizeof *s->jtouch);
    s->step = -1;
    c->steady = s;
}

static void snap_free(full_snap *f, int n)
{
    if (!f)
        return;
    for (int k = 0; k < n; k++) {
        rank_snap *r = &f->r[k];
        sim_free(r->async);
        sim_free(r->pending);
        sim_free(r->end);
        sim_free(r->launched);
        sim_free(r->arrived);
    }
    sim_free(f->r);
    sim_free(f->ev);
    sim_free(f);
}

void replay__steady_free(replay_ctx *c)
{
    replay_steady *s = c->steady;
    if (!s)
        return;
    snap_free(s->armed, s->n);
    sim_free(s->rank);
    sim_free(s->idx_of);
    sim_free(s->prev);
    sim_free(s->roll);
    sim_free(s->pr);
    sim_free(s->P);
    sim_free(s->j);
    sim_free(s->jbytes);
    sim_free(s->jfrac);
    sim_free(s->jbusy);
    sim_free(s->jtouch);
    sim_free(s->jtouched);
    sim_free(s->evs);
    sim_free(s);
    c->steady = NULL;
}

/* ---- the skip ---------------------------------------------------------------------- */

static uint32_t coll_of(const rank_state *rs, uint32_t op)
{
    return trace_op_coll(rs->tr, &rs->tr->ops[op]);
}

/* Adds period i's journal (i = 1..m after the verified one): times i T later, ops i P. */
static void replay_journal(replay_ctx *c, sim_time shift, uint32_t periods)
{
    replay_steady *s = c->steady;
    for (size_t q = 0; q < s->n_j; q++) {
        const jentry *e = &s->j[q];
        switch (e->kind) {
        case J_IV: {
            busy_iv iv = e->iv;
            iv.start += shift;
            if (iv.end >= 0)
                iv.end += shift;
            iv.gap_start += shift;
            iv.split += shift;
            iv.ready += shift;
            replay__push_iv(c, &c->ranks[e->rank], &iv);
            break;
        }
        case J_MEM:
            replay__memory_row(c, e->rank, e->x.t0 + shift, e->cls, e->x.bytes);
            break;
        case J_TL: {
            const rank_state *rs = &c->ranks[e->rank];
            uint32_t op = e->x.op + periods * s->P[s->idx_of[e->rank]];
            bool pst = steady__posted(rs, e->x.op) && e->x.t0 == steady__posted_start(rs, e->x.op);
            replay__timeline_row(c, e->rank, op, pst ? steady__posted_start(rs, op) : e->x.t0 + shift,
                                 e->x.t1 + shift);
            break;
        }
        case J_SENT:
            c->ranks[e->rank].comm_sent[e->cls] += e->v;
            break;
        case J_CBUSY:
            c->ranks[e->rank].comm_busy_ps += e->v;
            break;
        case J_RUNS:
            c->scheds[e->rank].runs++;
            break;
        }
    }
}

/* The links' counters over m more periods: m times the period's (integers: exact). */
static void replay_links(replay_ctx *c, uint32_t m)
{
    replay_steady *s = c->steady;
    for (size_t q = 0; q < s->n_jtouched; q++) {
        int32_t li = s->jtouched[q];
        uint64_t f = (uint64_t)m * s->jfrac[li];
        hw_net_add_counts(c->net, li, (int64_t)m * s->jbytes[li] + (int64_t)(f >> 32),
                          f & UINT32_MAX, (sim_time)m * s->jbusy[li]);
    }
}

/* Moves the state of `b` (now) forward by m periods of T: what the replay would reach. */
static void skip(replay_ctx *c, const full_snap *a, const full_snap *b, uint32_t m, sim_time T)
{
    replay_steady *s = c->steady;
    sim_time dt = (sim_time)m * T;
    for (uint32_t i = 1; i <= m; i++)
        replay_journal(c, (sim_time)i * T, i);
    replay_links(c, m);
    /* collectives waiting for members move to their instance m periods on (read all first:
     * an instance's new place may be another's old one) */
    size_t n_move = 0, cap_move = 0;
    struct move { uint32_t from, to; int arrived; } *mv = NULL;
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        const rank_snap *y = &b->r[k];
        uint32_t mP = m * s->P[k];
        for (uint32_t i = y->lo; i < y->hi; i++) {
            if (y->arrived[i - y->lo] < 0)
                continue;
            uint32_t from = coll_of(rs, i), to = coll_of(rs, i + mP);
            bool seen = false;
            for (size_t q = 0; q < n_move && !seen; q++)
                seen = mv[q].from == from;
            if (seen)
                continue;
            SIM_GROW(mv, cap_move, n_move + 1);
            mv[n_move++] = (struct move){from, to, c->colls[from].arrived};
        }
    }
    /* posted ops the skipped periods consumed: their collectives have finished */
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        uint32_t hi = b->r[k].hi, mP = m * s->P[k];
        for (size_t q = 0; q < rs->n_async; q++)
            if (rs->async[q].op >= hi && rs->async[q].op < hi + mP)
                c->colls[coll_of(rs, rs->async[q].op)].arrived = 0;
    }
    for (size_t q = 0; q < n_move; q++)
        c->colls[mv[q].from].arrived = 0;
    for (size_t q = 0; q < n_move; q++)
        c->colls[mv[q].to].arrived = mv[q].arrived;
    sim_free(mv);
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        const rank_snap *y = &b->r[k];
        uint32_t P = s->P[k], mP = m * P, lo = y->lo, hi = y->hi;
        /* the window, m periods on (from the top: the ranges may overlap) */
        for (uint32_t i = hi; i-- > lo;) {
            rs->pending[i + mP] = rs->pending[i];
            rs->end[i + mP] = rs->end[i] >= 0 ? rs->end[i] + dt : -1;
            if (steady__is_coll(rs, i) && rs->end[i] >= 0)
                c->colls[coll_of(rs, i + mP)].launched = c->colls[coll_of(rs, i)].launched + dt;
        }
        /* what finished meanwhile: each op as the one a period before, a period later */
        for (uint32_t i = lo; i < lo + mP; i++) {
            rs->pending[i] = 0;
            rs->end[i] = rs->end[i - P] + T;
        }
        /* (op i - P is a collective where op i is: the ordinals differ by a constant) */
        const trace_rank *tr = rs->tr;
        uint32_t o = steady__first_coll(rs, lo), Q = o - steady__first_coll(rs, lo - P);
        for (; o < tr->n_colls && rs->coll_at[o] < lo + mP; o++) {
            SIM_ASSERT(rs->coll_at[o - Q] == rs->coll_at[o] - P, "rank %d: collective %u",
                       s->rank[k], o);
            c->colls[tr->colls[o]].launched = c->colls[tr->colls[o - Q]].launched + T;
        }
        for (int st = 0; st < TRACE_STREAM_ASYNC; st++) {
            if (y->head[st] == rs->stream_first[st + 1])
                continue;
            uint32_t per = y->head[st] - a->r[k].head[st]; /* stream positions per period */
            if (per == 0)
                continue; /* parked past the skipped periods */
            rs->head[st] += m * per;
            SIM_ASSERT(rs->stream_ops[rs->head[st]] == rs->stream_ops[y->head[st]] + mP,
                       "rank %d stream %d: head after the skip", s->rank[k], st);
            if (rs->busy[st])
                rs->stream_start[st] += dt;
        }
        rs->stream_free[TRACE_STREAM_COMPUTE] += dt;
        if (rs->comm_inflight > 0 && steady__rel_eq(a->r[k].comm_since, a->t, y->comm_since, b->t))
            rs->comm_since += dt; /* (else kept up since then by posted ops) */
        if (rs->have_cur && c->w0_known && s->step == c->steps - 1) {
            busy_iv *iv = &rs->cur;
            if (!steady__iv_opened_same(&a->r[k].cur, &y->cur)) {
                iv->start += dt;
                iv->gap_start += dt;
                iv->split += dt;
                iv->ready += dt;
            }
            if (iv->end >= 0)
                iv->end += dt;
        }
        if (rs->k_ev)
            rs->k_at += dt;
        /* point-to-point ops in flight: the window's m periods on; posted ones past it
         * stay, unless the skipped periods consumed them */
        size_t kept = 0, dropped = 0;
        for (size_t q = 0; q < rs->n_async; q++) {
            async_start e = rs->async[q];
            if (e.op < hi) {
                bool pst = steady__posted(rs, e.op) && e.t == steady__posted_start(rs, e.op);
                e.op += mP;
                e.t = pst ? steady__posted_start(rs, e.op) : e.t + dt;
            } else if (e.op < hi + mP) {
                dropped++;
                continue;
            }
            rs->async[kept++] = e;
        }
        rs->n_async = kept;
        rs->n_posted -= dropped;
        rs->comm_inflight -= (int)dropped;
        rs->done_ops += mP;
        rs->lo = lo + mP;
        rs->hi = hi + mP;
        c->res->summary.steady_ops += (uint64_t)mP;
    }
    /* the queued events: later by dt, on the ops m periods on */
    size_t n = sim_eventq_size(c->q);
    SIM_GROW(s->evs, s->cap_evs, n + 1);
    sim_eventq_list(c->q, s->evs);
    for (size_t q = 0; q < n; q++) {
        sim_event *e = s->evs[q];
        e->c += (int64_t)m * s->P[s->idx_of[e->a]];
    }
    sim_eventq_shift(c->q, dt);
    c->res->summary.steady_periods += m;
    c->steady_skipped_ps += dt;
}

/* ---- probes ------------------------------------------------------------------------ */

/* Forgets the probes seen (a new step, a skip, a full index). */
static void forget(replay_steady *s)
{
    s->base = s->seq;
    s->n_map = 0;
    memset(s->map_seq, 0, sizeof s->map_seq);
}

static void disarm(replay_ctx *c)
{
    replay_steady *s = c->steady;
    snap_free(s->armed, s->n);
    s->armed = NULL;
    journal_off(c);
    journal_clear(s);
}

/* The armed snapshot found no repeat: dropped, and arming waits longer next time. */
static void give_up(replay_ctx *c)
{
    replay_steady *s = c->steady;
    disarm(c);
    s->backoff = SIM_MIN(2 * s->backoff + 1, BACKOFF_MAX);
    s->wait = s->backoff;
}


/* Takes the snapshot a repeat is looked for from (s->P: each rank's expected ops per
 * period, which sets how far back end times are kept) and starts the journal. */
static void arm(replay_ctx *c, sim_time now, uint64_t h, uint64_t lag)
{
    replay_steady *s = c->steady;
    uint32_t *reach = sim_calloc((size_t)s->n, sizeof *reach);
    for (int k = 0; k < s->n; k++) {
        const rank_state *rs = &c->ranks[s->rank[k]];
        uint32_t lo = rs->lo, hi = SIM_MAX(rs->hi, lo);
        reach[k] = steady__dep_reach(rs->tr, lo, hi + 2 * s->P[k]);
    }
    s->armed = steady__take_snap(c, now, reach);
    sim_free(reach);
    s->armed_lag = lag;
    s->armed_h = h;
    s->armed_seq = s->seq;
    s->tries = 0;
    c->host_bound = false;
    journal_on(c);
}

/* The armed snapshot's comparison, due a lag after it was taken: the full comparison,
 * and the skip when it holds (true). An equal state whose ops do not repeat that far ahead
 * (a pipeline's period may span several of the lags in which its state repeats) is compared
 * again a lag later, up to TRY_MAX times; an unequal one is dropped. */
static bool armed_match(replay_ctx *c, sim_time *now)
{
    replay_steady *s = c->steady;
    full_snap *a = s->armed;
    bool ok = true;
    for (int k = 0; k < s->n && ok; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        uint32_t P = (uint32_t)(rs->done_ops - a->r[k].done_ops), lo = steady__rank_lo(rs);
        s->P[k] = P;
        ok = P > 0 && lo - a->r[k].lo == P && SIM_MAX(rs->hi, lo) - a->r[k].hi == P;
    }
    s->tries++;
    /* the host thread (node.host.launch) issues op i at step_start + (i + 1) launch: it
     * must have kept ahead of the GPU through the period (no op waited for its issue, no
     * gap was its) and issue a period's ops in no more than a period, so that it stays
     * ahead in every period skipped */
    sim_time T = *now - a->t;
    ok = ok && !c->host_bound;
    for (int k = 0; k < s->n && ok; k++) {
        sim_time l = c->ranks[s->rank[k]].launch_ps;
        ok = l == 0 || T / l >= (sim_time)s->P[k];
    }
    full_snap *b = NULL;
    uint32_t m = 0;
    if (ok) {
        uint32_t *reach = sim_calloc((size_t)s->n, sizeof *reach);
        for (int k = 0; k < s->n; k++) {
            const rank_state *rs = &c->ranks[s->rank[k]];
            /* the period's ops must depend no farther back than the snapshot kept */
            ok = ok && steady__dep_reach(rs->tr, a->r[k].lo, SIM_MAX(rs->hi, rs->lo)) <= a->r[k].d;
            reach[k] = a->r[k].d;
        }
        /* the ranks' scalars first: most unequal states differ there, at no copy; then
         * whether the ops of the period repeat a period on at all (a state can repeat
         * where the ops do not, e.g. with the stages' micro-batches paired differently) */
        for (int k = 0; k < s->n && ok; k++) {
            rank_snap r = {0};
            steady__rank_scalars(c, k, &r);
            ok = steady__rank_scalars_match(c, k, &a->r[k], a->t, &r, *now, false);
            if (ok && !steady__window_repeats(c, k, a->r[k].lo, r.hi)) {
                /* the snapshot may still repeat at a longer period: keep it */
                sim_free(reach);
                if (s->tries >= TRY_MAX)
                    give_up(c);
                return false;
            }
        }
        if (ok)
            b = steady__take_snap(c, *now, reach);
        sim_free(reach);
        ok = ok && steady__snaps_match(c, a, b);
    }
    if (ok) {
        /* how many periods on the state stays this state shifted: until a stream parked
         * past the window would move, the posted ops keeping communication in flight run
         * out, or (the longest to find, so last, and no further than those allow) the
         * ops stop repeating */
        m = UINT32_MAX;
        for (int k = 0; k < s->n && m > 0; k++) {
            const rank_state *rs = &c->ranks[s->rank[k]];
            const rank_snap *x = &a->r[k], *y = &b->r[k];
            uint32_t hi = y->hi, P = s->P[k];
            for (int st = 0; st < TRACE_STREAM_ASYNC; st++) {
                uint32_t hd = x->head[st];
                if (hd == y->head[st] && hd < rs->stream_first[st + 1]) {
                    uint32_t op = rs->stream_ops[hd];
                    m = SIM_MIN(m, op >= hi ? (op - hi) / P : 0);
                }
            }
            if (y->comm_inflight > 0 && !steady__rel_eq(x->comm_since, a->t, y->comm_since, b->t))
                m = SIM_MIN(m, y->beyond_max > hi ? (y->beyond_max - hi) / P : 0);
        }
        if (m > 0)
            m = steady__repeats_for(c, a, b, m);
    }
    if (!ok || m == 0) {
        snap_free(b, s->n);
        /* not this probe: the snapshot stays armed for a later one (a state may repeat
         * sooner than the whole period, equal or not, with its ops not repeating: a
         * pipeline whose schedule groups micro-batches), up to TRY_MAX comparisons or
         * 64 times the lag that armed it (replay__steady_probe) */
        if (s->tries >= TRY_MAX)
            give_up(c);
        return false;
    }
    journal_off(c);
    skip(c, a, b, m, T);
    *now += (sim_time)m * T;
    snap_free(b, s->n);
    disarm(c);
    s->backoff = 0;
    forget(s);
    return true;
}

static uint64_t pow_u64(uint64_t b, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

#define ROLL_BASE UINT64_C(0x100000001b3) /* (odd: a polynomial hash modulo 2^64) */

bool replay__steady_probe(replay_ctx *c, sim_time *now)
{
    replay_steady *s = c->steady;
    int step = c->ranks[c->probe_rank].step;
    for (int k = 0; k < s->n; k++)
        if (c->ranks[s->rank[k]].step != step)
            step = -1;
    if (step != s->step) {
        disarm(c);
        forget(s);
        s->step = step;
    }
    if (step < 0 || !hw_net_idle(c->net))
        return false;
    /* this probe's hash: what must repeat unshifted */
    uint64_t h = steady__probe_hash(c);
    if (s->armed) {
        /* a candidate repeat of the armed snapshot: the same hash, and every rank moved on
         * by the same count of ops done, first unfinished op and window end */
        bool cand = h == s->armed_h;
        for (int k = 0; k < s->n && cand; k++) {
            const rank_state *rs = &c->ranks[s->rank[k]];
            const rank_snap *x = &s->armed->r[k];
            uint32_t P = (uint32_t)(rs->done_ops - x->done_ops);
            cand = P > 0 && rs->lo - x->lo == P && SIM_MAX(rs->hi, rs->lo) - x->hi == P;
        }
        uint64_t age = s->seq - s->armed_seq;
        if (cand && armed_match(c, now))
            return true;
        if (s->armed && (age > ARMED_PROBES_MAX || age > 64 * s->armed_lag + 64 ||
                         s->n_j > JOURNAL_MAX))
            give_up(c); /* (no repeat within 64 times the lag that armed it) */
    }
    /* this probe's token: the hash and how far each rank moved since the previous probe */
    uint64_t q = s->seq, tok = h;
    size_t slot = (size_t)(q % (uint64_t)s->ring), pslot = (size_t)((q + s->ring - 1) % s->ring);
    bool first = q == s->base;
    for (int k = 0; k < s->n; k++) {
        const rank_state *rs = &c->ranks[s->rank[k]];
        struct probe_rank cur = {(uint32_t)rs->done_ops, rs->lo, SIM_MAX(rs->hi, rs->lo)};
        const struct probe_rank *prv = &s->pr[pslot * (size_t)s->n + (size_t)k];
        if (!first) {
            tok = steady__mix(tok, cur.done - prv->done);
            tok = steady__mix(tok, cur.lo - prv->lo);
            tok = steady__mix(tok, cur.hi - prv->hi);
        }
        s->pr[slot * (size_t)s->n + (size_t)k] = cur;
    }
    s->roll[slot] = (first ? 0 : s->roll[pslot]) * ROLL_BASE + tok;
    size_t mi = (size_t)(tok * UINT64_C(0x9e3779b97f4a7c15) >> 40) & (HMAP - 1);
    while (s->map_seq[mi] && s->map_h[mi] != tok)
        mi = (mi + 1) & (HMAP - 1);
    s->prev[slot] = s->map_seq[mi];
    if (!s->map_seq[mi])
        s->n_map++;
    s->map_h[mi] = tok;
    s->map_seq[mi] = ++s->seq;
    /* the smallest lag L whose last two windows of L tokens are equal (the probes' sequence
     * has repeated over two whole periods), among the earlier probes of this token */
    uint64_t lag = 0, cand = s->prev[slot];
    for (int tries = 0; cand && !lag && tries < CHAIN_MAX; tries++) {
        uint64_t p = cand - 1, L = q - p;
        if (p < s->base + L || q - (p - L) >= (uint64_t)s->ring)
            break; /* (older ones lie further back still) */
        size_t sp = (size_t)(p % (uint64_t)s->ring), sp2 = (size_t)((p - L) % (uint64_t)s->ring);
        uint64_t BL = pow_u64(ROLL_BASE, L);
        bool rep = s->roll[slot] - s->roll[sp] * BL == s->roll[sp] - s->roll[sp2] * BL;
        /* ... over which every rank moved its window on by the ops it finished */
        for (int k = 0; k < s->n && rep; k++) {
            const struct probe_rank *x = &s->pr[sp * (size_t)s->n + (size_t)k];
            const struct probe_rank *y = &s->pr[slot * (size_t)s->n + (size_t)k];
            uint32_t dd = y->done - x->done;
            rep = dd > 0 && y->lo - x->lo == dd && y->hi - x->hi == dd;
        }
        if (rep)
            lag = L;
        else
            cand = s->prev[sp];
    }
    if (lag && !s->armed) {
        if (s->wait > 0) {
            s->wait--;
        } else {
            size_t sl = (size_t)((q - lag) % (uint64_t)s->ring);
            for (int k = 0; k < s->n; k++)
                s->P[k] = s->pr[slot * (size_t)s->n + (size_t)k].done -
                          s->pr[sl * (size_t)s->n + (size_t)k].done;
            arm(c, *now, h, lag);
        }
    }
    if (s->n_map > HMAP / 2)
        forget(s); /* mostly stale tokens: start over (periods are found again) */
    return false;
}
