/* Fixed-size object pool: objects are carved from chunks that double in size and recycled
 * through a free list, so the event loop allocates nothing once warm. With the build option
 * pool_debug (SIM_POOL_DEBUG) every object is a plain sim_calloc so ASan/valgrind track it. */
#ifndef SIM_CORE_POOL_H
#define SIM_CORE_POOL_H

#include <stddef.h>

typedef struct sim_pool sim_pool;

/* Creates a pool of objects of `obj_size` bytes (rounded up to pointer alignment).
 * The caller owns the pool. Cannot fail (allocation failure aborts). */
sim_pool *sim_pool_create(size_t obj_size);

/* Frees every chunk; objects still handed out become invalid. NULL is a no-op. */
void sim_pool_destroy(sim_pool *pool);

/* Returns a zero-filled object owned by the caller until sim_pool_put. */
void *sim_pool_get(sim_pool *pool);

/* Returns an object obtained from this pool. */
void sim_pool_put(sim_pool *pool, void *obj);

/* Objects currently handed out, and objects the pool holds in total (for tests/stats). */
size_t sim_pool_in_use(const sim_pool *pool);
size_t sim_pool_capacity(const sim_pool *pool);

#endif
