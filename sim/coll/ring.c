/* Ring algorithms (Patarasuk & Yuan 2009; NCCL's rings).
 *
 * all_reduce: reduce-scatter then all-gather around the ring, 2(n-1) rounds in which every
 * member sends S/n to its successor: 2(n-1)·α + 2(n-1)/n · S/B on a uniform ring.
 * all_gather / reduce_scatter: n-1 such rounds. all_to_all is not a ring operation.
 * broadcast / reduce: a chain from (to) the root, pipelined in `chunks` pieces: with C
 * chunks, n-2+C rounds of S/C, so large messages approach S/B and small ones (n-1)·α.
 * send_recv: one transfer from member 0 to member 1.
 * ring_shift: one round in which every member sends S to its successor: α + S/B. */
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

/* A pipelined chain root -> root+1 -> ... (or the reverse for reduce). */
static void chain(coll_schedule *s, int n, int root, double bytes, int chunks, bool toward_root)
{
    int hops = n - 1;
    for (int t = 0; t < hops + chunks - 1; t++) {
        coll_schedule_round(s);
        for (int k = 0; k < hops; k++) {
            int c = t - k; /* the chunk on hop k in round t */
            if (c < 0 || c >= chunks)
                continue;
            if (!toward_root)
                coll_schedule_add(s, (root + k) % n, (root + k + 1) % n, bytes / chunks);
            else /* from the far end: root+n-1 -> root+n-2 -> ... -> root+1 -> root */
                coll_schedule_add(s, (root + n - 1 - k) % n, (root + n - 2 - k) % n,
                                  bytes / chunks);
        }
    }
}

static void ring_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                       int root, int chunks)
{
    int n = g->n;
    switch (op) {
    case COLL_ALL_REDUCE:
        ring_rounds(s, n, 2 * (n - 1), bytes / n);
        return;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
        ring_rounds(s, n, n - 1, bytes / n);
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
