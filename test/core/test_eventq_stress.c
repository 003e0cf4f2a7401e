/* Stress test of the event queue (sim/core/eventq.c) with a million events:
 *  1. push 1M events at random times, pop them all: the popped (time, seq) keys must be
 *     strictly increasing and equal, one by one, to the sorted keys that were pushed;
 *  2. the "hold" model of discrete-event simulation: 10,000 pending events, 1M times pop the
 *     earliest and re-push it a random delay later (0 included, so ties with later seq occur):
 *     popped times never decrease and keys strictly increase.
 * sim_eventq__check runs every 65,536 operations. The generator is a local xorshift64 with a
 * fixed seed, so the run is deterministic. */
#include "core/sim.h"

#include "core/eventq.h"

#include <stdlib.h>

#include "test.h"

#define N_EVENTS 1000000
#define N_HOLD 10000
#define CHECK_EVERY 65536

/* Marsaglia xorshift64: deterministic, no library state. */
static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
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

static int key_less(key a, key b)
{
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
}

static void test_push_all_pop_all(void)
{
    sim_eventq *q = sim_eventq_create();
    key *pushed = sim_calloc(N_EVENTS, sizeof *pushed);
    uint64_t rng = 88172645463325252u; /* Marsaglia's example seed */
    int checks_ok = 1;

    for (size_t i = 0; i < N_EVENTS; i++) {
        sim_event *ev = sim_eventq_alloc(q);
        /* times in [0, 1e6 ps): about one tie per distinct time, so seq order matters */
        sim_time t = (sim_time)(xorshift64(&rng) % 1000000);
        sim_eventq_push(q, ev, t);
        pushed[i] = (key){ev->time, ev->seq};
        if (i % CHECK_EVERY == 0)
            checks_ok &= sim_eventq__check(q) == 0;
    }
    checks_ok &= sim_eventq__check(q) == 0;
    CHECK_INT_EQ(sim_eventq_size(q), N_EVENTS);
    CHECK_INT_EQ(sim_eventq_pushed(q), N_EVENTS);

    qsort(pushed, N_EVENTS, sizeof *pushed, key_cmp);
    int increasing = 1, matches = 1;
    key prev = {-1, 0};
    for (size_t i = 0; i < N_EVENTS; i++) {
        sim_event *ev = sim_eventq_pop(q);
        if (!ev) {
            matches = 0;
            break;
        }
        key k = {ev->time, ev->seq};
        increasing &= i == 0 || key_less(prev, k);
        matches &= k.time == pushed[i].time && k.seq == pushed[i].seq;
        prev = k;
        sim_eventq_free(q, ev);
        if (i % CHECK_EVERY == 0)
            checks_ok &= sim_eventq__check(q) == 0;
    }
    CHECK(checks_ok);
    CHECK(increasing);
    CHECK(matches);
    CHECK(sim_eventq_pop(q) == NULL);
    sim_free(pushed);
    sim_eventq_destroy(q);
}

static void test_hold_model(void)
{
    sim_eventq *q = sim_eventq_create();
    uint64_t rng = 0x2545F4914F6CDD1Du;
    for (int i = 0; i < N_HOLD; i++) {
        sim_event *ev = sim_eventq_alloc(q);
        ev->a = i; /* payload: a tag the queue never reads */
        sim_eventq_push(q, ev, (sim_time)(xorshift64(&rng) % 1000));
    }
    int checks_ok = 1, time_ok = 1, key_ok = 1;
    key prev = {-1, 0};
    for (size_t i = 0; i < N_EVENTS; i++) {
        sim_event *ev = sim_eventq_pop(q);
        key k = {ev->time, ev->seq};
        time_ok &= k.time >= prev.time;
        key_ok &= key_less(prev, k);
        prev = k;
        /* delay in [0, 1000) ps: 1 in 1000 re-pushes lands at the current time */
        sim_eventq_push(q, ev, ev->time + (sim_time)(xorshift64(&rng) % 1000));
        if (i % CHECK_EVERY == 0)
            checks_ok &= sim_eventq__check(q) == 0;
    }
    checks_ok &= sim_eventq__check(q) == 0;
    CHECK(checks_ok);
    CHECK(time_ok);
    CHECK(key_ok);
    /* the population is constant: every pop is followed by a push */
    CHECK_INT_EQ(sim_eventq_size(q), N_HOLD);
    /* 10,000 initial pushes + one re-push per pop */
    CHECK_INT_EQ(sim_eventq_pushed(q), N_HOLD + N_EVENTS);
    sim_eventq_destroy(q);
}

/* The hold model with cancellations, as the network model uses them (a flow's completion is
 * cancelled and rescheduled when its rate changes): 10,000 pending events; each iteration
 * pops the earliest and re-pushes it 0..9,999 ps later, and one iteration in three also
 * cancels a random queued event and schedules a replacement. Popped keys must strictly
 * increase (a wrongly skipped earlier event would pop later with a smaller key), every
 * cancel must find its event, and the live count must stay 10,000. */
static void test_hold_with_cancel(void)
{
    sim_eventq *q = sim_eventq_create();
    sim_event **live = sim_calloc(N_HOLD, sizeof *live);
    uint64_t rng = 0x853C49E6748FEA9Bu;
    for (int i = 0; i < N_HOLD; i++) {
        live[i] = sim_eventq_alloc(q);
        live[i]->a = i; /* index into live[] */
        sim_eventq_push(q, live[i], (sim_time)(xorshift64(&rng) % 10000));
    }
    int checks_ok = 1, key_ok = 1;
    key prev = {-1, 0};
    for (size_t i = 0; i < N_EVENTS; i++) {
        sim_event *ev = sim_eventq_pop(q);
        key k = {ev->time, ev->seq};
        key_ok &= key_less(prev, k);
        prev = k;
        sim_time now = ev->time;
        sim_eventq_push(q, ev, now + (sim_time)(xorshift64(&rng) % 10000));
        if (xorshift64(&rng) % 3 == 0) {
            int32_t slot = (int32_t)(xorshift64(&rng) % N_HOLD);
            sim_eventq_cancel(q, live[slot]);
            live[slot] = sim_eventq_alloc(q);
            live[slot]->a = slot;
            sim_eventq_push(q, live[slot], now + (sim_time)(xorshift64(&rng) % 10000));
        }
        if (i % CHECK_EVERY == 0)
            checks_ok &= sim_eventq__check(q) == 0;
    }
    checks_ok &= sim_eventq__check(q) == 0;
    CHECK(checks_ok);
    CHECK(key_ok);
    CHECK_INT_EQ(sim_eventq_size(q), N_HOLD);
    sim_free(live);
    sim_eventq_destroy(q);
}

int main(void)
{
    test_push_all_pop_all();
    test_hold_model();
    test_hold_with_cancel();
    return test_finish();
}
