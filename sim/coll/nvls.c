/* NVLink SHARP all_reduce: the reduction happens in the NVSwitch (NCCL's NVLS algorithm,
 * NCCL 2.17 and later on Hopper NVSwitch systems; the PTX multimem.ld_reduce and multimem.st
 * instructions, PTX ISA 8.1, sm_90).
 *
 * NCCL's single-node NVLS all_reduce splits the buffer into n shards; member i owns shard i:
 *   reduce-scatter: member i issues multimem.ld_reduce on shard i of the multicast buffer;
 *                   the switch reads shard i from every member's memory and returns the sum to
 *                   member i. Each member's uplink carries its whole buffer S (shard j of it is
 *                   read for member j), its downlink the reduced shard S/n.
 *   all-gather:     member i issues multimem.st of its reduced shard; the switch multicasts it
 *                   to every member. Uplink S/n, downlink S (all n shards, its own included, as
 *                   the store goes through the multicast address).
 * So each member's link carries S(1 + 1/n) in each direction, against 2(n-1)/n·S for a ring.
 * Transfers to and from the switch name COLL_SWITCH as their end point; a transfer with the
 * switch stands for the switch-side reads or multicast of that member's share (the switch
 * reduces on the fly, so the reduced shard leaves in the round its inputs arrive).
 *
 * NCCL pipelines both phases over chunks, so the uplink carries chunk c+1's contributions
 * while the downlink carries chunk c's multicast. With C = `chunks`, there are C+1 rounds;
 * in round t member i
 *   sends S/C to the switch and receives S/(nC) from it (reduce-scatter of chunk t), t < C;
 *   sends S/(nC) to the switch and receives S/C from it (all-gather of chunk t-1), t >= 1.
 * Per member and direction, S(1 + 1/n) in all whatever C; on an ideal star (B per port,
 * α per round, a round lasting α plus its busiest port's bytes over B)
 *   T = (C+1)·α + (2 + (C-1)(1 + 1/n))·S/(C·B),
 * which is 2α + 2S/B at C = 1 (the two phases one after the other) and tends to
 * S(1 + 1/n)/B, the bound of the link, as C grows; C + 1 latency steps are the price of the
 * overlap.
 *
 * Only all_reduce, and only when g->nvls (every member on one NVSwitch that reduces). Later
 * NCCL releases also run all_gather and reduce_scatter over NVLS, and NVLS-Tree across nodes;
 * those are not modelled. */
#include "core/sim.h"

#include "coll/coll-internal.h"

static bool nvls_supports(coll_op op, const coll_group *g)
{
    return op == COLL_ALL_REDUCE && g->nvls;
}

static void nvls_build(coll_schedule *s, coll_op op, const coll_group *g, double bytes,
                       int root, double chunks)
{
    (void)root;
    SIM_ASSERT(op == COLL_ALL_REDUCE && g->nvls, "nvls %s (nvls=%d)", coll_op_name(op),
               (int)g->nvls);
    int n = g->n;
    int pieces = coll_pieces(chunks);
    for (int t = 0; t <= pieces; t++) {
        coll_schedule_round(s);
        for (int m = 0; m < n; m++) {
            if (t < pieces) { /* ld_reduce of chunk t */
                double chunk = coll_piece_bytes(bytes, chunks, t);
                coll_schedule_add_piece(s, m, COLL_SWITCH, chunk, coll_piece_kind(chunks, t, true));
                coll_schedule_add_piece(s, COLL_SWITCH, m, chunk / n,
                                        coll_piece_kind(chunks, t, false));
            }
            if (t >= 1) { /* multicast store of chunk t-1 */
                double chunk = coll_piece_bytes(bytes, chunks, t - 1);
                int kind = coll_piece_kind(chunks, t - 1, false);
                coll_schedule_add_piece(s, m, COLL_SWITCH, chunk / n, kind);
                coll_schedule_add_piece(s, COLL_SWITCH, m, chunk, kind);
            }
        }
    }
}

const coll_algo_ops coll__nvls_ops = {
    .name = "nvls",
    .supports = nvls_supports,
    .build = nvls_build,
    .pipelined = coll__always,
};
