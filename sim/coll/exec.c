/* Execution of collective schedules on the flow-level network (see exec.h). */
#include "core/sim.h"

#include <math.h>

#include "coll/exec.h"

static int device_of(const coll_exec *x, hw_topo *topo, int member)
{
    if (member == COLL_SWITCH) {
        SIM_ASSERT(x->switch_dev >= 0, "NVLS transfer without an NVSwitch");
        return x->switch_dev;
    }
    return hw_topo_gpu_device(topo, x->gpu[member]);
}

void coll_exec_xfer_cost(const coll_exec *x, hw_topo *topo, const coll_xfer *xf, sim_time *lat_ps,
                         double *wire_bytes, const hw_route **route)
{
    const hw_route *r;
    if (x->sched->p2p) {
        /* NCCL's point-to-point path (PXN); the pair table holds the group's collective
         * routes */
        r = hw_topo_route_p2p(topo, device_of(x, topo, xf->src), device_of(x, topo, xf->dst));
    } else if (x->pair_routes && xf->src >= 0 && xf->dst >= 0) {
        /* the group's member-pair table: an index instead of a hash lookup */
        const hw_route **slot = &x->pair_routes[(size_t)xf->src * (size_t)x->n_members +
                                                (size_t)xf->dst];
        if (!*slot)
            *slot = hw_topo_route(topo, device_of(x, topo, xf->src), device_of(x, topo, xf->dst));
        r = *slot;
    } else {
        r = hw_topo_route(topo, device_of(x, topo, xf->src), device_of(x, topo, xf->dst));
    }
    const hw_protocols *p = x->protocols;
    if (xf->src == COLL_SWITCH || xf->dst == COLL_SWITCH) {
        *lat_ps = p->nvls_step_ps;
        *wire_bytes = xf->bytes / p->nvls_efficiency;
    } else {
        hw_link_class c = (hw_link_class)r->narrow_cls;
        const hw_proto_params *pp = &p->proto[x->proto];
        *lat_ps = pp->step_ps[c];
        *wire_bytes = xf->bytes / pp->efficiency[c];
    }
    *route = r;
}

/* (the narrowest link of route r, INFINITY for a route of no link) */
static double narrowest_bw(hw_topo *topo, const hw_route *r)
{
    double bw = INFINITY;
    for (int k = 0; k < r->n; k++)
        bw = fmin(bw, hw_topo_link(topo, r->links[k])->bw_Bps);
    return bw;
}

/* The start delay of a transfer in a round after the collective's first, given its full
 * delay (protocol step latency + route latency). NCCL moves each step's data in slices of
 * the protocol's chunk through a FIFO of several slots (NCCL_STEPS), and a member forwards
 * a slice of step k+1 as soon as the matching slice of step k has arrived: the step latency
 * overlaps the transfer of the rest of the step, and only what outlasts it, delay - (bytes -
 * slice) / bandwidth, stays on the critical path (nothing for large steps, all of it when a
 * step is one slice). The bandwidth is the route's narrowest link at the protocol's
 * efficiency, without contention (with contention more of the latency hides: a bound). */
sim_time coll_exec_piped_delay(const coll_exec *x, hw_topo *topo, sim_time delay, double bytes,
                               double wire, const hw_route *r)
{
    double slice = (double)x->protocols->proto[x->proto].chunk_bytes;
    if (bytes <= slice || r->n == 0)
        return delay;
    sim_time cover = sim_time_from_s((bytes - slice) * (wire / bytes) / narrowest_bw(topo, r));
    return delay > cover ? delay - cover : 0;
}

sim_time coll_exec_queued_delay(hw_topo *topo, sim_time delay, double wire, const hw_route *r,
                                bool slot)
{
    if (!slot)
        return 0;
    double d = (double)sim_time_from_s(wire / narrowest_bw(topo, r));
    double q = 2 * (double)delay - (COLL_FIFO_SLOTS - 1) * d;
    return q > 0 ? (sim_time)llround(q) : 0;
}

int coll_exec_device(const coll_exec *x, hw_topo *topo, int member)
{
    return device_of(x, topo, member);
}

sim_time coll_exec_staging_ps(const coll_schedule *s, int round, size_t i, const hw_route *r)
{
    if (r->stage_ps == 0)
        return 0;
    const coll_xfer *xf = &s->xfers[i];
    double bytes = 0;
    for (size_t j = coll_round_first(s, round); j < coll_round_end(s, round); j++)
        if (s->xfers[j].src == xf->src && s->xfers[j].dst == xf->dst)
            bytes += s->xfers[j].bytes;
    return hw_route_staging_ps(r, bytes);
}

