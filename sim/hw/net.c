/* Flow-level network with incremental max-min fair sharing (see net.h).
 *
 * Max-min fairness by progressive filling: all unfixed flows grow at the same rate until a
 * link saturates; the flows crossing the most constrained link (smallest remaining capacity
 * per unit of unfixed weight, lowest link index on ties) are fixed at that share, the
 * capacity they use is taken from every link they cross, and the procedure repeats. A flow
 * that crosses a link twice (a copy staged in host memory writes and reads the same DRAM)
 * weighs 2 on it. The bottleneck search uses a min-heap of links keyed by share; fixing
 * flows at the minimum share can only raise the other links' shares, so keys only grow.
 *
 * Incremental: max-min rates decompose over the connected components of the bipartite
 * flow/link graph, so a change (flows added or removed) re-solves only the component
 * reachable from the links it touched. Flows elsewhere keep their rates and their scheduled
 * completions.
 *
 * Removals only: when a batch of changes only removes flows, the slowest removed flow's
 * rate θ bounds what can change. Progressive filling with and without the removed flows is
 * identical below level θ (every link a removed flow crossed saturates at θ or above, or it
 * would have been fixed lower), so flows with rate < θ keep theirs: they are frozen, and
 * their bandwidth is simply taken out of the links they share with the re-solved flows.
 *
 * Between re-solves every rate is constant: a flow stores its remaining bytes at the time of
 * its last rate change and is advanced lazily; its completion is scheduled at
 * now + ceil(remaining / rate) picoseconds. */
#include "core/sim.h"

#include <math.h>
#include <string.h>

#include "hw/net-internal.h"

/* Share (fraction of the link's bandwidth) given to each flow on a link whose remaining
 * bandwidth came out <= 0 from float residue while filling: tiny but positive, so the flows
 * still finish instead of stalling at rate 0. */
#define SATURATED_SHARE 1e-12

/* Keyed rounds of at least this many transfers are timed from a record even when isolated
 * (hw_net_round_end_key): below it, the isolated path's per-transfer work is cheaper than
 * the record's lookup (measured on the bench's tensor-parallel and ring rounds). */
#define KEYED_ISOLATED_MIN 64

hw_net *hw_net_create(hw_topo *topo, sim_eventq *q, uint32_t event_type, hw_flow_done_fn done,
                      void *ctx)
{
    hw_net *net = sim_calloc(1, sizeof *net);
    net->topo = topo;
    net->q = q;
    SIM_ASSERT(event_type <= UINT16_MAX, "event type %u", event_type);
    net->type = (uint16_t)event_type;
    net->done = done;
    net->ctx = ctx;
    net->free_head = -1;
    net->theta = INFINITY;
    net->rounds_enabled = true;
    net->round_free = -1;
    net->n_links = hw_topo_link_count(topo);
    /* one spare element to align the array to a cache line (net_link) */
    net->links_raw = sim_calloc((size_t)net->n_links + 2, sizeof *net->links);
    net->links = (net_link *)(((uintptr_t)net->links_raw + 63) & ~(uintptr_t)63);
    net->stats = sim_calloc((size_t)net->n_links + 1, sizeof *net->stats);
    for (int i = 0; i < net->n_links; i++) {
        const hw_link *l = hw_topo_link(topo, i);
        net->stats[i] = (hw_link_stats){.src = hw_topo_device(topo, l->src)->name,
                                        .dst = hw_topo_device(topo, l->dst)->name,
                                        .cls = hw_link_class_name(l->cls),
                                        .bw_Bps = l->bw_Bps};
        net->links[i].bw_Bps = l->bw_Bps;
        net->links[i].heap_pos = -1;
        net->links[i].round = -1;
    }
    return net;
}

void hw_net_destroy(hw_net *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->n_links; i++)
        sim_free(net->links[i].members);
    sim_free(net->links_raw);
    sim_free(net->stats);
    sim_free(net->flows);
    sim_free(net->dirty);
    sim_free(net->comp_links);
    sim_free(net->comp_flows);
    sim_free(net->heap);
    for (int32_t i = 0; i < net->n_rounds; i++) {
        if (net->rounds[i].evo)
            net__evolution_put(net->rounds[i].evo);
        sim_free(net->rounds[i].x);
    }
    net__closed_destroy(net);
    sim_free(net->rounds);
    sim_free(net->pending);
    sim_free(net);
}

