/* Shared pieces of the stepsim sub-commands. */
#ifndef SIM_CLI_CLI_H
#define SIM_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define CLI_EXIT_INVALID 2

/* Prints `WHAT: error: MSG 'ARG'` (ARG may be NULL) and an optional hint line; returns
 * CLI_EXIT_INVALID. */
int cli_invalid(const char *what, const char *msg, const char *arg, const char *hint);

/* `stepsim topo` and `stepsim bench-coll`: return the exit code. */
int cli_topo(int argc, char **argv);
int cli_bench_coll(int argc, char **argv);
/* `stepsim bench`: the engine floor and the reference scenarios; the exit code. */
int cli_bench(int argc, char **argv);
int cli_export_perfetto(int argc, char **argv);
int cli_report(int argc, char **argv);
/* Prints the report of results file `path` (table, or CSV); returns the exit code. */
int cli_report_file(const char *path, bool csv);
/* The validated error of stepsim's predictions (docs/validation.md): of step time
 * (`timing`) or of memory only, as one summary line; with `gpu` (the catalog name of the
 * run's GPU) the tables of that GPU, or that none validates it; NULL: every table. */
void cli_print_accuracy(FILE *f, bool timing, const char *gpu);

/* `stepsim sweep`: the exit code. */
int cli_sweep(int argc, char **argv);
/* `stepsim plan`: the exit code. */
int cli_plan(int argc, char **argv);

#endif
