/* Replay: executes a plan's trace event by event on the hardware model and fills the
 * results (definitions: docs/json.md).
 *
 * Each rank has one compute stream and one communication stream per group class. An op
 * starts when it heads its stream and its dependencies have finished; compute ops take
 * their roofline time (or their measured duration); a collective starts when every member
 * has reached it and runs its schedule's rounds as flows on the network. Every idle
 * interval of a compute stream inside the reported step is a bubble whose cause is the
 * dependency of the next compute op that finished last (dp/tp/... for a collective,
 * "other" otherwise, e.g. waiting for slower ranks at the end of a step). */
#ifndef SIM_REPLAY_REPLAY_H
#define SIM_REPLAY_REPLAY_H

#include <signal.h>
#include <stdbool.h>

#include "plan/plan.h"
#include "replay/results.h"

/* Where a long replay stands, for a progress line. */
typedef struct replay_progress {
    int steps_done;        /* steps every rank has finished */
    int steps;             /* steps to simulate */
    double simulated_s;    /* simulated time reached */
    unsigned long long events;
    double wall_s;         /* since replay_run began */
} replay_progress;

#define REPLAY_TIMELINE_BATCH 4096

typedef struct replay_options {
    bool timeline; /* record one row per executed op, every step */
    /* With `timeline`: when set, rows are handed to it in batches of at most
     * REPLAY_TIMELINE_BATCH, in the order they are recorded, instead of being kept in the
     * results (whose timeline then holds none; summary and other tables are unchanged).
     * A non-zero return stops further calls (the sink keeps its error). */
    int (*timeline_sink)(void *ud, const replay_timeline_row *rows, size_t n);
    void *timeline_ud;
    /* Called about every progress_every_s of wall time (not at all when NULL); it must not
     * touch the plan. Results never depend on it. */
    void (*progress)(void *ud, const replay_progress *at);
    void *progress_ud;
    double progress_every_s;
    /* Keep the summary's bubble figures but not the per-gap rows (for a caller that writes
     * no results file; a 16K-GPU step has tens of millions of gaps). */
    bool no_bubble_rows;
    /* Time every transfer as an ordinary max-min flow, also the collective rounds alone on
     * their links that are otherwise timed with one event (hw/net.c). A verification
     * switch: no result changes. */
    bool no_isolated_rounds;
    /* When not NULL, read every 4096 events (not per event): once non-zero, the replay stops
     * where it is and ends with summary.status REPLAY_STATUS_ERROR, `cancelled` set and
     * nothing summarized (the CLI's flag for SIGINT/SIGTERM/SIGHUP). */
    const volatile sig_atomic_t *cancel;
} replay_options;

/* Replays `p` (which must carry a trace) for sc->simulation.steps steps and fills `out`
 * (an empty results object). A trace that deadlocks (ops waiting on each other in a cycle,
 * which only a hand-edited trace can do) ends with summary.status REPLAY_STATUS_ERROR and
 * the stalled rank and op in summary.error; so does a replay stopped by opt->cancel, with
 * out->cancelled set, and one whose simulated time reaches SIM_TIME_HORIZON (an op or
 * transfer of a trace from a file beyond what the loader's limits allow), with
 * out->beyond_horizon set. Anything else wrong asserts. */
void replay_run(const plan *p, const replay_options *opt, replay_results *out);

/* Fills only what needs no replay (name, status, gpus, memory, binding constraint) — the
 * `stepsim mem` result; the figures of a replay are NaN (replay_summary_untimed). */
void replay_memory_only(const plan *p, replay_results *out);

#endif
