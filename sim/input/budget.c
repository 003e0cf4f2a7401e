/* The run's work against this machine (plan/estimate.h): whether a scenario, or a topology
 * with the model that will run on it, can be simulated in the memory and time at hand, with
 * the key to change when it cannot (docs/performance.md, "Memory estimate"). Split from
 * validate.c's checks of the scenario's own consistency. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "input/keys.h"
#include "plan/estimate.h"

/* Bytes as "12.3 GiB". */
static void gib(char *buf, size_t n, double bytes)
{
    snprintf(buf, n, "%.3g GiB", bytes / (1024.0 * 1024 * 1024));
}

/* Where a figure that grows with the micro-batches, the tokens or the model is reported:
 * global_batch when the step has several micro-batches, else micro_batch, seq_len. */
static const char *size_key(const plan_scenario *sc, const plan_work *w)
{
    if (w->micro_batches > 1)
        return "training.global_batch";
    return sc->training.micro_batch > 1 ? "training.micro_batch" : "training.seq_len";
}

/* The largest number of micro-batches per step, below the scenario's, whose estimate has
 * at most `max_ops` ops per GPU and `max_bytes` bytes (and that the interleaved schedule
 * allows: a multiple of pp); 0 when none does. Re-estimates each candidate, so the advice
 * is what the check would accept. */
static double fitting_micro_batches(const plan_scenario *sc, bool sharing, bool plan_only,
                                    double max_ops, double max_bytes, double A)
{
    plan_scenario *s = sim_calloc(1, sizeof *s);
    *s = *sc;
    const plan_parallel *p = &sc->parallel;
    double step = p->pp > 1 && p->pipeline.virtual_stages > 1 &&
                          p->pipeline.schedule == PLAN_SCHED_INTERLEAVED
                      ? p->pp : 1;
    double per = (double)sc->training.micro_batch * p->dp, found = 0;
    /* halve to a fitting count, then step up by halving increments (the estimate grows
     * with the count) */
    double lo = 0, hi = A;
    for (int i = 0; i < 64 && hi - lo > step; i++) {
        double mid = floor((lo + hi) / 2 / step) * step;
        if (mid <= lo)
            break;
        s->training.global_batch = (int64_t)(mid * per);
        plan_work w;
        plan_estimate_work(s, sharing, &w);
        if (w.ops_per_rank <= max_ops && (plan_only ? w.bytes_plan : w.bytes) <= max_bytes)
            lo = found = mid;
        else
            hi = mid;
    }
    sim_free(s);
    return found;
}

