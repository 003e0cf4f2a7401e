/* The scenario's key tables (DESIGN.md §7; reference in docs/scenario-format.md) and the
 * checks that span several keys, implemented in keys.c, explicit.c and validate.c. Private
 * to sim/io: the loader (load.c) is the only user. */
#ifndef SIM_IO_KEYS_H
#define SIM_IO_KEYS_H

#include "io/schema.h"
#include "plan/scenario.h"

/* The schema of a whole scenario file, with topology (and its GPU entry) and model inlined.
 * Static table; cannot fail. */
const io_map *io__scenario_schema(void);

/* The schema of a topology mapping (the value of a scenario's `topology`). Static table;
 * cannot fail. */
const io_map *io__topology_schema(void);

/* Sets the topology's loader defaults and marks the ones that depend on other keys (part of
 * io__scenario_prefill, for io_topology_load). Cannot fail. */
void io__topology_prefill(hw_topology_spec *t);

/* After io_schema_apply of a topology: the dependent defaults (a missing name becomes the
 * stem of the file the topology was read from, else `default_name` when not NULL; the GPU's
 * name likewise from its file; latencies, PCIe generation and lanes) and the cross-key
 * checks, on a tree `root` that holds the topology at key "topology" (part of
 * io__scenario_finish). Returns 0, SIM_EINVAL or SIM_ENOTSUP (ctx->diag filled). */
int io__topology_finish(const io_ynode *root, const char *default_name, hw_topology_spec *t,
                        io_schema_ctx *ctx);

/* Sets what plan_scenario_defaults leaves zero (topology and model) to the loader's defaults,
 * and marks the defaults that depend on other keys (latencies, kv_heads, head_dim, PCIe) so
 * that io__scenario_finish can fill them. Call before io_schema_apply. Cannot fail. */
void io__scenario_prefill(plan_scenario *sc);

/* After io_schema_apply: fills the dependent defaults (name from `default_name` when the
 * scenario has none, model and topology names from their files, latencies by link kind,
 * kv_heads, head_dim, PCIe generation) and checks everything that involves more than one key,
 * reporting at the most relevant key or value of the tree `root`. Returns 0, SIM_EINVAL or
 * SIM_ENOTSUP (ctx->diag filled). */
int io__scenario_finish(const io_ynode *root, const char *default_name, plan_scenario *sc,
                        io_schema_ctx *ctx);

/* "Not given" for times where 0 is a valid value (filled by a default later). */
#define IO__UNSET_TIME ((sim_time)-1)

/* Names of device kinds and link classes in the explicit form (keys.c), terminated by
 * {NULL}. */
extern const io_enum_name io__dev_kind_names[];

/* The file stem of a path ("topologies/dgx-h100.yaml" -> "dgx-h100") into buf (size > 0),
 * truncated to fit: the default name of a scenario, topology or model. Pure. */
void io__file_stem(const char *path, char *buf, size_t size);
extern const io_enum_name io__link_class_names[];

/* The explicit topology form (explicit.c). io__devices_fn and io__links_fn are the custom
 * readers of `topology.devices` and `topology.links` (io_key_fn contract; they leave link
 * ends unresolved). io__topology_check is the topology mapping's check (io_map_check_fn
 * contract): it rejects a mix of the parametric and explicit forms, requires `node` in the
 * parametric one, and in the explicit one resolves link ends to device indices, fills the
 * link classes and latencies that depend on the ends, checks that every GPU is on a link,
 * and sets nodes and gpus_per_node from the GPUs' node numbers. */
int io__devices_fn(const io_key *key, const io_ynode *v, void *base, io_schema_ctx *ctx);
int io__links_fn(const io_key *key, const io_ynode *v, void *base, io_schema_ctx *ctx);
int io__topology_check(const io_ynode *node, const io_ynode *parent_key, void *base,
                       io_schema_ctx *ctx);

#endif
