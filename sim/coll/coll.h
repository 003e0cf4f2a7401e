/* Collective operations as schedules of point-to-point transfers.
 *
 * A schedule is a list of rounds; every transfer of a round starts together and the next
 * round starts when the whole round has finished (a synchronous-round model; chunked
 * pipelining arrives with the collectives library). Members are numbered 0..n-1 in group
 * (ring) order; the replay maps them to ranks.
 *
 * Issue 2 provides the ring algorithm only (Patarasuk & Yuan 2009; NCCL's ring):
 *   all_reduce     2(n-1) rounds, each member sends B/n to its successor
 *                  (reduce-scatter then all-gather); per member 2(n-1)/n x B sent.
 *   all_gather     n-1 rounds of B/n (B = the gathered output size, nccl-tests' convention)
 *   reduce_scatter n-1 rounds of B/n (B = the input size)
 *   broadcast      n-1 rounds of B along the ring from the root (unpipelined)
 *   send_recv      one transfer of B from member 0 to member 1
 * On an ideal ring of per-direction bandwidth W and latency a, all_reduce takes
 * 2(n-1)(a + B/(nW)). */
#ifndef SIM_COLL_COLL_H
#define SIM_COLL_COLL_H

#include <stddef.h>
#include <stdint.h>

typedef enum coll_op {
    COLL_ALL_REDUCE,
    COLL_ALL_GATHER,
    COLL_REDUCE_SCATTER,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_ALL_TO_ALL,
    COLL_SEND_RECV,
    COLL_OP_COUNT
} coll_op;

const char *coll_op_name(coll_op op); /* "all_reduce", ... */

typedef struct coll_xfer {
    int32_t src, dst; /* group members */
    double bytes;
} coll_xfer;

typedef struct coll_schedule {
    int n_rounds;
    /* transfers of round r are xfers[round_first[r] .. round_first[r+1]) */
    size_t *round_first;
    coll_xfer *xfers;
    size_t n_xfers, cap_xfers, cap_rounds;
} coll_schedule;

void coll_schedule_init(coll_schedule *s);
void coll_schedule_clear(coll_schedule *s);

/* Builds the ring schedule of `op` over `n` members for a buffer of `bytes` (nccl-tests'
 * size convention above); `root` is used by broadcast/reduce. Replaces the schedule's
 * contents. Returns 0, or SIM_ENOTSUP for an operation the ring does not implement yet.
 * n == 1 gives an empty schedule (a local no-op). */
int coll_ring_build(coll_schedule *s, coll_op op, int n, double bytes, int root);

/* Bytes member `m` sends in schedule `s` (its payload into the network). */
double coll_schedule_bytes_sent(const coll_schedule *s, int m);

#endif
