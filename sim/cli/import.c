/* `stepsim import FRAMEWORK SOURCE -o SCENARIO.yaml`: a training framework's config (DeepSpeed
 * JSON, Accelerate YAML, torchtitan TOML, Megatron-LM arguments) as a commented stepsim
 * scenario; every key says the field it came from and the fields with no equivalent are
 * listed at the top (docs/import.md). The scenario runs as written once it has a topology and
 * a model (--topology, --model, or the framework's own: Megatron's arguments, torchtitan's
 * model name), and gives what `parallel: {from: {FRAMEWORK: SOURCE}}` gives. */
#include "core/sim.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "cli/output.h"
#include "input/import.h"
#include "input/load.h"

typedef struct import_args {
    const char *framework, *source;
    const char *output, *model, *topology, *name;
} import_args;

static const cli_opt options[] = {
    {.name = "--output", .alias = "-o", .kind = CLI_OPT_STRING, .metavar = "SCENARIO.yaml",
     .offset = offsetof(import_args, output), .required = true},
    {.name = "--model", .kind = CLI_OPT_STRING, .metavar = "MODEL",
     .offset = offsetof(import_args, model)},
    {.name = "--topology", .kind = CLI_OPT_STRING, .metavar = "TOPOLOGY",
     .offset = offsetof(import_args, topology)},
    {.name = "--name", .kind = CLI_OPT_STRING, .metavar = "NAME",
     .offset = offsetof(import_args, name)},
};
static const cli_arg args[] = {
    {.name = "FRAMEWORK", .offset = offsetof(import_args, framework)},
    {.name = "SOURCE", .offset = offsetof(import_args, source)},
};
static const cli_spec import_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                     .args = args, .n_args = SIM_ARRAY_LEN(args)};

/* A reference as the written scenario needs it: a catalog name as it is, a path made
 * absolute (the scenario may be written elsewhere). */
