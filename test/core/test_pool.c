/* Unit test of the object pool (sim/core/pool.c): zero-filled objects, growth across several
 * chunks, recycling without growth, alignment, and the in_use/capacity accounting, in both the
 * chunked build and the pool_debug build (one malloc per object). */
#include "core/sim.h"

#include "core/pool.h"

#include "test.h"

typedef struct obj24 {
    int64_t x, y;
    void *p;
} obj24;

#define N_OBJS 1000

static int all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

static void test_empty(void)
{
    sim_pool *pool = sim_pool_create(sizeof(obj24));
    /* nothing is allocated before the first get */
    CHECK_INT_EQ(sim_pool_in_use(pool), 0);
    CHECK_INT_EQ(sim_pool_capacity(pool), 0);
    sim_pool_destroy(pool);
    sim_pool_destroy(NULL); /* no-op */
}

/* Grows across several chunks, then recycles every object without growing. */
static void test_grow_and_recycle(void)
{
    sim_pool *pool = sim_pool_create(sizeof(obj24));
    obj24 *objs[N_OBJS];

    for (int i = 0; i < N_OBJS; i++) {
        objs[i] = sim_pool_get(pool);
        CHECK(all_zero(objs[i], sizeof(obj24)));
        CHECK((uintptr_t)objs[i] % _Alignof(void *) == 0);
        /* a pattern that must survive until the object is put back (no overlap) */
        objs[i]->x = i;
        objs[i]->y = -i;
        objs[i]->p = &objs[i];
    }
    /* 1000 gets, none returned */
    CHECK_INT_EQ(sim_pool_in_use(pool), N_OBJS);
    size_t cap = sim_pool_capacity(pool);
#if SIM_POOL_DEBUG
    /* pool_debug keeps nothing in reserve: capacity is what is handed out */
    CHECK_INT_EQ(cap, N_OBJS);
#else
    /* 24-byte objects: the first chunk holds 4096/24 = 170, then 340 and 680 (doubling);
     * 170 + 340 = 510 < 1000 <= 170 + 340 + 680 = 1190, so three chunks */
    CHECK_INT_EQ(cap, 1190);
#endif
    int intact = 1;
    for (int i = 0; i < N_OBJS; i++)
        intact &= objs[i]->x == i && objs[i]->y == -i && objs[i]->p == (void *)&objs[i];
    CHECK(intact);

    for (int i = 0; i < N_OBJS; i++)
        sim_pool_put(pool, objs[i]);
    /* every object returned; the chunks stay */
    CHECK_INT_EQ(sim_pool_in_use(pool), 0);
#if SIM_POOL_DEBUG
    CHECK_INT_EQ(sim_pool_capacity(pool), 0);
#else
    CHECK_INT_EQ(sim_pool_capacity(pool), cap);
#endif

    /* Second round: the written patterns must be gone (get zero-fills recycled objects). */
    int zero = 1;
    for (int i = 0; i < N_OBJS; i++) {
        objs[i] = sim_pool_get(pool);
        zero &= all_zero(objs[i], sizeof(obj24));
    }
    CHECK(zero);
    CHECK_INT_EQ(sim_pool_in_use(pool), N_OBJS);
#if !SIM_POOL_DEBUG
    /* the same 1000 objects are recycled: no new chunk */
    CHECK_INT_EQ(sim_pool_capacity(pool), cap);
#endif
    /* Half go back, half stay out: destroy must free them all (ASan/valgrind see leaks). */
    for (int i = 0; i < N_OBJS; i += 2)
        sim_pool_put(pool, objs[i]);
    /* 1000 out, 500 returned */
    CHECK_INT_EQ(sim_pool_in_use(pool), 500);
    sim_pool_destroy(pool);
}

/* The free list is LIFO, so the object just returned (cache-hot) is the next one handed out;
 * and growth happens only when the free list is empty. */
static void test_lifo_and_accounting(void)
{
    sim_pool *pool = sim_pool_create(sizeof(obj24));
    obj24 *a = sim_pool_get(pool);
    obj24 *b = sim_pool_get(pool);
    CHECK(a != b);
    a->x = 7;
    sim_pool_put(pool, a);
    /* a, b out; a returned */
    CHECK_INT_EQ(sim_pool_in_use(pool), 1);
    obj24 *c = sim_pool_get(pool);
    CHECK(all_zero(c, sizeof *c));
#if !SIM_POOL_DEBUG
    CHECK(c == a);
    /* one chunk of 4096/24 = 170 objects so far */
    CHECK_INT_EQ(sim_pool_capacity(pool), 170);
    /* Fill the first chunk exactly: 170 objects out in all, still one chunk. */
    for (int i = 2; i < 170; i++)
        (void)sim_pool_get(pool);
    CHECK_INT_EQ(sim_pool_in_use(pool), 170);
    CHECK_INT_EQ(sim_pool_capacity(pool), 170);
    /* the 171st object opens a second chunk twice as large: 170 + 340 */
    (void)sim_pool_get(pool);
    CHECK_INT_EQ(sim_pool_in_use(pool), 171);
    CHECK_INT_EQ(sim_pool_capacity(pool), 510);
#else
    /* b and c are out; each is its own allocation */
    CHECK_INT_EQ(sim_pool_in_use(pool), 2);
    CHECK_INT_EQ(sim_pool_capacity(pool), 2);
#endif
    sim_pool_destroy(pool);
}

/* Sizes are rounded up to pointer alignment, and tiny objects still hold the free-list link. */
static void test_odd_sizes(void)
{
    size_t sizes[] = {1, 3, 13, 24, 100, 5000};
    for (size_t s = 0; s < SIM_ARRAY_LEN(sizes); s++) {
        sim_pool *pool = sim_pool_create(sizes[s]);
        unsigned char *objs[300];
        int ok = 1;
        for (int i = 0; i < 300; i++) {
            objs[i] = sim_pool_get(pool);
            ok &= (uintptr_t)objs[i] % _Alignof(void *) == 0;
            ok &= all_zero(objs[i], sizes[s]);
            memset(objs[i], 0xAB, sizes[s]);
        }
        CHECK(ok);
        for (int i = 0; i < 300; i += 3)
            sim_pool_put(pool, objs[i]);
        for (int i = 0; i < 300; i += 3) {
            objs[i] = sim_pool_get(pool);
            ok &= all_zero(objs[i], sizes[s]);
        }
        CHECK(ok);
        /* the 0xAB patterns of objects never returned must be intact (no overlap) */
        for (int i = 0; i < 300; i++)
            if (i % 3)
                ok &= objs[i][0] == 0xAB && objs[i][sizes[s] - 1] == 0xAB;
        CHECK(ok);
        /* 300 gets, 100 puts, 100 gets */
        CHECK_INT_EQ(sim_pool_in_use(pool), 300);
        CHECK(sim_pool_capacity(pool) >= 300);
        sim_pool_destroy(pool);
    }
}

int main(void)
{
    test_empty();
    test_grow_and_recycle();
    test_lifo_and_accounting();
    test_odd_sizes();
    return test_finish();
}
