/* The reference max-min solver for tests: naive progressive filling over every active flow,
 * from scratch, compared with the rates net.c maintains incrementally. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>

#include "hw/net-internal.h"

/* Relative difference between an incremental rate and the from-scratch max-min rate that
 * counts as a mismatch: both sum the same shares in different orders, which differ by a few
 * ulps (~1e-16 relative) per step, far below this. */
#define CHECK_REL_TOL 1e-9

int hw_net__check(const hw_net *net)
{
    if (net->resolve_pending)
        return 0; /* rates are defined once the pending re-solve has run */
    size_t nf = 0;
    int32_t *ids = sim_calloc((size_t)net->n_flows + 1, sizeof *ids);
    for (int32_t i = 0; i < net->n_flows; i++)
        if (net->flows[i].state == FLOW_ACTIVE)
            ids[nf++] = i;
    double *rem = sim_calloc((size_t)net->n_links + 1, sizeof *rem);
    double *w = sim_calloc((size_t)net->n_links + 1, sizeof *w);
    double *rate = sim_calloc(nf + 1, sizeof *rate);
    bool *fixed = sim_calloc(nf + 1, sizeof *fixed);
    for (int l = 0; l < net->n_links; l++)
        rem[l] = net->links[l].bw_Bps;
    for (size_t i = 0; i < nf; i++) {
        const net_flow *f = &net->flows[ids[i]];
        for (int k = 0; k < f->n_links; k++)
            w[f->hop[k].link] += f->hop[k].weight;
    }
    for (size_t left = nf; left > 0;) {
        int best = -1;
        double share = INFINITY;
        for (int l = 0; l < net->n_links; l++)
            if (w[l] > 0 && rem[l] / w[l] < share) {
                share = rem[l] / w[l];
                best = l;
            }
        SIM_ASSERT(best >= 0, "unfixed flows on no link");
        for (size_t i = 0; i < nf; i++) {
            const net_flow *f = &net->flows[ids[i]];
            bool on = false;
            for (int k = 0; k < f->n_links; k++)
                on |= f->hop[k].link == best;
            if (fixed[i] || !on)
                continue;
            fixed[i] = true;
            rate[i] = share;
            left--;
            for (int k = 0; k < f->n_links; k++) {
                rem[f->hop[k].link] -= share * f->hop[k].weight;
                w[f->hop[k].link] -= f->hop[k].weight;
            }
        }
    }
    int rc = 0;
    for (size_t i = 0; i < nf && rc == 0; i++) {
        double have = net->flows[ids[i]].rate;
        if (fabs(have - rate[i]) > CHECK_REL_TOL * rate[i]) {
            fprintf(stderr, "hw_net__check: flow %d (tag %llu) has rate %.17g, max-min gives "
                            "%.17g\n", ids[i], (unsigned long long)net->flows[ids[i]].tag, have,
                    rate[i]);
            rc = -1;
        }
    }
    sim_free(ids);
    sim_free(rem);
    sim_free(w);
    sim_free(rate);
    sim_free(fixed);
    return rc;
}
