/* Unit test of the event queue (sim/core/eventq.c): (time, seq) order with ties broken by
 * scheduling order, interleaved times, cancellation of the head, a middle event (both the
 * sift-down and the sift-up repair) and the last slot, reuse after cancel, re-pushing a popped
 * event, and a randomized push/cancel/pop run checked against a sorted reference. */
#include "core/sim.h"

#include "core/eventq.h"

#include <stdlib.h>

#include "test.h"

/* Tiny deterministic generator (Marsaglia xorshift64). */
static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static sim_event *push_at(sim_eventq *q, sim_time t, int32_t tag)
{
    sim_event *ev = sim_eventq_alloc(q);
    ev->a = tag;
    sim_eventq_push(q, ev, t);
    return ev;
}

/* Pops one event, checks its time and tag, and frees it. */
static void expect_pop(sim_eventq *q, sim_time t, int32_t tag, const char *what)
{
    sim_event *ev = sim_eventq_pop(q);
    CHECK(ev != NULL);
    if (!ev)
        return;
    if (ev->time != t || ev->a != tag)
        fprintf(stderr, "  (%s)\n", what);
    CHECK_INT_EQ(ev->time, t);
    CHECK_INT_EQ(ev->a, tag);
    CHECK_INT_EQ(ev->heap_index, SIM_EVENT_NOT_QUEUED);
    sim_eventq_free(q, ev);
}

static void test_empty(void)
{
    sim_eventq *q = sim_eventq_create();
    CHECK(sim_eventq_pop(q) == NULL);
    CHECK_INT_EQ(sim_eventq_peek_time(q), SIM_TIME_NEVER);
    CHECK_INT_EQ(sim_eventq_size(q), 0);
    CHECK_INT_EQ(sim_eventq_pushed(q), 0);
    CHECK_INT_EQ(sim_eventq__check(q), 0);

    /* A fresh event is zeroed except heap_index, which says "not queued". */
    sim_event *ev = sim_eventq_alloc(q);
    CHECK_INT_EQ(ev->time, 0);
    CHECK_INT_EQ(ev->seq, 0);
    CHECK_INT_EQ(ev->type, 0);
    CHECK_INT_EQ(ev->a, 0);
    CHECK_INT_EQ(ev->b, 0);
    CHECK_INT_EQ(ev->c, 0);
    CHECK(ev->ptr == NULL);
    CHECK_INT_EQ(ev->heap_index, SIM_EVENT_NOT_QUEUED);
    sim_eventq_free(q, ev);
    sim_eventq_destroy(q);
    sim_eventq_destroy(NULL); /* no-op */
}

/* Ten events at the same time pop in the order they were scheduled. */
static void test_equal_times(void)
{
    sim_eventq *q = sim_eventq_create();
    /* pushed in reverse tag order so that tag order and scheduling order disagree */
    for (int i = 0; i < 10; i++)
        push_at(q, 5, 9 - i);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    /* 10 pushes */
    CHECK_INT_EQ(sim_eventq_size(q), 10);
    CHECK_INT_EQ(sim_eventq_pushed(q), 10);
    uint64_t last_seq = 0;
    for (int i = 0; i < 10; i++) {
        sim_event *ev = sim_eventq_pop(q);
        /* scheduling order: tag 9 was pushed first, tag 0 last */
        CHECK_INT_EQ(ev->a, 9 - i);
        CHECK_INT_EQ(ev->time, 5);
        /* seq counts pushes from 0 */
        CHECK_INT_EQ(ev->seq, (uint64_t)i);
        CHECK(i == 0 || ev->seq > last_seq);
        last_seq = ev->seq;
        sim_eventq_free(q, ev);
    }
    CHECK(sim_eventq_pop(q) == NULL);
    sim_eventq_destroy(q);
}