/* The cost of transfer i (of round `round`) of x's schedule. */
static void xfer_costs(const coll_exec *x, hw_topo *topo, int round, size_t i, coll_xfer_cost *c)
{
    const coll_schedule *s = x->sched;
    const coll_xfer *xf = &s->xfers[i];
    sim_time lat;
    coll_exec_xfer_cost(x, topo, xf, &lat, &c->wire, &c->route);
    /* a staged copy's hand-offs hold each chunk back: not latency a pipeline hides */
    sim_time stage = coll_exec_staging_ps(s, round, i, c->route);
    sim_time lat_only = lat + c->route->latency_ps - c->route->stage_ps;
    c->delay_ps = lat_only + stage;
    c->piped_ps = (coll_xfer_queued(s, i)
                       ? coll_exec_queued_delay(topo, lat_only, c->wire, c->route,
                                                coll_xfer_slot(s, i))
                       : coll_exec_piped_delay(x, topo, lat_only, xf->bytes, c->wire, c->route)) +
                  stage;
    c->stage_ps = stage;
}

/* (n m - min) / (n - 1), m = sum / w (coll_exec_dataflow_round) */
static sim_time dataflow_latency(int n, double w, double sum, sim_time least)
{
    SIM_ASSERT(n >= 2 && w > 0, "dataflow ring of %d members, %g bytes", n, w);
    double lat = (n * (sum / w) - (double)least) / (n - 1);
    return lat > 0 ? (sim_time)llround(lat) : 0;
}

void coll_dataflow_add(coll_dataflow *a, double bytes, sim_time delay, sim_time piped)
{
    a->w += bytes;
    a->d += bytes * (double)delay;
    a->p += bytes * (double)piped;
    a->dmin = !a->any || delay < a->dmin ? delay : a->dmin;
    a->pmin = !a->any || piped < a->pmin ? piped : a->pmin;
    a->any = true;
}

bool coll_dataflow_result(const coll_dataflow *a, int n, sim_time *delay, sim_time *piped)
{
    if (a->w <= 0)
        return false;
    *delay = dataflow_latency(n, a->w, a->d, a->dmin);
    *piped = dataflow_latency(n, a->w, a->p, a->pmin);
    return true;
}

void coll_exec_dataflow_round(const coll_schedule *s, int round, coll_xfer_cost *c)
{
    size_t first = coll_round_first(s, round), n = coll_round_end(s, round) - first;
    coll_dataflow a = {0};
    for (size_t i = 0; i < n; i++)
        coll_dataflow_add(&a, s->xfers[first + i].bytes, c[i].delay_ps - c[i].stage_ps,
                          c[i].piped_ps - c[i].stage_ps);
    sim_time md, mp;
    if (!coll_dataflow_result(&a, s->dataflow, &md, &mp))
        return;
    for (size_t i = 0; i < n; i++) {
        c[i].delay_ps = md + c[i].stage_ps;
        c[i].piped_ps = mp + c[i].stage_ps;
    }
}

coll_xfer_cost *coll_exec_costs(const coll_exec *x, hw_topo *topo)
{
    const coll_schedule *s = x->sched;
    coll_xfer_cost *c = sim_calloc(s->n_xfers + 1, sizeof *c);
    /* (a compacted schedule's repeated rounds share their transfers, and so their costs) */
    for (int r = 0; r < s->n_rounds; r++)
        if (r == 0 || coll_round_first(s, r) != coll_round_first(s, r - 1) ||
            coll_round_end(s, r) != coll_round_end(s, r - 1))
        {
            for (size_t i = coll_round_first(s, r); i < coll_round_end(s, r); i++)
                xfer_costs(x, topo, r, i, &c[i]);
            if (s->dataflow)
                coll_exec_dataflow_round(s, r, &c[coll_round_first(s, r)]);
        }
    return c;
}

static bool same_round(const coll_schedule *s, int a, int b)
{
    size_t fa = coll_round_first(s, a), fb = coll_round_first(s, b);
    size_t n = coll_round_end(s, a) - fa;
    if (coll_round_end(s, b) - fb != n)
        return false;
    if (fa == fb)
        return true;
    for (size_t i = 0; i < n; i++) {
        const coll_xfer *p = &s->xfers[fa + i], *q = &s->xfers[fb + i];
        if (p->src != q->src || p->dst != q->dst || p->bytes != q->bytes ||
            (s->chunked && s->front[fa + i] != s->front[fb + i]))
            return false;
    }
    return true;
}

