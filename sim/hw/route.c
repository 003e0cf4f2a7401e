/* Routes through the topology graph: breadth-first searches, tie-breaks, the route cache and
 * NCCL's PXN routes for point-to-point traffic (see topo.h; rules in docs/topologies.md). */
#include "core/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hw/topo-internal.h"

#define ROUTE_CHUNK 1024

/* Cache keys of point-to-point routes (hw_topo_route_p2p): devices are < 2^31, so an
 * ordinary (src, dst) key never has this bit. */
#define P2P_KEY (UINT64_C(1) << 63)

/* ---- routing ------------------------------------------------------------------------ */

/* Breadth-first search backwards from `dst` until `src` is labelled, through devices that
 * forward traffic, over links of class `only` (or any class when only < 0). On return
 * dist[] holds exact hop counts to dst for every device closer than src (and for every
 * device labelled at all). The search is kept: a following call for the same destination
 * and class returns at once when its source is labelled already, or resumes the queue where
 * it stopped. BFS labels are exact distances however far the search has gone, so routes are
 * the same as from a fresh search; a collective's members are the destinations of several
 * routes each (tree and halving-doubling partners), and the route cache asks for them
 * destination by destination (hw_topo_route_many). */
static bool bfs_to(hw_topo *t, int src, int dst, int only)
{
    if (t->bfs_live && t->bfs_dst == dst && t->bfs_only == only) {
        if (t->stamp[src] == t->cur)
            return true;
    } else {
        if (++t->cur == 0) {
            memset(t->stamp, 0, t->n_dev * sizeof *t->stamp);
            t->cur = 1;
        }
        t->bfs_head = t->bfs_tail = 0;
        t->stamp[dst] = t->cur;
        t->dist[dst] = 0;
        t->queue[t->bfs_tail++] = dst;
        t->bfs_live = true;
        t->bfs_dst = dst;
        t->bfs_only = only;
    }
    size_t head = t->bfs_head, tail = t->bfs_tail;
    bool found = false;
    while (head < tail && !found) {
        int u = t->queue[head++];
        if (u != dst && !t->fwd[u])
            continue;
        /* u's neighbours all get labelled before returning, so the queue can resume */
        for (int32_t k = t->radj_first[u]; k < t->radj_first[u + 1]; k++) {
            if (only >= 0 && (int)t->radj_cls[k] != only)
                continue;
            int v = t->radj_from[k];
            if (t->stamp[v] == t->cur)
                continue;
            t->stamp[v] = t->cur;
            t->dist[v] = t->dist[u] + 1;
            found |= v == src;
            t->queue[tail++] = v;
        }
    }
    t->bfs_head = head;
    t->bfs_tail = tail;
    return found;
}

/* MurmurHash3's fmix64 finalizer: spreads a key over 64 bits (route tie-breaks, cache). */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= SIM_FMIX64_C1;
    x ^= x >> 33;
    x *= SIM_FMIX64_C2;
    x ^= x >> 33;
    return x;
}

/* Appends the links of a shortest path src -> dst (after bfs_to) to `r`. `affine` is the GPU
 * whose paired NIC wins among equal-cost next hops (-1 for none). */
static bool walk(hw_topo *t, int src, int dst, int only, int affine_a, int affine_b,
                 hw_route *r)
{
    int u = src;
    for (int hop = 0; u != dst; hop++) {
        int32_t cand[64];
        int nc = 0, pick = -1;
        for (int32_t k = t->adj_first[u]; k < t->adj_first[u + 1]; k++) {
            int32_t li = t->adj[k];
            const hw_link *l = &t->link[li];
            if (only >= 0 && (int)l->cls != only)
                continue;
            int v = other_end(l, u);
            if (t->stamp[v] != t->cur || t->dist[v] != t->dist[u] - 1)
                continue;
            if (v != dst && !hw_dev_kind_forwards(t->dev[v].kind))
                continue;
            if (t->dev[v].kind == HW_DEV_NIC && t->dev[v].nic_gpu >= 0 &&
                (t->dev[v].nic_gpu == affine_a || t->dev[v].nic_gpu == affine_b) && pick < 0)
                pick = nc;
            if (nc < (int)SIM_ARRAY_LEN(cand))
                cand[nc++] = li;
        }
        SIM_ASSERT(nc > 0, "no next hop from %s towards %s", t->dev[u].name, t->dev[dst].name);
        if (pick < 0)
            pick = (int)(mix(((uint64_t)src << 40) ^ ((uint64_t)dst << 16) ^ (uint64_t)hop) %
                         (uint64_t)nc);
        if (r->n >= HW_ROUTE_MAX)
            return false;
        r->links[r->n++] = cand[pick];
        r->latency_ps += t->link[cand[pick]].latency_ps;
        u = other_end(&t->link[cand[pick]], u);
    }
    return true;
}

