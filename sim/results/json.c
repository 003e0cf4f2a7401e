/* JSON summary objects (see json.h and docs/json.md).
 *
 * Numbers: a double is printed with the fewest of 15, 16 or 17 significant digits that
 * strtod reads back to the same bits, so a value round-trips exactly and common values stay
 * short (0.1, not 0.10000000000000001). Printing uses the C locale (the CLI never calls
 * setlocale), so the decimal separator is always '.'. */
#include "core/sim.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results/json.h"

void results_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            p++;
            continue;
        }
        if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            p++;
            continue;
        }
        if (c < 0x80) {
            fputc((int)c, out);
            p++;
            continue;
        }
        /* Multi-byte UTF-8: pass a well-formed sequence through unchanged (RFC 3629 ranges:
         * no overlong forms, no surrogates, nothing above U+10FFFF); replace a malformed
         * byte by U+FFFD so the output is always valid UTF-8 JSON. */
        size_t len = 0;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        }
        int ok = len > 0 && p[1] >= lo && p[1] <= hi;
        for (size_t i = 2; ok && i < len; i++)
            ok = p[i] >= 0x80 && p[i] <= 0xbf;
        if (!ok) {
            fputs("\\ufffd", out);
            p++;
            continue;
        }
        fwrite(p, 1, len, out);
        p += len;
    }
    fputc('"', out);
}

static void json_string_or_null(FILE *out, const char *s)
{
    if (s && *s)
        results_json_string(out, s);
    else
        fputs("null", out);
}

