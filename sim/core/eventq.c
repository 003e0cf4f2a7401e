/* The event queue (see eventq.h): a monotone radix heap (Ahuja, Mehlhorn, Orlin and Tarjan,
 * "Faster algorithms for the shortest path problem", JACM 1990) over 64-bit integer time.
 *
 * `last` is the time of the earliest event (the last one popped, or the minimum found by the
 * latest refill). An event at time t lives in bucket 64 - clz(t ^ last): bucket 0 holds the
 * events at exactly `last`, bucket i >= 1 those whose time first differs from `last` at bit
 * i - 1. Pushing appends to one bucket (O(1)). Popping takes the head of bucket 0; when it
 * has run dry, the smallest non-empty bucket i (a bit scan of `nonempty`) is emptied: its
 * minimum becomes the new `last` and each of its events drops into a bucket below i. An event
 * only ever moves down, so it is moved at most 64 times and in practice two or three: no
 * comparison-based heap is cheaper at the depths a cluster simulation reaches (10^5 pending
 * events), and the buckets are flat arrays scanned in order, which suits the cache.
 *
 * Ties. Bucket 0 is a FIFO in seq order: a refill sorts the events it drops there by seq,
 * and every later push at that same time has a larger seq (one counter per queue), so
 * appending keeps the order. Keys (time, seq) are unique, the order is total and never
 * depends on addresses or on bucket layout.
 *
 * Cancellation: each event records its bucket and slot. In buckets >= 1 (unordered) the last
 * entry fills the hole; in bucket 0 (ordered) the slot becomes a tombstone that pops skip.
 *
 * Memory: events come from the queue's own pool and the bucket arrays grow by doubling, so
 * once the queue has reached its peak size, push/pop/cancel/alloc/free allocate nothing. */
#include "core/sim.h"

#include "core/eventq.h"
#include "core/pool.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define EVENTQ_BUCKETS 65
#define EVENTQ_INITIAL_CAP 64
#define EVENTQ_INSERTION_SORT_MAX 24

typedef struct qentry {
    sim_time time; /* a copy of ev->time, so scans stay inside the bucket array */
    sim_event *ev; /* NULL: a cancelled slot of bucket 0 */
} qentry;

typedef struct qbucket {
    qentry *e;
    size_t n, cap;
} qbucket;

struct sim_eventq {
    qbucket b[EVENTQ_BUCKETS];
    size_t head0;      /* bucket 0 is consumed from here */
    size_t size;       /* queued (live) events */
    uint64_t nonempty; /* bit i - 1 set when bucket i >= 1 holds entries */
    sim_time last;     /* the time bucket 0 stands for; no queued event is earlier */
    uint64_t next_seq; /* also the number of pushes so far */
    sim_pool *pool;
};

