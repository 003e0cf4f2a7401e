/* Flow-level network with max-min fair sharing (see net.h).
 *
 * Max-min fairness by progressive filling: all unfixed flows grow at the same rate until a
 * link saturates; the flows crossing the most constrained link (smallest remaining
 * capacity / unfixed flows, lowest link index on ties) are fixed at that share, the link
 * capacities they use are reduced, and the procedure repeats. Every flow then has the
 * largest rate it can get without taking bandwidth from a flow with a smaller rate.
 *
 * Between re-solves every rate is constant, so a flow's completion time is exact up to the
 * picosecond rounding: remaining bytes are carried as doubles and a completion is scheduled
 * at now + ceil(remaining / rate) ps.
 *
 * Placeholder topology (issue 2; the topology graph of issue 3 replaces it): each GPU has an
 * up and a down link to its node's switching fabric (NVSwitch, NVLink or PCIe, at the
 * per-GPU intra-node bandwidth) and, on multi-node clusters, an up and a down link to the
 * inter-node network at its share of the node's NIC bandwidth divided by the fabric's
 * oversubscription. A flow inside a node crosses [up(src), down(dst)]; across nodes
 * [net_up(src), net_down(dst)]. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hw/net.h"

enum { NET_EV_ACTIVATE, NET_EV_COMPLETE, NET_EV_RESOLVE };
enum { FLOW_FREE, FLOW_LATENT, FLOW_ACTIVE };

#define NET_ROUTE_MAX 4

typedef struct net_link {
    hw_link_stats st;
    int n_active;        /* flows consuming bandwidth */
    sim_time busy_since;
    /* progressive-filling scratch */
    double rem;
    int n_unfixed;
} net_link;

typedef struct net_flow {
    uint64_t tag;
    int state;
    int n_route;
    int route[NET_ROUTE_MAX];
    double remaining; /* bytes */
    double rate;      /* B/s */
    sim_time last;    /* time `remaining` refers to */
    sim_event *ev;    /* pending activation or completion event */
    int active_pos;
    int next_free;
    int fixed;
} net_flow;

struct hw_net {
    sim_eventq *q;
    uint32_t type;
    hw_flow_done_fn done;
    void *ctx;
    int n_gpus, gpus_per_node;
    bool multi_node;
    sim_time intra_latency_ps, inter_latency_ps;
    net_link *links;
    int n_links;
    char *names; /* device names, NUL-separated */
    net_flow *flows;
    size_t cap_flows;
    int n_flows;
    int free_head;
    int *active;
    size_t cap_active;
    int n_active;
    bool resolve_pending;
    uint64_t flows_done, solves;
};

static const char *intra_class(hw_intra_kind k)
{
    return k == HW_INTRA_PCIE ? "pcie" : "nvlink";
}

