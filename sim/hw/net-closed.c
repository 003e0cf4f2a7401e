/* Closed rounds: a round whose transfers share links with one another but with no other
 * traffic (a ring step whose crossings meet on a fabric up-link, an all-to-all whose flows
 * share each member's port) evolves by max-min alone, from its own transfers. That evolution
 * is simulated once, as ordinary flows on a private net over the same topology, and every
 * later round of the same transfers (routes, bytes, activations relative to the round's
 * first) is timed from it with one event, its links held as an isolated round's are. The
 * evolution is shift-invariant (the solver works on time differences and on bytes), so a
 * round timed from the memo ends when its own flows would have, and its links carry what
 * they would have carried.
 *
 * A flow that needs one of its links while it runs turns the round into ordinary flows at
 * that instant: the evolution is run again on the private net up to then and each transfer
 * moves to the shared net as it stands there (done, waiting for its activation, or active
 * with its remaining bytes, its rate and the time of its last advance); the shared net then
 * re-solves with the newcomer. Results can differ from the flow path's only by float
 * rounding: a completion, when the shared net re-solves other flows at the very same
 * picosecond (its removals-only shortcut then freezes a different set), by a picosecond or
 * so; and a link's byte counter in its last bits (a round's bytes are added as one sum).
 *
 * Memo: an open-addressing table of evolutions keyed by a hash of the transfers, compared
 * in full on a hit; at MEMO_BYTES_MAX it is emptied (rounds in flight keep theirs). The
 * choice between a closed round and flows depends only on the simulation's own history, so
 * it is the same in every run of the same input. */
#include "core/sim.h"

#include <math.h>
#include <string.h>

#include "hw/net-internal.h"

#define MEMO_BYTES_MAX ((size_t)64 << 20)

/* A memo entry whose rounds were turned into flows more often than not, after this many
 * rounds, times no more rounds: each split runs the evolution again up to the split. */
#define SPLIT_TRIES 4

/* The private net's completions: which transfers finished, and the last time. */
typedef struct closed_log {
    bool *done;
    sim_time last;
} closed_log;

static void closed_done(void *ctx, uint64_t tag, sim_time now)
{
    closed_log *log = ctx;
    log->done[tag] = true;
    log->last = SIM_MAX(log->last, now);
}

/* Folds v into h (boost::hash_combine's step, then MurmurHash3's fmix64; core/sim.h). */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + SIM_GOLDEN64 + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= SIM_FMIX64_C1;
    h ^= h >> 33;
    h *= SIM_FMIX64_C2;
    return h ^ (h >> 33);
}

static uint64_t xfers_hash(const round_xfer *x, int n, sim_time base)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, &x[i].bytes, sizeof b);
        h = mix(h, (uint64_t)(uintptr_t)x[i].route);
        h = mix(h, b);
        h = mix(h, (uint64_t)(x[i].act - base));
    }
    return h;
}

static bool xfers_equal(const net_evolution *e, const round_xfer *x, int n, sim_time base)
{
    if (e->n != n)
        return false;
    for (int i = 0; i < n; i++)
        if (e->x[i].route != x[i].route || e->x[i].bytes != x[i].bytes ||
            e->x[i].act != x[i].act - base)
            return false;
    return true;
}

void net__evolution_put(net_evolution *e)
{
    SIM_ASSERT(e->refs > 0, "evolution released twice");
    if (--e->refs > 0)
        return;
    sim_free(e->x);
    sim_free(e->link);
    sim_free(e->bytes);
    sim_free(e->busy_ps);
    sim_free(e);
}

static size_t evolution_bytes(const net_evolution *e)
{
    return sizeof *e + (size_t)e->n * sizeof *e->x +
           (size_t)e->n_links * (sizeof *e->link + sizeof *e->bytes + sizeof *e->busy_ps);
}

static void memo_clear(hw_net *net)
{
    for (size_t i = 0; i < net->cap_memo; i++)
        if (net->memo[i]) {
            net__evolution_put(net->memo[i]);
            net->memo[i] = NULL;
        }
    net->n_memo = 0;
    net->memo_bytes = 0;
}

void net__closed_destroy(hw_net *net)
{
    memo_clear(net);
    sim_free(net->memo);
    net->memo = NULL;
    net->cap_memo = 0;
    if (net->priv) {
        net->priv->q = NULL; /* its queues were per run, already destroyed */
        hw_net_destroy(net->priv);
        net->priv = NULL;
    }
}

