/* Flow-level network: transfers are flows on routes of links; concurrent flows share every
 * link direction by max-min fairness (progressive filling, Bertsekas & Gallager, "Data
 * Networks" §6.5.2); a flow pays its route's latency before it consumes bandwidth.
 *
 * Issue 2's topology is a placeholder star (see net.c): every GPU has one link into and one
 * link out of its node's fabric, and one per direction into the inter-node network. The
 * solver is the real one and stays when the topology graph replaces the star.
 *
 * The network schedules its own events (flow activation, flow completion, re-solve) in the
 * caller's event queue with the event type given at creation; the caller passes every
 * popped event of that type to hw_net_handle. Flows that start or end at the same instant
 * are re-solved once, by a re-solve event queued behind them. */
#ifndef SIM_HW_NET_H
#define SIM_HW_NET_H

#include <stdint.h>

#include "core/eventq.h"
#include "hw/topology.h"

typedef struct hw_net hw_net;

/* Called when a flow has delivered its last byte. */
typedef void (*hw_flow_done_fn)(void *ctx, uint64_t tag, sim_time now);

typedef struct hw_link_stats {
    const char *src, *dst; /* device names, owned by the net */
    const char *cls;       /* "nvlink", "pcie", "ib", ... */
    double bw_Bps;
    double bytes;          /* carried so far */
    sim_time busy_ps;      /* time with at least one flow consuming bandwidth */
} hw_link_stats;

/* Builds the network of the first `n_gpus` GPUs of `topo` (asserts the topology has them).
 * The net borrows `q` and calls `done(ctx, tag, now)` for each finished flow. */
hw_net *hw_net_create(const hw_topology_spec *topo, int n_gpus, sim_eventq *q,
                      uint32_t event_type, hw_flow_done_fn done, void *ctx);
void hw_net_destroy(hw_net *net);

/* Starts a transfer of `bytes` from GPU `src` to GPU `dst` at time `now`. src == dst or
 * bytes == 0 completes after the route latency only (0 for src == dst). */
void hw_net_start_flow(hw_net *net, sim_time now, int src, int dst, double bytes, uint64_t tag);

/* Processes one event of the net's type (the caller returns the event to the queue's pool
 * afterwards unless told otherwise: the net frees it itself; the caller must not). */
void hw_net_handle(hw_net *net, sim_event *ev);

/* Closes the busy-time accounting at `now` (call once after the last event). */
void hw_net_finish(hw_net *net, sim_time now);

int hw_net_link_count(const hw_net *net);
const hw_link_stats *hw_net_link(const hw_net *net, int i);

/* Flows completed and max-min re-solves performed (statistics). */
uint64_t hw_net_flows_done(const hw_net *net);
uint64_t hw_net_solves(const hw_net *net);

/* Per-direction bandwidth and latency of the path between two GPUs (the bottleneck of
 * its route when alone); for tests and closed-form checks. */
double hw_net_path_bw_Bps(const hw_net *net, int src, int dst);
sim_time hw_net_path_latency_ps(const hw_net *net, int src, int dst);

#endif
