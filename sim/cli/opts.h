/* The option reader every sub-command uses: each declares its options and positional
 * arguments in a table, and cli_opts_parse reads argv[2..] against it (docs/cli.md).
 *
 * Accepted: `-h`/`--help` (prints the command's usage on stdout), `--opt VALUE`,
 * `--opt=VALUE` (long names only), a short alias in place of the long name (`-o FILE`), an
 * option's value taken from the next argument whatever it looks like. Options may come
 * before, between or after the positional arguments; a later occurrence of a single-valued
 * option replaces the earlier one. Any problem (an unknown option, a missing or bad value,
 * a missing or unexpected argument) is one `OPTION: error: ...` or `stepsim: error: ...`
 * line with the hint `  see \`stepsim CMD --help\``, and nothing is parsed further. */
#ifndef SIM_CLI_OPTS_H
#define SIM_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"

/* What cli_opts_parse returns after printing the usage for -h/--help (exit 0). */
#define CLI_OPTS_HELP (-1)

typedef enum cli_opt_kind {
    CLI_OPT_FLAG,   /* no value; sets a bool to true */
    CLI_OPT_STRING, /* const char *, as given */
    CLI_OPT_INT,    /* int from min to max (decimal) */
    CLI_OPT_BYTES,  /* int64_t > 0: a size such as 8, 1MiB, 8GiB (input_parse_bytes) */
    CLI_OPT_REAL,   /* double > 0 */
    CLI_OPT_LIST,   /* repeatable, one value each time: appended to a cli_list */
    CLI_OPT_PAIRS,  /* repeatable, two values each time: both appended to a cli_list */
} cli_opt_kind;

/* Where a repeatable option's values go: pointers into argv, in the order given. */
typedef struct cli_list {
    const char **v;
    size_t n;
} cli_list;

typedef struct cli_opt {
    const char *name;    /* "--steps" */
    const char *alias;   /* "-o", or NULL */
    cli_opt_kind kind;
    const char *metavar; /* the value as the usage names it ("N", "A B"); NULL for a flag */
    size_t offset;       /* of the destination in the command's argument struct */
    int64_t min, max;    /* CLI_OPT_INT: the range */
    bool required;       /* "missing -o OUT.h5" when absent */
    /* A flag left out of the command line a results file records (cli_command_line): it
     * changes nothing in the file (--resume, --progress, the verification switches). */
    bool unrecorded;
} cli_opt;

/* A positional argument; each is required. */
typedef struct cli_arg {
    const char *name; /* "SCENARIO.yaml" */
    size_t offset;    /* of a const char * in the command's argument struct */
} cli_arg;

/* A command's options and positional arguments, in the order they are filled. */
typedef struct cli_spec {
    const cli_opt *opts;
    size_t n_opts;
    const cli_arg *args;
    size_t n_args;
} cli_spec;

/* Reads argv[2..argc) of command `cmd` (argv[1]) into `out`, the command's argument struct
 * the offsets point into; destinations of options not given keep their values (the
 * defaults). Returns 0, CLI_OPTS_HELP, or CLI_EXIT_INVALID with the error printed. Call
 * cli_opts_free afterwards whatever it returned. */
int cli_opts_parse(const cli_command *cmd, const cli_spec *spec, int argc, char **argv,
                   void *out);

/* Parses into `args` (as cli_opts_parse), runs `body(args, argc, argv)` when that succeeded,
 * frees the option lists afterwards and returns the exit code (0 after --help). */
int cli_opts_run(const cli_command *cmd, const cli_spec *spec, int argc, char **argv, void *args,
                 int (*body)(void *args, int argc, char **argv));

/* Frees the lists of `out`'s repeatable options. */
void cli_opts_free(const cli_spec *spec, void *out);

/* "stepsim" and argv[1..) joined by spaces, the command line a results file records,
 * without the arguments that are the long name of an unrecorded flag of `spec`; truncated
 * to `size` bytes. */
void cli_command_line(const cli_spec *spec, int argc, char **argv, char *buf, size_t size);

#endif
