/* The replay's internal state, shared by replay.c (the event loop and the summary) and
 * setup.c (per-rank state, groups, collective schedules, symmetry). */
#ifndef SIM_REPLAY_REPLAY_INTERNAL_H
#define SIM_REPLAY_REPLAY_INTERNAL_H

#include <gsl/gsl_rng.h>

#include "coll/exec.h"
#include "coll/select.h"
#include "core/eventq.h"
#include "core/pool.h"
#include "hw/gpu.h"
#include "hw/net.h"
#include "replay/replay.h"

/* EV_ISSUE: an op whose dependencies are done waits for the rank's host thread to issue it
 * (node.host.launch): a stream's head (b = the stream) or a point-to-point op (b = -1). */
enum { EV_OP_DONE = 1, EV_NET = 2, EV_ISSUE = 3 };

/* Flow tags: a collective's index, or a copy's (rank, op) with the top bit set. */
#define COPY_TAG (UINT64_C(1) << 63)

/* One schedule per distinct (group, operation, size, root, algorithm): every DDP bucket of
 * the same size shares it. */
typedef struct sched_entry {
    uint32_t group;
    uint8_t op;
    int8_t algo;
    int32_t root;
    double bytes;
    coll_schedule sched;   /* compacted (coll_schedule_compact) */
    coll_choice choice;
    coll_xfer_cost *costs; /* per transfer on this group (small schedules), per transfer of
                              each distinct round (large ones: cost_at), or NULL */
    uint32_t *cost_at;     /* large schedules: where round r's costs start in `costs` */
    double *sent;          /* bytes each member sends (coll_schedule_bytes_sent_all) */
    double sent_mean;      /* their mean over the members (what a symmetric run credits a
                              collective across replicas: its members need not send alike,
                              e.g. a tree's leaves and interior members) */
    /* symmetry_collectives: estimate, for a collective across replicas */
    bool estimated;        /* timed by choice.est_s, not run as flows */
    sim_time est_ps;       /* choice.est_s in picoseconds, rounded up */
    uint64_t runs;         /* instances started (their link traffic is added at the end) */
    /* how an instance runs (schedule, members' GPUs, protocol, costs: the same for every
     * instance), copied into a running instance's executor when it starts */
    coll_exec exec;
    bool exec_ready;
} sched_entry;

typedef struct coll_state {
    const sched_entry *plan;
    coll_exec *run;    /* while its transfers run: its executor (replay_ctx.exec_pool) */
    int arrived;
    int arrivals;      /* the group's: members whose arrival starts it */
    sim_time launched; /* when the last member arrived and the transfer began */
    uint64_t member_first; /* where its members' op indices start in replay_ctx.member_op */
} coll_state;

/* Per process group: what collective algorithms need to know. */
typedef struct group_info {
    coll_group g;
    int32_t *node;
    int switch_dev;
    int arrivals; /* members whose arrival starts a collective: all, or the active ones */
    bool routed;  /* its candidate algorithms' routes were prefetched */
    signed char ll128; /* coll_target.ll128: NCCL would enable LL128 on it (1, -1; 0 unknown) */
    const hw_route **pair_routes; /* member x member, for schedules too large to cost ahead */
} group_info;

/* A compute op of the reported step, with the idle gap that preceded it. */
typedef struct busy_iv {
    sim_time start, end;
    sim_time gap_start; /* when the stream became free before this op */
    sim_time split;     /* the gap is `early` until here, then `cause` */
    sim_time ready;     /* ... until here, then `host` (the op waited for its issue) */
    sim_time sync_wait; /* of the `host` time, how long the host waited at syncs for ops to
                           end (trace_host): counted to sync_cause instead */
    int8_t cause;       /* replay_cause of that gap */
    int8_t early;
    int8_t sync_cause;
} busy_iv;

typedef struct async_start {
    uint32_t op;
    sim_time t;
} async_start;

