/* The topology graph: its builders, validation and labels (see topo.h; rules and sources in
 * docs/topologies.md). Routes are in route.c, the bisection in bisection.c. */
#include "core/sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/topo-internal.h"


bool hw_dev_kind_forwards(hw_dev_kind k)
{
    return k == HW_DEV_NVSWITCH || k == HW_DEV_PCIE_SWITCH || k == HW_DEV_CPU ||
           k == HW_DEV_NIC || k == HW_DEV_SWITCH;
}

/* ---- construction ------------------------------------------------------------------ */

static int add_dev(hw_topo *t, hw_dev_kind kind, int node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int add_dev(hw_topo *t, hw_dev_kind kind, int node, const char *fmt, ...)
{
    SIM_GROW(t->dev, t->cap_dev, t->n_dev + 1);
    hw_device *d = &t->dev[t->n_dev];
    *d = (hw_device){.kind = kind, .node = node, .gpu = -1, .nic_gpu = -1, .staging = -1,
                     .p2p = true};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->name, sizeof d->name, fmt, ap);
    va_end(ap);
    if (kind == HW_DEV_GPU) {
        SIM_GROW(t->gpu_dev, t->cap_gpu, (size_t)t->n_gpus + 1);
        d->gpu = t->n_gpus;
        t->gpu_dev[t->n_gpus++] = (int32_t)t->n_dev;
    }
    if (node + 1 > t->n_nodes)
        t->n_nodes = node + 1;
    return (int)t->n_dev++;
}

/* A link in each direction, or one half-duplex link when either end is host memory. */
static void add_link(hw_topo *t, int a, int b, double bw, sim_time lat, hw_link_class cls,
                     bool both)
{
    SIM_ASSERT(a != b && bw > 0, "link %d -> %d of %g B/s", a, b, bw);
    bool half = both && (t->dev[a].kind == HW_DEV_HOST_MEMORY ||
                         t->dev[b].kind == HW_DEV_HOST_MEMORY);
    int n = both && !half ? 2 : 1;
    SIM_GROW(t->link, t->cap_link, t->n_link + (size_t)n);
    t->link[t->n_link++] = (hw_link){.src = a, .dst = b, .bw_Bps = bw, .latency_ps = lat,
                                     .cls = cls, .half_duplex = half};
    if (n == 2)
        t->link[t->n_link++] = (hw_link){.src = b, .dst = a, .bw_Bps = bw, .latency_ps = lat,
                                         .cls = cls};
}

/* Builds a logical tree over `n` children whose uplinks carry cap[i]: groups of `d` under a
 * parent until one switch is left (or `levels` levels exist, the last one joining all).
 * Above the first level the tree is non-blocking: a parent's uplink carries the sum of its
 * children's. This is a fat-tree with perfect ECMP collapsed into fat links. */
static void build_tree(hw_topo *t, int32_t *kids, double *cap, int n, int d, int levels,
                       int level, sim_time lat, const char *prefix)
{
    int32_t *parents = sim_calloc((size_t)n, sizeof *parents);
    double *pcap = sim_calloc((size_t)n, sizeof *pcap);
    while (n > 1) {
        bool last = levels > 0 && level + 1 >= levels; /* the parents are the top level */
        int group = last ? n : d;
        int np = (n + group - 1) / group;
        for (int p = 0; p < np; p++) {
            parents[p] = add_dev(t, HW_DEV_SWITCH, -1, "%s.l%d.sw%d", prefix, level + 1, p);
            pcap[p] = 0;
        }
        for (int i = 0; i < n; i++) {
            int p = i / group;
            add_link(t, kids[i], parents[p], cap[i], lat, HW_LINK_IB, true);
            pcap[p] += cap[i];
        }
        memcpy(kids, parents, (size_t)np * sizeof *kids);
        memcpy(cap, pcap, (size_t)np * sizeof *cap);
        n = np;
        level++;
    }
    sim_free(parents);
    sim_free(pcap);
}

/* The fabric over the nodes' NICs (nics[i] with its own bandwidth and latency to its switch;
 * rail-optimized needs the same count on every node, which the loader checks). */
