/* Sweep files (see sweep.h). */
#include "core/sim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "input/load.h"
#include "input/suggest.h"
#include "input/sweep.h"
#include "input/ytree.h"
#include "plan/scenario.h"

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *t)
{
    size_t k = strlen(t);
    SIM_GROW(b->s, b->cap, b->n + k + 1);
    memcpy(b->s + b->n, t, k + 1);
    b->n += k;
}

/* A scalar as YAML flow text: as written, double-quoted again when it was quoted. */
static void sb_scalar(sbuf *b, const input_ynode *n)
{
    if (!n->quoted) {
        sb_add(b, n->text);
        return;
    }
    sb_add(b, "\"");
    for (const char *p = n->text; *p; p++) {
        char c[3] = {*p, 0, 0};
        if (*p == '"' || *p == '\\') {
            c[0] = '\\';
            c[1] = *p;
        }
        sb_add(b, c);
    }
    sb_add(b, "\"");
}

/* Any node as one YAML flow value ("{dp: 2, zero: 3}", "[1, 2]", "x"). */
static void sb_flow(sbuf *b, const input_ynode *n)
{
    if (n->kind == INPUT_YSCALAR) {
        sb_scalar(b, n);
    } else if (n->kind == INPUT_YSEQ) {
        sb_add(b, "[");
        for (size_t i = 0; i < n->n; i++) {
            if (i)
                sb_add(b, ", ");
            sb_flow(b, n->items[i]);
        }
        sb_add(b, "]");
    } else {
        sb_add(b, "{");
        for (size_t i = 0; i < n->n; i++) {
            if (i)
                sb_add(b, ", ");
            sb_scalar(b, n->pairs[i].key);
            sb_add(b, ": ");
            sb_flow(b, n->pairs[i].value);
        }
        sb_add(b, "}");
    }
}

static bool is_reference_key(const char *key)
{
    return !strcmp(key, "topology") || !strcmp(key, "model") || !strcmp(key, "topology.gpu");
}

/* A value with '/' or ending in .yaml is a path (a bare name is a catalog entry). */
static bool looks_like_path(const char *s)
{
    size_t len = strlen(s);
    return strchr(s, '/') || (len > 5 && strcmp(s + len - 5, ".yaml") == 0);
}

/* The overrides of value `v` at dotted key `key`: one per leaf of a mapping. */
static void flatten(input_sweep_value *out, const char *key, const input_ynode *v, const char *dir)
{
    if (v->kind == INPUT_YMAP && v->n > 0) {
        for (size_t i = 0; i < v->n; i++) {
            size_t len = strlen(key) + strlen(v->pairs[i].key->text) + 2;
            char *sub = sim_calloc(len, 1);
            snprintf(sub, len, "%s.%s", key, v->pairs[i].key->text);
            flatten(out, sub, v->pairs[i].value, dir);
            sim_free(sub);
        }
        return;
    }
    sbuf b = {0};
    sb_add(&b, key);
    sb_add(&b, "=");
    if (v->kind == INPUT_YSCALAR && is_reference_key(key) && looks_like_path(v->text) &&
        v->text[0] != '/') {
        /* resolve against the sweep file, as the loader resolves a file's references */
        sb_add(&b, dir);
        sb_add(&b, "/");
        sb_add(&b, v->text);
    } else {
        sb_flow(&b, v);
    }
    out->sets = sim_realloc_array(out->sets, out->n_sets + 1, sizeof *out->sets);
    out->sets[out->n_sets++] = b.s;
}

/* A file name without its directory and extension: "sweeps/validation.yaml" -> "validation". */
static char *stem_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *s = sim_strdup(slash ? slash + 1 : path);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = 0;
    return s;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return sim_strdup(".");
    char *d = sim_strdup(path);
    d[slash == path ? 1 : (size_t)(slash - path)] = '\0';
    return d;
}

