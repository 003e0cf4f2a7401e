/* Double binary tree (Sanders, Speck & Träff, "Two-tree algorithms for full bandwidth
 * broadcast, reduction and scan", Parallel Computing 35(12), 2009; NCCL 2.4's "Tree"
 * algorithm, NVIDIA blog "Massively Scale Your Deep Learning Training with NCCL 2.4", 2019,
 * and NCCL src/graph/trees.cc).
 *
 * Shapes, as NCCL builds them (ncclGetBtree / ncclGetDtree): tree A over positions 0..n-1 is
 * rooted at 0; a position p > 0 with lowest set bit b has parent (p ^ b) | 2b, or p ^ b when
 * that is >= n. The root has a single child, so every odd position is a leaf and every even
 * one interior. Tree B is A mirrored (member i of B sits where n-1-i sits in A) when n is
 * even, and A shifted by one (member i of B sits where i-1 mod n sits in A) when n is odd.
 * Mirrored, the leaves of B are the interior members of A, so every member is interior in
 * exactly one tree. Shifted (odd n) that cannot hold: NCCL's shape has (n+1)/2 interior
 * members, two trees need n+1 interior slots, and member 0 is interior in both.
 * The height H of both trees is ceil(log2 n) (n >= 2).
 *
 * Each tree carries half of the data, split into C = `chunks` chunks of S/(2C); a round
 * moves at most one chunk over each tree edge and direction, and a member forwards a chunk
 * in the round after it has everything it needs (ASAP), so both trees run in the same rounds:
 *   reduce up:      member m sends chunk c to its parent in round height(m) + c, i.e. once
 *                   its children (height <= height(m) - 1) have sent theirs. A member's two
 *                   children send to it in the same round and share its ingress port.
 *   broadcast down: parent p sends chunk c to each child in round D + depth(p) + c.
 * all_reduce  = reduce up then broadcast down, overlapped as NCCL's tree kernel overlaps them
 *               (the root starts sending chunk c down as soon as it is reduced, D = H):
 *               2H + C - 1 rounds. Over the whole operation every member sends and receives
 *               S/2 per tree edge it touches: 2S for a member interior in one tree with two
 *               children there, less for the roots. In the steady state an interior member
 *               moves 4 chunks each way per round (two children's reduce chunks plus its
 *               parent's broadcast chunk in its interior tree, one broadcast chunk in the other),
 *               so on an ideal star T <= (2H + C - 1)·(α + 2S/(C·B)). That tends to 2S/B
 *               for C >> H (full bandwidth, close to the ring's 2(n-1)/n·S/B, which is
 *               Sanders et al.'s point), and its latency term at C = 1, 2·ceil(log2 n)·α,
 *               grows with log2(n) where the ring's 2(n-1)·α grows with n.
 * broadcast   = broadcast down both trees, each with half the data (D = 0): H + C - 1 rounds.
 * reduce      = reduce up both trees, each with half the data: H + C - 1 rounds.
 *               For both, the trees are re-rooted at `root`: A is rotated by root; in B the
 *               roles of B's root position (n-1 mirrored, 1 shifted) and position 0 are swapped,
 *               then B is rotated the same way. The root has one child in each tree and sends
 *               (receives) S in all; a member moves at most two chunks each way per round, so
 *               T <= (H + C - 1)·(α + S/(C·B)), tending to S/B for C >> H.
 * NCCL uses trees for all_reduce only (broadcast/reduce run on rings); the rooted variants
 * are this simulator's use of the same two trees over members, as Sanders et al. do for
 * broadcast.
 *
 * Nodes (all_reduce). NCCL builds the double binary tree over nodes, not ranks, and chains
 * the ranks of a node (NCCL 2.30 src/graph/connect.cc: ncclTopoPreset sets tree.up to the
 * previous rank of the node's intra-node order and tree.down[0] to the next one;
 * connectTrees joins the first rank of each node to its parent and child nodes by
 * ncclGetDtree over nNodes; both trees share the intra-node chain), and runs it on several
 * channels whose intra-node orders, found per channel by its topology search, start at
 * different GPUs, so that each channel reaches the network through its own NIC. Here, when
 * some node holds several members of the group (coll_group.node; nodes taken in order of
 * their first member, a node's members in group order, local index l):
 *   - nodes of L >= 2 members each (coll__layout_init), N >= 2 of them: L channels, each
 *     with its two trees, S/(2L) each. Channel k chains every node's members from local k:
 *     k <- k+1 <- ... <- k+L-1 (mod L); local k of the node at position a has as parent local
 *     k of the node at A's (or B's) parent position of a, so channel k crosses nodes between
 *     members of local index k only (one rail). A member pair's pieces in one round merge
 *     into one transfer (the channels share chain edges).
 *   - otherwise (one node, or nodes of different sizes): one channel, headed by each node's
 *     first member: member l > 0 has parent l-1 of its node in both trees. On a single node
 *     both trees are the chain 0 <- 1 <- ... <- n-1: H = n-1, 2(n-1) + C - 1 rounds, NCCL's
 *     tuning model's 2(nRanks/nNodes - 1) intra-node steps (tuning.cc).
 * When every member is on a node of its own (or nodes are not known), the member-level trees
 * above are exactly NCCL's. The rooted operations ignore nodes. */