static net_evolution *memo_find(const hw_net *net, uint64_t h, const round_xfer *x, int n,
                                sim_time base)
{
    if (net->cap_memo == 0)
        return NULL;
    for (size_t i = h & (net->cap_memo - 1);; i = (i + 1) & (net->cap_memo - 1)) {
        net_evolution *e = net->memo[i];
        if (!e)
            return NULL;
        if (e->hash == h && xfers_equal(e, x, n, base))
            return e;
    }
}

static void memo_insert(hw_net *net, net_evolution *e)
{
    size_t add = evolution_bytes(e);
    if (net->memo_bytes + add > (net->memo_limit ? net->memo_limit : MEMO_BYTES_MAX))
        memo_clear(net);
    if (2 * (net->n_memo + 1) > net->cap_memo) {
        size_t cap = net->cap_memo ? 2 * net->cap_memo : 64;
        net_evolution **old = net->memo;
        size_t old_cap = net->cap_memo;
        net->memo = sim_calloc(cap, sizeof *net->memo);
        net->cap_memo = cap;
        for (size_t i = 0; i < old_cap; i++) {
            if (!old[i])
                continue;
            size_t j = old[i]->hash & (cap - 1);
            while (net->memo[j])
                j = (j + 1) & (cap - 1);
            net->memo[j] = old[i];
        }
        sim_free(old);
    }
    size_t j = e->hash & (net->cap_memo - 1);
    while (net->memo[j])
        j = (j + 1) & (net->cap_memo - 1);
    net->memo[j] = e;
    e->refs++;
    net->n_memo++;
    net->memo_bytes += add;
}

/* The private net, created on first use; its event queue is made per run. */
static hw_net *private_net(hw_net *net, closed_log *log)
{
    if (!net->priv) {
        net->priv = hw_net_create(net->topo, NULL, 0, closed_done, log);
        hw_net_set_rounds(net->priv, false);
    }
    net->priv->ctx = log;
    return net->priv;
}

/* Runs transfers x[0..n) (act relative to the base) on the private net, from time t0 for
 * the base, through every event at or before t0 + `stop` (SIM_TIME_NEVER: to the end): a
 * transfer that ends at the split instant has ended, as an isolated round's does. */
static hw_net *evolve(hw_net *net, const round_xfer *x, int n, sim_time base, sim_time stop,
                      closed_log *log)
{
    hw_net *p = private_net(net, log);
    p->q = sim_eventq_create();
    sim_time t0 = 0;
    for (int i = 0; i < n; i++)
        t0 = SIM_MAX(t0, x[i].route->latency_ps);
    p->t0 = t0;
    for (int i = 0; i < n; i++)
        net__start_flow(p, t0 + (x[i].act - base) - x[i].route->latency_ps, x[i].route,
                        x[i].bytes, (uint64_t)i);
    sim_time until = stop == SIM_TIME_NEVER ? SIM_TIME_NEVER : t0 + stop;
    while (sim_eventq_size(p->q) > 0 && sim_eventq_peek_time(p->q) <= until)
        hw_net_handle(p, sim_eventq_pop(p->q));
    return p;
}

/* Empties the private net after a run: its flows, its queue, and the links x[] crossed. */
static void private_reset(hw_net *p, const round_xfer *x, int n)
{
    sim_eventq_destroy(p->q);
    p->q = NULL;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < x[i].route->n; k++) {
            net_link *l = &p->links[x[i].route->links[k]];
            l->n_members = l->n_latent = l->n_active = 0;
            l->whole = 0;
            l->frac = 0;
            l->busy_ps = 0;
            l->busy_since = 0;
            l->dirty = false;
            l->heap_pos = -1;
        }
    p->n_flows = 0;
    p->free_head = -1;
    p->live_flows = 0;
    p->n_dirty = 0;
    p->resolve_pending = false;
    p->theta = INFINITY;
}