static void build_fabric(hw_topo *t, const hw_topology_spec *s, const int32_t *nics,
                         const double *nic_bw, const sim_time *nic_lat, int n_nics)
{
    const int K = s->nics.count, N = s->nodes;
    const double over = s->fabric.oversubscription >= 1 ? s->fabric.oversubscription : 1;
    const int d = (s->fabric.radix >= 4 ? s->fabric.radix : 64) / 2;
    if (s->fabric.kind == HW_FABRIC_SINGLE_SWITCH) {
        int sw = add_dev(t, HW_DEV_SWITCH, -1, "fabric.sw0");
        for (int i = 0; i < n_nics; i++)
            add_link(t, nics[i], sw, nic_bw[i], nic_lat[i], HW_LINK_IB, true);
        return;
    }
    int32_t *leaves = sim_calloc((size_t)n_nics + 1, sizeof *leaves);
    double *cap = sim_calloc((size_t)n_nics + 1, sizeof *cap);
    int n_leaves = 0;
    if (s->fabric.kind == HW_FABRIC_RAIL_OPTIMIZED) {
        /* rail k of every group of d nodes shares one leaf */
        SIM_ASSERT(n_nics == N * K, "rail-optimized: %d NICs on %d nodes of %d", n_nics, N, K);
        int groups = (N + d - 1) / d;
        for (int k = 0; k < K; k++)
            for (int j = 0; j < groups; j++) {
                int leaf = add_dev(t, HW_DEV_SWITCH, -1, "rail%d.leaf%d", k, j);
                double sum = 0;
                for (int n = j * d; n < N && n < (j + 1) * d; n++) {
                    int i = n * K + k;
                    add_link(t, nics[i], leaf, nic_bw[i], nic_lat[i], HW_LINK_IB, true);
                    sum += nic_bw[i];
                }
                leaves[n_leaves] = leaf;
                cap[n_leaves++] = sum / over;
            }
    } else {
        /* fat-tree: NICs in node order, d per leaf */
        for (int j = 0; j * d < n_nics; j++) {
            int leaf = add_dev(t, HW_DEV_SWITCH, -1, "fabric.l1.sw%d", j);
            double sum = 0;
            for (int i = j * d; i < n_nics && i < (j + 1) * d; i++) {
                add_link(t, nics[i], leaf, nic_bw[i], nic_lat[i], HW_LINK_IB, true);
                sum += nic_bw[i];
            }
            leaves[n_leaves] = leaf;
            cap[n_leaves++] = sum / over;
        }
    }
    build_tree(t, leaves, cap, n_leaves, d, s->fabric.levels, 1, s->fabric.latency_ps,
               s->fabric.kind == HW_FABRIC_RAIL_OPTIMIZED ? "spine" : "fabric");
    sim_free(leaves);
    sim_free(cap);
}

/* One node of the parametric form (its parts `ns`): sockets and host memory, drives, PCIe
 * switches, GPUs (numbered from first_gpu), the NVLink/NVSwitch fabric, NICs (appended to
 * nics[*n_nics]). */
