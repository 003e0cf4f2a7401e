/* More GPUs of the same kind when nothing fits on the job's: the families of sizes, the
 * topology grown by --set, and the probe-then-bisect search (docs/memory.md, "More GPUs: the
 * smallest count that fits"). */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/verdict-internal.h"

/* The topology changes that give the job `gpus` GPUs of the topology's kind (none while
 * the topology has that many), or false with `why` filled when the topology cannot be grown to that count
 * by --set: an explicit topology lists its devices; a multi-node one grows by whole nodes;
 * a single node without a fabric grows its node to at most SCALE_NODE_GPUS GPUs (or its own
 * count when larger): past that the GPUs need a network the topology does not describe. */
#define SCALE_NODE_GPUS 8
static bool grow(const hw_topology_spec *t, int topology_gpus, int64_t gpus, results_remedy *r,
                 char *why, size_t size)
{
    if (gpus <= topology_gpus)
        return true; /* the topology has them */
    if (t->n_devices > 0) {
        snprintf(why, size, "the topology lists its devices (explicit form): more GPUs need "
                            "a larger topology file");
        return false;
    }
    bool multi = t->nodes > 1 || (t->fabric.kind != HW_FABRIC_NONE && t->nics.count > 0);
    if (multi) {
        if (gpus % t->gpus_per_node != 0)
            return false;
        cli_remedy_set(r, "topology.nodes", "%lld", (long long)(gpus / t->gpus_per_node));
        return true;
    }
    if (gpus > SIM_MAX(SCALE_NODE_GPUS, t->gpus_per_node)) {
        snprintf(why, size, "the topology is one node without a network (no fabric, no "
                            "NICs): it is not grown past %d GPUs",
                 SIM_MAX(SCALE_NODE_GPUS, t->gpus_per_node));
        return false;
    }
    cli_remedy_set(r, "topology.node.gpus", "%lld", (long long)gpus);
    return true;
}

/* The ways to spread the job over more GPUs, each a family of sizes: data parallelism with
 * ZeRO-3 (when the job has no pipeline and is not on ZeRO-3 yet), data parallelism with
 * the scenario's own strategy, and more pipeline stages. */
enum { SCALE_DP_ZERO3, SCALE_DP, SCALE_PP, SCALE_FAMILIES };

/* The changes of family `f` at size `k` (the data-parallel ranks, or the pipeline stages),
 * with `gpus` set to the GPU count; false when the size does not apply. */
static bool scale_changes(const plan_scenario *sc, const plan *p, int f, int64_t k,
                          results_remedy *r, int64_t *gpus, char *why, size_t size)
{
    const plan_parallel *par = &sc->parallel;
    long long gb = (long long)p->global_batch;
    memset(r, 0, sizeof *r);
    r->step_time_s = NAN;
    *gpus = (int64_t)p->n_ranks / (f == SCALE_PP ? par->pp : par->dp) * k;
    if (*gpus <= p->n_ranks || *gpus > PLAN_GPUS_MAX)
        return false;
    if (!grow(&sc->topology, p->topology_gpus, *gpus, r, why, size))
        return false;
    if (f == SCALE_PP) {
        cli_remedy_set(r, "parallel.pp", "%lld", (long long)k);
        if (par->zero == 3)
            cli_remedy_set(r, "parallel.zero", "%d", par->dp > 1 ? 2 : 0);
    } else {
        cli_remedy_set(r, "parallel.dp", "%lld", (long long)k);
        if (f == SCALE_DP_ZERO3)
            cli_remedy_set(r, "parallel.zero", "3");
    }
    cli_remedy_set(r, "training.global_batch", "%lld", gb);
    return true;
}

/* The sizes of family `f` past the job's, smallest first: data-parallel counts that divide
 * the global batch into whole micro-batches and are a multiple of the expert-parallel
 * size, or stage counts up to the layer count. Returns how many (at most `max`). */
