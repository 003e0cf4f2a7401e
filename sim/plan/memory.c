/* Memory categories and the out-of-memory verdict (see memory.h, docs/memory.md). */
#include "core/sim.h"

#include <stdio.h>

#include "plan/memory.h"

const char *plan_mem_cat_name(plan_mem_cat c)
{
    static const char *const names[PLAN_MEM_COUNT] = {"params",      "grads",   "optimizer",
                                                      "activations", "buffers", "other"};
    SIM_ASSERT(c >= 0 && c < PLAN_MEM_COUNT, "category %d", (int)c);
    return names[c];
}

plan_mem_cat plan_mem_binding(const plan_mem *base, const plan_mem *cross, int64_t capacity)
{
    int k = 0;
    if (base->total > capacity) {
        for (int c = 1; c < PLAN_MEM_COUNT; c++)
            if (base->bytes[c] > base->bytes[k])
                k = c;
        return (plan_mem_cat)k;
    }
    for (int c = 1; c < PLAN_MEM_COUNT; c++)
        if (cross->bytes[c] - base->bytes[c] > cross->bytes[k] - base->bytes[k])
            k = c;
    return (plan_mem_cat)k;
}

int plan_mem_verdict(const plan_mem *m, const plan_mem *base, const plan_mem *cross,
                     int64_t capacity, char *why, size_t size)
{
    why[0] = '\0';
    if (m->total <= capacity)
        return 0;
    plan_mem_cat k = plan_mem_binding(base, cross, capacity);
    const double GiB = 1024.0 * 1024.0 * 1024.0;
    if (base->total > capacity)
        snprintf(why, size, "%s %.1f GiB, the largest of the %.1f GiB held from the start, "
                 "> %.1f GiB", plan_mem_cat_name(k), base->bytes[k] / GiB, base->total / GiB,
                 capacity / GiB);
    else
        snprintf(why, size, "%s +%.1f GiB over the %.1f GiB held from the start take the "
                 "peak to %.1f GiB > %.1f GiB", plan_mem_cat_name(k),
                 (m->bytes[k] - base->bytes[k]) / GiB, base->total / GiB, m->total / GiB,
                 capacity / GiB);
    return 1;
}
