/* Recursive halving-doubling (Thakur, Rabenseifner & Gropp, "Optimization of Collective
 * Communication Operations in MPICH", IJHPCA 19(1), 2005; Rabenseifner's all_reduce; MPICH's
 * MPIR_Allreduce_intra_reduce_scatter_allgather).
 *
 * For n = 2^k members, with S the operation's size (nccl-tests conventions, coll.h):
 *   reduce_scatter by recursive halving: k rounds; in round j = 0..k-1 member i exchanges
 *                  S/2^(j+1) with partner i XOR 2^j (distance 1 first, as MPICH does): it
 *                  sends the half of its current piece that the partner keeps and reduces the
 *                  half it receives. The halves are strided (split by bit j of the block index),
 *                  so member i ends with block i. Per member (n-1)/n·S each way;
 *                  T = log2(n)·α + (n-1)/n·S/B on an ideal star.
 *   all_gather by recursive doubling: the same exchanges in reverse order, round j = k-1..0
 *                  sending S/2^(j+1) to partner i XOR 2^j (so the first round moves one block
 *                  S/n and the last S/2); T = log2(n)·α + (n-1)/n·S/B.
 *   all_reduce (Rabenseifner) = reduce_scatter then all_gather, 2·log2(n) rounds;
 *                  T = 2·log2(n)·α + 2(n-1)/n·S/B.
 * Distance 1 first puts the big exchanges between neighbours in group order, which are
 * usually on the same node, and the small ones across nodes.
 *
 * Non-power-of-two n, all_reduce only: MPICH's fold. With p = 2^floor(log2 n) and r = n - p,
 * each even member i < 2r first sends its whole buffer S to i+1 (one round), the p members
 * left (the odd ones below 2r, then every member from 2r on) run the power-of-two algorithm
 * among themselves, and each i+1 sends the result S back to i in a last round:
 *   2 + 2·log2(p) rounds, T = 2(1 + log2 p)·α + (2 + 2(p-1)/p)·S/B on an ideal star (the
 *   partners i+1 carry S more each way than the others).
 * all_gather and reduce_scatter with non-power-of-two n are not supported (supports() is
 * false): their fold needs uneven pieces; ring or hierarchical serve those groups. */
#include "core/sim.h"

#include "coll/coll-internal.h"

static bool hd_supports(coll_op op, const coll_group *g)
{
    switch (op) {
    case COLL_ALL_REDUCE:
        return true;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
        return coll__pow2(g->n);
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_ALL_TO_ALL:
    case COLL_SEND_RECV:
    case COLL_RING_SHIFT:
    case COLL_OP_COUNT:
        break;
    }
    return false;
}

/* Recursive halving among the p = 2^k members member[0..p) (k rounds, largest piece first). */
static void halving(coll_schedule *s, const int32_t *member, int k, double bytes)
{
    int p = 1 << k;
    for (int j = 0; j < k; j++) {
        coll_schedule_round(s);
        for (int v = 0; v < p; v++)
            coll_schedule_add(s, member[v], member[v ^ (1 << j)], bytes / (2 << j));
    }
}

/* Recursive doubling: the rounds of halving() in reverse order (smallest piece first). */
static void doubling(coll_schedule *s, const int32_t *member, int k, double bytes)
{
    int p = 1 << k;
    for (int j = k - 1; j >= 0; j--) {
        coll_schedule_round(s);
        for (int v = 0; v < p; v++)
            coll_schedule_add(s, member[v], member[v ^ (1 << j)], bytes / (2 << j));
    }
}

static void hd_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                     int root, double chunks)
{
    (void)root;
    (void)chunks; /* each exchange is one flow; pipelining does not shorten a round */
    int n = g->n, k = coll__log2(n), p = 1 << k, r = n - p;
    int32_t *member = sim_calloc((size_t)p, sizeof(*member));
    /* virtual rank v of the power-of-two core: the odd members below 2r, then the rest */
    for (int v = 0; v < p; v++)
        member[v] = v < r ? 2 * v + 1 : v + r;

    switch (op) {
    case COLL_ALL_REDUCE:
        if (r > 0) {
            coll_schedule_round(s);
            for (int i = 0; i < r; i++)
                coll_schedule_add(s, 2 * i, 2 * i + 1, bytes);
        }
        halving(s, member, k, bytes);
        doubling(s, member, k, bytes);
        if (r > 0) {
            coll_schedule_round(s);
            for (int i = 0; i < r; i++)
                coll_schedule_add(s, 2 * i + 1, 2 * i, bytes);
        }
        break;
    case COLL_REDUCE_SCATTER:
        SIM_ASSERT(r == 0, "hd reduce_scatter on %d members", n);
        halving(s, member, k, bytes);
        break;
    case COLL_ALL_GATHER:
        SIM_ASSERT(r == 0, "hd all_gather on %d members", n);
        doubling(s, member, k, bytes);
        break;
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_ALL_TO_ALL:
    case COLL_SEND_RECV:
    case COLL_RING_SHIFT:
    case COLL_OP_COUNT:
        SIM_ASSERT(0, "hd %s", coll_op_name(op));
    }
    sim_free(member);
}

const coll_algo_ops coll__hd_ops = {
    .name = "hd",
    .supports = hd_supports,
    .build = hd_build,
};