#include "core/sim.h"

#include <stdlib.h>

#include "coll/coll-internal.h"

typedef struct tree_shape {
    int32_t *parent; /* member's parent, -1 at the root */
    int32_t *depth;  /* edges from the root */
    int32_t *height; /* edges on the longest path down to a leaf below the member */
    int root;        /* member at the root */
} tree_shape;

/* Parent of position p in NCCL's binary tree of n positions rooted at 0 (ncclGetBtree). */
static int btree_parent(int n, int p)
{
    if (p == 0)
        return -1;
    int bit = p & -p;
    int up = (p ^ bit) | (bit << 1);
    return up >= n ? p ^ bit : up;
}

/* Parent of position p in tree B (ncclGetDtree): mirrored for even n, shifted for odd n. */
static int dtree_parent(int n, int p)
{
    if (n % 2 == 0) {
        int u = btree_parent(n, n - 1 - p);
        return u < 0 ? -1 : n - 1 - u;
    }
    int u = btree_parent(n, (p - 1 + n) % n);
    return u < 0 ? -1 : (u + 1) % n;
}

/* Member holding position p of tree `which`: with `root` < 0, p itself; re-rooted, B first
 * swaps position 0 with its root position, then both trees rotate by `root`. */
static int member_of(int n, int p, int which, int pos_root, int root)
{
    if (root < 0)
        return p;
    if (which == 1)
        p = p == 0 ? pos_root : p == pos_root ? 0 : p;
    return (p + root) % n;
}

/* Depth, height and root of a tree given by its parent array (taken over by `t`). */
static void shape_from_parents(tree_shape *t, int n, int32_t *parent)
{
    t->parent = parent;
    t->depth = sim_calloc((size_t)n, sizeof(*t->depth));
    t->height = sim_calloc((size_t)n, sizeof(*t->height));
    t->root = -1;
    /* Depth by walking up. The same walk reaches each ancestor at distance d from m, and an
     * ancestor's height is its largest such distance. */
    for (int m = 0; m < n; m++) {
        if (t->parent[m] < 0)
            t->root = m;
        int d = 0;
        for (int cur = m; t->parent[cur] >= 0; cur = t->parent[cur]) {
            d++;
            SIM_ASSERT(d < n, "tree over %d members has a cycle at member %d", n, m);
            t->height[t->parent[cur]] = SIM_MAX(t->height[t->parent[cur]], d);
        }
        t->depth[m] = d;
    }
    SIM_ASSERT(t->root >= 0, "tree over %d members without a root", n);
}

/* Builds tree `which` (0 = A, 1 = B) over members. With `root` < 0 the trees keep NCCL's
 * positions (all_reduce); otherwise they are re-rooted at member `root` as explained above. */
