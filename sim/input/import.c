/* Reading framework configs into a tree (import.h): JSON and YAML through the YAML parser, a
 * TOML subset for torchtitan, Megatron's argument line; the list of settings the translators
 * (import_map.c) build from them. */
#include "core/sim.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "input/import-internal.h"

static const char *const fw_names[INPUT_FW_COUNT] = {"deepspeed", "accelerate", "torchtitan",
                                                     "megatron"};

int input_framework_of(const char *name)
{
    for (int i = 0; i < INPUT_FW_COUNT; i++)
        if (strcmp(name, fw_names[i]) == 0)
            return i;
    return -1;
}

const char *input_framework_name(input_framework fw)
{
    return fw_names[fw];
}

/* ---- settings ------------------------------------------------------------------------ */

void import__set(import_ctx *c, const char *key, const char *source, const input_ynode *at,
                 const char *fmt, ...)
{
    input_import *im = c->im;
    for (size_t i = 0; i < im->n; i++) /* a later field of the same key wins */
        if (strcmp(im->items[i].key, key) == 0) {
            memmove(&im->items[i], &im->items[i + 1], (im->n - i - 1) * sizeof *im->items);
            im->n--;
            break;
        }
    SIM_GROW(im->items, im->cap, im->n + 1);
    input_import_item *it = &im->items[im->n++];
    memset(it, 0, sizeof *it);
    snprintf(it->key, sizeof it->key, "%s", key);
    snprintf(it->source, sizeof it->source, "%s", source);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->value, sizeof it->value, fmt, ap);
    va_end(ap);
    it->line = at ? at->line : 0;
    it->col = at ? at->col : 0;
}

void import__unmapped(import_ctx *c, const char *field, const char *why)
{
    input_import *im = c->im;
    size_t len = strlen(im->unmapped);
    if (len + strlen(field) + 8 >= sizeof im->unmapped)
        return;
    snprintf(im->unmapped + len, sizeof im->unmapped - len, "%s%s%s%s%s", len ? "; " : "", field,
             why ? " (" : "", why ? why : "", why ? ")" : "");
}

