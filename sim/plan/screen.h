/* The plan's screen (docs/plan.md, "Two tiers"): a closed-form estimate of a candidate's
 * step time and peak memory, cheap enough to score every candidate of a search before the
 * best are replayed event by event.
 *
 * It is built from the replay's own sources: the generator's units and persistent memory
 * (dp.c), its kernels (model_block_ops) timed by the GPU catalog (hw_gpu_kernel_time), its
 * tensor-parallel collective points (emit.c) and the collectives' closed-form costs on the
 * real topology (coll_select, as the replay chooses them). What it does not see: contention
 * between collectives of different groups, the exact order of a pipeline schedule (its
 * bubble is the fill-and-drain formula), and MoE routing skew (uniform routing). */
#ifndef SIM_PLAN_SCREEN_H
#define SIM_PLAN_SCREEN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/sim.h"
#include "plan/scenario.h"

typedef struct plan_screen plan_screen;

typedef struct plan_screen_est {
    double step_s;     /* the step */
    double compute_s;  /* the busiest stage's micro-batches: kernels with the tensor-,
                          context- and expert-parallel collectives they wait for */
    double bubble_s;   /* pipeline fill and drain (0 without a pipeline) */
    double tail_s;     /* after the last backward: exposed gradient reduction, optimizer
                          step and parameter gathers */
    int64_t peak_bytes;     /* the highest stage's estimated peak */
    int64_t capacity_bytes; /* the GPU's usable memory */
} plan_screen_est;

/* A screen for candidates of `base` (validated by the loader): its topology is built once.
 * Returns 0, or an error with diag set (a topology that cannot be built). */
int plan_screen_create(const plan_scenario *base, plan_screen **out, sim_diag *diag);
void plan_screen_destroy(plan_screen *s);

/* Whether every GPU of the topology reaches host memory (offload can be searched), and the
 * least memory of its GPU models (the capacity the screen judges peaks against). */
bool plan_screen_host_memory(const plan_screen *s);
int64_t plan_screen_capacity(const plan_screen *s);

/* Estimates candidate `sc`: `base` with other parallel and training keys, on the same
 * topology and model. Pure apart from the screen's caches. Memory comes first: a candidate
 * whose peak_bytes exceeds the capacity gets NAN times unless `time_all`. */
void plan_screen_eval(plan_screen *s, const plan_scenario *sc, bool time_all,
                      plan_screen_est *out);

#endif
