/* Unit test of simulated time (sim/core/time.c): seconds to integer picoseconds round UP to
 * the next picosecond, exact values stay exact despite double arithmetic, and picoseconds
 * converted to seconds and back are unchanged. */
#include "core/sim.h"

#include <math.h>

#include "test.h"

static void test_units(void)
{
    /* 1 s = 10^12 ps, 1 ms = 10^9 ps, 1 us = 10^6 ps, 1 ns = 10^3 ps */
    CHECK_INT_EQ(SIM_PS_PER_S, 1000000000000LL);
    CHECK_INT_EQ(SIM_PS_PER_MS, 1000000000LL);
    CHECK_INT_EQ(SIM_PS_PER_US, 1000000LL);
    CHECK_INT_EQ(SIM_PS_PER_NS, 1000LL);
}

static void test_from_s(void)
{
    /* zero stays zero */
    CHECK_INT_EQ(sim_time_from_s(0.0), 0);
    /* 1 us = 10^-6 s x 10^12 ps/s = 10^6 ps (1e-6 is not exact in binary: no spurious +1) */
    CHECK_INT_EQ(sim_time_from_s(1e-6), 1000000);
    /* 0.1 s = 10^11 ps exactly; 0.1 * 1e12 in double rounds to 100000000000.00002, whose
     * ceiling would be one ps too many */
    CHECK_INT_EQ(sim_time_from_s(0.1), 100000000000LL);
    /* 1 s = 10^12 ps */
    CHECK_INT_EQ(sim_time_from_s(1.0), SIM_PS_PER_S);
    /* 1 GB at 450 GB/s: 1e9 / 450e9 s = 2222222222.22... ps, rounded up to the next ps */
    CHECK_INT_EQ(sim_time_from_s(1e9 / 450e9), 2222222223LL);
    /* 1 ps = 10^-12 s */
    CHECK_INT_EQ(sim_time_from_s(1e-12), 1);
    /* 1.5 ps rounds up to 2 ps */
    CHECK_INT_EQ(sim_time_from_s(1.5e-12), 2);
    /* 0.3 ps (less than a picosecond but not zero) rounds up to 1 ps */
    CHECK_INT_EQ(sim_time_from_s(0.3e-12), 1);
    /* 1 KiB at 25 GB/s: 1024 / 25e9 s = 40.96 ns = 40960 ps exactly */
    CHECK_INT_EQ(sim_time_from_s(1024.0 / 25e9), 40960);
    /* 3 s / 7 = 428571428571.428... ps, rounded up */
    CHECK_INT_EQ(sim_time_from_s(3.0 / 7.0), 428571428572LL);
    /* 1e10 s = 1e22 ps is past the horizon (2^61 ps = 2,305,843.009213694 s): saturates */
    CHECK_INT_EQ(sim_time_from_s(1e10), SIM_TIME_HORIZON);
    /* 2,305,843 s = 2.305843e18 ps is 9,213,693,952 ps below 2^61 = 2305843009213693952:
     * kept exactly; 2,305,844 s is past it and saturates */
    CHECK_INT_EQ(sim_time_from_s(2305843.0), 2305843LL * SIM_PS_PER_S);
    CHECK_INT_EQ(sim_time_from_s(2305844.0), SIM_TIME_HORIZON);
    /* sim_time_from_ps truncates what the caller rounded, clamps NaN and negatives to 0 and
     * 1e30 ps to the horizon */
    CHECK_INT_EQ(sim_time_from_ps(1234.9), 1234);
    CHECK_INT_EQ(sim_time_from_ps(-5.0), 0);
    CHECK_INT_EQ(sim_time_from_ps(NAN), 0);
    CHECK_INT_EQ(sim_time_from_ps(1e30), SIM_TIME_HORIZON);
    /* one day = 86400 s = 8.64e16 ps still fits */
    CHECK_INT_EQ(sim_time_from_s(86400.0), 86400LL * SIM_PS_PER_S);
}

static void test_to_s(void)
{
    /* 10^12 ps = 1 s */
    CHECK_NEAR(sim_time_to_s(SIM_PS_PER_S), 1.0, 0, 0);
    /* 10^6 ps = 1 us */
    CHECK_NEAR(sim_time_to_s(SIM_PS_PER_US), 1e-6, 1e-15, 0);
    /* 2222222223 ps = 2.222222223 ms */
    CHECK_NEAR(sim_time_to_s(2222222223LL), 2.222222223e-3, 1e-15, 0);
}

/* ps -> s -> ps is the identity: to_s is correctly rounded, and from_s does not add a ps to a
 * value that already is a whole number of picoseconds. */
static void test_round_trip(void)
{
    int ok = 1;
    sim_time bad = -1;
    for (sim_time t = 0; t < 200000; t++) {
        if (sim_time_from_s(sim_time_to_s(t)) != t && bad < 0)
            bad = t;
    }
    /* a spread of larger values: multiples of a prime step up to ~1.4e15 ps (~1400 s) */
    for (sim_time t = 1; t < INT64_C(1400000000000000); t += INT64_C(999999999989)) {
        if (sim_time_from_s(sim_time_to_s(t)) != t && bad < 0)
            bad = t;
    }
    ok = bad < 0;
    if (!ok)
        fprintf(stderr, "round trip fails at t = %lld ps\n", (long long)bad);
    CHECK(ok);
}

int main(void)
{
    test_units();
    test_from_s();
    test_to_s();
    test_round_trip();
    return test_finish();
}
