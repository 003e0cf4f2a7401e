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
 * line; the solver's member list and scratch in the second. */
typedef struct net_link {
    _Alignas(64) int32_t n_members; /* active flows crossing it */
    int32_t n_latent;    /* flows started whose route crosses it, not yet active */
    int32_t round;       /* the isolated round holding the link, -1 if none */
    uint32_t stamp;      /* solver and round-check scratch */
    hw_link_stats st;
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

typedef struct net_round {
    uint64_t tag;
    int n, cap;
    round_xfer *x;
    sim_time end;   /* the last transfer's end: the round's event */
    sim_event *ev;
    bool settled;   /* link counters taken and links released already */
    int32_t next_free;
} net_round;

struct hw_net {
    hw_topo *topo;
    sim_eventq *q;
    uint16_t type; /* the event type of flow completions */
    hw_flow_done_fn done;
    void *ctx;
    net_link *links;    /* in links_raw, 64-byte aligned */
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
};

#endif
