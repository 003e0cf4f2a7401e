/* The plan: rank layout, the data-parallel trace (dp.c) and the program-order memory
 * verdict (see plan.h). */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "plan/plan-internal.h"

_Static_assert(TRACE_GROUP_CLASSES == PLAN_GROUP_COUNT, "trace and plan group classes");

void plan_rank_coord(const plan_parallel *par, int rank, plan_coord *out)
{
    int deg[PLAN_GROUP_COUNT] = {par->dp, par->tp, par->pp, 1, par->cp};
    memset(out, 0, sizeof *out);
    int rest = rank;
    for (int i = 0; i < PLAN_GROUP_COUNT; i++) {
        plan_group_class g = par->order[i];
        if (g == PLAN_GROUP_EP)
            continue; /* ep does not multiply the GPU count (docs/strategies.md) */
        out->c[g] = rest % deg[g];
        rest /= deg[g];
    }
    out->c[PLAN_GROUP_EP] = out->c[PLAN_GROUP_DP] % par->ep;
}

/* ---- memory walk ------------------------------------------------------------------ */

/* One rank's memory events in program order (ops one after another, start then end): its
 * peak and the split at the peak, for `stepsim mem`. The replay applies the same events in
 * simulated time, where overlapping streams can only add to this peak's neighbours. */
void plan__walk_rank(plan *p, int r)
{
    const trace_rank *tr = &p->trace->ranks[r];
    plan_mem level = p->mem[r];
    p->peak[r] = level;
    int64_t cap = plan_capacity(p, r);
    bool over = level.total > cap;
    p->cross[r] = over ? level : (plan_mem){{0}, 0};
    for (size_t i = 0; i < tr->n_ops; i++) {
        const trace_op *o = &tr->ops[i];
        for (int end = 0; end <= 1; end++) {
            for (uint32_t k = 0; k < o->n_mem; k++) {
                const trace_mem *e = &tr->mem[o->mem_first + k];
                if (e->at_end != end)
                    continue;
                level.bytes[e->cat] += e->bytes;
                level.total += e->bytes;
            }
            if (level.total > p->peak[r].total)
                p->peak[r] = level;
            if (!over && level.total > cap) {
                over = true;
                p->cross[r] = level;
            }
        }
    }
}

const hw_gpu_spec *plan_gpu(const plan *p, int r)
{
    return hw_topology_node_gpu(&p->sc->topology, p->coords[r].node);
}

int64_t plan_capacity(const plan *p, int r)
{
    return plan_gpu(p, r)->memory_bytes;
}

int plan_worst_rank(const plan *p, const plan_mem *peaks)
{
    int worst = 0;
    for (int r = 1; r < p->n_ranks; r++)
        if (peaks[r].total - plan_capacity(p, r) > peaks[worst].total - plan_capacity(p, worst))
            worst = r;
    return worst;
}

const plan_mem *plan_cross(const plan *p, int r, const plan_mem *at_peak)
{
    return p->cross && p->cross[r].total > 0 ? &p->cross[r] : at_peak;
}

int plan_host_verdict(const plan *p, int64_t *bytes, int *node, int64_t *capacity, char *why,
                      size_t size)
{
    why[0] = '\0';
    *bytes = 0;
    *node = 0;
    *capacity = 0;
    int nodes = 0;
    for (int r = 0; r < p->n_ranks; r++)
        nodes = SIM_MAX(nodes, p->coords[r].node + 1);
    int64_t *sum = sim_calloc((size_t)SIM_MAX(nodes, 1), sizeof *sum);
    for (int r = 0; r < p->n_ranks; r++)
        sum[p->coords[r].node] += p->host_bytes ? p->host_bytes[r] : 0;
    /* the node with the least headroom under its own memory (a mixed cluster's groups have
     * their own), or with the most bytes where no node gives its memory */
    for (int k = 0; k < nodes; k++) {
        int64_t cap = hw_topology_node_spec(&p->sc->topology, k)->host.memory_bytes;
        /* a node with its memory given beats one without; then the least headroom, or
         * the most bytes where none is given */
        bool better = sum[k] == 0 ? false
                      : *bytes == 0 ? true
                      : (cap > 0) != (*capacity > 0) ? cap > 0
                      : cap > 0 ? sum[k] - cap > *bytes - *capacity
                                : sum[k] > *bytes;
        if (better) {
            *bytes = sum[k];
            *node = k;
            *capacity = cap;
        }
    }
    sim_free(sum);
    if (*bytes == 0) /* no offload: the first node's memory, for the record */
        *capacity = hw_topology_node_spec(&p->sc->topology, 0)->host.memory_bytes;
    if (*capacity <= 0 || *bytes <= *capacity)
        return 0;
    const double GiB = 1024.0 * 1024.0 * 1024.0;
    char key[64] = "topology.node.host.memory";
    if (p->sc->topology.n_groups > 0)
        snprintf(key, sizeof key, "topology.node_groups[%d].node.host.memory",
                 hw_topology_group_of(&p->sc->topology, *node));
    snprintf(why, size, "host memory: node %d's offload holds %.2f GiB > %.2f GiB (%s)", *node,
             *bytes / GiB, *capacity / GiB, key);
    return 1;
}

