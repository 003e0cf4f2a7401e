/* Replay of hand-built traces with closed-form step times. */
#include "core/sim.h"

#include <string.h>

#include "plan/plan.h"
#include "replay/replay.h"
#include "test.h"

/* Two GPUs on a switch at 100 GB/s per direction, 1 us latency. The GPU computes matmuls
 * at 989 TFLOP/s x a flat efficiency of 0.5, has effectively infinite HBM bandwidth and no
 * launch overhead, so a matmul of F FLOPs takes exactly F / 494.5e12 s (rounded up to ps). */
static void scenario(plan_scenario *sc, int steps)
{
    plan_scenario_defaults(sc);
    snprintf(sc->name, sizeof sc->name, "analytic");
    hw_topology_spec *t = &sc->topology;
    snprintf(t->name, sizeof t->name, "ideal-pair");
    t->nodes = 1;
    t->gpus_per_node = 2;
    t->intra.kind = HW_INTRA_NVSWITCH;
    t->intra.bw_Bps = 100e9;
    t->intra.latency_ps = SIM_PS_PER_US;
    hw_gpu_spec *g = &t->gpu;
    snprintf(g->name, sizeof g->name, "ideal");
    g->memory_bytes = INT64_C(80) << 30;
    g->memory_bw_Bps = 1e30;
    g->peak_flops[HW_DTYPE_BF16] = 989e12;
    g->peak_flops[HW_DTYPE_FP32] = 1e30;
    g->matmul_eff.n = 1;
    g->matmul_eff.x[0] = 1e9;
    g->matmul_eff.y[0] = 0.5;
    /* ideal collectives: every protocol at full link bandwidth with no latency of its own,
     * so a ring round costs exactly route latency + bytes / bandwidth */
    hw_protocols_defaults(&t->protocols);
    for (int p = 0; p < HW_PROTO_COUNT; p++) {
        t->protocols.proto[p].base_ps = 0;
        for (int c = 0; c < HW_LINK_CLASS_COUNT; c++) {
            t->protocols.proto[p].step_ps[c] = 0;
            t->protocols.proto[p].efficiency[c] = 1;
        }
    }
    sc->collectives[PLAN_GROUP_DP] = PLAN_COLL_RING;
    sc->simulation.steps = steps;
    sc->training.global_batch = 2;
}

static trace_op compute(trace *t, const char *name, double flops, int cls)
{
    return (trace_op){.kind = TRACE_OP_COMPUTE, .stream = TRACE_STREAM_COMPUTE,
                      .phase = cls == HW_OP_MATMUL ? TRACE_PHASE_FWD : TRACE_PHASE_OPT,
                      .cls = (uint8_t)cls, .dtype = HW_DTYPE_BF16, .layer = TRACE_NO_LAYER,
                      .microbatch = 0, .name = trace_intern(t, name), .flops = flops,
                      .model_flops = flops, .duration_ps = TRACE_MEASURED_NONE};
}

static trace_op allreduce(trace *t, uint32_t coll)
{
    return (trace_op){.kind = TRACE_OP_COLL, .stream = TRACE_STREAM_COMM(PLAN_GROUP_DP),
                      .phase = TRACE_PHASE_COMM, .layer = TRACE_NO_LAYER,
                      .microbatch = TRACE_NO_MICROBATCH, .name = trace_intern(t, "bucket"),
                      .coll = coll, .bytes = 1e9, .duration_ps = TRACE_MEASURED_NONE};
}

static plan *make_plan(const plan_scenario *sc, trace *t)
{
    plan *p = sim_calloc(1, sizeof *p);
    p->sc = sc;
    p->n_ranks = 2;
    p->topology_gpus = 2;
    p->coords = sim_calloc(2, sizeof *p->coords);
    p->coords[1].c[PLAN_GROUP_DP] = 1;
    p->global_batch = 2;
    p->accum_steps = 1;
    p->mem = sim_calloc(2, sizeof *p->mem);
    p->capacity_bytes = sc->topology.gpu.memory_bytes;
    trace_finish(t);
    p->trace = t;
    CHECK_INT_EQ(hw_topo_create(&sc->topology, &p->topo, NULL), 0);
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < t->ranks[r].n_ops; i++)
            p->model_flops_per_step += t->ranks[r].ops[i].model_flops;
    p->hardware_flops_per_step = p->model_flops_per_step;
    return p;
}