static void reference(const char *v, char *out, size_t size)
{
    bool path = strchr(v, '/') || strstr(v, ".yaml") || strstr(v, ".json");
    char cwd[4096];
    if (path && v[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(out, size, "%.4000s/%s", cwd, v);
    else
        snprintf(out, size, "%s", v);
}

/* The code point of the UTF-8 sequence at `s` and its length in *len; -1 (length 1) for a
 * byte that does not start a valid, shortest-form sequence. */
static long utf8_next(const unsigned char *s, int *len)
{
    *len = 1;
    if (s[0] < 0x80)
        return s[0];
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return -1;
    long cp = s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const long least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return cp;
}

/* A code point YAML reads as a line break or refuses in a stream: control characters (C0
 * but tab, DEL, C1 with NEL) and the line and paragraph separators. */
static bool yaml_breaks(long cp)
{
    return cp < 0 || (cp < 0x20 && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0xfeff;
}

/* `s` for a comment line: what would end the comment or the stream (see yaml_breaks, and
 * bytes that are not UTF-8) written as spaces, at most `max` bytes, cut between
 * characters. */
static const char *comment_text(const char *s, char *out, size_t size, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        int len;
        long cp = utf8_next(p, &len);
        if (n + (size_t)len > max || n + (size_t)len + 1 > size)
            break;
        if (yaml_breaks(cp))
            out[n++] = ' ';
        else
            for (int i = 0; i < len; i++)
                out[n++] = (char)p[i];
        p += len;
    }
    out[n] = '\0';
    return out;
}

/* `s` as a YAML scalar that reads back as the same string: plain when it is made of
 * characters that cannot start or break one and is no word YAML reads as another type
 * (null, true, a number), otherwise double-quoted with escapes (what is not UTF-8 as
 * U+FFFD). */
static void yaml_scalar(FILE *f, const char *s)
{
    static const char *const words[] = {"null", "true", "false", "yes", "no", "on", "off",
                                        "y", "n"};
    bool plain = isalpha((unsigned char)s[0]) || s[0] == '/' || s[0] == '_';
    for (const char *p = s; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || strchr("-_./+", *p);
    for (size_t w = 0; w < SIM_ARRAY_LEN(words) && plain; w++)
        plain = strcasecmp(s, words[w]) != 0;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int len;
        long cp = utf8_next(p, &len);
        if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (int)cp);
        else if (cp < 0)
            fputs("\\ufffd", f);
        else if (yaml_breaks(cp))
            fprintf(f, cp < 0x100 ? "\\x%02lx" : "\\u%04lx", cp);
        else
            fwrite(p, 1, (size_t)len, f);
        p += len;
    }
    fputc('"', f);
}

/* The items whose key starts with `prefix.` as YAML at `indent`, sub-mappings nested, each
 * line commented with its source. */
static void write_section(FILE *f, const input_import *im, const char *prefix, int indent,
                          bool *done)
{
    size_t plen = strlen(prefix);
    char sub[64][48];
    int n_sub = 0;
    for (size_t i = 0; i < im->n; i++) {
        const char *k = im->items[i].key;
        if (done[i] || strncmp(k, prefix, plen) != 0 || k[plen] != '.')
            continue;
        const char *rest = k + plen + 1, *dot = strchr(rest, '.');
        if (!dot) {
            char line[256];
            char src[256];
            snprintf(line, sizeof line, "%*s%s: %s", indent, "", rest, im->items[i].value);
            fprintf(f, "%-40s # %s\n", line,
                    comment_text(im->items[i].source, src, sizeof src, 200));
            done[i] = true;
        } else if (n_sub < 64) {
            bool seen = false;
            for (int s = 0; s < n_sub; s++)
                seen |= strncmp(sub[s], rest, (size_t)(dot - rest)) == 0 &&
                        sub[s][dot - rest] == '\0';
            if (!seen)
                snprintf(sub[n_sub++], sizeof sub[0], "%.*s", (int)(dot - rest), rest);
        }
    }
    for (int s = 0; s < n_sub; s++) {
        char deeper[160];
        snprintf(deeper, sizeof deeper, "%.100s.%.47s", prefix, sub[s]);
        fprintf(f, "%*s%s:\n", indent, "", sub[s]);
        write_section(f, im, deeper, indent + 2, done);
    }
}

/* dp from the topology's GPUs when the config does not give it: all of them over
 * tp x pp x cp; 0 when it cannot be known. */
static long long dp_of(const input_import *im, const char *topology, sim_diag *diag, int *rc)
{
    long long deg[3] = {1, 1, 1};
    static const char *const keys[3] = {"parallel.tp", "parallel.pp", "parallel.cp"};
    for (size_t i = 0; i < im->n; i++) {
        if (!strcmp(im->items[i].key, "parallel.dp"))
            return strtoll(im->items[i].value, NULL, 10);
        for (int k = 0; k < 3; k++)
            if (!strcmp(im->items[i].key, keys[k]))
                deg[k] = strtoll(im->items[i].value, NULL, 10);
    }
    if (!topology)
        return 0;
    hw_topology_spec *t = sim_calloc(1, sizeof *t);
    long long dp = 0;
    *rc = input_topology_load_ref(topology, t, diag);
    if (*rc == 0) {
        long long gpus = t->n_devices > 0 ? 0 : (long long)t->nodes * t->gpus_per_node;
        for (int i = 0; t->n_devices > 0 && i < t->n_devices; i++)
            gpus += t->devices[i].kind == HW_DEV_GPU;
        long long per = deg[0] * deg[1] * deg[2];
        dp = per > 0 && gpus % per == 0 ? gpus / per : 0;
    }
    sim_free(t);
    return dp;
}

static int write_scenario(FILE *f, const import_args *a, input_import *im, long long dp)
{
    const char *fw = a->framework;
    bool inline_args = strncmp(a->source, "--", 2) == 0; /* Megatron's arguments themselves */
    char text[4096], ref[4200];
    fprintf(f, "# A stepsim scenario from the %s config %s\n", fw,
            inline_args ? "(the arguments below)"
                        : comment_text(im->file, text, sizeof text, 4000));
    fprintf(f, "# (`stepsim import %s ...`). Each key says the field it came from; to keep the\n"
               "# framework's file the single source, write instead\n"
               "#   parallel: {from: {%s: %s%s%s}}\n",
            fw, fw, inline_args ? "\"" : "",
            inline_args ? "ARGUMENTS" : comment_text(a->source, text, sizeof text, 4000),
            inline_args ? "\"" : "");
    for (const char *p = a->source; inline_args && *p;) { /* one comment line per line */
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        fprintf(f, "# %s %s\n", p == a->source ? "Arguments:" : "          ",
                comment_text(p, text, sizeof text, SIM_MIN(n, (size_t)3900)));
        p = e ? e + 1 : p + n;
    }
    if (im->unmapped[0]) {
        fprintf(f, "# Not imported (no stepsim equivalent):\n");
        for (const char *p = im->unmapped; *p;) {
            const char *e = strstr(p, "; ");
            size_t n = e ? (size_t)(e - p) : strlen(p);
            fprintf(f, "#   %s\n", comment_text(p, text, sizeof text, SIM_MIN(n, (size_t)400)));
            p = e ? e + 2 : p + strlen(p);
        }
    }
    fputs("name: ", f);
    yaml_scalar(f, a->name ? a->name : "imported");
    fputc('\n', f);
    if (a->topology) {
        reference(a->topology, ref, sizeof ref);
        fputs("topology: ", f);
        yaml_scalar(f, ref);
        fputc('\n', f);
    } else {
        fprintf(f, "# topology: give one (--topology, or a file or catalog name here)\n");
    }
    bool *done = sim_calloc(im->n + 1, sizeof *done);
    bool model_items = false;
    for (size_t i = 0; i < im->n; i++)
        model_items |= strncmp(im->items[i].key, "model.", 6) == 0;
    if (a->model) {
        reference(a->model, ref, sizeof ref);
        fputs("model: ", f);
        yaml_scalar(f, ref);
        fputc('\n', f);
        for (size_t i = 0; i < im->n; i++) /* the given model replaces the framework's */
            done[i] |= strncmp(im->items[i].key, "model.", 6) == 0;
    } else if (im->model[0]) {
        char line[200];
        snprintf(line, sizeof line, "model: %s", im->model);
        fprintf(f, "%-40s # the config's model name and flavor\n", line);
    } else if (model_items) {
        fprintf(f, "model:\n");
        write_section(f, im, "model", 2, done);
    } else {
        fprintf(f, "# model: give one (--model, a workload name or a Hugging Face config.json)\n");
    }
    long long micro = 1, accum = 0;
    for (size_t i = 0; i < im->n; i++) {
        if (!strcmp(im->items[i].key, "training.micro_batch"))
            micro = strtoll(im->items[i].value, NULL, 10);
        if (!strcmp(im->items[i].key, "training.grad_accum")) {
            accum = strtoll(im->items[i].value, NULL, 10);
            done[i] = true;
        }
    }
    fprintf(f, "training:\n");
    write_section(f, im, "training", 2, done);
    if (accum > 0 && dp > 0) {
        char line[128];
        snprintf(line, sizeof line, "  global_batch: %lld", micro * accum * dp);
        fprintf(f, "%-40s # micro_batch x %lld micro-batches x dp %lld\n", line, accum, dp);
    } else if (accum > 0) {
        fprintf(f, "  # global_batch: micro_batch x %lld micro-batches x dp (give dp)\n", accum);
    }
    fprintf(f, "parallel:\n");
    bool has_dp = false;
    for (size_t i = 0; i < im->n; i++)
        has_dp |= !strcmp(im->items[i].key, "parallel.dp");
    if (!has_dp && dp > 0) {
        char line[64];
        snprintf(line, sizeof line, "  dp: %lld", dp);
        fprintf(f, "%-40s # the topology's GPUs over tp x pp x cp\n", line);
    } else if (!has_dp) {
        fprintf(f, "  # dp: give it (or --topology, whose GPUs it fills)\n");
    }
    write_section(f, im, "parallel", 2, done);
    sim_free(done);
    return ferror(f) ? SIM_EIO : 0;
}

int cli_import(const cli_command *cmd, int argc, char **argv)
{
    import_args a = {0};
    int rc = cli_opts_parse(cmd, &import_spec, argc, argv, &a);
    if (rc)
        return rc == CLI_OPTS_HELP ? 0 : rc;
    int fw = input_framework_of(a.framework);
    if (fw < 0)
        return cli_invalid("FRAMEWORK", "not a framework stepsim reads", a.framework,
                           "deepspeed, accelerate, torchtitan or megatron");
    const char *inputs[3] = {fw == INPUT_FW_MEGATRON ? NULL : a.source, a.model, a.topology};
    if ((rc = cli_output_check("--output", a.output, inputs, 3)) != 0)
        return rc;
    if (access(a.output, F_OK) == 0) {
        fprintf(stderr, "%s: error: exists; stepsim import does not overwrite a scenario\n"
                        "  choose another path, or remove it first\n", a.output);
        return CLI_EXIT_INVALID;
    }
    input_import im;
    sim_diag diag = {0};
    if (input_import_read((input_framework)fw, a.source, &im, &diag) != 0) {
        sim_diag_print(&diag, stderr);
        return CLI_EXIT_INVALID;
    }
    long long dp = dp_of(&im, a.topology, &diag, &rc);
    if (rc) {
        sim_diag_print(&diag, stderr);
        input_import_clear(&im);
        return CLI_EXIT_INVALID;
    }
    cli_output_lock lock = {0};
    if ((rc = cli_output_lock_take(&lock, a.output)) != 0) {
        input_import_clear(&im);
        return rc;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", a.output, (int)getpid());
    FILE *f = fopen(tmp, "w");
    rc = f ? write_scenario(f, &a, &im, dp) : SIM_EIO;
    if (f && fclose(f) != 0)
        rc = SIM_EIO;
    if (rc == 0 && rename(tmp, a.output) != 0)
        rc = SIM_EIO;
    if (rc) {
        fprintf(stderr, "%s: error: cannot write it: %s\n", a.output, strerror(errno));
        unlink(tmp);
        rc = CLI_EXIT_INVALID;
    }
    cli_output_lock_release(&lock);
    if (rc == 0 && im.unmapped[0])
        fprintf(stderr, "%s: note: not imported (no stepsim equivalent), listed at the top of "
                        "%s\n", fw == INPUT_FW_MEGATRON ? "megatron arguments" : a.source,
                a.output);
    input_import_clear(&im);
    return rc;
}
