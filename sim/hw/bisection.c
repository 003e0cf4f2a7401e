/* The bisection bandwidth of a topology (`stepsim topo`): Dinic's max flow from the first
 * half of the GPUs to the second over the links, devices that forward relaying (topo.h). */
#include "core/sim.h"

#include <math.h>
#include <string.h>

#include "hw/topo.h"

/* ---- bisection (Dinic's max flow) ------------------------------------------------------ */

typedef struct arc {
    int32_t to;
    int32_t rev;
    double cap;
} arc;

typedef struct flownet {
    int n;
    arc *arcs;
    size_t n_arcs, cap_arcs;
    int32_t *first, *next; /* adjacency as linked lists by arc index */
    int32_t *level, *it, *queue;
} flownet;

static void fn_add(flownet *f, int a, int b, double cap)
{
    SIM_GROW(f->arcs, f->cap_arcs, f->n_arcs + 2);
    size_t need = f->n_arcs + 2;
    f->next = sim_realloc_array(f->next, need, sizeof *f->next);
    f->arcs[f->n_arcs] = (arc){.to = b, .rev = (int32_t)f->n_arcs + 1, .cap = cap};
    f->next[f->n_arcs] = f->first[a];
    f->first[a] = (int32_t)f->n_arcs++;
    f->arcs[f->n_arcs] = (arc){.to = a, .rev = (int32_t)f->n_arcs - 1, .cap = 0};
    f->next[f->n_arcs] = f->first[b];
    f->first[b] = (int32_t)f->n_arcs++;
}

/* Residual capacity (bytes/s) below which an arc counts as saturated: link bandwidths are
 * >= 1e9 B/s, so this only absorbs the rounding left by subtracting pushed flow. */
#define FLOW_CAP_EPS 1e-9

static bool fn_bfs(flownet *f, int s, int sink)
{
    for (int i = 0; i < f->n; i++)
        f->level[i] = -1;
    size_t h = 0, tl = 0;
    f->level[s] = 0;
    f->queue[tl++] = s;
    while (h < tl) {
        int u = f->queue[h++];
        for (int32_t e = f->first[u]; e >= 0; e = f->next[e])
            if (f->arcs[e].cap > FLOW_CAP_EPS && f->level[f->arcs[e].to] < 0) {
                f->level[f->arcs[e].to] = f->level[u] + 1;
                f->queue[tl++] = f->arcs[e].to;
            }
    }
    return f->level[sink] >= 0;
}

static double fn_dfs(flownet *f, int u, int sink, double pushed)
{
    if (u == sink)
        return pushed;
    for (; f->it[u] >= 0; f->it[u] = f->next[f->it[u]]) {
        arc *a = &f->arcs[f->it[u]];
        if (a->cap <= FLOW_CAP_EPS || f->level[a->to] != f->level[u] + 1)
            continue;
        double got = fn_dfs(f, a->to, sink, fmin(pushed, a->cap));
        if (got > 0) {
            a->cap -= got;
            f->arcs[a->rev].cap += got;
            return got;
        }
    }
    return 0;
}

double hw_topo_bisection_Bps(const hw_topo *t)
{
    int n_gpus = hw_topo_gpu_count(t), n_dev = hw_topo_device_count(t);
    int n_link = hw_topo_link_count(t);
    if (n_gpus < 2)
        return 0;
    flownet f = {.n = n_dev + 2};
    f.first = sim_calloc((size_t)f.n, sizeof *f.first);
    for (int i = 0; i < f.n; i++)
        f.first[i] = -1;
    int S = f.n - 2, T = f.n - 1, half = n_gpus / 2;
    /* a device may send if it forwards or is a first-half GPU, and receive if it forwards
     * or is a second-half GPU: GPUs do not relay, host memory takes no part */
    for (int i = 0; i < n_link; i++) {
        const hw_link *l = hw_topo_link(t, i);
        for (int dir = 0; dir < (l->half_duplex ? 2 : 1); dir++) {
            int a = dir ? l->dst : l->src, b = dir ? l->src : l->dst;
            const hw_device *da = hw_topo_device(t, a), *db = hw_topo_device(t, b);
            bool send = hw_dev_kind_forwards(da->kind) || (da->kind == HW_DEV_GPU && da->gpu < half);
            bool recv = hw_dev_kind_forwards(db->kind) || (db->kind == HW_DEV_GPU && db->gpu >= half);
            if (send && recv)
                fn_add(&f, a, b, l->bw_Bps);
        }
    }
    double big = 0;
    for (int i = 0; i < n_link; i++)
        big += hw_topo_link(t, i)->bw_Bps;
    for (int g = 0; g < n_gpus; g++) {
        if (g < half)
            fn_add(&f, S, hw_topo_gpu_device(t, g), big);
        else
            fn_add(&f, hw_topo_gpu_device(t, g), T, big);
    }
    f.level = sim_calloc((size_t)f.n, sizeof *f.level);
    f.it = sim_calloc((size_t)f.n, sizeof *f.it);
    f.queue = sim_calloc((size_t)f.n, sizeof *f.queue);
    double flow = 0;
    while (fn_bfs(&f, S, T)) {
        memcpy(f.it, f.first, (size_t)f.n * sizeof *f.it);
        double got;
        while ((got = fn_dfs(&f, S, T, INFINITY)) > 0)
            flow += got;
    }
    sim_free(f.arcs);
    sim_free(f.next);
    sim_free(f.first);
    sim_free(f.level);
    sim_free(f.it);
    sim_free(f.queue);
    return flow;
}
