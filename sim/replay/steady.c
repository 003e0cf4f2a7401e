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

#include "replay/replay-internal.h"

#define RING_MAX 16384       /* probes remembered for the lag search, at most ... */
#define RING_CELLS (1 << 20) /* ... and at most this many (probe, rank) records */
#define HMAP (2 * RING_MAX)  /* the index from token to probe (a power of two) */
#define CHAIN_MAX 512        /* earlier probes of the same token tried per probe */
#define BACKOFF_MAX 64       /* probes before arming again after a snapshot gave up, at most */
#define TRY_MAX 128          /* full comparisons with one snapshot, at most */
#define PROBE_RANKS_FREE 256 /* simulated ranks up to which every probe instant is taken */
#define ARMED_PROBES_MAX 65536 /* probes an armed snapshot waits for its repeat, at most */
#define JOURNAL_MAX (1u << 22) /* journal entries (64 B each), at most */

typedef struct rank_snap {
    uint32_t lo, hi, d;  /* ops [lo - d, hi): end times; [lo, hi): the window */
    size_t done_ops;
    uint32_t head[TRACE_STREAMS];
    bool busy[TRACE_STREAMS];
    sim_time stream_start[TRACE_STREAMS];
    sim_time free0;
    int comm_inflight;
    sim_time comm_since;
    plan_mem level;
    bool have_cur;
    busy_iv cur;
    sim_time acc_cursor;
    bool k;
    double k_left;
    sim_time k_at;
    bool k_slowed;
    async_start *async; /* those of the window, by op */
    size_t n_async;
    size_t beyond;      /* posted ones past the window */
    uint32_t beyond_max; /* ... the last of them */
    uint32_t *pending;  /* [lo, hi) */
    sim_time *end;      /* [lo - d, hi) */
    sim_time *launched; /* [lo - d, hi): a finished collective op's launch, else -1 */
    int32_t *arrived;   /* [lo, hi): a started, unfinished collective op's arrivals, else -1 */
} rank_snap;

typedef struct ev_snap {
    sim_time t;
    uint16_t type;
    int32_t a, b;
    int64_t c;
} ev_snap;

typedef struct full_snap {
    sim_time t;
    int step;
    rank_snap *r; /* per simulated rank, in rank order */
    ev_snap *ev;
    size_t n_ev;
} full_snap;

enum { J_IV, J_MEM, J_TL, J_SENT, J_CBUSY, J_RUNS };

typedef struct jentry {
    uint8_t kind;
    int8_t cls;  /* J_MEM: category; J_SENT: class */
    int32_t rank; /* J_RUNS: schedule */
    union {
        busy_iv iv;
        struct {
            sim_time t0, t1; /* J_MEM: t0; J_TL: start, end */
            uint32_t op;
            int64_t bytes;
        } x;
        double v; /* J_SENT, J_CBUSY */
    };
} jentry;



typedef struct replay_steady replay_steady;

struct replay_steady {
    int n; /* simulated ranks */
    int32_t *rank; /* their indices */
    int step;
    /* the lag search: the last `ring` probes (probe q in slot q % ring): their hash, the
     * previous probe of that hash (its number + 1; 0: none), and per rank the ops done and
     * the window; an index from hash to the latest probe of it (number + 1) */
    int ring;
    uint64_t *prev, *roll; /* roll: the polynomial hash of the tokens up to it */
    struct probe_rank { uint32_t done, lo, hi; } *pr; /* ring x n */
    uint64_t seq, base; /* probes recorded; the first one still usable */
    uint64_t map_h[HMAP], map_seq[HMAP];
    int n_map;
    /* an armed snapshot: compared `due` probes from now */
    full_snap *armed;
    uint64_t armed_lag; /* the lag in probes that armed it */
    uint64_t armed_h, armed_seq; /* its probe's hash and number */
    int tries;                   /* full comparisons made with it */
    int backoff, wait;
    jentry *j;
    size_t n_j, cap_j;
    /* the links' counters over the period, per link: whole bytes, the fraction in 1/2^32
     * byte and busy time, integers, so that m periods add m times as much exactly */
    int64_t *jbytes;
    uint64_t *jfrac;
    sim_time *jbusy;
    bool *jtouch;
    int32_t *jtouched; /* the links they touched */
    size_t n_jtouched, cap_jtouched;
    /* scratch */
    sim_event **evs;
    size_t cap_evs;
    uint32_t *P; /* per rank index: ops per period of the check in progress */
    int32_t *idx_of; /* per rank: its index among the simulated ones, -1 if none */
};

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