typedef struct rank_state {
    const trace_rank *tr;
    uint32_t *pending;   /* unfinished dependencies per op */
    sim_time *end;       /* per op: when it finished (this step), -1 before */
    sim_time stream_start[TRACE_STREAMS]; /* when the op running on each stream started */
    async_start *async;  /* start times of the point-to-point ops in flight */
    size_t n_async, cap_async;
    uint32_t *succ;      /* successors, CSR */
    uint32_t *succ_first;
    uint32_t *stream_ops; /* op indices per stream in order, CSR */
    sim_time *dur;        /* compute ops: duration before interference */
    uint32_t *n_deps;     /* per op: its dependencies (what begin_step copies to pending) */
    uint32_t *coll_at;    /* per collective ordinal (trace_op_coll): its op */
    bool borrowed;        /* succ, stream_ops, dur, n_deps, coll_at are its template rank's
                             (trace.h), ... */
    sim_time *var_dur;    /* ... but where it has its own values (tr->var), the duration of
                             tr->var[k]'s op is var_dur[k] (replay__op_dur); else NULL */
    size_t var_next;      /* the first var entry past the last one looked up */
    uint32_t stream_first[TRACE_STREAMS + 1];
    uint32_t head[TRACE_STREAMS];
    bool busy[TRACE_STREAMS];
    /* the compute kernel in flight under comm_interference: its completion event, the
     * work it has left (ps at full speed) as of k_at, and whether a collective slows it */
    sim_event *k_ev;
    double k_left;
    sim_time k_at;
    bool k_slowed;
    sim_time stream_free[TRACE_STREAMS];
    size_t done_ops;
    /* the host thread (node.host.launch): it issues the rank's ops in trace order, one every
     * launch_ps from the step's start, never waiting for the GPU within a step; an op
     * starts no earlier than its issue. issue_wait: a stream's head has an EV_ISSUE queued. */
    sim_time launch_ps;
    sim_time step_start;
    bool issue_wait[TRACE_STREAMS];
    /* ... unless the trace says otherwise (trace_host): an op may stand for several
     * launches (host_extra[k]: the launches beyond one per op of host entries 0..k), and
     * after issuing a sync op the host waits until every op up to it has ended. sync_op:
     * the sync ops in order (host_extra and sync_op are the template's for a borrower);
     * sync_next: the first not yet passed this step, sync_at[k]: when the host resumed
     * after sync k; blocked: async ops ready while a sync their issue waits for had not
     * passed. hosted: ops wait for their issue at all (launch_ps > 0 or syncs). */
    bool hosted;
    const int64_t *host_extra;
    const uint32_t *sync_op;
    uint32_t n_sync, sync_next;
    sim_time *sync_at;
    sim_time *sync_from;  /* per sync passed: when the host reached it (its op's issue) */
    int8_t *sync_cause;   /* ... and the replay_cause of the op whose end let it pass */
    uint32_t *blocked;
    size_t n_blocked, cap_blocked;
    int step;              /* 0-based step in progress */
    sim_time *step_end;    /* per step: when this rank finished it */
    /* steady.c: the first unfinished op (a cache: everything before it has finished), one
     * past the last op touched (started, or a dependency of it finished) */
    uint32_t lo, hi;
    size_t n_posted; /* of the async ops in flight, those without dependencies (posted at
                        the step's start, or at their issue) */
    /* the last step's intervals accounted so far (replay__push_iv): busy time, idle time by
     * cause, and the end of the busy time seen (the next gap's start) */
    double acc_busy, acc_idle[REPLAY_CAUSE_COUNT];
    sim_time acc_cursor;
    busy_iv cur;           /* the latest (possibly still open) interval, when have_cur */
    bool have_cur;
    double comm_busy_ps;   /* the reported step's window: time with a collective op of
                              the rank in progress (overlapping ones count once) */
    int comm_inflight;     /* its collective ops in progress (posted point-to-point ones
                              included) */
    sim_time comm_since;   /* ... and since when that count is above 0 */
    plan_mem level, peak;  /* bytes in use now, and the split at this rank's peak */
    uint32_t tail_op;      /* last step: the op that ended the rank's step */
    double comm_sent[REPLAY_COMM_COUNT]; /* bytes sent in the last step */
} rank_state;