static char *read_text(const char *path, sim_diag *diag, int *rc)
{
    const char *kind;
    int fd = sim_open_regular(path, &kind);
    if (fd < 0 && kind) {
        *rc = sim_diag_error(diag, path, 0, 0, "not a regular file (%s)", kind);
        return NULL;
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        *rc = sim_diag_error_code(diag, e == ENOENT ? SIM_ENOENT : SIM_EINVAL, path, 0, 0,
                                  "cannot open sweep file: %s", strerror(e));
        return NULL;
    }
    sbuf b = {0};
    char chunk[65536];
    size_t k;
    SIM_GROW(b.s, b.cap, 1);
    b.s[0] = '\0';
    while ((k = fread(chunk, 1, sizeof chunk - 1, f)) > 0 && b.n < INPUT_YAML_MAX_FILE_BYTES) {
        chunk[k] = '\0';
        if (memchr(chunk, '\0', k)) {
            fclose(f);
            sim_free(b.s);
            *rc = sim_diag_error(diag, path, 0, 0, "not a text file");
            return NULL;
        }
        sb_add(&b, chunk);
    }
    fclose(f);
    *rc = 0;
    return b.s;
}

static int value_error(const input_sweep *sw, const input_sweep_value *v, const sim_diag *inner,
                       sim_diag *diag)
{
    /* the override's own message, placed at the value in the sweep file */
    sim_diag_error(diag, sw->path, v->line, v->col, "%s", inner->msg);
    if (inner->hints[0])
        sim_diag_hint(diag, "%s", inner->hints);
    if (strncmp(inner->file, "--set ", 6) != 0)
        sim_diag_hint(diag, inner->line ? "(in %s:%d)" : "(in %s)", inner->file, inner->line);
    return SIM_EINVAL;
}

