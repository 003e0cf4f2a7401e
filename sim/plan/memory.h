/* Per-rank memory: the categories of the JSON summary, the persistent model states each
 * data-parallel strategy keeps, and the out-of-memory verdict. Transient memory
 * (activations, gathered FSDP units, gradient buckets) is carried by the trace's memory
 * events and tracked over time by the replay; docs/memory.md has every formula. */
#ifndef SIM_PLAN_MEMORY_H
#define SIM_PLAN_MEMORY_H

#include <stddef.h>
#include <stdint.h>

typedef enum plan_mem_cat {
    PLAN_MEM_PARAMS,
    PLAN_MEM_GRADS,
    PLAN_MEM_OPTIMIZER,
    PLAN_MEM_ACTIVATIONS,
    PLAN_MEM_BUFFERS,
    PLAN_MEM_OTHER,
    PLAN_MEM_COUNT
} plan_mem_cat;

const char *plan_mem_cat_name(plan_mem_cat c); /* "params", "grads", ... */

typedef struct plan_mem {
    int64_t bytes[PLAN_MEM_COUNT];
    int64_t total;
} plan_mem;

/* The binding item of a peak over `capacity` (docs/memory.md, "Verdict"): the marginal
 * cause, not the largest item. `base` is the rank's persistent bytes (held from the start of
 * the step), `cross` its split at the first instant its level exceeded the capacity (a walk
 * that never exceeded it passes the peak's split). When the persistent bytes alone exceed the
 * capacity, the largest persistent item; else the item that grew most from `base` to
 * `cross` — what took the level over the budget that the persistent items left. */
plan_mem_cat plan_mem_binding(const plan_mem *base, const plan_mem *cross, int64_t capacity);

/* The verdict on a peak: whether `at_peak` exceeds `capacity`, and if so the binding item
 * (plan_mem_binding of `base` and `cross`) with the bytes that broke the budget, e.g.
 * "activations +8.7 GiB over the 15.8 GiB held from the start take the peak to 24.6 GiB >
 * 23.7 GiB". It names no remedy: the commands that check remedies add them. Writes "" when
 * it fits. Returns 1 if OOM. */
int plan_mem_verdict(const plan_mem *at_peak, const plan_mem *base, const plan_mem *cross,
                     int64_t capacity, char *why, size_t why_size);

#endif