static inline unsigned bucket_of(sim_time last, sim_time t)
{
    uint64_t x = (uint64_t)t ^ (uint64_t)last;
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline void bucket_append(sim_eventq *q, unsigned j, qentry x)
{
    qbucket *b = &q->b[j];
    if (b->n == b->cap)
        SIM_GROW(b->e, b->cap, b->n + 1);
    b->e[b->n] = x;
    sim_event *ev = x.ev;
    ev->bucket = (uint8_t)j;
    ev->slot = (uint32_t)b->n;
    b->n++;
    if (j > 0)
        q->nonempty |= UINT64_C(1) << (j - 1);
}

static int entry_seq_cmp(const void *pa, const void *pb)
{
    uint64_t a = ((const qentry *)pa)->ev->seq, b = ((const qentry *)pb)->ev->seq;
    return (a > b) - (a < b);
}

/* Puts bucket 0 (all at one time) in seq order and records the new slots. The entries come
 * from one bucket, mostly in push order already; the events are read here because they
 * are about to be popped anyway. */
static void sort_bucket0(qbucket *b0)
{
    size_t n = b0->n;
    size_t inversions = 0;
    for (size_t i = 1; i < n; i++)
        inversions += b0->e[i - 1].ev->seq > b0->e[i].ev->seq;
    if (inversions == 0)
        return; /* slots already recorded by bucket_append */
    if (n <= EVENTQ_INSERTION_SORT_MAX) {
        for (size_t i = 1; i < n; i++) {
            qentry x = b0->e[i];
            size_t k = i;
            for (; k > 0 && b0->e[k - 1].ev->seq > x.ev->seq; k--)
                b0->e[k] = b0->e[k - 1];
            b0->e[k] = x;
        }
    } else {
        qsort(b0->e, n, sizeof *b0->e, entry_seq_cmp);
    }
    for (size_t i = 0; i < n; i++)
        b0->e[i].ev->slot = (uint32_t)i;
}

/* Bucket 0 holds no live event: empties the smallest non-empty bucket into the ones below
 * it, its minimum becoming `last`. Returns false when the queue is empty. */
static bool refill(sim_eventq *q)
{
    q->b[0].n = 0;
    q->head0 = 0;
    if (q->nonempty == 0)
        return false;
    unsigned i = (unsigned)__builtin_ctzll(q->nonempty) + 1;
    qbucket *bi = &q->b[i];
    SIM_ASSERT(bi->n > 0, "bucket %u marked non-empty", i);
    sim_time m = bi->e[0].time;
    for (size_t k = 1; k < bi->n; k++)
        if (bi->e[k].time < m)
            m = bi->e[k].time;
    q->last = m;
    /* Detach the bucket first: its events land only in buckets below i. */
    size_t n = bi->n;
    bi->n = 0;
    q->nonempty &= ~(UINT64_C(1) << (i - 1));
    for (size_t k = 0; k < n; k++) {
        unsigned j = bucket_of(m, bi->e[k].time);
        SIM_ASSERT(j < i, "event moved up from bucket %u to %u", i, j);
        bucket_append(q, j, bi->e[k]);
    }
    if (q->b[0].n > 1)
        sort_bucket0(&q->b[0]);
    return true;
}

/* Advances head0 past cancelled slots; refills when bucket 0 has nothing live. Returns
 * false when the queue is empty. */
static bool settle(sim_eventq *q)
{
    for (;;) {
        qbucket *b0 = &q->b[0];
        while (q->head0 < b0->n && b0->e[q->head0].ev == NULL)
            q->head0++;
        if (q->head0 < b0->n)
            return true;
        if (!refill(q))
            return false;
    }
}

sim_eventq *sim_eventq_create(void)
{
    sim_eventq *q = sim_calloc(1, sizeof *q);
    q->pool = sim_pool_create(sizeof(sim_event));
    SIM_GROW(q->b[0].e, q->b[0].cap, EVENTQ_INITIAL_CAP);
    return q;
}

void sim_eventq_destroy(sim_eventq *q)
{
    if (!q)
        return;
    /* The pool frees every event it handed out, queued or not (in both pool modes). */
    sim_pool_destroy(q->pool);
    for (unsigned j = 0; j < EVENTQ_BUCKETS; j++)
        sim_free(q->b[j].e);
    sim_free(q);
}

sim_event *sim_eventq_alloc(sim_eventq *q)
{
    sim_event *ev = sim_pool_get(q->pool);
    ev->slot = SIM_EVENT_NOT_QUEUED;
    return ev;
}

void sim_eventq_free(sim_eventq *q, sim_event *ev)
{
    SIM_ASSERT(ev != NULL, "free of NULL event");
    SIM_ASSERT(ev->slot == SIM_EVENT_NOT_QUEUED,
               "freeing a queued event (slot=%" PRIu32 ", time=%" PRId64 ")", ev->slot,
               ev->time);
    sim_pool_put(q->pool, ev);
}

void sim_eventq_push(sim_eventq *q, sim_event *ev, sim_time time)
{
    SIM_ASSERT(ev->slot == SIM_EVENT_NOT_QUEUED,
               "pushing an event that is already queued (slot=%" PRIu32 ")", ev->slot);
    /* SIM_TIME_NEVER means "no event" to peek_time, so it cannot be a real event time. */
    SIM_ASSERT(time >= 0 && time < SIM_TIME_NEVER, "time=%" PRId64, time);
    SIM_ASSERT(time >= q->last,
               "event scheduled in the past (time=%" PRId64 " < now=%" PRId64 ")", time,
               q->last);
    /* slot is 32-bit and UINT32_MAX is reserved for "not queued". */
    SIM_ASSERT(q->size < SIM_EVENT_NOT_QUEUED, "event queue full (%zu events)", q->size);
    ev->time = time;
    ev->seq = q->next_seq++;
    bucket_append(q, bucket_of(q->last, time), (qentry){time, ev});
    q->size++;
}

sim_event *sim_eventq_pop(sim_eventq *q)
{
    if (q->size == 0 || !settle(q))
        return NULL;
    qbucket *b0 = &q->b[0];
    sim_event *ev = b0->e[q->head0++].ev;
    if (q->head0 == b0->n)
        b0->n = q->head0 = 0; /* drained: later pushes at this time start at slot 0 */
    q->size--;
    ev->slot = SIM_EVENT_NOT_QUEUED;
    return ev;
}

void sim_eventq_cancel(sim_eventq *q, sim_event *ev)
{
    unsigned j = ev->bucket;
    size_t i = ev->slot;
    SIM_ASSERT(j < EVENTQ_BUCKETS && i < q->b[j].n && q->b[j].e[i].ev == ev,
               "cancelling an event that is not in this queue (bucket=%u, slot=%zu)", j, i);
    qbucket *b = &q->b[j];
    if (j == 0) {
        b->e[i].ev = NULL; /* keep bucket 0's order; pops skip the tombstone */
    } else {
        size_t n = --b->n;
        if (i != n) {
            b->e[i] = b->e[n];
            b->e[i].ev->slot = (uint32_t)i;
        }
        if (n == 0)
            q->nonempty &= ~(UINT64_C(1) << (j - 1));
    }
    q->size--;
    ev->slot = SIM_EVENT_NOT_QUEUED;
    sim_pool_put(q->pool, ev);
}

sim_time sim_eventq_peek_time(const sim_eventq *q)
{
    if (q->size == 0)
        return SIM_TIME_NEVER;
    /* No refill here: it would move `last` up to the earliest queued time, and the caller may
     * still schedule events between the last pop and that time. */
    const qbucket *b0 = &q->b[0];
    for (size_t k = q->head0; k < b0->n; k++)
        if (b0->e[k].ev)
            return q->last;
    const qbucket *bi = &q->b[__builtin_ctzll(q->nonempty) + 1];
    sim_time m = bi->e[0].time;
    for (size_t k = 1; k < bi->n; k++)
        if (bi->e[k].time < m)
            m = bi->e[k].time;
    return m;
}

size_t sim_eventq_size(const sim_eventq *q)
{
    return q->size;
}

static int event_cmp(const void *pa, const void *pb)
{
    const sim_event *a = *(sim_event *const *)pa, *b = *(sim_event *const *)pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

size_t sim_eventq_list(const sim_eventq *q, sim_event **out)
{
    size_t n = 0;
    for (unsigned j = 0; j < EVENTQ_BUCKETS; j++) {
        const qbucket *b = &q->b[j];
        for (size_t k = j == 0 ? q->head0 : 0; k < b->n; k++)
            if (b->e[k].ev)
                out[n++] = b->e[k].ev;
    }
    SIM_ASSERT(n == q->size, "listed %zu of %zu events", n, q->size);
    qsort(out, n, sizeof *out, event_cmp);
    return n;
}

void sim_eventq_shift(sim_eventq *q, sim_time dt)
{
    SIM_ASSERT(dt >= 0 && q->last <= SIM_TIME_NEVER - 1 - dt, "shift by %" PRId64, dt);
    size_t n = q->size;
    sim_event **evs = sim_calloc(n ? n : 1, sizeof *evs);
    sim_eventq_list(q, evs);
    for (unsigned j = 0; j < EVENTQ_BUCKETS; j++)
        q->b[j].n = 0;
    q->head0 = 0;
    q->nonempty = 0;
    q->last += dt;
    /* in (time, seq) order: bucket 0 (the events at `last`) comes out in seq order */
    for (size_t k = 0; k < n; k++) {
        sim_event *ev = evs[k];
        SIM_ASSERT(ev->time <= SIM_TIME_NEVER - 1 - dt, "event at %" PRId64, ev->time);
        ev->time += dt;
        bucket_append(q, bucket_of(q->last, ev->time), (qentry){ev->time, ev});
    }
    sim_free(evs);
}

uint64_t sim_eventq_pushed(const sim_eventq *q)
{
    return q->next_seq;
}

int sim_eventq__check(const sim_eventq *q)
{
    size_t live = 0;
    for (unsigned j = 0; j < EVENTQ_BUCKETS; j++) {
        const qbucket *b = &q->b[j];
        if (b->n > b->cap) {
            fprintf(stderr, "eventq: bucket %u holds %zu entries, capacity %zu\n", j, b->n,
                    b->cap);
            return -1;
        }
        bool marked = j > 0 && (q->nonempty >> (j - 1) & 1);
        if (j > 0 && marked != (b->n > 0)) {
            fprintf(stderr, "eventq: bucket %u has %zu entries but is %smarked non-empty\n", j,
                    b->n, marked ? "" : "not ");
            return -1;
        }
        uint64_t prev_seq = 0;
        bool have_prev = false;
        for (size_t k = j == 0 ? q->head0 : 0; k < b->n; k++) {
            const sim_event *ev = b->e[k].ev;
            if (!ev) {
                if (j != 0) {
                    fprintf(stderr, "eventq: bucket %u slot %zu is empty\n", j, k);
                    return -1;
                }
                continue;
            }
            live++;
            if (ev->bucket != j || ev->slot != k || ev->time != b->e[k].time) {
                fprintf(stderr, "eventq: bucket %u slot %zu records bucket %u slot %" PRIu32
                        " time %" PRId64 " (entry time %" PRId64 ")\n", j, k, ev->bucket,
                        ev->slot, ev->time, b->e[k].time);
                return -1;
            }
            if (ev->time < q->last || bucket_of(q->last, ev->time) != j) {
                fprintf(stderr, "eventq: time %" PRId64 " does not belong in bucket %u (now %"
                        PRId64 ")\n", ev->time, j, q->last);
                return -1;
            }
            if (ev->seq >= q->next_seq) {
                fprintf(stderr, "eventq: seq %" PRIu64 " but only %" PRIu64 " assigned\n",
                        ev->seq, q->next_seq);
                return -1;
            }
            if (j == 0 && have_prev && ev->seq <= prev_seq) {
                fprintf(stderr, "eventq: bucket 0 out of seq order at slot %zu\n", k);
                return -1;
            }
            prev_seq = ev->seq;
            have_prev = true;
        }
    }
    if (live != q->size) {
        fprintf(stderr, "eventq: %zu live entries, size says %zu\n", live, q->size);
        return -1;
    }
    if (sim_pool_in_use(q->pool) < q->size) {
        fprintf(stderr, "eventq: %zu events queued but only %zu allocated from the pool\n",
                q->size, sim_pool_in_use(q->pool));
        return -1;
    }
    return 0;
}