int input_sweep_load(const char *path, input_sweep **out, sim_diag *diag)
{
    *out = NULL;
    int rc;
    char *text = read_text(path, diag, &rc);
    if (!text)
        return rc;
    input_yarena *arena = input_yarena_create();
    char *dir = dir_of(path);
    const input_yorigin *origin = input_yorigin_new(arena, path, dir, false);
    input_ynode *root = NULL;
    rc = input_yaml_parse(arena, text, strlen(text), origin, 0, &root, diag);
    input_sweep *sw = sim_calloc(1, sizeof *sw);
    sw->path = sim_strdup(path);
    sw->text = text;
    if (!rc && root->kind != INPUT_YMAP)
        rc = sim_diag_error(diag, path, root->line, root->col,
                            "a sweep must be a mapping with base and axes, not %s",
                            input_ykind_name(root->kind));
    static const char *const keys[] = {"base", "name", "axes"};
    for (size_t i = 0; !rc && i < root->n; i++) {
        const input_ypair *p = &root->pairs[i];
        bool known = false;
        for (size_t k = 0; k < SIM_ARRAY_LEN(keys); k++)
            known |= strcmp(p->key->text, keys[k]) == 0;
        if (!known) {
            rc = sim_diag_error(diag, path, p->key->line, p->key->col, "unknown key '%s'",
                                p->key->text);
            const char *near = input_suggest(p->key->text, keys, SIM_ARRAY_LEN(keys));
            if (near)
                sim_diag_hint(diag, "did you mean '%s'?", near);
            else
                sim_diag_hint(diag, "a sweep has base (the scenario), name and axes");
        }
    }
    const input_ypair *base = rc ? NULL : input_ymap_find(root, "base");
    const input_ypair *axes = rc ? NULL : input_ymap_find(root, "axes");
    const input_ypair *name = rc ? NULL : input_ymap_find(root, "name");
    bool listed = base && base->value->kind == INPUT_YSEQ;
    if (!rc && !listed && (!base || base->value->kind != INPUT_YSCALAR || !base->value->text[0]))
        rc = sim_diag_error(diag, path, base ? base->value->line : root->line,
                            base ? base->value->col : root->col,
                            "base: expected the path of the base scenario, or a list of "
                            "scenario paths");
    for (size_t i = 0; !rc && listed && i < base->value->n; i++) {
        const input_ynode *b = base->value->items[i];
        if (b->kind != INPUT_YSCALAR || !b->text[0])
            rc = sim_diag_error(diag, path, b->line, b->col,
                                "base: expected the path of a scenario file");
    }
    if (!rc && listed && base->value->n == 0)
        rc = sim_diag_error(diag, path, base->value->line, base->value->col,
                            "base: expected at least one scenario path");
    if (!rc && ((!axes && !listed) ||
                (axes && (axes->value->kind != INPUT_YMAP || axes->value->n == 0))))
        rc = sim_diag_error(diag, path, axes ? axes->value->line : root->line,
                            axes ? axes->value->col : root->col,
                            "axes: expected a mapping of scenario keys to lists of values, "
                            "such as `training.micro_batch: [1, 2, 4]`");
    if (!rc && name && (name->value->kind != INPUT_YSCALAR || !name->value->text[0] ||
                        strchr(name->value->text, '/')))
        rc = sim_diag_error(diag, path, name->value->line, name->value->col,
                            "name: expected a run-name prefix without '/'");
    if (!rc) {
        size_t nb = listed ? base->value->n : 1;
        sw->bases = sim_calloc(nb, sizeof *sw->bases);
        sw->n_bases = nb;
        for (size_t i = 0; i < nb; i++) {
            const char *b = listed ? base->value->items[i]->text : base->value->text;
            size_t len = strlen(dir) + strlen(b) + 2;
            sw->bases[i] = sim_calloc(len, 1);
            snprintf(sw->bases[i], len, b[0] == '/' ? "%s" : "%s/%s", b[0] == '/' ? b : dir, b);
        }
        if (name)
            sw->name = sim_strdup(name->value->text);
        const input_ynode *ax = axes ? axes->value : NULL;
        size_t n_ax = ax ? ax->n : 0;
        sw->base_axis = listed;
        sw->n_axes = n_ax + listed;
        sw->axes = sim_calloc(sw->n_axes, sizeof *sw->axes);
        sw->n_runs = 1;
        if (listed) { /* the outermost axis: one value per base, no overrides */
            input_sweep_axis *a = &sw->axes[0];
            a->key = sim_strdup("base");
            a->values = sim_calloc(nb, sizeof *a->values);
            a->n_values = nb;
            for (size_t j = 0; j < nb; j++) {
                const input_ynode *v = base->value->items[j];
                sbuf t = {0};
                sb_scalar(&t, v);
                a->values[j] = (input_sweep_value){.text = t.s, .line = v->line, .col = v->col};
            }
            sw->n_runs = nb;
        }
        for (size_t i = 0; !rc && i < n_ax; i++) {
            const input_ypair *p = &ax->pairs[i];
            input_sweep_axis *a = &sw->axes[i + listed];
            a->key = sim_strdup(p->key->text);
            if (p->value->kind != INPUT_YSEQ || p->value->n == 0) {
                rc = sim_diag_error(diag, path, p->value->line, p->value->col,
                                    "axes.%s: expected a non-empty list of values", a->key);
                break;
            }
            if (listed && strcmp(a->key, "base") == 0) {
                rc = sim_diag_error(diag, path, p->key->line, p->key->col,
                                    "axes.base: 'base' is not a scenario key");
                sim_diag_hint(diag, "list the scenario files under base instead");
                break;
            }
            a->values = sim_calloc(p->value->n, sizeof *a->values);
            a->n_values = p->value->n;
            for (size_t j = 0; j < p->value->n; j++) {
                const input_ynode *v = p->value->items[j];
                sbuf t = {0};
                sb_flow(&t, v);
                a->values[j] = (input_sweep_value){.text = t.s, .line = v->line, .col = v->col};
                flatten(&a->values[j], a->key, v, dir);
            }
            if (sw->n_runs > (size_t)1 << 40 / a->n_values) {
                rc = sim_diag_error(diag, path, p->key->line, p->key->col,
                                    "the sweep has too many runs");
                break;
            }
            sw->n_runs *= a->n_values;
        }
    }
    /* each base alone, then each value on its own over it: input errors are the sweep
     * file's (a base that does not load is reported at its entry in a list) */
    for (size_t b = 0; !rc && b < sw->n_bases; b++) {
        plan_scenario sc;
        sim_diag inner = {0};
        input_load_stage stage;
        if (input_scenario_load_ex(sw->bases[b], NULL, 0, &sc, NULL, &inner, &stage) &&
            stage == INPUT_LOAD_INPUT) {
            if (inner.line == 0) { /* cannot be read: say which entry, or the base */
                int line = base->value->line, col = base->value->col;
                if (sw->base_axis) {
                    line = sw->axes[0].values[b].line;
                    col = sw->axes[0].values[b].col;
                }
                if (strstr(inner.msg, inner.file)) /* "cannot open 'PATH': ..." */
                    rc = sim_diag_error(diag, sw->path, line, col, "%s", inner.msg);
                else
                    rc = sim_diag_error(diag, sw->path, line, col, "'%s': %s", inner.file,
                                        inner.msg);
                sim_diag_hint(diag, "relative paths in base resolve against the sweep file");
            } else {
                *diag = inner;
                rc = SIM_EINVAL;
            }
        } else if (!sw->name && b == 0) {
            sw->name = sw->base_axis ? stem_of(path) : sim_strdup(inner.set ? "sweep" : sc.name);
        }
        for (size_t i = sw->base_axis; !rc && i < sw->n_axes; i++)
            for (size_t j = 0; !rc && j < sw->axes[i].n_values; j++) {
                const input_sweep_value *v = &sw->axes[i].values[j];
                memset(&inner, 0, sizeof inner);
                if (input_scenario_load_ex(sw->bases[b], (const char *const *)v->sets, v->n_sets,
                                        &sc, NULL, &inner, &stage) &&
                    stage == INPUT_LOAD_INPUT)
                    rc = value_error(sw, v, &inner, diag);
            }
    }
    input_yarena_destroy(arena);
    sim_free(dir);
    if (rc) {
        input_sweep_destroy(sw);
        return rc;
    }
    *out = sw;
    return 0;
}

