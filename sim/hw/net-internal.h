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

typedef struct net_link {
    hw_link_stats st;
    net_member *members; /* active flows crossing the link */
    int32_t n_members, cap_members;
    int32_t n_active;    /* = n_members; kept for busy accounting */
    sim_time busy_since;
    /* solver scratch */
    uint32_t stamp;
    double rem, wsum;
    double key;          /* rem / wsum while in the heap (the fair share) */
    int32_t heap_pos;    /* -1 when not in the heap */
    bool dirty;
    int32_t round;       /* the isolated round holding the link, -1 if none */
    int32_t n_latent;    /* flows started whose route crosses it, not yet active */
} net_link;

typedef struct net_flow {
    uint64_t tag;
    int state;
    const hw_route *route;
    int n_links;                      /* distinct links */
    int32_t link[HW_ROUTE_MAX];
    int32_t weight[HW_ROUTE_MAX];
    int32_t pos[HW_ROUTE_MAX];        /* index in the link's member list */
    double remaining;                 /* bytes at time `last` */
    double rate;                      /* B/s */
    sim_time last;
    sim_event *ev;
    uint32_t stamp;
    bool fixed;
    int32_t next_free;
    /* solver scratch: the smallest share among the links it alone crosses in the solve */
    double cap;
    int32_t cap_link; /* the link that sets it (-1: none) */
    int32_t heap_pos; /* -1 when its cap is not in the heap */
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
    net_link *links;
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
