/* All-to-all: direct and pairwise exchange (Thakur, Rabenseifner & Gropp, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 19(1), 2005; NCCL's
 * all_to_all is the direct form: one grouped ncclSend/ncclRecv to every peer).
 *
 * S is the whole send buffer of a member (coll.h): it sends S/n to every member, keeping its
 * own block, so it sends and receives (n-1)/n·S in all.
 *   direct:   one round in which every member sends S/n to each of the n-1 others; with
 *             full-duplex ports T = α + (n-1)/n·S/B on an ideal star (the n-1 flows leaving a
 *             member share its egress, those arriving share its ingress).
 *   pairwise: n-1 rounds; in round k = 1..n-1 member i sends S/n to member (i+k) mod n (and
 *             receives from (i-k) mod n), so each port carries one flow per round:
 *             T = (n-1)·α + (n-1)/n·S/B. It trades latency for freedom from incast, which
 *             matters when the fabric (not the GPU port) is the bottleneck.
 * Both support all_to_all only. */
#include "core/sim.h"

#include "coll/coll-internal.h"

static bool a2a_supports(coll_op op, const coll_group *g)
{
    (void)g;
    return op == COLL_ALL_TO_ALL;
}

static void direct_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                         int root, double chunks)
{
    (void)root;
    (void)chunks;
    SIM_ASSERT(op == COLL_ALL_TO_ALL, "direct %s", coll_op_name(op));
    int n = g->n;
    coll_schedule_round(s);
    for (int i = 0; i < n; i++)
        for (int k = 1; k < n; k++)
            coll_schedule_add(s, i, (i + k) % n, bytes / n);
}

static void pairwise_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                           int root, double chunks)
{
    (void)root;
    (void)chunks;
    SIM_ASSERT(op == COLL_ALL_TO_ALL, "pairwise %s", coll_op_name(op));
    int n = g->n;
    for (int k = 1; k < n; k++) {
        coll_schedule_round(s);
        for (int i = 0; i < n; i++)
            coll_schedule_add(s, i, (i + k) % n, bytes / n);
    }
}

const coll_algo_ops coll__direct_ops = {
    .name = "direct",
    .supports = a2a_supports,
    .build = direct_build,
};

const coll_algo_ops coll__pairwise_ops = {
    .name = "pairwise",
    .supports = a2a_supports,
    .build = pairwise_build,
};