void input_sweep_destroy(input_sweep *sw)
{
    if (!sw)
        return;
    for (size_t i = 0; i < sw->n_axes; i++) {
        for (size_t j = 0; j < sw->axes[i].n_values; j++) {
            input_sweep_value *v = &sw->axes[i].values[j];
            for (size_t k = 0; k < v->n_sets; k++)
                sim_free(v->sets[k]);
            sim_free(v->sets);
            sim_free(v->text);
        }
        sim_free(sw->axes[i].values);
        sim_free(sw->axes[i].key);
    }
    sim_free(sw->axes);
    sim_free(sw->path);
    for (size_t i = 0; i < sw->n_bases; i++)
        sim_free(sw->bases[i]);
    sim_free(sw->bases);
    sim_free(sw->name);
    sim_free(sw->text);
    sim_free(sw);
}

const char *input_sweep_run_base(const input_sweep *sw, size_t index)
{
    SIM_ASSERT(index < sw->n_runs, "run %zu of %zu", index, sw->n_runs);
    if (!sw->base_axis)
        return sw->bases[0];
    return sw->bases[index / (sw->n_runs / sw->n_bases)]; /* the outermost axis */
}

const char **input_sweep_run_sets(const input_sweep *sw, size_t index, size_t *n, size_t *value_of)
{
    SIM_ASSERT(index < sw->n_runs, "run %zu of %zu", index, sw->n_runs);
    size_t total = 0, rest = index;
    size_t *which = sim_calloc(sw->n_axes + 1, sizeof *which);
    for (size_t i = sw->n_axes; i-- > 0;) { /* last axis fastest */
        which[i] = rest % sw->axes[i].n_values;
        rest /= sw->axes[i].n_values;
        total += sw->axes[i].values[which[i]].n_sets;
    }
    const char **sets = sim_calloc(total + 1, sizeof *sets);
    size_t k = 0;
    for (size_t i = 0; i < sw->n_axes; i++) {
        const input_sweep_value *v = &sw->axes[i].values[which[i]];
        for (size_t j = 0; j < v->n_sets; j++)
            sets[k++] = v->sets[j];
        if (value_of)
            value_of[i] = which[i];
    }
    sim_free(which);
    *n = k;
    return sets;
}
