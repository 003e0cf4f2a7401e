/* Shared by `stepsim report`'s terminal, CSV (report.c) and HTML (report_html.c) views. */
#ifndef SIM_CLI_REPORT_INTERNAL_H
#define SIM_CLI_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/scenario.h"
#include "replay/results.h"
#include "results/h5read.h"

#define N_CAUSES REPLAY_CAUSE_COUNT
#define N_GROUPS PLAN_GROUP_COUNT

typedef struct run_row {
    char *name, *status, *error, *binding;
    int32_t gpus;
    double step_time_s, tokens_per_s, mfu, bubble_fraction;
    int64_t peak_mem_bytes, capacity_bytes;
    double bubble[N_CAUSES];
    double exposed[N_GROUPS];
    double budget[5]; /* tokens, steps, time_to_train_s, gpu_hours, cost */
    char *label;      /* a sweep's or plan's run by the axes that vary, else its name */
} run_row;

/* Whether a run was listed (it fits or not, timed or not) and whether it was replayed. */
bool cli__report_listed(const run_row *r);
bool cli__report_completed(const run_row *r);

/* report_html.c: the runs (sorted as the table shows them) of results file `in` as one
 * self-contained HTML page at `out`: summary, verdicts, timeline, memory and sweep figures as
 * inline SVG, the inputs. Returns 0 or an exit code (message printed). */
int cli__report_html(results_h5r_file *f, const char *in, const run_row *runs, size_t n,
                     const char *out);

#endif
