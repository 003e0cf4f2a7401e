/* The one heap allocation wrapper. Every size computation is checked for overflow; running
 * out of memory is fatal (a simulator cannot continue meaningfully), reported through the
 * abort path of SIM_ASSERT. */
#ifndef SIM_CORE_ALLOC_H
#define SIM_CORE_ALLOC_H

#include <stddef.h>

/* malloc(n * size), zero-filled. Never returns NULL (n == 0 yields a unique pointer). */
void *sim_calloc(size_t n, size_t size) __attribute__((returns_nonnull));

/* realloc to n * size bytes; new bytes are NOT zeroed. Never returns NULL. */
void *sim_realloc_array(void *p, size_t n, size_t size) __attribute__((returns_nonnull));

/* strdup through the wrapper. s may be NULL (returns NULL). */
char *sim_strdup(const char *s);

/* free; NULL is a no-op. */
void sim_free(void *p);

/* Grows *p (an array of `size`-byte elements with capacity *cap) so that it holds at least
 * `need` elements; doubles the capacity. New elements are zeroed. */
void sim_grow(void **p, size_t *cap, size_t need, size_t size);

/* For a process that runs one job and exits (a sweep's or plan's forked run): freed blocks,
 * large ones included, stay in the process's heap for the blocks allocated after them,
 * instead of going back to the kernel and being faulted in afresh. glibc only; elsewhere a
 * no-op. */
void sim_alloc_keep_freed(void);

#define SIM_GROW(arr, cap, need) sim_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