void results_json_number(FILE *out, double v)
{
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

static void json_double(FILE *out, const char *key, double v)
{
    SIM_ASSERT(isfinite(v), "JSON value %s is %g", key, v);
    results_json_number(out, v);
}

/* A figure of the replay: null for a run recorded without one (replay_summary_untimed). */
static void json_timed(FILE *out, const char *key, double v)
{
    if (isnan(v))
        fputs("null", out);
    else
        json_double(out, key, v);
}

static void json_key(FILE *out, const char *key)
{
    fputc('"', out);
    fputs(key, out); /* keys are fixed ASCII identifiers: nothing to escape */
    fputs("\":", out);
}

static void json_mem(FILE *out, const replay_summary *s)
{
    json_key(out, "peak_mem_bytes");
    fprintf(out, "%" PRId64 ",", s->peak_mem_bytes);
    json_key(out, "mem_bytes");
    fputc('{', out);
    for (int c = 0; c < PLAN_MEM_COUNT; c++) {
        if (c)
            fputc(',', out);
        json_key(out, plan_mem_cat_name((plan_mem_cat)c));
        fprintf(out, "%" PRId64, s->mem_bytes[c]);
    }
    fputs("},", out);
    json_key(out, "capacity_bytes");
    fprintf(out, "%" PRId64 ",", s->capacity_bytes);
    json_key(out, "binding_constraint");
    json_string_or_null(out, s->binding_constraint);
    if (s->offloaded) {
        fputc(',', out);
        json_key(out, "host_memory");
        fputc('{', out);
        json_key(out, "node");
        fprintf(out, "%d,", s->host_node);
        json_key(out, "bytes");
        fprintf(out, "%" PRId64 ",", s->host_mem_bytes);
        json_key(out, "capacity_bytes");
        if (s->host_capacity_bytes > 0)
            fprintf(out, "%" PRId64 "}", s->host_capacity_bytes);
        else
            fputs("null}", out);
    }
}

static void json_head(FILE *out, const replay_summary *s)
{
    fputc('{', out);
    json_key(out, "name");
    results_json_string(out, s->name);
    fputc(',', out);
    json_key(out, "status");
    results_json_string(out, replay_status_name(s->status));
    fputc(',', out);
    json_key(out, "error");
    json_string_or_null(out, s->error);
    fputc(',', out);
    json_key(out, "gpus");
    fprintf(out, "%d,", s->gpus);
}

const char *results_bottleneck_name(results_bottleneck b)
{
    static const char *const names[RESULTS_BOTTLENECK_COUNT] = {
        "compute", "exposed_comm", "bubbles", "offload", "host"};
    SIM_ASSERT(b >= 0 && b < RESULTS_BOTTLENECK_COUNT, "bottleneck %d", (int)b);
    return names[b];
}

static void json_verdict(FILE *out, const results_verdict *v)
{
    fputc(',', out);
    json_key(out, "verdict");
    fputc('{', out);
    json_key(out, "status");
    fputs(v->oom ? "\"oom\"," : "\"fits\",", out);
    json_key(out, "capacity_bytes");
    fprintf(out, "%" PRId64 ",", v->capacity_bytes);
    json_key(out, "headroom_bytes");
    fprintf(out, "%" PRId64 ",", v->headroom_bytes);
    json_key(out, "binding");
    if (v->has_binding) {
        fputc('{', out);
        json_key(out, "item");
        results_json_string(out, results_verdict_item(v));
        fputc(',', out);
        json_key(out, "bytes");
        fprintf(out, "%" PRId64 ",", v->binding_bytes);
        json_key(out, "why");
        results_json_string(out, v->binding_why);
        fputs("},", out);
    } else {
        fputs("null,", out);
    }
    json_key(out, "bottleneck");
    if (v->has_bottleneck) {
        fputc('{', out);
        json_key(out, "kind");
        results_json_string(out, results_bottleneck_name(v->bottleneck));
        fputc(',', out);
        json_key(out, "group");
        if (v->bottleneck_group >= 0)
            results_json_string(out, plan_group_name((plan_group_class)v->bottleneck_group));
        else
            fputs("null", out);
        fputc(',', out);
        json_key(out, "share");
        json_double(out, "verdict.bottleneck.share", v->bottleneck_share);
        fputs("},", out);
    } else {
        fputs("null,", out);
    }
    json_key(out, "remedies");
    fputc('[', out);
    for (size_t i = 0; i < v->n_remedies; i++) {
        const results_remedy *m = &v->remedies[i];
        if (i)
            fputc(',', out);
        fputc('{', out);
        json_key(out, "changes");
        fputc('{', out);
        for (int k = 0; k < m->n_changes; k++) {
            if (k)
                fputc(',', out);
            results_json_string(out, m->key[k]);
            fputc(':', out);
            results_json_string(out, m->value[k]);
        }
        fputs("},", out);
        json_key(out, "status");
        fputs("\"ok\",", out);
        json_key(out, "gpus");
        fprintf(out, "%d,", m->gpus);
        json_key(out, "peak_mem_bytes");
        fprintf(out, "%" PRId64 ",", m->peak_mem_bytes);
        json_key(out, "headroom_bytes");
        fprintf(out, "%" PRId64 ",", m->headroom_bytes);
        json_key(out, "step_time_s");
        json_timed(out, "verdict.remedies.step_time_s", m->step_time_s);
        fputc(',', out);
        json_key(out, "why");
        results_json_string(out, m->why);
        fputc('}', out);
    }
    fputs("]}", out);
}

const char *results_verdict_item(const results_verdict *v)
{
    return v->binding_host ? "host" : plan_mem_cat_name(v->binding);
}

void results_json_write_run(FILE *out, const replay_results *r)
{
    results_json_write_run_verdict(out, r, NULL);
}

void results_json_write_run_verdict(FILE *out, const replay_results *r,
                                    const results_verdict *v)
{
    const replay_summary *s = &r->summary;
    json_head(out, s);
    json_key(out, "steps");
    fprintf(out, "%d,", s->steps);

    const struct {
        const char *key;
        double v;
    } scalars[] = {
        {"step_time_s", s->step_time_s},   {"tokens_per_s", s->tokens_per_s},
        {"samples_per_s", s->samples_per_s}, {"tflops_per_gpu", s->tflops_per_gpu},
        {"mfu", s->mfu},                   {"hfu", s->hfu},
        {"bubble_fraction", s->bubble_fraction},
    };
    for (size_t i = 0; i < SIM_ARRAY_LEN(scalars); i++) {
        json_key(out, scalars[i].key);
        json_timed(out, scalars[i].key, scalars[i].v);
        fputc(',', out);
    }

    json_key(out, "bubble_by_cause");
    fputc('{', out);
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++) {
        if (c)
            fputc(',', out);
        json_key(out, replay_cause_name((replay_cause)c));
        json_timed(out, "bubble_by_cause", s->bubble_by_cause[c]);
    }
    fputs("},", out);

    json_key(out, "exposed_comm_s");
    fputc('{', out);
    for (int g = 0; g < PLAN_GROUP_COUNT; g++) {
        if (g)
            fputc(',', out);
        json_key(out, plan_group_name((plan_group_class)g));
        json_timed(out, "exposed_comm_s", s->exposed_comm_s[g]);
    }
    fputs("},", out);

    json_key(out, "comm_bytes_per_gpu");
    fputc('{', out);
    for (int g = 0; g < REPLAY_COMM_COUNT; g++) {
        if (g)
            fputc(',', out);
        json_key(out, g == REPLAY_COMM_OFFLOAD ? "offload" : plan_group_name((plan_group_class)g));
        json_timed(out, "comm_bytes_per_gpu", s->comm_bytes_per_gpu[g]);
    }
    fputs("},", out);

    if (s->budget_tokens > 0) {
        json_key(out, "budget");
        fputc('{', out);
        json_key(out, "tokens");
        json_double(out, "budget.tokens", s->budget_tokens);
        fputc(',', out);
        json_key(out, "steps");
        json_double(out, "budget.steps", s->budget_steps);
        fputc(',', out);
        json_key(out, "time_to_train_s");
        json_double(out, "budget.time_to_train_s", s->time_to_train_s);
        fputc(',', out);
        json_key(out, "gpu_hours");
        json_double(out, "budget.gpu_hours", s->gpu_hours);
        fputc(',', out);
        json_key(out, "cost");
        if (isfinite(s->cost))
            json_double(out, "budget.cost", s->cost);
        else
            fputs("null", out);
        fputs("},", out);
    }

    if (s->symmetry_dp) {
        /* reported when used, never silently */
        json_key(out, "symmetry");
        fputs("\"dp\",", out);
        json_key(out, "symmetry_collectives");
        fputs(s->symmetry_estimated ? "\"estimate\"," : "\"flows\",", out);
    }

    if (s->steady_periods > 0) {
        /* reported when used: simulation.steady_state moved over whole periods */
        json_key(out, "steady_state");
        fputc('{', out);
        json_key(out, "periods_skipped");
        fprintf(out, "%" PRIu64 ",", s->steady_periods);
        json_key(out, "ops_skipped");
        fprintf(out, "%" PRIu64 ",", s->steady_ops);
        json_key(out, "skipped_s");
        json_double(out, "steady_state.skipped_s", s->steady_skipped_s);
        fputs("},", out);
    }

    if (s->moe) {
        json_key(out, "moe");
        fputc('{', out);
        json_key(out, "dropped_fraction");
        json_double(out, "moe.dropped_fraction", s->moe_dropped_fraction);
        fputc(',', out);
        json_key(out, "load_max_over_mean");
        json_double(out, "moe.load_max_over_mean", s->moe_load_max_over_mean);
        fputs("},", out);
    }

    if (s->variable) {
        json_key(out, "slowest_rank");
        fputc('{', out);
        json_key(out, "rank");
        fprintf(out, "%d,", s->slowest_rank);
        json_key(out, "compute_s");
        json_double(out, "slowest_rank.compute_s", s->slowest_compute_s);
        fputc(',', out);
        json_key(out, "wait_s");
        json_double(out, "slowest_rank.wait_s", s->slowest_wait_s);
        fputs("},", out);
    }

    json_mem(out, s);
    if (v)
        json_verdict(out, v);
    fputs("}\n", out);
}

void results_json_write_mem(FILE *out, const replay_summary *s, const results_verdict *v)
{
    json_head(out, s);
    json_mem(out, s);
    if (v)
        json_verdict(out, v);
    fputs("}\n", out);
}
