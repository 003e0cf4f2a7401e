/* The process groups of a plan (docs/strategies.md): every rank has a coordinate (pp, tp, cp, dp)
 * and, carved out of dp, an expert coordinate. From them:
 *
 *   data-parallel   the ranks with the same (pp, tp): dp x cp of them, since context-parallel
 *                   ranks hold the same weights and see different tokens, so gradients are
 *                   reduced (and ZeRO shards) over both (Megatron's DP x CP group). Under
 *                   FSDP hybrid shard: the ranks of a node, plus one replica group per local
 *                   index across nodes.
 *   tensor          the tp ranks with the same (pp, cp, dp).
 *   context         the cp ranks with the same (pp, tp, dp), in cp order: the ring of ring
 *                   attention.
 *   expert          ep consecutive dp coordinates with the same (pp, tp, cp); expert-data-
 *                   parallel: the ranks with the same (pp, tp) and expert coordinate, over
 *                   cp and the dp / ep expert groups.
 *   pipeline        a pair per chunk boundary and direction, for each (tp, cp, dp).
 *
 * Members of a group are listed in ascending dp, then cp, coordinate (ascending rank under the
 * default order), which is also their ring order. */
#include "core/sim.h"

#include <stdio.h>

#include "plan/gen-internal.h"
#include "plan/pipeline.h"

