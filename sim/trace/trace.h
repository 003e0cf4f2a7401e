/* The trace: for every rank, the ordered operations of one training step and their
 * dependencies (docs/architecture.md). It is plain data with no I/O; the plan builds it, the
 * replay executes it, and sim/results/tracefile.c reads and writes it as a file.
 *
 * Semantics:
 * - Each op runs on one stream of its rank. Ops of a stream run one at a time in the order
 *   they were added (CUDA stream order); dependencies across streams are explicit.
 * - A dependency names an earlier op of the same rank (an op index smaller than its own).
 * - A collective op (kind TRACE_OP_COLL) refers to a collective instance shared by every
 *   member rank of its group: the instance starts when all members have reached it, and
 *   ends for all of them together. Each member rank has exactly one op per instance. The
 *   op holds the ordinal of the collective among its rank's collective ops, and the rank
 *   maps ordinals to instances (`colls`; trace_op_coll), so that ranks doing the same work
 *   in different groups can share one op array.
 * - Shared ranks: a rank whose work equals another's (the same pipeline stage of another
 *   data-parallel replica, another tensor-parallel rank) borrows that rank's ops,
 *   dependencies and memory events (`tmpl` >= 0) and owns only its collective map. This is
 *   what lets a 16K-GPU step fit in memory: the op arrays of one rank per equivalence
 *   class, plus four bytes per collective op and rank. A borrower may also own the values
 *   (FLOPs, bytes, inner dimension) of some ops (`var`): a MoE rank's expert kernels run on
 *   its own EP group's routing; trace_op_values gives an op's values for any rank.
 * - One step of the trace is replayed `steps` times; each rank starts step k+1 when all of
 *   its own ops of step k have finished.
 * - Memory: each rank starts with its persistent bytes per category (`base_mem`, e.g. the
 *   model states its strategy keeps) and ops carry memory events — bytes allocated (> 0) or
 *   released (< 0) in a category when the op starts or ends. A step must release what it
 *   allocates, so every step starts from the same level. */
#ifndef SIM_TRACE_TRACE_H
#define SIM_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/coll.h"
#include "core/time.h"
#include "hw/gpu.h"

typedef enum trace_op_kind {
    TRACE_OP_COMPUTE,
    TRACE_OP_COLL,
    TRACE_OP_COPY, /* between the rank's GPU and its host memory (offload), as a flow */
    TRACE_OP_HOST  /* CPU work (e.g. CPU Adam) with a duration set by the plan */
} trace_op_kind;
/* TRACE_OP_COPY's direction (trace files: the `to_host` column, 0 and 1 as before). */
typedef enum trace_copy {
    TRACE_COPY_H2D,   /* the rank's host memory to its GPU */
    TRACE_COPY_D2H,   /* its GPU to its host memory */
    TRACE_COPY_READ,  /* its NVMe drive to its host memory */
    TRACE_COPY_WRITE, /* its host memory to its NVMe drive */
    TRACE_COPY_COUNT
} trace_copy;
typedef enum trace_phase {
    TRACE_PHASE_FWD,
    TRACE_PHASE_BWD,
    TRACE_PHASE_OPT,
    TRACE_PHASE_COMM,
    TRACE_PHASE_COUNT
} trace_phase;

const char *trace_phase_name(trace_phase p); /* "fwd", "bwd", "opt", "comm" */

/* Group classes (dp, tp, pp, ep, cp: the plan's plan_group_class values, which it checks
 * match) and streams: stream 0 computes, stream 1 + class communicates for that class. */
#define TRACE_GROUP_CLASSES 5
#define TRACE_STREAM_COMPUTE 0
#define TRACE_STREAM_COMM(cls) (1 + (cls))
#define TRACE_STREAM_OFFLOAD (1 + TRACE_GROUP_CLASSES) /* copies to and from host memory */
#define TRACE_STREAM_HOST (2 + TRACE_GROUP_CLASSES)    /* the rank's CPU thread */
/* Point-to-point transfers (pipeline sends and receives): not ordered among themselves —
 * each starts as soon as its dependencies allow, as batched isend/irecv do. */
#define TRACE_STREAM_ASYNC (3 + TRACE_GROUP_CLASSES)
#define TRACE_STREAMS (4 + TRACE_GROUP_CLASSES)

/* Memory categories: the plan's plan_mem_cat values (params, grads, optimizer, activations,
 * buffers, other), which it checks match. */
#define TRACE_MEM_CATS 6

/* Bounds on the numbers of a trace, which a trace read from a file is checked against
 * (docs/trace-format.md) so that no sum, duration or level computed from them overflows:
 * - sizes (a collective's or op's bytes, a memory event's bytes, a rank's persistent bytes
 *   per category): |bytes| <= TRACE_BYTES_MAX = 2^53 (8 PiB; doubles hold them exactly);
 * - a rank's persistent bytes plus the sizes of all its memory events, all categories
 *   together: <= TRACE_MEM_SUM_MAX = 2^60 (1 EiB), so any level the replay reaches, in a step
 *   or across a few overlapping steps, fits an int64_t;
 * - an op's flops and model_flops: <= TRACE_FLOPS_MAX = 1e21 (a thousand seconds of a 1
 *   EFLOP/s GPU; the largest kernels of the largest models are below 1e17);
 * - a measured duration: <= TRACE_DURATION_MAX_S = 1e6 s (11.6 days; sim_time holds
 *   about 106 days of picoseconds). */
