/* Fixed-size object pool (see pool.h).
 *
 * Release layout: objects are carved on demand (bump pointer) from chunks whose object count
 * doubles each time, so the number of chunks stays logarithmic in the peak population and
 * capacity never exceeds about twice the peak. A returned object's first word links it into
 * an intrusive LIFO free list: the most recently freed (cache-hot) object is reused first.
 * Chunks are only released by sim_pool_destroy.
 *
 * Debug layout (SIM_POOL_DEBUG, meson option pool_debug): every object is its own
 * sim_calloc/sim_free, so ASan and valgrind report overflows, use after put and leaks per
 * object. Each allocation carries a small header linking it into a list of live objects, so
 * destroy can still free objects the caller never returned (as the release pool frees its
 * chunks), and put can check that the object came from this pool. */
#include "core/sim.h"

#include "core/pool.h"

#include <string.h>

/* Objects are rounded up to this alignment (pool.h promises pointer alignment; the largest
 * of pointer and 64-bit integer alignment covers every member a pooled struct may have). */
#define POOL_ALIGN (_Alignof(void *) > _Alignof(int64_t) ? _Alignof(void *) : _Alignof(int64_t))

/* The first chunk holds about this many bytes of objects (and at least POOL_MIN_OBJS). */
#define POOL_FIRST_CHUNK_BYTES 4096
#define POOL_MIN_OBJS 8

#if SIM_POOL_DEBUG

typedef union pool_dbg_hdr {
    struct {
        const sim_pool *owner;
        union pool_dbg_hdr *prev, *next;
    } h;
    max_align_t align_; /* keeps the object after the header maximally aligned */
} pool_dbg_hdr;

struct sim_pool {
    size_t obj_size;
    size_t in_use;
    pool_dbg_hdr *live; /* doubly linked list of objects handed out */
};

#else

typedef struct pool_chunk {
    struct pool_chunk *next; /* older chunk */
    max_align_t objs[];      /* n_objs * obj_size bytes */
} pool_chunk;

struct sim_pool {
    size_t obj_size;
    void *free_list;         /* intrusive: the first word of a free object is the next one */
    char *bump, *bump_end;   /* not yet carved part of the newest chunk */
    pool_chunk *chunks;      /* newest first */
    size_t next_chunk_objs;  /* object count of the next chunk (doubles) */
    size_t in_use, capacity;
};

#endif

sim_pool *sim_pool_create(size_t obj_size)
{
    /* The free list stores a pointer inside each free object. */
    if (obj_size < sizeof(void *))
        obj_size = sizeof(void *);
    SIM_ASSERT(obj_size <= SIZE_MAX - POOL_ALIGN, "obj_size=%zu", obj_size);
    obj_size = (obj_size + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;

    sim_pool *pool = sim_calloc(1, sizeof *pool);
    pool->obj_size = obj_size;
#if !SIM_POOL_DEBUG
    pool->next_chunk_objs = SIM_MAX((size_t)POOL_MIN_OBJS, POOL_FIRST_CHUNK_BYTES / obj_size);
#endif
    return pool;
}

#if SIM_POOL_DEBUG

void sim_pool_destroy(sim_pool *pool)
{
    if (!pool)
        return;
    pool_dbg_hdr *h = pool->live;
    while (h) {
        pool_dbg_hdr *next = h->h.next;
        sim_free(h);
        h = next;
    }
    sim_free(pool);
}

void *sim_pool_get(sim_pool *pool)
{
    /* sim_calloc checks the size arithmetic and zero-fills. */
    pool_dbg_hdr *h = sim_calloc(1, sizeof(pool_dbg_hdr) + pool->obj_size);
    h->h.owner = pool;
    h->h.next = pool->live;
    if (pool->live)
        pool->live->h.prev = h;
    pool->live = h;
    pool->in_use++;
    return h + 1;
}

void sim_pool_put(sim_pool *pool, void *obj)
{
    SIM_ASSERT(obj != NULL, "put of NULL");
    pool_dbg_hdr *h = (pool_dbg_hdr *)obj - 1;
    SIM_ASSERT(h->h.owner == pool, "object %p belongs to pool %p, not %p", obj,
               (const void *)h->h.owner, (void *)pool);
    SIM_ASSERT(pool->in_use > 0, "more puts than gets");
    if (h->h.prev)
        h->h.prev->h.next = h->h.next;
    else
        pool->live = h->h.next;
    if (h->h.next)
        h->h.next->h.prev = h->h.prev;
    pool->in_use--;
    sim_free(h);
}

size_t sim_pool_capacity(const sim_pool *pool)
{
    /* Nothing is kept in reserve: the pool holds exactly what is handed out. */
    return pool->in_use;
}

#else

void sim_pool_destroy(sim_pool *pool)
{
    if (!pool)
        return;
    pool_chunk *c = pool->chunks;
    while (c) {
        pool_chunk *next = c->next;
        sim_free(c);
        c = next;
    }
    sim_free(pool);
}

/* Slow path: the free list and the current chunk are exhausted. */
static void pool_add_chunk(sim_pool *pool)
{
    size_t n = pool->next_chunk_objs;
    SIM_ASSERT(n <= (SIZE_MAX - sizeof(pool_chunk)) / pool->obj_size, "pool chunk overflow");
    /* calloc: freshly carved objects are already zero, so get skips the memset for them. */
    pool_chunk *c = sim_calloc(1, sizeof(pool_chunk) + n * pool->obj_size);
    c->next = pool->chunks;
    pool->chunks = c;
    pool->bump = (char *)c->objs;
    pool->bump_end = pool->bump + n * pool->obj_size;
    pool->capacity += n;
    /* Saturate rather than overflow; unreachable with real memory sizes. */
    pool->next_chunk_objs = n <= SIZE_MAX / 2 ? n * 2 : n;
}

void *sim_pool_get(sim_pool *pool)
{
    void *obj = pool->free_list;
    if (obj) {
        memcpy(&pool->free_list, obj, sizeof(void *));
        memset(obj, 0, pool->obj_size);
    } else {
        if (pool->bump == pool->bump_end)
            pool_add_chunk(pool);
        obj = pool->bump;
        pool->bump += pool->obj_size;
    }
    pool->in_use++;
    return obj;
}

void sim_pool_put(sim_pool *pool, void *obj)
{
    SIM_ASSERT(obj != NULL, "put of NULL");
    SIM_ASSERT(pool->in_use > 0, "more puts than gets");
    memcpy(obj, &pool->free_list, sizeof(void *));
    pool->free_list = obj;
    pool->in_use--;
}

size_t sim_pool_capacity(const sim_pool *pool)
{
    return pool->capacity;
}

#endif

size_t sim_pool_in_use(const sim_pool *pool)
{
    return pool->in_use;
}
