/* The replay's set-up (see replay-internal.h): per-rank state, process groups, the shared
 * schedule of every collective instance with its costs, and data-parallel symmetry; and
 * the matching clean-up. */
#include "core/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "replay/replay-internal.h"

/* The most transfers of distinct rounds a large schedule keeps costs for (32 B each); beyond
 * it the schedule is costed round by round as it runs. */
#define ROUND_COSTS_MAX ((size_t)1 << 20)

/* Kernel duration of compute op `o` of `rank` by the roofline (or measured), with the rank's
 * own values where it has them (`v`, else the op's); a matmul's shape is its inner
 * dimension, a fused-attention kernel's the keys of one context-parallel block it attends
 * over and its head dimension (docs/models.md). */
static sim_time op_duration(const replay_ctx *c, int rank, const trace_op *o,
                            const trace_op_var *v)
{
    if (o->duration_ps >= 0)
        return o->duration_ps;
    const plan_scenario *sc = c->p->sc;
    double attn_seq = (double)sc->training.seq_len / SIM_MAX(1, sc->parallel.cp);
    return hw_gpu_kernel_time(c->gpus[c->gpu_of[rank]], (hw_op_class)o->cls, (hw_dtype)o->dtype,
                              v ? v->flops : o->flops, v ? v->bytes : o->bytes,
                              (double)(v ? v->inner : o->inner), attn_seq);
}

/* The rank's host entries (trace_host): launches beyond one per op, summed up to each
 * entry, and the sync ops in order (once per op array: a borrower takes its template's);
 * then its own state for the syncs. */
static void init_host(replay_ctx *c, rank_state *rs, const rank_state *ts)
{
    const trace_rank *tr = rs->tr;
    if (ts) {
        rs->host_extra = ts->host_extra;
        rs->sync_op = ts->sync_op;
        rs->n_sync = ts->n_sync;
    } else if (tr->n_host > 0) {
        int64_t *extra = sim_calloc(tr->n_host, sizeof *extra);
        uint32_t *sync = sim_calloc(tr->n_host, sizeof *sync);
        int64_t sum = 0;
        uint32_t n_sync = 0;
        for (size_t k = 0; k < tr->n_host; k++) {
            sum += (int64_t)tr->host[k].launches - 1;
            extra[k] = sum;
            if (tr->host[k].sync)
                sync[n_sync++] = tr->host[k].op;
        }
        rs->host_extra = extra;
        rs->sync_op = sync;
        rs->n_sync = n_sync;
    }
    rs->sync_at = sim_calloc((size_t)rs->n_sync + 1, sizeof *rs->sync_at);
    rs->sync_from = sim_calloc((size_t)rs->n_sync + 1, sizeof *rs->sync_from);
    rs->sync_cause = sim_calloc((size_t)rs->n_sync + 1, sizeof *rs->sync_cause);
    rs->hosted = rs->launch_ps > 0 || rs->n_sync > 0;
    (void)c;
}

