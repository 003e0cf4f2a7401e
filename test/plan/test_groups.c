/* The rank layout and process groups of a plan (sim/plan/plan.c plan_rank_coord,
 * sim/plan/groups.c), against the order documented in groups.c and docs/strategies.md:
 * parallel.order lists the group classes inner to outer (default tp, cp, ep, dp, pp; ep does
 * not multiply the GPU count and its coordinate is dp mod ep), so under the default order
 *   rank = t + tp·(c + cp·(d + dp·s))
 * and a group's members are listed in ascending dp, then cp, coordinate. */
#include "core/sim.h"

#include "test.h"
#include "tiny.h"

/* The groups of class `cls` that `rank` belongs to, in creation order; returns how many. */
static int groups_of(const trace *t, int cls, int rank, const trace_group **out, int max)
{
    int n = 0;
    for (size_t i = 0; i < t->n_groups; i++) {
        const trace_group *g = &t->groups[i];
        if (g->cls != cls)
            continue;
        for (int k = 0; k < g->n; k++)
            if (g->ranks[k] == rank && n < max)
                out[n++] = g;
    }
    return n;
}

static void check_members(const trace_group *g, int n, const int32_t *expect, int rank,
                          const char *what)
{
    int same = g->n == n;
    for (int k = 0; same && k < n; k++)
        same = g->ranks[k] == expect[k];
    if (!same)
        fprintf(stderr, "rank %d: %s group differs (%d members)\n", rank, what, g->n);
    CHECK(same);
}

/* tp 2, cp 2, dp 2, pp 2: 16 ranks on one node, default order. Rank r has
 * t = r mod 2, c = (r / 2) mod 2, d = (r / 4) mod 2, s = r / 8, e = d mod 1 = 0; e.g. rank 13
 * = 1 + 2·(0 + 2·(1 + 2·1)): t 1, c 0, d 1, s 1. Its groups:
 *   dp (dp x cp, same s and t): t + 8s + {0, 2, 4, 6} ((d, c) = (0,0), (0,1), (1,0), (1,1)):
 *       rank 13 -> 9, 11, 13, 15
 *   tp (same s, c, d): r - t + {0, 1}: 12, 13
 *   cp (same s, t, d), the ring: r - 2c + {0, 2}: 13, 15
 *   pp (one chunk boundary, pp x 1 chunk): forward (r - 8s, r - 8s + 8) and backward the
 *       reverse: (5, 13) and (13, 5)
 * Counts: dp one per (s, t) = 4; tp one per (s, c, d) = 8; cp one per (s, t, d) = 8; pp two
 * per (t, c, d) = 16; no ep (ep = 1): 36 groups. */
static void test_4d_layout(void)
{
    plan_scenario sc;
    tiny_scenario(&sc, 16);
    sc.model = tiny_llama();
    sc.parallel.tp = sc.parallel.cp = sc.parallel.dp = sc.parallel.pp = 2;
    sc.training.global_batch = 4; /* micro_batch 1 x dp 2 x 2 micro-batches per pipeline */
    plan *p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK_INT_EQ(p->n_ranks, 16);
    CHECK_INT_EQ(p->accum_steps, 2);
    const trace *t = p->trace;
    CHECK_INT_EQ(t->n_groups, 36);
    for (int r = 0; r < 16; r++) {
        int tc = r % 2, c = (r / 2) % 2, d = (r / 4) % 2, s = r / 8;
        const plan_coord *k = &p->coords[r];
        CHECK_INT_EQ(k->node, 0);
        CHECK_INT_EQ(k->c[PLAN_GROUP_TP], tc);
        CHECK_INT_EQ(k->c[PLAN_GROUP_CP], c);
        CHECK_INT_EQ(k->c[PLAN_GROUP_DP], d);
        CHECK_INT_EQ(k->c[PLAN_GROUP_PP], s);
        CHECK_INT_EQ(k->c[PLAN_GROUP_EP], 0);

        const trace_group *g[4];
        int base = tc + 8 * s;
        int32_t dpm[4] = {base, base + 2, base + 4, base + 6};
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_DP, r, g, 4), 1);
        check_members(g[0], 4, dpm, r, "dp");
        int32_t tpm[2] = {r - tc, r - tc + 1};
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_TP, r, g, 4), 1);
        check_members(g[0], 2, tpm, r, "tp");
        int32_t cpm[2] = {r - 2 * c, r - 2 * c + 2};
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_CP, r, g, 4), 1);
        check_members(g[0], 2, cpm, r, "cp");
        int32_t fwd[2] = {r - 8 * s, r - 8 * s + 8}, bwd[2] = {r - 8 * s + 8, r - 8 * s};
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_PP, r, g, 4), 2);
        check_members(g[0], 2, fwd, r, "pp forward");
        check_members(g[1], 2, bwd, r, "pp backward");
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_EP, r, g, 4), 0);
    }
    /* the worked example of the comment */
    const trace_group *g13[4];
    CHECK_INT_EQ(groups_of(t, PLAN_GROUP_DP, 13, g13, 4), 1);
    CHECK_INT_EQ(g13[0]->ranks[0], 9);
    CHECK_INT_EQ(g13[0]->ranks[3], 15);
    plan_destroy(p);
}