hw_net *hw_net_create(const hw_topology_spec *topo, int n_gpus, sim_eventq *q,
                      uint32_t event_type, hw_flow_done_fn done, void *ctx)
{
    SIM_ASSERT(n_gpus >= 1 && n_gpus <= topo->nodes * topo->gpus_per_node,
               "%d GPUs on a topology of %d x %d", n_gpus, topo->nodes, topo->gpus_per_node);
    hw_net *net = sim_calloc(1, sizeof *net);
    net->q = q;
    net->type = event_type;
    net->done = done;
    net->ctx = ctx;
    net->n_gpus = n_gpus;
    net->gpus_per_node = topo->gpus_per_node;
    net->multi_node = n_gpus > topo->gpus_per_node;
    net->free_head = -1;

    double intra_bw = topo->intra.bw_Bps;
    if (topo->intra.kind == HW_INTRA_PCIE && intra_bw <= 0)
        intra_bw = hw_pcie_bw_Bps(topo->intra.pcie_gen, topo->intra.pcie_lanes);
    SIM_ASSERT(intra_bw > 0, "topology '%s' has no intra-node bandwidth", topo->name);
    net->intra_latency_ps = topo->intra.latency_ps;

    double inter_bw = 0;
    if (net->multi_node) {
        SIM_ASSERT(topo->nics.count > 0 && topo->nics.bw_Bps > 0, "multi-node without NICs");
        double over = topo->fabric.oversubscription >= 1 ? topo->fabric.oversubscription : 1;
        inter_bw = topo->nics.count * topo->nics.bw_Bps / topo->gpus_per_node / over;
        /* NIC to switch and switch to NIC, plus the fabric's own switching latency. */
        net->inter_latency_ps = 2 * topo->nics.latency_ps + topo->fabric.latency_ps;
    }

    net->n_links = 2 * n_gpus * (net->multi_node ? 2 : 1);
    net->links = sim_calloc((size_t)net->n_links, sizeof *net->links);
    /* Names: "gpuN", "nodeN.fabric" for every GPU and node, and "network". */
    int n_nodes = (n_gpus + topo->gpus_per_node - 1) / topo->gpus_per_node;
    size_t name_len = 24;
    net->names = sim_calloc((size_t)(n_gpus + n_nodes + 1), name_len);
    for (int g = 0; g < n_gpus; g++)
        snprintf(net->names + (size_t)g * name_len, name_len, "gpu%d", g);
    for (int n = 0; n < n_nodes; n++)
        snprintf(net->names + (size_t)(n_gpus + n) * name_len, name_len, "node%d.fabric", n);
    const char *network = net->names + (size_t)(n_gpus + n_nodes) * name_len;
    snprintf(net->names + (size_t)(n_gpus + n_nodes) * name_len, name_len, "network");

    for (int g = 0; g < n_gpus; g++) {
        const char *gpu = net->names + (size_t)g * name_len;
        const char *fab = net->names + (size_t)(n_gpus + g / topo->gpus_per_node) * name_len;
        net->links[2 * g].st = (hw_link_stats){
            .src = gpu, .dst = fab, .cls = intra_class(topo->intra.kind), .bw_Bps = intra_bw};
        net->links[2 * g + 1].st = (hw_link_stats){
            .src = fab, .dst = gpu, .cls = intra_class(topo->intra.kind), .bw_Bps = intra_bw};
        if (net->multi_node) {
            net->links[2 * n_gpus + 2 * g].st =
                (hw_link_stats){.src = gpu, .dst = network, .cls = "ib", .bw_Bps = inter_bw};
            net->links[2 * n_gpus + 2 * g + 1].st =
                (hw_link_stats){.src = network, .dst = gpu, .cls = "ib", .bw_Bps = inter_bw};
        }
    }
    return net;
}

void hw_net_destroy(hw_net *net)
{
    if (!net)
        return;
    sim_free(net->links);
    sim_free(net->names);
    sim_free(net->flows);
    sim_free(net->active);
    sim_free(net);
}

static int route(const hw_net *net, int src, int dst, int *out, sim_time *latency)
{
    if (src == dst) {
        *latency = 0;
        return 0;
    }
    if (src / net->gpus_per_node == dst / net->gpus_per_node) {
        out[0] = 2 * src;
        out[1] = 2 * dst + 1;
        *latency = net->intra_latency_ps;
        return 2;
    }
    out[0] = 2 * net->n_gpus + 2 * src;
    out[1] = 2 * net->n_gpus + 2 * dst + 1;
    *latency = net->inter_latency_ps;
    return 2;
}

double hw_net_path_bw_Bps(const hw_net *net, int src, int dst)
{
    int r[NET_ROUTE_MAX];
    sim_time lat;
    int n = route(net, src, dst, r, &lat);
    double bw = INFINITY;
    for (int i = 0; i < n; i++)
        bw = fmin(bw, net->links[r[i]].st.bw_Bps);
    return bw;
}