void replay__init_rank(replay_ctx *c, int rank)
{
    rank_state *rs = &c->ranks[rank];
    const trace_rank *tr = &c->t->ranks[rank];
    size_t n = tr->n_ops;
    rs->tr = tr;
    rs->pending = sim_calloc(n, sizeof *rs->pending);
    rs->end = sim_calloc(n, sizeof *rs->end);
    rs->step_end = sim_calloc((size_t)c->steps, sizeof *rs->step_end);
    rs->launch_ps = hw_node_launch_ps(
        hw_topology_node_spec(&c->p->sc->topology, c->p->coords[rank].node),
        c->p->sc->training.compile);
    if (tr->tmpl >= 0) {
        /* the op arrays are its template's, and so are what the replay derives from them */
        const rank_state *ts = &c->ranks[tr->tmpl];
        SIM_ASSERT(tr->tmpl < rank && ts->tr == &c->t->ranks[tr->tmpl] &&
                   c->gpu_of[tr->tmpl] == c->gpu_of[rank], "rank %d's template", rank);
        rs->succ_first = ts->succ_first;
        rs->succ = ts->succ;
        rs->stream_ops = ts->stream_ops;
        rs->dur = ts->dur;
        rs->n_deps = ts->n_deps;
        rs->coll_at = ts->coll_at;
        SIM_ASSERT(tr->n_colls == ts->tr->n_colls, "rank %d: its template's collectives", rank);
        memcpy(rs->stream_first, ts->stream_first, sizeof rs->stream_first);
        rs->borrowed = true;
        init_host(c, rs, ts);
        if (tr->n_var > 0) {
            /* its own values of some kernels (MoE experts, trace_op_var): their durations,
             * one per such op (a copy of the whole array cost 8 bytes per op) */
            rs->var_dur = sim_calloc(tr->n_var, sizeof *rs->var_dur);
            for (size_t k = 0; k < tr->n_var; k++)
                if (tr->ops[tr->var[k].op].kind == TRACE_OP_COMPUTE)
                    rs->var_dur[k] = op_duration(c, rank, &tr->ops[tr->var[k].op], &tr->var[k]);
        }
        return;
    }
    init_host(c, rs, NULL);
    /* successors (reverse dependencies) */
    rs->succ_first = sim_calloc(n + 1, sizeof *rs->succ_first);
    rs->succ = sim_calloc(tr->n_deps, sizeof *rs->succ);
    for (size_t i = 0; i < tr->n_deps; i++)
        rs->succ_first[tr->deps[i] + 1]++;
    for (size_t i = 0; i < n; i++)
        rs->succ_first[i + 1] += rs->succ_first[i];
    uint32_t *fill = sim_calloc(n + 1, sizeof *fill);
    memcpy(fill, rs->succ_first, (n + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < tr->ops[i].n_deps; d++)
            rs->succ[fill[tr->deps[tr->ops[i].dep_first + d]]++] = (uint32_t)i;
    sim_free(fill);
    /* per-stream program order */
    uint32_t count[TRACE_STREAMS + 1] = {0};
    for (size_t i = 0; i < n; i++)
        count[tr->ops[i].stream + 1]++;
    rs->stream_first[0] = 0;
    for (int s = 0; s < TRACE_STREAMS; s++)
        rs->stream_first[s + 1] = rs->stream_first[s] + count[s + 1];
    rs->stream_ops = sim_calloc(n, sizeof *rs->stream_ops);
    /* kernel durations, once per op array */
    rs->dur = sim_calloc(n + 1, sizeof *rs->dur);
    for (size_t i = 0; i < n; i++)
        if (tr->ops[i].kind == TRACE_OP_COMPUTE)
            rs->dur[i] = op_duration(c, rank, &tr->ops[i], NULL);
    uint32_t pos[TRACE_STREAMS];
    memcpy(pos, rs->stream_first, sizeof pos);
    for (size_t i = 0; i < n; i++)
        rs->stream_ops[pos[tr->ops[i].stream]++] = (uint32_t)i;
    /* what each step starts from, and where the collectives are: read once per op array
     * instead of every op's 72 bytes per rank and step */
    rs->n_deps = sim_calloc(n + 1, sizeof *rs->n_deps);
    rs->coll_at = sim_calloc(tr->n_colls + 1, sizeof *rs->coll_at);
    for (size_t i = 0; i < n; i++) {
        rs->n_deps[i] = tr->ops[i].n_deps;
        if (tr->ops[i].kind == TRACE_OP_COLL) {
            SIM_ASSERT(tr->ops[i].coll < tr->n_colls, "op %zu: collective ordinal", i);
            rs->coll_at[tr->ops[i].coll] = (uint32_t)i;
        }
    }
}

static void clear_rank(rank_state *rs)
{
    sim_free(rs->pending);
    sim_free(rs->async);
    sim_free(rs->end);
    sim_free(rs->step_end);
    if (!rs->borrowed) {
        sim_free(rs->succ_first);
        sim_free(rs->succ);
        sim_free(rs->stream_ops);
    }
    if (!rs->borrowed) {
        sim_free(rs->dur);
        sim_free(rs->n_deps);
        sim_free(rs->coll_at);
        sim_free((void *)rs->host_extra);
        sim_free((void *)rs->sync_op);
    }
    sim_free(rs->var_dur);
    sim_free(rs->sync_at);
    sim_free(rs->sync_from);
    sim_free(rs->sync_cause);
    sim_free(rs->blocked);
}

static void init_groups(replay_ctx *c)
{
    const trace *t = c->t;
    const hw_topology_spec *spec = &c->p->sc->topology;
    c->groups = sim_calloc(t->n_groups ? t->n_groups : 1, sizeof *c->groups);
    for (size_t i = 0; i < t->n_groups; i++) {
        const trace_group *tg = &t->groups[i];
        group_info *gi = &c->groups[i];
        gi->node = sim_calloc((size_t)tg->n, sizeof *gi->node);
        for (int m = 0; m < tg->n; m++)
            gi->node[m] = hw_topo_device(c->topo, hw_topo_gpu_device(c->topo, tg->ranks[m]))->node;
        /* in-switch reduction where the members' node (its group's on a mixed cluster) has
         * NVLink SHARP: a common NVSwitch is within one node */
        bool sharp = tg->n > 0 && hw_topology_node_spec(spec, gi->node[0])->intra.sharp;
        gi->switch_dev = sharp ? hw_topo_common_nvswitch(c->topo, tg->ranks, tg->n) : -1;
        gi->g = (coll_group){.n = tg->n, .node = gi->node, .nvls = gi->switch_dev >= 0};
        gi->arrivals = 0;
        for (int m = 0; m < tg->n; m++)
            gi->arrivals += !c->active || c->active[tg->ranks[m]];
    }
}

/* The shared schedule of a collective instance, chosen (auto) or built (fixed algorithm).
 * A fixed algorithm that cannot do the operation on this group falls back to auto; the
 * loader has checked the names, not every group shape. */
static uint64_t sched_hash(uint32_t group, int op, int algo, int32_t root, double bytes)
{
    uint64_t b;
    memcpy(&b, &bytes, sizeof b);
    uint64_t h = ((uint64_t)group << 32) ^ ((uint64_t)(uint8_t)op << 24) ^
                 ((uint64_t)(uint8_t)algo << 16) ^ (uint64_t)(uint32_t)root;
    h ^= b + SIM_GOLDEN64 + (h << 6) + (h >> 2); /* boost::hash_combine */
    h ^= h >> 33; /* half of MurmurHash3's fmix64 */
    h *= SIM_FMIX64_C1;
    return h ^ (h >> 33);
}

/* Open addressing over the schedules (slot = index + 1, 0 empty), kept at most half full:
 * a 16K-GPU step has millions of collective instances over tens of thousands of schedules. */
static void sched_rehash(replay_ctx *c)
{
    size_t cap = c->sched_slots_cap ? 2 * c->sched_slots_cap : 1024;
    uint32_t *slots = sim_calloc(cap, sizeof *slots);
    for (size_t i = 0; i < c->n_scheds; i++) {
        const sched_entry *e = &c->scheds[i];
        size_t k = sched_hash(e->group, e->op, e->algo, e->root, e->bytes) & (cap - 1);
        while (slots[k])
            k = (k + 1) & (cap - 1);
        slots[k] = (uint32_t)i + 1;
    }
    sim_free(c->sched_slots);
    c->sched_slots = slots;
    c->sched_slots_cap = cap;
}

static const sched_entry *schedule_for(replay_ctx *c, const trace_coll *tc)
{
    int algo = plan_coll_algo_id((plan_coll_algo)tc->algo);
    if (2 * (c->n_scheds + 1) > c->sched_slots_cap)
        sched_rehash(c);
    size_t mask = c->sched_slots_cap - 1;
    size_t k = sched_hash(tc->group, tc->op, algo, tc->root, tc->bytes) & mask;
    for (; c->sched_slots[k]; k = (k + 1) & mask) {
        const sched_entry *e = &c->scheds[c->sched_slots[k] - 1];
        if (e->group == tc->group && e->op == tc->op && e->algo == algo && e->root == tc->root &&
            e->bytes == tc->bytes)
            return e;
    }
    c->sched_slots[k] = (uint32_t)c->n_scheds + 1;
    SIM_GROW(c->scheds, c->cap_scheds, c->n_scheds + 1);
    sched_entry *e = &c->scheds[c->n_scheds++];
    *e = (sched_entry){.group = tc->group, .op = tc->op, .algo = (int8_t)algo,
                       .root = tc->root, .bytes = tc->bytes};
    coll_schedule_init(&e->sched);
    group_info *gi = &c->groups[tc->group];
    if (!c->select_scratch)
        c->select_scratch = sim_calloc((size_t)hw_topo_link_count(c->topo) + 1,
                                       sizeof *c->select_scratch);
    /* the candidates' estimates look routes up by member pair: a table per group (up to
     * 1,024 members: 8 MB) instead of a hash lookup per transfer */
    if (!gi->pair_routes && gi->g.n > 2 && gi->g.n <= 1024)
        gi->pair_routes = sim_calloc((size_t)gi->g.n * (size_t)gi->g.n, sizeof *gi->pair_routes);
    coll_target target = {.topo = c->topo, .protocols = &c->p->sc->topology.protocols,
                          .scratch = c->select_scratch,
                          .group = &gi->g, .gpu = c->t->groups[tc->group].ranks,
                          .switch_dev = gi->switch_dev, .pair_routes = gi->pair_routes};
    if (!gi->routed && gi->g.n > 2) {
        coll_prefetch_routes(&target, (coll_op)tc->op, tc->bytes, tc->root);
        gi->routed = true;
    }
    if (gi->ll128 == 0)
        gi->ll128 = coll_ll128_paths(&target) ? 1 : -1;
    target.ll128 = gi->ll128;
    int rc = coll_select(&target, (coll_op)tc->op, tc->bytes, tc->root, algo, -1, &e->choice,
                         &e->sched);
    if (rc != 0)
        rc = coll_select(&target, (coll_op)tc->op, tc->bytes, tc->root, -1, -1, &e->choice,
                         &e->sched);
    SIM_ASSERT(rc == 0, "no algorithm implements %s on a group of %d",
               coll_op_name((coll_op)tc->op), gi->g.n);
    /* a ring's rounds repeat: each stored once (a ring over 512 members keeps 512
     * transfers instead of 523,264) */
    coll_schedule_compact(&e->sched);
    return e;
}

/* The routes of every pair group's transfer (pipeline sends: member 0 to member 1), in one
 * batch destination by destination: a stage's rank receives from the previous stage and
 * from the next, so one search serves both; one by one, the 30,000 sends of a 16K-GPU step
 * each searched the fabric afresh. Changes no route (hw_topo_route_many). */
static void prefetch_pair_routes(replay_ctx *c)
{
    const trace *t = c->t;
    int32_t *src = NULL, *dst = NULL;
    size_t n = 0, cap_src = 0, cap_dst = 0;
    for (size_t i = 0; i < t->n_groups; i++) {
        const trace_group *g = &t->groups[i];
        if (g->n != 2 || c->groups[i].arrivals == 0)
            continue;
        SIM_GROW(src, cap_src, n + 1);
        SIM_GROW(dst, cap_dst, n + 1);
        int a = hw_topo_gpu_device(c->topo, g->ranks[0]);
        int b = hw_topo_gpu_device(c->topo, g->ranks[1]);
        src[n] = hw_topo_p2p_source(c->topo, a, b); /* sends are point-to-point (PXN) */
        dst[n++] = b;
    }
    if (n > 0)
        hw_topo_route_many(c->topo, n, src, dst);
    sim_free(src);
    sim_free(dst);
}

static void joint_estimates(replay_ctx *c); /* symmetry_collectives: estimate (below) */

void replay__init_colls(replay_ctx *c)
{
    const trace *t = c->t;
    init_groups(c);
    prefetch_pair_routes(c);
    c->colls = sim_calloc(t->n_colls ? t->n_colls : 1, sizeof *c->colls);
    uint64_t n_member_ops = 0;
    for (size_t i = 0; i < t->n_colls; i++) {
        coll_state *cs = &c->colls[i];
        const trace_coll *tc = &t->colls[i];
        const trace_group *g = &t->groups[tc->group];
        int arrivals = c->groups[tc->group].arrivals;
        if (arrivals == 0)
            continue; /* symmetry: a group of other replicas only; it never runs (its state
                         stays untouched, as calloc left it: most of a 16K-GPU run's) */
        cs->arrivals = arrivals;
        /* scheds may move while growing: resolve the pointer after all are built */
        cs->plan = (const sched_entry *)(uintptr_t)(schedule_for(c, tc) - c->scheds);
        cs->member_first = n_member_ops;
        n_member_ops += (uint64_t)g->n;
    }
    c->member_op = sim_calloc(n_member_ops ? n_member_ops : 1, sizeof *c->member_op);
    for (size_t i = 0; i < t->n_colls; i++) {
        coll_state *cs = &c->colls[i];
        if (cs->arrivals == 0)
            continue;
        cs->plan = &c->scheds[(uintptr_t)cs->plan];
        /* the executor, the transfer costs and what each member sends: once per schedule
         * (routes and protocol costs of a tensor-parallel ring are looked up once, not at
         * every round of every layer; large schedules, e.g. a ring over hundreds of ranks,
         * are costed as they run) */
        sched_entry *e = &c->scheds[(size_t)(cs->plan - c->scheds)];
        if (e->exec_ready)
            continue;
        e->exec_ready = true;
        const group_info *gi = &c->groups[e->group];
        e->exec = (coll_exec){.sched = &e->sched, .gpu = t->groups[e->group].ranks,
                              .switch_dev = gi->switch_dev, .proto = e->choice.proto,
                              .nvls = e->choice.algo == COLL_ALGO_NVLS,
                              .protocols = &c->p->sc->topology.protocols};
        if (!e->sent) {
            int n = t->groups[e->group].n;
            e->sent = sim_calloc((size_t)n, sizeof *e->sent);
            coll_schedule_bytes_sent_all(&e->sched, e->sent);
            for (int m = 0; m < n; m++)
                e->sent_mean += e->sent[m];
            e->sent_mean /= n;
        }
        if (c->estimate_cross && gi->arrivals < gi->g.n) {
            /* symmetry: a collective across replicas, timed by the cost model that chose
             * it (all members start together, as every replica is the same) */
            e->estimated = true;
            e->est_ps = sim_time_from_ps(ceil(e->choice.est_s * (double)SIM_PS_PER_S));
            continue;
        }
        if (coll_schedule_xfer_count(&e->sched) <= 4096)
            e->costs = coll_exec_costs(&e->exec, c->topo);
        else
            /* a large schedule (a ring over hundreds of ranks) repeats its rounds: each
             * distinct round costed once */
            e->costs = coll_exec_round_costs(&e->exec, c->topo, ROUND_COSTS_MAX, &e->cost_at);
        e->exec.costs = e->costs;
        e->exec.cost_at = e->cost_at;
        if (!e->costs) {
            /* a large schedule of rounds that do not repeat is costed as it runs; its
             * routes come from a member-pair table of its group, not the hash cache */
            group_info *gm = &c->groups[e->group];
            if (!gm->pair_routes)
                gm->pair_routes = sim_calloc((size_t)gm->g.n * (size_t)gm->g.n,
                                             sizeof *gm->pair_routes);
            e->exec.pair_routes = gm->pair_routes;
            e->exec.n_members = gm->g.n;
        }
    }
    c->exec_pool = sim_pool_create(sizeof(coll_exec));
    for (int r = 0; r < t->n_ranks; r++) {
        const trace_rank *tr = &t->ranks[r];
        if (c->active && !c->active[r])
            continue;
        /* the rank's place in the group of its last collective: a rank's collectives come
         * in runs on the same group (a layer's tensor-parallel ones) */
        uint32_t last_group = UINT32_MAX;
        int place = -1;
        const uint32_t *at = c->ranks[r].coll_at;
        for (size_t k = 0; k < tr->n_colls; k++) {
            uint32_t i = at[k], ci = tr->colls[k];
            uint32_t gid = t->colls[ci].group;
            if (gid != last_group) {
                const trace_group *g = &t->groups[gid];
                place = -1;
                for (int m = 0; m < g->n && place < 0; m++)
                    if (g->ranks[m] == r)
                        place = m;
                last_group = gid;
            }
            SIM_ASSERT(place >= 0, "rank %d not in the group of its collective %u", r, ci);
            c->member_op[c->colls[ci].member_first + (uint64_t)place] = (uint32_t)i;
        }
    }
    if (c->estimate_cross)
        joint_estimates(c);
}

/* simulation.symmetry: dp. Replica 0 (the ranks at data-parallel coordinate 0; with experts,
 * the expert-parallel block of coordinates 0..ep-1) runs; every other rank is its twin's
 * copy: the rank of replica 0 at the same tp, cp, pp and ep place, which has a smaller index
 * (index order grows with every coordinate). */
void replay__init_symmetry(replay_ctx *c)
{
    const plan *p = c->p;
    const plan_parallel *par = &p->sc->parallel;
    int n = p->n_ranks;
    size_t slots = (size_t)par->pp * (size_t)par->tp * (size_t)par->cp * (size_t)par->ep;
    int32_t *of = sim_calloc(slots, sizeof *of);
    c->active = sim_calloc((size_t)n, sizeof *c->active);
    c->twin = sim_calloc((size_t)n, sizeof *c->twin);
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < n; r++) {
            const plan_coord *k = &p->coords[r];
            size_t key = (((size_t)k->c[PLAN_GROUP_PP] * (size_t)par->tp +
                           (size_t)k->c[PLAN_GROUP_TP]) * (size_t)par->cp +
                          (size_t)k->c[PLAN_GROUP_CP]) * (size_t)par->ep +
                         (size_t)k->c[PLAN_GROUP_EP];
            /* with experts, the replica is an expert-parallel block: the ep data-parallel
             * coordinates that exchange tokens (c[EP] = c[DP] mod ep) */
            bool replica0 = k->c[PLAN_GROUP_DP] < par->ep;
            if (pass == 0 && replica0) {
                c->active[r] = true;
                c->n_active++;
                of[key] = r;
            } else if (pass == 1) {
                c->twin[r] = replica0 ? r : of[key];
                SIM_ASSERT(c->twin[r] <= r, "rank %d's twin %d", r, c->twin[r]);
            }
        }
    sim_free(of);
    c->estimate_cross = p->sc->simulation.symmetry_collectives == PLAN_SYMCOLL_ESTIMATE;
}

