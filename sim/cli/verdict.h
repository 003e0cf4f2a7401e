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
} cli_verdict_input;

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
