/* Ring algorithms (Patarasuk & Yuan 2009; NCCL's rings).
 *
 * all_reduce: reduce-scatter then all-gather around the ring, 2(n-1) rounds in which every
 * member sends S/n to its successor: 2(n-1)·α + 2(n-1)/n · S/B on a uniform ring.
 * all_gather / reduce_scatter: n-1 such rounds. all_to_all is not a ring operation.
 * broadcast / reduce: a chain from (to) the root, pipelined in `chunks` pieces: with C
 * chunks, n-2+C rounds of S/C, so large messages approach S/B and small ones (n-1)·α.
 * send_recv: one transfer from member 0 to member 1.
 * ring_shift: one round in which every member sends S to its successor: α + S/B.
 *
 * Channels across nodes (all_reduce, all_gather, reduce_scatter). NCCL runs several rings at
 * once (channels), each carrying a share of the data and leaving each node through its own
 * GPU and NIC, so the nodes' NICs all carry the inter-node traffic (NCCL 2.30
 * src/graph/search.cc builds one ring graph per channel, NET -> GPUs of the node -> NET;
 * connect.cc chains them across nodes). When the group is spread evenly over N >= 2 nodes
 * with L >= 2 members each (coll__layout_init: nodes in order of their first member, local
 * index l in group order), there are L rings of S/L each: ring k enters node a at local
 * e = (k - a) mod L, visits e, e+1, .., e-1 (mod L), and crosses from that last member to
 * the same local index of node a+1, its entry there, so every crossing stays on one rail
 * (rail-optimized fabrics) except the wrap from the last node to the first (unless L divides
 * N). Each member is the exit of exactly one ring (k = l + a + 1 mod L): per round it sends
 * (L-1)/L of its piece to its node's next member and 1/L to the next node, and each node's
 * L members send 1/L each across, over their own NICs. Rounds and bytes per member are those
 * of one ring; only the links change. Otherwise (one node, uneven nodes, n <= 2) the ring
 * follows the group order. */
#include "core/sim.h"

#include "coll/coll-internal.h"

static bool ring_supports(coll_op op, const coll_group *g)
{
    (void)g;
    return op != COLL_ALL_TO_ALL && (op != COLL_SEND_RECV || g->n == 2);
}

static void ring_rounds(coll_schedule *s, int n, int rounds, double bytes)
{
    for (int r = 0; r < rounds; r++) {
        coll_schedule_round(s);
        for (int m = 0; m < n; m++)
            coll_schedule_add(s, m, (m + 1) % n, bytes);
    }
}

/* The rings of all_reduce, all_gather and reduce_scatter: `rounds` rounds in which every
 * member sends `bytes` along the ring, NCCL's channels on a group spread evenly over nodes
 * (see the top), the group order otherwise. */
static void nccl_rounds(coll_schedule *s, const coll_group *g, int rounds, double bytes)
{
    s->dataflow = rounds > 1 ? g->n : 0;
    coll_layout lay = {0};
    if (g->n < 3 || !coll__layout_init(&lay, g) || lay.per_node < 2) {
        sim_free(lay.at); /* (a layout of one member per node is set up, then not used) */
        ring_rounds(s, g->n, rounds, bytes);
        return;
    }
    int L = lay.per_node, N = lay.nodes;
    for (int r = 0; r < rounds; r++) {
        coll_schedule_round(s);
        for (int a = 0; a < N; a++)
            for (int l = 0; l < L; l++) {
                int m = lay.at[a * L + l];
                /* L - 1 channels go on to the next member of the node; the one whose exit
                 * m is crosses to the same local index on the next node (from the last node
                 * to local (l + N) mod L of the first, where the channel entered) */
                int cross = a + 1 < N ? lay.at[(a + 1) * L + l] : lay.at[(l + N) % L];
                coll_schedule_add(s, m, lay.at[a * L + (l + 1) % L], bytes * (L - 1) / L);
                coll_schedule_add(s, m, cross, bytes / L);
            }
    }
    sim_free(lay.at);
}

/* A pipelined chain root -> root+1 -> ... (or the reverse for reduce). */
static void chain(coll_schedule *s, int n, int root, double bytes, double chunks,
                  bool toward_root)
{
    int hops = n - 1, pieces = coll_pieces(chunks);
    for (int t = 0; t < hops + pieces - 1; t++) {
        coll_schedule_round(s);
        for (int k = 0; k < hops; k++) {
            int c = t - k; /* the chunk on hop k in round t */
            if (c < 0 || c >= pieces)
                continue;
            double piece = coll_piece_bytes(bytes, chunks, c);
            if (!toward_root)
                coll_schedule_add_piece(s, (root + k) % n, (root + k + 1) % n, piece,
                                        coll_piece_kind(chunks, c, k == 0));
            else /* from the far end: root+n-1 -> root+n-2 -> ... -> root+1 -> root */
                coll_schedule_add_piece(s, (root + n - 1 - k) % n, (root + n - 2 - k) % n,
                                        piece, coll_piece_kind(chunks, c, k == 0));
        }
    }
}

static void ring_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                       int root, double chunks)
{
    int n = g->n;
    switch (op) {
    case COLL_ALL_REDUCE:
        nccl_rounds(s, g, 2 * (n - 1), bytes / n);
        return;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
        nccl_rounds(s, g, n - 1, bytes / n);
        return;
    case COLL_BROADCAST:
        chain(s, n, root, bytes, chunks, false);
        return;
    case COLL_REDUCE:
        chain(s, n, root, bytes, chunks, true);
        return;
    case COLL_SEND_RECV:
        coll_schedule_round(s);
        coll_schedule_add(s, 0, 1, bytes);
        return;
    case COLL_RING_SHIFT:
        ring_rounds(s, n, 1, bytes);
        return;
    case COLL_ALL_TO_ALL:
    case COLL_OP_COUNT:
        break;
    }
    SIM_ASSERT(0, "ring %s", coll_op_name(op));
}

static bool ring_pipelined(coll_op op)
{
    return op == COLL_BROADCAST || op == COLL_REDUCE; /* the chains */
}

const coll_algo_ops coll__ring_ops = {
    .name = "ring",
    .supports = ring_supports,
    .build = ring_build,
    .pipelined = ring_pipelined,
};
