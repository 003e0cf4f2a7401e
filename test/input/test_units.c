/* Units (sim/input/units.h): every unit family with exact values, and each way a quantity is
 * rejected (bare number, negative, wrong kind, unknown unit with a suggestion). */
#include "core/sim.h"

#include "input/units.h"
#include "test.h"

static double q(const char *text, input_unit_kind kind)
{
    double v = -12345;
    input_unit_error e;
    int rc = input_quantity_parse(text, kind, 0, &v, &e);
    if (rc)
        fprintf(stderr, "unexpected error for '%s': %s\n", text, e.msg);
    return v;
}

static void test_sizes(void)
{
    int64_t b = 0;
    /* 80 GiB = 80 x 2^30 = 85899345920 B */
    CHECK_INT_EQ(input_parse_bytes("80 GiB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(85899345920));
    /* space optional: 8 x 2^30 = 8589934592 */
    CHECK_INT_EQ(input_parse_bytes("8GiB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(8589934592));
    CHECK_INT_EQ(input_parse_bytes("8 GiB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(8589934592));
    /* plain integers are bytes for CLI flags */
    CHECK_INT_EQ(input_parse_bytes("1048576", &b), 0);
    CHECK_INT_EQ(b, 1048576);
    /* decimal prefixes are powers of ten */
    CHECK_INT_EQ(input_parse_bytes("1 KB", &b), 0);
    CHECK_INT_EQ(b, 1000);
    CHECK_INT_EQ(input_parse_bytes("2 MB", &b), 0);
    CHECK_INT_EQ(b, 2000000);
    CHECK_INT_EQ(input_parse_bytes("3 GB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(3000000000));
    CHECK_INT_EQ(input_parse_bytes("1 TB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(1000000000000));
    CHECK_INT_EQ(input_parse_bytes("7 B", &b), 0);
    CHECK_INT_EQ(b, 7);
    /* binary: 1.5 KiB = 1536; 25 MiB = 25 x 2^20 = 26214400; 1 TiB = 2^40 */
    CHECK_INT_EQ(input_parse_bytes("1.5 KiB", &b), 0);
    CHECK_INT_EQ(b, 1536);
    CHECK_INT_EQ(input_parse_bytes("25 MiB", &b), 0);
    CHECK_INT_EQ(b, 26214400);
    CHECK_INT_EQ(input_parse_bytes("1 TiB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(1099511627776));
    /* exponents combine with prefixes: 1e3 MB = 1e9 B */
    CHECK_INT_EQ(input_parse_bytes("1e3 MB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(1000000000));
    /* 79.1 GiB = 79 x 2^30 + 0.1 x 2^30 = 84825604096 + 107374182.4 = 84932978278.4 B,
     * rounded to the nearest byte (and 2.7 B to 3) */
    CHECK_INT_EQ(input_parse_bytes("79.1 GiB", &b), 0);
    CHECK_INT_EQ(b, INT64_C(84932978278));
    CHECK_INT_EQ(input_parse_bytes("2.7 B", &b), 0);
    CHECK_INT_EQ(b, 3);

    /* rejected: negative, fractional bare bytes, other kinds, unknown units, no number */
    b = 99;
    CHECK_INT_EQ(input_parse_bytes("-1 GiB", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("1.5", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("8 GB/s", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("8 GIB", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("GiB", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("0x10", &b), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_bytes("1e30 TB", &b), SIM_EINVAL); /* beyond int64 */
    CHECK_INT_EQ(b, 99); /* untouched on error */

    /* the detailed parser keeps the sign for the caller's range check */
    input_unit_error e;
    CHECK_INT_EQ(input_bytes_parse("-25 MiB", 0, &b, &e), 0);
    CHECK_INT_EQ(b, -26214400);
}

static void test_bandwidth(void)
{
    /* bits are an eighth of a byte: 400 Gb/s = 400e9 / 8 = 5e10 B/s */
    CHECK_NEAR(q("400 Gb/s", INPUT_UNIT_BANDWIDTH), 5e10, 0, 0);
    CHECK_NEAR(q("8 b/s", INPUT_UNIT_BANDWIDTH), 1, 0, 0);
    CHECK_NEAR(q("1 Kb/s", INPUT_UNIT_BANDWIDTH), 125, 0, 0);
    CHECK_NEAR(q("8 Mb/s", INPUT_UNIT_BANDWIDTH), 1e6, 0, 0);
    CHECK_NEAR(q("2 Tb/s", INPUT_UNIT_BANDWIDTH), 2.5e11, 0, 0);
    /* bytes per second */
    CHECK_NEAR(q("450 GB/s", INPUT_UNIT_BANDWIDTH), 4.5e11, 0, 0);
    CHECK_NEAR(q("3.35 TB/s", INPUT_UNIT_BANDWIDTH), 3.35e12, 0, 0); /* nearest double, exactly */
    CHECK_NEAR(q("7 B/s", INPUT_UNIT_BANDWIDTH), 7, 0, 0);
    CHECK_NEAR(q("5 KB/s", INPUT_UNIT_BANDWIDTH), 5e3, 0, 0);
    CHECK_NEAR(q("5 MB/s", INPUT_UNIT_BANDWIDTH), 5e6, 0, 0);
    /* binary: 2 GiB/s = 2^31; 1 KiB/s = 1024; 3 MiB/s = 3 x 2^20 */
    CHECK_NEAR(q("2 GiB/s", INPUT_UNIT_BANDWIDTH), 2147483648.0, 0, 0);
    CHECK_NEAR(q("1 KiB/s", INPUT_UNIT_BANDWIDTH), 1024, 0, 0);
    CHECK_NEAR(q("3 MiB/s", INPUT_UNIT_BANDWIDTH), 3145728, 0, 0);
    CHECK_NEAR(q("25GB/s", INPUT_UNIT_BANDWIDTH), 2.5e10, 0, 0);
    double v;
    CHECK_INT_EQ(input_parse_quantity("400 Gb/s", INPUT_UNIT_BANDWIDTH, &v), 0);
    CHECK_NEAR(v, 5e10, 0, 0);
}

static void test_time_and_flops(void)
{
    /* seconds in SI: 1 us is the double nearest to 1e-6 */
    CHECK_NEAR(q("1 us", INPUT_UNIT_TIME), 1e-6, 0, 0);
    CHECK_NEAR(q("2 ms", INPUT_UNIT_TIME), 2e-3, 0, 0);
    CHECK_NEAR(q("3 s", INPUT_UNIT_TIME), 3, 0, 0);
    CHECK_NEAR(q("5 ns", INPUT_UNIT_TIME), 5e-9, 0, 0);
    CHECK_NEAR(q("7 ps", INPUT_UNIT_TIME), 7e-12, 0, 0);
    /* picoseconds: exponent shifted before conversion, so 1 us is exactly 10^6 ps */
    sim_time t = 0;
    CHECK_INT_EQ(input_time_parse_ps("1 us", 0, &t, NULL), 0);
    CHECK_INT_EQ(t, 1000000);
    CHECK_INT_EQ(input_time_parse_ps("250 ns", 0, &t, NULL), 0);
    CHECK_INT_EQ(t, 250000);
    CHECK_INT_EQ(input_time_parse_ps("1.5e-3 s", 0, &t, NULL), 0);
    CHECK_INT_EQ(t, INT64_C(1500000000));
    CHECK_INT_EQ(input_time_parse_ps("0.1 ms", 0, &t, NULL), 0);
    CHECK_INT_EQ(t, 100000000); /* 0.1 ms = 1e8 ps, no ulp overshoot from ceil */
    /* fractions of a picosecond round up: 1.5 ps -> 2 ps */
    CHECK_INT_EQ(input_time_parse_ps("1.5 ps", 0, &t, NULL), 0);
    CHECK_INT_EQ(t, 2);

    CHECK_NEAR(q("10 FLOP", INPUT_UNIT_FLOPS), 10, 0, 0);
    CHECK_NEAR(q("2 KFLOP", INPUT_UNIT_FLOPS), 2e3, 0, 0);
    CHECK_NEAR(q("2 MFLOP", INPUT_UNIT_FLOPS), 2e6, 0, 0);
    CHECK_NEAR(q("0.1 GFLOP", INPUT_UNIT_FLOPS), 1e8, 0, 0);
    CHECK_NEAR(q("1000 GFLOP", INPUT_UNIT_FLOPS), 1e12, 0, 0);
    CHECK_NEAR(q("3 TFLOP", INPUT_UNIT_FLOPS), 3e12, 0, 0);
    CHECK_NEAR(q("1 PFLOP", INPUT_UNIT_FLOPS), 1e15, 0, 0);
    CHECK_NEAR(q("989 TFLOP/s", INPUT_UNIT_FLOP_RATE), 9.89e14, 0, 0);
    CHECK_NEAR(q("1979 TFLOP/s", INPUT_UNIT_FLOP_RATE), 1.979e15, 0, 0);
    CHECK_NEAR(q("82.6 TFLOP/s", INPUT_UNIT_FLOP_RATE), 8.26e13, 0, 0);
    CHECK_NEAR(q("5 GFLOP/s", INPUT_UNIT_FLOP_RATE), 5e9, 0, 0);
    CHECK_NEAR(q("1 PFLOP/s", INPUT_UNIT_FLOP_RATE), 1e15, 0, 0);
    CHECK_NEAR(q("7 FLOP/s", INPUT_UNIT_FLOP_RATE), 7, 0, 0);
    CHECK_NEAR(q("7 KFLOP/s", INPUT_UNIT_FLOP_RATE), 7e3, 0, 0);
    CHECK_NEAR(q("7 MFLOP/s", INPUT_UNIT_FLOP_RATE), 7e6, 0, 0);
}

static void test_errors(void)
{
    input_unit_error e;
    double v = 0;

    /* bare number where a unit is needed */
    CHECK_INT_EQ(input_quantity_parse("450", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_HAS(e.msg, "missing unit in '450'");
    CHECK_STR_EQ(e.hint, "write \"450 GB/s\"");
    CHECK_INT_EQ(input_parse_quantity("450", INPUT_UNIT_BANDWIDTH, &v), SIM_EINVAL);
    /* ... unless the caller allows it (base unit) */
    CHECK_INT_EQ(input_quantity_parse("450", INPUT_UNIT_BANDWIDTH, INPUT_UNIT_ALLOW_BARE, &v, &e), 0);
    CHECK_NEAR(v, 450, 0, 0);

    /* negative: the detailed parser returns it, the CLI helper rejects it */
    CHECK_INT_EQ(input_quantity_parse("-2 us", INPUT_UNIT_TIME, 0, &v, &e), 0);
    CHECK_NEAR(v, -2e-6, 0, 0);
    CHECK_INT_EQ(input_parse_quantity("-2 us", INPUT_UNIT_TIME, &v), SIM_EINVAL);

    /* wrong kind names what was found and what is expected, with an example */
    CHECK_INT_EQ(input_quantity_parse("450 GB", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_EQ(e.msg, "'450 GB' is a size, but a bandwidth is expected here");
    CHECK_STR_HAS(e.hint, "\"450 GB/s\"");
    CHECK_INT_EQ(input_quantity_parse("10 us", INPUT_UNIT_FLOPS, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_EQ(e.msg, "'10 us' is a time, but a FLOP count is expected here");

    /* unknown unit: did-you-mean within the kind (Gbps -> Gb/s: one substitution) */
    CHECK_INT_EQ(input_quantity_parse("400 Gbps", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_EQ(e.msg, "unknown unit 'Gbps' in '400 Gbps'; did you mean 'Gb/s'?");
    CHECK_STR_HAS(e.hint, "bandwidth units: b/s");
    /* case matters, but a case-only difference is suggested */
    CHECK_INT_EQ(input_quantity_parse("80 gib", INPUT_UNIT_BYTES, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_HAS(e.msg, "did you mean 'GiB'?");
    CHECK_INT_EQ(input_quantity_parse("4 usec", INPUT_UNIT_TIME, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_HAS(e.msg, "unknown unit 'usec'");

    /* not a number */
    CHECK_INT_EQ(input_quantity_parse("fast", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_HAS(e.msg, "expected a bandwidth");
    CHECK_INT_EQ(input_quantity_parse("inf GB/s", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_INT_EQ(input_quantity_parse("1e999 GB/s", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_STR_HAS(e.msg, "out of range");
    CHECK_INT_EQ(input_quantity_parse("1..5 GB/s", INPUT_UNIT_BANDWIDTH, 0, &v, &e), SIM_EINVAL);
    CHECK_INT_EQ(input_parse_quantity("1 GB/s", INPUT_UNIT_KIND_COUNT, &v), SIM_EINVAL);

    CHECK_STR_EQ(input_unit_kind_name(INPUT_UNIT_FLOP_RATE), "FLOP rate");
    CHECK_STR_EQ(input_unit_kind_example(INPUT_UNIT_TIME), "1 us");
}

int main(void)
{
    test_sizes();
    test_bandwidth();
    test_time_and_flops();
    test_errors();
    return test_finish();
}