/* A network event's payload: its kind (NET_EV_*) and the flow (NET_EV_ACTIVATE, _COMPLETE;
 * -1 for NET_EV_RESOLVE) or round (NET_EV_ROUND) it concerns. */
static int net_ev_kind(const sim_event *ev)
{
    return ev->a;
}

static int32_t net_ev_id(const sim_event *ev)
{
    return (int32_t)ev->c;
}

static void net_ev_set(sim_event *ev, int kind, int64_t id)
{
    ev->a = kind;
    ev->c = id;
}

static void schedule(hw_net *net, int32_t flow, int kind, sim_time t)
{
    sim_event *ev = sim_eventq_alloc(net->q);
    ev->type = net->type;
    net_ev_set(ev, kind, flow);
    if (flow >= 0)
        net->flows[flow].ev = ev;
    sim_eventq_push(net->q, ev, t);
}

static void mark_dirty(hw_net *net, int32_t l, sim_time now)
{
    if (!net->links[l].dirty) {
        net->links[l].dirty = true;
        SIM_GROW(net->dirty, net->cap_dirty, net->n_dirty + 1);
        net->dirty[net->n_dirty++] = l;
    }
    if (!net->resolve_pending) {
        net->resolve_pending = true;
        schedule(net, -1, NET_EV_RESOLVE, now);
    }
}

/* A free slot of the flow table (recycled first) with its header set; no hops yet. */
int32_t net__flow_slot(hw_net *net, uint64_t tag, int state, const hw_route *r, double bytes,
                         double rate, sim_time last)
{
    int32_t id;
    if (net->free_head >= 0) {
        id = net->free_head;
        net->free_head = net->flows[id].next_free;
    } else {
        SIM_GROW(net->flows, net->cap_flows, (size_t)net->n_flows + 1);
        id = net->n_flows++;
    }
    net->live_flows++;
    net_flow *f = &net->flows[id];
    f->remaining = bytes;
    f->rate = rate;
    f->last = last;
    f->ev = NULL;
    f->route = r;
    f->tag = tag;
    f->cap = 0;
    f->cap_link = f->heap_pos = -1;
    f->stamp = 0;
    f->next_free = -1;
    f->n_links = 0;
    f->state = (uint8_t)state;
    f->fixed = false;
    return id;
}

void hw_net_start_flow_dev(hw_net *net, sim_time now, int src_dev, int dst_dev, double bytes,
                           uint64_t tag)
{
    net__start_flow(net, now, hw_topo_route(net->topo, src_dev, dst_dev), bytes, tag);
}

/* A flow on route `r` (from the topology's cache), starting at `now`. */
void net__start_flow(hw_net *net, sim_time now, const hw_route *r, double bytes, uint64_t tag)
{
    SIM_ASSERT(bytes >= 0 && isfinite(bytes), "flow of %g bytes", bytes);
    int32_t id = net__flow_slot(net, tag, FLOW_LATENT, r, bytes, 0, now);
    net_flow *f = &net->flows[id];
    /* distinct links with their multiplicity */
    for (int i = 0; i < r->n; i++) {
        int k = 0;
        while (k < f->n_links && f->hop[k].link != r->links[i])
            k++;
        if (k == f->n_links) {
            f->hop[f->n_links].link = r->links[i];
            f->hop[f->n_links++].weight = 0;
        }
        f->hop[k].weight++;
    }
    for (int k = 0; k < f->n_links; k++)
        net->links[f->hop[k].link].n_latent++;
    schedule(net, id, NET_EV_ACTIVATE, now + r->latency_ps);
}

void hw_net_start_flow(hw_net *net, sim_time now, int src, int dst, double bytes, uint64_t tag)
{
    hw_net_start_flow_dev(net, now, hw_topo_gpu_device(net->topo, src),
                          hw_topo_gpu_device(net->topo, dst), bytes, tag);
}

