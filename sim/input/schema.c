/* Table-driven schema engine (see schema.h) and the scalar typing rules of
 * docs/scenario-format.md: integers are plain decimal, numbers plain decimal with optional
 * fraction and exponent, booleans exactly true/false, quoted scalars are always strings. */
#include "core/sim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "input/schema.h"
#include "input/suggest.h"

int input_schema_error(input_schema_ctx *ctx, int code, const input_ynode *n, const char *fmt, ...)
{
    char msg[SIM_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sim_diag_error_code(ctx->diag, code, n->origin->name, n->line, n->col, "%s", msg);
}

void input_schema_enum_list(const input_enum_name *enums, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const input_enum_name *e = enums; e->name && len < size; e++) {
        int w = snprintf(buf + len, size - len, "%s%s", e == enums ? "" : ", ", e->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Scalar typing                                                                            */

static int expect_scalar(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                         const char *expected)
{
    if (n->kind != INPUT_YSCALAR)
        return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected %s, got %s", what, expected,
                               input_ykind_name(n->kind));
    if (n->quoted) {
        input_schema_error(ctx, SIM_EINVAL, n, "%s: expected %s, got the string \"%s\"", what,
                        expected, n->text);
        sim_diag_hint(ctx->diag, "a quoted value is a string in YAML; remove the quotes");
        return SIM_EINVAL;
    }
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Plain decimal number: [-+]? (d+ (. d*)? | . d+) ([eE] [-+]? d+)?  */
static int is_decimal_number(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (is_digit(s[i]))
        i++, digits++;
    if (s[i] == '.') {
        i++;
        while (is_digit(s[i]))
            i++, digits++;
    }
    if (digits == 0)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-')
            i++;
        if (!is_digit(s[i]))
            return 0;
        while (is_digit(s[i]))
            i++;
    }
    return s[i] == '\0';
}

/* A number past what the key's type holds: the error and the limit as a hint. */
static int out_of_range(input_schema_ctx *ctx, const input_ynode *n, const char *what,
                        const char *limit)
{
    input_schema_error(ctx, SIM_EINVAL, n, "%s: '%s' is out of range", what, n->text);
    sim_diag_hint(ctx->diag, "this key takes %s", limit);
    return SIM_EINVAL;
}

int input_schema_int(input_schema_ctx *ctx, const char *what, const input_ynode *n, int64_t *out)
{
    int rc = expect_scalar(ctx, what, n, "an integer");
    if (rc)
        return rc;
    const char *s = n->text;
    size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    size_t start = i;
    while (is_digit(s[i]))
        i++;
    if (i == start || s[i] != '\0') {
        input_schema_error(ctx, SIM_EINVAL, n, "%s: expected an integer, got '%s'", what, s);
        if (s[start] == '0' && (s[start + 1] == 'x' || s[start + 1] == 'X' ||
                                s[start + 1] == 'o' || s[start + 1] == 'b'))
            sim_diag_hint(ctx->diag, "integers are written in decimal (0x.., 0o.., 0b.. are "
                                     "not accepted)");
        else if (is_decimal_number(s))
            sim_diag_hint(ctx->diag, "this key takes a whole number");
        return SIM_EINVAL;
    }
    if (s[start] == '0' && i - start > 1) {
        input_schema_error(ctx, SIM_EINVAL, n, "%s: '%s' is not a decimal integer", what, s);
        sim_diag_hint(ctx->diag, "write integers without leading zeros (YAML 1.1 reads them "
                                 "as octal)");
        return SIM_EINVAL;
    }
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return out_of_range(ctx, n, what, "integers of at most 19 digits (below 9.2e18)");
    *out = (int64_t)v;
    return 0;
}

int input_schema_float(input_schema_ctx *ctx, const char *what, const input_ynode *n, double *out)
{
    int rc = expect_scalar(ctx, what, n, "a number");
    if (rc)
        return rc;
    if (!is_decimal_number(n->text))
        return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected a number, got '%s'", what,
                               n->text);
    errno = 0;
    double v = strtod(n->text, NULL);
    if (errno == ERANGE && (v > 1 || v < -1))
        return out_of_range(ctx, n, what, "numbers below 1.8e308");
    *out = v;
    return 0;
}

static int read_bool(input_schema_ctx *ctx, const char *what, const input_ynode *n, bool *out)
{
    int rc = expect_scalar(ctx, what, n, "true or false");
    if (rc)
        return rc;
    if (strcmp(n->text, "true") == 0 || strcmp(n->text, "false") == 0) {
        *out = n->text[0] == 't';
        return 0;
    }
    static const char *const yaml11[] = {"yes", "no",  "on",  "off", "y",   "n",   "Yes",
                                         "No",  "On",  "Off", "YES", "NO",  "ON",  "OFF",
                                         "Y",   "N",   "True", "False", "TRUE", "FALSE"};
    input_schema_error(ctx, SIM_EINVAL, n, "%s: expected true or false, got '%s'", what, n->text);
    for (size_t i = 0; i < SIM_ARRAY_LEN(yaml11); i++)
        if (strcmp(n->text, yaml11[i]) == 0)
            sim_diag_hint(ctx->diag, "booleans are exactly true or false (YAML 1.1 spellings "
                                     "such as yes, on, True are not accepted)");
    return SIM_EINVAL;
}

int input_schema_enum(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                   const input_enum_name *enums, int *out)
{
    char list[512];
    input_schema_enum_list(enums, list, sizeof list);
    if (n->kind != INPUT_YSCALAR)
        return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected one of %s, got %s", what, list,
                               input_ykind_name(n->kind));
    const char *names[64];
    size_t k = 0;
    for (const input_enum_name *e = enums; e->name; e++) {
        if (strcmp(e->name, n->text) == 0) {
            *out = e->value;
            return 0;
        }
        if (k < SIM_ARRAY_LEN(names))
            names[k++] = e->name;
    }
    const char *sug = input_suggest(n->text, names, k);
    if (sug)
        input_schema_error(ctx, SIM_EINVAL, n, "%s: unknown value '%s'; did you mean '%s'?", what,
                        n->text, sug);
    else
        input_schema_error(ctx, SIM_EINVAL, n, "%s: unknown value '%s'", what, n->text);
    /* a count where the kind of accumulation goes: the frameworks' accumulation steps */
    if (strstr(what, "grad_accumulation") && n->text[0] && strspn(n->text, "0123456789") ==
                                                             strlen(n->text))
        sim_diag_hint(ctx->diag, "one of: %s (how gradients accumulate; the micro-batches a "
                                 "step are training.global_batch / (micro_batch x dp))", list);
    else
        sim_diag_hint(ctx->diag, "one of: %s", list);
    return SIM_EINVAL;
}

