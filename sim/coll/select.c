/* Algorithm and protocol selection by isolated cost estimates (see select.h). */
#include "core/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"

double coll_chunks(const hw_protocols *prot, hw_proto p, double bytes)
{
    double c = bytes / (double)prot->proto[p].chunk_bytes;
    return c < 1 ? 1 : c > 64 ? 64 : c;
}

double coll_estimate(const coll_target *t, const coll_exec *x, const coll_schedule *s)
{
    return coll_estimate_joint(1, t, x, &s);
}

/* A transfer of the round being estimated: its delays and its route. */
typedef struct est_xfer {
    sim_time delay, piped, stage;
    const hw_route *route;
    double wire; /* its bytes on the wire */
} est_xfer;

/* A transfer on one of its route's links: the link, the transfer's start and wire bytes. */
typedef struct link_use {
    int32_t link;
    double start, wire;
} link_use;

static int by_link_late_first(const void *pa, const void *pb)
{
    const link_use *a = pa, *b = pb;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    if (a->start != b->start)
        return a->start > b->start ? -1 : 1;
    return (a->wire > b->wire) - (a->wire < b->wire);
}

/* The end of a round whose transfers start apart: on each link, the latest over its
 * transfers' starts s of s + (the wire bytes of the transfers starting at s or later) /
 * bandwidth, when a link never idles once its last group has started (exact for one link;
 * flows sharing several links max-min fairly can end later). `on` is scratch. */
static double link_ends(hw_topo *topo, const est_xfer *pend, size_t n_pend, link_use **on,
                        size_t *cap)
{
    size_t n = 0;
    for (size_t i = 0; i < n_pend; i++)
        for (int k = 0; k < pend[i].route->n; k++) {
            SIM_GROW(*on, *cap, n + 1);
            (*on)[n++] = (link_use){.link = pend[i].route->links[k],
                                    .start = sim_time_to_s(pend[i].piped),
                                    .wire = pend[i].wire};
        }
    qsort(*on, n, sizeof **on, by_link_late_first);
    double end = 0, acc = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || (*on)[i].link != (*on)[i - 1].link)
            acc = 0;
        acc += (*on)[i].wire;
        end = fmax(end, (*on)[i].start + acc / hw_topo_link(topo, (*on)[i].link)->bw_Bps);
    }
    /* (a transfer with no link: its start) */
    for (size_t i = 0; i < n_pend; i++)
        if (pend[i].route->n == 0)
            end = fmax(end, sim_time_to_s(pend[i].piped));
    return end;
}