/* Brings one flow's progress (and its links' byte counters) up to `now`. */
static void advance(hw_net *net, net_flow *f, sim_time now)
{
    if (now == f->last)
        return;
    double moved = f->rate * (double)(now - f->last) / (double)SIM_PS_PER_S;
    if (moved > f->remaining)
        moved = f->remaining;
    f->remaining -= moved;
    f->last = now;
    for (int k = 0; k < f->n_links; k++)
        net__add_bytes(net, f->hop[k].link, moved * f->hop[k].weight);
}

static void split_round(hw_net *net, int32_t ri, sim_time now);

/* Adds an active flow to its links' member lists (no isolated round holds them). */
void net__attach_links(hw_net *net, int32_t id, sim_time now)
{
    net_flow *f = &net->flows[id];
    net->theta = 0; /* an addition can lower anybody's rate */
    for (int k = 0; k < f->n_links; k++) {
        net_link *l = &net->links[f->hop[k].link];
        if (l->n_members == l->cap_members) {
            l->cap_members = l->cap_members ? 2 * l->cap_members : 4;
            l->members = sim_realloc_array(l->members, (size_t)l->cap_members,
                                           sizeof *l->members);
        }
        f->hop[k].pos = l->n_members;
        l->members[l->n_members++] = (net_member){.flow = id, .weight = f->hop[k].weight};
        if (l->n_active++ == 0)
            l->busy_since = now;
        mark_dirty(net, f->hop[k].link, now);
    }
}

static void attach(hw_net *net, int32_t id, sim_time now)
{
    /* a link held by an isolated round is shared from now on: the round becomes flows */
    for (int k = 0; k < net->flows[id].n_links; k++) {
        int32_t ri = net->links[net->flows[id].hop[k].link].round;
        if (ri >= 0)
            split_round(net, ri, now);
    }
    net__attach_links(net, id, now);
}

static void detach(hw_net *net, int32_t id, sim_time now)
{
    net_flow *f = &net->flows[id];
    net->theta = fmin(net->theta, f->rate);
    for (int k = 0; k < f->n_links; k++) {
        int32_t li = f->hop[k].link;
        net_link *l = &net->links[li];
        int32_t pos = f->hop[k].pos;
        net_member last = l->members[--l->n_members];
        if (pos != l->n_members) {
            l->members[pos] = last;
            /* tell the moved flow where its entry now is */
            net_flow *g = &net->flows[last.flow];
            for (int j = 0; j < g->n_links; j++)
                if (g->hop[j].link == li)
                    g->hop[j].pos = pos;
        }
        if (--l->n_active == 0)
            net__add_busy(net, li, now - l->busy_since);
        mark_dirty(net, li, now);
    }
}

static void finish_flow(hw_net *net, int32_t id, sim_time now)
{
    net_flow *f = &net->flows[id];
    uint64_t tag = f->tag;
    if (f->state == FLOW_ACTIVE)
        detach(net, id, now);
    f->state = FLOW_FREE;
    f->next_free = net->free_head;
    net->free_head = id;
    net->live_flows--;
    net->flows_done++;
    net->done(net->ctx, tag, now);
}

/* ---- the solver ------------------------------------------------------------------------ */

/* Heap entries: a link (>= 0), keyed by its fair share, or a flow's cap (~flow, < 0), keyed
 * by the cap and ordered among equal keys as the link that sets it: the order in which the
 * same links, all in the heap, would be taken. */
static inline double entry_key(const hw_net *net, int32_t e)
{
    return e >= 0 ? net->links[e].key : net->flows[~e].cap;
}

static inline int32_t entry_link(const hw_net *net, int32_t e)
{
    return e >= 0 ? e : net->flows[~e].cap_link;
}

static inline void entry_set_pos(hw_net *net, int32_t e, int32_t pos)
{
    if (e >= 0)
        net->links[e].heap_pos = pos;
    else
        net->flows[~e].heap_pos = pos;
}

static bool heap_less(const hw_net *net, int32_t a, int32_t b)
{
    double sa = entry_key(net, a), sb = entry_key(net, b);
    return sa < sb || (sa == sb && entry_link(net, a) < entry_link(net, b));
}

