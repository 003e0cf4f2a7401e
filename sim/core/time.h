/* Simulated time: an integer count of picoseconds.
 *
 * Integer time makes event ordering exact and runs reproducible. Conversions from seconds
 * round UP to the next picosecond (a transfer is never reported as finishing before its last
 * byte could have arrived); see docs/engine.md for the rounding rules of flows. */
#ifndef SIM_CORE_TIME_H
#define SIM_CORE_TIME_H

#include <stdint.h>

typedef int64_t sim_time;

#define SIM_PS_PER_S  INT64_C(1000000000000)
#define SIM_PS_PER_MS INT64_C(1000000000)
#define SIM_PS_PER_US INT64_C(1000000)
#define SIM_PS_PER_NS INT64_C(1000)
#define SIM_TIME_NEVER INT64_MAX
/* Doubles at or above this do not fit an int64_t (INT64_MAX ~ 9.223e18) once converted: a
 * round bound below it, safe against the conversion's rounding. */
#define SIM_INT64_DOUBLE_LIMIT 9.2e18

/* The longest simulated time a run may reach: 2^61 ps, about 26.7 days (docs/engine.md,
 * "Time"). Durations converted from doubles saturate here, and the replay stops with an error
 * at the first event at or past it, so `now + d1 + d2 + small` (now, d1, d2 each at most the
 * horizon) stays below INT64_MAX and no time arithmetic can overflow. The loader refuses
 * scenarios whose estimated simulated time reaches it. */
#define SIM_TIME_HORIZON (INT64_C(1) << 61)

/* Seconds (>= 0, finite) to picoseconds, rounded up. Values at or beyond the horizon
 * saturate at SIM_TIME_HORIZON. Cannot fail. */
sim_time sim_time_from_s(double seconds);

/* A picosecond count computed in double, already rounded as the caller wants (ceil, or
 * + 0.5), to sim_time: truncated, with NaN and negative values 0 and values at or beyond the
 * horizon SIM_TIME_HORIZON (a plain cast of a double beyond INT64_MAX is undefined).
 * Cannot fail. */
sim_time sim_time_from_ps(double ps);

/* Picoseconds to seconds (exact up to double rounding). Cannot fail. */
double sim_time_to_s(sim_time t);

#endif
