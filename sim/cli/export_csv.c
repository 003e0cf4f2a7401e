/* `stepsim export-csv OUT.h5 TABLE [--run NAME] [-o OUT.csv]`: one table of a results file
 * (docs/hdf5-schema.md) as RFC 4180 CSV, every column as it is stored, strings as text (no
 * bytes to decode): `/sweep` and `/inputs` of the file, or a run's summary, ranks, timeline,
 * memory, bubbles, links or steps. pandas.read_csv reads it with str columns. */
#include "core/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/output.h"
#include "results/h5read.h"

#define MAX_COLS 160

typedef struct csv_out {
    FILE *f;
    size_t n;
    results_h5r_type types[MAX_COLS];
    size_t rows;
} csv_out;

static void csv_text(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int write_rows(void *ud, void *rows, size_t first, size_t n)
{
    (void)first;
    csv_out *c = ud;
    const char *base = rows;
    for (size_t r = 0; r < n; r++, base += c->n * 8) {
        for (size_t k = 0; k < c->n; k++) {
            const void *cell = base + k * 8;
            if (k)
                fputc(',', c->f);
            switch (c->types[k]) {
            case RESULTS_H5R_I32: fprintf(c->f, "%d", *(const int32_t *)cell); break;
            case RESULTS_H5R_I64: fprintf(c->f, "%lld", (long long)*(const int64_t *)cell); break;
            case RESULTS_H5R_F64: {
                double v = *(const double *)cell;
                if (isfinite(v))
                    fprintf(c->f, "%.17g", v);
                break;
            }
            case RESULTS_H5R_STR: csv_text(c->f, *(char *const *)cell); break;
            }
        }
        fputc('\n', c->f);
    }
    c->rows += n;
    return cli_signal_flag()[0] ? SIM_EINVAL : 0; /* stop: a signal came */
}

typedef struct csv_args {
    const char *in, *table, *run, *out;
} csv_args;

static const cli_opt options[] = {
    {.name = "--run", .kind = CLI_OPT_STRING, .metavar = "NAME",
     .offset = offsetof(csv_args, run)},
    {.name = "--output", .alias = "-o", .kind = CLI_OPT_STRING, .metavar = "OUT.csv",
     .offset = offsetof(csv_args, out)},
};
static const cli_arg args[] = {{.name = "OUT.h5", .offset = offsetof(csv_args, in)},
                               {.name = "TABLE", .offset = offsetof(csv_args, table)}};
static const cli_spec spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options), .args = args,
                              .n_args = SIM_ARRAY_LEN(args)};

static const char *const file_tables[] = {"sweep", "inputs"};
static const char *const run_tables[] = {"summary", "ranks", "timeline", "memory",
                                         "bubbles", "links",   "steps"};

static bool one_of(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static int csv_body(void *parsed, int argc, char **argv)
{
    csv_args *a = parsed;
    (void)argc;
    (void)argv;
    bool file_level = one_of(a->table, file_tables, SIM_ARRAY_LEN(file_tables));
    if (!file_level && !one_of(a->table, run_tables, SIM_ARRAY_LEN(run_tables)))
        return cli_invalid("TABLE", "not a table of a results file", a->table,
                           "sweep, inputs (the file's); summary, ranks, timeline, memory, "
                           "bubbles, links, steps (a run's, --run NAME)");
    const char *inputs[] = {a->in};
    cli_signals_install();
    cli_output_lock lock = {.fd = -1};
    int rc = a->out ? cli_output_check("--output", a->out, inputs, 1) : 0;
    if (rc == 0 && a->out)
        rc = cli_output_lock_take(&lock, a->out);
    if (rc)
        return rc;
    sim_diag diag = {0};
    results_h5r_file *f = NULL;
    if ((rc = cli_results_open(a->in, &f, &diag))) {
        cli_output_lock_release(&lock);
        return rc;
    }
    char path[600];
    const char *run = NULL;
    if (file_level) {
        snprintf(path, sizeof path, "/%s", a->table);
    } else if ((rc = cli_pick_run(f, a->in, a->run, &run)) == 0) {
        snprintf(path, sizeof path, "/runs/%s/%s", run, a->table);
    }
    csv_out c = {0};
    char (*names)[64] = sim_calloc(MAX_COLS, sizeof *names);
    if (!rc) {
        c.n = results_h5r_columns(f, path, names, c.types, MAX_COLS);
        if (c.n == 0)
            rc = cli_invalid(a->in, "has no table", path, "docs/hdf5-schema.md lists them");
    }
    char tmp[4200] = "";
    if (!rc && a->out) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld", a->out, (long)getpid());
        c.f = fopen(tmp, "w");
        if (!c.f) {
            fprintf(stderr, "%s: error: cannot write it\n", a->out);
            rc = CLI_EXIT_INVALID;
        }
    } else if (!rc) {
        c.f = stdout;
    }
    if (!rc) {
        results_h5r_field *fields = sim_calloc(c.n, sizeof *fields);
        for (size_t k = 0; k < c.n; k++) {
            csv_text(c.f, names[k]);
            fputc(k + 1 < c.n ? ',' : '\n', c.f);
            fields[k] = (results_h5r_field){names[k], c.types[k], k * 8};
        }
        rc = results_h5r_for_each(f, path, fields, c.n, c.n * 8, 4096, write_rows, &c);
        sim_free(fields);
        if (rc && diag.set)
            sim_diag_print(&diag, stderr);
        if (c.f != stdout) {
            if (fflush(c.f) != 0 || ferror(c.f) || fsync(fileno(c.f)) != 0)
                rc = rc ? rc : SIM_EIO;
            fclose(c.f);
            if (!rc && rename(tmp, a->out) != 0)
                rc = SIM_EIO;
            if (rc)
                unlink(tmp);
        }
        int sig = cli_signal_flag()[0];
        if (rc && sig)
            rc = cli_signal_exit("nothing written");
        else if (rc == SIM_EIO)
            fprintf(stderr, "%s: error: cannot write it\n", a->out ? a->out : "stdout");
        if (rc && !sig)
            rc = cli_exit_of(rc);
    }
    sim_free(names);
    results_h5r_close(f);
    cli_output_lock_release(&lock);
    return rc;
}

int cli_export_csv(const cli_command *cmd, int argc, char **argv)
{
    csv_args a = {0};
    return cli_opts_run(cmd, &spec, argc, argv, &a, csv_body);
}