static void build_node(hw_topo *t, const hw_node_spec *ns, int n, int first_gpu,
                       int32_t *nics, int *n_nics)
{
    const int G = ns->gpus_per_node, K = ns->nics.count;
    const int S = ns->pcie.sockets >= 1 ? ns->pcie.sockets : 1, W = ns->pcie.switches;
    const sim_time pl = ns->pcie.latency_ps;
    double gpu_bw = hw_pcie_bw_Bps(ns->pcie.gen, ns->pcie.lanes);
    if (ns->intra.kind == HW_INTRA_PCIE && ns->intra.bw_Bps > 0)
        gpu_bw = ns->intra.bw_Bps;
    if (gpu_bw <= 0)
        gpu_bw = hw_pcie_bw_Bps(4, 16);
    double sw_bw = hw_pcie_bw_Bps(ns->pcie.gen ? ns->pcie.gen : 4,
                                  ns->pcie.switch_lanes ? ns->pcie.switch_lanes : 16);
    /* defaults for fields a hand-built spec may leave at 0 (the loader sets the same ones,
     * docs/topologies.md): 8-channel DDR4-3200 per socket, a 64 GB/s socket link */
    double mem_bw = ns->host.memory_bw_Bps > 0 ? ns->host.memory_bw_Bps
                                               : HW_HOST_MEMORY_BPS_DEFAULT;
    double sock_bw = ns->host.socket_link_bw_Bps > 0 ? ns->host.socket_link_bw_Bps
                                                     : HW_HOST_SOCKET_LINK_BPS_DEFAULT;
    int32_t cpu[64], mem[64], sw[256], gpu[1024];
    SIM_ASSERT(S <= 64 && W <= 256 && G <= 1024, "node too large: %d sockets %d switches %d "
               "GPUs", S, W, G);
    for (int k = 0; k < S; k++) {
        cpu[k] = add_dev(t, HW_DEV_CPU, n, "n%d.cpu%d", n, k);
        mem[k] = add_dev(t, HW_DEV_HOST_MEMORY, n, "n%d.mem%d", n, k);
        /* DRAM access latency ~0.1 us */
        add_link(t, cpu[k], mem[k], mem_bw, SIM_PS_PER_US / 10, HW_LINK_CPU, true);
        for (int j = 0; j < k; j++)
            add_link(t, cpu[j], cpu[k], sock_bw, ns->host.socket_link_latency_ps, HW_LINK_CPU,
                     true);
    }
    /* NVMe drives on the root complexes, reads and writes at their own rates */
    for (int d = 0; d < ns->storage.count; d++) {
        int drive = add_dev(t, HW_DEV_STORAGE, n, "n%d.nvme%d", n, d);
        add_link(t, drive, cpu[d % S], ns->storage.read_Bps, ns->storage.latency_ps,
                 HW_LINK_PCIE, false);
        add_link(t, cpu[d % S], drive, ns->storage.write_Bps, ns->storage.latency_ps,
                 HW_LINK_PCIE, false);
    }
    for (int w = 0; w < W; w++) {
        sw[w] = add_dev(t, HW_DEV_PCIE_SWITCH, n, "n%d.pcisw%d", n, w);
        add_link(t, sw[w], cpu[w * S / W], sw_bw, pl, HW_LINK_PCIE, true);
    }
    bool p2p = ns->intra.kind != HW_INTRA_PCIE || ns->intra.p2p;
    for (int i = 0; i < G; i++) {
        gpu[i] = add_dev(t, HW_DEV_GPU, n, "gpu%d", first_gpu + i);
        t->dev[gpu[i]].p2p = p2p;
        int socket = W ? (i * W / G) * S / W : i * S / G;
        t->dev[gpu[i]].staging = p2p ? -1 : mem[socket];
        int attach = W ? sw[i * W / G] : cpu[i * S / G];
        add_link(t, gpu[i], attach, gpu_bw, pl, HW_LINK_PCIE, true);
    }
    if (ns->intra.kind == HW_INTRA_NVSWITCH && G > 1) {
        int nvs = add_dev(t, HW_DEV_NVSWITCH, n, "n%d.nvswitch", n);
        for (int i = 0; i < G; i++)
            add_link(t, gpu[i], nvs, ns->intra.bw_Bps, ns->intra.latency_ps / 2,
                     HW_LINK_NVLINK, true);
    } else if (ns->intra.kind == HW_INTRA_NVLINK && G > 1) {
        if (ns->intra.shape == HW_NVLINK_RING && G > 2) {
            for (int i = 0; i < G; i++)
                add_link(t, gpu[i], gpu[(i + 1) % G], ns->intra.bw_Bps / 2,
                         ns->intra.latency_ps, HW_LINK_NVLINK, true);
        } else {
            for (int i = 0; i < G; i++)
                for (int j = i + 1; j < G; j++)
                    add_link(t, gpu[i], gpu[j], ns->intra.bw_Bps / (G - 1),
                             ns->intra.latency_ps, HW_LINK_NVLINK, true);
        }
    }
    for (int k = 0; k < K; k++) {
        int g = k * G / K; /* the first GPU of the NIC's share */
        int nic = add_dev(t, HW_DEV_NIC, n, "n%d.nic%d", n, k);
        t->dev[nic].nic_gpu = first_gpu + g;
        int attach = W ? sw[g * W / G] : cpu[g * S / G];
        add_link(t, nic, attach, hw_pcie_bw_Bps(ns->pcie.gen ? ns->pcie.gen : 4,
                                                ns->pcie.lanes ? ns->pcie.lanes : 16),
                 pl, HW_LINK_PCIE, true);
        nics[(*n_nics)++] = nic;
    }
}