/* ---- windows and hashes ------------------------------------------------------------ */

/* The first unfinished op of the rank (everything before it has finished). */
static uint32_t rank_lo(rank_state *rs)
{
    return replay__lo(rs);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

/* What repeats unshifted from one period to the next (a necessary condition only). */
static uint64_t probe_hash(replay_ctx *c)
{
    replay_steady *s = c->steady;
    uint64_t h = sim_eventq_size(c->q);
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        uint32_t lo = rank_lo(rs);
        h = mix(h, (uint64_t)rs->comm_inflight - rs->n_posted);
        h = mix(h, rs->n_async - rs->n_posted);
        uint64_t busy = 0;
        for (int st = 0; st < TRACE_STREAMS; st++)
            busy = busy << 1 | rs->busy[st];
        h = mix(h, busy | (uint64_t)(rs->k_ev != NULL) << 32);
        h = mix(h, (uint64_t)rs->level.total);
        h = mix(h, (uint64_t)(rs->hi > lo ? rs->hi - lo : 0));
        h = mix(h, (uint64_t)(rs->done_ops - lo));
    }
    return h;
}

/* The farthest back (in ops) any op of [from, to) depends. */
static uint32_t dep_reach(const trace_rank *tr, uint32_t from, uint32_t to)
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

static bool is_coll(const rank_state *rs, uint32_t op)
{
    return rs->tr->ops[op].kind == TRACE_OP_COLL;
}

/* The first collective ordinal of the rank whose op is `op` or later (rank_state.coll_at):
 * the checks and the skip that run over every op of the periods ahead visit the collectives
 * by ordinal, without reading the other ops' 72 bytes. */
static uint32_t first_coll(const rank_state *rs, uint32_t op)
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
static bool posted(const rank_state *rs, uint32_t op)
{
    const trace_op *o = &rs->tr->ops[op];
    return o->stream == TRACE_STREAM_ASYNC && o->n_deps == 0;
}

static sim_time posted_start(const rank_state *rs, uint32_t op)
{
    return rs->hosted ? replay__issue_time(rs, op) : rs->step_start;
}

static int async_cmp(const void *pa, const void *pb)
{
    uint32_t a = ((const async_start *)pa)->op, b = ((const async_start *)pb)->op;
    return (a > b) - (a < b);
}