static void shape_init(tree_shape *t, int n, int which, int root)
{
    int32_t *parent = sim_calloc((size_t)n, sizeof(*parent));
    int pos_root = which == 0 ? 0 : (n % 2 == 0 ? n - 1 : 1);
    for (int p = 0; p < n; p++) {
        int up = which == 0 ? btree_parent(n, p) : dtree_parent(n, p);
        int m = member_of(n, p, which, pos_root, root);
        parent[m] = up < 0 ? -1 : member_of(n, up, which, pos_root, root);
    }
    shape_from_parents(t, n, parent);
}

/* A member and its node (for sorting). */
/* NCCL's all_reduce trees on a group spread over nodes (connect.cc, connectTrees and the
 * intra-node part of ncclTopoPreset): fills parent[0] (tree A) and parent[1] (tree B) with
 * each member's parent, -1 at the root. Returns false, filling nothing, when every member is
 * on a node of its own (or nodes are not known): the member-level trees then apply. */
static bool node_parents(const coll_group *g, int32_t *parent[2])
{
    int n = g->n;
    if (!g->node)
        return false;
    int32_t *order = sim_calloc((size_t)n, sizeof(*order));
    int32_t *start = sim_calloc((size_t)n + 1, sizeof(*start));
    int nodes = coll__group_by_node(g, order, start);
    bool shared = nodes < n;
    if (shared) {
        /* node positions 0..N-1 in order of their first member; each node's first member
         * joins the trees, the others chain below it */
        for (int a = 0; a < nodes; a++)
            for (int k = 0; k < 2; k++) {
                int up = k == 0 ? btree_parent(nodes, a) : dtree_parent(nodes, a);
                parent[k][order[start[a]]] = up < 0 ? -1 : order[start[up]];
                for (int i = start[a] + 1; i < start[a + 1]; i++)
                    parent[k][order[i]] = order[i - 1]; /* the chain */
            }
    }
    sim_free(start);
    sim_free(order);
    return shared;
}

static void shape_clear(tree_shape *t)
{
    sim_free(t->parent);
    sim_free(t->depth);
    sim_free(t->height);
}

static bool tree_supports(coll_op op, const coll_group *g)
{
    (void)g;
    return op == COLL_ALL_REDUCE || op == COLL_BROADCAST || op == COLL_REDUCE;
}

/* NCCL's channels on a group spread evenly over N >= 2 nodes of L >= 2 members (`lay`, see
 * the top): channel k's two trees, its chain starting at local k of every node, in
 * t[2k] (A) and t[2k + 1] (B). */
static void channel_shapes(const coll_layout *lay, int n, tree_shape *t)
{
    int L = lay->per_node, N = lay->nodes;
    for (int k = 0; k < L; k++)
        for (int which = 0; which < 2; which++) {
            int32_t *parent = sim_calloc((size_t)n, sizeof(*parent));
            for (int a = 0; a < N; a++)
                for (int j = 0; j < L; j++) {
                    int m = lay->at[a * L + (k + j) % L];
                    if (j > 0) {
                        parent[m] = lay->at[a * L + (k + j - 1) % L]; /* the chain */
                        continue;
                    }
                    int up = which == 0 ? btree_parent(N, a) : dtree_parent(N, a);
                    parent[m] = up < 0 ? -1 : lay->at[up * L + k];
                }
            shape_from_parents(&t[2 * k + which], n, parent);
        }
}

/* A transfer of the round being merged and its coll_piece_kind. */
typedef struct piece {
    coll_xfer x;
    uint8_t front;
} piece;

static int by_ends(const void *pa, const void *pb)
{
    const coll_xfer *a = &((const piece *)pa)->x, *b = &((const piece *)pb)->x;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return (a->dst > b->dst) - (a->dst < b->dst);
}

/* Merges the current round's transfers between the same two members into one (the channels'
 * trees share their chains' edges): sorted by (source, destination), bytes summed, of the
 * largest kind of its pieces (a first piece's latency is the merged transfer's, else a
 * slot's wait). The sort and the sums are the same for the same round. */