static void build_parametric(hw_topo *t, const hw_topology_spec *s)
{
    int total_nics = 0;
    for (int n = 0; n < s->nodes; n++)
        total_nics += hw_topology_node_spec(s, n)->nics.count;
    int32_t *nics = sim_calloc((size_t)total_nics + 1, sizeof *nics);
    double *bw = sim_calloc((size_t)total_nics + 1, sizeof *bw);
    sim_time *lat = sim_calloc((size_t)total_nics + 1, sizeof *lat);
    int n_nics = 0, first_gpu = 0;
    for (int n = 0; n < s->nodes; n++) {
        const hw_node_spec *ns = hw_topology_node_spec(s, n);
        int before = n_nics;
        build_node(t, ns, n, first_gpu, nics, &n_nics);
        for (int i = before; i < n_nics; i++) {
            bw[i] = ns->nics.bw_Bps;
            lat[i] = ns->nics.latency_ps;
        }
        first_gpu += ns->gpus_per_node;
    }
    if (n_nics > 0 && s->fabric.kind != HW_FABRIC_NONE)
        build_fabric(t, s, nics, bw, lat, n_nics);
    sim_free(nics);
    sim_free(bw);
    sim_free(lat);
}

static void build_explicit(hw_topo *t, const hw_topology_spec *s)
{
    for (int i = 0; i < s->n_devices; i++) {
        const hw_dev_spec *d = &s->devices[i];
        int id = add_dev(t, d->kind, d->node, "%s", d->name);
        SIM_ASSERT(id == i, "device %d", i);
        t->dev[id].p2p = d->kind != HW_DEV_GPU || d->p2p;
    }
    for (int i = 0; i < s->n_links; i++) {
        const hw_link_spec *l = &s->links[i];
        add_link(t, l->src, l->dst, l->bw_Bps, l->latency_ps, l->cls, l->bidirectional);
    }
}

