/* MoE token routing for the data-parallel family's traces (dp.c): how many tokens each
 * expert of an EP group receives, per MoE layer and micro-batch, drawn from seeded GSL
 * streams so that results never depend on run order (docs/strategies.md). */
#include "core/sim.h"

#include <math.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "plan/gen-internal.h"

/* Seed mixing for the routing draws: odd multipliers, primes or well-known hash constants,
 * that make nearby (seed, layer, micro-batch, EP group) tuples give unrelated MT19937 seeds.
 * Their values are part of the output (they decide every routing draw): never change them.
 * Popularity order of a layer: seed x 1000003 (a prime) + layer x 7919 (the 1000th prime) + 1. */
#define ORDER_SEED_MUL 1000003u
#define ORDER_LAYER_MUL 7919u
#define ORDER_SEED_ADD 1u
/* Routing of one micro-batch: seed x 2654435761 (Knuth's multiplicative hash, 2^32/phi) +
 * layer x 40503 (its 16-bit analogue) + micro-batch x 69069 (Marsaglia's LCG multiplier) +
 * EP group x 2246822519 (xxHash32's PRIME32_2) + 7. */
#define ROUTE_SEED_MUL 2654435761u
#define ROUTE_LAYER_MUL 40503u
#define ROUTE_MB_MUL 69069u
#define ROUTE_BLOCK_MUL 2246822519u
#define ROUTE_SEED_ADD 7u

/* Tokens each of this rank's experts processes, per MoE layer and micro-batch: the EP group's
 * ep·T tokens each pick top_k experts, drawn as one multinomial over the experts (GSL,
 * seeded from the scenario seed, the layer, the micro-batch and the EP group, so every
 * TP/PP rank of a group sees the same routing and results never depend on run order).
 * training.moe_routing_skew s sets the popularity: expert at rank j of a per-layer random
 * order gets weight (j+1)^-s; s = 0 is uniform.
 *
 * With training.moe_capacity_factor c > 0 each source rank's T·top_k assignments are drawn
 * on their own (a sum of multinomials with equal weights is the group multinomial), and
 * each expert keeps at most ceil(c·T·top_k/E) of them from that rank, Megatron's capacity
 * (computed on the rank's local tokens, before the dispatch); the rest are dropped: not
 * sent, not computed. g->sent holds the assignments a rank dispatches, averaged over the
 * group (the all-to-all is modelled with equal buffers on every rank). */
static void draw_block(gen *g, int ep_block)
{
    const plan_scenario *sc = g->sc;
    int E = g->model.moe.experts, L = g->model.layers, k = g->model.moe.top_k;
    double T = (double)g->sh.micro_batch * (double)g->sh.seq_len / g->cp; /* local tokens */
    double cf = sc->training.moe_capacity_factor;
    unsigned int per_rank = (unsigned int)(T * k);
    unsigned int cap = cf > 0 ? (unsigned int)ceil(cf * T * k / E) : per_rank;
    size_t per_block = (size_t)L * (size_t)g->A;
    unsigned int *counts = &g->moe_counts[(size_t)ep_block * per_block * (size_t)E];
    double *sent = &g->moe_sent[(size_t)ep_block * per_block];
    double *prob = sim_calloc((size_t)E, sizeof *prob);
    unsigned int *one = sim_calloc((size_t)E, sizeof *one);
    size_t *order = sim_calloc((size_t)E, sizeof *order);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (int l = 0; l < L; l++) {
        if (l < g->model.moe.dense_layers)
            continue;
        /* the layer's popularity order */
        gsl_rng_set(rng, (unsigned long)(sc->simulation.seed * ORDER_SEED_MUL +
                                         (uint64_t)l * ORDER_LAYER_MUL + ORDER_SEED_ADD));
        for (int e = 0; e < E; e++)
            order[e] = (size_t)e;
        gsl_ran_shuffle(rng, order, (size_t)E, sizeof *order);
        for (int j = 0; j < E; j++)
            prob[order[j]] = pow(j + 1.0, -sc->training.moe_routing_skew);
        for (int64_t mb = 0; mb < g->A; mb++) {
            size_t at = (size_t)l * (size_t)g->A + (size_t)mb;
            unsigned int *count = &counts[at * (size_t)E];
            gsl_rng_set(rng, (unsigned long)(sc->simulation.seed * ROUTE_SEED_MUL +
                                             (uint64_t)l * ROUTE_LAYER_MUL +
                                             (uint64_t)mb * ROUTE_MB_MUL +
                                             (uint64_t)ep_block * ROUTE_BLOCK_MUL +
                                             ROUTE_SEED_ADD));
            double kept = 0;
            if (cf > 0) {
                for (int src = 0; src < g->ep; src++) {
                    gsl_ran_multinomial(rng, (size_t)E, per_rank, prob, one);
                    for (int e = 0; e < E; e++)
                        count[e] += one[e] < cap ? one[e] : cap;
                }
            } else {
                gsl_ran_multinomial(rng, (size_t)E, per_rank * (unsigned int)g->ep, prob, count);
            }
            unsigned int busiest = 0;
            for (int e = 0; e < E; e++) {
                kept += count[e];
                busiest = count[e] > busiest ? count[e] : busiest;
            }
            sent[at] = kept / g->ep;
            g->moe_assigned += (double)per_rank * g->ep;
            g->moe_dropped += (double)per_rank * g->ep - kept;
            g->moe_imbalance_sum += kept > 0 ? busiest / (kept / E) : 1.0;
            g->moe_draws += 1;
        }
    }
    gsl_rng_free(rng);
    sim_free(prob);
    sim_free(one);
    sim_free(order);
}

/* Points the rank at its EP group's routing, drawn on the group's first rank: every TP, PP
 * and EP rank of a group shares one draw. */
void plan__route_tokens(gen *g, int ep_block, int ep_coord)
{
    if (!g->moe_drawn[ep_block]) {
        draw_block(g, ep_block);
        g->moe_drawn[ep_block] = true;
    }
    int E = g->model.moe.experts;
    size_t per_block = (size_t)g->model.layers * (size_t)g->A;
    const unsigned int *counts = &g->moe_counts[(size_t)ep_block * per_block * (size_t)E];
    g->sent = &g->moe_sent[(size_t)ep_block * per_block];
    for (size_t at = 0; at < per_block; at++)
        for (int e = 0; e < g->n_local; e++)
            g->route[at * (size_t)g->n_local + (size_t)e] =
                counts[at * (size_t)E + (size_t)(ep_coord * g->n_local + e)];
}