/* Plans trace t for scenario sc and replays it (*p: the plan, for plan_destroy). */
static replay_results *replay_trace(const plan_scenario *sc, trace *t, bool timeline, plan **p)
{
    *p = make_plan(sc, t);
    replay_results *res = replay_results_create();
    replay_options opt = {.timeline = timeline};
    replay_run(*p, &opt, res);
    return res;
}

/* Two ranks, each a chain of 5,000 GEMMs of 1e9 FLOPs (cases 4 and 5). */
static trace *chain_trace(void)
{
    trace *t = trace_create(2);
    for (int r = 0; r < 2; r++) {
        uint32_t prev = 0;
        for (int i = 0; i < 5000; i++) {
            trace_op op = compute(t, "gemm", 1e9, HW_OP_MATMUL);
            prev = trace_add_op(t, r, &op, i ? &prev : NULL, i ? 1 : 0);
        }
    }
    return t;
}

/* 1e12 FLOPs at 494.5 TFLOP/s = 2,022,244,691.6 ps, rounded up. */
#define T_MATMUL_PS INT64_C(2022244692)
/* Ring all-reduce of 1 GB over 2 GPUs: 2(n-1) = 2 rounds of B/n = 0.5 GB each way, each
 * 0.5 GB / 100 GB/s = 5 ms, and α = 1 us before the first only (the second round's latency
 * hides behind its own step, 0.5 GB >> one slice: coll_exec_piped_delay): 10.001 ms. */
#define T_ALLREDUCE_PS INT64_C(10001000000)

typedef struct progress_seen {
    int calls;
    bool ordered; /* every report at or after the previous one */
    replay_progress last;
} progress_seen;

static void on_progress(void *ud, const replay_progress *at)
{
    progress_seen *s = ud;
    s->ordered = s->calls == 0 || (s->ordered && at->simulated_s >= s->last.simulated_s &&
                                   at->events >= s->last.events &&
                                   at->steps_done >= s->last.steps_done);
    s->calls++;
    s->last = *at;
}

