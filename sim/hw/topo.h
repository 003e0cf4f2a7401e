/* The topology graph: devices and directed links built from a hw_topology_spec (parametric
 * or explicit form), and routes between devices.
 *
 * Links carry one direction each, except half-duplex links (the DRAM channel between a CPU
 * socket and its host memory), whose one capacity is shared by both directions: a copy
 * staged in host memory writes and then reads it, so its route crosses that link twice.
 *
 * Routing (docs/topologies.md):
 * - GPU to GPU traffic takes NVLink when an all-NVLink path exists (NCCL's preference);
 * - otherwise the shortest path in hops through devices that forward traffic (switches,
 *   CPU sockets, NICs; never through another GPU or a host memory);
 * - a GPU with p2p: false stages its traffic in host memory (device to host, then host to
 *   device), as stock drivers do on consumer GPUs; each chunk of such a copy waits for a
 *   hand-off (hw_gpu_spec's staging latency and chunk), the first as route latency;
 * - among equal-length paths the next hop is chosen by a hash of (source, destination,
 *   hop), a deterministic ECMP; the NIC a GPU is paired with wins over other NICs.
 * Routes are cached per (source, destination). */
#ifndef SIM_HW_TOPO_H
#define SIM_HW_TOPO_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "hw/spec.h"

typedef struct hw_device {
    char name[48];
    hw_dev_kind kind;
    int32_t node;
    int32_t gpu;       /* GPU index for kind gpu, else -1 */
    int32_t nic_gpu;   /* NIC: the GPU it is paired with (rail affinity), else -1 */
    int32_t staging;   /* GPU with p2p false: the host memory device it stages in; else -1 */
    bool p2p;
} hw_device;

typedef struct hw_link {
    int32_t src, dst;  /* devices */
    double bw_Bps;
    sim_time latency_ps;
    hw_link_class cls;
    bool half_duplex;  /* one capacity for both directions */
} hw_link;

#define HW_ROUTE_MAX 48
typedef struct hw_route {
    int n;
    int32_t links[HW_ROUTE_MAX]; /* in order; a link may appear twice (staged copies) */
    sim_time latency_ps;         /* sum of the link latencies, plus stage_ps on a staged
                                    route (what a one-chunk copy waits) */
    sim_time stage_ps;           /* staged route: the hand-off of each chunk (0 when not
                                    staged); see hw_route_staging_ps */
    int64_t stage_chunk;         /* staged route: bytes per hand-off (0: one per copy) */
    uint8_t narrow_cls;          /* hw_link_class of its lowest-bandwidth link (the first
                                    of equal ones); set by hw_topo_route */
} hw_route;

/* The hand-offs a copy of `bytes` pays on route `r`: ceil(bytes / stage_chunk) x stage_ps
 * (at least one; one per copy when stage_chunk is 0), 0 on a route that is not staged. The
 * first of them is also counted in r->latency_ps. They are not latency a pipeline hides:
 * each chunk's second copy waits for its first, however the copies are sliced. */
sim_time hw_route_staging_ps(const hw_route *r, double bytes);

typedef struct hw_topo hw_topo;

/* Builds the graph for `spec`. Fails with SIM_EINVAL and `diag` (file "topology", no
 * position) when a GPU cannot reach another one, a p2p: false GPU has no host memory to
 * stage in, or a route would exceed HW_ROUTE_MAX links. Caller owns *out. */
int hw_topo_create(const hw_topology_spec *spec, hw_topo **out, sim_diag *diag);
void hw_topo_destroy(hw_topo *t);

int hw_topo_device_count(const hw_topo *t);
int hw_topo_link_count(const hw_topo *t);
int hw_topo_gpu_count(const hw_topo *t);
int hw_topo_node_count(const hw_topo *t);
const hw_device *hw_topo_device(const hw_topo *t, int i);
const hw_link *hw_topo_link(const hw_topo *t, int i);
int hw_topo_gpu_device(const hw_topo *t, int gpu);
/* Device index by name, or -1. */
int hw_topo_find(const hw_topo *t, const char *name);

/* The route between two devices (cached; the pointer stays valid until the topology is
 * destroyed). Asserts a route exists (hw_topo_create has checked every GPU pair it uses). */
const hw_route *hw_topo_route(hw_topo *t, int src_dev, int dst_dev);

/* The route of a point-to-point transfer (NCCL's ncclSend/ncclRecv: all_to_all, send_recv,
 * ring_shift) between two devices. With PXN on (`fabric.pxn`, NCCL's default since 2.12:
 * NCCL_P2P_PXN_LEVEL=2) a transfer between GPUs of two nodes first crosses NVLink to the
 * sender's node-mate with the receiver's index (the one paired with the NIC of that index's
 * share) and leaves through that GPU's NIC, so it stays on the receiver's rail; otherwise,
 * and where PXN does not apply, the ordinary route (hw_topo_route). Cached likewise. */
const hw_route *hw_topo_route_p2p(hw_topo *t, int src_dev, int dst_dev);
/* Where the network part of that route starts: the PXN proxy GPU's device, or src_dev (its
 * route from there is hw_topo_route's: hw_topo_route_many can prepare it). */
int hw_topo_p2p_source(hw_topo *t, int src_dev, int dst_dev);

/* Computes and caches the routes of `n` (src[i], dst[i]) device pairs destination by
 * destination, so that one search towards a destination serves all its sources. The routes
 * are those hw_topo_route gives; only the work differs. */
void hw_topo_route_many(hw_topo *t, size_t n, const int32_t *src, const int32_t *dst);
const hw_route *hw_topo_route_gpus(hw_topo *t, int src_gpu, int dst_gpu);

/* Per-direction bandwidth a lone flow gets on the route (its narrowest link, halved on a
 * half-duplex link crossed twice). */
double hw_topo_route_bw_Bps(const hw_topo *t, const hw_route *r);

/* Whether devices of kind `k` relay traffic (switches, CPUs, NICs); GPUs and memories do not. */
bool hw_dev_kind_forwards(hw_dev_kind k);

/* Bisection bandwidth: the maximum flow from the first half of the GPUs (by index) to the
 * second half, per direction (Dinic's algorithm on link capacities; bisection.c). */
double hw_topo_bisection_Bps(const hw_topo *t);

/* The NVMe drive (a device) GPU `gpu`'s offload reads and writes: one of its node's drives
 * that reach its host memory, those on its socket first; -1 when none does (node.storage,
 * docs/topologies.md). */
int hw_topo_storage(hw_topo *t, int gpu);

/* The host memory GPU `gpu` stages copies in (its staging memory, or the nearest one), -1 if
 * none is reachable; and that memory's DRAM bandwidth (its link to the CPU). */
int hw_topo_host_memory(hw_topo *t, int gpu);
double hw_topo_memory_bw_Bps(const hw_topo *t, int mem_dev);

/* The NVSwitch every GPU of `gpus` is directly linked to, or -1 (for NVLink SHARP). */
int hw_topo_common_nvswitch(const hw_topo *t, const int32_t *gpus, int n);

/* Routes computed so far (statistics). */
uint64_t hw_topo_routes_computed(const hw_topo *t);

#endif