int import__error(import_ctx *c, const input_ynode *at, const char *fmt, ...)
{
    char msg[SIM_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sim_diag_error_code(c->diag, SIM_ENOTSUP, c->im->file, at ? at->line : 0, at ? at->col : 0,
                        "%s", msg);
    return SIM_ENOTSUP;
}

/* ---- reading the tree ---------------------------------------------------------------- */

const input_ynode *import__get(import_ctx *c, const char *dotted)
{
    const input_ypair *p = input_ypath_find(c->root, dotted);
    if (!p)
        return NULL;
    for (size_t i = 0; i < c->n_used; i++)
        if (strcmp(c->used[i], dotted) == 0)
            goto found;
    SIM_GROW(c->used, c->cap_used, c->n_used + 1);
    c->used[c->n_used++] = input_yarena_strdup(c->a, dotted);
found:
    if (input_ynode_is_null(p->value))
        return NULL;
    /* HF Trainer's DeepSpeed configs say "auto": the Trainer decides, so does the scenario */
    if (p->value->kind == INPUT_YSCALAR && strcmp(p->value->text, "auto") == 0)
        return NULL;
    return p->value;
}

bool import__text(const input_ynode *v, const char *text)
{
    return v && v->kind == INPUT_YSCALAR && strcasecmp(v->text, text) == 0;
}

bool import__bool(const input_ynode *v)
{
    return import__text(v, "true") || import__text(v, "1");
}

int import__int(import_ctx *c, const input_ynode *v, const char *what, long long *out)
{
    char *end = NULL;
    errno = 0;
    double d = v && v->kind == INPUT_YSCALAR ? strtod(v->text, &end) : 0;
    if (!v || v->kind != INPUT_YSCALAR || end == v->text || *end || errno || !(fabs(d) < 1e15) ||
        d != (double)(long long)d)
        return import__error(c, v, "%s: expected an integer (below 1e15), got '%s'", what,
                             v && v->kind == INPUT_YSCALAR ? v->text : "a list or table");
    *out = (long long)d;
    return 0;
}

/* Every leaf field's dotted path not read by the translator: the unmapped ones. `why` gives a
 * reason for known fields (pairs of name, reason; NULL-terminated), others get the generic
 * one. */
static void walk_unused(import_ctx *c, const input_ynode *n, char *path, size_t len,
                        const char *const *why)
{
    for (size_t i = 0; n->kind == INPUT_YMAP && i < n->n; i++) {
        const input_ypair *p = &n->pairs[i];
        int w = len < 511 ? snprintf(path + len, 512 - len, "%s%s", len ? "." : "",
                                     p->key->text)
                          : 0;
        size_t l2 = SIM_MIN(len + (size_t)SIM_MAX(w, 0), (size_t)511); /* truncated, never past */
        bool used = false;
        for (size_t k = 0; k < c->n_used && !used; k++)
            used = strcmp(c->used[k], path) == 0;
        if (!used && p->value->kind == INPUT_YMAP && p->value->n > 0) {
            walk_unused(c, p->value, path, l2, why);
        } else if (!used) {
            /* the reason of the path, its last name, or the nearest ancestor's name */
            const char *reason = "no stepsim equivalent";
            for (size_t k = 0; why && why[k]; k += 2) {
                size_t wl = strlen(why[k]);
                bool hit = strcmp(why[k], path) == 0 || strcmp(why[k], p->key->text) == 0;
                for (const char *q = path; !hit && (q = strstr(q, why[k])); q++)
                    hit = (q == path || q[-1] == '.') && (q[wl] == '.' || q[wl] == '\0');
                if (hit)
                    reason = why[k + 1];
            }
            import__unmapped(c, path, reason);
        }
        path[len] = '\0';
    }
}

void import__list_unused(import_ctx *c, const char *const *why)
{
    char path[512] = "";
    walk_unused(c, c->root, path, 0, why);
}

/* ---- parsers --------------------------------------------------------------------------- */

static int read_all(const char *path, char **data, size_t *len, sim_diag *diag)
{
    const char *kind;
    int fd = sim_open_regular(path, &kind);
    if (fd < 0)
        return sim_diag_error_code(diag, errno == ENOENT ? SIM_ENOENT : SIM_EINVAL, path, 0, 0,
                                   kind ? "not a regular file (%s)" : "cannot open: %s",
                                   kind ? kind : strerror(errno));
    FILE *f = fdopen(fd, "rb");
    size_t cap = 0;
    *data = NULL;
    *len = 0;
    for (;;) {
        SIM_GROW(*data, cap, *len + 65536);
        size_t got = f ? fread(*data + *len, 1, cap - *len - 1, f) : 0;
        *len += got;
        if (got == 0 || *len > (16u << 20))
            break;
    }
    if (f)
        fclose(f);
    else
        close(fd);
    if (*len > (16u << 20)) {
        sim_free(*data);
        *data = NULL; /* the caller frees it */
        return sim_diag_error(diag, path, 0, 0, "larger than 16 MiB: not a framework config");
    }
    const char *nul = memchr(*data, '\0', *len);
    if (nul) { /* the parsers read C strings: what follows would go unread */
        int line = 1;
        for (const char *q = *data; q < nul; q++)
            line += *q == '\n';
        sim_free(*data);
        *data = NULL;
        return sim_diag_error(diag, path, line, 1, "a NUL byte: not a text config");
    }
    (*data)[*len] = '\0';
    return 0;
}

static input_ynode *scalar(import_ctx *c, const char *s, size_t n, int line, int col)
{
    char *t = input_yarena_alloc(c->a, n + 1);
    memcpy(t, s, n);
    t[n] = '\0';
    return input_yscalar_new(c->a, c->origin, line, col, t, false);
}

/* The table a dotted TOML header or key prefix names below `root`, created as needed. */
static input_ynode *toml_table(import_ctx *c, input_ynode *root, const char *dotted, int line,
                               int col)
{
    input_ynode *cur = root;
    char seg[128];
    for (const char *s = dotted; *s;) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        snprintf(seg, sizeof seg, "%.*s", (int)n, s);
        input_ypair *p = input_ymap_find(cur, seg);
        if (!p) {
            input_ymap_append(c->a, cur, scalar(c, seg, strlen(seg), line, col),
                              input_ynode_new(c->a, INPUT_YMAP, c->origin, line, col));
            p = &cur->pairs[cur->n - 1];
        }
        if (p->value->kind != INPUT_YMAP)
            return NULL;
        cur = p->value;
        s = dot ? dot + 1 : s + n;
    }
    return cur;
}

