/* Internals of the flow-level network (net.c), shared with its reference checker
 * (net-check.c). Nothing outside sim/hw includes this. */
#ifndef SIM_HW_NET_INTERNAL_H
#define SIM_HW_NET_INTERNAL_H

#include "hw/net.h"

enum { NET_EV_ACTIVATE, NET_EV_COMPLETE, NET_EV_RESOLVE, NET_EV_ROUND };
enum { FLOW_FREE, FLOW_LATENT, FLOW_ACTIVE };

typedef struct net_member {
    int32_t flow;
    int32_t weight;
} net_member;

/* 128 bytes, aligned to a cache line (hw_net_create): what an isolated round reads and
 * writes of each link it crosses (occupancy, stamp, bandwidth and counters) is in its first
 * line; the solver's member list and scratch in the second. Its names and class are in the
 * net's `stats` (hw_net_link), with the counters copied there when read. */
typedef struct net_link {
    _Alignas(64) int32_t n_members; /* active flows crossing it */
    int32_t n_latent;    /* flows started whose route crosses it, not yet active */
    int32_t round;       /* the isolated round holding the link, -1 if none */
    uint32_t stamp;      /* solver and round-check scratch */
    double bw_Bps;
    int64_t whole;       /* bytes carried: whole bytes, and the fraction in 1/2^32 byte */
    uint32_t frac;       /* (net__add_bytes) */
    sim_time busy_ps;    /* time with at least one flow consuming bandwidth */
    net_member *members;
    int32_t cap_members;
    int32_t n_active;    /* = n_members; kept for busy accounting */
    sim_time busy_since;
    /* solver scratch */
    double rem, wsum;
    double key;          /* rem / wsum while in the heap (the fair share) */
    int32_t heap_pos;    /* -1 when not in the heap */
    bool dirty;
} net_link;
_Static_assert(sizeof(net_link) == 128, "a link's two cache lines");

/* One distinct link of a flow's route. */
typedef struct net_hop {
    int32_t link;
    int32_t weight; /* times the route crosses it */
    int32_t pos;    /* index in the link's member list */
} net_hop;

/* The fields every event reads first, then the hops: a flow of h hops spans 80 + 12 h
 * bytes, whatever HW_ROUTE_MAX (flow_init sets the header; hops are written as used). */
typedef struct net_flow {
    double remaining;                 /* bytes at time `last` */
    double rate;                      /* B/s */
    sim_time last;
    sim_event *ev;
    const hw_route *route;
    uint64_t tag;
    /* solver scratch: the smallest share among the links it alone crosses in the solve */
    double cap;
    int32_t cap_link; /* the link that sets it (-1: none) */
    int32_t heap_pos; /* -1 when its cap is not in the heap */
    uint32_t stamp;
    int32_t next_free;
    int16_t n_links;  /* distinct links */
    uint8_t state;
    bool fixed;
    net_hop hop[HW_ROUTE_MAX];
} net_flow;

/* A transfer of an isolated round (see hw_net_round_end): alone on its links, it starts
 * consuming at `act` and runs at its route's bottleneck bandwidth until `end`. */
typedef struct round_xfer {
    const hw_route *route;
    sim_time act, end;
    double bytes, rate;
} round_xfer;

/* A closed round's evolution (net-closed.c): transfers that share links among themselves but
 * with nothing else, simulated once as flows on a private net; rounds of the same transfers
 * (routes, bytes, activations relative to the first) reuse it. Reference-counted: the memo
 * holds one reference, each round timed by it another. */
typedef struct net_evolution {
    uint64_t hash;
    const void *key;    /* the caller's key for these transfers (NULL: compared in full) */
    int refs;
    uint32_t uses, splits; /* rounds timed from it, and of those the ones turned into flows */
    int n;              /* transfers */
    round_xfer *x;      /* route, act (relative to the round's base), bytes */
    sim_time end;       /* the last completion, relative to the base */
    int n_links;        /* links crossed, with what they carried */
    int32_t *link;
    double *bytes;
    sim_time *busy_ps;
} net_evolution;

typedef struct net_round {
    uint64_t tag;
    int n, cap;
    round_xfer *x;
    sim_time end;   /* the last transfer's end: the round's event */
    sim_event *ev;
    bool settled;   /* link counters taken and links released already */
    int32_t next_free;
    net_evolution *evo; /* a closed round's evolution (NULL: an isolated round), whose
                           transfers are the round's (x unused) */
    sim_time base;      /* ... and the time their activations are relative to */
} net_round;