/* Interleaved times with ties: order by time, then by scheduling order. */
static void test_interleaved(void)
{
    sim_eventq *q = sim_eventq_create();
    static const sim_time times[] = {30, 10, 20, 10, 30, 0, 20, 10};
    for (size_t i = 0; i < SIM_ARRAY_LEN(times); i++)
        push_at(q, times[i], (int32_t)i);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    /* earliest of the 8 is tag 5 at t=0 */
    CHECK_INT_EQ(sim_eventq_peek_time(q), 0);
    /* sorted by (time, push index): 0:[5] 10:[1,3,7] 20:[2,6] 30:[0,4] */
    expect_pop(q, 0, 5, "t=0");
    expect_pop(q, 10, 1, "first t=10");
    expect_pop(q, 10, 3, "second t=10");
    /* an event scheduled now at an already-queued time goes after those queued before it */
    push_at(q, 20, 100);
    expect_pop(q, 10, 7, "third t=10");
    expect_pop(q, 20, 2, "first t=20");
    expect_pop(q, 20, 6, "second t=20");
    expect_pop(q, 20, 100, "late t=20");
    CHECK_INT_EQ(sim_eventq_peek_time(q), 30);
    expect_pop(q, 30, 0, "first t=30");
    expect_pop(q, 30, 4, "second t=30");
    CHECK_INT_EQ(sim_eventq_size(q), 0);
    /* 8 + 1 pushes */
    CHECK_INT_EQ(sim_eventq_pushed(q), 9);
    sim_eventq_destroy(q);
}

/* A popped event pushed again gets a new, larger seq: it goes after events already waiting at
 * the same time. */
static void test_repush(void)
{
    sim_eventq *q = sim_eventq_create();
    push_at(q, 10, 1);
    push_at(q, 10, 2);
    sim_event *ev = sim_eventq_pop(q);
    CHECK_INT_EQ(ev->a, 1);
    sim_eventq_push(q, ev, 10);
    /* pushes: tag 1 (seq 0), tag 2 (seq 1), tag 1 again (seq 2) */
    CHECK_INT_EQ(ev->seq, 2);
    expect_pop(q, 10, 2, "waiting event first");
    expect_pop(q, 10, 1, "re-pushed event second");
    CHECK_INT_EQ(sim_eventq_pushed(q), 3);
    sim_eventq_destroy(q);
}

/* Cancel the head, a middle event, the last heap slot, then reuse the freed event. */
static void test_cancel(void)
{
    sim_eventq *q = sim_eventq_create();
    sim_event *ev[20];
    /* Increasing times: no push sifts, so event i sits in heap slot i. */
    for (int i = 0; i < 20; i++)
        ev[i] = push_at(q, 10 * i, i);
    int in_place = 1;
    for (int i = 0; i < 20; i++)
        in_place &= ev[i]->heap_index == (uint32_t)i;
    CHECK(in_place);

    /* head: t=0 goes, t=10 becomes the earliest */
    sim_eventq_cancel(q, ev[0]);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_peek_time(q), 10);
    CHECK_INT_EQ(sim_eventq_size(q), 19);

    /* middle: t=70 (tag 7) */
    CHECK(ev[7]->heap_index != SIM_EVENT_NOT_QUEUED);
    sim_eventq_cancel(q, ev[7]);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_size(q), 18);

    /* last slot: the 18 remaining events occupy slots 0..17; find the one in slot 17 */
    sim_event *last = NULL;
    for (int i = 0; i < 20; i++)
        if (i != 0 && i != 7 && ev[i]->heap_index == 17)
            last = ev[i];
    CHECK(last != NULL);
    int32_t last_tag = last ? last->a : -1;
    if (last)
        sim_eventq_cancel(q, last);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_size(q), 17);

    /* Reuse after cancel: the new event is zeroed (tag 0), even if it recycles a cancelled one. */
    sim_event *re = sim_eventq_alloc(q);
    CHECK_INT_EQ(re->a, 0);
    CHECK_INT_EQ(re->heap_index, SIM_EVENT_NOT_QUEUED);
#if !SIM_POOL_DEBUG
    /* the pool's free list is LIFO: the last cancelled event comes back first */
    CHECK(re == last);
#endif
    re->a = 70;
    sim_eventq_push(q, re, 75);
    CHECK_INT_EQ(sim_eventq__check(q), 0);

    /* Remaining: tags 1..19 except 7 and last_tag, each at 10*tag, plus tag 70 at t=75,
     * which sorts between t=60 (tag 6) and t=80 (tag 8); all times are distinct. */
    for (int i = 1; i < 20; i++) {
        if (i == 8)
            expect_pop(q, 75, 70, "reused event");
        if (i != 7 && i != last_tag)
            expect_pop(q, 10 * i, i, "after cancels");
    }
    CHECK(sim_eventq_pop(q) == NULL);
    sim_eventq_destroy(q);
}

/* Cancelling an event can require the last event to move UP into the hole: the hole lies
 * under a late parent while the last event descends from an early one. */
