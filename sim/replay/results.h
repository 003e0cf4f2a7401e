/* Results of one scenario run: the JSON summary and the HDF5 tables of docs/json.md and
 * docs/hdf5-schema.md.
 *
 * Rows hold `const char *` strings that point to static strings or to the run's string
 * table (owned by the results object). Arrays are owned by the results object and freed by
 * replay_results_destroy. */
#ifndef SIM_REPLAY_RESULTS_H
#define SIM_REPLAY_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "plan/memory.h"
#include "plan/scenario.h"

typedef enum replay_status {
    REPLAY_STATUS_OK,
    REPLAY_STATUS_OOM,
    REPLAY_STATUS_SKIPPED,
    REPLAY_STATUS_ERROR,
    /* `stepsim plan` only: fits, but closer to the capacity than its --headroom; replayed
     * and timed like an ok run, not ranked (docs/plan.md) */
    REPLAY_STATUS_TIGHT,
    REPLAY_STATUS_COUNT
} replay_status;

/* "ok", "oom", "skipped", "error", "tight" */
const char *replay_status_name(replay_status s);

/* Bubble causes in the order of the JSON object bubble_by_cause. */
typedef enum replay_cause {
    REPLAY_CAUSE_PIPELINE,
    REPLAY_CAUSE_DP,
    REPLAY_CAUSE_TP,
    REPLAY_CAUSE_PP,
    REPLAY_CAUSE_EP,
    REPLAY_CAUSE_CP,
    REPLAY_CAUSE_OFFLOAD,
    REPLAY_CAUSE_HOST, /* the kernel was ready but not yet issued by the host thread */
    REPLAY_CAUSE_OTHER,
    REPLAY_CAUSE_COUNT
} replay_cause;

const char *replay_cause_name(replay_cause c); /* "pipeline", "dp", ... */

/* comm_bytes_per_gpu has one entry per group class plus offload. */
#define REPLAY_COMM_OFFLOAD PLAN_GROUP_COUNT
#define REPLAY_COMM_COUNT (PLAN_GROUP_COUNT + 1)

typedef struct replay_summary {
    char name[128];
    replay_status status;
    char error[512]; /* "" = null */
    int gpus;
    int steps;
    double step_time_s;
    double tokens_per_s;
    double samples_per_s;
    double tflops_per_gpu;
    double mfu;
    double hfu;
    double bubble_fraction;
    double bubble_by_cause[REPLAY_CAUSE_COUNT];
    double exposed_comm_s[PLAN_GROUP_COUNT];
    double comm_bytes_per_gpu[REPLAY_COMM_COUNT];
    int64_t peak_mem_bytes;
    int64_t mem_bytes[PLAN_MEM_COUNT];
    int64_t capacity_bytes;
    const char *binding_constraint; /* static string or NULL */
    bool symmetry_dp;               /* simulation.symmetry: dp was used (one replica simulated) */
    bool symmetry_estimated;        /* ... with its cross-replica collectives estimated */
    /* simulation.steady_state: whole periods of the steady state moved over instead of
     * simulated (replay/steady.c), the ops they held (simulated ranks) and their simulated
     * time, summed over the steps; all 0 when it was off or found none */
    uint64_t steady_periods, steady_ops;
    double steady_skipped_s;
    bool moe;                       /* a MoE model: the two routing statistics below are set */
    double moe_dropped_fraction;    /* token-expert assignments dropped at capacity */
    double moe_load_max_over_mean;  /* busiest expert / mean, averaged over layers, micro-batches */
    /* simulation.stragglers, jitter or node groups: the rank with the most compute in the reported step
     * (the lowest such rank on a tie), its compute time and the others' mean wait for it
     * (its compute minus theirs); slowest_rank -1 and NaN otherwise */
    /* offload: the host memory the node holding the most holds for it, and the capacity
     * (topology.node.host.memory, 0 = not given); `offloaded` false without offload */
    bool offloaded;
    int host_node;
    int64_t host_mem_bytes, host_capacity_bytes;
    bool variable;
    int slowest_rank;
    double slowest_compute_s, slowest_wait_s;
    /* training.tokens > 0: the budget, in steps of global_batch x seq_len tokens (rounded
     * up), at the step time; cost with topology.price_per_gpu_hour > 0, else NaN. All NaN
     * without a budget. */
    double budget_tokens, budget_steps, time_to_train_s, gpu_hours, cost;
} replay_summary;

/* Sets every figure of `s` that only a replay gives (step_time_s through comm_bytes_per_gpu,
 * the MoE routing statistics, the budget) to NaN: a run recorded without a replay (a plan's
 * pruned candidate, a skipped or failed run), which JSON prints as null (docs/json.md). */
void replay_summary_untimed(replay_summary *s);

typedef struct replay_rank_row {
    int32_t rank, node, dp, tp, pp, ep, cp;
    double compute_s, comm_s, idle_s, bubble_s; /* last step */
    int64_t peak_mem_bytes;
    int64_t mem[PLAN_MEM_COUNT];
} replay_rank_row;

typedef struct replay_step_row {
    int32_t step; /* 1-based */
    double start_s, end_s;
} replay_step_row;

typedef struct replay_timeline_row {
    int32_t rank;
    const char *stream; /* "compute", "dp", "tp", ... */
    const char *kind;   /* "compute" or the collective: "all_reduce", ... */
    const char *name;
    int32_t layer;      /* -1 = not a layer op */
    int32_t microbatch; /* -1 = none */
    const char *phase;  /* "fwd", "bwd", "opt", "comm" */
    const char *group;  /* "dp", "tp", ..., "none" */
    int32_t step;       /* 1-based */
    double start_s, end_s;
    double bytes, flops;
} replay_timeline_row;

typedef struct replay_bubble_row {
    int32_t rank;
    int32_t step;
    double start_s, end_s;
    const char *cause;
} replay_bubble_row;

typedef struct replay_memory_row {
    int32_t rank;
    double t_s;
    const char *category;
    int64_t bytes; /* level in use after the change */
} replay_memory_row;

typedef struct replay_link_row {
    int32_t link;
    const char *src, *dst, *cls;
    double bytes, busy_s, utilization; /* over the whole simulated time */
} replay_link_row;

typedef struct replay_results {
    replay_summary summary;
    size_t n_ranks, n_steps, n_timeline, n_bubbles, n_memory, n_links;
    replay_rank_row *ranks;
    replay_step_row *steps;
    replay_timeline_row *timeline;
    replay_bubble_row *bubbles;
    replay_memory_row *memory;
    replay_link_row *links;
    /* engine statistics (not part of the deterministic file contents) */
    uint64_t events;
    uint64_t flows;       /* network flows completed */
    uint64_t flow_solves; /* max-min re-solves of the flow rates */
    uint64_t rounds_isolated, rounds_split; /* collective rounds timed with one event */
    uint64_t rounds_closed, rounds_evolved; /* of those, closed ones, and evolutions simulated */
    double simulated_s;   /* simulated time at the last event */
    double setup_s;       /* of wall_s: before the first event (schedules, routes, state) */
    double wall_s;
    bool cancelled;       /* replay_options.cancel stopped the replay: nothing summarized */
    bool beyond_horizon;  /* an event at or past SIM_TIME_HORIZON stopped it: status error */
    /* owned strings the rows point to */
    char **strings;
    size_t n_strings, cap_strings;
    size_t cap_timeline, cap_bubbles, cap_memory;
} replay_results;

replay_results *replay_results_create(void);
void replay_results_destroy(replay_results *r);

/* Copies `s` into the results' string table and returns the copy (owned by r). */
const char *replay_results_intern(replay_results *r, const char *s);

#endif