/* symmetry_collectives: estimate. The replica's ranks at one pipeline stage (its tensor-
 * and context-parallel places) issue the same collectives at the same moments, each on its
 * own data-parallel group: estimated alone, their transfers would not see each other on
 * shared links (leaf uplinks, spines). Schedules of the same class, stage, operation and
 * size on groups of different ranks are estimated together (coll_estimate_joint); each
 * keeps the larger of that and its own estimate. */
/* What coll_estimate needs to cost entry e's schedule on its group. */
static void estimate_args(const replay_ctx *c, const sched_entry *e, coll_target *t,
                          coll_exec *x)
{
    const group_info *gi = &c->groups[e->group];
    *t = (coll_target){.topo = c->topo, .protocols = &c->p->sc->topology.protocols,
                       .scratch = c->select_scratch, .group = &gi->g,
                       .gpu = c->t->groups[e->group].ranks, .switch_dev = gi->switch_dev,
                       .pair_routes = gi->pair_routes};
    *x = (coll_exec){.sched = &e->sched, .gpu = t->gpu, .switch_dev = gi->switch_dev,
                     .proto = e->choice.proto, .nvls = e->choice.algo == COLL_ALGO_NVLS,
                     .protocols = t->protocols, .pair_routes = gi->pair_routes,
                     .n_members = gi->g.n};
}

