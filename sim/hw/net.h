/* Flow-level network: transfers are flows on routes of the topology graph; concurrent
 * flows share every link by max-min fairness (progressive filling, Bertsekas & Gallager,
 * "Data Networks" §6.5.2); a flow pays its route's latency before it consumes bandwidth.
 *
 * The network schedules its own events (flow activation, flow completion, re-solve) in the
 * caller's event queue with the event type given at creation; the caller passes every
 * popped event of that type to hw_net_handle. Flows that start or end at the same instant
 * are re-solved once, by a re-solve event queued behind them, and a re-solve touches only
 * the connected part of the flow/link graph that changed. */
#ifndef SIM_HW_NET_H
#define SIM_HW_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "core/eventq.h"
#include "hw/topo.h"

typedef struct hw_net hw_net;

/* Called when a flow has delivered its last byte. */
typedef void (*hw_flow_done_fn)(void *ctx, uint64_t tag, sim_time now);

typedef struct hw_link_stats {
    const char *src, *dst; /* device names, owned by the topology */
    const char *cls;       /* "nvlink", "pcie", "ib", ... */
    double bw_Bps;
    double bytes;          /* carried so far (a link crossed twice counts twice) */
    sim_time busy_ps;      /* time with at least one flow consuming bandwidth */
} hw_link_stats;

/* Creates the network over `topo` (borrowed: it must outlive the net; its route cache is
 * filled as flows start). The net borrows `q` and calls `done(ctx, tag, now)` for each
 * finished flow. */
hw_net *hw_net_create(hw_topo *topo, sim_eventq *q, uint32_t event_type, hw_flow_done_fn done,
                      void *ctx);
void hw_net_destroy(hw_net *net);

/* Starts a transfer of `bytes` from GPU `src` to GPU `dst` at time `now`. A transfer to
 * the same GPU, or of 0 bytes, completes after the route latency alone. */
void hw_net_start_flow(hw_net *net, sim_time now, int src, int dst, double bytes, uint64_t tag);

/* The same between any two devices of the topology (e.g. a GPU and host memory). */
void hw_net_start_flow_dev(hw_net *net, sim_time now, int src_dev, int dst_dev, double bytes,
                           uint64_t tag);

/* A round: transfers that start together and that the caller waits for as a whole (a
 * collective's step). Describe it with round_begin, one round_add per transfer (`act`: when
 * it starts consuming bandwidth, i.e. its start plus latencies; `route` from hw_topo_route),
 * then round_end. `done` is called once per transfer, as for flows. When no transfer shares
 * a link with another or with any other traffic, the round is timed with one event (its
 * links are held; a flow that needs one later turns the round into ordinary flows, with
 * the same max-min rates from then on); otherwise its transfers are ordinary flows. */
void hw_net_round_begin(hw_net *net);
void hw_net_round_add(hw_net *net, sim_time act, double bytes, const hw_route *route);
void hw_net_round_end(hw_net *net, uint64_t tag);
/* The same, with `key` (non-NULL) standing for the round's transfers: every round ended with
 * the same key has the same routes, bytes and activations relative to its first (the
 * caller's promise; e.g. a collective's cached costs of one round pattern). A closed round
 * is then recognized from its key, without comparing its transfers. */
void hw_net_round_end_key(hw_net *net, uint64_t tag, const void *key);
/* Isolated rounds on (the default) or off (every transfer an ordinary flow; for tests). */
void hw_net_set_rounds(hw_net *net, bool enabled);

/* Processes one event of the net's type; the net returns the event to the queue's pool. */
void hw_net_handle(hw_net *net, sim_event *ev);

/* Brings byte and busy-time counters up to `now` (call once after the last event). */
void hw_net_finish(hw_net *net, sim_time now);

int hw_net_link_count(const hw_net *net);
const hw_link_stats *hw_net_link(const hw_net *net, int i);
/* Adds traffic timed outside the network (simulation.symmetry's estimated collectives) to
 * link i's counters. */
void hw_net_add_traffic(hw_net *net, int i, double bytes, sim_time busy_ps);
void hw_net_add_counts(hw_net *net, int i, int64_t whole, uint64_t frac, sim_time busy_ps);

/* Steady-state skipping (replay/steady.c) reads and repeats what the net did over a period:
 * - a journal, when set (NULL: none), is told of every addition to a link's byte count
 *   (whole bytes and a fraction in 1/2^32 byte: link counts are exact, whatever the order
 *   of their additions) or busy time, so that adding a period's sums m times over
 *   (hw_net_add_counts) gives what m periods of additions would;
 * - hw_net_idle: no flow, latent or active, no round and nothing waiting to be re-solved
 *   (what such a net carries into its future does not depend on its past). */
typedef void (*hw_net_journal_fn)(void *ud, int link, int64_t whole, uint64_t frac,
                                  sim_time busy_ps);
void hw_net_set_journal(hw_net *net, hw_net_journal_fn fn, void *ud);
bool hw_net_idle(const hw_net *net);

/* Current rate of the flow with `tag` (for tests; -1 when no such active flow). */
double hw_net_flow_rate(const hw_net *net, uint64_t tag);

/* Statistics: flows completed, re-solves, and flows whose rate was recomputed. */
uint64_t hw_net_flows_done(const hw_net *net);
uint64_t hw_net_solves(const hw_net *net);
uint64_t hw_net_flows_resolved(const hw_net *net);
/* Rounds timed as isolated, and of those the ones later turned into flows. */
uint64_t hw_net_rounds_isolated(const hw_net *net);
uint64_t hw_net_rounds_split(const hw_net *net);
/* Of the rounds timed with one event, the closed ones (transfers sharing links with one
 * another, nothing else), and how many evolutions were simulated for them (the rest were
 * timed from the memo). */
uint64_t hw_net_rounds_closed(const hw_net *net);
uint64_t hw_net_rounds_evolved(const hw_net *net);

/* Recomputes max-min rates of every active flow from scratch (naive progressive filling)
 * and compares them with the incremental ones. Returns 0, or -1 after printing the first
 * flow whose rate differs by more than 1e-9 relative; returns 0 without checking while a
 * re-solve is pending (rates are defined only after it). For tests and debugging. */
int hw_net__check(const hw_net *net);

/* Bytes of closed-round records kept before they are dropped (0: the default, 64 MiB). For
 * tests of the memo's eviction. */
void hw_net__set_memo_limit(hw_net *net, size_t bytes);

#endif
