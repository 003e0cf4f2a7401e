/* Variability (docs/strategies.md, "Stragglers and jitter"): simulation.stragglers' slowed
 * ranks and simulation.jitter's per-kernel lognormal factors, and the slowest rank the
 * summary names. */
#include "core/sim.h"

#include <math.h>

#include <gsl/gsl_randist.h>

#include "replay/replay-internal.h"

/* 64-bit mix (splitmix64's finaliser): distinct seeds per rank from one scenario seed. */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

void replay__init_variability(replay_ctx *c)
{
    const plan_simulation *s = &c->p->sc->simulation;
    int n = c->p->n_ranks;
    if (s->n_stragglers > 0) {
        c->slowdown = sim_calloc((size_t)n, sizeof *c->slowdown);
        for (int r = 0; r < n; r++)
            c->slowdown[r] = 1;
        for (int i = 0; i < s->n_stragglers; i++) {
            SIM_ASSERT(s->stragglers[i].rank < n, "straggler rank %d of %d not validated",
                       s->stragglers[i].rank, n);
            c->slowdown[s->stragglers[i].rank] = s->stragglers[i].slowdown;
        }
    }
    if (s->jitter > 0) {
        /* lognormal of mean 1 and coefficient of variation cv: sigma^2 = ln(1 + cv^2),
         * mu = -sigma^2 / 2 */
        double var = log1p(s->jitter * s->jitter);
        c->jitter_sigma = sqrt(var);
        c->jitter_mu = -var / 2;
        c->jitter = sim_calloc((size_t)n, sizeof *c->jitter);
        for (int r = 0; r < n; r++) {
            c->jitter[r] = gsl_rng_alloc(gsl_rng_taus2);
            SIM_ASSERT(c->jitter[r] != NULL, "out of memory for rank %d's generator", r);
            uint64_t seed = mix64(s->seed ^ mix64((uint64_t)r + 1));
            gsl_rng_set(c->jitter[r], (unsigned long)(seed ? seed : 1));
        }
    }
}

/* A kernel's duration on `rank` this time: its roofline (or measured) duration `d` times the
 * rank's slowdown and, with jitter, a fresh lognormal draw from the rank's generator. */
sim_time replay__kernel_duration(replay_ctx *c, int rank, sim_time d)
{
    if (!c->slowdown && !c->jitter)
        return d;
    double f = c->slowdown ? c->slowdown[rank] : 1;
    if (c->jitter)
        f *= gsl_ran_lognormal(c->jitter[rank], c->jitter_mu, c->jitter_sigma);
    return sim_time_from_ps((double)d * f + 0.5);
}

/* With stragglers, jitter or GPUs of several models (topology.node_groups): the rank with the
 * most compute in the reported step and how long the others wait for it, on average
 * (docs/json.md, `slowest_rank`). */
void replay__slowest(const replay_ctx *c, replay_summary *s, const replay_results *r)
{
    const plan_simulation *sim = &c->p->sc->simulation;
    s->slowest_rank = -1;
    s->slowest_compute_s = s->slowest_wait_s = NAN;
    s->variable = sim->n_stragglers > 0 || sim->jitter > 0 || c->p->sc->topology.n_groups > 0;
    if (!s->variable)
        return;
    int n = c->p->n_ranks, best = 0;
    double sum = 0;
    for (int rk = 0; rk < n; rk++) {
        sum += r->ranks[rk].compute_s;
        if (r->ranks[rk].compute_s > r->ranks[best].compute_s)
            best = rk;
    }
    s->slowest_rank = best;
    s->slowest_compute_s = r->ranks[best].compute_s;
    /* (rounding may put the others' mean a hair above the maximum when all are equal) */
    s->slowest_wait_s =
        n > 1 ? SIM_MAX(0.0, s->slowest_compute_s - (sum - s->slowest_compute_s) / (n - 1)) : 0;
}
