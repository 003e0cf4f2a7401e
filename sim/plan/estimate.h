/* What a run will cost before it is built: ops, memory and simulated time estimated from
 * the scenario alone, with no allocation that grows with them (docs/scenario-format.md,
 * "Limits"; docs/cli.md, "Memory budget"). The loader refuses scenarios whose figures
 * stepsim cannot represent (ops a rank cannot index, simulated time past the horizon) and
 * the commands that build a trace refuse those over the memory budget.
 *
 * Every figure is an estimate, not a bound: op counts follow the generator's structure
 * (kernels per block from the model, the collectives each strategy adds per layer and per
 * micro-batch, counted generously), memory is those ops times the bytes per op measured on
 * the shipped scenarios (docs/performance.md), time is the busiest rank's kernels back to
 * back plus its communication volume over the slowest link it may cross. */
#ifndef SIM_PLAN_ESTIMATE_H
#define SIM_PLAN_ESTIMATE_H

#include <stdbool.h>

#include "hw/spec.h"
#include "plan/scenario.h"

typedef struct plan_work {
    double ranks;          /* GPUs of the parallel layout */
    double micro_batches;  /* per replica per step (gradient accumulation) */
    double ops_per_rank;   /* ops of the busiest rank in one step */
    double generated;      /* ranks whose ops are generated (the others borrow them) */
    double replayed;       /* ranks the replay keeps state for (one replica under symmetry) */
    double ops;            /* all ranks, one step */
    double compute_s;      /* the busiest rank's kernels back to back, one step */
    double comm_s;         /* its communication volume over the slowest link, one step */
    double step_s;         /* compute_s + comm_s, with the pipeline's fill and drain */
    double run_s;          /* step_s x simulation.steps */
    double topology_bytes; /* the cluster's graph and routes */
    double bytes;          /* memory of the whole run (plan, trace, replay) */
    double bytes_plan;     /* the plan alone, without the replay (`stepsim mem`) */
    double bytes_symmetry; /* the same with simulation.symmetry: dp, when that applies, else
                              equal to bytes */
} plan_work;

/* Estimates the work of `sc` (validated by the loader up to this check; `op_sharing` false
 * for --no-op-sharing, which generates every rank). Pure; cannot fail. */
void plan_estimate_work(const plan_scenario *sc, bool op_sharing, plan_work *out);

/* Memory the graph of topology `t` takes once built (devices, links, routes), the process's
 * fixed costs included (`stepsim topo`, `bench-coll`). Pure. */
double plan_estimate_topology_bytes(const hw_topology_spec *t);

/* Memory a replay of a trace file with these rows needs (`stepsim replay`; every op of a
 * file is its rank's own, none borrowed). Pure. */
double plan_estimate_trace_bytes(double ops, double deps, double mem_events, double ranks);

/* Most ops one rank may hold in a step: op indices are 32-bit, and dependency and memory
 * event indices too (a few per op), so an eighth of the range. */
#define PLAN_OPS_PER_RANK_MAX 536870912.0 /* 2^29 */

/* Most simulated time the loader lets a run's estimate reach: a quarter of the horizon
 * (SIM_TIME_HORIZON, 2^61 ps), about 6.7 days, so that an estimate short by up to 4x still
 * ends before the replay's own stop at the horizon. */
#define PLAN_RUN_S_MAX 576460.0

#endif
