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

/* The `verdict` object of `run --json` and `mem --json` (docs/json.md): filled by the
 * commands that check remedies (cli/verdict.h), printed after binding_constraint. */
#define RESULTS_REMEDY_CHANGES_MAX 12

typedef struct results_remedy {
    int n_changes;
    char key[RESULTS_REMEDY_CHANGES_MAX][48];   /* dotted scenario keys, as --set takes them */
    char value[RESULTS_REMEDY_CHANGES_MAX][48];
    int64_t peak_mem_bytes, headroom_bytes;
    int gpus;           /* the GPUs the remedied job uses */
    double step_time_s; /* NaN when not replayed (mem): printed as null */
    char why[512];
} results_remedy;

typedef enum results_bottleneck {
    RESULTS_BOTTLENECK_COMPUTE,
    RESULTS_BOTTLENECK_EXPOSED_COMM,
    RESULTS_BOTTLENECK_BUBBLES,
    RESULTS_BOTTLENECK_OFFLOAD,
    RESULTS_BOTTLENECK_HOST,
    RESULTS_BOTTLENECK_COUNT
} results_bottleneck;

const char *results_bottleneck_name(results_bottleneck b); /* "compute", "exposed_comm", ... */

typedef struct results_verdict {
    bool oom;
    int64_t capacity_bytes, headroom_bytes; /* headroom < 0 when oom */
    bool has_binding;                       /* false: "binding": null (the run fits) */
    bool binding_host;                      /* the node's host memory binds, not a category */
    plan_mem_cat binding;
    int64_t binding_bytes;
    char binding_why[256];
    bool has_bottleneck;                    /* false: "bottleneck": null (mem) */
    results_bottleneck bottleneck;
    int bottleneck_group;                   /* a plan_group_class, or -1: null */
    double bottleneck_share;
    size_t n_remedies;
    results_remedy *remedies;               /* borrowed */
} results_verdict;

/* The binding item's name: a memory category's, or "host" (docs/json.md, verdict.binding). */
const char *results_verdict_item(const results_verdict *v);

/* Prints the run's JSON object (the keys of docs/json.md) on one line followed by '\n'. Reads
 * `r->summary` only; `r` stays owned by the caller. A non-finite number in the summary, other
 * than the NaN of a figure not timed, is a broken invariant (SIM_ASSERT). Write errors are
 * left in `out`'s error indicator for the caller to check (ferror). */
void results_json_write_run(FILE *out, const replay_results *r);

/* results_json_write_run with the `verdict` object last (`run --json`); `v` NULL: none. */
void results_json_write_run_verdict(FILE *out, const replay_results *r,
                                    const results_verdict *v);

/* Prints the memory-only object of `stepsim mem --json`: name, status, error, gpus,
 * peak_mem_bytes, mem_bytes, capacity_bytes, binding_constraint and, when `v` is not NULL,
 * verdict; one line and '\n'.
 * Same conventions and error behaviour as results_json_write_run. */
void results_json_write_mem(FILE *out, const replay_summary *s, const results_verdict *v);

/* One JSON string (quoted, escaped as above) and one finite number (shortest form that
 * reads back to the same double), for other JSON writers (export-perfetto). */
void results_json_string(FILE *out, const char *s);
void results_json_number(FILE *out, double v);

#endif
