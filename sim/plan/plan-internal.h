/* Pieces of the plan shared between plan.c (layout, memory walk), dp.c (the data-parallel
 * family's traces). */
#ifndef SIM_PLAN_PLAN_INTERNAL_H
#define SIM_PLAN_PLAN_INTERNAL_H

#include "plan/plan.h"

/* Framework memory every rank holds (docs/memory.md): the CUDA context, cuBLAS/cuDNN
 * workspaces and allocator slack, plus NCCL's communicator buffers when it communicates. */
#define PLAN_FRAMEWORK_BYTES (INT64_C(512) << 20)
#define PLAN_NCCL_BUFFER_BYTES (INT64_C(256) << 20)

/* Builds p->trace for the data-parallel family (single GPU, DDP, ZeRO-1/2, FSDP/ZeRO-3,
 * hybrid shard), with memory events and each rank's persistent bytes, and p->mem (the
 * persistent bytes per rank), p->model_flops_per_step, p->hardware_flops_per_step.
 * Returns 0 or SIM_EINVAL with diag set (e.g. a hybrid shard over unequal nodes). */
int plan__dp_trace(plan *p, bool stream, bool sharing, sim_diag *diag);
/* With `stream` each rank's ops are walked for memory (plan__walk_rank) and released as soon
 * as the rank is generated, so only the groups and collective instances stay: planning
 * without a replay (`stepsim check`, `stepsim mem`) then needs one rank's ops at a time.
 * `sharing` false: every rank's ops generated, none borrowed (share.c). */

/* The model's fine-tuning method, rank and target bits from the scenario's training keys. */
model_ft plan__finetune_of(const plan_training *t);

/* Sets p->peak[r] (allocated) from rank r's finished ops and p->mem[r]. */
void plan__walk_rank(plan *p, int r);

#endif