double coll_estimate_joint(size_t n, const coll_target *t, const coll_exec *x,
                           const coll_schedule *const *s)
{
    int rounds = 0;
    double total = 0, last = 0;
    for (size_t i = 0; i < n; i++) {
        rounds = SIM_MAX(rounds, s[i]->n_rounds);
        total = fmax(total, sim_time_to_s(x[i].protocols->proto[x[i].proto].base_ps));
    }
    if (rounds == 0)
        return 0; /* nothing to do: no launch either */
    int nl = hw_topo_link_count(t[0].topo);
    double *load = t[0].scratch ? t[0].scratch : sim_calloc((size_t)nl, sizeof *load);
    int32_t *touched = NULL;
    size_t n_touched = 0, cap_touched = 0;
    est_xfer *pend = NULL;
    size_t cap_pend = 0;
    link_use *on = NULL; /* rounds whose transfers start apart: each (link, transfer) */
    size_t cap_on = 0;
    for (int r = 0; r < rounds; r++) {
        bool again = r > 0;
        for (size_t i = 0; i < n && again; i++)
            again = r < s[i]->n_rounds && coll_schedule_round_repeats(s[i], r);
        if (again) {
            total += last;
            continue;
        }
        /* the first round pays its full latency, later ones only what their steps do not
         * hide (coll_exec_piped_delay); a repeat costs what a later round does. Pass 1: the
         * wire bytes each link carries in the round */
        size_t n_pend = 0;
        for (size_t j = 0; j < n; j++) {
            if (r >= s[j]->n_rounds)
                continue;
            size_t from = n_pend;
            for (size_t i = coll_round_first(s[j], r); i < coll_round_end(s[j], r); i++) {
                sim_time lat;
                double wire;
                const hw_route *route;
                const coll_xfer *xf = &s[j]->xfers[i];
                coll_exec_xfer_cost(&x[j], t[j].topo, xf, &lat, &wire, &route);
                lat += route->latency_ps - route->stage_ps;
                sim_time stage = coll_exec_staging_ps(s[j], r, i, route); /* as exec.c */
                SIM_GROW(pend, cap_pend, n_pend + 1);
                pend[n_pend++] = (est_xfer){
                    .delay = lat + stage,
                    .piped = (coll_xfer_queued(s[j], i)
                                  ? coll_exec_queued_delay(t[j].topo, lat, wire, route,
                                                           coll_xfer_slot(s[j], i))
                                  : coll_exec_piped_delay(&x[j], t[j].topo, lat, xf->bytes,
                                                          wire, route)) +
                             stage,
                    .stage = stage,
                    .route = route,
                    .wire = wire};
                for (int k = 0; k < route->n; k++) {
                    int32_t l = route->links[k];
                    if (load[l] == 0) {
                        SIM_GROW(touched, cap_touched, n_touched + 1);
                        touched[n_touched++] = l;
                    }
                    load[l] += wire;
                }
            }
            if (s[j]->dataflow) { /* as coll_exec_dataflow_round */
                size_t i0 = coll_round_first(s[j], r);
                coll_dataflow a = {0};
                for (size_t i = from; i < n_pend; i++)
                    coll_dataflow_add(&a, s[j]->xfers[i0 + (i - from)].bytes,
                                      pend[i].delay - pend[i].stage,
                                      pend[i].piped - pend[i].stage);
                sim_time md, mp;
                if (coll_dataflow_result(&a, s[j]->dataflow, &md, &mp))
                    for (size_t i = from; i < n_pend; i++) {
                        pend[i].delay = md + pend[i].stage;
                        pend[i].piped = mp + pend[i].stage;
                    }
            }
        }
        /* pass 2: each transfer ends after its delay and its most loaded link's time; the
         * round when the last one does. Where the transfers start apart (a stream's first
         * piece beside queued ones, a piece waiting for a slot), a link that never idles
         * once loaded ends its round at the latest, over the starts s of its transfers, of
         * s + (the wire bytes of those starting at s or later) / bandwidth (link_ends) */
        bool apart = false;
        for (size_t i = 1; i < n_pend && !apart; i++)
            apart = pend[i].piped != pend[0].piped;
        double first = 0;
        last = 0;
        for (size_t i = 0; i < n_pend; i++) {
            const hw_route *route = pend[i].route;
            double busy = 0;
            for (int k = 0; k < route->n; k++)
                busy = fmax(busy, load[route->links[k]] /
                                      hw_topo_link(t[0].topo, route->links[k])->bw_Bps);
            first = fmax(first, sim_time_to_s(pend[i].delay) + busy);
            if (!apart)
                last = fmax(last, sim_time_to_s(pend[i].piped) + busy);
        }
        if (apart)
            last = link_ends(t[0].topo, pend, n_pend, &on, &cap_on);
        for (size_t i = 0; i < n_touched; i++)
            load[touched[i]] = 0;
        n_touched = 0;
        total += r == 0 ? first : last;
    }
    if (!t[0].scratch)
        sim_free(load);
    sim_free(on);
    sim_free(touched);
    sim_free(pend);
    return total;
}

void coll_estimate_links(const coll_target *t, const coll_exec *x, const coll_schedule *s,
                         double scale, double *bytes, double *busy_s, double *tmp)
{
    int nl = hw_topo_link_count(t->topo);
    double *load = t->scratch ? t->scratch : sim_calloc((size_t)nl, sizeof *load);
    double *busy = tmp; /* per link: its longest transfer in the round */
    int32_t *touched = NULL;
    size_t n_touched = 0, cap_touched = 0;
    for (int r = 0; r < s->n_rounds; r++) {
        if (r == 0 || !coll_schedule_round_repeats(s, r)) {
            /* a new pattern: forget the previous round's, sum this one's loads, then time
             * each transfer by its most loaded link */
            for (size_t i = 0; i < n_touched; i++)
                load[touched[i]] = busy[touched[i]] = 0;
            n_touched = 0;
            for (int pass = 0; pass < 2; pass++)
                for (size_t i = coll_round_first(s, r); i < coll_round_end(s, r); i++) {
                    sim_time lat;
                    double wire;
                    const hw_route *route;
                    coll_exec_xfer_cost(x, t->topo, &s->xfers[i], &lat, &wire, &route);
                    double take = 0;
                    for (int k = 0; k < route->n; k++) {
                        int32_t l = route->links[k];
                        if (pass == 1) {
                            take = fmax(take, load[l] / hw_topo_link(t->topo, l)->bw_Bps);
                            continue;
                        }
                        if (load[l] == 0) {
                            SIM_GROW(touched, cap_touched, n_touched + 1);
                            touched[n_touched++] = l;
                        }
                        load[l] += wire;
                    }
                    for (int k = 0; pass == 1 && k < route->n; k++)
                        busy[route->links[k]] = fmax(busy[route->links[k]], take);
                }
        }
        for (size_t i = 0; i < n_touched; i++) {
            int32_t l = touched[i];
            bytes[l] += scale * load[l];
            busy_s[l] += scale * busy[l];
        }
    }
    for (size_t i = 0; i < n_touched; i++)
        load[touched[i]] = busy[touched[i]] = 0;
    if (!t->scratch)
        sim_free(load);
    sim_free(touched);
}

