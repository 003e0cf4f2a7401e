/* Ranks that share a template's ops (trace.h, "Shared ranks"; docs/performance.md).
 *
 * In a dense model every rank of one pipeline stage does the same work: the same kernels,
 * the same collectives in the same order, on its own tensor-, data-, context- and
 * pipeline-parallel groups. The generator emits the first rank of each stage (the
 * template) and makes the others borrow its ops. A borrower still gets its own collective
 * instances: for each collective op of the template, in order, the group that plays the
 * same role for the borrower (its tp group for the template's tp group, its pipeline pair of
 * the same chunk boundary and direction, ...), whose next instance it joins exactly as a
 * generated rank would (plan__coll_next checks the op and size agree with the group's other
 * members). A rank whose role groups differ in size from the template's, or whose end of a
 * pipeline pair differs, is generated instead.
 *
 * With the optimizer offloaded, CPU Adam's duration is in the ops: a rank borrows only from a
 * template whose CPU Adam runs at the same rate (the host memory's bandwidth split among the
 * GPUs that share it), and is generated otherwise.
 *
 * Mixture-of-experts models: each EP block draws its own routing, so a rank's expert
 * kernels run on its own token counts. Each rank is generated (its collectives joined, its
 * routing drawn, its FLOPs counted as for any generated rank), then compared with its
 * template: when only compute ops' FLOPs, model FLOPs and bytes differ (the expert
 * kernels), it keeps those values and borrows the template's arrays (trace_adopt_template):
 * about 20 bytes per op of the rank instead of ~140. A rank that differs otherwise keeps
 * its own ops. Not with streaming (`stepsim mem` walks and frees each rank as it goes).
 *
 * Not shared (every rank generated): any plan created with plan_options.no_op_sharing
 * (`stepsim run --no-op-sharing`), which the tests use to check that sharing changes no
 * result. */
#include "core/sim.h"

#include <string.h>

#include "plan/gen-internal.h"

enum { ROLE_SHARD, ROLE_REP, ROLE_TP, ROLE_CP, ROLE_EP, ROLE_EDP, ROLE_PP };

static int role_count(const gen *g)
{
    return ROLE_PP + 2 * g->pp_slots;
}

/* The group rank `r` has in role `role` (the pipeline roles: forward pair of each chunk
 * boundary, then backward pair of each); arrays left at 0 for roles a rank does not have
 * point at some group it is not in, which callers check. */
static uint32_t role_group(const gen *g, int r, int role)
{
    switch (role) {
    case ROLE_SHARD: return g->shard_of[r];
    case ROLE_REP: return g->rep_of[r];
    case ROLE_TP: return g->tp_of[r];
    case ROLE_CP: return g->cp_of[r];
    case ROLE_EP: return g->ep_of[r];
    case ROLE_EDP: return g->edp_of[r];
    default: break;
    }
    int b = role - ROLE_PP;
    size_t S = (size_t)g->pp_slots;
    return b < g->pp_slots ? g->pp_fwd_of[(size_t)r * S + (size_t)b]
                           : g->pp_bwd_of[(size_t)r * S + (size_t)(b - g->pp_slots)];
}

/* Place of `r` in `group`, -1 when not a member. */
static int member_index(const trace *t, uint32_t group, int r)
{
    const trace_group *gr = &t->groups[group];
    for (int m = 0; m < gr->n; m++)
        if (gr->ranks[m] == r)
            return m;
    return -1;
}

