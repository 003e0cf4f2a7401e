/* The event queue: a monotone radix heap of pooled events ordered by (time, seq).
 *
 * `seq` is assigned at scheduling from a per-queue counter, so two events at the same time
 * run in the order they were scheduled and equal keys never occur: the order is total and
 * independent of pointer values. Discrete-event simulation never schedules into the past,
 * and the queue relies on it: an event may not be pushed earlier than the last one popped
 * (asserted; peeking does not count). Each event records where it is queued (bucket, slot), which
 * makes cancellation O(1). */
#ifndef SIM_CORE_EVENTQ_H
#define SIM_CORE_EVENTQ_H

#include <stdint.h>
#include <stddef.h>

#include "core/time.h"

typedef struct sim_event {
    sim_time time;
    uint64_t seq;
    uint32_t slot;   /* position in its bucket; SIM_EVENT_NOT_QUEUED when not queued */
    uint16_t type;   /* dispatch tag, owned by the engine's user */
    uint8_t bucket;  /* the queue's bucket holding it (meaningful only while queued) */
    uint8_t spare;
    /* Payload, opaque to the queue (zeroed by sim_eventq_alloc). Each user names its meaning
     * through accessors beside its dispatch, never the letters: replay/replay.c op_ev_* (a
     * rank, its place in a collective, an op), hw/net.c net_ev_* (an event kind, a flow or
     * round index). */
    int32_t a, b;
    int64_t c;
} sim_event;

#define SIM_EVENT_NOT_QUEUED UINT32_MAX

typedef struct sim_eventq sim_eventq;

/* Creates an empty queue with its own event pool. Cannot fail. */
sim_eventq *sim_eventq_create(void);

/* Destroys the queue and every event it allocated. NULL is a no-op. */
void sim_eventq_destroy(sim_eventq *q);

/* Returns a zeroed event from the queue's pool (not yet scheduled). */
sim_event *sim_eventq_alloc(sim_eventq *q);

/* Returns an event that is not queued to the pool. */
void sim_eventq_free(sim_eventq *q, sim_event *ev);

/* Schedules `ev` at `time` (>= the time of the last popped event), assigning the next
 * sequence number. `ev` must not be queued. */
void sim_eventq_push(sim_eventq *q, sim_event *ev, sim_time time);

/* Removes and returns the earliest event, or NULL when empty. The caller then owns it and
 * returns it with sim_eventq_free (or pushes it again). */
sim_event *sim_eventq_pop(sim_eventq *q);

/* Removes a queued event and returns it to the pool. */
void sim_eventq_cancel(sim_eventq *q, sim_event *ev);

/* Time of the earliest event, SIM_TIME_NEVER when empty. It leaves "now" (the time of the
 * last pop) where it is: events may still be pushed between now and the time it returns. */
sim_time sim_eventq_peek_time(const sim_eventq *q);

size_t sim_eventq_size(const sim_eventq *q);

/* Fills `out` (room for sim_eventq_size(q) pointers) with the queued events in (time, seq)
 * order, the order they would pop in, and returns their number. The queue is unchanged. */
size_t sim_eventq_list(const sim_eventq *q, sim_event **out);

/* Moves every queued event, and the time of the last pop, `dt` >= 0 later: the queue then
 * stands where it would if everything had happened dt later. Sequence numbers and so the
 * order of events are kept; events stay the same objects (pointers to them stay valid). */
void sim_eventq_shift(sim_eventq *q, sim_time dt);

/* Events pushed since creation (for the events/s statistics). */
uint64_t sim_eventq_pushed(const sim_eventq *q);

/* Checks every invariant of the structure (bucket membership, recorded positions, the
 * order of the current-time bucket, the live count). Returns 0 when consistent, -1
 * otherwise (printing the first violation to stderr). */
int sim_eventq__check(const sim_eventq *q);

#endif