/* A rank's scalars as take_snap records them (no arrays, no async counts). */
static void rank_scalars(replay_ctx *c, int k, rank_snap *r)
{
    rank_state *rs = &c->ranks[c->steady->rank[k]];
    r->lo = rank_lo(rs);
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

static full_snap *take_snap(replay_ctx *c, sim_time now, const uint32_t *reach)
{
    replay_steady *s = c->steady;
    full_snap *f = sim_calloc(1, sizeof *f);
    f->t = now;
    f->step = s->step;
    f->r = sim_calloc((size_t)s->n, sizeof *f->r);
    for (int k = 0; k < s->n; k++) {
        rank_state *rs = &c->ranks[s->rank[k]];
        rank_snap *r = &f->r[k];
        rank_scalars(c, k, r);
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
            if (is_coll(rs, op) && rs->end[op] >= 0)
                r->launched[i] = c->colls[trace_op_coll(rs->tr, &rs->tr->ops[op])].launched;
        }
        for (size_t i = 0; i < w; i++) {
            uint32_t op = r->lo + (uint32_t)i;
            r->arrived[i] = -1;
            if (is_coll(rs, op) && in_flight(rs, r, op))
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

static bool rel_eq(sim_time a, sim_time ta, sim_time b, sim_time tb)
{
    return a - ta == b - tb;
}

/* The open busy interval a period later: the kernel it ends with is the period's
 * (relative), and it opened either in the period (relative) or before both instants and
 * stayed open through the period, back-to-back kernels extending it (the same opening). */
static bool iv_opened_same(const busy_iv *a, const busy_iv *b)
{
    return a->start == b->start && a->gap_start == b->gap_start && a->split == b->split &&
           a->ready == b->ready;
}

static bool iv_eq(const busy_iv *a, sim_time ta, const busy_iv *b, sim_time tb)
{
    bool opened = iv_opened_same(a, b) ||
                  (rel_eq(a->start, ta, b->start, tb) &&
                   rel_eq(a->gap_start, ta, b->gap_start, tb) &&
                   rel_eq(a->split, ta, b->split, tb) && rel_eq(a->ready, ta, b->ready, tb));
    return opened && (a->end < 0 ? b->end < 0 : b->end >= 0 && rel_eq(a->end, ta, b->end, tb)) &&
           a->cause == b->cause && a->early == b->early;
}

/* The part of snaps_match for one rank that needs no arrays: window bounds, stream heads
 * and their busy state, the compute stream's release, memory level, the open interval and
 * bubble cursor, the kernel in flight; and (`in_flight`: y's async counts are known)
 * communication in flight. */
static bool rank_scalars_match(replay_ctx *c, int k, const rank_snap *x, sim_time ta,
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
        if (x->busy[st] && !rel_eq(x->stream_start[st], ta, y->stream_start[st], tb))
            return false;
    }
    if (!rel_eq(x->free0, ta, y->free0, tb) || memcmp(&x->level, &y->level, sizeof x->level))
        return false;
    /* communication in flight: the window's alike, and since the same relative time, or
     * (posted ops beyond the window keeping it up) the same time */
    if (in_flight_known &&
        (x->comm_inflight - (int)x->beyond != y->comm_inflight - (int)y->beyond ||
         (x->comm_inflight > 0 && !rel_eq(x->comm_since, ta, y->comm_since, tb) &&
          !(x->comm_since == y->comm_since && y->beyond > 0))))
        return false;
    /* (the bubble cursor, like the interval, is either the period's or unmoved) */
    if (last && (x->have_cur != y->have_cur ||
                 !(rel_eq(x->acc_cursor, ta, y->acc_cursor, tb) ||
                   x->acc_cursor == y->acc_cursor) ||
                 (x->have_cur && !iv_eq(&x->cur, ta, &y->cur, tb))))
        return false;
    return x->k == y->k && (!x->k || (x->k_left == y->k_left && x->k_slowed == y->k_slowed &&
                                      rel_eq(x->k_at, ta, y->k_at, tb)));
}

/* Whether state `b` is state `a` a period later (s->P holds each rank's ops per period). */
static bool snaps_match(replay_ctx *c, const full_snap *a, const full_snap *b)
{
    replay_steady *s = c->steady;
    sim_time ta = a->t, tb = b->t;
    for (int k = 0; k < s->n; k++) {
        const rank_state *rs = &c->ranks[s->rank[k]];
        const rank_snap *x = &a->r[k], *y = &b->r[k];
        uint32_t P = s->P[k];
        if (y->d < x->d || !rank_scalars_match(c, k, x, ta, y, tb, true))
            return false;
        if (x->n_async != y->n_async)
            return false;
        for (size_t i = 0; i < x->n_async; i++) {
            uint32_t op = x->async[i].op;
            if (y->async[i].op != op + P)
                return false;
            bool px = posted(rs, op) && x->async[i].t == posted_start(rs, op);
            bool py = posted(rs, op + P) && y->async[i].t == posted_start(rs, op + P);
            if (px != py || (!px && !rel_eq(x->async[i].t, ta, y->async[i].t, tb)))
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
            if ((ex < 0) != (ey < 0) || (ex >= 0 && !rel_eq(ex, ta, ey, tb)))
                return false;
            sim_time lx = x->launched[i], ly = y->launched[j];
            if ((lx < 0) != (ly < 0) || (lx >= 0 && !rel_eq(lx, ta, ly, tb)))
                return false;
        }
    }
    if (a->n_ev != b->n_ev)
        return false;
    for (size_t k = 0; k < a->n_ev; k++) {
        const ev_snap *x = &a->ev[k], *y = &b->ev[k];
        if (x->type != EV_OP_DONE || y->type != EV_OP_DONE || x->a != y->a || x->b != y->b ||
            !rel_eq(x->t, ta, y->t, tb))
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
static bool window_repeats(replay_ctx *c, int k, uint32_t from, uint32_t to)
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
static uint32_t repeats_for(replay_ctx *c, const full_snap *a, const full_snap *b, uint32_t m)
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
            uint32_t o = first_coll(rs, from), Q = first_coll(rs, from + P) - o;
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
            bool pst = posted(rs, e->x.op) && e->x.t0 == posted_start(rs, e->x.op);
            replay__timeline_row(c, e->rank, op, pst ? posted_start(rs, op) : e->x.t0 + shift,
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
            if (is_coll(rs, i) && rs->end[i] >= 0)
                c->colls[coll_of(rs, i + mP)].launched = c->colls[coll_of(rs, i)].launched + dt;
        }
        /* what finished meanwhile: each op as the one a period before, a period later */
        for (uint32_t i = lo; i < lo + mP; i++) {
            rs->pending[i] = 0;
            rs->end[i] = rs->end[i - P] + T;
        }
        /* (op i - P is a collective where op i is: the ordinals differ by a constant) */
        const trace_rank *tr = rs->tr;
        uint32_t o = first_coll(rs, lo), Q = o - first_coll(rs, lo - P);
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
        if (rs->comm_inflight > 0 && rel_eq(a->r[k].comm_since, a->t, y->comm_since, b->t))
            rs->comm_since += dt; /* (else kept up since then by posted ops) */
        if (rs->have_cur && c->w0_known && s->step == c->steps - 1) {
            busy_iv *iv = &rs->cur;
            if (!iv_opened_same(&a->r[k].cur, &y->cur)) {
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
                bool pst = posted(rs, e.op) && e.t == posted_start(rs, e.op);
                e.op += mP;
                e.t = pst ? posted_start(rs, e.op) : e.t + dt;
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
        reach[k] = dep_reach(rs->tr, lo, hi + 2 * s->P[k]);
    }
    s->armed = take_snap(c, now, reach);
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
        uint32_t P = (uint32_t)(rs->done_ops - a->r[k].done_ops), lo = rank_lo(rs);
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
            ok = ok && dep_reach(rs->tr, a->r[k].lo, SIM_MAX(rs->hi, rs->lo)) <= a->r[k].d;
            reach[k] = a->r[k].d;
        }
        /* the ranks' scalars first: most unequal states differ there, at no copy; then
         * whether the ops of the period repeat a period on at all (a state can repeat
         * where the ops do not, e.g. with the stages' micro-batches paired differently) */
        for (int k = 0; k < s->n && ok; k++) {
            rank_snap r = {0};
            rank_scalars(c, k, &r);
            ok = rank_scalars_match(c, k, &a->r[k], a->t, &r, *now, false);
            if (ok && !window_repeats(c, k, a->r[k].lo, r.hi)) {
                /* the snapshot may still repeat at a longer period: keep it */
                sim_free(reach);
                if (s->tries >= TRY_MAX)
                    give_up(c);
                return false;
            }
        }
        if (ok)
            b = take_snap(c, *now, reach);
        sim_free(reach);
        ok = ok && snaps_match(c, a, b);
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
            if (y->comm_inflight > 0 && !rel_eq(x->comm_since, a->t, y->comm_since, b->t))
                m = SIM_MIN(m, y->beyond_max > hi ? (y->beyond_max - hi) / P : 0);
        }
        if (m > 0)
            m = repeats_for(c, a, b, m);
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
    uint64_t h = probe_hash(c);
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
            tok = mix(tok, cur.done - prv->done);
            tok = mix(tok, cur.lo - prv->lo);
            tok = mix(tok, cur.hi - prv->hi);
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