coll_xfer_cost *coll_exec_round_costs(const coll_exec *x, hw_topo *topo, size_t max,
                                      uint32_t **cost_at)
{
    const coll_schedule *s = x->sched;
    *cost_at = NULL;
    if (s->n_rounds == 0)
        return NULL;
    uint32_t *at = sim_calloc((size_t)s->n_rounds, sizeof *at);
    bool *repeat = sim_calloc((size_t)s->n_rounds, sizeof *repeat);
    size_t n = 0;
    for (int r = 0; r < s->n_rounds; r++) {
        if (r > 0 && same_round(s, r - 1, r)) {
            repeat[r] = true;
            at[r] = at[r - 1];
            continue;
        }
        at[r] = (uint32_t)n; /* (an empty round takes no room: the next one starts here too) */
        n += coll_round_end(s, r) - coll_round_first(s, r);
        if (n > max || n > UINT32_MAX) {
            sim_free(at);
            sim_free(repeat);
            return NULL;
        }
    }
    coll_xfer_cost *c = sim_calloc(n + 1, sizeof *c);
    for (int r = 0; r < s->n_rounds; r++) {
        if (repeat[r])
            continue;
        for (size_t i = coll_round_first(s, r); i < coll_round_end(s, r); i++)
            xfer_costs(x, topo, r, i, &c[at[r] + (i - coll_round_first(s, r))]);
        if (s->dataflow)
            coll_exec_dataflow_round(s, r, &c[at[r]]);
    }
    sim_free(repeat);
    *cost_at = at;
    return c;
}

/* Starts the first non-empty round from x->round on; true when none is left. */
static bool start_round(coll_exec *x, hw_topo *topo, hw_net *net, sim_time now, uint64_t tag)
{
    const coll_schedule *s = x->sched;
    for (; x->round < s->n_rounds; x->round++) {
        size_t first = coll_round_first(s, x->round), last = coll_round_end(s, x->round);
        if (first == last)
            continue;
        x->outstanding = last - first;
        bool piped = x->started; /* a round after the first: its latency pipelines */
        x->started = true;
        hw_net_round_begin(net);
        if (x->costs) {
            /* round costs (cost_at): this round's start where its pattern's costs begin */
            size_t at = x->cost_at ? x->cost_at[x->round] : first;
            for (size_t i = first; i < last; i++) {
                const coll_xfer_cost *c = &x->costs[at + (i - first)];
                hw_net_round_add(net, now + (piped ? c->piped_ps : c->delay_ps), c->wire,
                                 c->route);
            }
            /* the round's cached costs and whether its latency pipelines determine its
             * transfers: their address (plus one byte when piped) is the round's key */
            hw_net_round_end_key(net, tag, (const char *)&x->costs[at] + piped);
            return false;
        }
        /* (costed as it runs: a dataflow round's latency first, as
         * coll_exec_dataflow_round, then the transfers) */
        coll_dataflow acc = {0};
        sim_time mean = 0, unused;
        bool have_mean = false;
        for (int pass = s->dataflow ? 0 : 1; pass < 2; pass++) {
            for (size_t i = first; i < last; i++) {
                const coll_xfer *xf = &s->xfers[i];
                sim_time lat;
                double wire;
                const hw_route *r;
                coll_exec_xfer_cost(x, topo, xf, &lat, &wire, &r);
                sim_time d = lat + r->latency_ps - r->stage_ps; /* as coll_exec_costs */
                if (piped)
                    d = coll_xfer_queued(s, i) ? coll_exec_queued_delay(topo, d, wire, r,
                                                                        coll_xfer_slot(s, i))
                                               : coll_exec_piped_delay(x, topo, d, xf->bytes,
                                                                       wire, r);
                if (pass == 0) {
                    coll_dataflow_add(&acc, xf->bytes, d, d);
                    continue;
                }
                hw_net_round_add(net, now + (have_mean ? mean : d) +
                                          coll_exec_staging_ps(s, x->round, i, r),
                                 wire, r);
            }
            if (pass == 0)
                have_mean = coll_dataflow_result(&acc, s->dataflow, &mean, &unused);
        }
        hw_net_round_end(net, tag);
        return false;
    }
    return true;
}

bool coll_exec_start(coll_exec *x, hw_topo *topo, hw_net *net, sim_time now, uint64_t tag)
{
    x->round = 0;
    x->outstanding = 0;
    x->started = false;
    if (x->sched->n_rounds == 0)
        return true;
    return start_round(x, topo, net, now + x->protocols->proto[x->proto].base_ps, tag);
}

bool coll_exec_flow_done(coll_exec *x, hw_topo *topo, hw_net *net, sim_time now, uint64_t tag)
{
    SIM_ASSERT(x->outstanding > 0, "collective: unexpected flow completion");
    if (--x->outstanding > 0)
        return false;
    x->round++;
    return start_round(x, topo, net, now, tag);
}
