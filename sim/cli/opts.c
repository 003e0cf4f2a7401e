/* The table-driven option reader of the stepsim sub-commands (opts.h). */
#include "core/sim.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/resource.h>
#include <unistd.h>

#include "cli/opts.h"
#include "input/suggest.h"
#include "input/units.h"

/* Prints one error line, `WHAT: error: MSG`, and the hint to the command's help; returns
 * CLI_EXIT_INVALID. */
static int fail(const cli_command *cmd, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(const cli_command *cmd, const char *what, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char hint[128];
    snprintf(hint, sizeof hint, "see `stepsim %s --help`", cmd->name);
    return cli_invalid(what, msg, NULL, hint);
}

/* The option named by `arg` (up to `len` characters: a long name before its `=`). */
static const cli_opt *find_opt(const cli_spec *spec, const char *arg, size_t len)
{
    for (size_t k = 0; k < spec->n_opts; k++) {
        const cli_opt *o = &spec->opts[k];
        if ((strlen(o->name) == len && strncmp(o->name, arg, len) == 0) ||
            (o->alias && strlen(o->alias) == len && strncmp(o->alias, arg, len) == 0))
            return o;
    }
    return NULL;
}

static int unknown_opt(const cli_command *cmd, const cli_spec *spec, const char *arg,
                       size_t len)
{
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)SIM_MIN(len, sizeof word - 1), arg);
    const char **names = sim_calloc(spec->n_opts + 1, sizeof *names);
    for (size_t k = 0; k < spec->n_opts; k++)
        names[k] = spec->opts[k].name;
    names[spec->n_opts] = "--help";
    const char *near = input_suggest(word, names, spec->n_opts + 1);
    char mean[96] = "";
    if (near)
        snprintf(mean, sizeof mean, "; did you mean '%s'?", near);
    sim_free(names);
    return fail(cmd, "stepsim", "unknown option '%.*s' for `stepsim %s`%s", (int)len, arg,
                cmd->name, mean);
}

static void append(cli_list *l, const char *v, int argc)
{
    if (!l->v)
        l->v = sim_calloc((size_t)argc + 1, sizeof *l->v); /* every value is an argument */
    l->v[l->n++] = v;
}

/* Checks and stores the value `v` of option `o`, spelt `as` on the command line. */
static int store(const cli_command *cmd, const cli_opt *o, const char *as, const char *v,
                 char *out, int argc)
{
    switch (o->kind) {
    case CLI_OPT_STRING:
        *(const char **)(out + o->offset) = v;
        return 0;
    case CLI_OPT_INT: {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (!*v || *end || errno || n < o->min || n > o->max)
            return fail(cmd, as, "expects an integer from %lld to %lld, got '%s'",
                        (long long)o->min, (long long)o->max, v);
        *(int *)(out + o->offset) = (int)n;
        return 0;
    }
    case CLI_OPT_BYTES: {
        int64_t b;
        if (input_parse_bytes(v, &b) != 0 || b < 1)
            return fail(cmd, as, "expects a positive size such as 8, 1MiB or 8GiB, got '%s'",
                        v);
        *(int64_t *)(out + o->offset) = b;
        return 0;
    }
    case CLI_OPT_REAL: {
        char *end;
        double x = strtod(v, &end);
        if (!*v || *end || !(x > 0) || x == HUGE_VAL)
            return fail(cmd, as, "expects a positive number, got '%s'", v);
        *(double *)(out + o->offset) = x;
        return 0;
    }
    case CLI_OPT_LIST:
    case CLI_OPT_PAIRS:
        append((cli_list *)(void *)(out + o->offset), v, argc);
        return 0;
    case CLI_OPT_FLAG:
        break;
    }
    SIM_ASSERT(false, "option %s: no value to store", o->name);
    return 1;
}