struct hw_net {
    hw_topo *topo;
    sim_eventq *q;
    uint16_t type; /* the event type of flow completions */
    hw_flow_done_fn done;
    void *ctx;
    net_link *links;    /* in links_raw, 64-byte aligned */
    hw_link_stats *stats; /* per link: names, class, bandwidth; counters when read */
    void *links_raw;
    int n_links;
    net_flow *flows;
    size_t cap_flows;
    int32_t n_flows, free_head;
    int32_t *dirty;
    size_t n_dirty, cap_dirty;
    bool resolve_pending;
    double theta;       /* flows slower than this keep their rates (removals-only batch) */
    /* solver scratch */
    uint32_t stamp;
    int32_t *comp_links, *comp_flows, *heap;
    size_t cap_comp_links, cap_comp_flows, cap_heap;
    uint64_t flows_done, solves, resolved;
    /* isolated rounds */
    bool rounds_enabled;
    net_round *rounds;
    int32_t n_rounds, round_free;
    size_t cap_rounds;
    round_xfer *pending; /* the round being described (hw_net_round_add) */
    int n_pending, cap_pending;
    uint64_t rounds_fast, rounds_split;
    /* closed rounds (net-closed.c) */
    hw_net *priv;            /* the private net their evolutions run on */
    sim_time t0;             /* (on the private net) the time a run's base maps to */
    net_evolution **memo;    /* open-addressing table, cap_memo slots (a power of two) */
    size_t cap_memo, n_memo, memo_bytes;
    size_t memo_limit;       /* 0: MEMO_BYTES_MAX (hw_net__set_memo_limit, for tests) */
    uint64_t rounds_closed, rounds_evolved;
    /* flows and rounds in use (not on their free lists): both 0 when the net is idle */
    int32_t live_flows, live_rounds;
    /* hw_net_set_journal: told of every addition to a link's counters (NULL: none) */
    hw_net_journal_fn journal;
    void *journal_ud;
};

/* Adds to link li's byte or busy-time counter, telling the journal if one listens. Bytes
 * are counted exactly as whole bytes plus a fraction in 1/2^32 byte (each addition rounded
 * to the nearest 1/2^32 byte), so that a count is the same whatever the order of its
 * additions: it does not depend on which of two simultaneous transfers settles first, and a
 * skipped steady-state period adds exactly what it added (replay/steady.c). */
static inline void net__add_count(hw_net *net, int32_t li, int64_t whole, uint64_t frac)
{
    net_link *l = &net->links[li];
    uint64_t f = (uint64_t)l->frac + frac;
    l->whole += whole + (int64_t)(f >> 32);
    l->frac = (uint32_t)f;
    if (net->journal)
        net->journal(net->journal_ud, li, whole, frac, 0);
}

/* The bytes link l carried (hw_net_link's bytes). */
static inline double net__link_bytes(const net_link *l)
{
    return (double)l->whole + (double)l->frac * 0x1p-32;
}

static inline void net__add_bytes(hw_net *net, int32_t li, double bytes)
{
    int64_t w = (int64_t)bytes; /* bytes >= 0: truncation is floor */
    /* (the fraction in [0, 2^32]: a signed conversion, one instruction) */
    net__add_count(net, li, w, (uint64_t)(int64_t)((bytes - (double)w) * 0x1p32 + 0.5));
}

static inline void net__add_busy(hw_net *net, int32_t li, sim_time ps)
{
    net->links[li].busy_ps += ps;
    if (net->journal)
        net->journal(net->journal_ud, li, 0, 0, ps);
}

/* Whether a link carries nothing: no active or latent flow, no round holding it. */
static inline bool net__link_free(const net_link *l)
{
    return l->n_members == 0 && l->n_latent == 0 && l->round < 0;
}

/* net.c, for net-closed.c */
int32_t net__flow_slot(hw_net *net, uint64_t tag, int state, const hw_route *r, double bytes,
                       double rate, sim_time last);
void net__start_flow(hw_net *net, sim_time now, const hw_route *r, double bytes, uint64_t tag);
void net__attach_links(hw_net *net, int32_t id, sim_time now);
int32_t net__round_alloc(hw_net *net, int n, bool room);
void net__round_release(hw_net *net, int32_t ri);

/* net-closed.c: times the pending round as a closed round when it is one (true), else
 * leaves it to the caller (false); the counters of a finished one (its links released);
 * one turned into flows at `now`; and the memo freed. */
bool net__closed_round(hw_net *net, uint64_t tag, const void *key);
bool net__closed_keyed(hw_net *net, uint64_t tag, const void *key);
void net__closed_settle(hw_net *net, net_round *R);
void net__closed_split(hw_net *net, net_round *R, sim_time now);
void net__closed_destroy(hw_net *net);
void net__evolution_put(net_evolution *e);

#endif