static int scale_sizes(const plan_scenario *sc, const plan *p, int f, int64_t *k, int max)
{
    const plan_parallel *par = &sc->parallel;
    int n = 0;
    if (f == SCALE_PP) {
        for (int64_t s = par->pp + 1; s <= sc->model.layers && n < max; s++)
            k[n++] = s;
        return n;
    }
    if (f == SCALE_DP_ZERO3 && (par->pp > 1 || par->zero == 3))
        return 0;
    int64_t micro = p->global_batch / sc->training.micro_batch;
    int64_t width = p->n_ranks / par->dp;
    for (int64_t d = par->dp + 1; d <= micro && d <= PLAN_GPUS_MAX / width && n < max; d++)
        if (micro % d == 0 && d % par->ep == 0)
            k[n++] = d;
    return n;
}

/* The GPUs the job uses at size `k` of family `f`. */
static int64_t size_gpus(const plan *p, int f, int64_t k)
{
    const plan_parallel *par = &p->sc->parallel;
    return (int64_t)p->n_ranks / (f == SCALE_PP ? par->pp : par->dp) * k;
}

/* What a probe found at one size. */
enum { PROBE_FITS, PROBE_NONE, PROBE_INVALID, PROBE_UNKNOWN };

/* Checks the job spread over more GPUs by family `f` at size `k`: alone, then with each
 * single change of the ladder generated for the spread job (generate, on its scenario),
 * then with changes stacked on the closest of those (stack). Returns PROBE_FITS with the
 * first that fits in the ladder's order in `fit` (its `what` the changes on top, ""
 * alone); PROBE_NONE when every candidate was checked and none fits; PROBE_INVALID when
 * the loader or the plan rejects the spread job itself (e.g. an interleaved schedule whose
 * micro-batches the stage count does not divide): that size does not exist; PROBE_UNKNOWN
 * when the work budget left some candidate unchecked and none fits. */
static int probe(const cli_verdict_input *in, const plan *p, int64_t capacity,
                 cli_check_budget *b, int f, int64_t k, cand *fit)
{
    cand c;
    memset(&c, 0, sizeof c);
    int64_t gpus;
    char why[SIM_DIAG_MSG_MAX];
    bool ok = scale_changes(p->sc, p, f, k, &c.r, &gpus, why, sizeof why);
    SIM_ASSERT(ok, "a size kept by scale_sizes applies");
    int skipped = b->skipped;
    verdict__check(in, capacity, &c, b);
    if (!c.k.valid)
        return c.k.over_budget ? PROBE_UNKNOWN : PROBE_INVALID;
    if (c.k.fits) {
        *fit = c;
        return 1;
    }
    /* the singles on top of the spread job, then stacked on the closest of them */
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    cand_list *g = sim_calloc(1, sizeof *g), *l = sim_calloc(1, sizeof *l);
    cand *x = sim_calloc(1, sizeof *x);
    sim_diag diag = {0};
    if (verdict__load_with(in, &c.r, sc, &diag) == 0) {
        verdict__generate(sc, p->global_batch, (int)gpus, g);
        for (int i = 0; i < g->n; i++) {
            memset(x, 0, sizeof *x);
            if (!verdict__override(&c.r, &g->c[i].r, &x->r))
                continue;
            verdict__check(in, capacity, x, b);
            if (!x->k.valid)
                continue;
            cand *y = verdict__push(l, g->c[i].what);
            y->r = x->r;
            y->k = x->k;
            y->ladder = i;
        }
        bool fits = false;
        for (int i = 0; i < l->n; i++)
            fits |= l->c[i].k.fits;
        if (!fits)
            verdict__stack(in, p->global_batch, (int)gpus, capacity, l, b);
    }
    int found = b->skipped > skipped ? PROBE_UNKNOWN : PROBE_NONE;
    for (int i = 0; i < l->n && found != PROBE_FITS; i++)
        if (l->c[i].k.fits) {
            *fit = l->c[i];
            found = PROBE_FITS;
        }
    sim_free(x);
    sim_free(l);
    sim_free(g);
    sim_free(sc);
    return found;
}

/* When no change fits on the topology's GPUs: the smallest GPU count of the same kind that
 * fits, by family (scale_changes), each size checked alone and with the ladder's single
 * changes (probe): sizes probed at indices 0, 1, 3, 7, … until one fits, then bisected down
 * to the smallest that fits next to one checked not to — a job's per-GPU memory does not
 * grow as it spreads over more GPUs (its shards and stages only get smaller), which the
 * bisection relies on. The smallest over the families, the first family on ties, goes into
 * `out` (fits, checked), its `what` in `what` (what_size); `note` says how far the search
 * got when none fits. */
