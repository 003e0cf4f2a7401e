/* The plan: what a scenario implies before anything is timed — the rank layout and process
 * groups, the per-rank memory plan with its OOM verdict, and the trace of one step.
 *
 * Strategies built so far (issue 2): a single GPU, and data parallelism (DDP) with
 * gradient accumulation and bucketed gradient all-reduce, overlapped with backward or
 * issued after it. Memory: a static estimate per rank (docs/memory.md). */
#ifndef SIM_PLAN_PLAN_H
#define SIM_PLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/topo.h"
#include "plan/memory.h"
#include "plan/scenario.h"
#include "trace/trace.h"

typedef struct plan_coord {
    int32_t node;
    int32_t c[PLAN_GROUP_COUNT]; /* coordinate in each group class (dp, tp, pp, ep, cp) */
} plan_coord;

typedef struct plan {
    const plan_scenario *sc; /* borrowed; must outlive the plan */
    int n_ranks;             /* tp * cp * pp * dp */
    int topology_gpus;       /* GPUs the topology has (>= n_ranks) */
    hw_topo *topo;           /* the cluster's graph; rank r runs on GPU r */
    plan_coord *coords;      /* per rank */
    int64_t global_batch;    /* resolved (0 in the scenario = micro_batch x dp) */
    int64_t accum_steps;     /* micro-batches per replica per step */
    plan_mem *mem;           /* per rank: persistent bytes (trace base) at t = 0 */
    int64_t *host_bytes;     /* per rank: host memory its offload holds (0 without offload) */
    plan_mem *peak;          /* per rank: the split at the peak of a program-order walk */
    plan_mem *cross;         /* per rank: the split when the walk first exceeded the
                                capacity (the persistent bytes when they alone do; total 0
                                when it never did) — plan_mem_binding */
    int64_t capacity_bytes;  /* topology.gpu's usable memory (each rank's: plan_capacity) */
    bool oom;                /* the walk's verdict (the replay re-judges on its timeline) */
    char binding_constraint[256]; /* "" when it fits (see plan_mem_verdict) */
    char warning[256];       /* "" or advice the CLI prints on stderr (e.g. TP across nodes) */
    trace *trace;            /* NULL when not requested */
    double model_flops_per_step;    /* all ranks together, Megatron convention */
    double hardware_flops_per_step; /* with recompute */
    /* routing statistics of a MoE model over every EP group, MoE layer and micro-batch */
    bool moe;
    double moe_dropped_fraction;   /* token-expert assignments dropped at capacity */
    double moe_load_max_over_mean; /* busiest expert / mean expert, averaged over draws */
} plan;

/* How plan_create builds a plan; {0} is the default of each. */
typedef struct plan_options {
    bool with_trace;    /* keep the trace (false: freed once the memory is judged) */
    /* Generate every rank's ops instead of letting the ranks of a pipeline stage borrow
     * their stage's first rank's (share.c). A verification switch: no result changes. */
    bool no_op_sharing;
} plan_options;

/* Lays out ranks, generates the trace of one step with its memory events, and judges the
 * memory by walking each rank's ops in program order (`stepsim mem`; the replay tracks the
 * same events in simulated time). `opt` as above. `sc` must come from the loader
 * (validated). On success *out owns a new plan. Returns 0, or SIM_EINVAL / SIM_ENOTSUP with
 * `diag` set (file "scenario", no position) for combinations the loader cannot see. */
int plan_create(const plan_scenario *sc, const plan_options *opt, plan **out, sim_diag *diag);

/* The figures of a plan that a trace does not hold, saved beside it in a trace file. */
typedef struct plan_trace_figures {
    int64_t global_batch;
    double model_flops_per_step, hardware_flops_per_step;
    bool moe;
    double moe_dropped_fraction, moe_load_max_over_mean;
} plan_trace_figures;

/* A plan around a trace read from a file (`stepsim replay`): the topology, rank layout and
 * capacity come from `sc`, ops and memory from `t` (finished and validated; the plan takes
 * it over), the rest from `fig`. The trace must have tp·cp·pp·dp ranks of sc->parallel and
 * the topology at least as many GPUs. Returns 0 or SIM_EINVAL with diag set (then `t` is
 * freed too). */
int plan_from_trace(const plan_scenario *sc, trace *t, const plan_trace_figures *fig,
                    plan **out, sim_diag *diag);
void plan_destroy(plan *p);

/* Rank r's split when its walk first exceeded the capacity, or `at_peak` (its peak's split,
 * from the walk or a replay's timeline) when the walk never did: the `cross` argument of
 * plan_mem_binding and plan_mem_verdict. */
const plan_mem *plan_cross(const plan *p, int r, const plan_mem *at_peak);

/* Rank r's GPU (topology.node_groups: its node's group's) and its usable memory; the rank
 * with the least headroom under `peaks` (its peak over its capacity; the lowest on ties),
 * whose verdict is the plan's. */
const hw_gpu_spec *plan_gpu(const plan *p, int r);
int64_t plan_capacity(const plan *p, int r);
int plan_worst_rank(const plan *p, const plan_mem *peaks);

/* Host memory the offload holds (the sum over a node's ranks of host_bytes) on the node
 * with the least headroom under its own topology.node.host.memory (a node group's on a
 * mixed cluster), or the node that holds the most where none gives it (the lowest such node
 * on a tie), into *bytes, *node and *capacity (its memory; 0 when not given; without
 * offload 0, 0 and node 0's memory). Returns 1 when that node's offload is more than its memory, with the binding
 * constraint in `why` ("" otherwise). */
int plan_host_verdict(const plan *p, int64_t *bytes, int *node, int64_t *capacity, char *why,
                      size_t size);

/* Computes rank `rank`'s coordinates under `order` (inner to outer) with the degrees of
 * `par`; ep is carved out of dp (ep coordinate = dp coordinate mod ep). The node is left
 * 0: the topology knows it. Pure. */
void plan_rank_coord(const plan_parallel *par, int rank, plan_coord *out);

#endif