static int unit_error(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                      const input_unit_error *ue)
{
    input_schema_error(ctx, SIM_EINVAL, n, "%s: %s", what, ue->msg);
    if (ue->hint[0])
        sim_diag_hint(ctx->diag, "%s", ue->hint);
    return SIM_EINVAL;
}

static int expect_quantity_scalar(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                                  input_unit_kind kind)
{
    if (n->kind == INPUT_YSCALAR)
        return 0;
    return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected a %s such as \"%s\", got %s", what,
                           input_unit_kind_name(kind), input_unit_kind_example(kind),
                           input_ykind_name(n->kind));
}

int input_schema_quantity(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                       input_unit_kind kind, double *out)
{
    int rc = expect_quantity_scalar(ctx, what, n, kind);
    if (rc)
        return rc;
    input_unit_error ue;
    if (input_quantity_parse(n->text, kind, 0, out, &ue))
        return unit_error(ctx, what, n, &ue);
    double floor = kind == INPUT_UNIT_BANDWIDTH ? INPUT_BANDWIDTH_MIN_BPS
                   : kind == INPUT_UNIT_FLOP_RATE ? INPUT_FLOP_RATE_MIN : 0;
    if (*out > 0 && *out < floor) {
        input_schema_error(ctx, SIM_EINVAL, n, "%s: %s is below %s, the slowest %s stepsim "
                           "simulates", what, n->text,
                           kind == INPUT_UNIT_BANDWIDTH ? "1 MB/s" : "1 GFLOP/s",
                           input_unit_kind_name(kind));
        sim_diag_hint(ctx->diag, "a rate this low would make one transfer or kernel outlast "
                                 "the simulated-time horizon (docs/scenario-format.md, "
                                 "\"Limits\")");
        return SIM_EINVAL;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Keys                                                                                     */

/* One converted value, before it is stored. */
typedef union value {
    int i;
    int64_t i64;
    uint64_t u64;
    double d;
    bool b;
} value;

static double as_double(const input_key *k, const value *v)
{
    switch (k->type) {
    case INPUT_K_INT:
    case INPUT_K_ENUM: return v->i;
    case INPUT_K_INT64:
    case INPUT_K_BYTES:
    case INPUT_K_TIME: return (double)v->i64;
    case INPUT_K_UINT64: return (double)v->u64;
    case INPUT_K_FLOAT:
    case INPUT_K_QUANTITY: return v->d;
    case INPUT_K_BOOL: return v->b;
    default: return 0;
    }
}

static int check_range(input_schema_ctx *ctx, const input_key *k, const input_ynode *n,
                       const value *v)
{
    if (!(k->flags & (INPUT_KEY_MIN | INPUT_KEY_MIN_EXCL | INPUT_KEY_MAX | INPUT_KEY_MAX_EXCL)))
        return 0;
    double x = as_double(k, v);
    bool ok = true;
    if ((k->flags & INPUT_KEY_MIN) && !(x >= k->min))
        ok = false;
    if ((k->flags & INPUT_KEY_MIN_EXCL) && !(x > k->min))
        ok = false;
    if ((k->flags & INPUT_KEY_MAX) && !(x <= k->max))
        ok = false;
    if ((k->flags & INPUT_KEY_MAX_EXCL) && !(x < k->max))
        ok = false;
    if (ok)
        return 0;
    char rule[128];
    bool lo = k->flags & (INPUT_KEY_MIN | INPUT_KEY_MIN_EXCL),
         hi = k->flags & (INPUT_KEY_MAX | INPUT_KEY_MAX_EXCL);
    if (lo && !hi && k->min == 0)
        snprintf(rule, sizeof rule, "%s", (k->flags & INPUT_KEY_MIN_EXCL) ? "must be positive"
                                                                        : "must not be negative");
    else if (lo && hi)
        snprintf(rule, sizeof rule, "must be %s %.15g and %s %.15g",
                 (k->flags & INPUT_KEY_MIN) ? "at least" : "greater than", k->min,
                 (k->flags & INPUT_KEY_MAX) ? "at most" : "less than", k->max);
    else if (lo)
        snprintf(rule, sizeof rule, "must be %s %.15g",
                 (k->flags & INPUT_KEY_MIN) ? "at least" : "greater than", k->min);
    else
        snprintf(rule, sizeof rule, "must be %s %.15g",
                 (k->flags & INPUT_KEY_MAX) ? "at most" : "less than", k->max);
    return input_schema_error(ctx, SIM_EINVAL, n, "%s: %s (got %s)", ctx->path, rule, n->text);
}

/* Converts a scalar value of a typed key into *v; *size is the field size. */
static int convert(input_schema_ctx *ctx, const input_key *k, const input_ynode *n, value *v,
                   size_t *size)
{
    const char *what = ctx->path;
    input_unit_error ue;
    int64_t i64;
    int rc;
    switch (k->type) {
    case INPUT_K_INT:
        if ((rc = input_schema_int(ctx, what, n, &i64)))
            return rc;
        if (i64 < -2147483647 || i64 > 2147483647)
            return out_of_range(ctx, n, what, "integers of magnitude at most 2147483647");
        v->i = (int)i64;
        *size = sizeof(int);
        return 0;
    case INPUT_K_INT64:
        *size = sizeof(int64_t);
        return input_schema_int(ctx, what, n, &v->i64);
    case INPUT_K_UINT64:
        if (!(rc = expect_scalar(ctx, what, n, "a non-negative integer"))) {
            const char *s = n->text;
            size_t i = 0;
            while (is_digit(s[i]))
                i++;
            if (i == 0 || s[i] != '\0' || (s[0] == '0' && i > 1)) {
                if (s[0] == '-' && is_digit(s[1]))
                    return input_schema_error(ctx, SIM_EINVAL, n,
                                              "%s: must not be negative (got %s)", what, s);
                return input_schema_error(ctx, SIM_EINVAL, n,
                                       "%s: expected a non-negative decimal integer, got '%s'",
                                       what, s);
            }
            errno = 0;
            unsigned long long u = strtoull(s, NULL, 10);
            if (errno == ERANGE)
                return out_of_range(ctx, n, what, "integers below 1.8e19");
            v->u64 = (uint64_t)u;
            *size = sizeof(uint64_t);
        }
        return rc;
    case INPUT_K_FLOAT:
        *size = sizeof(double);
        return input_schema_float(ctx, what, n, &v->d);
    case INPUT_K_BOOL:
        *size = sizeof(bool);
        return read_bool(ctx, what, n, &v->b);
    case INPUT_K_ENUM:
        *size = sizeof(int);
        return input_schema_enum(ctx, what, n, k->enums, &v->i);
    case INPUT_K_QUANTITY:
        *size = sizeof(double);
        return input_schema_quantity(ctx, what, n, k->unit, &v->d);
    case INPUT_K_BYTES:
        *size = sizeof(int64_t);
        if ((rc = expect_quantity_scalar(ctx, what, n, INPUT_UNIT_BYTES)))
            return rc;
        return input_bytes_parse(n->text, 0, &v->i64, &ue) ? unit_error(ctx, what, n, &ue) : 0;
    case INPUT_K_TIME:
        *size = sizeof(sim_time);
        if ((rc = expect_quantity_scalar(ctx, what, n, INPUT_UNIT_TIME)))
            return rc;
        if (input_time_parse_ps(n->text, 0, &v->i64, &ue))
            return unit_error(ctx, what, n, &ue);
        if (v->i64 > INPUT_TIME_MAX_PS)
            return input_schema_error(ctx, SIM_EINVAL, n, "%s: %s is more than 1 s, the longest "
                                      "latency or overhead stepsim simulates", what, n->text);
        return 0;
    default:
        SIM_ASSERT(0, "type %d is not a scalar type", (int)k->type);
    }
    return SIM_EINTERNAL;
}

static int apply_key(const input_key *k, const input_ypair *pair, void *base, input_schema_ctx *ctx)
{
    const input_ynode *n = pair->value;
    void *field = (char *)base + k->offset;
    switch (k->type) {
    case INPUT_K_MAP:
        if (n->kind != INPUT_YMAP)
            return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected a mapping, got %s%s%s%s",
                                   ctx->path, input_ykind_name(n->kind),
                                   n->kind == INPUT_YSCALAR ? " '" : "",
                                   n->kind == INPUT_YSCALAR ? n->text : "",
                                   n->kind == INPUT_YSCALAR ? "'" : "");
        return input_schema_apply(k->map, n, pair->key, field, ctx);
    case INPUT_K_CUSTOM:
        return k->fn(k, n, base, ctx);
    case INPUT_K_STRING:
        if (n->kind != INPUT_YSCALAR)
            return input_schema_error(ctx, SIM_EINVAL, n, "%s: expected a string, got %s",
                                      ctx->path, input_ykind_name(n->kind));
        if (strlen(n->text) >= k->size)
            return input_schema_error(ctx, SIM_EINVAL, n, "%s: longer than %zu characters",
                                   ctx->path, k->size - 1);
        memset(field, 0, k->size);
        memcpy(field, n->text, strlen(n->text));
        return 0;
    default:
        break;
    }
    value v;
    size_t size = 0;
    memset(&v, 0, sizeof v);
    int rc = convert(ctx, k, n, &v, &size);
    if (rc || (rc = check_range(ctx, k, n, &v)))
        return rc;
    memcpy(field, &v, size);
    return 0;
}

static void path_push(input_schema_ctx *ctx, const char *name, size_t *saved)
{
    size_t len = strlen(ctx->path);
    *saved = len;
    snprintf(ctx->path + len, sizeof ctx->path - len, "%s%s", len ? "." : "", name);
}

static const input_key *find_key(const input_map *map, const char *name)
{
    for (size_t i = 0; i < map->n_keys; i++)
        if (strcmp(map->keys[i].name, name) == 0)
            return &map->keys[i];
    return NULL;
}

static int unknown_key(const input_map *map, const input_ypair *pair, input_schema_ctx *ctx)
{
    const char *names[64];
    size_t k = 0;
    char list[1024];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < map->n_keys; i++) {
        if (k < SIM_ARRAY_LEN(names))
            names[k++] = map->keys[i].name;
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", map->keys[i].name);
        if (w > 0 && (size_t)w < sizeof list - len)
            len += (size_t)w;
    }
    char where[INPUT_SCHEMA_PATH_MAX + 8];
    if (ctx->path[0])
        snprintf(where, sizeof where, "'%s'", ctx->path);
    else
        snprintf(where, sizeof where, "%s", map->what);
    const char *sug = input_suggest(pair->key->text, names, k);
    const char *alias = input_framework_alias(pair->key->text);
    if (alias) { /* a framework's name for a stepsim key */
        input_schema_error(ctx, SIM_EINVAL, pair->key, "unknown key '%s' in %s; stepsim's is %s",
                           pair->key->text, where, alias);
        sim_diag_hint(ctx->diag, "docs/import.md maps the frameworks' fields; parallel.from "
                                 "reads their configs");
        return SIM_EINVAL;
    }
    if (sug)
        input_schema_error(ctx, SIM_EINVAL, pair->key, "unknown key '%s' in %s; did you mean '%s'?",
                        pair->key->text, where, sug);
    else
        input_schema_error(ctx, SIM_EINVAL, pair->key, "unknown key '%s' in %s", pair->key->text,
                        where);
    sim_diag_hint(ctx->diag, "valid keys here: %s", list);
    return SIM_EINVAL;
}