/* A TOML basic string's text between its quotes with its escapes decoded (\b \t \n \f \r
 * \" \\ and \uXXXX, \UXXXXXXXX as UTF-8) into out (of `size` bytes, NUL-terminated); the
 * decoded length, or -1 for an escape TOML does not define, a code point that is not a
 * Unicode scalar value, a decoded NUL, or text that does not fit. */
static long toml_unescape(const char *p, const char *end, char *out, size_t size)
{
    size_t n = 0;
    while (p < end) {
        unsigned long cp = (unsigned char)*p++;
        if (cp == '\\') {
            char e = p < end ? *p++ : '\0';
            static const char pairs[] = "b\bt\tn\nf\fr\r\"\"\\\\"; /* escape, its byte */
            const char *simple = e ? strchr(pairs, e) : NULL;
            if (simple && (simple - pairs) % 2 == 0) {
                cp = (unsigned char)simple[1];
            } else if (e == 'u' || e == 'U') {
                int digits = e == 'u' ? 4 : 8;
                cp = 0;
                for (int i = 0; i < digits; i++, p++) {
                    if (p >= end || !isxdigit((unsigned char)*p))
                        return -1;
                    cp = cp * 16 + (unsigned long)(isdigit((unsigned char)*p)
                                                       ? *p - '0'
                                                       : tolower((unsigned char)*p) - 'a' + 10);
                }
                if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                    return -1;
            } else {
                return -1;
            }
        }
        if (cp == 0 || n + 5 > size)
            return -1;
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xc0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xe0 | (cp >> 12));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            out[n++] = (char)(0xf0 | (cp >> 18));
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    out[n] = '\0';
    return (long)n;
}

/* Whether a bare TOML value is one TOML allows: a boolean, or a number or date (digits, signs,
 * inf and nan); a bare word is a TOML syntax error. */
static bool toml_bare_ok(const char *v)
{
    const char *d = v + (*v == '+' || *v == '-');
    return !strcmp(v, "true") || !strcmp(v, "false") || isdigit((unsigned char)*d) ||
           (*d == '.' && isdigit((unsigned char)d[1])) || !strcmp(d, "inf") || !strcmp(d, "nan");
}

/* A multi-line string at *s, its delimiter three quotes (""" basic, ''' literal): a newline
 * right after the opening delimiter is dropped; a basic one's escapes are decoded and a
 * backslash that ends a line drops itself and the whitespace and newlines after it; one or
 * two quotes may end the text before the closing delimiter. Counts its newlines into *line;
 * NULL when it is not closed or has an escape TOML does not define. */
