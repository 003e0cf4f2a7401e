/* Runs a collective schedule as flows on the network, with NCCL's protocol costs.
 *
 * Round r starts when round r-1 has finished (round 0 after the protocol's base latency);
 * each transfer of the first round starts after the protocol's per-step latency for the
 * class of its route (the class of the route's narrowest link) plus the route's latency,
 * each transfer of a later round after the part of that delay its own step does not hide
 * (coll_exec_piped_delay: steps move in slices), and carries bytes / efficiency on the
 * wire, efficiency being the protocol's payload share for that class. Transfers to or
 * from COLL_SWITCH go to the group's NVSwitch at the NVLS efficiency. A copy staged in host
 * memory waits for the hand-offs of all its chunks (coll_exec_staging_ps) in every round: a
 * bound on throughput, never hidden by the pipelining of later rounds. */
#ifndef SIM_COLL_EXEC_H
#define SIM_COLL_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "coll/coll.h"
#include "hw/net.h"

/* What one transfer of a schedule costs on a given group (see coll_exec_costs). */
typedef struct coll_xfer_cost {
    sim_time delay_ps; /* protocol step latency + route latency, a staged copy's
                          hand-offs (hw_route_staging_ps) in place of the route's one:
                          start to first byte */
    sim_time piped_ps; /* the same in a round after the first (coll_exec_piped_delay; the
                          hand-offs are not hidden) */
    sim_time stage_ps; /* the staging hand-offs in both (each transfer's own, also in a
                          dataflow round: coll_exec_dataflow_round) */
    double wire;       /* bytes on the wire */
    const hw_route *route;
} coll_xfer_cost;

typedef struct coll_exec {
    /* set by the caller */
    const coll_schedule *sched; /* borrowed */
    const int32_t *gpu;         /* GPU of each member (borrowed) */
    int switch_dev;             /* device of COLL_SWITCH transfers, -1 if none */
    hw_proto proto;
    bool nvls;                  /* NVLS efficiency for switch transfers */
    const hw_protocols *protocols; /* borrowed */
    const coll_xfer_cost *costs;   /* per transfer (coll_exec_costs), or NULL: computed as
                                      each round starts */
    const uint32_t *cost_at;       /* with costs from coll_exec_round_costs: where round r's
                                      transfers' costs start (NULL: one per transfer) */
    const hw_route **pair_routes;  /* optional, with costs NULL: n_members x n_members routes
                                      between members, filled as used (shared by the group's
                                      collectives) */
    int n_members;
    /* state */
    int round;
    bool started; /* a round has started: later ones pipeline their latency */
    size_t outstanding;
} coll_exec;

/* Starts the collective at `now`; flows carry `tag`. Returns true when there is nothing to
 * do (no rounds), i.e. the collective is complete at `now`. */
bool coll_exec_start(coll_exec *x, hw_topo *topo, hw_net *net, sim_time now, uint64_t tag);

/* Called for each finished flow of this collective; returns true when the collective is
 * complete (the last flow of the last round ended at `now`). */
bool coll_exec_flow_done(coll_exec *x, hw_topo *topo, hw_net *net, sim_time now, uint64_t tag);

/* The cost of every transfer of x->sched on x's group and protocol, which every instance of
 * that schedule on that group shares: an array of sched->n_xfers the caller frees. */
coll_xfer_cost *coll_exec_costs(const coll_exec *x, hw_topo *topo);

/* The same for a schedule whose rounds repeat (a ring's n - 1 steps): the costs of each round
 * that differs from the one before it (transfer for transfer: members, bytes and whether a
 * chunked schedule's piece is queued), and in *cost_at (n_rounds entries) where each round's
 * costs start. NULL (and *cost_at NULL) when more than `max` transfers would be costed. Both
 * arrays are the caller's to free. */
coll_xfer_cost *coll_exec_round_costs(const coll_exec *x, hw_topo *topo, size_t max,
                                      uint32_t **cost_at);

