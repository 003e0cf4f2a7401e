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

/* The verdict on a peak: whether it exceeds `capacity`, and if so which line item broke the
 * budget and what relieves it, cheapest remedy first, e.g. "model states 60.0 GiB > 23.7 GiB:
 * shard them over more GPUs (ZeRO-3/FSDP), use 8-bit or bf16 optimizer states, offload the
 * optimizer to the CPU, or fine-tune with LoRA". Writes "" when it fits. Returns 1 if OOM. */
int plan_mem_verdict(const plan_mem *at_peak, int64_t capacity, char *why, size_t why_size);

#endif