static input_ynode *toml_multiline(import_ctx *c, const char **s, int *line, int col)
{
    char q = **s;
    const char *p = *s + 3;
    int first = *line;
    if (p[0] == '\r' && p[1] == '\n')
        p++;
    if (p[0] == '\n')
        p++, (*line)++;
    const char *start = p;
    while (!(p[0] == q && p[1] == q && p[2] == q)) {
        if (!*p) {
            *line = first; /* reported where it starts */
            return NULL;
        }
        if (*p == '\\' && q == '"' && p[1]) /* an escaped quote does not close it */
            p++;
        if (*p == '\n')
            (*line)++;
        p++;
    }
    const char *end = p;
    for (int k = 0; k < 2 && end[3] == q; k++)
        end++;
    size_t raw = (size_t)(end - start);
    char *buf = sim_calloc(raw + 8, 1);
    long n = (long)raw;
    if (q == '"') {
        /* line-ending backslashes first, then the escapes */
        char *tmp = sim_calloc(raw + 1, 1);
        size_t m = 0;
        for (const char *r = start; r < end; r++) {
            if (*r == '\\') {
                const char *w = r + 1;
                while (w < end && (*w == ' ' || *w == '\t'))
                    w++;
                if (w < end && (*w == '\n' || (*w == '\r' && w + 1 < end && w[1] == '\n'))) {
                    while (w < end && (*w == ' ' || *w == '\t' || *w == '\r' || *w == '\n'))
                        w++;
                    r = w - 1;
                    continue;
                }
                tmp[m++] = *r++;
                if (r == end)
                    break;
            }
            tmp[m++] = *r;
        }
        n = toml_unescape(tmp, tmp + m, buf, raw + 8);
        sim_free(tmp);
    } else {
        memcpy(buf, start, raw);
    }
    input_ynode *v = n < 0 ? NULL : scalar(c, buf, (size_t)n, first, col);
    sim_free(buf);
    if (v) {
        v->quoted = true;
        *s = end + 3;
    } else {
        *line = first;
    }
    return v;
}

/* One TOML value at *s (a string, number, boolean, or an array of them, possibly over
 * several lines); advances *s. */
static input_ynode *toml_value(import_ctx *c, const char **s, int *line, const char *bol,
                               int depth)
{
    const char *p = *s;
    if (depth > 64) /* arrays nested deeper than any config needs */
        return NULL;
    int col = (int)(p - bol) + 1;
    if ((*p == '"' || *p == '\'') && p[1] == *p && p[2] == *p)
        return toml_multiline(c, s, line, col);
    if (*p == '"' || *p == '\'') {
        char q = *p++;
        const char *start = p;
        while (*p && *p != q && *p != '\n')
            p += *p == '\\' && q == '"' && p[1] ? 2 : 1;
        if (*p != q)
            return NULL;
        input_ynode *v;
        if (q == '"') { /* a basic string: its escapes decoded */
            char buf[1024];
            long n = toml_unescape(start, p, buf, sizeof buf);
            if (n < 0)
                return NULL;
            v = scalar(c, buf, (size_t)n, *line, col);
        } else { /* a literal string: as written */
            v = scalar(c, start, (size_t)(p - start), *line, col);
        }
        v->quoted = true;
        *s = p + 1;
        return v;
    }
    if (*p == '[') {
        input_ynode *seq = input_ynode_new(c->a, INPUT_YSEQ, c->origin, *line, col);
        p++;
        for (;;) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',' ||
                   *p == '#') {
                if (*p == '#')
                    while (*p && *p != '\n')
                        p++;
                if (*p == '\n')
                    (*line)++, bol = p + 1;
                if (*p)
                    p++;
            }
            if (*p == ']')
                break;
            if (!*p)
                return NULL;
            const char *q = p;
            input_ynode *item = toml_value(c, &q, line, bol, depth + 1);
            if (!item)
                return NULL;
            input_yseq_append(c->a, seq, item);
            p = q;
        }
        *s = p + 1;
        return seq;
    }
    const char *start = p;
    while (*p && *p != ',' && *p != ']' && *p != '#' && *p != '\n' && *p != '\r')
        p++;
    const char *end = p;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (end == start || *start == '{')
        return NULL;
    char buf[64];
    size_t n = 0;
    for (const char *q = start; q < end && n + 1 < sizeof buf; q++)
        if (*q != '_') /* 1_000 */
            buf[n++] = *q;
    buf[n] = '\0';
    if (!toml_bare_ok(buf))
        return NULL;
    *s = p;
    return scalar(c, buf, n, *line, col);
}