int input_schema_apply(const input_map *map, const input_ynode *node, const input_ynode *parent_key,
                    void *base, input_schema_ctx *ctx)
{
    if (node->kind != INPUT_YMAP)
        return input_schema_error(ctx, SIM_EINVAL, node, "%s: expected a mapping, got %s",
                               ctx->path[0] ? ctx->path : map->what, input_ykind_name(node->kind));
    for (size_t i = 0; i < node->n; i++) {
        const input_ypair *pair = &node->pairs[i];
        const input_key *k = find_key(map, pair->key->text);
        if (!k)
            return unknown_key(map, pair, ctx);
        size_t saved;
        path_push(ctx, k->name, &saved);
        int rc = 0;
        if (input_ynode_is_null(pair->value)) {
            if (k->flags & INPUT_KEY_REQUIRED)
                rc = input_schema_error(ctx, SIM_EINVAL, pair->value,
                                     "%s: a value is required here (got null)", ctx->path);
        } else {
            rc = apply_key(k, pair, base, ctx);
        }
        ctx->path[saved] = '\0';
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < map->n_keys; i++) {
        const input_key *k = &map->keys[i];
        if ((k->flags & INPUT_KEY_REQUIRED) && !input_ymap_find(node, k->name))
            return input_schema_missing(ctx, map->what, node, parent_key, k->name);
    }
    return map->check ? map->check(node, parent_key, base, ctx) : 0;
}

int input_schema_missing(input_schema_ctx *ctx, const char *what, const input_ynode *node,
                      const input_ynode *parent_key, const char *name)
{
    /* At the key naming the mapping, unless the mapping comes from another file (a
     * referenced topology or model): then in that file, at its first key. */
    const input_ynode *at =
        parent_key && (parent_key->origin == node->origin || node->n == 0) ? parent_key : node;
    if (ctx->path[0])
        return input_schema_error(ctx, SIM_EINVAL, at, "missing required key '%s' in '%s'", name,
                               ctx->path);
    return input_schema_error(ctx, SIM_EINVAL, at, "missing required key '%s' in %s", name, what);
}