sim_time hw_net_path_latency_ps(const hw_net *net, int src, int dst)
{
    int r[NET_ROUTE_MAX];
    sim_time lat;
    route(net, src, dst, r, &lat);
    return lat;
}

static void schedule(hw_net *net, net_flow *f, int kind, sim_time t)
{
    sim_event *ev = sim_eventq_alloc(net->q);
    ev->type = net->type;
    ev->a = kind;
    ev->c = f ? (int64_t)(f - net->flows) : -1;
    if (f)
        f->ev = ev;
    sim_eventq_push(net->q, ev, t);
}

static void request_resolve(hw_net *net, sim_time now)
{
    if (net->resolve_pending)
        return;
    net->resolve_pending = true;
    schedule(net, NULL, NET_EV_RESOLVE, now);
}

void hw_net_start_flow(hw_net *net, sim_time now, int src, int dst, double bytes, uint64_t tag)
{
    SIM_ASSERT(src >= 0 && src < net->n_gpus && dst >= 0 && dst < net->n_gpus && bytes >= 0,
               "flow %d -> %d of %g bytes", src, dst, bytes);
    int id;
    if (net->free_head >= 0) {
        id = net->free_head;
        net->free_head = net->flows[id].next_free;
    } else {
        SIM_GROW(net->flows, net->cap_flows, (size_t)net->n_flows + 1);
        id = net->n_flows++;
    }
    net_flow *f = &net->flows[id];
    sim_time latency;
    *f = (net_flow){.tag = tag, .state = FLOW_LATENT, .remaining = bytes, .last = now,
                    .active_pos = -1, .next_free = -1};
    f->n_route = route(net, src, dst, f->route, &latency);
    schedule(net, f, NET_EV_ACTIVATE, now + latency);
}

/* Moves every active flow's progress up to `now`. */
static void advance(hw_net *net, sim_time now)
{
    for (int i = 0; i < net->n_active; i++) {
        net_flow *f = &net->flows[net->active[i]];
        if (now == f->last)
            continue;
        double moved = f->rate * (double)(now - f->last) / (double)SIM_PS_PER_S;
        if (moved > f->remaining)
            moved = f->remaining;
        f->remaining -= moved;
        f->last = now;
        for (int k = 0; k < f->n_route; k++)
            net->links[f->route[k]].st.bytes += moved;
    }
}

static void link_use(hw_net *net, net_flow *f, int delta, sim_time now)
{
    for (int k = 0; k < f->n_route; k++) {
        net_link *l = &net->links[f->route[k]];
        if (delta > 0 && l->n_active++ == 0)
            l->busy_since = now;
        if (delta < 0 && --l->n_active == 0)
            l->st.busy_ps += now - l->busy_since;
    }
}

static void release(hw_net *net, int id)
{
    net_flow *f = &net->flows[id];
    f->state = FLOW_FREE;
    f->next_free = net->free_head;
    net->free_head = id;
}

static void finish_flow(hw_net *net, int id, sim_time now)
{
    net_flow *f = &net->flows[id];
    uint64_t tag = f->tag;
    if (f->state == FLOW_ACTIVE) {
        int pos = f->active_pos;
        int last = net->active[--net->n_active];
        net->active[pos] = last;
        net->flows[last].active_pos = pos;
        link_use(net, f, -1, now);
        request_resolve(net, now);
    }
    release(net, id);
    net->flows_done++;
    net->done(net->ctx, tag, now);
}