typedef struct replay_ctx {
    const plan *p;
    const trace *t;
    const replay_options *opt;
    replay_results *res;
    sim_eventq *q;
    hw_topo *topo;
    hw_net *net;
    hw_gpu *gpus[HW_NODE_GROUPS_MAX]; /* per node group (one without groups) */
    uint8_t *gpu_of;      /* per rank: its GPU's index in gpus */
    rank_state *ranks;
    coll_state *colls;
    sim_pool *exec_pool; /* the running collectives' executors */
    uint32_t *member_op; /* per running instance, per member: the collective's op index on
                            that member rank (one array: millions of instances) */
    group_info *groups;
    sched_entry *scheds;
    size_t n_scheds, cap_scheds;
    uint32_t *sched_slots; /* hash index of scheds (schedule_for) */
    double *select_scratch; /* per link, for coll_select's estimates */
    size_t sched_slots_cap;
    int steps;
    /* simulation.symmetry: dp: only replica 0 runs (active); twin[r] is the replica-0 rank
     * whose results an inactive rank takes. NULL without symmetry. */
    bool *active;
    int32_t *twin;
    int n_active;
    bool estimate_cross; /* symmetry_collectives: estimate (sched_entry.estimated) */
    const char *stream_names[TRACE_STREAMS];
    bool sink_failed; /* the timeline sink returned an error: stop calling it */
    /* The reported step's window opens when the step before it has ended on every rank
     * (w0; at 0 for one step): from then on each interval is accounted as it closes. */
    bool w0_known;
    sim_time w0;
    int before_w0; /* ranks yet to finish the step before the reported one */
    /* simulation.stragglers: per rank, the factor on its kernels' durations (NULL: none);
     * simulation.jitter: per rank, the generator of each kernel's lognormal factor (mean 1,
     * log-variance sigma^2 = ln(1 + CV^2)), drawn in the rank's kernel order (NULL: none) */
    double *slowdown;
    gsl_rng **jitter;
    double jitter_mu, jitter_sigma;
    /* simulation.steady_state (steady.c): NULL when off or declined (steady_declined says
     * why); probe_due: an instant to compare once its events have run; journal: the
     * additions to the results are being recorded */
    struct replay_steady *steady;
    const char *steady_declined;
    int probe_rank; /* the rank whose compute kernels' starts mark probes; -1 without */
    /* events between probes, at least (a probe reads every simulated rank: with many, one
     * per that many events keeps its cost per event bounded), and the last one's */
    uint64_t probe_gap, probe_at;
    bool probe_due;
    bool journal;
    bool host_bound; /* an op waited for the host thread's issue, or a gap was the host's */
    sim_time steady_skipped_ps;
} replay_ctx;

/* Accounts a closed interval of the reported step to its rank's busy and idle time
 * (bubbles.c). */
void replay__push_iv(replay_ctx *c, rank_state *rs, const busy_iv *iv);
/* The rank's first op not yet ended this step (everything before it has; lo caches it). */
static inline uint32_t replay__lo(rank_state *rs)
{
    uint32_t n = (uint32_t)rs->tr->n_ops;
    while (rs->lo < n && rs->end[rs->lo] >= 0)
        rs->lo++;
    return rs->lo;
}

/* The host launches up to and including op `op` (trace_host: one per op unless it says). */
static inline int64_t replay__launches(const rank_state *rs, uint32_t op)
{
    const trace_rank *tr = rs->tr;
    size_t lo = 0, hi = tr->n_host; /* the first host entry past op */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tr->host[mid].op <= op)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)op + 1 + (lo > 0 ? rs->host_extra[lo - 1] : 0);
}

/* Whether op `op`'s issue waits for a host synchronization that has not passed yet. */
static inline bool replay__issue_blocked(const rank_state *rs, uint32_t op)
{
    return rs->sync_next < rs->n_sync && rs->sync_op[rs->sync_next] < op;
}

/* When the host thread issues op `op` (not blocked): its launches after the step's start,
 * or after the host resumed from the last sync before it; the horizon if that is beyond. */
static inline sim_time replay__issue_time(const rank_state *rs, uint32_t op)
{
    sim_time base = rs->step_start;
    int64_t k = (int64_t)op + 1;
    if (rs->tr->n_host > 0) {
        uint32_t lo = 0, hi = rs->sync_next; /* passed syncs before op */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (rs->sync_op[mid] < op)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = replay__launches(rs, op);
        if (lo > 0) {
            base = rs->sync_at[lo - 1];
            k -= replay__launches(rs, rs->sync_op[lo - 1]);
        }
    }
    if (k <= 0 || rs->launch_ps == 0)
        return base;
    if (rs->launch_ps > (SIM_TIME_HORIZON - base) / k)
        return SIM_TIME_HORIZON;
    return base + rs->launch_ps * k;
}

