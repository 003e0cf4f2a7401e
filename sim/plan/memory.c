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

int plan_mem_verdict(const plan_mem *m, int64_t capacity, char *why, size_t size)
{
    why[0] = '\0';
    if (m->total <= capacity)
        return 0;
    /* the line items a user can act on, and their remedies, cheapest first */
    static const struct {
        const char *what, *remedy;
    } items[] = {
        {"model states", "shard them over more GPUs (ZeRO-3/FSDP), use 8-bit or bf16 optimizer "
                         "states, offload the optimizer to the CPU, or fine-tune with LoRA"},
        {"activations", "recompute activations (selective, then full), use a smaller "
                        "micro-batch or sequence, or split the sequence (TP+SP, context "
                        "parallelism)"},
        {"communication buffers", "use smaller DDP buckets, less FSDP prefetch, or reshard "
                                  "after forward"},
    };
    int64_t v[3] = {m->bytes[PLAN_MEM_PARAMS] + m->bytes[PLAN_MEM_GRADS] +
                        m->bytes[PLAN_MEM_OPTIMIZER],
                    m->bytes[PLAN_MEM_ACTIVATIONS],
                    m->bytes[PLAN_MEM_BUFFERS] + m->bytes[PLAN_MEM_OTHER]};
    int k = 0;
    for (int i = 1; i < 3; i++)
        if (v[i] > v[k])
            k = i;
    const double GiB = 1024.0 * 1024.0 * 1024.0;
    if (v[k] > capacity)
        snprintf(why, size, "%s %.1f GiB > %.1f GiB: %s", items[k].what, v[k] / GiB,
                 capacity / GiB, items[k].remedy);
    else
        snprintf(why, size, "%s %.1f GiB bring the peak to %.1f GiB > %.1f GiB: %s",
                 items[k].what, v[k] / GiB, m->total / GiB, capacity / GiB, items[k].remedy);
    return 1;
}
