/* The scenario's key tables (reference: docs/scenario-format.md) and the
 * checks that span several keys, implemented in keys.c, explicit.c and validate.c. Private
 * to sim/input: the loader (load.c) is the only user. */
#ifndef SIM_INPUT_KEYS_H
#define SIM_INPUT_KEYS_H

#include "input/load.h"
#include "input/schema.h"
#include "plan/scenario.h"

/* The schema of a whole scenario file, with topology (and its GPU entry) and model inlined.
 * Static table; cannot fail. */
const input_map *input__scenario_schema(void);

/* The schema of a topology mapping (the value of a scenario's `topology`). Static table;
 * cannot fail. */
const input_map *input__topology_schema(void);

/* Sets the topology's loader defaults and marks the ones that depend on other keys (part of
 * input__scenario_prefill, for input_topology_load). Cannot fail. */
void input__topology_prefill(hw_topology_spec *t);

/* After input_schema_apply of a topology: the dependent defaults (a missing name becomes the
 * stem of the file the topology was read from, else `default_name` when not NULL; the GPU's
 * name likewise from its file; latencies, PCIe generation and lanes) and the cross-key
 * checks, on a tree `root` that holds the topology at key "topology" (part of
 * input__scenario_finish). Returns 0, SIM_EINVAL or SIM_ENOTSUP (ctx->diag filled). */
int input__topology_finish(const input_ynode *root, const char *default_name, hw_topology_spec *t,
                        input_schema_ctx *ctx);

/* Sets what plan_scenario_defaults leaves zero (topology and model) to the loader's defaults,
 * and marks the defaults that depend on other keys (latencies, kv_heads, head_dim, PCIe) so
 * that input__scenario_finish can fill them. Call before input_schema_apply. Cannot fail. */
void input__scenario_prefill(plan_scenario *sc);

/* After input_schema_apply: fills the dependent defaults (name from `default_name` when the
 * scenario has none, model and topology names from their files, latencies by link kind,
 * kv_heads, head_dim, PCIe generation) and checks everything that involves more than one key,
 * reporting at the most relevant key or value of the tree `root`. Returns 0, SIM_EINVAL or
 * SIM_ENOTSUP (ctx->diag filled). */
int input__scenario_finish(const input_ynode *root, const char *default_name, plan_scenario *sc,
                        input_schema_ctx *ctx);

/* budget.c. After input__scenario_finish: refuses, at the key to change, a scenario whose
 * estimated work (plan/estimate.h) stepsim cannot represent or that exceeds opt's memory
 * budget (opt may be NULL). Returns 0 or SIM_EINVAL (ctx->diag filled). */
int input__check_work(const input_ynode *root, const plan_scenario *sc,
                      const input_load_options *opt, input_schema_ctx *ctx);
/* Refuses, at topology.nodes, a topology whose graph is estimated above `max_bytes` (> 0).
 * Returns 0 or SIM_EINVAL (ctx->diag filled). */
int input__check_topology_budget(const input_ynode *root, const hw_topology_spec *t,
                                 double max_bytes, input_schema_ctx *ctx);

/* "Not given" for times where 0 is a valid value (filled by a default later). */
#define INPUT__UNSET_TIME ((sim_time)-1)

/* Names of device kinds and link classes in the explicit form (keys.c), terminated by
 * {NULL}. */
extern const input_enum_name input__dev_kind_names[];

/* The file stem of a path ("topologies/dgx-h100.yaml" -> "dgx-h100") into buf (size > 0),
 * truncated to fit: the default name of a scenario, topology or model. Pure. */
void input__file_stem(const char *path, char *buf, size_t size);

/* validate.c: the value at `path` if given (present, not null), else NULL; where to report
 * (the value at `value_path` if given, else the key `key_path`, else the root). */
const input_ynode *input__given(const input_ynode *root, const char *path);
const input_ynode *input__locate(const input_ynode *root, const char *value_path,
                                 const char *key_path);

/* options.c: the checks across one strategy's options (parallel.fsdp, simulation.stragglers
 * and jitter, parallel.offload.params). Returns 0, SIM_EINVAL or SIM_ENOTSUP. */
int input__check_parallel_options(const input_ynode *root, const plan_scenario *sc,
                                  input_schema_ctx *ctx);
extern const input_enum_name input__link_class_names[];

/* v as a list, or NULL with an error (`PATH: expected a list such as EXAMPLE`) in *rc. */
const input_ynode *input__expect_list(input_schema_ctx *ctx, const input_ynode *v,
                                      const char *example, int *rc);
/* simulation.stragglers (options.c): [{ranks: [i, ...], slowdown: x}, ...]. */
int input__stragglers_fn(const input_key *key, const input_ynode *v, void *base,
                         input_schema_ctx *ctx);

/* topology.node_groups (node_groups.c): the key's own check (a list of 1 to
 * HW_NODE_GROUPS_MAX mappings) and, once the topology's own keys are read, each group applied
 * onto a copy of the topology with input__node_group_schema (nodes, gpu, node); then
 * input__node_groups_finish fills each group's defaults and checks it, as the topology's. */
int input__node_groups_fn(const input_key *key, const input_ynode *v, void *base,
                          input_schema_ctx *ctx);
const input_map *input__node_group_schema(void);
int input__node_groups_apply(const input_ynode *topo, hw_topology_spec *t, input_schema_ctx *ctx);
int input__node_groups_finish(const input_ynode *root, hw_topology_spec *t,
                              input_schema_ctx *ctx);
/* hf.c: a Hugging Face config.json mapping `cfg` as a stepsim model mapping named `name`
 * (*out, in arena a; positions stay the config's), with what was not used in `notes` (empty
 * when all was). Returns 0, or an error at the offending field (an unknown model_type, a
 * field whose effect stepsim does not model: SIM_ENOTSUP). */
int input__hf_model(input_yarena *a, const input_ynode *cfg, const char *name, input_ynode **out,
                    char *notes, size_t notes_size, sim_diag *diag);

/* The node defaults the loader fills once a node is read (validate.c): intra latency, the
 * GPUs' PCIe links, NIC latency. */
void input__node_defaults(hw_topology_spec *t);

/* The explicit topology form (explicit.c). input__devices_fn and input__links_fn are the custom
 * readers of `topology.devices` and `topology.links` (input_key_fn contract; they leave link
 * ends unresolved). input__topology_check is the topology mapping's check (input_map_check_fn
 * contract): it rejects a mix of the parametric and explicit forms, requires `node` in the
 * parametric one, and in the explicit one resolves link ends to device indices, fills the
 * link classes and latencies that depend on the ends, checks that every GPU is on a link,
 * and sets nodes and gpus_per_node from the GPUs' node numbers. */
int input__devices_fn(const input_key *key, const input_ynode *v, void *base,
                      input_schema_ctx *ctx);
int input__links_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx);
int input__topology_check(const input_ynode *node, const input_ynode *parent_key, void *base,
                       input_schema_ctx *ctx);

#endif