static void test_cancel_sift_up(void)
{
    sim_eventq *q = sim_eventq_create();
    /* 4-ary layout: slot 1's children are slots 5..8, slot 2's first child is slot 9.
     * Each time is later than its parent's, so no push sifts and event i stays in slot i. */
    static const sim_time times[] = {0, 400, 100, 200, 300, 401, 402, 403, 404, 150};
    sim_event *ev[10];
    for (int i = 0; i < 10; i++)
        ev[i] = push_at(q, times[i], i);
    int in_place = 1;
    for (int i = 0; i < 10; i++)
        in_place &= ev[i]->heap_index == (uint32_t)i;
    CHECK(in_place);

    /* Cancel slot 5 (t=401): the last event (t=150, slot 9) fills the hole, and being earlier
     * than the hole's parent (slot 1, t=400) it must swap up into slot 1. */
    sim_eventq_cancel(q, ev[5]);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    /* t=150 now in slot 1, t=400 moved down into slot 5 */
    CHECK_INT_EQ(ev[9]->heap_index, 1);
    CHECK_INT_EQ(ev[1]->heap_index, 5);

    /* sorted remaining times: 0 100 150 200 300 400 402 403 404 (tags 0 2 9 3 4 1 6 7 8) */
    static const int order[] = {0, 2, 9, 3, 4, 1, 6, 7, 8};
    for (size_t i = 0; i < SIM_ARRAY_LEN(order); i++)
        expect_pop(q, times[order[i]], order[i], "after sift-up cancel");
    CHECK(sim_eventq_pop(q) == NULL);
    sim_eventq_destroy(q);
}

typedef struct key {
    sim_time time;
    uint64_t seq;
} key;

static int key_cmp(const void *pa, const void *pb)
{
    const key *a = pa, *b = pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Random pushes and cancels of random queued events, then pop everything: the popped keys
 * must equal the sorted keys of the events that were not cancelled. */
static void test_random_cancel(void)
{
    enum { N = 5000 };
    sim_eventq *q = sim_eventq_create();
    static sim_event *live[N]; /* queued events, in no particular order */
    static key expect[N];
    size_t n_live = 0;
    uint64_t rng = 0x9E3779B97F4A7C15u;
    int checks_ok = 1;
    for (int i = 0; i < N; i++) {
        /* times in [0, 500): many ties */
        live[n_live++] = push_at(q, (sim_time)(xorshift64(&rng) % 500), i);
        if (xorshift64(&rng) % 3 == 0) {
            size_t k = xorshift64(&rng) % n_live;
            sim_eventq_cancel(q, live[k]);
            live[k] = live[--n_live];
        }
        if (i % 97 == 0)
            checks_ok &= sim_eventq__check(q) == 0;
    }
    CHECK(checks_ok);
    CHECK_INT_EQ(sim_eventq_size(q), n_live);
    for (size_t k = 0; k < n_live; k++)
        expect[k] = (key){live[k]->time, live[k]->seq};
    qsort(expect, n_live, sizeof(key), key_cmp);
    int same = 1;
    for (size_t k = 0; k < n_live; k++) {
        sim_event *ev = sim_eventq_pop(q);
        same &= ev != NULL && ev->time == expect[k].time && ev->seq == expect[k].seq;
        if (ev)
            sim_eventq_free(q, ev);
    }
    CHECK(same);
    CHECK(sim_eventq_pop(q) == NULL);
    /* one push per iteration */
    CHECK_INT_EQ(sim_eventq_pushed(q), N);
    sim_eventq_destroy(q);
}

/* Destroy frees queued events and events the caller still holds (checked by ASan/valgrind). */
static void test_destroy_with_events(void)
{
    sim_eventq *q = sim_eventq_create();
    for (int i = 0; i < 1000; i++)
        push_at(q, 1000 - i, i);
    sim_event *held = sim_eventq_pop(q);
    /* t = 1000 - 999 = 1 is the earliest */
    CHECK_INT_EQ(held->time, 1);
    (void)sim_eventq_alloc(q); /* never pushed nor freed */
    sim_eventq_destroy(q);
}

int main(void)
{
    test_empty();
    test_equal_times();
    test_interleaved();
    test_repush();
    test_cancel();
    test_cancel_sift_up();
    test_random_cancel();
    test_destroy_with_events();
    return test_finish();
}