/* Simulates transfers x[0..n) of the pending round once and records what its links carry. */
static net_evolution *evolution_new(hw_net *net, const round_xfer *x, int n, sim_time base,
                                    uint64_t h)
{
    closed_log log = {.done = sim_calloc((size_t)n, sizeof *log.done)};
    hw_net *p = evolve(net, x, n, base, SIM_TIME_NEVER, &log);
    net_evolution *e = sim_calloc(1, sizeof *e);
    e->hash = h;
    e->n = n;
    e->x = sim_calloc((size_t)n, sizeof *e->x);
    for (int i = 0; i < n; i++) {
        SIM_ASSERT(log.done[i], "closed round: transfer %d of %d never finished", i, n);
        e->x[i] = (round_xfer){.route = x[i].route, .act = x[i].act - base, .bytes = x[i].bytes};
    }
    e->end = log.last - p->t0;
    /* the links crossed, each once, with their counters */
    if (++p->stamp == 0)
        p->stamp = 1;
    size_t cap = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < x[i].route->n; k++) {
            int32_t li = x[i].route->links[k];
            net_link *l = &p->links[li];
            if (l->stamp == p->stamp)
                continue;
            l->stamp = p->stamp;
            if ((size_t)e->n_links == cap) {
                cap = cap ? 2 * cap : 16;
                e->link = sim_realloc_array(e->link, cap, sizeof *e->link);
                e->bytes = sim_realloc_array(e->bytes, cap, sizeof *e->bytes);
                e->busy_ps = sim_realloc_array(e->busy_ps, cap, sizeof *e->busy_ps);
            }
            e->link[e->n_links] = li;
            e->bytes[e->n_links] = net__link_bytes(l);
            e->busy_ps[e->n_links] = l->busy_ps;
            e->n_links++;
        }
    private_reset(p, x, n);
    sim_free(log.done);
    net->rounds_evolved++;
    return e;
}

/* A round whose links carry nothing else (its transfers may share them among themselves). */
static bool round_closed(hw_net *net)
{
    if (!net->rounds_enabled || net->n_pending < 2)
        return false;
    for (int i = 0; i < net->n_pending; i++) {
        const round_xfer *x = &net->pending[i];
        if (x->bytes <= 0 || x->route->n == 0)
            return false;
        for (int k = 0; k < x->route->n; k++) {
            if (!net__link_free(&net->links[x->route->links[k]]))
                return false;
        }
    }
    return true;
}

static uint64_t key_hash(const void *key)
{
    return mix(0x6b6579ULL, (uint64_t)(uintptr_t)key);
}

static net_evolution *find_key(const hw_net *net, const void *key)
{
    if (net->cap_memo == 0)
        return NULL;
    uint64_t h = key_hash(key);
    for (size_t i = h & (net->cap_memo - 1);; i = (i + 1) & (net->cap_memo - 1)) {
        net_evolution *e = net->memo[i];
        if (!e)
            return NULL;
        if (e->hash == h && e->key == key)
            return e;
    }
}

/* The pending round's first activation: the time its record's activations are relative to. */
static sim_time pending_base(const hw_net *net)
{
    sim_time base = SIM_TIME_NEVER;
    for (int i = 0; i < net->n_pending; i++)
        base = SIM_MIN(base, net->pending[i].act);
    return base;
}

/* Times the pending round (first activation at `base`) from evolution e with one event,
 * holding its links. */
static void time_round(hw_net *net, uint64_t tag, net_evolution *e, sim_time base)
{
    int n = net->n_pending;
    SIM_ASSERT(n == e->n, "closed round of %d transfers timed by an evolution of %d", n, e->n);
    int32_t ri = net__round_alloc(net, n, false); /* its transfers are the record's */
    net_round *R = &net->rounds[ri];
    R->tag = tag;
    R->evo = e;
    e->refs++; /* the round's */
    e->uses++;
    R->base = base;
    R->end = base + e->end;
    for (int i = 0; i < e->n_links; i++)
        net->links[e->link[i]].round = ri;
    sim_event *ev = sim_eventq_alloc(net->q);
    ev->type = net->type;
    ev->a = NET_EV_ROUND;
    ev->c = ri;
    R->ev = ev;
    sim_eventq_push(net->q, ev, R->end);
    net->rounds_fast++;
    net->rounds_closed++;
}

/* Whether transfers timed by e keep meeting other traffic: each split runs the evolution
 * again, so after SPLIT_TRIES rounds, more splits than not leave them to the ordinary path. */
static bool split_too_often(const net_evolution *e)
{
    return e->uses >= SPLIT_TRIES && e->splits * 2 > e->uses;
}