static bool path(hw_topo *t, int src, int dst, int only, int aff_a, int aff_b, hw_route *r)
{
    if (src == dst)
        return true;
    if (!bfs_to(t, src, dst, only))
        return false;
    return walk(t, src, dst, only, aff_a, aff_b, r);
}

/* Computes a route; false when none exists (or it is too long). */
bool topo__compute_route(hw_topo *t, int s, int d, hw_route *r)
{
    *r = (hw_route){0};
    if (s == d)
        return true;
    const hw_device *ds = &t->dev[s], *dd = &t->dev[d];
    int ga = ds->kind == HW_DEV_GPU ? ds->gpu : -1, gb = dd->kind == HW_DEV_GPU ? dd->gpu : -1;
    if (ga >= 0 && gb >= 0 && t->nvl_comp[s] == t->nvl_comp[d] &&
        path(t, s, d, HW_LINK_NVLINK, -1, -1, r))
        return true;
    *r = (hw_route){0};
    int via[2], nv = 0;
    if (ga >= 0 && !ds->p2p && ds->staging >= 0)
        via[nv++] = ds->staging;
    if (gb >= 0 && !dd->p2p && dd->staging >= 0 && (nv == 0 || via[0] != dd->staging))
        via[nv++] = dd->staging;
    int from = s;
    for (int i = 0; i <= nv; i++) {
        int to = i < nv ? via[i] : d;
        if (!path(t, from, to, -1, ga, gb, r))
            return false;
        from = to;
    }
    /* a copy staged in host memory: each chunk waits for one hand-off from the source's copy
     * engine to the destination's (also when the route writes and reads two sockets'
     * memories: one copy engine writes, one reads); the first chunk's is part of the
     * route's latency, a copy's whole count is hw_route_staging_ps */
    if (nv > 0 && ga >= 0 && gb >= 0) { /* two GPUs of a mixed cluster: the slower hand-off,
                                           the smaller chunk */
        int64_t ca = t->stage_chunk[ds->node], cb = t->stage_chunk[dd->node];
        r->stage_ps = SIM_MAX(t->stage_ps[ds->node], t->stage_ps[dd->node]);
        r->stage_chunk = ca > 0 && cb > 0 ? SIM_MIN(ca, cb) : SIM_MAX(ca, cb);
        r->latency_ps += r->stage_ps;
    }
    return true;
}

sim_time hw_route_staging_ps(const hw_route *r, double bytes)
{
    if (r->stage_ps == 0)
        return 0;
    if (r->stage_chunk <= 0 || bytes <= (double)r->stage_chunk)
        return r->stage_ps;
    return (sim_time)ceil(bytes / (double)r->stage_chunk) * r->stage_ps;
}

/* The cached route under `key`, or NULL. */
static hw_route *cache_get(const hw_topo *t, uint64_t key)
{
    if (t->cache_cap == 0)
        return NULL;
    size_t h = mix(key) & (t->cache_cap - 1);
    while (t->vals[h]) {
        if (t->keys[h] == key)
            return t->vals[h];
        h = (h + 1) & (t->cache_cap - 1);
    }
    return NULL;
}

/* Caches `r` under `key` (absent from the cache). */
static void cache_put(hw_topo *t, uint64_t key, hw_route *r)
{
    if (2 * (t->cache_n + 1) > t->cache_cap) {
        size_t cap = t->cache_cap ? 2 * t->cache_cap : 1024;
        uint64_t *keys = sim_calloc(cap, sizeof *keys);
        hw_route **vals = sim_calloc(cap, sizeof *vals);
        for (size_t i = 0; i < t->cache_cap; i++)
            if (t->vals[i]) {
                size_t h = mix(t->keys[i]) & (cap - 1);
                while (vals[h])
                    h = (h + 1) & (cap - 1);
                keys[h] = t->keys[i];
                vals[h] = t->vals[i];
            }
        sim_free(t->keys);
        sim_free(t->vals);
        t->keys = keys;
        t->vals = vals;
        t->cache_cap = cap;
    }
    size_t h = mix(key) & (t->cache_cap - 1);
    while (t->vals[h])
        h = (h + 1) & (t->cache_cap - 1);
    t->keys[h] = key;
    t->vals[h] = r;
    t->cache_n++;
}

