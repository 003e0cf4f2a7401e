/* Collective operations as schedules of point-to-point transfers (docs/collectives.md).
 *
 * A schedule is a list of rounds; the transfers of a round start together and the next
 * round starts when the whole round has finished (each round also pays the protocol's
 * per-step latency, see exec.h). Members are numbered 0..n-1 in group order; a transfer
 * may also go to or come from the group's NVSwitch (COLL_SWITCH) for in-switch reduction.
 *
 * Every algorithm lives in its own file behind coll_algo_ops and is registered in the
 * table of coll.c. Size conventions follow nccl-tests: `bytes` is the buffer an all_reduce,
 * broadcast or reduce works on, the gathered output of an all_gather, the input of a
 * reduce_scatter, the whole send buffer of an all_to_all (each member sends bytes/n to
 * every member), the message of a send_recv, the message each member passes to its
 * successor in a ring_shift (one step of ring attention: member i sends to i+1 mod n).
 *
 * Costs on an ideal uniform topology (per-direction bandwidth B per GPU, latency α per
 * step), S = bytes, as the tests check:
 *   ring all_reduce        2(n-1)·α + 2(n-1)/n · S/B
 *   ring all_gather / reduce_scatter   (n-1)·α + (n-1)/n · S/B
 *   halving-doubling all_reduce        2·log2(n)·α + 2(n-1)/n · S/B   (n a power of two)
 *   double binary tree all_reduce      latency 2·log2(n)·α-ish: grows with log2(n)
 *   direct all_to_all      α + (n-1)/n · S/B
 *   pairwise all_to_all    (n-1)·α + (n-1)/n · S/B
 *   ring_shift             α + S/B */
#ifndef SIM_COLL_COLL_H
#define SIM_COLL_COLL_H

#include <math.h>
#include <stdbool.h>
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
    COLL_RING_SHIFT,
    COLL_OP_COUNT
} coll_op;

const char *coll_op_name(coll_op op); /* "all_reduce", ... */
/* Parses an operation name (also nccl-tests' "allreduce" spellings); -1 if unknown. */
int coll_op_parse(const char *name);
/* nccl-tests' bus-bandwidth factor: busbw = algbw x factor (all_reduce 2(n-1)/n;
 * all_gather, reduce_scatter, all_to_all (n-1)/n; others 1). */
double coll_busbw_factor(coll_op op, int n);

typedef enum coll_algo {
    COLL_ALGO_RING,
    COLL_ALGO_TREE,         /* double binary tree */
    COLL_ALGO_HD,           /* recursive halving-doubling (Rabenseifner for all_reduce) */
    COLL_ALGO_DIRECT,       /* all_to_all: everyone to everyone at once */
    COLL_ALGO_PAIRWISE,     /* all_to_all: n-1 rounds of shifted pairs */
    COLL_ALGO_HIERARCHICAL, /* intra-node reduce-scatter, inter-node all-reduce, intra-node
                               all-gather */
    COLL_ALGO_NVLS,         /* NVLink SHARP: reduction in the NVSwitch */
    COLL_ALGO_COUNT
} coll_algo;

const char *coll_algo_name(coll_algo a); /* "ring", "tree", "hd", "direct", "pairwise",
                                            "hierarchical", "nvls" */
int coll_algo_parse(const char *name);   /* -1 if unknown */

#define COLL_SWITCH (-1) /* transfer end point: the group's NVSwitch */

typedef struct coll_xfer {
    int32_t src, dst; /* members, or COLL_SWITCH */
    double bytes;
} coll_xfer;

