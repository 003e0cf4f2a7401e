/* The results of a replay: the summary, the per-rank rows, the memory verdict and the
 * links, from the state the event loop (replay.c) leaves; and `stepsim mem`'s results
 * without a replay. */
#include "core/sim.h"

#include <math.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <string.h>

#include "replay/replay-internal.h"

void replay__add_memory_row(replay_results *r, int rank, sim_time t, int cat, int64_t bytes)
{
    SIM_GROW(r->memory, r->cap_memory, r->n_memory + 1);
    r->memory[r->n_memory++] = (replay_memory_row){
        .rank = rank, .t_s = sim_time_to_s(t), .category = plan_mem_cat_name((plan_mem_cat)cat),
        .bytes = bytes};
}

/* The training budget (training.tokens): whole steps of `per_step` tokens at the step time,
 * on every GPU; cost when the topology has a price. NaN where it does not apply. */
static void budget(replay_summary *s, const plan_scenario *sc, double per_step)
{
    s->budget_tokens = s->budget_steps = s->time_to_train_s = s->gpu_hours = s->cost = NAN;
    if (sc->training.tokens <= 0 || !(s->step_time_s > 0))
        return;
    s->budget_tokens = sc->training.tokens;
    s->budget_steps = ceil(sc->training.tokens / per_step);
    s->time_to_train_s = s->budget_steps * s->step_time_s;
    s->gpu_hours = s->time_to_train_s / 3600 * s->gpus;
    if (sc->topology.price_per_gpu_hour > 0)
        s->cost = s->gpu_hours * sc->topology.price_per_gpu_hour;
}

/* The summary's memory keys from per-rank peaks (the replay's timeline, or the plan's
 * program-order walk for `stepsim mem`): the rank with the least headroom (the highest peak
 * on GPUs alike; lowest on ties), its split at that instant and capacity, the verdict.
 * Also the initial rows of the memory table. */
void replay__fill_memory(const plan *p, const plan_mem *peaks, replay_results *r)
{
    replay_summary *s = &r->summary;
    s->budget_tokens = s->budget_steps = s->time_to_train_s = s->gpu_hours = s->cost = NAN;
    int worst = plan_worst_rank(p, peaks);
    s->peak_mem_bytes = peaks[worst].total;
    memcpy(s->mem_bytes, peaks[worst].bytes, sizeof s->mem_bytes);
    s->capacity_bytes = plan_capacity(p, worst);
    char why[256];
    bool oom = plan_mem_verdict(&peaks[worst], &p->mem[worst],
                                plan_cross(p, worst, &peaks[worst]), s->capacity_bytes, why,
                                sizeof why);
    /* the host memory the offload holds, once the GPUs fit */
    char host_why[256];
    int64_t host, host_cap;
    int node;
    bool host_oom = plan_host_verdict(p, &host, &node, &host_cap, host_why, sizeof host_why);
    s->offloaded = host > 0;
    s->host_node = node;
    s->host_mem_bytes = host;
    s->host_capacity_bytes = host_cap;
    if (!oom && host_oom) {
        oom = true;
        snprintf(why, sizeof why, "%s", host_why);
    }
    s->binding_constraint = oom ? replay_results_intern(r, why) : NULL;
    s->status = oom ? REPLAY_STATUS_OOM : REPLAY_STATUS_OK;
    s->gpus = p->n_ranks;
    snprintf(s->name, sizeof s->name, "%s", p->sc->name);
    s->steps = p->sc->simulation.steps;
}

void replay_memory_only(const plan *p, replay_results *out)
{
    replay__fill_memory(p, p->peak, out);
    replay_summary_untimed(&out->summary);
    for (int k = 0; k < p->n_ranks; k++)
        for (int cat = 0; cat < PLAN_MEM_COUNT; cat++)
            replay__add_memory_row(out, k, 0, cat, p->mem[k].bytes[cat]);
}

/* The gaps were recorded as they closed, ranks interleaved; the rows list them rank by
 * rank, each rank's in time order (a stable counting sort). */