static void heap_swap(hw_net *net, size_t i, size_t j)
{
    int32_t t = net->heap[i];
    net->heap[i] = net->heap[j];
    net->heap[j] = t;
    entry_set_pos(net, net->heap[i], (int32_t)i);
    entry_set_pos(net, net->heap[j], (int32_t)j);
}

static void heap_down(hw_net *net, size_t i, size_t n)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && heap_less(net, net->heap[l], net->heap[m]))
            m = l;
        if (l + 1 < n && heap_less(net, net->heap[l + 1], net->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        heap_swap(net, i, m);
        i = m;
    }
}

static void heap_up(hw_net *net, size_t i)
{
    while (i > 0 && heap_less(net, net->heap[i], net->heap[(i - 1) / 2])) {
        heap_swap(net, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_remove(hw_net *net, size_t i, size_t *n)
{
    entry_set_pos(net, net->heap[i], -1);
    if (i == --*n)
        return;
    net->heap[i] = net->heap[*n];
    entry_set_pos(net, net->heap[i], (int32_t)i);
    heap_down(net, i, *n);
    heap_up(net, i);
}

/* Collects the component of the flow/link graph reachable from the dirty links. */
static void collect_component(hw_net *net, size_t *n_links, size_t *n_flows)
{
    if (++net->stamp == 0)
        net->stamp = 1;
    uint32_t st = net->stamp;
    size_t nl = 0, nf = 0;
    for (size_t i = 0; i < net->n_dirty; i++) {
        int32_t l = net->dirty[i];
        net->links[l].dirty = false;
        if (net->links[l].stamp == st)
            continue;
        net->links[l].stamp = st;
        SIM_GROW(net->comp_links, net->cap_comp_links, nl + 1);
        net->comp_links[nl++] = l;
    }
    net->n_dirty = 0;
    for (size_t i = 0; i < nl; i++) {
        net_link *l = &net->links[net->comp_links[i]];
        for (int32_t m = 0; m < l->n_members; m++) {
            net_flow *f = &net->flows[l->members[m].flow];
            if (f->stamp == st || f->rate < net->theta)
                continue;
            f->stamp = st;
            SIM_GROW(net->comp_flows, net->cap_comp_flows, nf + 1);
            net->comp_flows[nf++] = l->members[m].flow;
            for (int k = 0; k < f->n_links; k++) {
                net_link *o = &net->links[f->hop[k].link];
                if (o->stamp == st)
                    continue;
                o->stamp = st;
                SIM_GROW(net->comp_links, net->cap_comp_links, nl + 1);
                net->comp_links[nl++] = f->hop[k].link;
            }
        }
    }
    *n_links = nl;
    *n_flows = nf;
}

/* Fixes flow `id` of the component at `share` (progressive filling): takes it off its links
 * and reschedules its completion when the rate changed. */
static void fix_flow(hw_net *net, int32_t id, double share, size_t *hn, sim_time now)
{
    net_flow *f = &net->flows[id];
    f->fixed = true;
    double old = f->rate;
    f->rate = share;
    for (int k = 0; k < f->n_links; k++) {
        net_link *o = &net->links[f->hop[k].link];
        if (o->heap_pos < 0)
            continue; /* a link it crosses alone (its cap) or one already taken */
        o->rem -= share * f->hop[k].weight;
        o->wsum -= f->hop[k].weight;
        if (o->wsum <= 0) {
            heap_remove(net, (size_t)o->heap_pos, hn);
        } else {
            o->key = o->rem / o->wsum;
            heap_down(net, (size_t)o->heap_pos, *hn);
        }
    }
    if (f->heap_pos >= 0)
        heap_remove(net, (size_t)f->heap_pos, hn);
    if (f->ev && old == f->rate)
        return;
    double dt_ps = ceil(f->remaining / f->rate * (double)SIM_PS_PER_S);
    if (f->ev)
        sim_eventq_cancel(net->q, f->ev);
    schedule(net, id, NET_EV_COMPLETE, now + sim_time_from_ps(dt_ps));
}

/* Max-min rates of the component around the dirty links, by progressive filling: take the
 * link with the smallest fair share (remaining bandwidth over the weights of its unfixed
 * flows), fix its flows at that share, repeat. A link that only one flow of the component
 * crosses can only ever fix that flow, at a share that does not change while it waits; such
 * links (nearly all of them in a data-parallel phase: NIC, PCIe and leaf ports) stay out of
 * the heap and become the flow's cap, one entry per flow, ordered as the link would be. The
 * rates and their order of computation are those of the plain algorithm, bit for bit. */
static void resolve(hw_net *net, sim_time now)
{
    size_t nl, nf;
    collect_component(net, &nl, &nf);
    net->theta = INFINITY;
    net->solves++;
    net->resolved += nf;
    if (nf == 0)
        return;
    for (size_t i = 0; i < nf; i++) {
        net_flow *f = &net->flows[net->comp_flows[i]];
        advance(net, f, now);
        f->fixed = false;
        f->cap = INFINITY;
        f->cap_link = -1;
        f->heap_pos = -1;
    }
    SIM_GROW(net->heap, net->cap_heap, nl + nf);
    size_t hn = 0;
    uint32_t st = net->stamp;
    for (size_t i = 0; i < nl; i++) {
        int32_t li = net->comp_links[i];
        net_link *l = &net->links[li];
        l->rem = l->bw_Bps;
        l->wsum = 0;
        int32_t n_in = 0, only = -1;
        for (int32_t m = 0; m < l->n_members; m++) {
            const net_flow *f = &net->flows[l->members[m].flow];
            if (f->stamp == st) {
                l->wsum += l->members[m].weight;
                n_in++;
                only = l->members[m].flow;
            } else {
                l->rem -= f->rate * l->members[m].weight; /* frozen */
            }
        }
        l->heap_pos = -1;
        if (l->wsum <= 0)
            continue;
        l->key = l->rem / l->wsum;
        if (n_in == 1) {
            net_flow *f = &net->flows[only];
            if (l->key < f->cap || (l->key == f->cap && li < f->cap_link)) {
                f->cap = l->key;
                f->cap_link = li;
            }
            continue;
        }
        net->heap[hn] = li;
        l->heap_pos = (int32_t)hn++;
    }
    for (size_t i = 0; i < nf; i++) {
        int32_t id = net->comp_flows[i];
        net_flow *f = &net->flows[id];
        if (f->cap_link < 0)
            continue;
        net->heap[hn] = ~id;
        f->heap_pos = (int32_t)hn++;
    }
    for (size_t i = hn / 2 + 1; i-- > 0;)
        heap_down(net, i, hn);
    while (hn > 0) {
        int32_t e = net->heap[0];
        int32_t li = entry_link(net, e);
        double share = entry_key(net, e);
        if (share <= 0)
            share = net->links[li].bw_Bps * SATURATED_SHARE; /* float residue */
        heap_remove(net, 0, &hn);
        if (e < 0) {
            fix_flow(net, ~e, share, &hn, now);
            continue;
        }
        const net_link *l = &net->links[li];
        for (int32_t m = 0; m < l->n_members; m++) {
            const net_flow *f = &net->flows[l->members[m].flow];
            if (!f->fixed && f->stamp == st)
                fix_flow(net, l->members[m].flow, share, &hn, now);
        }
    }
}

/* ---- isolated rounds ------------------------------------------------------------------ */

/* A round whose transfers each cross links that nothing else uses, none twice, and that no
 * other transfer of the round crosses, has a max-min solution known in advance: every
 * transfer runs at its route's bottleneck bandwidth from its activation to its end. The net
 * then times the round with one event instead of an activation, a re-solve and a completion
 * per transfer, and holds its links; a flow that later needs one of them splits the round
 * into ordinary flows at that instant (split_round), carrying their progress, so the rates
 * from then on are max-min's again. Completion times, byte and busy-time counters are the
 * ones the ordinary path computes, operation for operation. */

void hw_net_set_rounds(hw_net *net, bool enabled)
{
    net->rounds_enabled = enabled;
}

void hw_net_round_begin(hw_net *net)
{
    net->n_pending = 0;
}

void hw_net_round_add(hw_net *net, sim_time act, double bytes, const hw_route *route)
{
    SIM_ASSERT(bytes >= 0 && isfinite(bytes), "flow of %g bytes", bytes);
    if (net->n_pending == net->cap_pending) {
        net->cap_pending = net->cap_pending ? 2 * net->cap_pending : 64;
        net->pending = sim_realloc_array(net->pending, (size_t)net->cap_pending,
                                         sizeof *net->pending);
    }
    net->pending[net->n_pending++] = (round_xfer){.route = route, .act = act, .bytes = bytes};
}

static bool round_isolated(hw_net *net)
{
    if (!net->rounds_enabled || net->n_pending == 0)
        return false;
    if (++net->stamp == 0)
        net->stamp = 1;
    uint32_t st = net->stamp;
    for (int i = 0; i < net->n_pending; i++) {
        const round_xfer *x = &net->pending[i];
        if (x->bytes <= 0 || x->route->n == 0)
            return false;
        for (int k = 0; k < x->route->n; k++) {
            net_link *l = &net->links[x->route->links[k]];
            if (!net__link_free(l) || l->stamp == st)
                return false;
            l->stamp = st;
        }
    }
    return true;
}

/* A free round slot (recycled first) for n transfers, with room for them in R->x when
 * `room` (a closed round's are its record's), its header cleared. */
int32_t net__round_alloc(hw_net *net, int n, bool room)
{
    int32_t ri;
    if (net->round_free >= 0) {
        ri = net->round_free;
        net->round_free = net->rounds[ri].next_free;
    } else {
        SIM_GROW(net->rounds, net->cap_rounds, (size_t)net->n_rounds + 1);
        ri = net->n_rounds++;
        net->rounds[ri] = (net_round){0};
    }
    net_round *R = &net->rounds[ri];
    if (room && R->cap < n) {
        R->cap = n;
        R->x = sim_realloc_array(R->x, (size_t)R->cap, sizeof *R->x);
    }
    R->n = n;
    R->settled = false;
    R->next_free = -1;
    R->end = 0;
    R->evo = NULL;
    R->base = 0;
    net->live_rounds++;
    return ri;
}

/* Returns round `ri` to the free list (and its evolution, if closed). */
void net__round_release(hw_net *net, int32_t ri)
{
    net_round *R = &net->rounds[ri];
    if (R->evo)
        net__evolution_put(R->evo);
    R->evo = NULL;
    R->next_free = net->round_free;
    net->round_free = ri;
    net->live_rounds--;
}

void hw_net_round_end(hw_net *net, uint64_t tag)
{
    hw_net_round_end_key(net, tag, NULL);
}

void hw_net_round_end_key(hw_net *net, uint64_t tag, const void *key)
{
    /* a round known by its key is timed from its record when its links carry nothing else;
     * large keyed rounds are recorded even when isolated (a ring across hundreds of GPUs:
     * one record instead of every transfer's rate and counters at every step), small
     * isolated ones cost less on their own (a tensor-parallel step of 8 transfers) */
    bool tried = false; /* net__closed_round already said no */
    if (key && net->rounds_enabled) {
        if (net__closed_keyed(net, tag, key))
            return;
        if (net->n_pending >= KEYED_ISOLATED_MIN) {
            if (net__closed_round(net, tag, key))
                return;
            tried = true;
        }
    }
    if (!round_isolated(net)) {
        if (!tried && net__closed_round(net, tag, key))
            return;
        for (int i = 0; i < net->n_pending; i++) {
            const round_xfer *x = &net->pending[i];
            net__start_flow(net, x->act - x->route->latency_ps, x->route, x->bytes, tag);
        }
        return;
    }
    int32_t ri = net__round_alloc(net, net->n_pending, true);
    net_round *R = &net->rounds[ri];
    R->tag = tag;
    for (int i = 0; i < R->n; i++) {
        round_xfer *x = &R->x[i];
        *x = net->pending[i];
        /* what progressive filling gives a flow alone on its links: the smallest share,
         * bandwidth over a weight of 1 (the same double as the solver's rem / wsum) */
        double rate = INFINITY;
        for (int k = 0; k < x->route->n; k++) {
            net_link *l = &net->links[x->route->links[k]];
            rate = fmin(rate, l->bw_Bps);
            l->round = ri;
        }
        x->rate = rate;
        x->end = x->act + sim_time_from_ps(ceil(x->bytes / rate * (double)SIM_PS_PER_S));
        R->end = SIM_MAX(R->end, x->end);
    }
    sim_event *ev = sim_eventq_alloc(net->q);
    ev->type = net->type;
    net_ev_set(ev, NET_EV_ROUND, ri);
    R->ev = ev;
    sim_eventq_push(net->q, ev, R->end);
    net->rounds_fast++;
}

/* Adds a finished transfer's bytes and busy time to its links, as advance() and detach()
 * would have at its completion. */
static void settle_xfer(hw_net *net, const round_xfer *x)
{
    for (int k = 0; k < x->route->n; k++) {
        int32_t li = x->route->links[k];
        net__add_bytes(net, li, x->bytes); /* (all of it: the end is the ceiling) */
        net__add_busy(net, li, x->end - x->act);
    }
}

static void release_links(hw_net *net, const net_round *R)
{
    if (R->evo) {
        for (int i = 0; i < R->evo->n_links; i++)
            net->links[R->evo->link[i]].round = -1;
        return;
    }
    for (int i = 0; i < R->n; i++)
        for (int k = 0; k < R->x[i].route->n; k++)
            net->links[R->x[i].route->links[k]].round = -1;
}

/* A finished round's link counters: its transfers' (isolated) or its evolution's (closed). */
static void settle_round(hw_net *net, net_round *R)
{
    if (R->evo) {
        net__closed_settle(net, R); /* releases the links in the same pass */
    } else {
        for (int i = 0; i < R->n; i++)
            settle_xfer(net, &R->x[i]);
        release_links(net, R);
    }
    R->settled = true;
}

static void round_done(hw_net *net, int32_t ri, sim_time now)
{
    net_round *R = &net->rounds[ri];
    if (!R->settled)
        settle_round(net, R);
    uint64_t tag = R->tag;
    int n = R->n;
    net__round_release(net, ri);
    net->flows_done += (uint64_t)n;
    for (int i = 0; i < n; i++)
        net->done(net->ctx, tag, now);
}

/* A flow needs a link of round `ri` at `now`: the round's transfers become ordinary flows
 * (finished ones complete now, waiting ones stay latent, running ones keep their progress). */
static void split_round(hw_net *net, int32_t ri, sim_time now)
{
    net_round *R = &net->rounds[ri];
    if (R->end <= now) {
        /* every transfer has ended: take the counters now; the round's event (at now)
         * still reports the completions */
        if (!R->settled)
            settle_round(net, R);
        return;
    }
    release_links(net, R);
    sim_eventq_cancel(net->q, R->ev);
    net->rounds_split++;
    if (R->evo) {
        net__closed_split(net, R, now);
        net__round_release(net, ri);
        return;
    }
    for (int i = 0; i < R->n; i++) {
        round_xfer x = R->x[i];
        if (x.end <= now) {
            settle_xfer(net, &x);
            /* an empty flow: completes at its activation, now */
            net__start_flow(net, now - x.route->latency_ps, x.route, 0, R->tag);
            continue;
        }
        if (x.act > now) {
            net__start_flow(net, x.act - x.route->latency_ps, x.route, x.bytes, R->tag);
            continue;
        }
        /* running since x.act at x.rate: an active flow with its progress */
        int32_t id = net__flow_slot(net, R->tag, FLOW_ACTIVE, x.route, x.bytes, x.rate, x.act);
        net_flow *f = &net->flows[id];
        for (int k = 0; k < x.route->n; k++) {
            f->hop[k].link = x.route->links[k];
            f->hop[k].weight = 1;
        }
        f->n_links = x.route->n;
        advance(net, f, now);
        net__attach_links(net, id, now);
        for (int k = 0; k < f->n_links; k++)
            net->links[f->hop[k].link].busy_since = x.act; /* it had the link to itself */
    }
    net__round_release(net, ri);
}

void hw_net_handle(hw_net *net, sim_event *ev)
{
    SIM_ASSERT(ev->type == net->type, "event type %u", ev->type);
    sim_time now = ev->time;
    int kind = net_ev_kind(ev);
    int32_t id = net_ev_id(ev);
    sim_eventq_free(net->q, ev);
    switch (kind) {
    case NET_EV_ACTIVATE: {
        net_flow *f = &net->flows[id];
        f->ev = NULL;
        f->last = now;
        for (int k = 0; k < f->n_links; k++)
            net->links[f->hop[k].link].n_latent--;
        if (f->n_links == 0 || f->remaining <= 0) {
            finish_flow(net, id, now);
            return;
        }
        f->state = FLOW_ACTIVE;
        f->rate = 0;
        attach(net, id, now);
        return;
    }
    case NET_EV_COMPLETE: {
        net_flow *f = &net->flows[id];
        f->ev = NULL;
        advance(net, f, now);
        /* what rounding left is delivered now: the event sits at the ceiling of the exact
         * completion time */
        for (int k = 0; k < f->n_links; k++)
            net__add_bytes(net, f->hop[k].link, f->remaining * f->hop[k].weight);
        f->remaining = 0;
        finish_flow(net, id, now);
        return;
    }
    case NET_EV_RESOLVE:
        net->resolve_pending = false;
        resolve(net, now);
        return;
    case NET_EV_ROUND:
        round_done(net, id, now);
        return;
    }
    SIM_ASSERT(0, "network event kind %d", kind);
}

void hw_net_finish(hw_net *net, sim_time now)
{
    for (int32_t i = 0; i < net->n_flows; i++)
        if (net->flows[i].state == FLOW_ACTIVE)
            advance(net, &net->flows[i], now);
    for (int l = 0; l < net->n_links; l++) {
        net_link *lk = &net->links[l];
        if (lk->n_active > 0) {
            net__add_busy(net, l, now - lk->busy_since);
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
    const net_link *l = &net->links[i];
    hw_link_stats *st = &net->stats[i];
    st->bytes = net__link_bytes(l);
    st->busy_ps = l->busy_ps;
    return st;
}

void hw_net_add_traffic(hw_net *net, int i, double bytes, sim_time busy_ps)
{
    SIM_ASSERT(i >= 0 && i < net->n_links && bytes >= 0 && busy_ps >= 0, "link %d", i);
    net__add_bytes(net, i, bytes);
    net__add_busy(net, i, busy_ps);
}

void hw_net_add_counts(hw_net *net, int i, int64_t whole, uint64_t frac, sim_time busy_ps)
{
    SIM_ASSERT(i >= 0 && i < net->n_links && whole >= 0 && busy_ps >= 0, "link %d", i);
    net__add_count(net, i, whole, frac);
    net__add_busy(net, i, busy_ps);
}

void hw_net_set_journal(hw_net *net, hw_net_journal_fn fn, void *ud)
{
    net->journal = fn;
    net->journal_ud = ud;
}

bool hw_net_idle(const hw_net *net)
{
    return net->live_flows == 0 && net->live_rounds == 0 && !net->resolve_pending &&
           net->n_dirty == 0;
}

double hw_net_flow_rate(const hw_net *net, uint64_t tag)
{
    for (int32_t i = 0; i < net->n_flows; i++)
        if (net->flows[i].state == FLOW_ACTIVE && net->flows[i].tag == tag)
            return net->flows[i].rate;
    return -1;
}

uint64_t hw_net_flows_done(const hw_net *net) { return net->flows_done; }
uint64_t hw_net_solves(const hw_net *net) { return net->solves; }
uint64_t hw_net_flows_resolved(const hw_net *net) { return net->resolved; }
uint64_t hw_net_rounds_isolated(const hw_net *net) { return net->rounds_fast; }
uint64_t hw_net_rounds_split(const hw_net *net) { return net->rounds_split; }
