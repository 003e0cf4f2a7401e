/* A small synthetic run result for the tests of sim/results (test_h5.c, write_sample.c): two
 * ranks, two steps, a few timeline, bubble, memory and link rows. The numbers are
 * self-consistent where the contract checks them (mem_bytes sums to peak_mem_bytes,
 * bubble_by_cause sums to bubble_fraction) but come from no real simulation. */
#ifndef STEPSIM_TEST_IO_SAMPLE_H
#define STEPSIM_TEST_IO_SAMPLE_H

#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "replay/results.h"

#define SAMPLE_TIMELINE_ROWS 6
#define SAMPLE_BUBBLE_ROWS 3
#define SAMPLE_MEMORY_ROWS 4
#define SAMPLE_LINK_ROWS 2

static void sample_summary(replay_summary *s, const char *name, replay_status status)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->status = status;
    s->gpus = 2;
    s->steps = 2;
    if (status == REPLAY_STATUS_SKIPPED || status == REPLAY_STATUS_ERROR) {
        snprintf(s->error, sizeof s->error, "dp=3 does not divide the 2 GPUs");
        replay_summary_untimed(s); /* not replayed: no figure of a replay */
        return;
    }
    /* 16 sequences of 2048 tokens in 0.5 s: 65536 tokens/s, 32 samples/s. */
    s->step_time_s = 0.5;
    s->tokens_per_s = 65536.0;
    s->samples_per_s = 32.0;
    s->tflops_per_gpu = 123.25;
    s->mfu = 0.4;
    s->hfu = 0.45;
    s->bubble_fraction = 0.25; /* = 0.125 + 0.0625 + 0.0625 below */
    s->bubble_by_cause[REPLAY_CAUSE_PIPELINE] = 0.125;
    s->bubble_by_cause[REPLAY_CAUSE_DP] = 0.0625;
    s->bubble_by_cause[REPLAY_CAUSE_OTHER] = 0.0625;
    s->exposed_comm_s[PLAN_GROUP_DP] = 0.03125;
    s->comm_bytes_per_gpu[PLAN_GROUP_DP] = 8e9;
    s->comm_bytes_per_gpu[REPLAY_COMM_OFFLOAD] = 1.5e9;
    s->mem_bytes[PLAN_MEM_PARAMS] = 8000000000;
    s->mem_bytes[PLAN_MEM_GRADS] = 4000000000;
    s->mem_bytes[PLAN_MEM_OPTIMIZER] = 6000000000;
    s->mem_bytes[PLAN_MEM_ACTIVATIONS] = 3000000000;
    s->mem_bytes[PLAN_MEM_BUFFERS] = 500000000;
    s->mem_bytes[PLAN_MEM_OTHER] = 123456789;
    for (int c = 0; c < PLAN_MEM_COUNT; c++)
        s->peak_mem_bytes += s->mem_bytes[c];
    s->capacity_bytes = (int64_t)24 << 30;
    s->binding_constraint = status == REPLAY_STATUS_OOM ? "model states" : NULL;
}

/* A results object named `name` (owned by the caller: replay_results_destroy). Skipped and
 * error runs have a summary only. */
static replay_results *sample_results(const char *name, replay_status status)
{
    replay_results *r = replay_results_create();
    sample_summary(&r->summary, name, status);
    if (status == REPLAY_STATUS_SKIPPED || status == REPLAY_STATUS_ERROR)
        return r;

    r->n_ranks = 2;
    r->ranks = sim_calloc(r->n_ranks, sizeof *r->ranks);
    for (int i = 0; i < 2; i++) {
        replay_rank_row *k = &r->ranks[i];
        k->rank = i;
        k->dp = i;
        k->compute_s = 0.375;
        k->comm_s = 0.125;
        k->idle_s = 0.125;
        k->bubble_s = 0.125;
        memcpy(k->mem, r->summary.mem_bytes, sizeof k->mem);
        k->mem[PLAN_MEM_ACTIVATIONS] -= i; /* rank 1 peaks one byte lower */
        for (int c = 0; c < PLAN_MEM_COUNT; c++)
            k->peak_mem_bytes += k->mem[c];
    }

    r->n_steps = 2;
    r->steps = sim_calloc(r->n_steps, sizeof *r->steps);
    r->steps[0] = (replay_step_row){1, 0.0, 0.625};
    r->steps[1] = (replay_step_row){2, 0.625, 1.125};

    r->n_timeline = r->cap_timeline = SAMPLE_TIMELINE_ROWS;
    r->timeline = sim_calloc(r->n_timeline, sizeof *r->timeline);
    for (int i = 0; i < SAMPLE_TIMELINE_ROWS; i++) {
        char opname[64];
        snprintf(opname, sizeof opname, "layer%d.%s", i / 2, i % 2 ? "bwd" : "fwd");
        int comm = i == SAMPLE_TIMELINE_ROWS - 1;
        r->timeline[i] = (replay_timeline_row){
            .rank = i % 2,
            .stream = comm ? "dp" : "compute",
            .kind = comm ? "all_reduce" : "compute",
            .name = replay_results_intern(r, comm ? "grad_allreduce" : opname),
            .layer = comm ? -1 : i / 2,
            .microbatch = comm ? -1 : 0,
            .phase = comm ? "comm" : (i % 2 ? "bwd" : "fwd"),
            .group = comm ? "dp" : "none",
            .step = 1 + i / 3,
            .start_s = 0.125 * i,
            .end_s = 0.125 * i + 0.1,
            .bytes = comm ? 8e9 : 1e6 * (i + 1),
            .flops = comm ? 0.0 : 1e12 * (i + 1),
        };
    }

    r->n_bubbles = r->cap_bubbles = SAMPLE_BUBBLE_ROWS;
    r->bubbles = sim_calloc(r->n_bubbles, sizeof *r->bubbles);
    r->bubbles[0] = (replay_bubble_row){0, 1, 0.0, 0.0625, "pipeline"};
    r->bubbles[1] = (replay_bubble_row){1, 2, 0.75, 0.8125, "dp"};
    r->bubbles[2] = (replay_bubble_row){1, 2, 1.0, 1.0625, "other"};

    r->n_memory = r->cap_memory = SAMPLE_MEMORY_ROWS;
    r->memory = sim_calloc(r->n_memory, sizeof *r->memory);
    r->memory[0] = (replay_memory_row){0, 0.0, "params", 8000000000};
    r->memory[1] = (replay_memory_row){0, 0.25, "activations", 3000000000};
    r->memory[2] = (replay_memory_row){1, 0.0, "params", 8000000000};
    r->memory[3] = (replay_memory_row){1, 0.5, "activations", 0};

    r->n_links = SAMPLE_LINK_ROWS;
    r->links = sim_calloc(r->n_links, sizeof *r->links);
    r->links[0] = (replay_link_row){0, "gpu0", "host", "pcie", 8e9, 0.25, 0.2222};
    r->links[1] = (replay_link_row){1, "host", "gpu1", "pcie", 8e9, 0.25, 0.2222};
    r->events = 1234;
    r->wall_s = 0.01; /* must not reach the file */
    return r;
}

#endif
