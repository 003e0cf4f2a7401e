/* The verdict of `stepsim run` and `stepsim mem` (docs/memory.md, "Verdict"; the `verdict`
 * object of docs/json.md): the headroom, the binding item of an OOM, what limits the step
 * time of a replayed run, and the remedies that were checked — single changes from the
 * ladder (then pairs of the closest when none fits alone), each loaded through the real
 * loader with the command's --set overrides plus its own, planned, and for `run` replayed. */
#ifndef SIM_CLI_VERDICT_H
#define SIM_CLI_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "input/load.h"
#include "plan/plan.h"
#include "replay/results.h"
#include "results/json.h"

/* What the command was given: the scenario file and its overrides, how it was loaded and
 * planned (so that a remedy is built exactly as `--set` would build it). */
typedef struct cli_verdict_input {
    const char *scenario;
    const char *const *sets;
    size_t n_sets;
    input_load_options load;
    int steps; /* --steps, 0 = the scenario's */
    bool no_op_sharing, no_isolated_rounds;
    bool replayed; /* `run`: remedies are replayed for their step time and timeline peak */
    bool no_remedies; /* `replay`: its trace is fixed, no change of the scenario applies */
    bool ladder_order; /* `mem` (replayed under activation offload): remedies in the ladder's
                          order, not the fastest first */
} cli_verdict_input;

/* One configuration checked as `stepsim run|mem SCENARIO --set ...` would check it: loaded
 * through the real loader with the command's overrides and then `changes`, planned, and for
 * `run` (in->replayed) replayed when its memory plan fits and its replay is within the work
 * budget (`untimed` when past it). The remedies of a verdict and the rungs of
 * `stepsim advise` are checked by it. */
typedef struct cli_checked {
    bool valid;        /* loaded and planned */
    bool fits;         /* and fits (replayed: on the replay's timeline) */
    bool untimed;      /* replayed wanted, but past the budget: fits by its memory plan */
    bool over_budget;  /* not checked: planning it was past the work budget left */
    int gpus;          /* the GPUs the job uses (tp·cp·pp·dp) when valid */
    int dp, tp, pp, cp; /* its layout, when valid */
    int64_t walk_peak; /* the plan's program-order peak (what `mem` reports, but under
                          activation offload) */
    plan_mem split;    /* at the peak: the replay's when replayed, else the plan's */
    double step_time_s, tokens_per_s; /* NaN when not replayed */
    /* capacity_bytes; the binding item when it does not fit, the bottleneck when it was
     * replayed and fits */
    results_verdict limit;
    char reason[SIM_DIAG_MSG_MAX]; /* not valid: the loader's or the plan's error, or that
                                      it was past the planning budget */
} cli_checked;

/* The estimated ops spent on checks so far, against verdict.c's work budgets: one budget
 * shared by all the checks of one command. */
typedef struct cli_check_budget {
    double planned, replayed;
    int skipped; /* candidates not checked: past the planning budget */
    int checks;  /* candidates checked (loaded, and planned when valid) */
} cli_check_budget;

/* Appends the change KEY=VALUE (VALUE printed from fmt, as --set takes it) to `r`; asserts
 * there is room (RESULTS_REMEDY_CHANGES_MAX). */
void cli_remedy_set(results_remedy *r, const char *key, const char *fmt, ...);
void cli_remedy_leave_bf16_optimizer(const plan_scenario *sc, results_remedy *r);

void cli_check(const cli_verdict_input *in, int64_t capacity, const results_remedy *changes,
               cli_check_budget *budget, cli_checked *out);

/* Fills `v` from the job's plan `p` and its results `res` (a replay's, or the memory-only
 * ones of `mem`), checking remedies when the peak does not fit. Writes the sentence for
 * `binding_constraint` into `constraint` ("" when it fits): the binding item and the best
 * checked remedy, or that none was found. `v` owns its remedies: cli_verdict_free. */
void cli_verdict_build(const cli_verdict_input *in, const plan *p, const replay_results *res,
                       results_verdict *v, char *constraint, size_t constraint_size);
void cli_verdict_free(results_verdict *v);

/* The verdict's lines of the human summary (binding, headroom, bottleneck, remedies). */
void cli_verdict_print(FILE *f, const results_verdict *v);

#endif
