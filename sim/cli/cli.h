/* Shared pieces of the stepsim sub-commands. */
#ifndef SIM_CLI_CLI_H
#define SIM_CLI_CLI_H

#define CLI_EXIT_INVALID 2

/* Prints `WHAT: error: MSG 'ARG'` (ARG may be NULL) and an optional hint line; returns
 * CLI_EXIT_INVALID. */
int cli_invalid(const char *what, const char *msg, const char *arg, const char *hint);

/* `stepsim topo` and `stepsim bench-coll`: return the exit code. */
int cli_topo(int argc, char **argv);
int cli_bench_coll(int argc, char **argv);
int cli_export_perfetto(int argc, char **argv);
int cli_report(int argc, char **argv);

#endif