/* A route slot that lives as long as the topology. */
static hw_route *route_alloc(hw_topo *t)
{
    if (t->n_chunks == 0 || t->chunk_used == ROUTE_CHUNK) {
        SIM_GROW(t->chunks, t->cap_chunks, t->n_chunks + 1);
        t->chunks[t->n_chunks++] = sim_calloc(ROUTE_CHUNK, sizeof(hw_route));
        t->chunk_used = 0;
    }
    return &t->chunks[t->n_chunks - 1][t->chunk_used++];
}

/* Sets r->narrow_cls: the class of its lowest-bandwidth link (the first of equal ones). */
static void route_finish(hw_topo *t, hw_route *r)
{
    double bw = -1;
    r->narrow_cls = HW_LINK_NVLINK;
    for (int i = 0; i < r->n; i++) {
        const hw_link *l = &t->link[r->links[i]];
        if (bw < 0 || l->bw_Bps < bw) {
            bw = l->bw_Bps;
            r->narrow_cls = (uint8_t)l->cls;
        }
    }
    t->computed++;
}

const hw_route *hw_topo_route(hw_topo *t, int src_dev, int dst_dev)
{
    SIM_ASSERT(src_dev >= 0 && (size_t)src_dev < t->n_dev && dst_dev >= 0 &&
               (size_t)dst_dev < t->n_dev, "route %d -> %d", src_dev, dst_dev);
    uint64_t key = ((uint64_t)(uint32_t)src_dev << 32) | (uint32_t)dst_dev;
    hw_route *r = cache_get(t, key);
    if (r)
        return r;
    r = route_alloc(t);
    bool ok = topo__compute_route(t, src_dev, dst_dev, r);
    SIM_ASSERT(ok, "no route from %s to %s", t->dev[src_dev].name, t->dev[dst_dev].name);
    route_finish(t, r);
    cache_put(t, key, r);
    return r;
}

/* NCCL's choice for a point-to-point transfer between GPUs of two nodes (ncclTopoGetNetDev,
 * NCCL_P2P_PXN_LEVEL 2, the default since 2.12): the sender's node sends through the NIC of
 * the local GPU with the receiver's index (the NIC of that GPU's share when the node has
 * fewer NICs than GPUs), from that NIC's GPU, which the data reaches over NVLink, provided
 * that GPU reaches the NIC through PCIe switches without crossing a CPU (PATH_PXB). Returns
 * that GPU's device, or src when the ordinary route applies (same node, one NVLink domain, no
 * NIC, the sender itself, no NVLink path, PXN off). */
int hw_topo_p2p_source(hw_topo *t, int s, int d)
{
    const hw_device *ds = &t->dev[s], *dd = &t->dev[d];
    if (!t->pxn || ds->kind != HW_DEV_GPU || dd->kind != HW_DEV_GPU || ds->node == dd->node ||
        t->nvl_comp[s] == t->nvl_comp[d])
        return s;
    int sg = ds->gpu, dg = dd->gpu;
    int cand = sg - t->gpu_local[sg] + t->gpu_local[dg];
    if (cand < 0 || cand >= t->n_gpus || t->dev[t->gpu_dev[cand]].node != ds->node ||
        t->gpu_local[cand] != t->gpu_local[dg] || t->gpu_nic[cand] < 0)
        return s;
    int nic = t->gpu_nic[cand];
    int p = t->gpu_dev[t->dev[nic].nic_gpu];
    if (p == s || t->nvl_comp[p] != t->nvl_comp[s])
        return s;
    const hw_route *pn = hw_topo_route(t, p, nic);
    for (int i = 0; i < pn->n; i++)
        if (t->dev[t->link[pn->links[i]].dst].kind == HW_DEV_CPU)
            return s;
    return p;
}