int main(void)
{
    /* 1. Compute, then the all-reduce without overlap, then a zero-cost optimizer:
     *    step = T_matmul + T_allreduce; the compute stream idles for the whole all-reduce,
     *    which is exposed dp communication. */
    {
        plan_scenario sc;
        scenario(&sc, 3);
        trace *t = trace_create(2);
        int32_t members[2] = {0, 1};
        uint32_t g = trace_add_group(t, PLAN_GROUP_DP, 2, members);
        uint32_t c = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, g, 1e9, 0);
        for (int r = 0; r < 2; r++) {
            trace_op op = compute(t, "gemm", 1e12, HW_OP_MATMUL);
            uint32_t a = trace_add_op(t, r, &op, NULL, 0);
            op = allreduce(t, c);
            uint32_t b = trace_add_op(t, r, &op, &a, 1);
            op = compute(t, "optimizer", 0, HW_OP_VECTOR);
            trace_add_op(t, r, &op, &b, 1);
        }
        trace_finish(t);
        CHECK_INT_EQ(trace__check(t), 0);
        plan *p = make_plan(&sc, t);
        replay_results *res = replay_results_create();
        replay_options opt = {.timeline = true};
        replay_run(p, &opt, res);
        const replay_summary *s = &res->summary;
        double step = sim_time_to_s(T_MATMUL_PS + T_ALLREDUCE_PS);
        CHECK_NEAR(s->step_time_s, step, 1e-12, 0);
        CHECK_INT_EQ(res->n_steps, 3);
        CHECK_NEAR(res->steps[2].end_s, 3 * step, 1e-12, 0);
        CHECK_NEAR(s->exposed_comm_s[PLAN_GROUP_DP], sim_time_to_s(T_ALLREDUCE_PS), 1e-12, 0);
        CHECK_NEAR(s->bubble_fraction, (double)T_ALLREDUCE_PS / (T_MATMUL_PS + T_ALLREDUCE_PS),
                   1e-12, 0);
        CHECK_NEAR(s->bubble_by_cause[REPLAY_CAUSE_DP], s->bubble_fraction, 1e-12, 0);
        /* ring all-reduce payload per GPU: 2(n-1)/n x 1 GB = 1 GB */
        CHECK_NEAR(s->comm_bytes_per_gpu[PLAN_GROUP_DP], 1e9, 1e-12, 0);
        /* model FLOPs 2 x 1e12 per step over 2 GPUs: 1e12 / step per GPU */
        CHECK_NEAR(s->tflops_per_gpu, 1e12 / step / 1e12, 1e-12, 0);
        CHECK_NEAR(s->mfu, 1e12 / step / 989e12, 1e-12, 0);
        /* 3 ops x 2 ranks x 3 steps */
        CHECK_INT_EQ(res->n_timeline, 18);
        CHECK_NEAR(res->ranks[1].compute_s, sim_time_to_s(T_MATMUL_PS), 1e-12, 0);
        CHECK_NEAR(res->ranks[1].comm_s, sim_time_to_s(T_ALLREDUCE_PS), 1e-12, 0);
        /* GPU 0's NVSwitch port carried 2 rounds x 0.5 GB per step, 3 steps */
        double up = -1;
        for (size_t i = 0; i < res->n_links; i++)
            if (strcmp(res->links[i].src, "gpu0") == 0 && strcmp(res->links[i].dst, "n0.nvswitch") == 0)
                up = res->links[i].bytes;
        CHECK_NEAR(up, 3e9, 1e-9, 0);
        replay_results_destroy(res);
        plan_destroy(p);
    }

    /* 2. Overlap: the all-reduce of the first GEMM's gradients runs while the second GEMM
     *    computes. It starts at T_matmul and ends at T_matmul + T_allreduce, which sets the
     *    step; the compute stream idles from 2 T_matmul to then, attributed to dp. */
    {
        plan_scenario sc;
        scenario(&sc, 2);
        trace *t = trace_create(2);
        int32_t members[2] = {0, 1};
        uint32_t g = trace_add_group(t, PLAN_GROUP_DP, 2, members);
        uint32_t c = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, g, 1e9, 0);
        for (int r = 0; r < 2; r++) {
            trace_op op = compute(t, "gemm1", 1e12, HW_OP_MATMUL);
            uint32_t a = trace_add_op(t, r, &op, NULL, 0);
            op = allreduce(t, c);
            uint32_t b = trace_add_op(t, r, &op, &a, 1);
            op = compute(t, "gemm2", 1e12, HW_OP_MATMUL);
            uint32_t d = trace_add_op(t, r, &op, NULL, 0);
            uint32_t deps[2] = {b, d};
            op = compute(t, "optimizer", 0, HW_OP_VECTOR);
            trace_add_op(t, r, &op, deps, 2);
        }
        plan *p;
        replay_results *res = replay_trace(&sc, t, false, &p);
        const replay_summary *s = &res->summary;
        CHECK_NEAR(s->step_time_s, sim_time_to_s(T_MATMUL_PS + T_ALLREDUCE_PS), 1e-12, 0);
        CHECK_NEAR(s->exposed_comm_s[PLAN_GROUP_DP], sim_time_to_s(T_ALLREDUCE_PS - T_MATMUL_PS),
                   1e-12, 0);
        CHECK_INT_EQ(res->n_timeline, 0);
        replay_results_destroy(res);
        plan_destroy(p);
    }

    /* 2b. Communication busy time counts overlapping collectives once (the ranks table's
     *     comm_s): a 1 GB all-reduce on the dp stream and another on the tp stream (a second
     *     group of the same two GPUs) both start at 0, then a zero-cost optimizer. Each link
     *     direction carries one flow of each: 50 GB/s apiece, so each 0.5 GB round takes
     *     10 ms; α (1 us) before the first round only: both end at 20.001 ms, the step. The
     *     rank's communication is in progress the whole step: comm_s = 20.001 ms, where the
     *     sum of the two collectives' durations would be 40.002 ms. */
    {
        plan_scenario sc;
        scenario(&sc, 2);
        sc.collectives[PLAN_GROUP_TP] = PLAN_COLL_RING;
        trace *t = trace_create(2);
        int32_t members[2] = {0, 1};
        uint32_t gd = trace_add_group(t, PLAN_GROUP_DP, 2, members);
        uint32_t gt = trace_add_group(t, PLAN_GROUP_TP, 2, members);
        uint32_t cd = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, gd, 1e9, 0);
        uint32_t ct = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, gt, 1e9, 0);
        for (int r = 0; r < 2; r++) {
            trace_op op = allreduce(t, cd);
            uint32_t a = trace_add_op(t, r, &op, NULL, 0);
            op = allreduce(t, ct);
            op.stream = TRACE_STREAM_COMM(PLAN_GROUP_TP);
            uint32_t b = trace_add_op(t, r, &op, NULL, 0);
            uint32_t deps[2] = {a, b};
            op = compute(t, "optimizer", 0, HW_OP_VECTOR);
            trace_add_op(t, r, &op, deps, 2);
        }
        plan *p;
        replay_results *res = replay_trace(&sc, t, false, &p);
        const replay_summary *s = &res->summary;
        CHECK_NEAR(s->step_time_s, 20.001e-3, 0, 2e-12);
        for (int r = 0; r < 2; r++)
            CHECK_NEAR(res->ranks[r].comm_s, s->step_time_s, 1e-12, 0);
        replay_results_destroy(res);
        plan_destroy(p);
    }

    /* 3. Imbalance: rank 1 computes twice as long. Rank 0 reaches the all-reduce first and
     *    waits inside it; the collective starts when rank 1 arrives at 2 T_matmul. Step =
     *    2 T_matmul + T_allreduce. Rank 0's compute stream idles T_matmul + T_allreduce,
     *    rank 1's T_allreduce, all waiting on the dp collective. */
    {
        plan_scenario sc;
        scenario(&sc, 1);
        trace *t = trace_create(2);
        int32_t members[2] = {0, 1};
        uint32_t g = trace_add_group(t, PLAN_GROUP_DP, 2, members);
        uint32_t c = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, g, 1e9, 0);
        for (int r = 0; r < 2; r++) {
            trace_op op = compute(t, "gemm", r ? 2e12 : 1e12, HW_OP_MATMUL);
            uint32_t a = trace_add_op(t, r, &op, NULL, 0);
            op = allreduce(t, c);
            uint32_t b = trace_add_op(t, r, &op, &a, 1);
            op = compute(t, "optimizer", 0, HW_OP_VECTOR);
            trace_add_op(t, r, &op, &b, 1);
        }
        plan *p = make_plan(&sc, t);
        replay_results *res = replay_results_create();
        replay_options opt = {.timeline = true};
        replay_run(p, &opt, res);
        const replay_summary *s = &res->summary;
        /* 2e12 FLOPs: 4,044,489,383.2 ps, rounded up */
        sim_time t2 = INT64_C(4044489384);
        CHECK_NEAR(s->step_time_s, sim_time_to_s(t2 + T_ALLREDUCE_PS), 1e-12, 0);
        CHECK_NEAR(res->ranks[0].idle_s, sim_time_to_s(t2 - T_MATMUL_PS + T_ALLREDUCE_PS), 1e-12,
                   0);
        CHECK_NEAR(res->ranks[1].idle_s, sim_time_to_s(T_ALLREDUCE_PS), 1e-12, 0);
        CHECK_NEAR(s->exposed_comm_s[PLAN_GROUP_DP],
                   0.5 * sim_time_to_s(t2 - T_MATMUL_PS + 2 * T_ALLREDUCE_PS), 1e-12, 0);
        replay_results_destroy(res);
        plan_destroy(p);
    }
    /* 3b. Interference for exactly the overlap: comm_interference 0.5, a GEMM of 1e13 FLOPs
     *     (T_K = 1e13 / 494.5e12 s = 20,222,446,916.08 ps, rounded up: ...917) and the
     *     all-reduce (T_AR = 10.001 ms, unaffected) both start at 0. While the all-reduce
     *     runs the GEMM progresses at 1 / 1.5: by T_AR it has done T_AR / 1.5 of its work,
     *     the rest runs at full speed: it ends at T_AR + T_K - T_AR / 1.5 = T_K + T_AR / 3 =
     *     20,222,446,917 + 3,333,666,666.7 = 23,556,113,583.7 ps, which sets the step (the
     *     optimizer waits for both). Whether the GEMM or the collective starts first at 0
     *     does not matter (a whole-kernel slowdown decided at the kernel's start would give
     *     20.22 or 30.33 ms by that order). */
    {
        plan_scenario sc;
        scenario(&sc, 1);
        sc.topology.gpu.comm_interference = 0.5;
        for (int comm_first = 0; comm_first < 2; comm_first++) {
            trace *t = trace_create(2);
            int32_t members[2] = {0, 1};
            uint32_t g = trace_add_group(t, PLAN_GROUP_DP, 2, members);
            uint32_t c = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, g, 1e9, 0);
            for (int r = 0; r < 2; r++) {
                uint32_t ids[2];
                trace_op op = comm_first ? allreduce(t, c) : compute(t, "gemm", 1e13, HW_OP_MATMUL);
                ids[0] = trace_add_op(t, r, &op, NULL, 0);
                op = comm_first ? compute(t, "gemm", 1e13, HW_OP_MATMUL) : allreduce(t, c);
                ids[1] = trace_add_op(t, r, &op, NULL, 0);
                op = compute(t, "optimizer", 0, HW_OP_VECTOR);
                trace_add_op(t, r, &op, ids, 2);
            }
            plan *p = make_plan(&sc, t);
            replay_results *res = replay_results_create();
            replay_options opt = {.timeline = false};
            replay_run(p, &opt, res);
            CHECK_NEAR(res->summary.step_time_s, 23556113583.7e-12, 0, 2e-12);
            replay_results_destroy(res);
            plan_destroy(p);
        }
    }

    /* 4. Progress: a chain of 5,000 kernels per rank on 2 ranks over 2 steps pushes at least
     *    20,000 events, so a callback due at every check (interval 0) is called at least
     *    20,000 / 4,096 = 4 times; what it sees never decreases, stays within the run, and
     *    the results are those of a run without it. */
    {
        double step_s[2];
        int calls = 0;
        for (int with = 0; with < 2; with++) {
            plan_scenario sc;
            scenario(&sc, 2);
            /* (the chain repeats from its second kernel on: steady-state skipping would
             * move over it in a few events) */
            sc.simulation.steady_state = PLAN_STEADY_OFF;
            trace *t = chain_trace();
            plan *p = make_plan(&sc, t);
            replay_results *res = replay_results_create();
            progress_seen seen = {0};
            replay_options opt = {.progress = with ? on_progress : NULL, .progress_ud = &seen,
                                  .progress_every_s = 0};
            replay_run(p, &opt, res);
            step_s[with] = res->summary.step_time_s;
            if (with) {
                calls = seen.calls;
                CHECK(seen.ordered);
                CHECK(seen.last.steps == 2 && seen.last.steps_done <= 2);
                CHECK(seen.last.simulated_s <= 2 * res->summary.step_time_s + 1e-12);
            }
            replay_results_destroy(res);
            plan_destroy(p);
        }
        CHECK(calls >= 4);
        CHECK_NEAR(step_s[1], step_s[0], 0, 0);
    }

    /* 5. Steady state (steady.c): the same chain with simulation.steady_state: auto. Every
     *    kernel takes 1e9 FLOPs / 494.5 TFLOP/s = 2,022,245 ps (rounded up), so from its
     *    second kernel on the chain's state repeats every kernel: the replay moves over
     *    whole periods instead of simulating them, and each step still ends at exactly
     *    5,000 x 2,022,245 ps = 10.111225 ms. The first and the last kernels, and those the
     *    probes need to find the period, are simulated: fewer than 1,000 events in all. */
    {
        plan_scenario sc;
        scenario(&sc, 2);
        trace *t = chain_trace();
        plan *p;
        replay_results *res = replay_trace(&sc, t, true, &p);
        CHECK_INT_EQ(res->summary.status, REPLAY_STATUS_OK);
        CHECK_NEAR(res->summary.step_time_s, 5000 * 2022245e-12, 0, 0);
        CHECK(res->summary.steady_periods > 0 && res->events < 1000);
        /* every kernel is in the timeline, the last one ending with the second step */
        CHECK_INT_EQ((long long)res->n_timeline, 2 * 2 * 5000);
        CHECK_NEAR(res->timeline[res->n_timeline - 1].end_s, 2 * 5000 * 2022245e-12, 0, 1e-15);
        replay_results_destroy(res);
        plan_destroy(p);
    }

    /* 6. The host thread (trace_host): launches L = 10 us an op. Each rank issues a GEMM
     *    (op 0) at L, the all-reduce of its gradients (op 1) at 2L, then a second GEMM
     *    (op 2) that stands for 5 launches and needs nothing.
     *    - Without a sync op 2 is issued at 2L + 5L = 7L and runs after op 0 on the compute
     *      stream, from L + T_matmul (2 ms >> 7L): step = L + T_matmul + T_allreduce (the
     *      all-reduce, from L + T_matmul, ends last).
     *    - With sync on op 1 the host waits until ops 0 and 1 have ended, at L + T_matmul +
     *      T_allreduce, then spends op 2's 5 launches: op 2 runs from there + 5L, and the
     *      step is 6L + 2 T_matmul + T_allreduce. The compute stream idles [0, L) before op
     *      0's issue and [L + T_matmul, 6L + T_matmul + T_allreduce) before op 2's, a bubble
     *      fraction of (6L + T_allreduce) / step: the host's launches, 6L, and the sync's
     *      wait for the all-reduce, T_allreduce, which is dp's (the op that ended it). The
     *      steady-state search declines (the host's clock is not a function of the op).
     *    - With no launch time (L = 0) and the sync on op 0 instead, the host issues ops 1
     *      and 2 when op 0 ends, at T_matmul: op 2 follows op 0 with no gap (one busy
     *      interval of 2 T_matmul) and the step is T_matmul + T_allreduce, the compute
     *      stream idle for the all-reduce's last T_allreduce - T_matmul: dp. */
    for (int sync = 0; sync < 3; sync++) {
        plan_scenario sc;
        scenario(&sc, 2);
        const sim_time L = sync == 2 ? 0 : 10 * SIM_PS_PER_US;
        sc.topology.host.launch_eager_ps = L;
        sc.training.compile = false;
        trace *t = trace_create(2);
        int32_t members[2] = {0, 1};
        uint32_t g = trace_add_group(t, PLAN_GROUP_DP, 2, members);
        uint32_t c = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, g, 1e9, 0);
        for (int r = 0; r < 2; r++) {
            trace_op op = compute(t, "gemm", 1e12, HW_OP_MATMUL);
            uint32_t a = trace_add_op(t, r, &op, NULL, 0);
            trace_set_host(t, r, a, 1, sync == 2);
            op = allreduce(t, c);
            uint32_t b = trace_add_op(t, r, &op, &a, 1);
            trace_set_host(t, r, b, 1, sync == 1);
            op = compute(t, "gemm2", 1e12, HW_OP_MATMUL);
            uint32_t d = trace_add_op(t, r, &op, NULL, 0);
            trace_set_host(t, r, d, 5, false);
        }
        trace_finish(t);
        CHECK_INT_EQ(trace__check(t), 0);
        plan *p;
        replay_results *res = replay_trace(&sc, t, false, &p);
        const replay_summary *s = &res->summary;
        CHECK_INT_EQ(s->status, REPLAY_STATUS_OK);
        sim_time step = sync == 1 ? 6 * L + 2 * T_MATMUL_PS + T_ALLREDUCE_PS
                                  : L + T_MATMUL_PS + T_ALLREDUCE_PS;
        CHECK_NEAR(s->step_time_s, sim_time_to_s(step), 1e-12, 0);
        CHECK_NEAR(res->steps[1].end_s, 2 * sim_time_to_s(step), 1e-12, 0);
        if (sync == 2) {
            CHECK_NEAR(s->bubble_fraction,
                       (double)(T_ALLREDUCE_PS - T_MATMUL_PS) / (double)step, 1e-12, 0);
            CHECK_NEAR(s->bubble_by_cause[REPLAY_CAUSE_DP], s->bubble_fraction, 1e-12, 0);
        }
        if (sync == 1) {
            CHECK_NEAR(s->bubble_fraction, (double)(6 * L + T_ALLREDUCE_PS) / (double)step,
                       1e-12, 0);
            CHECK_NEAR(s->bubble_by_cause[REPLAY_CAUSE_HOST], (double)(6 * L) / (double)step,
                       1e-12, 0);
            CHECK_NEAR(s->bubble_by_cause[REPLAY_CAUSE_DP],
                       (double)T_ALLREDUCE_PS / (double)step, 1e-12, 0);
        }
        replay_results_destroy(res);
        plan_destroy(p);
    }

    return test_finish();
}
