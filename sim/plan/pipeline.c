/* Pipeline partition and schedules (see pipeline.h). */
#include "core/sim.h"

#include "plan/pipeline.h"

void plan_pp_partition(int layers, int chunks, int *out)
{
    SIM_ASSERT(chunks >= 1 && layers >= chunks, "%d layers on %d chunks", layers, chunks);
    int base = (layers + chunks - 1) / chunks;
    int deficit = base * chunks - layers;
    for (int c = 0; c < chunks; c++)
        out[c] = base;
    /* take from the ends inwards: 0, C-1, 1, C-2, ... (never below one layer) */
    for (int k = 0; deficit > 0; k++) {
        int c = k % chunks;
        int idx = (c % 2 == 0) ? c / 2 : chunks - 1 - c / 2;
        if (out[idx] > 1) {
            out[idx]--;
            deficit--;
        }
    }
}

/* The k-th forward (or backward) of the interleaved schedule: micro-batches advance in groups
 * of p, each group visiting the stage's virtual chunks in order (backward: in reverse). */
static plan_pp_action interleaved(int k, int p, int v, bool fwd)
{
    int pv = p * v, chunk = (k % pv) / p;
    return (plan_pp_action){.fwd = fwd, .mb = (k / pv) * p + k % p,
                            .vchunk = fwd ? chunk : v - 1 - chunk};
}

/* ZB-H1 (pipeline.h). */
static int zb_h1(int p, int m, int s, plan_pp_action *out)
{
    int n = 0, f = 0, b = 0, w = 0;
    uint8_t bpart = s == 0 ? PLAN_PP_FULL : PLAN_PP_INPUT;
#define F() (out[n++] = (plan_pp_action){.fwd = true, .mb = f++})
#define B() (out[n++] = (plan_pp_action){.fwd = false, .mb = b++, .part = bpart})
#define W() (out[n++] = (plan_pp_action){.fwd = false, .mb = w++, .part = PLAN_PP_WEIGHT})
    for (int k = 0; k < p - s - 1 && f < m; k++)
        F();
    for (int k = 0; k < s && f < m; k++) {
        F();
        B();
    }
    while (f < m) {
        F();
        B();
        if (s == 0)
            w++;
        else
            W();
    }
    while (b < m) {
        B();
        if (s == 0)
            w++;
        else
            W();
    }
    while (w < m)
        W();
#undef F
#undef B
#undef W
    return n;
}

int plan_pp_schedule(plan_schedule sched, int p, int v, int m, int s, plan_pp_action *out)
{
    SIM_ASSERT(p >= 1 && v >= 1 && m >= 1 && s >= 0 && s < p, "p=%d v=%d m=%d s=%d", p, v, m, s);
    if (sched == PLAN_SCHED_ZB_H1) {
        SIM_ASSERT(v == 1, "zb-h1 with %d virtual stages", v);
        return zb_h1(p, m, s, out);
    }
    int n = 0;
    if (sched == PLAN_SCHED_GPIPE) {
        for (int mb = 0; mb < m; mb++)
            for (int c = 0; c < v; c++)
                out[n++] = (plan_pp_action){.fwd = true, .mb = mb, .vchunk = c};
        for (int mb = m - 1; mb >= 0; mb--)
            for (int c = v - 1; c >= 0; c--)
                out[n++] = (plan_pp_action){.fwd = false, .mb = mb, .vchunk = c};
        return n;
    }
    /* 1F1B, and its interleaved form over m·v micro-batch chunks */
    int total = m * v;
    int warm = sched == PLAN_SCHED_INTERLEAVED && v > 1 ? (p - s - 1) * 2 + (v - 1) * p
                                                        : p - s - 1;
    if (warm > total)
        warm = total;
    if (sched == PLAN_SCHED_INTERLEAVED && v > 1)
        SIM_ASSERT(m % p == 0, "interleaved needs m (%d) to be a multiple of p (%d)", m, p);
    if (v == 1) {
        /* plain 1F1B: micro-batch k is simply k */
        for (int k = 0; k < warm; k++)
            out[n++] = (plan_pp_action){.fwd = true, .mb = k};
        for (int k = 0; k < total - warm; k++) {
            out[n++] = (plan_pp_action){.fwd = true, .mb = warm + k};
            out[n++] = (plan_pp_action){.fwd = false, .mb = k};
        }
        for (int k = total - warm; k < total; k++)
            out[n++] = (plan_pp_action){.fwd = false, .mb = k};
        return n;
    }
    for (int k = 0; k < warm; k++)
        out[n++] = interleaved(k, p, v, true);
    for (int k = 0; k < total - warm; k++) {
        out[n++] = interleaved(warm + k, p, v, true);
        out[n++] = interleaved(k, p, v, false);
    }
    for (int k = total - warm; k < total; k++)
        out[n++] = interleaved(k, p, v, false);
    return n;
}
