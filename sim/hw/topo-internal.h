/* Internals of the topology graph (topo.c: builders, labels) shared with its routes
 * (route.c). Nothing outside sim/hw includes this. */
#ifndef SIM_HW_TOPO_INTERNAL_H
#define SIM_HW_TOPO_INTERNAL_H

#include "hw/topo.h"

struct hw_topo {
    hw_device *dev;
    size_t n_dev, cap_dev;
    hw_link *link;
    size_t n_link, cap_link;
    int32_t *adj_first, *adj;   /* links that leave a device */
    int32_t *radj_first, *radj; /* links that arrive at a device */
    /* what a search reads, packed: radj's other ends and classes, devices that forward */
    int32_t *radj_from;
    uint8_t *radj_cls, *fwd;
    int n_gpus, n_nodes;
    int32_t *gpu_dev;
    size_t cap_gpu;
    /* BFS scratch: dist[] valid where stamp[] == cur */
    int32_t *dist, *queue;
    uint32_t *stamp;
    uint32_t cur;
    /* the last search, kept to resume (bfs_to): destination, link class, queue window */
    bool bfs_live;
    int bfs_dst, bfs_only;
    size_t bfs_head, bfs_tail;
    int32_t *nvl_comp; /* per device: component over NVLink links (an NVLink path is
                          impossible between different ones) */
    bool staged;       /* every GPU's nearest host memory found (label_staging) */
    sim_time *stage_ps; /* per node: its GPU's staging hand-off per chunk (hw_gpu_spec) */
    int64_t *stage_chunk;
    /* route cache: open addressing on (src, dst) */
    uint64_t *keys;
    hw_route **vals;
    size_t cache_cap, cache_n;
    hw_route **chunks;
    size_t n_chunks, cap_chunks, chunk_used;
    uint64_t computed;
    int32_t *storage_of; /* per GPU: the NVMe drive its offload uses, or -1 (assign_storage) */
    /* PXN (topo__label_pxn): on when the spec asks for it and the topology is parametric */
    bool pxn;
    int32_t *gpu_local; /* per GPU: its index within its node */
    int32_t *gpu_nic;   /* per GPU: the NIC of its share (NIC k serves the node's GPUs
                           k·G/K .. (k+1)·G/K - 1), or -1 */
};

/* The end of link l that is not device u. */
static inline int other_end(const hw_link *l, int u)
{
    return l->src == u ? l->dst : l->src;
}

/* A shortest route from device s to device d into *r (NVLink first between GPUs of one NVLink
 * domain, ties broken as docs/topologies.md says); false when none exists within
 * HW_ROUTE_MAX links. Not cached. */
bool topo__compute_route(hw_topo *t, int s, int d, hw_route *r);
/* PXN's tables (hw_topo_route_p2p), once the devices are built. */
void topo__label_pxn(hw_topo *t, const hw_topology_spec *spec);

#endif