/* The verdict of the rank with the least headroom, then of the host memory the offload
 * holds. */
static void verdict(plan *p)
{
    int worst = plan_worst_rank(p, p->peak);
    p->oom = plan_mem_verdict(&p->peak[worst], &p->mem[worst],
                              plan_cross(p, worst, &p->peak[worst]),
                              plan_capacity(p, worst), p->binding_constraint,
                              sizeof p->binding_constraint);
    int64_t host, cap;
    int node;
    if (!p->oom)
        p->oom = plan_host_verdict(p, &host, &node, &cap, p->binding_constraint,
                                   sizeof p->binding_constraint);
}

/* A plan with its layout: ranks, their coordinates and nodes, batch, capacity; the peaks
 * allocated (to be walked). */
static plan *plan_new(const plan_scenario *sc, hw_topo *topo, int n, int have, int64_t gb)
{
    const plan_parallel *par = &sc->parallel;
    plan *p = sim_calloc(1, sizeof *p);
    p->sc = sc;
    p->n_ranks = n;
    p->topology_gpus = have;
    p->topo = topo;
    p->global_batch = gb;
    p->accum_steps = gb / SIM_MAX(1, sc->training.micro_batch * par->dp);
    p->capacity_bytes = sc->topology.gpu.memory_bytes;
    p->coords = sim_calloc((size_t)n, sizeof *p->coords);
    for (int r = 0; r < n; r++) {
        plan_rank_coord(par, r, &p->coords[r]);
        p->coords[r].node = hw_topo_device(topo, hw_topo_gpu_device(topo, r))->node;
    }
    p->peak = sim_calloc((size_t)n, sizeof *p->peak);
    p->cross = sim_calloc((size_t)n, sizeof *p->cross);
    return p;
}

int plan_create(const plan_scenario *sc, const plan_options *opt, plan **out, sim_diag *diag)
{
    bool with_trace = opt->with_trace;
    const plan_parallel *par = &sc->parallel;
    hw_topo *topo = NULL;
    int rc = hw_topo_create(&sc->topology, &topo, diag);
    if (rc != 0)
        return rc;
    int n = par->tp * par->cp * par->pp * par->dp;
    int have = hw_topo_gpu_count(topo);
    if (n > have)
        rc = sim_diag_error(diag, "scenario", 0, 0,
                            "the parallel layout needs %d GPUs but topology '%s' has %d", n,
                            sc->topology.name, have);
    int64_t gb = sc->training.global_batch;
    if (gb == 0)
        gb = sc->training.micro_batch * par->dp;
    if (rc == 0 && gb % (sc->training.micro_batch * par->dp) != 0)
        rc = sim_diag_error(diag, "scenario", 0, 0,
                            "global_batch %lld is not a multiple of micro_batch x dp = %lld",
                            (long long)gb, (long long)(sc->training.micro_batch * par->dp));
    if (rc != 0) {
        hw_topo_destroy(topo);
        return rc;
    }

    plan *p = plan_new(sc, topo, n, have, gb);
    rc = plan__dp_trace(p, !with_trace, !opt->no_op_sharing, diag);
    if (rc != 0) {
        plan_destroy(p);
        return rc;
    }
    if (with_trace)
        for (int r = 0; r < n; r++) {
            /* a rank borrowing its template's ops from the same persistent bytes against the
             * same capacity walks to the same peak (op sharing: every rank of a stage) */
            int T = p->trace->ranks[r].tmpl;
            if (T >= 0 && T < r && !memcmp(&p->mem[r], &p->mem[T], sizeof p->mem[r]) &&
                plan_capacity(p, r) == plan_capacity(p, T)) {
                p->peak[r] = p->peak[T];
                p->cross[r] = p->cross[T];
                continue;
            }
            plan__walk_rank(p, r);
        }
    verdict(p);
    /* symmetry's estimate sees the contention of collectives that start together, not of
     * other traffic: say where that matters (the 16K-GPU bench step at 4:1: 1.9% short of
     * the full run, flows 1.5%) */
    const hw_topology_spec *ts = &sc->topology;
    if (with_trace && !p->warning[0] && sc->simulation.symmetry == PLAN_SYMMETRY_DP &&
        sc->simulation.symmetry_collectives == PLAN_SYMCOLL_ESTIMATE && sc->parallel.dp > 1 &&
        ts->n_devices == 0 && ts->nodes > 1 && ts->fabric.oversubscription > 1)
        snprintf(p->warning, sizeof p->warning,
                 "symmetry_collectives: estimate counts the contention of data-parallel "
                 "collectives that start together, not of other traffic; on this %g:1 "
                 "oversubscribed fabric symmetry_collectives: flows is closer (slower)",
                 ts->fabric.oversubscription);
    if (!with_trace) {
        trace_destroy(p->trace);
        p->trace = NULL;
    }
    *out = p;
    return 0;
}

/* What a trace from a file asks of the hardware that the replay takes for granted: a GPU
 * peak for the dtype of every modelled compute op (fp32 for vector ops that compute), memory
 * bandwidth for the bytes it moves, and host memory for every copy op's rank. */