typedef struct joint_key {
    int cls, stage, op;
    double bytes;
    int32_t rank; /* the group's first replica-0 member */
    size_t sched;
} joint_key;

static int joint_cmp(const void *a, const void *b)
{
    const joint_key *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->stage != y->stage)
        return x->stage < y->stage ? -1 : 1;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return x->sched < y->sched ? -1 : x->sched > y->sched;
}

static bool joint_same(const joint_key *x, const joint_key *y)
{
    return x->cls == y->cls && x->stage == y->stage && x->op == y->op && x->bytes == y->bytes;
}

static void joint_estimates(replay_ctx *c)
{
    joint_key *k = sim_calloc(c->n_scheds + 1, sizeof *k);
    size_t n = 0;
    for (size_t i = 0; i < c->n_scheds; i++) {
        const sched_entry *e = &c->scheds[i];
        if (!e->estimated)
            continue;
        const trace_group *g = &c->t->groups[e->group];
        int32_t rank = -1;
        for (int m = 0; m < g->n && rank < 0; m++)
            if (c->active[g->ranks[m]])
                rank = g->ranks[m];
        SIM_ASSERT(rank >= 0, "an estimated collective with no active member");
        k[n++] = (joint_key){.cls = g->cls, .stage = c->p->coords[rank].c[PLAN_GROUP_PP],
                             .op = e->op, .bytes = e->bytes, .rank = rank, .sched = i};
    }
    qsort(k, n, sizeof *k, joint_cmp);
    coll_target *t = sim_calloc(n + 1, sizeof *t);
    coll_exec *x = sim_calloc(n + 1, sizeof *x);
    const coll_schedule **s = sim_calloc(n + 1, sizeof *s);
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && joint_same(&k[a], &k[b]))
            b++;
        /* two schedules of one rank run one after the other on its stream, not together */
        bool distinct = true;
        for (size_t i = a; i < b && distinct; i++)
            for (size_t j = i + 1; j < b && distinct; j++)
                distinct = k[i].rank != k[j].rank;
        if (b - a > 1 && distinct) {
            for (size_t j = a; j < b; j++) {
                const sched_entry *e = &c->scheds[k[j].sched];
                estimate_args(c, e, &t[j - a], &x[j - a]);
                s[j - a] = &e->sched;
            }
            double est = coll_estimate_joint(b - a, t, x, s);
            for (size_t j = a; j < b; j++) {
                sched_entry *e = &c->scheds[k[j].sched];
                e->est_ps = sim_time_from_ps(ceil(fmax(est, e->choice.est_s) * (double)SIM_PS_PER_S));
            }
        }
        a = b;
    }
    sim_free(t);
    sim_free(x);
    sim_free(s);
    sim_free(k);
}