static void build_adjacency(hw_topo *t)
{
    size_t n = t->n_dev;
    t->adj_first = sim_calloc(n + 1, sizeof *t->adj_first);
    t->radj_first = sim_calloc(n + 1, sizeof *t->radj_first);
    for (size_t i = 0; i < t->n_link; i++) {
        const hw_link *l = &t->link[i];
        t->adj_first[l->src + 1]++;
        t->radj_first[l->dst + 1]++;
        if (l->half_duplex) {
            t->adj_first[l->dst + 1]++;
            t->radj_first[l->src + 1]++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        t->adj_first[i + 1] += t->adj_first[i];
        t->radj_first[i + 1] += t->radj_first[i];
    }
    t->adj = sim_calloc((size_t)t->adj_first[n] + 1, sizeof *t->adj);
    t->radj = sim_calloc((size_t)t->radj_first[n] + 1, sizeof *t->radj);
    int32_t *fa = sim_calloc(n + 1, sizeof *fa), *fr = sim_calloc(n + 1, sizeof *fr);
    memcpy(fa, t->adj_first, (n + 1) * sizeof *fa);
    memcpy(fr, t->radj_first, (n + 1) * sizeof *fr);
    /* in link order, so candidate lists are sorted by link id */
    for (size_t i = 0; i < t->n_link; i++) {
        const hw_link *l = &t->link[i];
        t->adj[fa[l->src]++] = (int32_t)i;
        t->radj[fr[l->dst]++] = (int32_t)i;
        if (l->half_duplex) {
            t->adj[fa[l->dst]++] = (int32_t)i;
            t->radj[fr[l->src]++] = (int32_t)i;
        }
    }
    sim_free(fa);
    sim_free(fr);
    size_t nr = (size_t)t->radj_first[n];
    t->radj_from = sim_calloc(nr + 1, sizeof *t->radj_from);
    t->radj_cls = sim_calloc(nr + 1, sizeof *t->radj_cls);
    t->fwd = sim_calloc(n + 1, sizeof *t->fwd);
    for (size_t u = 0; u < n; u++) {
        t->fwd[u] = hw_dev_kind_forwards(t->dev[u].kind);
        for (int32_t k = t->radj_first[u]; k < t->radj_first[u + 1]; k++) {
            const hw_link *l = &t->link[t->radj[k]];
            t->radj_from[k] = other_end(l, (int)u);
            t->radj_cls[k] = (uint8_t)l->cls;
        }
    }
    t->dist = sim_calloc(n, sizeof *t->dist);
    t->queue = sim_calloc(n, sizeof *t->queue);
    t->stamp = sim_calloc(n, sizeof *t->stamp);
    /* NVLink components by union-find (path halving), ignoring which devices forward: a
     * superset of what an NVLink-only search can reach */
    t->nvl_comp = sim_calloc(n + 1, sizeof *t->nvl_comp);
    for (size_t i = 0; i < n; i++)
        t->nvl_comp[i] = (int32_t)i;
    for (size_t i = 0; i < t->n_link; i++) {
        if (t->link[i].cls != HW_LINK_NVLINK)
            continue;
        int32_t a = t->link[i].src, b = t->link[i].dst;
        while (t->nvl_comp[a] != a)
            a = t->nvl_comp[a] = t->nvl_comp[t->nvl_comp[a]];
        while (t->nvl_comp[b] != b)
            b = t->nvl_comp[b] = t->nvl_comp[t->nvl_comp[b]];
        if (a != b)
            t->nvl_comp[a > b ? a : b] = a < b ? a : b;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t r = (int32_t)i;
        while (t->nvl_comp[r] != r)
            r = t->nvl_comp[r];
        t->nvl_comp[i] = r;
    }
    t->bfs_live = false;
}

/* ---- validation and creation ---------------------------------------------------------- */

/* The nearest host memory of every GPU that has none yet (lowest device index on ties; -1
 * when none is reachable), by one breadth-first search from all host memories at once over
 * the links into each device, expanding only devices that forward, as bfs_to does. The
 * queue holds each distance's devices sorted by the memory that reached them first (the
 * memories themselves in index order), so a device's first discoverer carries the lowest
 * memory index among those at the smallest distance: what a search from each memory in turn,
 * keeping the first strictly nearer one, finds, in one pass over the graph instead of one
 * per memory and GPU (2,048 GPUs of 256 nodes took 16 s). */
static void label_staging(hw_topo *t)
{
    size_t n = t->n_dev, head = 0, tail = 0;
    int32_t *from = sim_calloc(n + 1, sizeof *from), *queue = sim_calloc(n + 1, sizeof *queue);
    for (size_t d = 0; d < n; d++) {
        from[d] = -1;
        if (t->dev[d].kind == HW_DEV_HOST_MEMORY) {
            from[d] = (int32_t)d;
            queue[tail++] = (int32_t)d;
        }
    }
    while (head < tail) {
        int u = queue[head++];
        if (t->dev[u].kind != HW_DEV_HOST_MEMORY && !t->fwd[u])
            continue;
        for (int32_t k = t->radj_first[u]; k < t->radj_first[u + 1]; k++) {
            int v = t->radj_from[k];
            if (from[v] >= 0)
                continue;
            from[v] = from[u];
            queue[tail++] = v;
        }
    }
    for (int g = 0; g < t->n_gpus; g++)
        if (t->dev[t->gpu_dev[g]].staging < 0)
            t->dev[t->gpu_dev[g]].staging = from[t->gpu_dev[g]];
    t->staged = true;
    sim_free(from);
    sim_free(queue);
}

/* Each GPU's NVMe drive, found once (on first use): among its node's drives that reach its
 * host memory both ways, those fewest links away (the drives on its socket), the j-th GPU of
 * the node taking drive j mod their count; -1 when none reaches it. Drives are bucketed by
 * node and their distances cached per host memory, so this is linear in the cluster. */
static void assign_storage(hw_topo *t)
{
    t->storage_of = sim_calloc((size_t)t->n_gpus + 1, sizeof *t->storage_of);
    int nodes = SIM_MAX(t->n_nodes, 1);
    int32_t *first = sim_calloc((size_t)nodes + 1, sizeof *first);
    int32_t *drive = sim_calloc(t->n_dev + 1, sizeof *drive);
    for (size_t d = 0; d < t->n_dev; d++)
        if (t->dev[d].kind == HW_DEV_STORAGE && t->dev[d].node >= 0)
            first[t->dev[d].node + 1]++;
    for (int n = 0; n < nodes; n++)
        first[n + 1] += first[n];
    int32_t *fill = sim_calloc((size_t)nodes + 1, sizeof *fill);
    memcpy(fill, first, (size_t)nodes * sizeof *fill);
    for (size_t d = 0; d < t->n_dev; d++)
        if (t->dev[d].kind == HW_DEV_STORAGE && t->dev[d].node >= 0)
            drive[fill[t->dev[d].node]++] = (int32_t)d;
    /* per host memory: its node's drives in reach, nearest first (computed once) */
    int32_t **near = sim_calloc(t->n_dev + 1, sizeof *near);
    int32_t *n_near = sim_calloc(t->n_dev + 1, sizeof *n_near);
    int32_t *local = sim_calloc((size_t)nodes + 1, sizeof *local);
    for (int g = 0; g < t->n_gpus; g++) {
        int node = t->dev[t->gpu_dev[g]].node, j = local[node]++;
        int mem = hw_topo_host_memory(t, g);
        t->storage_of[g] = -1;
        if (mem < 0)
            continue;
        if (!near[mem]) {
            near[mem] = sim_calloc((size_t)(first[node + 1] - first[node]) + 1, sizeof **near);
            int best = INT32_MAX;
            for (int k = first[node]; k < first[node + 1]; k++) {
                hw_route in, out;
                if (!topo__compute_route(t, drive[k], mem, &in) || !topo__compute_route(t, mem, drive[k], &out))
                    continue;
                int hops = in.n + out.n;
                if (hops < best) {
                    best = hops;
                    n_near[mem] = 0;
                }
                if (hops == best)
                    near[mem][n_near[mem]++] = drive[k];
            }
        }
        if (n_near[mem] > 0)
            t->storage_of[g] = near[mem][j % n_near[mem]];
    }
    for (size_t d = 0; d < t->n_dev; d++)
        sim_free(near[d]);
    sim_free(near);
    sim_free(n_near);
    sim_free(local);
    sim_free(fill);
    sim_free(drive);
    sim_free(first);
}

int hw_topo_create(const hw_topology_spec *spec, hw_topo **out, sim_diag *diag)
{
    hw_topo *t = sim_calloc(1, sizeof *t);
    if (spec->n_devices > 0)
        build_explicit(t, spec);
    else
        build_parametric(t, spec);
    int nodes = 1;
    for (size_t d = 0; d < t->n_dev; d++)
        nodes = SIM_MAX(nodes, t->dev[d].node + 1);
    t->stage_ps = sim_calloc((size_t)nodes, sizeof *t->stage_ps);
    t->stage_chunk = sim_calloc((size_t)nodes, sizeof *t->stage_chunk);
    for (int n = 0; n < nodes; n++) {
        const hw_gpu_spec *g = spec->n_devices > 0 ? &spec->gpu : hw_topology_node_gpu(spec, n);
        t->stage_ps[n] = g->staging_latency_ps;
        t->stage_chunk[n] = g->staging_chunk_bytes;
    }
    build_adjacency(t);
    topo__label_pxn(t, spec);
    int rc = 0;
    if (t->n_gpus == 0) {
        rc = sim_diag_error(diag, "topology", 0, 0, "topology '%s' has no GPU", spec->name);
        goto fail;
    }
    for (int g = 0; g < t->n_gpus; g++) {
        hw_device *d = &t->dev[t->gpu_dev[g]];
        if (!d->p2p && d->staging < 0) {
            if (!t->staged)
                label_staging(t);
            if (d->staging < 0) {
                rc = sim_diag_error(diag, "topology", 0, 0,
                                    "GPU '%s' has p2p: false but no host_memory device it can "
                                    "stage copies in", d->name);
                goto fail;
            }
        }
    }
    /* Every GPU must reach GPU 0 and be reached from it, so every pair has a route. On
     * large clusters (> 512 GPUs, only the regular parametric builder makes those) the
     * pairs with GPU 1, the middle and the last GPU stand for the rest: they include the
     * longest path of the fabric tree. */
    for (int g = 1; g < t->n_gpus; g++) {
        if (t->n_gpus > 512 && g != 1 && g != t->n_gpus / 2 && g != t->n_gpus - 1)
            continue;
        hw_route r;
        if (!topo__compute_route(t, t->gpu_dev[g], t->gpu_dev[0], &r) ||
            !topo__compute_route(t, t->gpu_dev[0], t->gpu_dev[g], &r)) {
            rc = sim_diag_error(diag, "topology", 0, 0,
                                "GPU '%s' cannot reach GPU '%s' (or the path exceeds %d links)",
                                t->dev[t->gpu_dev[g]].name, t->dev[t->gpu_dev[0]].name,
                                HW_ROUTE_MAX);
            goto fail;
        }
    }
    *out = t;
    return 0;
fail:
    hw_topo_destroy(t);
    return rc;
}

void hw_topo_destroy(hw_topo *t)
{
    if (!t)
        return;
    sim_free(t->dev);
    sim_free(t->storage_of);
    sim_free(t->gpu_local);
    sim_free(t->gpu_nic);
    sim_free(t->stage_ps);
    sim_free(t->stage_chunk);
    sim_free(t->link);
    sim_free(t->adj_first);
    sim_free(t->adj);
    sim_free(t->radj_first);
    sim_free(t->radj);
    sim_free(t->radj_from);
    sim_free(t->radj_cls);
    sim_free(t->fwd);
    sim_free(t->gpu_dev);
    sim_free(t->dist);
    sim_free(t->queue);
    sim_free(t->stamp);
    sim_free(t->nvl_comp);
    sim_free(t->keys);
    sim_free(t->vals);
    for (size_t i = 0; i < t->n_chunks; i++)
        sim_free(t->chunks[i]);
    sim_free(t->chunks);
    sim_free(t);
}

int hw_topo_device_count(const hw_topo *t) { return (int)t->n_dev; }
int hw_topo_link_count(const hw_topo *t) { return (int)t->n_link; }
int hw_topo_gpu_count(const hw_topo *t) { return t->n_gpus; }
int hw_topo_node_count(const hw_topo *t) { return t->n_nodes; }
uint64_t hw_topo_routes_computed(const hw_topo *t) { return t->computed; }

const hw_device *hw_topo_device(const hw_topo *t, int i)
{
    SIM_ASSERT(i >= 0 && (size_t)i < t->n_dev, "device %d of %zu", i, t->n_dev);
    return &t->dev[i];
}

const hw_link *hw_topo_link(const hw_topo *t, int i)
{
    SIM_ASSERT(i >= 0 && (size_t)i < t->n_link, "link %d of %zu", i, t->n_link);
    return &t->link[i];
}

int hw_topo_gpu_device(const hw_topo *t, int gpu)
{
    SIM_ASSERT(gpu >= 0 && gpu < t->n_gpus, "GPU %d of %d", gpu, t->n_gpus);
    return t->gpu_dev[gpu];
}

int hw_topo_find(const hw_topo *t, const char *name)
{
    for (size_t i = 0; i < t->n_dev; i++)
        if (strcmp(t->dev[i].name, name) == 0)
            return (int)i;
    return -1;
}

int hw_topo_storage(hw_topo *t, int gpu)
{
    if (!t->storage_of)
        assign_storage(t);
    return gpu >= 0 && gpu < t->n_gpus ? t->storage_of[gpu] : -1;
}

int hw_topo_host_memory(hw_topo *t, int gpu)
{
    int d = hw_topo_gpu_device(t, gpu);
    if (t->dev[d].staging < 0 && !t->staged)
        label_staging(t);
    return t->dev[d].staging;
}

double hw_topo_memory_bw_Bps(const hw_topo *t, int mem_dev)
{
    for (int32_t k = t->adj_first[mem_dev]; k < t->adj_first[mem_dev + 1]; k++)
        return t->link[t->adj[k]].bw_Bps;
    return 0;
}

int hw_topo_common_nvswitch(const hw_topo *t, const int32_t *gpus, int n)
{
    int sw = -1;
    for (int i = 0; i < n; i++) {
        int g = t->gpu_dev[gpus[i]], found = -1;
        for (int32_t k = t->adj_first[g]; k < t->adj_first[g + 1]; k++) {
            int v = other_end(&t->link[t->adj[k]], g);
            if (t->dev[v].kind == HW_DEV_NVSWITCH && (sw < 0 || v == sw)) {
                found = v;
                break;
            }
        }
        if (found < 0)
            return -1;
        sw = found;
    }
    return sw;
}
