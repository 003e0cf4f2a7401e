/* The event queue (see eventq.h): a 4-ary implicit min-heap of event pointers.
 *
 * Node i has children 4i+1 .. 4i+4 and parent (i-1)/4. A 4-ary heap is half as deep as a
 * binary one: a push climbs at most log4(n) levels and a pop descends log4(n) levels,
 * comparing four adjacent child slots per level, so each operation moves (and rewrites the
 * heap_index of) half as many events. Every move of an event rewrites its heap_index, which
 * is what lets cancel find an event's slot in O(1) and remove it in O(log n).
 *
 * Sifting uses a hole: the moving event is written once at its final slot instead of being
 * swapped at every level. Keys (time, seq) are unique because seq comes from a per-queue
 * counter, so the order is total and never depends on addresses or on heap layout.
 *
 * Memory: events come from the queue's own pool and the heap array grows by doubling, so once
 * the queue has reached its peak size, push/pop/cancel/alloc/free allocate nothing. */
#include "core/sim.h"

#include "core/eventq.h"
#include "core/pool.h"

#include <inttypes.h>
#include <stdio.h>

#define EVENTQ_INITIAL_CAP 256

struct sim_eventq {
    sim_event **heap; /* heap[0] is the earliest event */
    size_t size, cap;
    uint64_t next_seq; /* also the number of pushes so far */
    sim_pool *pool;
};

/* Strict (time, seq) order; never equal for two distinct queued events. */
static inline bool ev_before(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* Places `ev` into the hole at `i`, moving ancestors down while ev precedes them. */
static void sift_up(sim_event **heap, size_t i, sim_event *ev)
{
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        sim_event *p = heap[parent];
        if (!ev_before(ev, p))
            break;
        heap[i] = p;
        p->heap_index = (uint32_t)i;
        i = parent;
    }
    heap[i] = ev;
    ev->heap_index = (uint32_t)i;
}

/* Places `ev` into the hole at `i` of a heap of `n` events, moving the earliest child up
 * while it precedes ev. */
static void sift_down(sim_event **heap, size_t n, size_t i, sim_event *ev)
{
    for (;;) {
        size_t first = 4 * i + 1;
        if (first >= n)
            break;
        size_t end = SIM_MIN(first + 4, n);
        size_t best = first;
        for (size_t c = first + 1; c < end; c++)
            if (ev_before(heap[c], heap[best]))
                best = c;
        if (!ev_before(heap[best], ev))
            break;
        heap[i] = heap[best];
        heap[i]->heap_index = (uint32_t)i;
        i = best;
    }
    heap[i] = ev;
    ev->heap_index = (uint32_t)i;
}

sim_eventq *sim_eventq_create(void)
{
    sim_eventq *q = sim_calloc(1, sizeof *q);
    q->pool = sim_pool_create(sizeof(sim_event));
    SIM_GROW(q->heap, q->cap, EVENTQ_INITIAL_CAP);
    return q;
}

void sim_eventq_destroy(sim_eventq *q)
{
    if (!q)
        return;
    /* The pool frees every event it handed out, queued or not (in both pool modes). */
    sim_pool_destroy(q->pool);
    sim_free(q->heap);
    sim_free(q);
}

sim_event *sim_eventq_alloc(sim_eventq *q)
{
    sim_event *ev = sim_pool_get(q->pool);
    ev->heap_index = SIM_EVENT_NOT_QUEUED;
    return ev;
}

void sim_eventq_free(sim_eventq *q, sim_event *ev)
{
    SIM_ASSERT(ev != NULL, "free of NULL event");
    SIM_ASSERT(ev->heap_index == SIM_EVENT_NOT_QUEUED,
               "freeing a queued event (heap_index=%" PRIu32 ", time=%" PRId64 ")",
               ev->heap_index, ev->time);
    sim_pool_put(q->pool, ev);
}