int cli_opts_parse(const cli_command *cmd, const cli_spec *spec, int argc, char **argv,
                   void *out_)
{
    char *out = out_;
    bool *seen = sim_calloc(spec->n_opts + 1, sizeof *seen);
    size_t n_pos = 0;
    int rc = 0;
    bool only_args = false; /* after "--": every argument is positional */
    for (int i = 2; i < argc && rc == 0; i++) {
        const char *arg = argv[i];
        if (!only_args && strcmp(arg, "--") == 0) {
            only_args = true;
            continue;
        }
        if (!only_args && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
            /* the usage text lives apart from the option table (usage.c): keep them together */
            for (size_t k = 0; k < spec->n_opts; k++)
                SIM_ASSERT(strstr(cmd->usage, spec->opts[k].name) != NULL,
                           "the usage of `stepsim %s` does not name its option %s", cmd->name,
                           spec->opts[k].name);
            fputs(cmd->usage, stdout);
            rc = CLI_OPTS_HELP;
            break;
        }
        if (only_args || arg[0] != '-' || arg[1] == '\0') { /* positional ("-" included) */
            if (n_pos == spec->n_args)
                rc = fail(cmd, "stepsim", "unexpected argument '%s' for `stepsim %s`", arg,
                          cmd->name);
            else
                *(const char **)(out + spec->args[n_pos++].offset) = arg;
            continue;
        }
        const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const cli_opt *o = find_opt(spec, arg, len);
        if (!o) {
            rc = unknown_opt(cmd, spec, arg, len);
            break;
        }
        char as[64]; /* the option as spelt, for the messages */
        snprintf(as, sizeof as, "%.*s", (int)SIM_MIN(len, sizeof as - 1), arg);
        seen[o - spec->opts] = true;
        if (o->kind == CLI_OPT_FLAG) {
            if (eq)
                rc = fail(cmd, as, "takes no value");
            else
                *(bool *)(out + o->offset) = true;
            continue;
        }
        int n_values = o->kind == CLI_OPT_PAIRS ? 2 : 1;
        for (int v = 0; v < n_values && rc == 0; v++) {
            const char *value = v == 0 && eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            rc = value ? store(cmd, o, as, value, out, argc)
                       : fail(cmd, as, "expects %s (%s)", n_values == 2 ? "two values" : "a value",
                              o->metavar);
        }
    }
    if (rc == 0 && n_pos < spec->n_args)
        rc = fail(cmd, "stepsim", "missing %s", spec->args[n_pos].name);
    for (size_t k = 0; rc == 0 && k < spec->n_opts; k++) {
        const cli_opt *o = &spec->opts[k];
        if (o->required && !seen[k])
            rc = fail(cmd, "stepsim", "missing %s %s", o->alias ? o->alias : o->name,
                      o->metavar);
    }
    sim_free(seen);
    return rc;
}

void cli_opts_free(const cli_spec *spec, void *out)
{
    for (size_t k = 0; k < spec->n_opts; k++) {
        const cli_opt *o = &spec->opts[k];
        if (o->kind == CLI_OPT_LIST || o->kind == CLI_OPT_PAIRS) {
            cli_list *l = (cli_list *)(void *)((char *)out + o->offset);
            sim_free(l->v);
            *l = (cli_list){0};
        }
    }
}

void cli_command_line(const cli_spec *spec, int argc, char **argv, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "stepsim");
    for (int i = 1; i < argc && len + 2 < size; i++) {
        bool dropped = false;
        for (size_t k = 0; i >= 2 && k < spec->n_opts; k++)
            dropped |= spec->opts[k].unrecorded && strcmp(argv[i], spec->opts[k].name) == 0;
        if (!dropped)
            len += (size_t)snprintf(buf + len, size - len, " %s", argv[i]);
    }
}

int cli_opts_run(const cli_command *cmd, const cli_spec *spec, int argc, char **argv, void *args,
                 int (*body)(void *args, int argc, char **argv))
{
    int rc = cli_opts_parse(cmd, spec, argc, argv, args);
    if (rc == 0)
        rc = body(args, argc, argv);
    cli_opts_free(spec, args);
    return rc == CLI_OPTS_HELP ? 0 : rc;
}

double cli_wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec; /* 1e-9 s per ns */
}

int cli_invalid(const char *what, const char *msg, const char *arg, const char *hint)
{
    if (arg)
        fprintf(stderr, "%s: error: %s '%s'\n", what, msg, arg);
    else
        fprintf(stderr, "%s: error: %s\n", what, msg);
    if (hint)
        fprintf(stderr, "  %s\n", hint);
    return CLI_EXIT_INVALID;
}

int cli_exit_of(int rc)
{
    return rc == SIM_EINVAL || rc == SIM_ENOTSUP || rc == SIM_ENOENT || rc == SIM_EIO
               ? CLI_EXIT_INVALID
               : 1;
}

/* The memory this process may use: physical memory, or less where the address-space limit
 * (ulimit -v) or the cgroup's (a container's memory.max, cgroup v2) says so; 0 if unknown. */
static double memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    double limit = pages > 0 && size > 0 ? (double)pages * (double)size : INFINITY;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        limit = fmin(limit, (double)rl.rlim_cur);
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f) {
        unsigned long long v;
        if (fscanf(f, "%llu", &v) == 1) /* "max" when unlimited */
            limit = fmin(limit, (double)v);
        fclose(f);
    }
    return isfinite(limit) ? limit : 0;
}

double cli_memory_budget(int64_t given)
{
    return given > 0 ? (double)given : 0.8 * memory_limit();
}
