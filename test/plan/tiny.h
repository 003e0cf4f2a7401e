/* Scenarios for the plan's unit tests, built in C without YAML: one node of `gpus` ideal
 * GPUs on an NVSwitch (the plan only lays out ranks and counts bytes: no time is measured
 * here), and two tiny models whose sizes are derived by hand in the tests. */
#ifndef STEPSIM_TEST_PLAN_TINY_H
#define STEPSIM_TEST_PLAN_TINY_H

#include "core/sim.h"

#include <stdio.h>

#include "plan/plan.h"

static inline void tiny_scenario(plan_scenario *sc, int gpus)
{
    plan_scenario_defaults(sc);
    snprintf(sc->name, sizeof sc->name, "tiny");
    hw_topology_spec *t = &sc->topology;
    snprintf(t->name, sizeof t->name, "tiny-node");
    t->nodes = 1;
    t->gpus_per_node = gpus;
    t->intra.kind = HW_INTRA_NVSWITCH;
    t->intra.bw_Bps = 100e9;
    t->intra.latency_ps = SIM_PS_PER_US;
    hw_protocols_defaults(&t->protocols);
    hw_gpu_spec *g = &t->gpu;
    snprintf(g->name, sizeof g->name, "ideal");
    g->memory_bytes = INT64_C(80) << 30;
    g->memory_bw_Bps = 1e12;
    g->peak_flops[HW_DTYPE_BF16] = 1e15;
    g->peak_flops[HW_DTYPE_FP32] = 1e15;
    g->matmul_eff.n = 1;
    g->matmul_eff.x[0] = 1e9;
    g->matmul_eff.y[0] = 0.5;
    sc->training.seq_len = 32;
    sc->training.micro_batch = 1;
}

/* Llama-style: 2 layers, hidden 64, 4 heads of 16 (no GQA), SwiGLU MLP of 128, RMSNorm,
 * RoPE, no biases, untied vocabulary of 256 (a multiple of 128 x tp for tp <= 2, so
 * Megatron's padding leaves it alone). */
static inline model_spec tiny_llama(void)
{
    return (model_spec){.name = "tiny-llama", .layers = 2, .hidden = 64, .heads = 4,
                        .kv_heads = 4, .head_dim = 16, .ffn = 128, .vocab = 256,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE};
}

/* The plan of `sc` (with its trace when `with_trace`), or NULL after printing why it could
 * not be made: the tests then fail on the NULL. */
static inline plan *tiny_plan(const plan_scenario *sc, bool with_trace)
{
    plan *p = NULL;
    sim_diag diag = {0};
    if (plan_create(sc, &(plan_options){.with_trace = with_trace}, &p, &diag) != 0) {
        sim_diag_print(&diag, stderr);
        return NULL;
    }
    return p;
}

#endif