void sim_eventq_push(sim_eventq *q, sim_event *ev, sim_time time)
{
    SIM_ASSERT(ev->heap_index == SIM_EVENT_NOT_QUEUED,
               "pushing an event that is already queued (heap_index=%" PRIu32 ")",
               ev->heap_index);
    /* SIM_TIME_NEVER means "no event" to peek_time, so it cannot be a real event time. */
    SIM_ASSERT(time >= 0 && time < SIM_TIME_NEVER, "time=%" PRId64, time);
    /* heap_index is 32-bit and UINT32_MAX is reserved for "not queued". */
    SIM_ASSERT(q->size < SIM_EVENT_NOT_QUEUED, "event queue full (%zu events)", q->size);
    if (q->size == q->cap)
        SIM_GROW(q->heap, q->cap, q->size + 1);
    ev->time = time;
    ev->seq = q->next_seq++;
    sift_up(q->heap, q->size, ev);
    q->size++;
}

sim_event *sim_eventq_pop(sim_eventq *q)
{
    if (q->size == 0)
        return NULL;
    sim_event *top = q->heap[0];
    size_t n = --q->size;
    if (n > 0)
        sift_down(q->heap, n, 0, q->heap[n]);
    top->heap_index = SIM_EVENT_NOT_QUEUED;
    return top;
}

void sim_eventq_cancel(sim_eventq *q, sim_event *ev)
{
    size_t i = ev->heap_index;
    SIM_ASSERT(i < q->size && q->heap[i] == ev,
               "cancelling an event that is not in this queue (heap_index=%zu, size=%zu)", i,
               q->size);
    size_t n = --q->size;
    if (i != n) {
        /* Fill the hole with the last event; it may belong above or below the hole. */
        sim_event *last = q->heap[n];
        if (i > 0 && ev_before(last, q->heap[(i - 1) / 4]))
            sift_up(q->heap, i, last);
        else
            sift_down(q->heap, n, i, last);
    }
    ev->heap_index = SIM_EVENT_NOT_QUEUED;
    sim_pool_put(q->pool, ev);
}

sim_time sim_eventq_peek_time(const sim_eventq *q)
{
    return q->size ? q->heap[0]->time : SIM_TIME_NEVER;
}

size_t sim_eventq_size(const sim_eventq *q)
{
    return q->size;
}

uint64_t sim_eventq_pushed(const sim_eventq *q)
{
    return q->next_seq;
}

int sim_eventq__check(const sim_eventq *q)
{
    if (q->size > q->cap) {
        fprintf(stderr, "eventq: size %zu exceeds capacity %zu\n", q->size, q->cap);
        return -1;
    }
    if (sim_pool_in_use(q->pool) < q->size) {
        fprintf(stderr, "eventq: %zu events queued but only %zu allocated from the pool\n",
                q->size, sim_pool_in_use(q->pool));
        return -1;
    }
    for (size_t i = 0; i < q->size; i++) {
        const sim_event *ev = q->heap[i];
        if (!ev) {
            fprintf(stderr, "eventq: heap[%zu] is NULL\n", i);
            return -1;
        }
        if (ev->heap_index != i) {
            fprintf(stderr, "eventq: heap[%zu] records heap_index %" PRIu32 "\n", i,
                    ev->heap_index);
            return -1;
        }
        if (ev->seq >= q->next_seq) {
            fprintf(stderr, "eventq: heap[%zu] has seq %" PRIu64 " but only %" PRIu64
                    " were assigned\n", i, ev->seq, q->next_seq);
            return -1;
        }
        if (i > 0) {
            size_t pi = (i - 1) / 4;
            const sim_event *p = q->heap[pi];
            if (!ev_before(p, ev)) {
                fprintf(stderr, "eventq: heap[%zu] (time %" PRId64 ", seq %" PRIu64
                        ") precedes its parent heap[%zu] (time %" PRId64 ", seq %" PRIu64 ")\n",
                        i, ev->time, ev->seq, pi, p->time, p->seq);
                return -1;
            }
        }
    }
    return 0;
}