const hw_route *hw_topo_route_p2p(hw_topo *t, int src_dev, int dst_dev)
{
    if (!t->pxn)
        return hw_topo_route(t, src_dev, dst_dev);
    SIM_ASSERT(src_dev >= 0 && (size_t)src_dev < t->n_dev && dst_dev >= 0 &&
               (size_t)dst_dev < t->n_dev, "route %d -> %d", src_dev, dst_dev);
    uint64_t key = P2P_KEY | ((uint64_t)(uint32_t)src_dev << 32) | (uint32_t)dst_dev;
    hw_route *r = cache_get(t, key);
    if (r)
        return r;
    int p = hw_topo_p2p_source(t, src_dev, dst_dev);
    const hw_route *net = hw_topo_route(t, p, dst_dev);
    hw_route nv = {0};
    if (p == src_dev) {
        r = (hw_route *)net; /* the ordinary route, shared */
    } else if (path(t, src_dev, p, HW_LINK_NVLINK, -1, -1, &nv) &&
               nv.n + net->n <= HW_ROUTE_MAX) {
        /* the NVLink hop to the proxy, then the proxy's own route (no staging: NVLink) */
        r = route_alloc(t);
        *r = nv;
        for (int i = 0; i < net->n; i++)
            r->links[r->n++] = net->links[i];
        r->latency_ps += net->latency_ps;
        route_finish(t, r);
    } else {
        r = (hw_route *)hw_topo_route(t, src_dev, dst_dev);
    }
    cache_put(t, key, r);
    return r;
}

typedef struct dev_pair {
    int32_t dst, src;
} dev_pair;

static int pair_cmp(const void *pa, const void *pb)
{
    const dev_pair *a = pa, *b = pb;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    return (a->src > b->src) - (a->src < b->src);
}

void hw_topo_route_many(hw_topo *t, size_t n, const int32_t *src, const int32_t *dst)
{
    dev_pair *p = sim_calloc(n + 1, sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (dev_pair){dst[i], src[i]};
    qsort(p, n, sizeof *p, pair_cmp);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || p[i].dst != p[i - 1].dst || p[i].src != p[i - 1].src)
            (void)hw_topo_route(t, p[i].src, p[i].dst);
    sim_free(p);
}

const hw_route *hw_topo_route_gpus(hw_topo *t, int src_gpu, int dst_gpu)
{
    SIM_ASSERT(src_gpu >= 0 && src_gpu < t->n_gpus && dst_gpu >= 0 && dst_gpu < t->n_gpus,
               "GPU route %d -> %d of %d", src_gpu, dst_gpu, t->n_gpus);
    return hw_topo_route(t, t->gpu_dev[src_gpu], t->gpu_dev[dst_gpu]);
}

double hw_topo_route_bw_Bps(const hw_topo *t, const hw_route *r)
{
    double bw = INFINITY;
    for (int i = 0; i < r->n; i++) {
        int times = 0;
        for (int j = 0; j < r->n; j++)
            times += r->links[j] == r->links[i];
        bw = fmin(bw, t->link[r->links[i]].bw_Bps / times);
    }
    return bw;
}

/* PXN's tables (hw_topo_p2p_source): each GPU's index within its node and the NIC of its share, as
 * the parametric builder attaches them. Explicit topologies pair no NIC with a GPU: PXN
 * stays off there. */
void topo__label_pxn(hw_topo *t, const hw_topology_spec *spec)
{
    t->pxn = spec->n_devices == 0 && spec->fabric.pxn && t->n_gpus > 0;
    if (!t->pxn)
        return;
    t->gpu_local = sim_calloc((size_t)t->n_gpus, sizeof *t->gpu_local);
    t->gpu_nic = sim_calloc((size_t)t->n_gpus, sizeof *t->gpu_nic);
    int32_t *paired = sim_calloc((size_t)t->n_gpus, sizeof *paired);
    for (int g = 0; g < t->n_gpus; g++)
        paired[g] = t->gpu_nic[g] = -1;
    for (size_t d = 0; d < t->n_dev; d++)
        if (t->dev[d].kind == HW_DEV_NIC && t->dev[d].nic_gpu >= 0 &&
            paired[t->dev[d].nic_gpu] < 0)
            paired[t->dev[d].nic_gpu] = (int32_t)d;
    int first = 0;
    for (int n = 0; n < spec->nodes; n++) {
        const hw_node_spec *ns = hw_topology_node_spec(spec, n);
        int G = ns->gpus_per_node, K = ns->nics.count;
        for (int i = 0; i < G && first + i < t->n_gpus; i++) {
            t->gpu_local[first + i] = i;
            if (K > 0)
                t->gpu_nic[first + i] = paired[first + (i * K / G) * G / K];
        }
        first += G;
    }
    sim_free(paired);
}
