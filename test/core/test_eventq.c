/* Unit test of the event queue (sim/core/eventq.c): (time, seq) order with ties broken by
 * scheduling order, interleaved times, cancellation in the current-time bucket (a tombstone)
 * and in the other buckets (the last entry fills the hole), cancellation of events a refill
 * has moved, reuse after cancel, re-pushing a popped event, and randomized push/cancel/pop
 * runs checked against a sorted reference. */
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

/* The queue never reads the payload: these tests carry a tag in its field `a` to tell events
 * apart. */
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
    CHECK_INT_EQ(ev->slot, SIM_EVENT_NOT_QUEUED);
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

    /* A fresh event is zeroed except slot, which says "not queued". */
    sim_event *ev = sim_eventq_alloc(q);
    CHECK_INT_EQ(ev->time, 0);
    CHECK_INT_EQ(ev->seq, 0);
    CHECK_INT_EQ(ev->type, 0);
    CHECK_INT_EQ(ev->a, 0);
    CHECK_INT_EQ(ev->b, 0);
    CHECK_INT_EQ(ev->c, 0);
    CHECK_INT_EQ(ev->slot, SIM_EVENT_NOT_QUEUED);
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

/* Finds the queued event in bucket `bucket`, slot `slot` among ev[0..n), or NULL. Cancelled
 * events are back in the pool (freed under pool_debug): the caller sets their entries to NULL
 * so they are never read. */
static sim_event *at_slot(sim_event **ev, int n, unsigned bucket, uint32_t slot)
{
    for (int i = 0; i < n; i++)
        if (ev[i] && ev[i]->slot == slot && ev[i]->bucket == bucket)
            return ev[i];
    return NULL;
}

/* Cancel the head, a middle event, a bucket's last entry, then reuse the freed event. */
static void test_cancel(void)
{
    sim_eventq *q = sim_eventq_create();
    sim_event *ev[20];
    /* Nothing popped yet, so "now" is 0: t = 0 goes to bucket 0, t = 10i (i >= 1) to bucket
     * 64 - clz(10i): 10 -> 4, 20, 30 -> 5, 40..60 -> 6, 70..120 -> 7, 130..190 -> 8. */
    for (int i = 0; i < 20; i++)
        ev[i] = push_at(q, 10 * i, i);
    CHECK_INT_EQ(ev[0]->bucket, 0);
    CHECK_INT_EQ(ev[1]->bucket, 4);
    CHECK_INT_EQ(ev[3]->bucket, 5);
    CHECK_INT_EQ(ev[7]->bucket, 7);
    CHECK_INT_EQ(ev[19]->bucket, 8);
    /* bucket 7 holds tags 7..12 in push order */
    CHECK_INT_EQ(ev[7]->slot, 0);
    CHECK_INT_EQ(ev[12]->slot, 5);

    /* head (bucket 0, a tombstone): t=10 becomes the earliest */
    sim_eventq_cancel(q, ev[0]);
    ev[0] = NULL;
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_peek_time(q), 10);
    CHECK_INT_EQ(sim_eventq_size(q), 19);

    /* middle of bucket 7: t=70 (tag 7, slot 0); the bucket's last entry (tag 12) fills it */
    sim_eventq_cancel(q, ev[7]);
    ev[7] = NULL;
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(ev[12]->slot, 0);
    CHECK_INT_EQ(sim_eventq_size(q), 18);

    /* a bucket's last entry: bucket 7 now holds tags 12, 8, 9, 10, 11 in slots 0..4 */
    sim_event *last = at_slot(ev, 20, 7, 4);
    CHECK(last == ev[11]);
    int32_t last_tag = last ? last->a : -1;
    if (last)
        sim_eventq_cancel(q, last);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_size(q), 17);

    /* Reuse after cancel: the new event is zeroed (tag 0), even if it recycles a cancelled one. */
    sim_event *re = sim_eventq_alloc(q);
    CHECK_INT_EQ(re->a, 0);
    CHECK_INT_EQ(re->slot, SIM_EVENT_NOT_QUEUED);
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

/* Events a refill moved down keep exact positions: cancel them in their new buckets, in
 * the new bucket 0 (tombstones between live events), then pop the rest in order. */
static void test_cancel_after_refill(void)
{
    sim_eventq *q = sim_eventq_create();
    /* All in bucket 7 (64..127 differ from 0 first at bit 6): t = 100 three times (tags 0,
     * 1, 2 in push order), 101, 103, 120. */
    static const sim_time times[] = {100, 100, 100, 101, 103, 120, 0};
    sim_event *ev[7];
    for (int i = 0; i < 7; i++)
        ev[i] = push_at(q, times[i], i);
    CHECK_INT_EQ(ev[5]->bucket, 7);
    /* Pops tag 6 at t=0. Peeking finds t=100 without moving anything ("now" stays 0); the
     * next pop refills from bucket 7: now = 100, tags 0..2 in bucket 0 (slots 0..2 in seq
     * order), 101 -> bucket 1 (101 ^ 100 = 1), 103 -> bucket 2 (103 ^ 100 = 3), 120 ->
     * bucket 5 (120 ^ 100 = 28, highest bit 4); it returns tag 0. */
    expect_pop(q, 0, 6, "t=0");
    CHECK_INT_EQ(sim_eventq_peek_time(q), 100);
    CHECK_INT_EQ(ev[1]->bucket, 7);
    expect_pop(q, 100, 0, "first t=100");
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(ev[1]->bucket, 0);
    CHECK_INT_EQ(ev[1]->slot, 1);
    CHECK_INT_EQ(ev[2]->slot, 2);
    CHECK_INT_EQ(ev[3]->bucket, 1);
    CHECK_INT_EQ(ev[4]->bucket, 2);
    CHECK_INT_EQ(ev[5]->bucket, 5);
    /* a tombstone at the head of bucket 0, and a moved event */
    sim_eventq_cancel(q, ev[1]);
    sim_eventq_cancel(q, ev[4]);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
    CHECK_INT_EQ(sim_eventq_peek_time(q), 100);
    /* a push at the current time goes after the waiting one */
    push_at(q, 100, 7);
    expect_pop(q, 100, 2, "t=100 after the tombstone");
    expect_pop(q, 100, 7, "t=100 pushed last");
    expect_pop(q, 101, 3, "t=101");
    expect_pop(q, 120, 5, "t=120");
    CHECK(sim_eventq_pop(q) == NULL);
    CHECK_INT_EQ(sim_eventq__check(q), 0);
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
    test_cancel_after_refill();
    test_random_cancel();
    test_destroy_with_events();
    return test_finish();
}
