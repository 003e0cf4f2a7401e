/* JSON output of run results: the `--json` objects of docs/json.md (a contract).
 *
 * Each object is printed on one line, keys in a fixed order, SI units. Doubles are printed
 * in the shortest form that reads back to the same value (at most 17 significant digits),
 * integers as integers, strings escaped per RFC 8259 (control characters as \u00XX, invalid
 * UTF-8 bytes replaced by U+FFFD). A summary whose error is "" prints `"error": null`; a
 * NULL binding constraint prints `"binding_constraint": null`. Every key is printed whatever
 * the status, so skipped and error runs give objects of the same shape. The figures only a
 * replay gives (step_time_s through comm_bytes_per_gpu) print as null when the summary holds
 * NaN there: a run recorded without a replay (replay_summary_untimed). The keys and their meaning are listed in
 * docs/json.md. */
#ifndef SIM_RESULTS_JSON_H
#define SIM_RESULTS_JSON_H

#include <stdio.h>

#include "replay/results.h"

/* Prints the run's JSON object (the keys of docs/json.md) on one line followed by '\n'. Reads
 * `r->summary` only; `r` stays owned by the caller. A non-finite number in the summary, other
 * than the NaN of a figure not timed, is a broken invariant (SIM_ASSERT). Write errors are
 * left in `out`'s error indicator for the caller to check (ferror). */
void results_json_write_run(FILE *out, const replay_results *r);

/* Prints the memory-only object of `stepsim mem --json`: name, status, error, gpus,
 * peak_mem_bytes, mem_bytes, capacity_bytes, binding_constraint; one line and '\n'.
 * Same conventions and error behaviour as results_json_write_run. */
void results_json_write_mem(FILE *out, const replay_summary *s);

/* One JSON string (quoted, escaped as above) and one finite number (shortest form that
 * reads back to the same double), for other JSON writers (export-perfetto). */
void results_json_string(FILE *out, const char *s);
void results_json_number(FILE *out, double v);

#endif