/* dp 4 with ep 2 (a MoE model of 4 experts, 2 per rank): 4 ranks, rank = d, e = d mod 2.
 *   dp (all replicas): 0, 1, 2, 3
 *   ep (ep consecutive dp coordinates): {0, 1} and {2, 3}
 *   expert-dp (same e, over the dp / ep = 2 expert groups; class dp): {0, 2} and {1, 3}
 * so rank 1 is in dp groups {0, 1, 2, 3} and {1, 3}, ep group {0, 1}; 5 groups in all. */
static void test_expert_layout(void)
{
    plan_scenario sc;
    tiny_scenario(&sc, 4);
    sc.model = tiny_llama();
    sc.model.moe.experts = 4;
    sc.model.moe.top_k = 2;
    sc.model.moe.expert_ffn = 128;
    sc.parallel.dp = 4;
    sc.parallel.ep = 2;
    sc.training.global_batch = 4;
    plan *p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    const trace *t = p->trace;
    CHECK_INT_EQ(t->n_groups, 5);
    for (int r = 0; r < 4; r++) {
        int e = r % 2;
        CHECK_INT_EQ(p->coords[r].c[PLAN_GROUP_DP], r);
        CHECK_INT_EQ(p->coords[r].c[PLAN_GROUP_EP], e);
        const trace_group *g[4];
        int32_t all[4] = {0, 1, 2, 3}, edp[2] = {e, e + 2}, epm[2] = {r - e, r - e + 1};
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_DP, r, g, 4), 2);
        check_members(g[0], 4, all, r, "dp");
        check_members(g[1], 2, edp, r, "expert-dp");
        CHECK_INT_EQ(groups_of(t, PLAN_GROUP_EP, r, g, 4), 1);
        check_members(g[0], 2, epm, r, "ep");
    }
    plan_destroy(p);
}

/* plan_rank_coord under another order, inner to outer pp, dp, ep, tp, cp with pp 2, dp 2,
 * tp 2, cp 1, ep 2: rank = s + 2·(d + 2·t). Rank 6 = 0 + 2·(1 + 2·1): s 0, d 1, t 1,
 * e = 1 mod 2 = 1; rank 1 = 1 + 2·(0 + 0): s 1, d 0, t 0, e 0. */
static void test_custom_order(void)
{
    plan_parallel par = {.dp = 2, .tp = 2, .pp = 2, .ep = 2, .cp = 1,
                         .order = {PLAN_GROUP_PP, PLAN_GROUP_DP, PLAN_GROUP_EP, PLAN_GROUP_TP,
                                   PLAN_GROUP_CP}};
    plan_coord k;
    plan_rank_coord(&par, 6, &k);
    CHECK_INT_EQ(k.c[PLAN_GROUP_PP], 0);
    CHECK_INT_EQ(k.c[PLAN_GROUP_DP], 1);
    CHECK_INT_EQ(k.c[PLAN_GROUP_TP], 1);
    CHECK_INT_EQ(k.c[PLAN_GROUP_CP], 0);
    CHECK_INT_EQ(k.c[PLAN_GROUP_EP], 1);
    plan_rank_coord(&par, 1, &k);
    CHECK_INT_EQ(k.c[PLAN_GROUP_PP], 1);
    CHECK_INT_EQ(k.c[PLAN_GROUP_DP], 0);
    CHECK_INT_EQ(k.c[PLAN_GROUP_TP], 0);
    CHECK_INT_EQ(k.c[PLAN_GROUP_EP], 0);
}

int main(void)
{
    test_4d_layout();
    test_expert_layout();
    test_custom_order();
    return test_finish();
}
