/* stepsim plan's search space (plan_space.c), shared with plan.c: the candidates, their
 * overrides and the scenario each stands for (docs/plan.md, "Candidates"). */
#ifndef SIM_CLI_PLAN_INTERNAL_H
#define SIM_CLI_PLAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/scenario.h"

/* The dimensions a candidate sets, as overrides (one /sweep column each). */
#define PLAN_AXES 14
extern const char *const cli__plan_axis_keys[PLAN_AXES];
/* The rank orders searched: Megatron's, and the pipeline inside data parallelism. */
extern const char *const cli__plan_order_names[2];

typedef struct cand {
    int tp, pp, cp, dp, ep, zero, vstages, mb, order;
    bool sp, overlap, offload;
    model_recompute rc;
} cand;

typedef struct cand_list {
    cand *c;
    size_t n, cap;
} cand_list;

void cli__plan_cand_add(cand_list *g, cand c);

/* Every candidate for scenario `sc` on `gpus` GPUs of `per_node` per node at global batch
 * `batch` (offload only when `host`: every GPU reaches host memory). */
void cli__plan_candidates(const plan_scenario *sc, int gpus, int per_node, int64_t batch,
                          bool host, cand_list *g);

/* Candidate k as a scenario for the screen: `base` with k's keys, as its run's overrides set
 * them. */
void cli__plan_cand_scenario(const plan_scenario *base, const cand *k, int64_t batch,
                             plan_scenario *x);

/* Candidate k's value on each axis, as its run's override sets it. */
void cli__plan_cand_values(const cand *k, char v[PLAN_AXES][32]);

#endif