/* Compute op `op`'s duration before interference on rank `rs`: its own (var_dur) or the
 * op array's. A rank's compute ops mostly start in op order, so the search starts where
 * the last one ended. */
static inline sim_time replay__op_dur(rank_state *rs, uint32_t op)
{
    if (!rs->var_dur)
        return rs->dur[op];
    const trace_op_var *v = rs->tr->var;
    size_t n = rs->tr->n_var, k = rs->var_next;
    if (k > 0 && v[k - 1].op >= op) {
        size_t lo = 0, hi = k; /* out of order: the first entry at or past op */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (v[mid].op < op)
                lo = mid + 1;
            else
                hi = mid;
        }
        k = lo;
    }
    while (k < n && v[k].op < op)
        k++;
    rs->var_next = k;
    if (k < n && v[k].op == op) {
        rs->var_next = k + 1;
        return rs->var_dur[k];
    }
    return rs->dur[op];
}

/* steady.c (simulation.steady_state): set up after the ranks (declines jitter and host
 * launch); a probe once every event of the instant `*now` has run, which may move the state
 * whole periods forward (true; *now moved with it); freed with the rest. While c->journal
 * is set, every addition to the results is also recorded (replay__j_*). */
void replay__steady_init(replay_ctx *c);
bool replay__steady_probe(replay_ctx *c, sim_time *now);
void replay__steady_free(replay_ctx *c);
void replay__j_iv(replay_ctx *c, int rank, const busy_iv *iv);
void replay__j_mem(replay_ctx *c, int rank, sim_time t, int cat, int64_t bytes);
void replay__j_tl(replay_ctx *c, int rank, uint32_t op, sim_time start, sim_time end);
void replay__j_sent(replay_ctx *c, int rank, int cls, double bytes);
void replay__j_cbusy(replay_ctx *c, int rank, double ps);
void replay__j_runs(replay_ctx *c, size_t sched);
/* replay.c: a memory row (timeline on) and a timeline row, as the event loop adds them */
void replay__memory_row(replay_ctx *c, int rank, sim_time t, int cat, int64_t bytes);
void replay__timeline_row(replay_ctx *c, int rank, uint32_t op, sim_time start, sim_time end);
/* summary.c: a row of the memory table; the summary's memory keys and verdict from per-rank
 * peaks; the summary, rank rows and link rows once every rank has run its steps */
void replay__add_memory_row(replay_results *r, int rank, sim_time t, int cat, int64_t bytes);
void replay__fill_memory(const plan *p, const plan_mem *peaks, replay_results *r);
void replay__summarize(replay_ctx *c);

/* bubbles.c: the idle time of a compute stream by cause */
replay_cause replay__cause_of_group(int cls);
void replay__add_bubble(replay_ctx *c, int rank, int step, sim_time a, sim_time b, int cause,
                        double *idle_by_cause);
void replay__tail_bubbles(replay_ctx *c, int rk, const rank_state *rs, sim_time from,
                          sim_time to, double *idle_by_cause);
busy_iv replay__gap(replay_ctx *c, const rank_state *rs, const trace_op *o, sim_time now);
/* What an op that something waits on stands for (bubbles.c): a collective its group's
 * communication, a copy or CPU work the offload, a kernel other. */
int replay__cause_of_op(const replay_ctx *c, const rank_state *rs, const trace_op *o);

/* setup.c */
void replay__init_rank(replay_ctx *c, int rank);
void replay__init_colls(replay_ctx *c);   /* groups and every instance's schedule */
void replay__init_symmetry(replay_ctx *c); /* simulation.symmetry: dp */
/* variability.c: simulation.stragglers and jitter set up; a kernel's duration `d` this time
 * on `rank`; the summary's slowest rank from the rank rows */
void replay__init_variability(replay_ctx *c);
sim_time replay__kernel_duration(replay_ctx *c, int rank, sim_time d);
void replay__slowest(const replay_ctx *c, replay_summary *s, const replay_results *r);
void replay__add_estimated_traffic(replay_ctx *c);
void replay__clear(replay_ctx *c);        /* frees all of the above */

#endif