int plan__groups_create(gen *g, sim_diag *diag)
{
    plan *p = g->p;
    const plan_parallel *par = &g->sc->parallel;
    int n = p->n_ranks, dp = par->dp, tp = par->tp, pp = par->pp, cp = par->cp, ep = g->ep;
    if (g->hybrid && (tp > 1 || cp > 1))
        return sim_diag_error_code(diag, SIM_ENOTSUP, "scenario", 0, 0,
                                   "hybrid_shard with tensor or context parallelism is not "
                                   "supported yet");
    if (g->hybrid && p->coords[n - 1].node == p->coords[0].node)
        g->hybrid = false; /* one node: hybrid shard is full shard */
    /* hybrid shard (tp = cp = pp = 1): ranks per node, equal on every node */
    int per_node = dp * cp, nodes = 1;
    if (g->hybrid) {
        per_node = 0;
        while (per_node < n && p->coords[per_node].node == p->coords[0].node)
            per_node++;
        nodes = n / per_node;
        if (per_node == 1)
            return sim_diag_error(diag, "scenario", 0, 0,
                                  "hybrid_shard with one rank per node shards nothing (every "
                                  "node would hold the whole model): use parallel.zero: 0 "
                                  "(DDP) or hybrid_shard: false");
        for (int r = 0; r < n; r++)
            if (n % per_node != 0 || p->coords[r].node != p->coords[r - r % per_node].node)
                return sim_diag_error(diag, "scenario", 0, 0,
                                      "hybrid_shard needs the same number of ranks on every "
                                      "node (rank %d breaks the pattern)", r);
    }
    /* DualPipe: stages s and pp-1-s hold the same two chunks, so their gradients are reduced
     * (and ZeRO's states sharded) together */
    bool dual = pp > 1 && g->sc->parallel.pipeline.schedule == PLAN_SCHED_DUALPIPE;
    int mirrors = dual ? 2 : 1;
    g->n = per_node * mirrors;
    g->n_edp = cp * dp / ep * mirrors;

    int32_t *rank_of = sim_calloc((size_t)n, sizeof *rank_of);
#define RANK_OF(s, t, c, d) rank_of[(((s) * tp + (t)) * cp + (c)) * dp + (d)]
    for (int r = 0; r < n; r++) {
        const plan_coord *k = &p->coords[r];
        RANK_OF(k->c[PLAN_GROUP_PP], k->c[PLAN_GROUP_TP], k->c[PLAN_GROUP_CP],
                k->c[PLAN_GROUP_DP]) = r;
    }
    g->t = trace_create(n);
    int C = g->chunks;
    int32_t *m = sim_calloc((size_t)(n + 1), sizeof *m);
    g->shard_of = sim_calloc((size_t)n, sizeof *g->shard_of);
    g->rep_of = sim_calloc((size_t)n, sizeof *g->rep_of);
    g->tp_of = sim_calloc((size_t)n, sizeof *g->tp_of);
    g->cp_of = sim_calloc((size_t)n, sizeof *g->cp_of);
    g->ep_of = sim_calloc((size_t)n, sizeof *g->ep_of);
    g->edp_of = sim_calloc((size_t)n, sizeof *g->edp_of);
    size_t slots = (size_t)g->pp_slots;
    g->pp_fwd_of = sim_calloc((size_t)n * slots, sizeof *g->pp_fwd_of);
    g->pp_bwd_of = sim_calloc((size_t)n * slots, sizeof *g->pp_bwd_of);

    /* data parallel over dp x cp (one group per (pp, tp); per node under hybrid shard) */
    for (int st = 0; st < pp; st++)
        for (int t = 0; t < tp; t++) {
            if (g->hybrid) { /* tp = cp = pp = 1 */
                for (int s = 0; s < nodes; s++) {
                    for (int i = 0; i < per_node; i++)
                        m[i] = RANK_OF(0, 0, 0, s * per_node + i);
                    uint32_t gid = trace_add_group(g->t, PLAN_GROUP_DP, per_node, m);
                    for (int i = 0; i < per_node; i++)
                        g->shard_of[m[i]] = gid;
                }
                for (int i = 0; i < per_node; i++) {
                    for (int s = 0; s < nodes; s++)
                        m[s] = RANK_OF(0, 0, 0, s * per_node + i);
                    uint32_t gid = trace_add_group(g->t, PLAN_GROUP_DP, nodes, m);
                    for (int s = 0; s < nodes; s++)
                        g->rep_of[m[s]] = gid;
                }
                continue;
            }
            if (dual && st >= pp / 2)
                continue; /* in its mirror's group */
            int k = 0;
            for (int s = st; s >= 0; s = s == st && dual ? pp - 1 - st : -1)
                for (int d = 0; d < dp; d++)
                    for (int c = 0; c < cp; c++)
                        m[k++] = RANK_OF(s, t, c, d);
            uint32_t gid = trace_add_group(g->t, PLAN_GROUP_DP, k, m);
            for (int i = 0; i < k; i++)
                g->shard_of[m[i]] = gid;
        }
    if (tp > 1)
        for (int st = 0; st < pp; st++)
            for (int c = 0; c < cp; c++)
                for (int d = 0; d < dp; d++) {
                    for (int t = 0; t < tp; t++)
                        m[t] = RANK_OF(st, t, c, d);
                    if (!p->warning[0] && p->coords[m[0]].node != p->coords[m[tp - 1]].node)
                        snprintf(p->warning, sizeof p->warning,
                                 "tensor-parallel group of ranks %d..%d spans nodes %d and %d: "
                                 "its collectives cross the inter-node network (put tp first "
                                 "in parallel.order, or use tp <= GPUs per node)",
                                 m[0], m[tp - 1], p->coords[m[0]].node,
                                 p->coords[m[tp - 1]].node);
                    uint32_t gid = trace_add_group(g->t, PLAN_GROUP_TP, tp, m);
                    for (int t = 0; t < tp; t++)
                        g->tp_of[m[t]] = gid;
                }
    if (cp > 1)
        for (int st = 0; st < pp; st++)
            for (int t = 0; t < tp; t++)
                for (int d = 0; d < dp; d++) {
                    for (int c = 0; c < cp; c++)
                        m[c] = RANK_OF(st, t, c, d);
                    uint32_t gid = trace_add_group(g->t, PLAN_GROUP_CP, cp, m);
                    for (int c = 0; c < cp; c++)
                        g->cp_of[m[c]] = gid;
                }
    /* experts: EP groups of ep consecutive dp ranks, expert-DP groups of the ranks holding
     * the same experts (same expert coordinate) */
    /* (the expert-DP groups exist whenever experts are shared, ep = 1 included: then every
     * data-parallel rank holds every expert) */
    bool experts = g->sc->model.moe.experts > 0;
    if (ep > 1 || (experts && g->n_edp > 1))
        for (int st = 0; st < pp; st++)
            for (int t = 0; t < tp; t++) {
                for (int c = 0; c < cp && ep > 1; c++)
                    for (int k = 0; k < dp / ep; k++) {
                        for (int e = 0; e < ep; e++)
                            m[e] = RANK_OF(st, t, c, k * ep + e);
                        uint32_t gid = trace_add_group(g->t, PLAN_GROUP_EP, ep, m);
                        for (int e = 0; e < ep; e++)
                            g->ep_of[m[e]] = gid;
                    }
                if (experts && g->n_edp > 1 && !(dual && st >= pp / 2))
                    for (int e = 0; e < ep; e++) {
                        int j = 0;
                        for (int s = st; s >= 0; s = s == st && dual ? pp - 1 - st : -1)
                            for (int k = 0; k < dp / ep; k++)
                                for (int c = 0; c < cp; c++)
                                    m[j++] = RANK_OF(s, t, c, k * ep + e);
                        uint32_t gid = trace_add_group(g->t, PLAN_GROUP_DP, j, m);
                        for (int i = 0; i < j; i++)
                            g->edp_of[m[i]] = gid;
                    }
            }
    /* pipeline: a pair of ranks per chunk boundary and direction of transfer (and under
     * DualPipe per direction of micro-batches: slot dir x C + boundary) */
    plan_schedule sched = g->sc->parallel.pipeline.schedule;
    for (int dir = 0; dir * C < g->pp_slots; dir++)
        for (int b = 0; b + 1 < C; b++)
            for (int t = 0; t < tp; t++)
                for (int c = 0; c < cp; c++)
                    for (int d = 0; d < dp; d++) {
                        int32_t a = RANK_OF(plan_pp_stage_of(sched, pp, b, dir), t, c, d);
                        int32_t z = RANK_OF(plan_pp_stage_of(sched, pp, b + 1, dir), t, c, d);
                        if (a == z)
                            continue; /* both chunks on one stage (ZB-V's turn) */
                        int32_t fwd[2] = {a, z}, bwd[2] = {z, a};
                        uint32_t gf = trace_add_group(g->t, PLAN_GROUP_PP, 2, fwd);
                        uint32_t gb = trace_add_group(g->t, PLAN_GROUP_PP, 2, bwd);
                        size_t k = (size_t)dir * (size_t)C + (size_t)b;
                        g->pp_fwd_of[(size_t)a * slots + k] = gf;
                        g->pp_fwd_of[(size_t)z * slots + k] = gf;
                        g->pp_bwd_of[(size_t)a * slots + k] = gb;
                        g->pp_bwd_of[(size_t)z * slots + k] = gb;
                    }
#undef RANK_OF
    sim_free(rank_of);
    sim_free(m);
    return 0;
}

void plan__groups_select(gen *g, int r)
{
    const plan_coord *k = &g->p->coords[r];
    g->rank = r;
    g->g_shard = g->shard_of[r];
    g->g_rep = g->rep_of[r];
    g->g_tp = g->tp_of[r];
    g->g_cp = g->cp_of[r];
    g->g_ep = g->ep_of[r];
    g->g_edp = g->edp_of[r];
    g->stage = k->c[PLAN_GROUP_PP];
    g->pp_fwd = &g->pp_fwd_of[(size_t)r * (size_t)g->pp_slots];
    g->pp_bwd = &g->pp_bwd_of[(size_t)r * (size_t)g->pp_slots];
}

void plan__groups_destroy(gen *g)
{
    sim_free(g->shard_of);
    sim_free(g->rep_of);
    sim_free(g->tp_of);
    sim_free(g->cp_of);
    sim_free(g->ep_of);
    sim_free(g->edp_of);
    sim_free(g->pp_fwd_of);
    sim_free(g->pp_bwd_of);
}