#define TRACE_BYTES_MAX 9007199254740992.0
#define TRACE_MEM_SUM_MAX (INT64_C(1) << 60)
#define TRACE_FLOPS_MAX 1e21
#define TRACE_DURATION_MAX_S 1e6

typedef struct trace_mem {
    int64_t bytes;  /* > 0 allocated, < 0 released */
    uint32_t op;    /* the op it belongs to */
    uint8_t cat;
    uint8_t at_end; /* 0: when the op starts; 1: when it ends */
} trace_mem;

#define TRACE_NO_LAYER (-1)
#define TRACE_NO_MICROBATCH (-1)
#define TRACE_MEASURED_NONE (-1)

typedef struct trace_op {
    uint8_t kind;    /* trace_op_kind */
    uint8_t stream;
    uint8_t phase;   /* trace_phase */
    uint8_t cls;     /* hw_op_class (compute ops) */
    uint8_t dtype;   /* hw_dtype (compute ops) */
    uint8_t recompute; /* 1: re-executes forward work for backward (hardware FLOPs only) */
    uint8_t copy;      /* TRACE_OP_COPY: trace_copy */
    int32_t layer;
    int32_t microbatch;
    uint32_t name;   /* id in the trace's name table */
    uint32_t dep_first, n_deps; /* into the rank's deps[] */
    uint32_t mem_first, n_mem;  /* into the rank's mem[] (valid after trace_finish) */
    union {
        uint32_t coll; /* TRACE_OP_COLL: ordinal among the rank's collective ops (trace_op_coll) */
        float inner;   /* TRACE_OP_COMPUTE matmuls: the GEMM's inner dimension k (0: unknown;
                          hw_gpu_op_time); fused attention: the head dimension; vector ops:
                          HW_VECTOR_EAGER or 0 */
    };
    double flops, model_flops, bytes;
    sim_time duration_ps; /* >= 0: a measured duration that replaces the roofline */
} trace_op;

/* A borrower's own values of one of its template's compute or collective ops: a
 * mixture-of-experts rank runs its template's kernels on the tokens its own EP group routed
 * to its experts, so its expert kernels' FLOPs, bytes and (weight gradients, whose inner
 * dimension is the tokens) inner dimension differ, and with an expert capacity its
 * all-to-alls' bytes (its collective instances' own), while everything else is the
 * template's (trace_adopt_template). */
typedef struct trace_op_var {
    uint32_t op;
    float inner;
    double flops, model_flops, bytes;
} trace_op_var;

/* How the rank's host thread issues an op, where it differs from one launch and on: an op
 * that stands for `launches` kernel launches (0 or more; e.g. a list all-gather and the copy
 * out of each of its N outputs), and `sync`: after issuing it the host waits until every op
 * of the rank up to it has ended (torch.cuda.synchronize) before issuing the next. */
typedef struct trace_host {
    uint32_t op;
    uint32_t launches;
    uint8_t sync;
} trace_host;
/* The most launches one op may stand for (trace files are checked against it). */
#define TRACE_LAUNCHES_MAX (UINT32_C(1) << 24)

typedef struct trace_rank {
    trace_op *ops;
    size_t n_ops, cap_ops;
    uint32_t *deps;
    size_t n_deps, cap_deps;
    trace_mem *mem;
    size_t n_mem, cap_mem;
    int64_t base_mem[TRACE_MEM_CATS]; /* persistent bytes per category */
    uint32_t *colls;  /* collective instance of each collective op, by ordinal */
    size_t n_colls, cap_colls;
    int32_t tmpl;     /* -1: owns ops/deps/mem; else the rank whose arrays it borrows */
    trace_op_var *var; /* a borrower's own values of some compute ops, by increasing op */
    size_t n_var;
    trace_host *host; /* ops issued other than as one launch, by increasing op (owned with
                         ops: a borrower has its template's) */
    size_t n_host, cap_host;
    bool finished;    /* memory events indexed by op (trace_finish_rank) since the last change */
} trace_rank;

typedef struct trace_group {
    uint8_t cls;
    int n;
    int32_t *ranks; /* members in ring order */
} trace_group;

typedef struct trace_coll {
    uint8_t op;    /* coll_op */
    uint8_t algo;  /* the plan's plan_coll_algo */
    uint32_t group;
    double bytes;  /* nccl-tests' size convention (see coll.h) */
    int32_t root;  /* member index, for rooted operations */
} trace_coll;