static void merge_round(coll_schedule *s)
{
    size_t first = s->round_first[s->n_rounds - 1], n = s->n_xfers - first;
    if (n < 2)
        return;
    piece *p = sim_calloc(n, sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (piece){s->xfers[first + i], s->front[first + i]};
    qsort(p, n, sizeof *p, by_ends);
    size_t w = 0;
    for (size_t i = 1; i < n; i++) {
        if (p[i].x.src == p[w].x.src && p[i].x.dst == p[w].x.dst) {
            p[w].x.bytes += p[i].x.bytes;
            p[w].front = SIM_MAX(p[w].front, p[i].front);
        } else {
            p[++w] = p[i];
        }
    }
    for (size_t i = 0; i <= w; i++) {
        s->xfers[first + i] = p[i].x;
        s->front[first + i] = p[i].front;
    }
    sim_free(p);
    s->n_xfers = first + w + 1;
    s->round_first[s->n_rounds] = s->n_xfers;
}

static void tree_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                       int root, double chunks)
{
    int n = g->n;
    SIM_ASSERT(op == COLL_ALL_REDUCE || (root >= 0 && root < n), "root %d of %d", root, n);
    bool up = op == COLL_ALL_REDUCE || op == COLL_REDUCE;
    bool down = op == COLL_ALL_REDUCE || op == COLL_BROADCAST;
    coll_layout lay = {0};
    bool channels = op == COLL_ALL_REDUCE && n > 2 && coll__layout_init(&lay, g) &&
                    lay.per_node >= 2;
    int n_shapes = channels ? 2 * lay.per_node : 2;
    tree_shape *t = sim_calloc((size_t)n_shapes, sizeof(*t));
    if (channels) {
        channel_shapes(&lay, n, t);
    } else {
        int32_t *parent[2] = {sim_calloc((size_t)n, sizeof(int32_t)),
                              sim_calloc((size_t)n, sizeof(int32_t))};
        if (op == COLL_ALL_REDUCE && node_parents(g, parent)) {
            for (int k = 0; k < 2; k++)
                shape_from_parents(&t[k], n, parent[k]);
        } else {
            for (int k = 0; k < 2; k++) {
                sim_free(parent[k]);
                shape_init(&t[k], n, k, op == COLL_ALL_REDUCE ? -1 : root);
            }
        }
    }

    /* first round of the broadcast phase, per tree; and the number of rounds: one past the
     * last round in which any edge still carries a chunk */
    int *down_first = sim_calloc((size_t)n_shapes, sizeof(*down_first)), rounds = 0;
    int pieces = coll_pieces(chunks);
    for (int k = 0; k < n_shapes; k++) {
        down_first[k] = up && down ? t[k].height[t[k].root] : 0;
        for (int m = 0; m < n; m++) {
            int p = t[k].parent[m];
            if (p < 0)
                continue;
            if (up)
                rounds = SIM_MAX(rounds, t[k].height[m] + pieces);
            if (down)
                rounds = SIM_MAX(rounds, down_first[k] + t[k].depth[p] + pieces);
        }
    }

    double share = bytes / n_shapes; /* each tree's, cut into pieces */
    for (int r = 0; r < rounds; r++) {
        coll_schedule_round(s);
        for (int k = 0; k < n_shapes; k++) {
            for (int m = 0; m < n; m++) {
                int p = t[k].parent[m];
                if (p < 0)
                    continue;
                int c_up = r - t[k].height[m];
                if (up && c_up >= 0 && c_up < pieces)
                    coll_schedule_add_piece(s, m, p, coll_piece_bytes(share, chunks, c_up),
                                            coll_piece_kind(chunks, c_up, t[k].height[m] == 0));
                int c_down = r - down_first[k] - t[k].depth[p];
                if (down && c_down >= 0 && c_down < pieces)
                    coll_schedule_add_piece(s, p, m, coll_piece_bytes(share, chunks, c_down),
                                            coll_piece_kind(chunks, c_down,
                                                            !up && t[k].depth[p] == 0));
            }
        }
        if (channels)
            merge_round(s);
    }

    for (int k = 0; k < n_shapes; k++)
        shape_clear(&t[k]);
    sim_free(t);
    sim_free(down_first);
    sim_free(lay.at);
}

const coll_algo_ops coll__tree_ops = {
    .name = "tree",
    .supports = tree_supports,
    .build = tree_build,
    .pipelined = coll__always,
};