bool verdict__scale_out(const cli_verdict_input *in, const plan *p, int64_t capacity,
                      cli_check_budget *b, cand *out, int64_t *out_gpus, char *what,
                      size_t what_size, char *note, size_t note_size)
{
    enum { SIZES = 4096 };
    note[0] = '\0';
    if (p->sc->topology.n_groups > 0) { /* which group would grow is the user's choice */
        snprintf(note, note_size, "not searched on a mixed cluster: give a node group more "
                 "nodes to try one");
        return false;
    }
    int64_t *k = sim_calloc(SIZES, sizeof *k);
    bool found = false;
    int64_t tried = 0, budget_at = 0;
    for (int f = 0; f < SCALE_FAMILIES; f++) {
        int n = scale_sizes(p->sc, p, f, k, SIZES);
        int m = 0; /* the sizes that apply on this topology (and beat the best), in order */
        for (int i = 0; i < n; i++) {
            results_remedy r;
            int64_t g;
            if (scale_changes(p->sc, p, f, k[i], &r, &g, note, note_size) &&
                (!found || g < *out_gpus))
                k[m++] = k[i];
        }
        int lo = -1, hi = -1; /* the largest index checked not to fit, the smallest fits */
        bool out_of_budget = false;
        cand fit;
        for (int i = 0; i < m;) {
            int got = probe(in, p, capacity, b, f, k[i], &fit);
            if (got == PROBE_INVALID) { /* no such size: the next one takes its index */
                memmove(&k[i], &k[i + 1], (size_t)(m - i - 1) * sizeof *k);
                m--;
                continue;
            }
            if (got == PROBE_UNKNOWN) {
                out_of_budget = true;
                budget_at = size_gpus(p, f, k[i]);
                break;
            }
            tried = SIM_MAX(tried, size_gpus(p, f, k[i]));
            if (got == PROBE_FITS) {
                hi = i;
                break;
            }
            lo = i;
            if (i == m - 1)
                break;
            i = SIM_MIN(2 * i + 1, m - 1);
        }
        while (hi - lo > 1 && !out_of_budget) {
            int mid = lo + (hi - lo) / 2;
            cand c;
            int got = probe(in, p, capacity, b, f, k[mid], &c);
            if (got == PROBE_INVALID) {
                memmove(&k[mid], &k[mid + 1], (size_t)(m - mid - 1) * sizeof *k);
                m--;
                hi--;
            } else if (got == PROBE_UNKNOWN) {
                out_of_budget = true; /* the smallest found so far stands */
                budget_at = size_gpus(p, f, k[mid]);
            } else if (got == PROBE_FITS) {
                hi = mid;
                fit = c;
            } else {
                lo = mid;
            }
        }
        if (hi < 0)
            continue;
        *out = fit;
        *out_gpus = fit.k.gpus;
        char layout[96];
        int len = snprintf(layout, sizeof layout, "%d GPUs as", fit.k.gpus);
        const int deg[4] = {fit.k.tp, fit.k.cp, fit.k.pp, fit.k.dp};
        static const char *const name[4] = {"tp", "cp", "pp", "dp"};
        bool any = false;
        for (int d = 0; d < 4; d++)
            if (deg[d] > 1 || (d == 3 && !any)) {
                len += snprintf(layout + len, sizeof layout - (size_t)len, "%s %s %d",
                                any ? " x" : "", name[d], deg[d]);
                any = true;
            }
        if (fit.what[0])
            verdict__sentence(what, what_size, "more GPUs of the same kind (%s), with %s", layout,
                     fit.what);
        else
            verdict__sentence(what, what_size, "more GPUs of the same kind (%s)", layout);
        found = true;
    }
    if (!found && budget_at > 0)
        snprintf(note, note_size, "the work budget ran out at %lld GPUs; none of the counts "
                 "checked up to %lld fits", (long long)budget_at, (long long)tried);
    else if (!found && !note[0] && tried == 0)
        snprintf(note, note_size, "no larger count of them admits this layout");
    else if (!found && !note[0])
        snprintf(note, note_size, "none up to %lld GPUs checked fits", (long long)tried);
    sim_free(k);
    return found;
}