int import__parse_toml(import_ctx *c, const char *text)
{
    c->root = input_ynode_new(c->a, INPUT_YMAP, c->origin, 1, 1);
    input_ynode *table = c->root;
    int line = 1;
    for (const char *bol = text, *p = text; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        int col = (int)(p - bol) + 1;
        if (*p == '#' || *p == '\n' || *p == '\r' || !*p) {
            /* a comment or a blank line */
        } else if (*p == '[') {
            if (p[1] == '[')
                return sim_diag_error(c->diag, c->im->file, line, col,
                                      "arrays of tables ([[...]]) are not read");
            const char *e = strchr(p, ']'), *nl = strchr(p, '\n');
            char name[256];
            if (!e || (nl && nl < e) || (size_t)(e - p) >= sizeof name)
                return sim_diag_error(c->diag, c->im->file, line, col, "TOML: an unclosed table "
                                      "header");
            snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
            for (char *q = name; *q; q++)
                if (*q == ' ')
                    memmove(q, q + 1, strlen(q));
            table = toml_table(c, c->root, name, line, col);
            if (!table)
                return sim_diag_error(c->diag, c->im->file, line, col, "TOML: [%s] is also a "
                                      "value", name);
            p = e + 1;
        } else {
            const char *k = p;
            while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.'))
                p++;
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(p - k), k);
            while (*p == ' ' || *p == '\t')
                p++;
            if (!key[0] || *p != '=')
                return sim_diag_error(c->diag, c->im->file, line, col, "TOML: expected "
                                      "`key = value`");
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            input_ynode *v = toml_value(c, &p, &line, bol, 0);
            if (!v)
                return sim_diag_error(c->diag, c->im->file, line, (int)(p - bol) + 1,
                                      "TOML: a value this reader does not take (strings, "
                                      "numbers, booleans and arrays of them)");
            for (const char *q = p; q > bol; q--) /* a value over several lines: its last */
                if (q[-1] == '\n') {
                    bol = q;
                    break;
                }
            const char *dot = strrchr(key, '.');
            input_ynode *t = dot ? toml_table(c, table, (key[dot - key] = '\0', key), line, col)
                                 : table;
            const char *leaf = dot ? dot + 1 : key;
            if (!t || input_ymap_find(t, leaf))
                return sim_diag_error(c->diag, c->im->file, line, col, "TOML: '%s' given "
                                      "twice", leaf);
            input_ymap_append(c->a, t, scalar(c, leaf, strlen(leaf), line, col), v);
        }
        while (*p && *p != '\n') {
            if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '#')
                return sim_diag_error(c->diag, c->im->file, line, (int)(p - bol) + 1,
                                      "TOML: unexpected text after the value");
            if (*p == '#')
                while (*p && *p != '\n')
                    p++;
            else
                p++;
        }
        if (*p == '\n') {
            p++;
            line++;
            bol = p;
        }
    }
    return 0;
}

/* Megatron's arguments: "--name value" or a bare "--flag" (true), quotes respected, into a
 * mapping keyed by the name without dashes; columns are offsets into the line. */