typedef struct trace {
    int n_ranks;
    trace_rank *ranks;
    trace_group *groups;
    size_t n_groups, cap_groups;
    trace_coll *colls;
    size_t n_colls, cap_colls;
    char **names;
    size_t n_names, cap_names;
    uint32_t *name_hash; /* open addressing over names, 0 = empty, else id + 1 */
    size_t hash_cap;
} trace;

/* Creates an empty trace for `n_ranks` ranks. Cannot fail. */
trace *trace_create(int n_ranks);
void trace_destroy(trace *t);

/* Returns the id of `name` in the name table, adding it if new. */
uint32_t trace_intern(trace *t, const char *name);
const char *trace_name(const trace *t, uint32_t id);

/* Adds a process group of `n` ranks (copied) of class `cls`; returns its index. */
uint32_t trace_add_group(trace *t, int cls, int n, const int32_t *ranks);

/* Adds a collective instance on `group`; returns its index. */
uint32_t trace_add_coll(trace *t, coll_op op, int algo, uint32_t group, double bytes, int root);

/* Appends `op` (its dep_first/n_deps are ignored) to `rank` with the given dependencies
 * (indices of earlier ops of the same rank); returns the new op's index. A collective op
 * passes its instance in op->coll; the rank records it and the stored op gets its ordinal. */
uint32_t trace_add_op(trace *t, int rank, const trace_op *op, const uint32_t *deps,
                      size_t n_deps);

/* The collective instance of collective op `o` of rank `r`. */
static inline uint32_t trace_op_coll(const trace_rank *r, const trace_op *o)
{
    return r->colls[o->coll];
}

/* Makes `rank` (which has no ops yet) borrow the ops, dependencies and memory events of
 * `tmpl` (which owns its own, and outlives it). The caller then gives `rank` its own
 * collective instances, in ordinal order, with trace_add_rank_coll. */
void trace_share_rank(trace *t, int rank, int tmpl);
/* Makes `rank`, generated in full and finished, borrow `tmpl`'s arrays when they are the
 * same but for some compute ops' FLOPs, model FLOPs, bytes and inner dimension, and some
 * collective ops' bytes, which it keeps as its own values (`var`); frees its own arrays. Returns whether it did: any other difference (an
 * op's kind, stream, name, shape, dependencies, memory events) keeps the rank as it is. Its
 * collective map stays its own. */
bool trace_adopt_template(trace *t, int rank, int tmpl);
/* The values of op `i` of rank `r` (its own where it borrows with other values). */
static inline trace_op_var trace_op_values(const trace_rank *r, uint32_t i)
{
    size_t lo = 0, hi = r->n_var;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->var[mid].op < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n_var && r->var[lo].op == i)
        return r->var[lo];
    const trace_op *o = &r->ops[i];
    return (trace_op_var){i, o->kind == TRACE_OP_COMPUTE ? o->inner : 0, o->flops,
                          o->model_flops, o->bytes};
}
void trace_add_rank_coll(trace *t, int rank, uint32_t coll);
/* Sets how `rank`'s host thread issues op `op` (trace_host): `launches` launches, then a
 * synchronization when `sync`. Ops are set in increasing order; setting the last one again
 * replaces it. */
void trace_set_host(trace *t, int rank, uint32_t op, uint32_t launches, bool sync);
/* How op `i` of rank `r` is issued: its entry, or one launch and no synchronization. */
static inline trace_host trace_host_of(const trace_rank *r, uint32_t i)
{
    size_t lo = 0, hi = r->n_host;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->host[mid].op < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n_host && r->host[lo].op == i)
        return r->host[lo];
    return (trace_host){i, 1, 0};
}
/* Room for `n` more collective instances of `rank` (a borrower knows how many it needs). */
void trace_reserve_rank_colls(trace *t, int rank, size_t n);

/* Attaches a memory event to op `op` of `rank` (any existing op, in any order). */
void trace_add_mem(trace *t, int rank, uint32_t op, int cat, int64_t bytes, bool at_end);

/* Indexes the memory events by op (stable: events of one op keep the order they were added
 * in). Call once the trace is complete, before replaying or checking it. */
void trace_finish(trace *t);
/* trace_finish for one rank, for generators that finish ranks one at a time. */
void trace_finish_rank(trace *t, int rank);
/* Frees one rank's ops, dependencies and memory events (the rank stays, empty): a caller
 * that only needs each rank's ops once (the memory walk) keeps memory to one rank's worth.
 * A shared rank only drops its references; a rank others borrow from must outlive them. */
void trace_release_rank(trace *t, int rank);

/* Checks the invariants listed above (deps point backwards, every collective instance has
 * exactly one op on each member rank and on no other, streams in range, each rank's memory
 * events balance over a step, without overflow, and its persistent bytes plus the sizes of
 * its events stay within TRACE_MEM_SUM_MAX). Returns 0, or -1 with the first violation described in
 * why[0..n) ("rank 3 op 17 depends forward"). */
int trace_validate(const trace *t, char *why, size_t n);
/* trace_validate, printing the violation to stderr ("trace: ..."). */
int trace__check(const trace *t);

#endif
