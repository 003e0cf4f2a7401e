/* Hierarchical two-level collectives (Jia et al., "Highly Scalable Deep Learning Training
 * System with Mixed-Precision", arXiv:1807.11205, 2018; Horovod's hierarchical all_reduce:
 * NCCL reduce-scatter inside the node, all-reduce across nodes, NCCL all-gather inside).
 *
 * The group must span N >= 2 nodes (coll_group.node) with the same number L of members on
 * each, n = N·L; otherwise supports() is false. Nodes are taken in order of their first
 * member in the group and members of a node in group order (local index l = 0..L-1). An
 * intra-node ring links the members of a node (l -> l+1 mod L); an inter-node ring links the
 * members with the same local index (node a -> node a+1 mod N), and the L inter-node rings
 * run in the same rounds. S is the operation's size (coll.h), every ring round sends one
 * piece from each member to its successor:
 *   all_reduce:     intra reduce-scatter, L-1 rounds of S/L (local member l ends with the
 *                   node's partial sum of shard l); inter all_reduce of each shard, 2(N-1)
 *                   rounds of S/(L·N) (ring reduce-scatter then all-gather); intra all-gather,
 *                   L-1 rounds of S/L. 2(L-1) + 2(N-1) rounds; per member 2(L-1)/L·S intra and
 *                   2(N-1)/n·S inter, 2(n-1)/n·S in all, as a flat ring.
 *   reduce_scatter: intra reduce-scatter, L-1 rounds of S/L (local member l ends with the
 *                   node's partial sums of the N blocks owned by local members l of every
 *                   node), then inter reduce-scatter, N-1 rounds of S/n. (L-1) + (N-1) rounds;
 *                   per member (L-1)/L·S intra, (N-1)/n·S inter, (n-1)/n·S in all.
 *   all_gather:     the mirror: inter all-gather of the members' own blocks, N-1 rounds of
 *                   S/n (each node thus moves S/N per round), then intra all-gather of the
 *                   N blocks each member now holds, L-1 rounds of S/L. Same counts.
 * On an ideal star (B per port, α per round) all_reduce takes 2(L+N-2)·α + 2(n-1)/n·S/B and
 * the others (L+N-2)·α + (n-1)/n·S/B; with intra-node ports at B_intra and inter-node
 * paths at B_inter, all_reduce takes 2(L-1)·(α + S/(L·B_intra)) + 2(N-1)·(α + S/(n·B_inter)):
 * only 1/L of the data crosses the slow fabric, and in L parallel rings. */
#include "core/sim.h"

#include "coll/coll-internal.h"

static bool hier_supports(coll_op op, const coll_group *g)
{
    if (op != COLL_ALL_REDUCE && op != COLL_ALL_GATHER && op != COLL_REDUCE_SCATTER)
        return false;
    coll_layout lay;
    bool ok = coll__layout_init(&lay, g);
    sim_free(lay.at);
    return ok;
}

/* `rounds` rounds of the intra-node rings, each member sending `bytes` to its successor. */
static void intra_rounds(coll_schedule *s, const coll_layout *lay, int rounds, double bytes)
{
    int L = lay->per_node;
    for (int r = 0; r < rounds; r++) {
        coll_schedule_round(s);
        for (int a = 0; a < lay->nodes; a++)
            for (int l = 0; l < L; l++)
                coll_schedule_add(s, lay->at[a * L + l], lay->at[a * L + (l + 1) % L], bytes);
    }
}

/* `rounds` rounds of the L inter-node rings, each member sending `bytes` to its successor. */
static void inter_rounds(coll_schedule *s, const coll_layout *lay, int rounds, double bytes)
{
    int L = lay->per_node, N = lay->nodes;
    for (int r = 0; r < rounds; r++) {
        coll_schedule_round(s);
        for (int a = 0; a < N; a++)
            for (int l = 0; l < L; l++)
                coll_schedule_add(s, lay->at[a * L + l], lay->at[((a + 1) % N) * L + l], bytes);
    }
}

static void hier_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                       int root, double chunks)
{
    (void)root;
    (void)chunks;
    coll_layout lay;
    bool ok = coll__layout_init(&lay, g);
    SIM_ASSERT(ok, "hierarchical on a group of %d members without an even node split", g->n);
    int L = lay.per_node, N = lay.nodes, n = g->n;
    switch (op) {
    case COLL_ALL_REDUCE:
        intra_rounds(s, &lay, L - 1, bytes / L);
        inter_rounds(s, &lay, 2 * (N - 1), bytes / n);
        intra_rounds(s, &lay, L - 1, bytes / L);
        break;
    case COLL_REDUCE_SCATTER:
        intra_rounds(s, &lay, L - 1, bytes / L);
        inter_rounds(s, &lay, N - 1, bytes / n);
        break;
    case COLL_ALL_GATHER:
        inter_rounds(s, &lay, N - 1, bytes / n);
        intra_rounds(s, &lay, L - 1, bytes / L);
        break;
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_ALL_TO_ALL:
    case COLL_SEND_RECV:
    case COLL_RING_SHIFT:
    case COLL_OP_COUNT:
        SIM_ASSERT(0, "hierarchical %s", coll_op_name(op));
    }
    sim_free(lay.at);
}

const coll_algo_ops coll__hierarchical_ops = {
    .name = "hierarchical",
    .supports = hier_supports,
    .build = hier_build,
};