int input__check_work(const input_ynode *root, const plan_scenario *sc,
                      const input_load_options *opt, input_schema_ctx *ctx)
{
    bool sharing = !(opt && opt->no_op_sharing), plan_only = opt && opt->plan_only;
    plan_work w;
    plan_estimate_work(sc, sharing, &w);
    const plan_training *tr = &sc->training;
    double A = w.micro_batches;
    if (w.ops_per_rank > PLAN_OPS_PER_RANK_MAX) {
        const char *key = A > 1 ? "training.global_batch" : "model.layers";
        input_schema_error(ctx, SIM_EINVAL, input__locate(root, key, A > 1 ? "training" : "model"),
                           "%s: one step would be about %.3g ops on one GPU (%.0f micro-batch%s), "
                           "more than the %.3g (2^29) stepsim indexes", key, w.ops_per_rank, A,
                           A == 1 ? "" : "es", PLAN_OPS_PER_RANK_MAX);
        double budget = opt && opt->max_memory_bytes > 0 ? opt->max_memory_bytes : INFINITY;
        double fit = A > 1 ? fitting_micro_batches(sc, sharing, plan_only, PLAN_OPS_PER_RANK_MAX, budget,
                                                   A)
                           : 0;
        if (fit >= 1)
            sim_diag_hint(ctx->diag, "ops grow with the micro-batches per step: global_batch "
                                     "%.0f (%.0f micro-batches) fits",
                          fit * (double)tr->micro_batch * sc->parallel.dp, fit);
        else
            sim_diag_hint(ctx->diag, "split the layers over more pipeline stages "
                                     "(parallel.pp)");
        return SIM_EINVAL;
    }
    int steps = opt && opt->steps > 0 ? opt->steps : sc->simulation.steps;
    double limit = PLAN_RUN_S_MAX;
    if (w.step_s > limit) {
        const char *key = size_key(sc, &w);
        input_schema_error(ctx, SIM_EINVAL, input__locate(root, key, "training"),
                           "%s: one step would take about %.3g s of simulated time (kernels "
                           "%.3g s, communication %.3g s, estimated), past the %.0f s stepsim "
                           "represents in a run", key, w.step_s, w.compute_s, w.comm_s, limit);
        sim_diag_hint(ctx->diag, "simulated time is limited to about 6.7 days per run "
                                 "(docs/scenario-format.md, \"Limits\"); check the sizes and "
                                 "the GPU's and links' rates");
        return SIM_EINVAL;
    }
    if (w.step_s * steps > limit) {
        input_schema_error(ctx, SIM_EINVAL, input__locate(root, "simulation.steps", "simulation"),
                           "simulation.steps: %d steps of about %.3g s of simulated time each "
                           "(estimated) go past the %.0f s stepsim represents in a run", steps,
                           w.step_s, limit);
        sim_diag_hint(ctx->diag, "%.0f steps or fewer fit", fmax(1, floor(limit / w.step_s)));
        return SIM_EINVAL;
    }
    double budget = opt ? opt->max_memory_bytes : 0;
    if (opt && opt->plan_only) /* `mem`: no replay state */
        w.bytes = w.bytes_symmetry = w.bytes_plan;
    if (budget > 0 && w.bytes > budget) {
        char need[32], have[32], sym[32];
        gib(need, sizeof need, w.bytes);
        gib(have, sizeof have, budget);
        gib(sym, sizeof sym, w.bytes_symmetry);
        /* memory grows with the micro-batches per step, else with the model's layers */
        const char *key = A > 1 ? "training.global_batch" : "model";
        input_schema_error(ctx, SIM_EINVAL,
                           A > 1 ? input__locate(root, key, "training") : input__locate(root, NULL, key),
                           "%s: the %s needs about %s (estimated: %.3g ops per step on %.0f "
                           "GPU%s), more than the memory budget of %s", key,
                           plan_only ? "plan" : "run", need, w.ops, w.ranks,
                           w.ranks == 1 ? "" : "s", have);
        const char *either = "";
        if (w.bytes_symmetry < budget) {
            sim_diag_hint(ctx->diag, "--set simulation.symmetry=dp simulates one data-parallel "
                                     "replica in about %s", sym);
            either = "or ";
        }
        double fit = A > 1 ? fitting_micro_batches(sc, sharing, plan_only, PLAN_OPS_PER_RANK_MAX,
                                                   budget, A)
                           : 0;
        if (fit >= 1) {
            sim_diag_hint(ctx->diag, "%sreduce global_batch to %.0f (%.0f micro-batches per "
                                     "step instead of %.0f)", either,
                          fit * (double)tr->micro_batch * sc->parallel.dp, fit, A);
            either = "or ";
        }
        sim_diag_hint(ctx->diag, "%sraise the budget with --max-memory SIZE (default: 80%% "
                                 "of the memory stepsim may use)", either);
        return SIM_EINVAL;
    }
    return 0;
}

int input__check_topology_budget(const input_ynode *root, const hw_topology_spec *t,
                                 double max_bytes, input_schema_ctx *ctx)
{
    double need = plan_estimate_topology_bytes(t);
    if (max_bytes <= 0 || need <= max_bytes)
        return 0;
    char n[32], have[32];
    gib(n, sizeof n, need);
    gib(have, sizeof have, max_bytes);
    input_schema_error(ctx, SIM_EINVAL, input__locate(root, "topology.nodes", "topology"),
                       "topology.nodes: the graph of %.0f GPUs needs about %s, more than the "
                       "memory budget of %s",
                       t->n_devices > 0 ? (double)t->n_devices
                                        : (double)t->nodes * t->gpus_per_node,
                       n, have);
    sim_diag_hint(ctx->diag, "use fewer nodes, or raise the budget with --max-memory SIZE "
                             "(default: 80%% of the memory stepsim may use)");
    return SIM_EINVAL;
}