typedef struct coll_schedule {
    int n_rounds;
    /* transfers of round r are xfers[round_first[r] .. round_first[r+1]), or once compacted
     * (coll_schedule_compact) xfers[round_first[r] .. round_end[r]): read them through
     * coll_round_first and coll_round_end */
    size_t *round_first;
    size_t *round_end; /* NULL until compacted */
    coll_xfer *xfers;
    size_t n_xfers, cap_xfers, cap_rounds;
    bool p2p; /* NCCL runs it as point-to-point sends (all_to_all, send_recv, ring_shift):
                 its transfers take hw_topo_route_p2p's routes (PXN); set by coll_build */
    int dataflow; /* > 0: the rounds are a ring's steps (all_reduce, all_gather,
                     reduce_scatter) over `dataflow` members, each forwarding what it
                     received without waiting for the other members' steps, so a step's
                     latency is paid once per hop along the ring, not the slowest hop's at
                     every step (coll_exec_dataflow_round); set by the algorithm's build */
    /* chunked: the rounds move the pieces of a pipeline (a chain's, a tree's, NVLS's) and
     * front[i] is the coll_piece_kind of transfer i in its stream (a channel's tree edge or
     * chain hop, one direction) over its member pair: the first piece pays the step
     * latency; a piece after it follows the slices still in its connection's FIFO, and
     * every COLL_FIFO_SLOTS-th of them first waits for a slot (coll_exec_queued_delay).
     * Set by coll_schedule_add_piece; front is NULL otherwise. */
    bool chunked;
    uint8_t *front;
} coll_schedule;

void coll_schedule_init(coll_schedule *s);
void coll_schedule_clear(coll_schedule *s);
/* Empties the schedule (keeps its memory). */
void coll_schedule_reset(coll_schedule *s);
/* Opens a new round; transfers added next belong to it. */
void coll_schedule_round(coll_schedule *s);
/* Adds a transfer to the current round (skips zero-byte transfers and src == dst). */
void coll_schedule_add(coll_schedule *s, int src, int dst, double bytes);
/* A pipelined message cut as NCCL cuts it into slices of a fixed size: `chunks` (>= 1, not
 * necessarily whole) is the message over the slice size, so there are ceil(chunks) pieces,
 * each bytes / chunks but the last, which is the remainder. One more byte adds a small last
 * piece instead of shrinking every piece. */
static inline int coll_pieces(double chunks)
{
    int n = (int)ceil(chunks - 1e-9);
    return n < 1 ? 1 : n;
}

/* The bytes of piece c (0-based) of coll_pieces(chunks) pieces of a `bytes` message. */
static inline double coll_piece_bytes(double bytes, double chunks, int c)
{
    int n = coll_pieces(chunks);
    double q = bytes / chunks;
    return c + 1 < n ? q : bytes - (n - 1) * q;
}

/* NCCL_STEPS (NCCL src/include/device.h): the slots of a connection's FIFO, each a slice of
 * the protocol's chunk, that a sender may fill before the receiver has freed one. */
#define COLL_FIFO_SLOTS 8

/* A piece's place in its stream (coll_schedule.front), in the order a merged transfer takes
 * the largest of its pieces': one that follows earlier pieces through the FIFO, one that
 * also waits for a slot to come back, the stream's first. */
enum { COLL_PIECE_QUEUED = 0, COLL_PIECE_SLOT = 1, COLL_PIECE_FIRST = 2 };

/* The kind of piece c (0-based) of a stream of coll_pieces(chunks) pieces. A slot wait
 * falls on the COLL_FIFO_SLOTS-th, 2·SLOTS-th, ... whole piece after the first of a `source`
 * stream, one whose sender makes the data (a chain's first hop, a tree's leaves going up,
 * the root of a broadcast going down, NVLS's reductions into the switch): a stream fed by
 * another moves its pieces as they arrive, already spaced by the source's waits, so the
 * pipeline pays each wait once (docs/collectives.md, "Chunked schedules"). */
static inline int coll_piece_kind(double chunks, int c, bool source)
{
    if (c == 0)
        return COLL_PIECE_FIRST;
    bool whole = c + 1 < coll_pieces(chunks) || fabs(chunks - round(chunks)) < 1e-9;
    return source && whole && c % COLL_FIFO_SLOTS == 0 ? COLL_PIECE_SLOT : COLL_PIECE_QUEUED;
}