/* A dataflow schedule's round (coll_schedule.dataflow: a ring of n members): replaces the
 * latency part of its transfers' delay_ps and piped_ps (less their stage_ps) by
 * (n m - min) / (n - 1), m their mean weighted by the transfers' bytes and min the least.
 * Along a ring each member forwards a step as soon as it has received it, so the last piece
 * reaches its last member after the latency of every hop but one, each once: the n hops'
 * sum, n m, less the cheapest, over the n - 1 rounds, where rounds that each waited for
 * their slowest hop would pay the slowest n - 1 times (NCCL's tuning model counts a ring's
 * latency hop by hop, intra-node and network steps apart: src/graph/tuning.cc). Weighted
 * by bytes, a round of L channels per node (each member sending (L-1)/L of its piece to
 * the next member of its node and 1/L across) has one ring's mean hop: L - 1 inside the
 * node for each crossing. A uniform ring keeps its latency. An all_reduce's 2(n - 1)
 * rounds count 2(n m - min): at least its exact path, twice the hops less the cheapest two
 * adjacent ones (more by the difference where the cheapest hops are not adjacent, as when
 * NVLink and network hops alternate). */
void coll_exec_dataflow_round(const coll_schedule *s, int round, coll_xfer_cost *c);

/* The same sums for callers that hold a round's latencies elsewhere (the selector's
 * estimate, a round costed as it runs): add each transfer's bytes and latencies (staging
 * excluded; `piped` may repeat `delay` when only one is wanted), in the round's order, then
 * read the latencies every transfer of the round pays. */
typedef struct coll_dataflow {
    double w, d, p;      /* bytes; bytes x delay; bytes x piped delay */
    sim_time dmin, pmin; /* the least of each */
    bool any;
} coll_dataflow;
void coll_dataflow_add(coll_dataflow *a, double bytes, sim_time delay, sim_time piped);
/* false (and nothing set) when the round moved no bytes */
bool coll_dataflow_result(const coll_dataflow *a, int n, sim_time *delay, sim_time *piped);

/* The delay of a transfer in a round after the first: its full `delay` less the time the
 * rest of its step (bytes beyond one slice of the protocol's chunk) takes on the route's
 * narrowest link, at least 0. */
sim_time coll_exec_piped_delay(const coll_exec *x, hw_topo *topo, sim_time delay, double bytes,
                               double wire, const hw_route *r);

/* The start delay of a queued piece of a chunked schedule (coll_xfer_queued: a piece after
 * the first of its stream over its member pair), given its full `delay` (protocol step
 * latency + route latency). The pieces before it are in its connection's FIFO of S =
 * COLL_FIFO_SLOTS slots, and a slot comes back a credit loop after it was filled (the
 * data's delay and the credit's, 2 delay, plus the slice's own time d on the route's
 * narrowest link at the protocol's efficiency, without contention): the first piece fills
 * a slot at 0, the next S - 1 follow it d apart without waiting, and piece S finds every
 * slot full until the first one's comes back at 2 delay + d, after S - 1 pieces of d: it
 * waits max(0, 2 delay - (S - 1) d) (`slot`: coll_xfer_slot), and so does every S-th piece
 * after it. The others wait nothing: their rounds last their own d. */
sim_time coll_exec_queued_delay(hw_topo *topo, sim_time delay, double wire, const hw_route *r,
                                bool slot);

/* The staging hand-offs transfer i of round `round` of `s` waits for on its route `r` (0
 * unless the route is staged in host memory): a member pair's staged route carries one stream
 * of chunks per round, so the pair's transfers in the round share the hand-offs of their bytes
 * together (hw_route_staging_ps), however the schedule splits them (a tree's two trees on one
 * chain edge are one copy). */
sim_time coll_exec_staging_ps(const coll_schedule *s, int round, size_t i, const hw_route *r);

/* The device of member `member` (or of the group's NVSwitch for COLL_SWITCH). */
int coll_exec_device(const coll_exec *x, hw_topo *topo, int member);

/* The class, effective latency and payload bandwidth of one transfer (used by the selector's
 * estimate too). */
void coll_exec_xfer_cost(const coll_exec *x, hw_topo *topo, const coll_xfer *xf, sim_time *lat_ps,
                         double *wire_bytes, const hw_route **route);

#endif
