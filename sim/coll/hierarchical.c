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

#include <stdlib.h>

#include "coll/coll-internal.h"

typedef struct hier_layout {
    int nodes, per_node;
    int32_t *at; /* at[a·per_node + l]: member l of node a */
} hier_layout;

/* A member and its node; for the per-node table, `node` is instead the index in the sorted
 * array where that node's members start and `member` its first member. */
typedef struct member_node {
    int32_t node, member;
} member_node;

static int by_member(const void *pa, const void *pb)
{
    const member_node *a = pa, *b = pb;
    return (a->member > b->member) - (a->member < b->member);
}

static int by_node_then_member(const void *pa, const void *pb)
{
    const member_node *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return by_member(pa, pb);
}

/* Groups the members by node. Returns false (and leaves `lay` empty) unless there are at
 * least two nodes with the same number of members each; on success the caller frees lay->at. */
static bool layout_init(hier_layout *lay, const coll_group *g)
{
    *lay = (hier_layout){0};
    int n = g->n;
    if (!g->node || n < 2)
        return false;
    member_node *mn = sim_calloc((size_t)n, sizeof(*mn));
    for (int m = 0; m < n; m++)
        mn[m] = (member_node){.node = g->node[m], .member = m};
    qsort(mn, (size_t)n, sizeof(*mn), by_node_then_member);

    /* one entry per node: its first member and where its members start in mn (nodes in
     * node-id order for now) */
    member_node *first = sim_calloc((size_t)n, sizeof(*first));
    int nodes = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || mn[i].node != mn[i - 1].node)
            first[nodes++] = (member_node){.node = i, .member = mn[i].member};
    int per_node = n / nodes;
    bool ok = nodes >= 2 && per_node * nodes == n;
    for (int a = 0; ok && a < nodes; a++)
        ok = (a + 1 < nodes ? first[a + 1].node : n) - first[a].node == per_node;
    if (ok) {
        /* nodes in order of their first member (members are distinct, so no ties) */
        qsort(first, (size_t)nodes, sizeof(*first), by_member);
        lay->nodes = nodes;
        lay->per_node = per_node;
        lay->at = sim_calloc((size_t)n, sizeof(*lay->at));
        for (int a = 0; a < nodes; a++)
            for (int l = 0; l < per_node; l++)
                lay->at[a * per_node + l] = mn[first[a].node + l].member;
    }
    sim_free(first);
    sim_free(mn);
    return ok;
}

static bool hier_supports(coll_op op, const coll_group *g)
{
    if (op != COLL_ALL_REDUCE && op != COLL_ALL_GATHER && op != COLL_REDUCE_SCATTER)
        return false;
    hier_layout lay;
    bool ok = layout_init(&lay, g);
    sim_free(lay.at);
    return ok;
}

/* `rounds` rounds of the intra-node rings, each member sending `bytes` to its successor. */
static void intra_rounds(coll_schedule *s, const hier_layout *lay, int rounds, double bytes)
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
static void inter_rounds(coll_schedule *s, const hier_layout *lay, int rounds, double bytes)
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
                       int root, int chunks)
{
    (void)root;
    (void)chunks;
    hier_layout lay;
    bool ok = layout_init(&lay, g);
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
