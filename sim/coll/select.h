/* Choice of algorithm and protocol for a collective (`auto`), as NCCL's tuner does: among
 * the (algorithm, protocol) pairs NCCL itself would consider for the operation on this group
 * (coll_nccl_algo, coll_ll128_paths: NCCL 2.30 src/graph/tuning.cc and src/enqueue.cc), every
 * candidate is costed in isolation on the real topology and the fastest wins (ties: the lower
 * algorithm, then protocol, index). The cost of a schedule is the protocol's base latency
 * plus, round after round, the time its last transfer ends: a transfer's per-step latency
 * plus the wire bytes of the most loaded link of its route (all the round's transfers on it)
 * over that link's bandwidth — the exact time of a round whose transfers are alike, and a
 * close estimate otherwise. A fixed algorithm may be any of
 * stepsim's; a fixed protocol bypasses NCCL's enable rules (as NCCL_PROTO does).
 * docs/collectives.md explains the reasoning and what NCCL does. */
#ifndef SIM_COLL_SELECT_H
#define SIM_COLL_SELECT_H

#include "coll/exec.h"

typedef struct coll_choice {
    coll_algo algo;
    hw_proto proto;
    double chunks; /* coll_chunks */
    double est_s;
} coll_choice;

typedef struct coll_target {
    hw_topo *topo;                 /* borrowed; its route cache fills */
    const hw_protocols *protocols; /* borrowed */
    const coll_group *group;
    const int32_t *gpu;            /* GPU of each member */
    int switch_dev;                /* NVSwitch of an NVLS-capable group, else -1 */
    double *scratch;               /* optional: hw_topo_link_count zeroed doubles that the
                                      estimate may use and leaves zeroed (a caller that
                                      selects often spares a large calloc per estimate) */
    const hw_route **pair_routes;  /* optional: the group's member-pair route table
                                      (coll_exec.pair_routes), filled as used */
    signed char ll128;             /* coll_ll128_paths of the group if known (1 yes, -1 no;
                                      a caller that selects often keeps it per group), 0:
                                      coll_select works it out */
} coll_target;

/* The estimated time of schedule `s` run with exec settings `x` (protocol, NVLS). */
double coll_estimate(const coll_target *t, const coll_exec *x, const coll_schedule *s);

/* coll_estimate of n schedules run at once, round r of each together: the loads of every
 * schedule's round r add up on shared links. Uses t[0].scratch. */
double coll_estimate_joint(size_t n, const coll_target *t, const coll_exec *x,
                           const coll_schedule *const *s);

/* The link traffic behind coll_estimate: adds to bytes[l] the wire bytes schedule `s` puts
 * on link l and to busy_s[l] the time l carries traffic, both times `scale` (the number of
 * runs). In the estimate's model a transfer takes the longest load / bandwidth among the
 * links of its route, and a link is busy in a round for its longest transfer. bytes, busy_s
 * and tmp have hw_topo_link_count entries; tmp is zeroed scratch, left zeroed. */
void coll_estimate_links(const coll_target *t, const coll_exec *x, const coll_schedule *s,
                         double scale, double *bytes, double *busy_s, double *tmp);

/* Routes every candidate algorithm of `op` on t's group would use, computed destination by
 * destination (hw_topo_route_many) before the estimates look them up one by one: for a
 * group spread over a large fabric, a few searches instead of one per pair. Changes no
 * result. */
void coll_prefetch_routes(const coll_target *t, coll_op op, double bytes, int root);

/* Pipelining chunks for `bytes` under protocol `p`: bytes / chunk_bytes within 1..64, not
 * rounded (coll_pieces: the pieces NCCL's fixed slices make, the last the remainder; past 64
 * the pieces grow instead). */
double coll_chunks(const hw_protocols *prot, hw_proto p, double bytes);

/* Whether NCCL's tuner considers algorithm `a` for `op` on group `g` (NCCL 2.30
 * ncclTopoTuneModel's per-function filters and ncclPatEnable; enqueue.cc's
 * updateCollCostTable): all_reduce ring, tree, NVLS (the caller's switch decides whether NVLS
 * is there); all_gather and reduce_scatter ring, and PAT when every member is on a node of its
 * own, here the halving-doubling schedule (Simple only); broadcast, reduce, send_recv and
 * ring_shift ring; all_to_all NCCL's grouped sends to every peer at once, `direct`.
 * Halving-doubling for itself, pairwise and hierarchical are stepsim's, never NCCL's. */
bool coll_nccl_algo(const coll_group *g, coll_op op, coll_algo a);

/* Whether every member of `g` is on a node of its own (true when nodes are not known). */
bool coll_one_per_node(const coll_group *g);

/* Whether NCCL enables LL128 by default on t's group (NCCL 2.30 ncclTopoTuneModel: the
 * intra-node path is NVLink, typeIntra <= PATH_NVB, and the inter-node one reaches the NIC
 * through PCIe switches only, typeInter <= PATH_PXB): members of a node are joined by
 * all-NVLink routes, and the routes between consecutive nodes' first members touch no CPU
 * socket. PCIe-only machines (and any host-staged copy) have no LL128. */
bool coll_ll128_paths(const coll_target *t);

/* Chooses for `op` on `bytes` (root for rooted operations). `algo` >= 0 fixes the
 * algorithm (any of stepsim's), `proto` >= 0 the protocol; otherwise only NCCL's candidates
 * (coll_nccl_algo) and, unless `proto` is fixed, LL128 only where coll_ll128_paths. On success fills `out` and, if `sched` is not NULL,
 * builds the chosen schedule into it. Returns 0, or SIM_ENOTSUP when the fixed algorithm
 * does not implement `op` on this group. */
int coll_select(const coll_target *t, coll_op op, double bytes, int root, int algo, int proto,
                coll_choice *out, coll_schedule *sched);

#endif