static void sort_bubbles_by_rank(replay_results *r, int n_ranks)
{
    if (r->n_bubbles < 2)
        return;
    size_t *first = sim_calloc((size_t)n_ranks + 1, sizeof *first);
    for (size_t i = 0; i < r->n_bubbles; i++)
        first[r->bubbles[i].rank + 1]++;
    for (int k = 0; k < n_ranks; k++)
        first[k + 1] += first[k];
    replay_bubble_row *sorted = sim_calloc(r->n_bubbles, sizeof *sorted);
    for (size_t i = 0; i < r->n_bubbles; i++)
        sorted[first[r->bubbles[i].rank]++] = r->bubbles[i];
    sim_free(r->bubbles);
    r->bubbles = sorted;
    r->cap_bubbles = r->n_bubbles;
    sim_free(first);
}

void replay__summarize(replay_ctx *c)
{
    const plan *p = c->p;
    const plan_scenario *sc = p->sc;
    replay_results *r = c->res;
    replay_summary *s = &r->summary;
    int steps = c->steps;

    /* step k ends when the last rank finishes it */
    sim_time *end = sim_calloc((size_t)steps, sizeof *end);
    for (int k = 0; k < steps; k++)
        for (int rk = 0; rk < p->n_ranks; rk++)
            if (!c->active || c->active[rk])
                end[k] = SIM_MAX(end[k], c->ranks[rk].step_end[k]);
    r->n_steps = (size_t)steps;
    r->steps = sim_calloc((size_t)steps, sizeof *r->steps);
    double *dur = sim_calloc((size_t)steps, sizeof *dur);
    for (int k = 0; k < steps; k++) {
        sim_time begin = k ? end[k - 1] : 0;
        r->steps[k] = (replay_step_row){.step = k + 1, .start_s = sim_time_to_s(begin),
                                        .end_s = sim_time_to_s(end[k])};
        dur[k] = sim_time_to_s(end[k] - begin);
    }
    /* median over steps 2..N (step 1 warms up), or step 1 alone */
    if (steps == 1) {
        s->step_time_s = dur[0];
    } else {
        gsl_sort(dur + 1, 1, (size_t)steps - 1);
        s->step_time_s = gsl_stats_median_from_sorted_data(dur + 1, 1, (size_t)steps - 1);
    }

    double tokens = (double)p->global_batch * (double)sc->training.seq_len;
    /* MFU against the cluster's peak: every GPU's (node groups may mix models) */
    double peak = (double)p->n_ranks * sc->topology.gpu.peak_flops[sc->training.precision];
    if (sc->topology.n_groups > 0) {
        peak = 0;
        for (int k = 0; k < p->n_ranks; k++)
            peak += plan_gpu(p, k)->peak_flops[sc->training.precision];
    }
    s->tokens_per_s = tokens / s->step_time_s;
    s->samples_per_s = (double)p->global_batch / s->step_time_s;
    s->tflops_per_gpu = p->model_flops_per_step / s->step_time_s / p->n_ranks / 1e12;
    s->mfu = p->model_flops_per_step / (s->step_time_s * peak);
    s->hfu = p->hardware_flops_per_step / (s->step_time_s * peak);
    s->moe = p->moe;
    s->moe_dropped_fraction = p->moe_dropped_fraction;
    s->moe_load_max_over_mean = p->moe_load_max_over_mean;
    budget(s, sc, tokens);

    /* the last step's window, per rank: busy compute intervals, gaps and their causes */
    sim_time w0 = steps > 1 ? end[steps - 2] : 0, w1 = end[steps - 1];
    double window = (double)(w1 - w0);
    double idle_by_cause[REPLAY_CAUSE_COUNT] = {0};
    double idle_total = 0;
    double nr = c->active ? c->n_active : p->n_ranks; /* ranks the sums run over */
    s->symmetry_dp = c->active != NULL;
    s->symmetry_estimated = c->active != NULL && c->estimate_cross;
    s->steady_skipped_s = sim_time_to_s(c->steady_skipped_ps);
    r->n_ranks = (size_t)p->n_ranks;
    r->ranks = sim_calloc(r->n_ranks, sizeof *r->ranks);
    for (int rk = 0; rk < p->n_ranks; rk++) {
        rank_state *rs = &c->ranks[rk];
        if (c->active && !c->active[rk]) {
            /* symmetry: what its replica-0 twin (a smaller rank, done already) measured */
            const plan_coord *pc = &p->coords[rk];
            replay_rank_row *row = &r->ranks[rk];
            *row = r->ranks[c->twin[rk]];
            row->rank = rk;
            row->node = pc->node;
            row->dp = pc->c[PLAN_GROUP_DP];
            continue;
        }
        if (rs->have_cur) {
            replay__push_iv(c, rs, &rs->cur);
            rs->have_cur = false;
        }
        SIM_ASSERT(c->w0_known && c->w0 == w0, "rank %d: the reported step's window", rk);
        double busy = rs->acc_busy, rank_idle[REPLAY_CAUSE_COUNT];
        memcpy(rank_idle, rs->acc_idle, sizeof rank_idle);
        sim_time cursor = rs->acc_cursor;
        /* until the rank ends its own step: what ended it; after that: waiting for others */
        sim_time own = SIM_MIN(SIM_MAX(rs->step_end[steps - 1], cursor), w1);
        replay__tail_bubbles(c, rk, rs, cursor, own, rank_idle);
        /* after the rank's own step: waiting for the others (a pipeline's drain) */
        replay__add_bubble(c, rk, steps, own, w1,
                           c->p->sc->parallel.pp > 1 ? REPLAY_CAUSE_PIPELINE : REPLAY_CAUSE_OTHER,
                           rank_idle);
        double idle = 0;
        for (int k = 0; k < REPLAY_CAUSE_COUNT; k++) {
            idle += rank_idle[k];
            idle_by_cause[k] += rank_idle[k];
        }
        idle_total += idle;
        replay_rank_row *row = &r->ranks[rk];
        const plan_coord *pc = &p->coords[rk];
        *row = (replay_rank_row){
            .rank = rk, .node = pc->node, .dp = pc->c[PLAN_GROUP_DP], .tp = pc->c[PLAN_GROUP_TP],
            .pp = pc->c[PLAN_GROUP_PP], .ep = pc->c[PLAN_GROUP_EP], .cp = pc->c[PLAN_GROUP_CP],
            .compute_s = busy / SIM_PS_PER_S, .comm_s = rs->comm_busy_ps / SIM_PS_PER_S,
            .idle_s = idle / SIM_PS_PER_S, .bubble_s = idle / SIM_PS_PER_S,
            .peak_mem_bytes = rs->peak.total};
        memcpy(row->mem, rs->peak.bytes, sizeof row->mem);
        for (int g = 0; g < REPLAY_COMM_COUNT; g++)
            s->comm_bytes_per_gpu[g] += rs->comm_sent[g] / nr;
    }
    replay__slowest(c, s, r);
    sort_bubbles_by_rank(r, p->n_ranks);
    s->bubble_fraction = window > 0 ? idle_total / nr / window : 0;
    for (int k = 0; k < REPLAY_CAUSE_COUNT; k++)
        s->bubble_by_cause[k] = window > 0 ? idle_by_cause[k] / nr / window : 0;
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        s->exposed_comm_s[g] = idle_by_cause[replay__cause_of_group(g)] / nr / SIM_PS_PER_S;

    /* links */
    int nl = hw_net_link_count(c->net);
    r->n_links = (size_t)nl;
    r->links = sim_calloc(r->n_links ? r->n_links : 1, sizeof *r->links);
    double total_s = sim_time_to_s(end[steps - 1]);
    for (int l = 0; l < nl; l++) {
        const hw_link_stats *ls = hw_net_link(c->net, l);
        r->links[l] = (replay_link_row){
            .link = l, .src = replay_results_intern(r, ls->src),
            .dst = replay_results_intern(r, ls->dst), .cls = ls->cls, .bytes = ls->bytes,
            .busy_s = sim_time_to_s(ls->busy_ps),
            .utilization = total_s > 0 ? ls->bytes / (ls->bw_Bps * total_s) : 0};
    }
    sim_free(dur);
    sim_free(end);
}