/* Progressive filling over the active flows, then reschedules completions. */
static void resolve(hw_net *net, sim_time now)
{
    net->solves++;
    for (int l = 0; l < net->n_links; l++) {
        net->links[l].rem = net->links[l].st.bw_Bps;
        net->links[l].n_unfixed = 0;
    }
    for (int i = 0; i < net->n_active; i++) {
        net_flow *f = &net->flows[net->active[i]];
        f->fixed = 0;
        for (int k = 0; k < f->n_route; k++)
            net->links[f->route[k]].n_unfixed++;
    }
    int unfixed = net->n_active;
    while (unfixed > 0) {
        int best = -1;
        double share = INFINITY;
        for (int l = 0; l < net->n_links; l++) {
            net_link *lk = &net->links[l];
            if (lk->n_unfixed > 0 && lk->rem / lk->n_unfixed < share) {
                share = lk->rem / lk->n_unfixed;
                best = l;
            }
        }
        SIM_ASSERT(best >= 0, "%d unfixed flows cross no link", unfixed);
        if (share < 0)
            share = 0;
        for (int i = 0; i < net->n_active; i++) {
            net_flow *f = &net->flows[net->active[i]];
            if (f->fixed)
                continue;
            bool crosses = false;
            for (int k = 0; k < f->n_route; k++)
                crosses |= f->route[k] == best;
            if (!crosses)
                continue;
            f->fixed = 1;
            f->rate = share;
            unfixed--;
            for (int k = 0; k < f->n_route; k++) {
                net_link *lk = &net->links[f->route[k]];
                lk->rem -= share;
                lk->n_unfixed--;
            }
        }
    }
    for (int i = 0; i < net->n_active; i++) {
        net_flow *f = &net->flows[net->active[i]];
        SIM_ASSERT(f->rate > 0, "flow with zero rate");
        double dt_ps = ceil(f->remaining / f->rate * (double)SIM_PS_PER_S);
        sim_time t = now + (sim_time)dt_ps;
        if (f->ev && f->ev->time == t)
            continue;
        if (f->ev)
            sim_eventq_cancel(net->q, f->ev);
        schedule(net, f, NET_EV_COMPLETE, t);
    }
}

void hw_net_handle(hw_net *net, sim_event *ev)
{
    SIM_ASSERT(ev->type == net->type, "event type %u", ev->type);
    sim_time now = ev->time;
    int kind = ev->a;
    int id = (int)ev->c;
    sim_eventq_free(net->q, ev);
    advance(net, now);
    switch (kind) {
    case NET_EV_ACTIVATE: {
        net_flow *f = &net->flows[id];
        f->ev = NULL;
        f->last = now;
        if (f->n_route == 0 || f->remaining <= 0) {
            finish_flow(net, id, now);
            return;
        }
        f->state = FLOW_ACTIVE;
        SIM_GROW(net->active, net->cap_active, (size_t)net->n_active + 1);
        f->active_pos = net->n_active;
        net->active[net->n_active++] = id;
        link_use(net, f, +1, now);
        request_resolve(net, now);
        return;
    }
    case NET_EV_COMPLETE: {
        net_flow *f = &net->flows[id];
        f->ev = NULL;
        /* Whatever rounding left is delivered now: the event was scheduled at the ceiling
         * of the exact completion time. */
        for (int k = 0; k < f->n_route; k++)
            net->links[f->route[k]].st.bytes += f->remaining;
        f->remaining = 0;
        finish_flow(net, id, now);
        return;
    }
    case NET_EV_RESOLVE:
        net->resolve_pending = false;
        resolve(net, now);
        return;
    }
    SIM_ASSERT(0, "network event kind %d", kind);
}

void hw_net_finish(hw_net *net, sim_time now)
{
    for (int l = 0; l < net->n_links; l++) {
        net_link *lk = &net->links[l];
        if (lk->n_active > 0) {
            lk->st.busy_ps += now - lk->busy_since;
            lk->busy_since = now;
        }
    }
}

int hw_net_link_count(const hw_net *net)
{
    return net->n_links;
}

const hw_link_stats *hw_net_link(const hw_net *net, int i)
{
    SIM_ASSERT(i >= 0 && i < net->n_links, "link %d of %d", i, net->n_links);
    return &net->links[i].st;
}

uint64_t hw_net_flows_done(const hw_net *net)
{
    return net->flows_done;
}

uint64_t hw_net_solves(const hw_net *net)
{
    return net->solves;
}
