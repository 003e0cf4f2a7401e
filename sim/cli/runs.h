/* What `stepsim sweep` and `stepsim plan` share: a list of runs over a base scenario, executed
 * in child processes, serially or under mpirun, and merged into one results file
 * (sweep.c has the machinery; docs/sweeps.md the behaviour). */
#ifndef SIM_CLI_RUNS_H
#define SIM_CLI_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/opts.h"
#include "input/sweep.h"

typedef struct sweep_args {
    const char *file, *out;
    bool resume, json, progress, no_timeline;
    bool timeline; /* sweep: --timeline (full timelines); without it none are kept */
    bool no_op_sharing, no_isolated_rounds; /* verification switches, as for `stepsim run` */
    int steps;
    int64_t max_memory; /* --max-memory; 0 = the default budget */
    int top; /* plan: how many strategies to list */
    int replay_top; /* plan: how many of the screen's best to replay (--replay-top) */
    bool full_replays; /* plan: replay every GPU, not one data-parallel replica */
    const char *headroom; /* plan: --headroom SIZE|FRACTION as given, or NULL (the default) */
    char command[4096];
} sweep_args;

/* The options sweep and plan share: entries of a cli_opt table over sweep_args. --resume,
 * --progress and the verification switches change nothing in the results file, which does
 * not record them. */
#define CLI_RUNS_OPTS(OUT_REQUIRED)                                                         \
    {.name = "--output", .alias = "-o", .kind = CLI_OPT_STRING, .metavar = "OUT.h5",        \
     .required = OUT_REQUIRED, .offset = offsetof(sweep_args, out)},                        \
    {.name = "--resume", .kind = CLI_OPT_FLAG, .unrecorded = true,                          \
     .offset = offsetof(sweep_args, resume)},                                               \
    {.name = "--json", .kind = CLI_OPT_FLAG, .offset = offsetof(sweep_args, json)},         \
    {.name = "--progress", .kind = CLI_OPT_FLAG, .unrecorded = true,                        \
     .offset = offsetof(sweep_args, progress)},                                             \
    {.name = "--steps", .kind = CLI_OPT_INT, .metavar = "N", .min = 1, .max = 1000000,       \
     .offset = offsetof(sweep_args, steps)},                                                \
    {.name = "--no-op-sharing", .kind = CLI_OPT_FLAG, .unrecorded = true,                   \
     .offset = offsetof(sweep_args, no_op_sharing)},                                        \
    {.name = "--no-isolated-rounds", .kind = CLI_OPT_FLAG, .unrecorded = true,              \
     .offset = offsetof(sweep_args, no_isolated_rounds)},                                   \
    {.name = "--max-memory", .kind = CLI_OPT_BYTES, .metavar = "SIZE", .unrecorded = true,   \
     .offset = offsetof(sweep_args, max_memory)}

/* The runs to execute: a sweep's cartesian product, or a plan's candidates. */
typedef struct run_list {
    const char *base;        /* the base scenario's path */
    const char **bases;      /* [run]: its own base scenario, or NULL: every run's is base */
    const char *name;        /* run names are <name>-<index> */
    const char *source;      /* the file the runs come from (an input of the results) */
    const char *text;        /* what defines them, for the resume fingerprint */
    size_t n_runs, n_axes;
    const char **axis_names; /* [axis] */
    const char ***sets;      /* [run]: the overrides of the base */
    size_t *n_sets;          /* [run] */
    const char ***values;    /* [run][axis]: YAML text for /sweep */
    bool prune_oom;          /* plan: an OOM run is recorded without its replay */
    /* plan: an ok run whose peak comes closer to the capacity than this is `tight`: bytes
     * when > 0, else this fraction of the capacity (0: none is) */
    int64_t headroom_bytes;
    double headroom_fraction;
} run_list;

typedef struct sweep_ctx {
    const sweep_args *a;
    input_sweep *sw;
    run_list L;
    char *dir; /* OUT.h5.runs */
    bool scratch; /* OUT.h5 is a temporary of `plan` without -o: no --resume of its runs */
    int rank, size;
    bool mpi;
} sweep_ctx;

/* Runs c->L on every rank (c->a, c->mpi, c->rank, c->size set), then on rank 0 merges
 * OUT.h5 and calls `finish` for the command's own output before removing the runs
 * directory. Returns the exit code (on rank 0; 0 or 1 on the others). */
int cli__runs_execute(sweep_ctx *c, int (*finish)(sweep_ctx *c));
/* Removes a runs directory (OUT.h5.runs) and the files in it; an absent one is a no-op. */
void cli__runs_remove_dir(const char *dir);
/* Prints every run's JSON object (its marker file) in run order; for `finish`. */
void cli__runs_print_json(const sweep_ctx *c);

#endif
