/* Unit test of sim/results/json: key set and order, number formatting, string escaping. The
 * contract itself (types, key sets, mem_bytes summing to the peak) is checked on the output
 * of write_sample by test/contract/check.py in the results-out-contract-json test. */
#include "core/sim.h"

#include <stdlib.h>

#include "../test.h"
#include "results/json.h"
#include "sample.h"

/* Runs `print` into a temporary file and returns its contents (caller frees). */
static char *capture_run(const replay_results *r)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return sim_strdup("");
    results_json_write_run(f, r);
    CHECK(!ferror(f));
    long n = ftell(f);
    rewind(f);
    char *buf = sim_calloc((size_t)n + 1, 1);
    CHECK_INT_EQ(fread(buf, 1, (size_t)n, f), n);
    fclose(f);
    return buf;
}

static char *capture_mem(const replay_summary *s)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return sim_strdup("");
    results_json_write_mem(f, s, NULL);
    long n = ftell(f);
    rewind(f);
    char *buf = sim_calloc((size_t)n + 1, 1);
    CHECK_INT_EQ(fread(buf, 1, (size_t)n, f), n);
    fclose(f);
    return buf;
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static void test_ok_run(void)
{
    replay_results *r = sample_results("tiny", REPLAY_STATUS_OK);
    char *j = capture_run(r);
    /* One line, one object. */
    CHECK_INT_EQ(count_char(j, '\n'), 1);
    CHECK_INT_EQ(j[strlen(j) - 1], '\n');
    CHECK_INT_EQ(j[0], '{');
    CHECK_INT_EQ(j[strlen(j) - 2], '}');
    CHECK_INT_EQ(count_char(j, '{'), 5); /* the object and its 4 nested objects */
    CHECK_STR_HAS(j, "{\"name\":\"tiny\",\"status\":\"ok\",\"error\":null,\"gpus\":2,\"steps\":2,");
    /* Short round-trip forms: 0.5, 0.4 (not 0.40000000000000002), integral doubles bare. */
    CHECK_STR_HAS(j, "\"step_time_s\":0.5,\"tokens_per_s\":65536,\"samples_per_s\":32,");
    CHECK_STR_HAS(j, "\"tflops_per_gpu\":123.25,\"mfu\":0.4,\"hfu\":0.45,\"bubble_fraction\":0.25,");
    CHECK_STR_HAS(j, "\"bubble_by_cause\":{\"pipeline\":0.125,\"dp\":0.0625,\"tp\":0,\"pp\":0,"
                     "\"ep\":0,\"cp\":0,\"offload\":0,\"host\":0,\"other\":0.0625},");
    CHECK_STR_HAS(j, "\"exposed_comm_s\":{\"dp\":0.03125,\"tp\":0,\"pp\":0,\"ep\":0,\"cp\":0},");
    CHECK_STR_HAS(j, "\"comm_bytes_per_gpu\":{\"dp\":8000000000,\"tp\":0,\"pp\":0,\"ep\":0,"
                     "\"cp\":0,\"offload\":1500000000},");
    /* 8e9 + 4e9 + 6e9 + 3e9 + 5e8 + 123456789 = 21623456789 */
    CHECK_STR_HAS(j, "\"peak_mem_bytes\":21623456789,\"mem_bytes\":{\"params\":8000000000,"
                     "\"grads\":4000000000,\"optimizer\":6000000000,\"activations\":3000000000,"
                     "\"buffers\":500000000,\"other\":123456789},");
    /* 24 GiB = 24 * 2^30 = 25769803776 */
    CHECK_STR_HAS(j, "\"capacity_bytes\":25769803776,\"binding_constraint\":null}\n");
    sim_free(j);
    replay_results_destroy(r);
}

static void test_round_trip(void)
{
    replay_results *r = sample_results("rt", REPLAY_STATUS_OOM);
    /* 0.1 + 0.2 needs 17 digits; 1/3 needs 16; 1e-300 and 1.5e300 need exponents. */
    r->summary.step_time_s = 0.1 + 0.2;
    r->summary.tokens_per_s = 1.0 / 3.0;
    r->summary.samples_per_s = 1e-300;
    r->summary.tflops_per_gpu = 1.5e300;
    char *j = capture_run(r);
    CHECK_STR_HAS(j, "\"step_time_s\":0.30000000000000004,");
    CHECK_STR_HAS(j, "\"samples_per_s\":1e-300,");
    CHECK_STR_HAS(j, "\"tflops_per_gpu\":1.5e+300,");
    const char *tp = strstr(j, "\"tokens_per_s\":");
    CHECK(tp != NULL);
    if (tp)
        CHECK(strtod(tp + strlen("\"tokens_per_s\":"), NULL) == 1.0 / 3.0);
    CHECK_STR_HAS(j, "\"status\":\"oom\"");
    CHECK_STR_HAS(j, "\"binding_constraint\":\"model states\"}");
    sim_free(j);
    replay_results_destroy(r);
}

static void test_escaping(void)
{
    replay_results *r = sample_results("x", REPLAY_STATUS_ERROR);
    /* quote, backslash, newline, tab, U+0001, U+007F (kept), é (C3 A9, kept), a lone
     * continuation byte and a truncated 3-byte sequence (each -> U+FFFD), then U+1F600. */
    snprintf(r->summary.name, sizeof r->summary.name, "%s",
             "a\"b\\c\n\t\x01\x7f\xc3\xa9\x80\xe2\x82-\xf0\x9f\x98\x80");
    snprintf(r->summary.error, sizeof r->summary.error, "%s", "bad </script> \"x\"");
    char *j = capture_run(r);
    CHECK_STR_HAS(j, "\"name\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\x7f\xc3\xa9\\ufffd\\ufffd\\ufffd-"
                     "\xf0\x9f\x98\x80\",");
    CHECK_STR_HAS(j, "\"status\":\"error\",\"error\":\"bad </script> \\\"x\\\"\",");
    /* error runs print every key: the replay figures null (not replayed), memory 0 */
    CHECK_STR_HAS(j, "\"step_time_s\":null,\"tokens_per_s\":null,");
    CHECK_STR_HAS(j, "\"exposed_comm_s\":{\"dp\":null,\"tp\":null,\"pp\":null,\"ep\":null,"
                     "\"cp\":null},");
    CHECK_STR_HAS(j, "\"peak_mem_bytes\":0,");
    CHECK_STR_HAS(j, "\"binding_constraint\":null}\n");
    CHECK_INT_EQ(count_char(j, '\n'), 1);
    sim_free(j);
    replay_results_destroy(r);
}

static void test_mem(void)
{
    replay_summary s;
    sample_summary(&s, "mem-only", REPLAY_STATUS_OOM);
    char *j = capture_mem(&s);
    CHECK_STR_HAS(j, "{\"name\":\"mem-only\",\"status\":\"oom\",\"error\":null,\"gpus\":2,"
                     "\"peak_mem_bytes\":21623456789,\"mem_bytes\":{\"params\":8000000000,");
    CHECK_STR_HAS(j, "\"capacity_bytes\":25769803776,\"binding_constraint\":\"model states\"}\n");
    CHECK(strstr(j, "step_time_s") == NULL); /* what tells the checker it is a mem object */
    CHECK_INT_EQ(count_char(j, '\n'), 1);
    sim_free(j);
}

int main(void)
{
    test_ok_run();
    test_round_trip();
    test_escaping();
    test_mem();
    return test_finish();
}