void coll_prefetch_routes(const coll_target *t, coll_op op, double bytes, int root)
{
    coll_schedule tmp;
    coll_schedule_init(&tmp);
    int32_t *src = NULL, *dst = NULL;
    size_t n = 0, cap_src = 0, cap_dst = 0;
    for (int a = 0; a < COLL_ALGO_COUNT; a++) {
        if (a == COLL_ALGO_NVLS && t->switch_dev < 0)
            continue;
        if (coll_build(&tmp, (coll_algo)a, op, t->group, bytes, root, 1) != 0)
            continue;
        coll_exec x = {.sched = &tmp, .gpu = t->gpu, .switch_dev = t->switch_dev,
                       .protocols = t->protocols, .pair_routes = t->pair_routes,
                           .n_members = t->group->n};
        SIM_GROW(src, cap_src, n + tmp.n_xfers);
        SIM_GROW(dst, cap_dst, n + tmp.n_xfers);
        for (size_t i = 0; i < tmp.n_xfers; i++, n++) {
            src[n] = coll_exec_device(&x, t->topo, tmp.xfers[i].src);
            dst[n] = coll_exec_device(&x, t->topo, tmp.xfers[i].dst);
            if (tmp.p2p) /* the network part of a PXN route starts at the proxy */
                src[n] = hw_topo_p2p_source(t->topo, src[n], dst[n]);
        }
    }
    hw_topo_route_many(t->topo, n, src, dst);
    sim_free(src);
    sim_free(dst);
    coll_schedule_clear(&tmp);
}

static int cmp_i32(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

bool coll_one_per_node(const coll_group *g)
{
    if (!g->node || g->n < 2)
        return true;
    int32_t *v = sim_calloc((size_t)g->n, sizeof *v);
    memcpy(v, g->node, (size_t)g->n * sizeof *v);
    qsort(v, (size_t)g->n, sizeof *v, cmp_i32);
    bool distinct = true;
    for (int i = 1; i < g->n && distinct; i++)
        distinct = v[i] != v[i - 1];
    sim_free(v);
    return distinct;
}

bool coll_nccl_algo(const coll_group *g, coll_op op, coll_algo a)
{
    switch (op) {
    case COLL_ALL_REDUCE:
        return a == COLL_ALGO_RING || a == COLL_ALGO_TREE || a == COLL_ALGO_NVLS;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
        /* PAT, for one GPU per node only (ncclPatEnable), stood for by halving-doubling */
        return a == COLL_ALGO_RING || (a == COLL_ALGO_HD && coll_one_per_node(g));
    case COLL_ALL_TO_ALL:
        return a == COLL_ALGO_DIRECT;
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_SEND_RECV:
    case COLL_RING_SHIFT:
        return a == COLL_ALGO_RING;
    case COLL_OP_COUNT:
        break;
    }
    return false;
}

/* Whether a route touches a CPU socket (NCCL's path types PHB and SYS). */
static bool through_cpu(hw_topo *topo, const hw_route *r)
{
    for (int k = 0; k < r->n; k++) {
        const hw_link *l = hw_topo_link(topo, r->links[k]);
        if (hw_topo_device(topo, l->src)->kind == HW_DEV_CPU ||
            hw_topo_device(topo, l->dst)->kind == HW_DEV_CPU)
            return true;
    }
    return false;
}

static bool all_nvlink(hw_topo *topo, const hw_route *r)
{
    for (int k = 0; k < r->n; k++)
        if (hw_topo_link(topo, r->links[k])->cls != HW_LINK_NVLINK)
            return false;
    return true;
}

/* A member and its node (for sorting). */
typedef struct sel_member {
    int32_t node, member;
} sel_member;

static int by_node_then_member(const void *pa, const void *pb)
{
    const sel_member *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->member > b->member) - (a->member < b->member);
}

