/* Shared pieces of the stepsim sub-commands. */
#ifndef SIM_CLI_CLI_H
#define SIM_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_INVALID 2

/* A sub-command: one row of main.c's cli_commands[], from which `stepsim --help`, `stepsim
 * help NAME`, `stepsim NAME --help`, the unknown-command hint and the dispatch all come. */
typedef struct cli_command {
    const char *name;    /* "run" */
    const char *args;    /* its main argument in the command list ("SCENARIO.yaml"), or "" */
    const char *summary; /* one line for the command list */
    const char *usage;   /* the full usage text (`stepsim help NAME`, `stepsim NAME --help`) */
    /* Runs the command on the whole argv (argv[1] is its name); returns the exit code. */
    int (*run)(const struct cli_command *cmd, int argc, char **argv);
} cli_command;

/* Prints `WHAT: error: MSG 'ARG'` (ARG may be NULL) and an optional hint line; returns
 * CLI_EXIT_INVALID. */
int cli_invalid(const char *what, const char *msg, const char *arg, const char *hint);
/* A duration for people: "3.2 s", "4.5 min", "6.0 h", "12.3 days"; "-" when not finite. */
void cli_fmt_duration(char *buf, size_t n, double s);

/* The exit code of a failed read or write of a user's file (docs/cli.md): bad content
 * (SIM_EINVAL, SIM_ENOTSUP), a missing file (SIM_ENOENT) or one that cannot be read or
 * written (SIM_EIO: a corrupt file, an unwritable place, a full disk) is 2; anything else
 * is internal, 1. */
int cli_exit_of(int rc);

/* The memory budget of a run (docs/cli.md, "Memory budget"): `given` bytes when > 0
 * (--max-memory), else 80% of the memory this process may use: physical memory, or the
 * address-space limit or the cgroup's memory.max when lower (0 = no budget when none of
 * them can be read). */
double cli_memory_budget(int64_t given);

/* Wall-clock seconds on the monotonic clock, for progress lines and the timing figures
 * printed on stderr; never part of a result. */
double cli_wall_s(void);

/* The sub-commands outside main.c (each reads its options with cli_opts_parse). */
int cli_topo(const cli_command *cmd, int argc, char **argv);
int cli_import(const cli_command *cmd, int argc, char **argv);
int cli_export_csv(const cli_command *cmd, int argc, char **argv);

/* export.c: the run a command on a results file works on: `want` (--run), or the file's only
 * run; an invalid-input exit code (message printed) when there is none such. */
struct results_h5r_file;
/* Opens results file `path` for reading after walking it for damage libhdf5 could crash
 * on. `diag` is the caller's and must outlive the file: the reader reports later failures
 * into it. On failure prints the error and returns the exit code (0 and *f otherwise). */
struct sim_diag;
int cli_results_open(const char *path, struct results_h5r_file **f, struct sim_diag *diag);
int cli_pick_run(struct results_h5r_file *f, const char *path, const char *want,
                 const char **run);
int cli_bench_coll(const cli_command *cmd, int argc, char **argv);
/* `stepsim bench`: the engine floor and the reference scenarios. */
int cli_bench(const cli_command *cmd, int argc, char **argv);
int cli_export_perfetto(const cli_command *cmd, int argc, char **argv);
int cli_report(const cli_command *cmd, int argc, char **argv);
/* Prints the report of results file `path` (table, or CSV); returns the exit code. */
int cli_report_file(const char *path, bool csv);
/* ... or, with `html` not NULL, as one self-contained HTML page written there. */
int cli_report_file_as(const char *path, bool csv, const char *html);
/* The validated error of stepsim's predictions (docs/validation.md): of step time
 * (`timing`) or of memory only, as one summary line; with the run's scenario `sc` the
 * tables of its kind (FSDP: torchtitan; A100: Megatron-LM; H100: NeMo and Megatron-Core),
 * or that none validates it (another GPU, PCIe nodes, MoE, offload, LoRA, sequences past
 * the published ones); NULL: every table. */
struct plan_scenario;
void cli_print_accuracy(FILE *f, bool timing, const struct plan_scenario *sc);
/* The first `gpus` GPUs of the scenario's cluster in words: "8 x H100-SXM", or on a mixed
 * cluster each model's count in node order, consecutive groups of one model merged
 * ("16 x H100-SXM + 8 x A100-SXM-80GB"). */
void cli_cluster_text(const struct plan_scenario *sc, int gpus, char *buf, size_t size);

int cli_sweep(const cli_command *cmd, int argc, char **argv);
int cli_plan(const cli_command *cmd, int argc, char **argv);
int cli_advise(const cli_command *cmd, int argc, char **argv);

#endif
