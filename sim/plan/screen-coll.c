/* The screen's collectives and groups (screen-internal.h): collective costs as the replay's
 * selector estimates them, memoized, and the members of a rank's groups from the layout. */
#include "core/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/select.h"
#include "plan/plan.h"
#include "plan/screen-internal.h"

/* Groups of more members than this are costed at sizes on a geometric grid (eight a
 * doubling) and interpolated between them: estimating a collective over hundreds of GPUs
 * costs milliseconds, and the sizes of gradient buckets differ from candidate to candidate. */
#define COLL_EXACT_MEMBERS 64
#define COLL_GRID_STEPS 8.0

static double coll_exact(plan_screen *S, const int32_t *gpus, int n, coll_op op, double bytes,
                         int algo);

double plan__screen_coll(plan_screen *S, const int32_t *gpus, int n, coll_op op, double bytes,
                        int algo)
{
    if (n <= 1 || bytes <= 0)
        return 0;
    if (n <= COLL_EXACT_MEMBERS)
        return coll_exact(S, gpus, n, op, bytes, algo);
    double k = floor(log2(bytes) * COLL_GRID_STEPS);
    double lo = exp2(k / COLL_GRID_STEPS), hi = exp2((k + 1) / COLL_GRID_STEPS);
    double tl = coll_exact(S, gpus, n, op, lo, algo), th = coll_exact(S, gpus, n, op, hi, algo);
    return tl + (th - tl) * (bytes - lo) / (hi - lo);
}

static double coll_exact(plan_screen *S, const int32_t *gpus, int n, coll_op op, double bytes,
                         int algo)
{
    uint64_t h = plan__screen_mix(plan__screen_mix(plan__screen_mix((uint64_t)n, (uint64_t)op), plan__screen_dbits(bytes)), (uint64_t)(algo + 1));
    for (int i = 0; i < n; i++)
        h = plan__screen_mix(h, (uint64_t)gpus[i]);
    if (2 * (S->n_colls + 1) > S->cap_colls) {
        size_t cap = S->cap_colls ? 2 * S->cap_colls : 1024;
        coll_memo *t = sim_calloc(cap, sizeof *t);
        for (size_t i = 0; i < S->cap_colls; i++)
            if (S->colls[i].gpus) {
                size_t k = S->colls[i].hash & (cap - 1);
                while (t[k].gpus)
                    k = (k + 1) & (cap - 1);
                t[k] = S->colls[i];
            }
        sim_free(S->colls);
        S->colls = t;
        S->cap_colls = cap;
    }
    size_t k = h & (S->cap_colls - 1);
    for (; S->colls[k].gpus; k = (k + 1) & (S->cap_colls - 1)) {
        const coll_memo *m = &S->colls[k];
        if (m->hash == h && m->n == n && m->op == (int)op && m->algo == algo &&
            m->bytes == bytes &&
            !memcmp(m->gpus, gpus, (size_t)n * sizeof *gpus))
            return m->s;
    }
    int32_t *node = sim_calloc((size_t)n, sizeof *node);
    for (int i = 0; i < n; i++)
        node[i] = hw_topo_device(S->topo, hw_topo_gpu_device(S->topo, gpus[i]))->node;
    bool sharp = hw_topology_node_spec(&S->base->topology, node[0])->intra.sharp;
    int sw = sharp ? hw_topo_common_nvswitch(S->topo, gpus, n) : -1;
    coll_group grp = {.n = n, .node = node, .nvls = sw >= 0};
    coll_target t = {.topo = S->topo, .protocols = &S->base->topology.protocols,
                     .scratch = S->scratch, .group = &grp, .gpu = gpus, .switch_dev = sw};
    coll_choice ch = {0};
    if (coll_select(&t, op, bytes, 0, algo, -1, &ch, NULL) != 0)
        coll_select(&t, op, bytes, 0, -1, -1, &ch, NULL);
    sim_free(node);
    coll_memo *m = &S->colls[k];
    *m = (coll_memo){.hash = h, .n = n, .op = (int)op, .algo = algo, .bytes = bytes,
                     .s = ch.est_s};
    m->gpus = sim_calloc((size_t)n, sizeof *m->gpus);
    memcpy(m->gpus, gpus, (size_t)n * sizeof *gpus);
    S->n_colls++;
    return ch.est_s;
}

/* Each class's stride in the rank index (plan_rank_coord's layout: the order inner to outer,
 * ep not a dimension of its own) into stride[], and its degree into deg[]. */
static void strides(const plan_parallel *par, int64_t *stride, int *deg)
{
    deg[PLAN_GROUP_DP] = par->dp;
    deg[PLAN_GROUP_TP] = par->tp;
    deg[PLAN_GROUP_PP] = par->pp;
    deg[PLAN_GROUP_EP] = 1;
    deg[PLAN_GROUP_CP] = par->cp;
    int64_t at = 1;
    for (int i = 0; i < PLAN_GROUP_COUNT; i++) {
        plan_group_class g = par->order[i];
        stride[g] = at;
        if (g != PLAN_GROUP_EP)
            at *= deg[g];
    }
}

int plan__screen_stage_rank(const plan_parallel *par, int s)
{
    int64_t stride[PLAN_GROUP_COUNT];
    int deg[PLAN_GROUP_COUNT];
    strides(par, stride, deg);
    return (int)(s * stride[PLAN_GROUP_PP]);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int plan__screen_members(const plan_parallel *par, int r, unsigned mask, int32_t *out)
{
    int64_t stride[PLAN_GROUP_COUNT];
    int deg[PLAN_GROUP_COUNT];
    strides(par, stride, deg);
    plan_coord me;
    plan_rank_coord(par, r, &me);
    /* the free dimensions: count and stride, from base, r with those coordinates at their
     * lowest */
    int64_t count[PLAN_GROUP_COUNT], step[PLAN_GROUP_COUNT];
    int nf = 0;
    int64_t base = r;
    for (int c = 0; c < PLAN_GROUP_COUNT; c++) {
        if (c == PLAN_GROUP_EP)
            continue;
        bool ep = c == PLAN_GROUP_DP && (mask & (1u << PLAN_GROUP_EP));
        bool edp = (mask & PLAN_SCREEN_EDP) && (c == PLAN_GROUP_DP || c == PLAN_GROUP_CP);
        if (!ep && !edp && !((mask >> c) & 1u))
            continue;
        bool blocks = edp && c == PLAN_GROUP_DP; /* the same place in every block */
        int64_t lo = ep ? me.c[c] / par->ep * par->ep : blocks ? me.c[c] % par->ep : 0;
        base -= (int64_t)(me.c[c] - lo) * stride[c];
        count[nf] = ep ? par->ep : blocks ? deg[c] / par->ep : deg[c];
        step[nf++] = blocks ? stride[c] * par->ep : stride[c];
    }
    int n = 0;
    int64_t idx[PLAN_GROUP_COUNT] = {0};
    for (;;) {
        int64_t k = base;
        for (int i = 0; i < nf; i++)
            k += idx[i] * step[i];
        out[n++] = (int32_t)k;
        int i = 0;
        while (i < nf && ++idx[i] == count[i])
            idx[i++] = 0;
        if (i == nf)
            break;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_i32);
    return n;
}