/* The same as coll_schedule_add for a piece of a chunked schedule, of coll_piece_kind
 * `kind` in its stream over src -> dst (coll_schedule.front). Makes the schedule chunked;
 * every transfer of a chunked schedule is added this way. */
void coll_schedule_add_piece(coll_schedule *s, int src, int dst, double bytes, int kind);
/* Whether transfer i of `s` follows an earlier piece of its stream. */
static inline bool coll_xfer_queued(const coll_schedule *s, size_t i)
{
    return s->chunked && s->front[i] != COLL_PIECE_FIRST;
}
/* Whether it also waits for a slot of its connection's FIFO. */
static inline bool coll_xfer_slot(const coll_schedule *s, size_t i)
{
    return s->chunked && s->front[i] == COLL_PIECE_SLOT;
}

/* Bytes member `m` sends in the schedule (its payload into the network). */
double coll_schedule_bytes_sent(const coll_schedule *s, int m);
/* The same for every member at once: adds member m's bytes to out[m] (one pass over the
 * transfers; each sum in the same order as coll_schedule_bytes_sent's). */
void coll_schedule_bytes_sent_all(const coll_schedule *s, double *out);
/* Whether round r repeats round r - 1 transfer for transfer (a ring's steps do). */
bool coll_schedule_round_repeats(const coll_schedule *s, int r);

/* Where round r's transfers start and end in s->xfers. */
static inline size_t coll_round_first(const coll_schedule *s, int r)
{
    return s->round_first[r];
}

static inline size_t coll_round_end(const coll_schedule *s, int r)
{
    return s->round_end ? s->round_end[r] : s->round_first[r + 1];
}

/* Stores each round that repeats the one before it (coll_schedule_round_repeats) once: the
 * repeat's transfers become the earlier round's. A ring over n members keeps n transfers
 * instead of 2(n - 1) n. The rounds read the same through coll_round_first/_end; n_xfers
 * then counts the stored transfers (coll_schedule_xfer_count counts every round's). No
 * transfer is added afterwards. */
void coll_schedule_compact(coll_schedule *s);
/* Transfers over all rounds, repeats included. */
size_t coll_schedule_xfer_count(const coll_schedule *s);

/* What an algorithm may know about the group. */
typedef struct coll_group {
    int n;               /* members */
    const int32_t *node; /* node of each member (hierarchical) */
    bool nvls;           /* every member sits on one NVSwitch that reduces (NVLink SHARP) */
} coll_group;

typedef struct coll_algo_ops {
    const char *name;
    /* Whether the algorithm implements `op` on group `g`. */
    bool (*supports)(coll_op op, const coll_group *g);
    /* Replaces `s` with the schedule of `op` on `bytes` (root for broadcast/reduce;
     * `chunks` >= 1 where the algorithm pipelines: pieces of bytes / chunks, as
     * coll_pieces and coll_piece_bytes cut them). Only called when supports() said yes.
     * Cannot fail. */
    void (*build)(coll_schedule *s, coll_op op, const coll_group *g, double bytes, int root,
                  double chunks);
    /* Whether build() uses `chunks` for `op` (NULL: never), so that callers trying several
     * chunk counts build the others once. */
    bool (*pipelined)(coll_op op);
} coll_algo_ops;

/* Whether algorithm `a`'s schedule of `op` depends on the chunk count. */
bool coll_algo_pipelined(coll_algo a, coll_op op);

/* The registered implementation of `a`. */
const coll_algo_ops *coll_algo_get(coll_algo a);

/* Builds `op` with algorithm `a`. Returns 0, or SIM_ENOTSUP when `a` does not implement
 * `op` on this group (n == 1 always gives an empty schedule). */
int coll_build(coll_schedule *s, coll_algo a, coll_op op, const coll_group *g, double bytes,
               int root, double chunks);

#endif