int import__parse_args(import_ctx *c, const char *line)
{
    c->root = input_ynode_new(c->a, INPUT_YMAP, c->origin, 1, 1);
    const char *p = line, *bol = line;
    int ln = 1; /* positions by line and column: a launch script's list spans lines */
    input_ynode *key = NULL;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == '\\') {
            if (*p == '\n') {
                ln++;
                bol = p + 1;
            }
            p++;
        }
        if (!*p)
            break;
        int col = (int)(p - bol) + 1;
        char tok[512];
        size_t n = 0;
        char q = 0;
        while (*p && (q || !isspace((unsigned char)*p))) {
            if (!q && (*p == '"' || *p == '\'')) {
                q = *p++;
                continue;
            }
            if (q && *p == q) {
                q = 0;
                p++;
                continue;
            }
            if (n + 1 < sizeof tok)
                tok[n++] = *p;
            p++;
        }
        tok[n] = '\0';
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)tok[k] < 0x20)
                return sim_diag_error(c->diag, c->im->file, ln, col, "a control character "
                                      "inside '%.40s': quote values on one line", tok);
        if (tok[0] == '-' && tok[1] == '-' && tok[2]) {
            if (key)
                input_ymap_append(c->a, c->root, key, scalar(c, "true", 4, key->line, key->col));
            if (input_ymap_find(c->root, tok + 2))
                return sim_diag_error(c->diag, c->im->file, ln, col, "%s given twice", tok);
            key = scalar(c, tok + 2, strlen(tok + 2), ln, col);
        } else if (key) {
            input_ymap_append(c->a, c->root, key, scalar(c, tok, n, ln, col));
            key = NULL;
        } else if (c->root->n > 0) { /* an option of several values (--rampup-batch-size) */
            input_ynode *last = c->root->pairs[c->root->n - 1].value;
            size_t had = strlen(last->text);
            char *t = input_yarena_alloc(c->a, had + n + 2);
            snprintf(t, had + n + 2, "%s %s", last->text, tok);
            last->text = t;
        } else {
            return sim_diag_error(c->diag, c->im->file, ln, col, "'%s' is not an option (the "
                                  "line holds pretrain_gpt.py's --options and their values)",
                                  tok);
        }
    }
    if (key)
        input_ymap_append(c->a, c->root, key, scalar(c, "true", 4, key->line, key->col));
    return 0;
}

int input_import_read(input_framework fw, const char *source, input_import *out, sim_diag *diag)
{
    memset(out, 0, sizeof *out);
    import_ctx c = {.im = out, .diag = diag, .a = input_yarena_create()};
    int rc = 0;
    char *data = NULL;
    size_t len = 0;
    if (fw == INPUT_FW_MEGATRON && strncmp(source, "--", 2) == 0) {
        snprintf(out->file, sizeof out->file, "megatron arguments");
        c.origin = input_yorigin_new(c.a, out->file, ".", false);
        rc = import__parse_args(&c, source);
    } else if (fw == INPUT_FW_MEGATRON) { /* a file holding the arguments */
        snprintf(out->file, sizeof out->file, "%s", source);
        c.origin = input_yorigin_new(c.a, source, ".", false);
        rc = read_all(source, &data, &len, diag);
        if (!rc)
            rc = import__parse_args(&c, data);
    } else {
        snprintf(out->file, sizeof out->file, "%s", source);
        rc = read_all(source, &data, &len, diag);
        if (!rc) {
            char dir[4096];
            const char *slash = strrchr(source, '/');
            snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - source) : 1,
                     slash ? source : ".");
            c.origin = input_yorigin_new(c.a, source, dir, false);
            if (fw == INPUT_FW_TORCHTITAN)
                rc = import__parse_toml(&c, data);
            else
                rc = input_yaml_parse(c.a, data, len, c.origin, 0, &c.root, diag);
        }
        if (!rc && c.root->kind != INPUT_YMAP)
            rc = sim_diag_error(diag, source, c.root->line, c.root->col,
                                "a %s config must be a mapping of fields, not %s",
                                fw_names[fw], input_ykind_name(c.root->kind));
    }
    if (!rc)
        rc = import__translate(fw, &c);
    sim_free(data);
    sim_free(c.used);
    input_yarena_destroy(c.a);
    if (rc)
        input_import_clear(out);
    return rc;
}

void input_import_clear(input_import *im)
{
    sim_free(im->items);
    im->items = NULL;
    im->n = im->cap = 0;
}