bool coll_ll128_paths(const coll_target *t)
{
    const coll_group *g = t->group;
    int n = g->n;
    if (n < 2)
        return true;
    sel_member *mn = sim_calloc((size_t)n, sizeof *mn);
    for (int m = 0; m < n; m++)
        mn[m] = (sel_member){.node = g->node ? g->node[m] : m, .member = m};
    qsort(mn, (size_t)n, sizeof *mn, by_node_then_member);
    bool ok = true;
    int head = mn[0].member, prev_head = -1;
    for (int i = 0; i < n && ok; i++) {
        int m = mn[i].member;
        if (i > 0 && mn[i].node == mn[i - 1].node) {
            /* within a node: NCCL's typeIntra <= PATH_NVB, an all-NVLink path */
            ok = all_nvlink(t->topo, hw_topo_route(t->topo, hw_topo_gpu_device(t->topo, t->gpu[head]),
                                                   hw_topo_gpu_device(t->topo, t->gpu[m])));
            continue;
        }
        /* a node's first member: from the previous node's, NCCL's typeInter <= PATH_PXB,
         * GPU to NIC through PCIe switches only (no CPU on the way) */
        head = m;
        if (prev_head >= 0)
            ok = !through_cpu(t->topo,
                              hw_topo_route(t->topo, hw_topo_gpu_device(t->topo, t->gpu[prev_head]),
                                            hw_topo_gpu_device(t->topo, t->gpu[head])));
        prev_head = head;
    }
    sim_free(mn);
    return ok;
}

int coll_select(const coll_target *t, coll_op op, double bytes, int root, int algo, int proto,
                coll_choice *out, coll_schedule *sched)
{
    coll_schedule tmp;
    coll_schedule_init(&tmp);
    bool found = false;
    coll_choice best = {0};
    /* LL128 only where NCCL enables it by default, when the protocol is chosen here */
    bool ll128 = proto >= 0 || !t->protocols->proto[HW_PROTO_LL128].enabled ||
                 (t->ll128 ? t->ll128 > 0 : coll_ll128_paths(t));
    for (int a = 0; a < COLL_ALGO_COUNT; a++) {
        if (algo >= 0 && a != algo)
            continue;
        if (algo < 0 && !coll_nccl_algo(t->group, op, (coll_algo)a))
            continue;
        if (a == COLL_ALGO_NVLS && t->switch_dev < 0)
            continue;
        /* NVLS and PAT run Simple only in NCCL; halving-doubling chosen for itself keeps
         * every protocol */
        bool simple_only = a == COLL_ALGO_NVLS || (a == COLL_ALGO_HD && algo < 0);
        /* the schedule in tmp, by its chunk count (0 when the algorithm does not pipeline
         * this operation: one build serves every protocol) */
        bool pipelined = coll_algo_pipelined((coll_algo)a, op);
        double built = -1;
        for (int p = 0; p < HW_PROTO_COUNT; p++) {
            if ((proto >= 0 && p != proto) || (proto < 0 && !t->protocols->proto[p].enabled))
                continue;
            if (p == HW_PROTO_LL128 && !ll128)
                continue;
            if (simple_only && p != HW_PROTO_SIMPLE && proto < 0)
                continue; /* NVLS has its own transport: costed once, with Simple's launch */
            double chunks = coll_chunks(t->protocols, (hw_proto)p, bytes);
            double key = pipelined ? chunks : 0;
            if (key != built) {
                if (coll_build(&tmp, (coll_algo)a, op, t->group, bytes, root, chunks) != 0)
                    break; /* the algorithm does not do this operation here */
                built = key;
            }
            coll_exec x = {.sched = &tmp, .gpu = t->gpu, .switch_dev = t->switch_dev,
                           .proto = (hw_proto)p, .nvls = a == COLL_ALGO_NVLS,
                           .protocols = t->protocols, .pair_routes = t->pair_routes,
                           .n_members = t->group->n};
            double est = coll_estimate(t, &x, &tmp);
            if (!found || est < best.est_s) {
                best = (coll_choice){.algo = (coll_algo)a, .proto = (hw_proto)p,
                                     .chunks = chunks, .est_s = est};
                found = true;
            }
        }
    }
    coll_schedule_clear(&tmp);
    if (!found)
        return SIM_ENOTSUP;
    *out = best;
    if (sched)
        coll_build(sched, best.algo, op, t->group, bytes, root, best.chunks);
    return 0;
}
