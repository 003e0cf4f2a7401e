/* Trace files: the per-rank op DAG a plan generates, as HDF5 (`stepsim trace`), and back
 * (`stepsim replay`). The layout is documented in docs/trace-format.md; users may edit a
 * trace (durations measured on their own GPU, ops removed or added) and replay it. */
#ifndef SIM_RESULTS_TRACEFILE_H
#define SIM_RESULTS_TRACEFILE_H

#include "core/error.h"
#include "plan/plan.h"

#define RESULTS_TRACE_FORMAT_VERSION 1

/* Writes p's trace to `path` (temporary name, renamed when complete): the scenario it came
 * from as resolved YAML, the plan figures the replay needs (global batch, model and
 * hardware FLOPs per step, MoE routing statistics), ranks with their persistent memory,
 * groups, collective instances, ops, dependencies and memory events. Returns 0 or SIM_EIO
 * with diag set ("<path>: error: cannot write ..."). */
int results_trace_write(const char *path, const char *command, const char *scenario_yaml,
                   const plan *p, sim_diag *diag);

/* What a trace file holds besides the trace. */
typedef struct results_trace_info {
    char *scenario_yaml;        /* owned (sim_free) */
    int64_t global_batch;
    double model_flops_per_step, hardware_flops_per_step;
    bool moe;
    double moe_dropped_fraction, moe_load_max_over_mean;
} results_trace_info;

/* The rows a trace file declares, from its tables' dataspaces (nothing read): what a replay
 * of it will hold, for the memory budget (plan_estimate_trace_bytes). Returns 0, or an
 * error with diag set when it is not a trace file. */
typedef struct results_trace_rows {
    double ops, deps, mem_events, ranks;
} results_trace_rows;
int results_trace_count(const char *path, results_trace_rows *out, sim_diag *diag);

/* Reads trace file `path` into a new trace (finished and validated: dependencies point
 * backwards, collectives have one op per member, memory balances per step) and *info.
 * Returns 0, or SIM_EINVAL with diag set — "<path>: error: <table> row N: <problem>" — for a
 * file that is not a stepsim trace or breaks the format, SIM_EIO when it cannot be read. */
int results_trace_read(const char *path, trace **out, results_trace_info *info, sim_diag *diag);

#endif