bool net__closed_keyed(hw_net *net, uint64_t tag, const void *key)
{
    net_evolution *e = find_key(net, key);
    if (!e || split_too_often(e))
        return false;
    for (int i = 0; i < e->n_links; i++)
        if (!net__link_free(&net->links[e->link[i]]))
            return false;
    time_round(net, tag, e, pending_base(net));
    return true;
}

bool net__closed_round(hw_net *net, uint64_t tag, const void *key)
{
    if (!round_closed(net))
        return false;
    int n = net->n_pending;
    const round_xfer *x = net->pending;
    sim_time base = pending_base(net);
    uint64_t h = key ? key_hash(key) : xfers_hash(x, n, base);
    net_evolution *e = key ? find_key(net, key) : memo_find(net, h, x, n, base);
    if (e && split_too_often(e))
        return false;
    if (!e) {
        e = evolution_new(net, x, n, base, h);
        e->key = key;
        memo_insert(net, e); /* the memo's reference */
    }
    time_round(net, tag, e, base);
    return true;
}

void net__closed_settle(hw_net *net, net_round *R)
{
    const net_evolution *e = R->evo;
    for (int i = 0; i < e->n_links; i++) {
        net_link *l = &net->links[e->link[i]];
        net__add_bytes(net, e->link[i], e->bytes[i]);
        net__add_busy(net, e->link[i], e->busy_ps[i]);
        l->round = -1;
    }
}

void net__closed_split(hw_net *net, net_round *R, sim_time now)
{
    int n = R->n;
    R->evo->splits++;
    closed_log log = {.done = sim_calloc((size_t)n, sizeof *log.done)};
    /* the record's transfers, activations relative to the round's base */
    const round_xfer *xs = R->evo->x;
    hw_net *p = evolve(net, xs, n, 0, now - R->base, &log);
    sim_time shift = R->base - p->t0; /* private time + shift = shared time */
    /* the private flows by transfer (tags are transfer indices) */
    int32_t *flow_of = sim_calloc((size_t)n, sizeof *flow_of);
    for (int i = 0; i < n; i++)
        flow_of[i] = -1;
    for (int32_t id = 0; id < p->n_flows; id++)
        if (p->flows[id].state != FLOW_FREE)
            flow_of[p->flows[id].tag] = id;
    /* what the links (the record's, each once) carried so far */
    for (int i = 0; i < R->evo->n_links; i++) {
        int32_t li = R->evo->link[i];
        net__add_bytes(net, li, net__link_bytes(&p->links[li]));
        net__add_busy(net, li, p->links[li].busy_ps);
    }
    for (int i = 0; i < n; i++) {
        const round_xfer *x = &xs[i];
        int32_t pid = flow_of[i];
        if (log.done[i] || pid < 0) {
            /* finished: an empty flow completes at its activation, now */
            net__start_flow(net, now - x->route->latency_ps, x->route, 0, R->tag);
            continue;
        }
        const net_flow *pf = &p->flows[pid];
        if (pf->state == FLOW_LATENT) {
            net__start_flow(net, R->base + x->act - x->route->latency_ps, x->route, x->bytes,
                            R->tag);
            continue;
        }
        int32_t id = net__flow_slot(net, R->tag, FLOW_ACTIVE, x->route, pf->remaining,
                                    pf->rate, pf->last + shift);
        net_flow *f = &net->flows[id];
        for (int k = 0; k < pf->n_links; k++) {
            f->hop[k].link = pf->hop[k].link;
            f->hop[k].weight = pf->hop[k].weight;
        }
        f->n_links = pf->n_links;
        net__attach_links(net, id, now);
        for (int k = 0; k < f->n_links; k++) {
            const net_link *pl = &p->links[f->hop[k].link];
            net->links[f->hop[k].link].busy_since = pl->busy_since + shift;
        }
    }
    private_reset(p, xs, n);
    sim_free(flow_of);
    sim_free(log.done);
}

void hw_net__set_memo_limit(hw_net *net, size_t bytes)
{
    net->memo_limit = bytes;
}

uint64_t hw_net_rounds_closed(const hw_net *net) { return net->rounds_closed; }
uint64_t hw_net_rounds_evolved(const hw_net *net) { return net->rounds_evolved; }
