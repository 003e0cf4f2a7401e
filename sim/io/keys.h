/* The scenario's key tables (DESIGN.md §7; reference in docs/scenario-format.md) and the
 * checks that span several keys. Private to sim/io: the loader (load.c) is the only user. */
#ifndef SIM_IO_KEYS_H
#define SIM_IO_KEYS_H

#include "io/schema.h"
#include "plan/scenario.h"

/* The schema of a whole scenario file, with topology (and its GPU entry) and model inlined.
 * Static table; cannot fail. */
const io_map *io__scenario_schema(void);

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

#endif