/* symmetry_collectives: estimate. The link traffic the estimated collectives would have
 * carried, added to the network's counters at the end of the run: each schedule's, times
 * the instances that started. */
void replay__add_estimated_traffic(replay_ctx *c)
{
    if (!c->estimate_cross)
        return;
    int nl = hw_topo_link_count(c->topo);
    double *bytes = sim_calloc((size_t)nl + 1, sizeof *bytes);
    double *busy_s = sim_calloc((size_t)nl + 1, sizeof *busy_s);
    double *tmp = sim_calloc((size_t)nl + 1, sizeof *tmp);
    for (size_t i = 0; i < c->n_scheds; i++) {
        const sched_entry *e = &c->scheds[i];
        if (!e->estimated || e->runs == 0)
            continue;
        coll_target target;
        coll_exec x;
        estimate_args(c, e, &target, &x);
        coll_estimate_links(&target, &x, &e->sched, (double)e->runs, bytes, busy_s, tmp);
    }
    for (int l = 0; l < nl; l++)
        if (bytes[l] > 0)
            hw_net_add_traffic(c->net, l, bytes[l],
                               sim_time_from_ps(ceil(busy_s[l] * (double)SIM_PS_PER_S)));
    sim_free(bytes);
    sim_free(busy_s);
    sim_free(tmp);
}


void replay__clear(replay_ctx *c)
{
    sim_free(c->slowdown);
    if (c->jitter)
        for (int r = 0; r < c->p->n_ranks; r++)
            gsl_rng_free(c->jitter[r]);
    sim_free(c->jitter);
    for (int r = 0; r < c->p->n_ranks; r++)
        clear_rank(&c->ranks[r]);
    sim_free(c->ranks);
    sim_free(c->member_op);
    sim_free(c->colls);
    if (c->exec_pool)
        sim_pool_destroy(c->exec_pool);
    for (size_t i = 0; i < c->n_scheds; i++) {
        coll_schedule_clear(&c->scheds[i].sched);
        sim_free(c->scheds[i].costs);
        sim_free(c->scheds[i].cost_at);
        sim_free(c->scheds[i].sent);
    }
    sim_free(c->scheds);
    sim_free(c->sched_slots);
    sim_free(c->select_scratch);
    for (size_t i = 0; i < c->t->n_groups; i++) {
        sim_free(c->groups[i].node);
        sim_free(c->groups[i].pair_routes);
    }
    sim_free(c->groups);
    sim_free(c->active);
    sim_free(c->twin);
}