static int trace_fits(const plan_scenario *sc, hw_topo *topo, const trace *t, sim_diag *diag)
{
    for (int r = 0; r < t->n_ranks; r++) {
        const hw_gpu_spec *g = hw_topology_node_gpu(
            &sc->topology, hw_topo_device(topo, hw_topo_gpu_device(topo, r))->node);
        const trace_rank *tr = &t->ranks[r];
        const trace_rank *own = tr->tmpl >= 0 ? &t->ranks[tr->tmpl] : tr;
        for (size_t i = 0; i < own->n_ops; i++) {
            const trace_op *o = &own->ops[i];
            if (o->kind == TRACE_OP_COPY && hw_topo_host_memory(topo, r) < 0)
                return sim_diag_error(diag, "trace", 0, 0, "rank %d op %zu copies to or from "
                                      "host memory, which GPU %d of topology '%s' has none of",
                                      r, i, r, sc->topology.name);
            if (o->kind == TRACE_OP_COPY && o->copy >= TRACE_COPY_READ &&
                hw_topo_storage(topo, r) < 0)
                return sim_diag_error(diag, "trace", 0, 0, "rank %d op %zu copies to or from an "
                                      "NVMe drive, which the node of GPU %d of topology '%s' has "
                                      "none of (node.storage)", r, i, r, sc->topology.name);
            if (o->kind != TRACE_OP_COMPUTE || o->duration_ps != TRACE_MEASURED_NONE)
                continue;
            hw_dtype d = o->cls == HW_OP_VECTOR ? HW_DTYPE_FP32 : (hw_dtype)o->dtype;
            if ((o->cls != HW_OP_VECTOR || o->flops > 0) && !(g->peak_flops[d] > 0))
                return sim_diag_error(diag, "trace", 0, 0, "rank %d op %zu computes in %s, "
                                      "which GPU '%s' has no peak for", r, i,
                                      hw_dtype_name(d), g->name);
            if (o->bytes > 0 && !(g->memory_bw_Bps > 0))
                return sim_diag_error(diag, "trace", 0, 0, "rank %d op %zu moves bytes, and GPU "
                                      "'%s' has no memory bandwidth", r, i, g->name);
        }
    }
    return 0;
}

int plan_from_trace(const plan_scenario *sc, trace *t, const plan_trace_figures *fig,
                    plan **out, sim_diag *diag)
{
    const plan_parallel *par = &sc->parallel;
    hw_topo *topo = NULL;
    int rc = hw_topo_create(&sc->topology, &topo, diag);
    if (rc != 0) {
        trace_destroy(t);
        return rc;
    }
    int n = par->tp * par->cp * par->pp * par->dp, have = hw_topo_gpu_count(topo);
    if (t->n_ranks != n)
        rc = sim_diag_error(diag, "trace", 0, 0,
                            "the trace has %d ranks but the scenario's parallel layout has %d "
                            "(tp %d x cp %d x pp %d x dp %d)", t->n_ranks, n, par->tp, par->cp,
                            par->pp, par->dp);
    else if (n > have)
        rc = sim_diag_error(diag, "trace", 0, 0, "the trace has %d ranks but topology '%s' has "
                            "%d GPUs", n, sc->topology.name, have);
    else
        rc = trace_fits(sc, topo, t, diag);
    if (rc != 0) {
        hw_topo_destroy(topo);
        trace_destroy(t);
        return rc;
    }
    plan *p = plan_new(sc, topo, n, have, fig->global_batch);
    p->trace = t;
    p->model_flops_per_step = fig->model_flops_per_step;
    p->hardware_flops_per_step = fig->hardware_flops_per_step;
    p->moe = fig->moe;
    p->moe_dropped_fraction = fig->moe_dropped_fraction;
    p->moe_load_max_over_mean = fig->moe_load_max_over_mean;
    p->mem = sim_calloc((size_t)n, sizeof *p->mem);
    p->host_bytes = sim_calloc((size_t)n, sizeof *p->host_bytes); /* a trace holds none */
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < PLAN_MEM_COUNT; c++) {
            p->mem[r].bytes[c] = t->ranks[r].base_mem[c];
            /* a trace from a file: trace_validate bounds base_mem, but never overflow */
            if (__builtin_add_overflow(p->mem[r].total, t->ranks[r].base_mem[c],
                                       &p->mem[r].total))
                rc = sim_diag_error(diag, "trace", 0, 0, "rank %d's persistent memory "
                                    "overflows", r);
        }
        if (rc == 0)
            plan__walk_rank(p, r);
    }
    if (rc != 0) {
        plan_destroy(p);
        return rc;
    }
    verdict(p);
    *out = p;
    return 0;
}

void plan_destroy(plan *p)
{
    if (!p)
        return;
    trace_destroy(p->trace);
    hw_topo_destroy(p->topo);
    sim_free(p->coords);
    sim_free(p->mem);
    sim_free(p->host_bytes);
    sim_free(p->peak);
    sim_free(p->cross);
    sim_free(p);
}
