/* Conversions between seconds and integer picoseconds (see time.h for the rounding rule). */
#include "core/sim.h"

#include <math.h>

sim_time sim_time_from_s(double seconds)
{
    SIM_ASSERT(seconds >= 0 && isfinite(seconds), "seconds=%g", seconds);
    double ps = ceil(seconds * (double)SIM_PS_PER_S);
    /* ceil of a value computed in double may overshoot by one ulp when the exact product is
     * an integer (e.g. 0.1 s): undo the step when the value below reproduces the input. */
    if (ps >= 1 && (ps - 1) / (double)SIM_PS_PER_S >= seconds)
        ps -= 1;
    if (ps >= (double)SIM_TIME_HORIZON)
        return SIM_TIME_HORIZON;
    return (sim_time)ps;
}

sim_time sim_time_from_ps(double ps)
{
    if (!(ps > 0))
        return 0; /* NaN and negative */
    if (ps >= (double)SIM_TIME_HORIZON)
        return SIM_TIME_HORIZON;
    return (sim_time)ps;
}

double sim_time_to_s(sim_time t)
{
    return (double)t / (double)SIM_PS_PER_S;
}
