/* The work estimate (sim/plan/estimate.c) against the plans it estimates: the kernels' time
 * of a step exactly, the ops of the busiest GPU within the band the shipped scenarios show.
 *
 * Kernel time: with one GPU the estimate's compute_s sums, for each block kind, the roofline
 * time of each forward and backward kernel (forward ones twice under full recompute) times
 * the layers and micro-batches. The trace's compute ops of the forward and backward phases
 * are those very kernels, timed by the same hw_gpu_op_time: the two sums agree to double
 * rounding (the order of the additions differs), 1e-12 relative.
 *
 * Ops: the estimate counts each strategy's collectives generously (per layer and
 * micro-batch) and adds 4 ops per unit per step for buckets, gathers and the optimizer;
 * docs/performance.md shows it between 0.93x and 1.05x of the run's ops on the shipped
 * scenarios. Here it must lie within [0.85, 1.6] of the busiest rank's ops: a generator
 * that adds ops per layer the estimate does not know, or an estimate that stops counting
 * a strategy's, moves it out. Today (estimate / plan): one GPU 81/65, with 8 micro-batches
 * 536/492, DDP 146/127, ZeRO-3 158/150, TP 308/292, TP+SP 356/352, PP 168/142, full
 * recompute 190/170. */
#include "core/sim.h"

#include <math.h>

#include "hw/gpu.h"
#include "plan/estimate.h"
#include "test.h"
#include "tiny.h"

static plan_scenario sc; /* the plans borrow it until plan_destroy */

static void setup(int gpus, int A)
{
    tiny_scenario(&sc, gpus);
    sc.model = tiny_llama();
    sc.parallel.dp = gpus;
    sc.training.global_batch = (int64_t)A * gpus;
}

static size_t busiest_ops(const plan *p)
{
    size_t most = 0;
    for (int r = 0; r < p->n_ranks; r++)
        most = SIM_MAX(most, p->trace->ranks[r].n_ops);
    return most;
}

/* The estimate of `sc` into *w and its plan (with the trace), or NULL (a failed check). */
static plan *estimate_and_plan(plan_work *w)
{
    plan_estimate_work(&sc, true, w);
    plan *p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    return p;
}

static void check_ops(const char *what)
{
    plan_work w;
    plan *p = estimate_and_plan(&w);
    if (!p)
        return;
    double ops = (double)busiest_ops(p);
    double ratio = w.ops_per_rank / ops;
    if (!(ratio >= 0.85 && ratio <= 1.6))
        fprintf(stderr, "%s: estimate %.0f ops, plan %.0f\n", what, w.ops_per_rank, ops);
    CHECK(ratio >= 0.85 && ratio <= 1.6);
    /* the ranks of the layout, all replayed without symmetry */
    CHECK_NEAR(w.ranks, (double)p->n_ranks, 0, 0);
    CHECK_NEAR(w.replayed, (double)p->n_ranks, 0, 0);
    plan_destroy(p);
}

static void test_ops(void)
{
    setup(1, 1);
    check_ops("one GPU");
    setup(1, 8);
    check_ops("one GPU, 8 micro-batches");
    setup(4, 2);
    check_ops("DDP 4");
    setup(4, 2);
    sc.parallel.zero = 3;
    check_ops("ZeRO-3 4");
    setup(2, 2);
    sc.parallel.dp = 1;
    sc.parallel.tp = 2;
    check_ops("TP 2");
    sc.parallel.sp = true;
    check_ops("TP 2 + SP");
    setup(2, 4);
    sc.parallel.dp = 1;
    sc.parallel.pp = 2;
    sc.training.global_batch = 4;
    check_ops("PP 2, 4 micro-batches");
    setup(1, 2);
    sc.training.recompute = MODEL_RECOMPUTE_FULL;
    check_ops("full recompute");
}

/* Sum of the forward and backward kernels' roofline times of rank 0, in seconds. */
static double kernel_s(const plan *p)
{
    hw_gpu *gpu = hw_gpu_create(&sc.topology.gpu);
    const trace_rank *tr = &p->trace->ranks[0];
    double s = 0, attn_seq = (double)sc.training.seq_len;
    for (size_t i = 0; i < tr->n_ops; i++) {
        const trace_op *o = &tr->ops[i];
        if (o->kind != TRACE_OP_COMPUTE || o->phase > TRACE_PHASE_BWD)
            continue;
        s += sim_time_to_s(hw_gpu_op_time(gpu, (hw_op_class)o->cls, (hw_dtype)o->dtype, o->flops,
                                          o->bytes,
                                          o->cls == HW_OP_MATMUL ? (double)o->inner : attn_seq));
    }
    hw_gpu_destroy(gpu);
    return s;
}

static void check_time(void)
{
    plan_work w;
    plan *p = estimate_and_plan(&w);
    if (!p)
        return;
    double s = kernel_s(p);
    CHECK(s > 0);
    CHECK_NEAR(w.compute_s, s, 1e-12, 0);
    /* one GPU: nothing to communicate, no pipeline to fill */
    CHECK_NEAR(w.comm_s, 0, 0, 0);
    CHECK_NEAR(w.step_s, w.compute_s, 1e-12, 0);
    CHECK_NEAR(w.run_s, w.step_s * sc.simulation.steps, 1e-12, 0);
    plan_destroy(p);
}

static void test_kernel_time(void)
{
    setup(1, 3);
    check_time();
    sc.training.recompute = MODEL_RECOMPUTE_FULL;
    check_time();
}

int main(void)
{
    test_ops();
    test_kernel_time();
    return test_finish();
}
