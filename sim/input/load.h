/* The scenario loader: YAML files plus `--set KEY=VALUE` overrides in, a validated
 * plan_scenario out, or exactly one error with its FILE:LINE:COL (docs/cli.md,
 * docs/scenario-format.md).
 *
 * Steps: parse the scenario file; apply the overrides in order (a path through a reference
 * such as `topology.gpu.memory` loads the referenced file first, so that its keys can be
 * overridden); load the references that remain (`topology`, `model`, and the topology's `gpu`)
 * and inline them into the tree, each node keeping its own file and position; fill the
 * scenario through the schema (keys.c); fill dependent defaults and run the cross-field
 * checks (validate.c); emit the resolved tree as YAML. The format is documented in
 * docs/scenario-format.md. */
#ifndef SIM_INPUT_LOAD_H
#define SIM_INPUT_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"
#include "plan/scenario.h"

/* One file read while loading. `path` is the path as shown in messages; `hash` is the 16 hex
 * digits (lowercase) of the 64-bit FNV-1a hash of the file's bytes. */
typedef struct input_input_file {
    char *path;
    char hash[17];
} input_input_file;

typedef struct input_scenario_info {
    char *resolved_yaml; /* the scenario with references inlined and --set applied, as YAML
                            text; keys in file order, overridden keys in place, added keys
                            last in their mapping */
    size_t n_inputs;
    input_input_file *inputs; /* every file read, in the order read (each once) */
    char *notes; /* what loading noticed that the user should know, as "FILE: note: ..."
                    lines (a Hugging Face config.json's ignored fields), or NULL */
} input_scenario_info;

/* Loads the scenario file `path` with the overrides sets[0..n_sets) ("KEY=VALUE", applied in
 * order, so the last one of a key wins) into *out. On success, when info_out is not NULL,
 * *info_out receives a new input_scenario_info the caller frees with input_scenario_info_destroy.
 * Returns 0; SIM_EINVAL for invalid input; SIM_ENOENT when the scenario or a referenced file
 * does not exist; SIM_ENOTSUP for a value whose feature is not built yet. On error `diag` holds
 * the one error (file as the user named it, 1-based line and column of the offending key or
 * value; "--set KEY=VALUE" and no position for an override) and *out and *info_out are left
 * untouched. `diag` may be NULL. Relative references resolve against the directory of the file
 * that names them (the current directory for override values); bare names against the data
 * directories (environment STEPSIM_DATA_DIR, then the source tree, then the install prefix). */
int input_scenario_load(const char *path, const char *const *sets, size_t n_sets,
                        plan_scenario *out, input_scenario_info **info_out, sim_diag *diag);

/* Which part of loading failed: the input itself (a file, YAML, a key, a value's type or
 * unit: the user must fix what they wrote) or only the cross-field checks of valid values
 * (dp x tp x pp x cp > GPUs, tp not dividing the heads, ...: a combination that does not
 * work, which a sweep records as a skipped run). */
typedef enum input_load_stage { INPUT_LOAD_INPUT, INPUT_LOAD_CHECKS } input_load_stage;

/* What the commands that build a run add to the loader's checks (docs/cli.md, "Memory
 * budget"); {0} adds nothing. */
typedef struct input_load_options {
    int steps;               /* > 0: the steps the run will take (--steps), for the horizon */
    double max_memory_bytes; /* > 0: refuse a run whose estimated memory is above it */
    bool no_op_sharing;      /* --no-op-sharing: the estimate generates every rank */
    bool plan_only;          /* the budget is for planning alone (`stepsim mem`): no replay */
} input_load_options;

/* input_scenario_load, also telling (when `stage` is not NULL) which stage failed. */
int input_scenario_load_ex(const char *path, const char *const *sets, size_t n_sets,
                        plan_scenario *out, input_scenario_info **info_out, sim_diag *diag,
                        input_load_stage *stage);

/* input_scenario_load_ex with the run's options `opt` (NULL: none). Every load, with or
 * without options, refuses at the offending key a scenario whose estimated work stepsim
 * cannot represent (plan/estimate.h: ops one GPU cannot index, simulated time past the
 * horizon); with opt->max_memory_bytes also one estimated above that budget (the stage is
 * then INPUT_LOAD_CHECKS). */
int input_scenario_load_opts(const char *path, const char *const *sets, size_t n_sets,
                             const input_load_options *opt, plan_scenario *out,
                             input_scenario_info **info_out, sim_diag *diag,
                             input_load_stage *stage);

/* Loads a topology file on its own (`stepsim topo`), with the overrides sets[0..n_sets)
 * whose keys are relative to the topology ("nodes=64", "node.nics.count=4", "gpu.memory=40
 * GiB"), into *out: the same keys, defaults and checks as a scenario's `topology`, and its
 * `gpu` reference resolved the same way. Messages name keys as in a scenario
 * ("topology.nodes: ..."). Returns 0, SIM_EINVAL, SIM_ENOENT or SIM_ENOTSUP with `diag`
 * filled as input_scenario_load does; *out is left untouched on error. `diag` may be NULL. */
/* input_topology_load of a reference as a scenario's `topology:` takes it: a path, or a
 * catalog name looked up in the data directories. */
int input_topology_load_ref(const char *ref, hw_topology_spec *out, sim_diag *diag);

int input_topology_load(const char *path, const char *const *sets, size_t n_sets,
                     hw_topology_spec *out, sim_diag *diag);
/* input_topology_load refusing, at topology.nodes, a topology whose graph is estimated
 * (plan_estimate_topology_bytes) above `max_bytes` (> 0; 0 = no budget). */
int input_topology_load_budget(const char *path, const char *const *sets, size_t n_sets,
                               double max_bytes, hw_topology_spec *out, sim_diag *diag);

/* Frees an info and everything it owns. NULL is a no-op. */
void input_scenario_info_destroy(input_scenario_info *info);

#endif
