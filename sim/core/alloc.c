/* The checked allocation wrapper (see alloc.h). */
#include "core/sim.h"

#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <limits.h>
#include <malloc.h>
#endif

/* A grown array of this size or more moves to a fresh calloc'd block instead of realloc +
 * memset. glibc serves blocks of 32 MiB or more (its largest mmap threshold on 64-bit
 * systems) as fresh mappings, which calloc leaves as the kernel's zero pages, so the
 * doubled capacity's unused tail is never touched; memset faulted it all in. The GPT-3
 * 175B plan's winner (`stepsim run` of one data-parallel replica, 48 M ops): peak RSS
 * 674 -> 594 MB, the same JSON. */
#define BIG_ARRAY_BYTES ((size_t)32 << 20)

static size_t checked_mul(size_t n, size_t size)
{
    SIM_ASSERT(size == 0 || n <= SIZE_MAX / size, "allocation size overflow: %zu x %zu", n,
               size);
    return n * size;
}

void *sim_calloc(size_t n, size_t size)
{
    size_t bytes = checked_mul(n, size);
    void *p = calloc(bytes ? bytes : 1, 1);
    SIM_ASSERT(p != NULL, "out of memory allocating %zu bytes", bytes);
    return p;
}

void *sim_realloc_array(void *p, size_t n, size_t size)
{
    size_t bytes = checked_mul(n, size);
    void *q = realloc(p, bytes ? bytes : 1);
    SIM_ASSERT(q != NULL, "out of memory allocating %zu bytes", bytes);
    return q;
}

char *sim_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = sim_calloc(n, 1);
    memcpy(d, s, n);
    return d;
}

void sim_free(void *p)
{
    free(p);
}

void sim_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        SIM_ASSERT(ncap <= SIZE_MAX / 2, "capacity overflow");
        ncap *= 2;
    }
    char *q;
    if (checked_mul(ncap, size) >= BIG_ARRAY_BYTES) {
        q = sim_calloc(ncap, size);
        if (*cap)
            memcpy(q, *p, *cap * size);
        free(*p);
    } else {
        q = sim_realloc_array(*p, ncap, size);
        memset(q + *cap * size, 0, (ncap - *cap) * size);
    }
    *p = q;
    *cap = ncap;
}

/* glibc maps blocks above its mmap threshold (at most 32 MiB) on their own and unmaps them
 * when freed, and gives the heap's free top back past 128 KiB: a grown array's old block
 * (sim_grow) or a replay's scratch then costs page faults again in the next block. With no
 * mappings and no trimming, a freed block serves the next allocation, and fresh heap pages
 * are still known zero to calloc (sbrk memory: a grown array's tail stays untouched). The
 * GPT-3 175B plan's micro-batch-1 candidates (one data-parallel replica, 147 M ops): 885 K
 * -> 637 K page faults, 6.1 -> 5.4 s, the same peak RSS. The price: a freed block reused is
 * zeroed by calloc where a fresh mapping was not, and holes can stay; the bench's GPT-3
 * 1,024-GPU row peaks at 1.38 GB instead of 1.31, MT-NLG and the 16K symmetric row as before
 * (docs/performance.md). */
void sim_alloc_keep_freed(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}