void plan__share_init(gen *g, plan_share *s, bool stream)
{
    int n = g->p->n_ranks;
    bool moe = g->n_local > 0;
    *s = (plan_share){.enabled = g->sharing && !(moe && stream), .adopt = moe, .n = n};
    s->tmpl = sim_calloc((size_t)n, sizeof *s->tmpl);
    s->users = sim_calloc((size_t)n, sizeof *s->users);
    s->model_flops = sim_calloc((size_t)n, sizeof *s->model_flops);
    s->hardware_flops = sim_calloc((size_t)n, sizeof *s->hardware_flops);
    s->roles = sim_calloc((size_t)n, sizeof *s->roles);
    /* a template per stage and GPU model (node groups: a kernel's time is its GPU's) */
    const hw_topology_spec *ts = &g->sc->topology;
    int kinds = SIM_MAX(1, ts->n_groups);
    int *first = sim_calloc((size_t)g->pp * (size_t)kinds, sizeof *first);
    for (int k = 0; k < g->pp * kinds; k++)
        first[k] = -1;
    for (int r = 0; r < n; r++) {
        int stage = g->p->coords[r].c[PLAN_GROUP_PP] * kinds +
                    hw_topology_group_of(ts, g->p->coords[r].node);
        s->tmpl[r] = -1;
        if (!s->enabled)
            continue;
        if (first[stage] < 0) {
            first[stage] = r;
        } else if (g->sc->parallel.offload.optimizer != PLAN_OFFLOAD_NONE &&
                   plan__cpu_adam_Bps(g, r) != plan__cpu_adam_Bps(g, first[stage])) {
            continue; /* its own CPU Adam rate: generated */
        } else {
            s->tmpl[r] = first[stage];
            s->users[first[stage]]++;
        }
    }
    sim_free(first);
}

void plan__share_clear(plan_share *s)
{
    if (s->roles)
        for (int i = 0; i < s->n; i++)
            sim_free(s->roles[i]);
    sim_free(s->roles);
    sim_free(s->tmpl);
    sim_free(s->users);
    sim_free(s->model_flops);
    sim_free(s->hardware_flops);
    memset(s, 0, sizeof *s);
}

/* After template `T` was generated: the role of each of its collective ops' groups. */
void plan__share_template_done(gen *g, plan_share *s, int T)
{
    if (s->users[T] == 0)
        return;
    const trace_rank *tr = &g->t->ranks[T];
    int n_roles = role_count(g);
    uint16_t *role = sim_calloc(tr->n_colls + 1, sizeof *role);
    for (size_t k = 0; k < tr->n_colls; k++) {
        uint32_t tg = g->t->colls[tr->colls[k]].group;
        int j = 0;
        while (j < n_roles && !(role_group(g, T, j) == tg && member_index(g->t, tg, T) >= 0))
            j++;
        SIM_ASSERT(j < n_roles, "rank %d: collective %zu on group %u that is none of its roles",
                   T, k, tg);
        role[k] = (uint16_t)j;
    }
    s->roles[T] = role;
}

bool plan__share_clone(gen *g, plan_share *s, int r)
{
    int T = s->tmpl[r];
    if (T < 0 || !s->roles[T] || s->adopt)
        return false;
    const trace_rank *tr = &g->t->ranks[T];
    const uint16_t *role = s->roles[T];
    /* every role the template uses: the same group size; in a pipeline pair, the same end
     * (sender or receiver). Within tensor-, data-, context- or expert-parallel groups the
     * place does not change a rank's ops: their collectives are symmetric. */
    int n_roles = role_count(g);
    bool *checked = sim_calloc((size_t)n_roles, sizeof *checked);
    bool ok = true;
    for (size_t k = 0; k < tr->n_colls && ok; k++) {
        int j = role[k];
        if (checked[j])
            continue;
        checked[j] = true;
        uint32_t tg = role_group(g, T, j), cg = role_group(g, r, j);
        ok = g->t->groups[tg].n == g->t->groups[cg].n &&
             (j < ROLE_PP ? member_index(g->t, cg, r) >= 0
                          : member_index(g->t, cg, r) == member_index(g->t, tg, T));
    }
    sim_free(checked);
    if (!ok)
        return false;
    trace_share_rank(g->t, r, T);
    trace_reserve_rank_colls(g->t, r, tr->n_colls);
    for (size_t k = 0; k < tr->n_colls; k++) {
        const trace_coll *tc = &g->t->colls[tr->colls[k]];
        uint32_t id = plan__coll_next(g, role_group(g, r, role[k]), (coll_op)tc->op, tc->bytes);
        trace_add_rank_coll(g->t, r, id);
    }
    g->model_flops += s->model_flops[T];
    g->hardware_flops += s->hardware_flops[T];
    return true;
}

void plan__share_adopt(gen *g, plan_share *s, int r)
{
    int T = s->tmpl[r];
    if (!s->adopt || T < 0)
        return;
    trace_finish_rank(g->t, r);
    (void)trace_adopt_template(g->t, r, T);
}
