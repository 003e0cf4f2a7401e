/* Per-rank memory plan (issue 2: a static estimate; the data-parallel issue replaces it
 * with a timeline). Categories are those of the JSON summary's mem_bytes. */
#ifndef SIM_PLAN_MEMORY_H
#define SIM_PLAN_MEMORY_H

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

#endif
