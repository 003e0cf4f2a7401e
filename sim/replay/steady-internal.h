/* Steady-state skipping (steady.c), internal: its limits, the snapshot of the replay's state
 * at a probe, the journal of additions, and the window, snapshot and comparison helpers that
 * steady-snap.c gives steady.c. */
#ifndef SIM_REPLAY_STEADY_INTERNAL_H
#define SIM_REPLAY_STEADY_INTERNAL_H

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

/* The first unfinished op of the rank (everything before it has finished). */
static inline uint32_t steady__rank_lo(rank_state *rs)
{
    return replay__lo(rs);
}

static inline uint64_t steady__mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

/* steady-snap.c */
uint64_t steady__probe_hash(replay_ctx *c);
uint32_t steady__dep_reach(const trace_rank *tr, uint32_t from, uint32_t to);
bool steady__is_coll(const rank_state *rs, uint32_t op);
uint32_t steady__first_coll(const rank_state *rs, uint32_t op);
bool steady__posted(const rank_state *rs, uint32_t op);
sim_time steady__posted_start(const rank_state *rs, uint32_t op);
void steady__rank_scalars(replay_ctx *c, int k, rank_snap *r);
full_snap *steady__take_snap(replay_ctx *c, sim_time now, const uint32_t *reach);
bool steady__rel_eq(sim_time a, sim_time ta, sim_time b, sim_time tb);
bool steady__iv_opened_same(const busy_iv *a, const busy_iv *b);
bool steady__rank_scalars_match(replay_ctx *c, int k, const rank_snap *x, sim_time ta,
                               const rank_snap *y, sim_time tb, bool in_flight_known);
bool steady__snaps_match(replay_ctx *c, const full_snap *a, const full_snap *b);
bool steady__window_repeats(replay_ctx *c, int k, uint32_t from, uint32_t to);
uint32_t steady__repeats_for(replay_ctx *c, const full_snap *a, const full_snap *b, uint32_t m);

#endif
