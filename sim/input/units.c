/* Quantities with units (see units.h for the grammar and the unit table). */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/suggest.h"
#include "input/units.h"

typedef struct unit_def {
    const char *name;
    input_unit_kind kind;
    int exp10; /* decimal prefix: value x 10^exp10 */
    int exp2;  /* binary prefix: value x 2^exp2 */
    int bits;  /* bits: value / 8 */
} unit_def;

static const unit_def units[] = {
    {.name = "B", .kind = INPUT_UNIT_BYTES},
    {.name = "KB", .kind = INPUT_UNIT_BYTES, .exp10 = 3},
    {.name = "MB", .kind = INPUT_UNIT_BYTES, .exp10 = 6},
    {.name = "GB", .kind = INPUT_UNIT_BYTES, .exp10 = 9},
    {.name = "TB", .kind = INPUT_UNIT_BYTES, .exp10 = 12},
    {.name = "KiB", .kind = INPUT_UNIT_BYTES, .exp2 = 10},
    {.name = "MiB", .kind = INPUT_UNIT_BYTES, .exp2 = 20},
    {.name = "GiB", .kind = INPUT_UNIT_BYTES, .exp2 = 30},
    {.name = "TiB", .kind = INPUT_UNIT_BYTES, .exp2 = 40},

    {.name = "b/s", .kind = INPUT_UNIT_BANDWIDTH, .bits = 1},
    {.name = "Kb/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 3, .bits = 1},
    {.name = "Mb/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 6, .bits = 1},
    {.name = "Gb/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 9, .bits = 1},
    {.name = "Tb/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 12, .bits = 1},
    {.name = "B/s", .kind = INPUT_UNIT_BANDWIDTH},
    {.name = "KB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 3},
    {.name = "MB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 6},
    {.name = "GB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 9},
    {.name = "TB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp10 = 12},
    {.name = "KiB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp2 = 10},
    {.name = "MiB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp2 = 20},
    {.name = "GiB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp2 = 30},
    {.name = "TiB/s", .kind = INPUT_UNIT_BANDWIDTH, .exp2 = 40},

    {.name = "ps", .kind = INPUT_UNIT_TIME, .exp10 = -12},
    {.name = "ns", .kind = INPUT_UNIT_TIME, .exp10 = -9},
    {.name = "us", .kind = INPUT_UNIT_TIME, .exp10 = -6},
    {.name = "ms", .kind = INPUT_UNIT_TIME, .exp10 = -3},
    {.name = "s", .kind = INPUT_UNIT_TIME},

    {.name = "FLOP", .kind = INPUT_UNIT_FLOPS},
    {.name = "KFLOP", .kind = INPUT_UNIT_FLOPS, .exp10 = 3},
    {.name = "MFLOP", .kind = INPUT_UNIT_FLOPS, .exp10 = 6},
    {.name = "GFLOP", .kind = INPUT_UNIT_FLOPS, .exp10 = 9},
    {.name = "TFLOP", .kind = INPUT_UNIT_FLOPS, .exp10 = 12},
    {.name = "PFLOP", .kind = INPUT_UNIT_FLOPS, .exp10 = 15},

    {.name = "FLOP/s", .kind = INPUT_UNIT_FLOP_RATE},
    {.name = "KFLOP/s", .kind = INPUT_UNIT_FLOP_RATE, .exp10 = 3},
    {.name = "MFLOP/s", .kind = INPUT_UNIT_FLOP_RATE, .exp10 = 6},
    {.name = "GFLOP/s", .kind = INPUT_UNIT_FLOP_RATE, .exp10 = 9},
    {.name = "TFLOP/s", .kind = INPUT_UNIT_FLOP_RATE, .exp10 = 12},
    {.name = "PFLOP/s", .kind = INPUT_UNIT_FLOP_RATE, .exp10 = 15},
};

typedef struct kind_def {
    const char *name, *example, *unit_list;
} kind_def;

static const kind_def kinds[INPUT_UNIT_KIND_COUNT] = {
    [INPUT_UNIT_BYTES] = {.name = "size", .example = "80 GiB",
                       .unit_list = "B KB MB GB TB KiB MiB GiB TiB"},
    [INPUT_UNIT_BANDWIDTH] = {.name = "bandwidth", .example = "450 GB/s",
                           .unit_list = "b/s Kb/s Mb/s Gb/s Tb/s B/s KB/s MB/s GB/s TB/s KiB/s "
                                        "MiB/s GiB/s TiB/s"},
    [INPUT_UNIT_TIME] = {.name = "time", .example = "1 us", .unit_list = "ps ns us ms s"},
    [INPUT_UNIT_FLOPS] = {.name = "FLOP count", .example = "10 GFLOP",
                       .unit_list = "FLOP KFLOP MFLOP GFLOP TFLOP PFLOP"},
    [INPUT_UNIT_FLOP_RATE] = {.name = "FLOP rate", .example = "989 TFLOP/s",
                           .unit_list = "FLOP/s KFLOP/s MFLOP/s GFLOP/s TFLOP/s PFLOP/s"},
};

const char *input_unit_kind_name(input_unit_kind kind)
{
    SIM_ASSERT(kind >= 0 && kind < INPUT_UNIT_KIND_COUNT, "kind %d", (int)kind);
    return kinds[kind].name;
}

const char *input_unit_kind_example(input_unit_kind kind)
{
    SIM_ASSERT(kind >= 0 && kind < INPUT_UNIT_KIND_COUNT, "kind %d", (int)kind);
    return kinds[kind].example;
}

static const char *article(const char *noun)
{
    return strchr("aeiouAEIOU", noun[0]) ? "an" : "a";
}

/* The unit part of the kind's example ("GB/s" of "450 GB/s"). */
static const char *example_unit(input_unit_kind kind)
{
    const char *sp = strchr(kinds[kind].example, ' ');
    return sp ? sp + 1 : kinds[kind].example;
}

#define NUM_TEXT_MAX 64

/* The split-up text: sign, mantissa digits (with '.') and explicit decimal exponent. */
typedef struct number {
    int negative;
    char mantissa[NUM_TEXT_MAX];
    long exp10;
    int integral; /* no '.' and no exponent */
} number;

/* Scans the number at the start of s; returns the number of characters used, 0 if none. */
static size_t scan_number(const char *s, number *num)
{
    size_t i = 0, m = 0;
    memset(num, 0, sizeof *num);
    num->integral = 1;
    if (s[i] == '+' || s[i] == '-')
        num->negative = s[i++] == '-';
    size_t digits = 0;
    while ((s[i] >= '0' && s[i] <= '9') || s[i] == '.') {
        if (s[i] == '.') {
            if (!num->integral)
                return 0; /* second '.' */
            num->integral = 0;
        } else {
            digits++;
        }
        if (m + 1 >= sizeof num->mantissa)
            return 0;
        num->mantissa[m++] = s[i++];
    }
    if (digits == 0)
        return 0;
    if ((s[i] == 'e' || s[i] == 'E') &&
        ((s[i + 1] >= '0' && s[i + 1] <= '9') ||
         ((s[i + 1] == '+' || s[i + 1] == '-') && s[i + 2] >= '0' && s[i + 2] <= '9'))) {
        i++;
        int eneg = 0;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        long e = 0;
        while (s[i] >= '0' && s[i] <= '9') {
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
            i++;
        }
        num->exp10 = eneg ? -e : e;
        num->integral = 0;
    }
    return i;
}

/* |number| x 10^shift as a double, correctly rounded (strtod on the shifted text). */
static double number_value(const number *num, long shift)
{
    char buf[NUM_TEXT_MAX + 32];
    snprintf(buf, sizeof buf, "%se%ld", num->mantissa, num->exp10 + shift);
    return strtod(buf, NULL);
}

static void set_err(input_unit_error *err, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(input_unit_error *err, const char *hint, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    snprintf(err->hint, sizeof err->hint, "%s", hint ? hint : "");
}

/* Parses into |value| x 10^-shift10 in the base unit (sign separately); *unit_out is the unit
 * found (NULL for a bare number). */
static int parse(const char *text, input_unit_kind kind, unsigned flags, long shift10, number *num,
                 double *mag, const unit_def **unit_out, input_unit_error *err)
{
    SIM_ASSERT(kind >= 0 && kind < INPUT_UNIT_KIND_COUNT, "kind %d", (int)kind);
    const kind_def *k = &kinds[kind];
    char hint[256];
    *unit_out = NULL;

    const char *s = text;
    while (*s == ' ')
        s++;
    size_t used = scan_number(s, num);
    if (used == 0) {
        snprintf(hint, sizeof hint, "write %s such as \"%s\"", article(k->name), k->example);
        set_err(err, hint, "expected %s %s (a number with a unit), got '%s'", article(k->name),
                k->name, text);
        return SIM_EINVAL;
    }
    const char *u = s + used;
    while (*u == ' ')
        u++;
    char unit[32];
    size_t ulen = strlen(u);
    while (ulen > 0 && u[ulen - 1] == ' ')
        ulen--;
    if (ulen >= sizeof unit) {
        snprintf(hint, sizeof hint, "%s units: %s", k->name, k->unit_list);
        set_err(err, hint, "unknown unit in '%s'", text);
        return SIM_EINVAL;
    }
    memcpy(unit, u, ulen);
    unit[ulen] = '\0';

    long shift = -shift10;
    if (ulen == 0) {
        if (!(flags & INPUT_UNIT_ALLOW_BARE)) {
            snprintf(hint, sizeof hint, "write \"%.*s %s\"", (int)used, s, example_unit(kind));
            set_err(err, hint, "missing unit in '%s': %s %s needs a unit", text,
                    article(k->name), k->name);
            return SIM_EINVAL;
        }
    } else {
        const unit_def *found = NULL;
        for (size_t i = 0; i < SIM_ARRAY_LEN(units); i++)
            if (strcmp(units[i].name, unit) == 0)
                found = &units[i];
        if (!found) {
            /* Prefer a suggestion of the expected kind, then any unit. */
            const char *names[SIM_ARRAY_LEN(units)];
            size_t n = 0;
            for (size_t i = 0; i < SIM_ARRAY_LEN(units); i++)
                if (units[i].kind == kind)
                    names[n++] = units[i].name;
            const char *sug = input_suggest(unit, names, n);
            if (!sug) {
                n = 0;
                for (size_t i = 0; i < SIM_ARRAY_LEN(units); i++)
                    names[n++] = units[i].name;
                sug = input_suggest(unit, names, n);
            }
            snprintf(hint, sizeof hint, "%s units: %s", k->name, k->unit_list);
            if (sug)
                set_err(err, hint, "unknown unit '%s' in '%s'; did you mean '%s'?", unit, text,
                        sug);
            else
                set_err(err, hint, "unknown unit '%s' in '%s'", unit, text);
            return SIM_EINVAL;
        }
        if (found->kind != kind) {
            snprintf(hint, sizeof hint, "write %s such as \"%s\"", article(k->name), k->example);
            set_err(err, hint, "'%s' is %s %s, but %s %s is expected here", text,
                    article(kinds[found->kind].name), kinds[found->kind].name, article(k->name),
                    k->name);
            return SIM_EINVAL;
        }
        *unit_out = found;
        shift += found->exp10;
    }

    double v = number_value(num, shift);
    if (*unit_out) {
        v = ldexp(v, (*unit_out)->exp2);
        if ((*unit_out)->bits)
            v /= 8.0;
    }
    if (!isfinite(v)) {
        set_err(err, NULL, "'%s' is out of range", text);
        return SIM_EINVAL;
    }
    *mag = v;
    return 0;
}

int input_quantity_parse(const char *text, input_unit_kind kind, unsigned flags, double *out,
                      input_unit_error *err)
{
    number num;
    double mag;
    const unit_def *u;
    int rc = parse(text, kind, flags, 0, &num, &mag, &u, err);
    if (rc)
        return rc;
    *out = num.negative ? -mag : mag;
    return 0;
}

int input_bytes_parse(const char *text, unsigned flags, int64_t *out, input_unit_error *err)
{
    number num;
    double mag;
    const unit_def *u;
    int rc = parse(text, INPUT_UNIT_BYTES, flags, 0, &num, &mag, &u, err);
    if (rc)
        return rc;
    if (!u && !num.integral) {
        set_err(err, "write a whole number of bytes or a size such as \"80 GiB\"",
                "'%s' is not a whole number of bytes", text);
        return SIM_EINVAL;
    }
    double r = nearbyint(mag);
    if (r >= SIM_INT64_DOUBLE_LIMIT) {
        set_err(err, NULL, "'%s' is out of range", text);
        return SIM_EINVAL;
    }
    *out = num.negative ? -(int64_t)r : (int64_t)r;
    return 0;
}

int input_time_parse_ps(const char *text, unsigned flags, sim_time *out, input_unit_error *err)
{
    number num;
    double ps;
    const unit_def *u;
    /* Shift the decimal exponent to picoseconds before converting (see units.h). */
    int rc = parse(text, INPUT_UNIT_TIME, flags, -12, &num, &ps, &u, err);
    if (rc)
        return rc;
    double r = ceil(ps);
    if (r >= SIM_INT64_DOUBLE_LIMIT) {
        set_err(err, NULL, "'%s' is out of range", text);
        return SIM_EINVAL;
    }
    *out = num.negative ? -(sim_time)r : (sim_time)r;
    return 0;
}

int input_parse_bytes(const char *text, int64_t *out)
{
    int64_t v;
    if (input_bytes_parse(text, INPUT_UNIT_ALLOW_BARE, &v, NULL) != 0 || v < 0)
        return SIM_EINVAL;
    *out = v;
    return 0;
}

int input_parse_quantity(const char *text, input_unit_kind kind, double *out)
{
    double v;
    if (kind < 0 || kind >= INPUT_UNIT_KIND_COUNT)
        return SIM_EINVAL;
    if (input_quantity_parse(text, kind, 0, &v, NULL) != 0 || v < 0)
        return SIM_EINVAL;
    *out = v;
    return 0;
}
