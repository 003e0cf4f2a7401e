/* The screen's memo tables and pipelines (screen-internal.h): every stage's schedule
 * (plan_pp_schedule, the replay's own) evaluated as a DAG with per-chunk durations, and the
 * activations a stage holds along it. */
#include "core/sim.h"

#include <math.h>
#include <string.h>

#include "plan/pipeline.h"
#include "plan/screen-internal.h"

/* Folds v into h, with splitmix64's finalizer on v: doubles holding whole numbers have
 * their low bits all zero, and the tables index by the low bits. */
uint64_t plan__screen_mix(uint64_t h, uint64_t v)
{
    v += 0x9e3779b97f4a7c15u;
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9u;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebu;
    v ^= v >> 31;
    return (h ^ v) * 0x100000001b3u + (h >> 29);
}

uint64_t plan__screen_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* The entry for key[0..nk) in `t`: found (true, its values in v) or not (false; then
 * memo_put stores it). */
memo *plan__memo_slot(memo_table *t, const double *key, size_t nk, bool *found)
{
    uint64_t h = 0;
    for (size_t i = 0; i < nk; i++)
        h = plan__screen_mix(h, plan__screen_dbits(key[i]));
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        memo *e = sim_calloc(cap, sizeof *e);
        for (size_t i = 0; i < t->cap; i++)
            if (t->e[i].key) {
                size_t k = t->e[i].hash & (cap - 1);
                while (e[k].key)
                    k = (k + 1) & (cap - 1);
                e[k] = t->e[i];
            }
        sim_free(t->e);
        t->e = e;
        t->cap = cap;
    }
    size_t k = h & (t->cap - 1);
    for (; t->e[k].key; k = (k + 1) & (t->cap - 1))
        if (t->e[k].hash == h && t->e[k].n_key == nk &&
            !memcmp(t->e[k].key, key, nk * sizeof *key)) {
            *found = true;
            return &t->e[k];
        }
    *found = false;
    t->e[k].hash = h;
    return &t->e[k];
}

void plan__memo_put(memo_table *t, memo *m, const double *key, size_t nk, double v0, double v1)
{
    m->key = sim_calloc(nk, sizeof *key);
    memcpy(m->key, key, nk * sizeof *key);
    m->n_key = nk;
    m->v[0] = v0;
    m->v[1] = v1;
    t->n++;
}

/* ---- the pipeline as a DAG --------------------------------------------------------- */


/* Every stage's compute actions under (sched, pp, v, m), stage s's at s x S->run_per
 * (S->run_n[s] of them); the last set is kept. */
static const run_act *stage_runs(plan_screen *S, plan_schedule sched, int pp, int v, int m)
{
    int key[4] = {(int)sched, pp, v, m};
    if (S->runs && !memcmp(key, S->run_key, sizeof key))
        return S->runs;
    sim_free(S->runs);
    sim_free(S->run_n);
    memcpy(S->run_key, key, sizeof key);
    size_t per = (size_t)PLAN_PP_ACTIONS(m, v);
    plan_pp_action *acts = sim_calloc(per, sizeof *acts);
    S->run_per = 2 * (size_t)m * (size_t)v + 1;
    S->runs = sim_calloc((size_t)pp * S->run_per, sizeof *S->runs);
    S->run_n = sim_calloc((size_t)pp, sizeof *S->run_n);
    int C = plan_pp_chunks(sched, pp, v);
    for (int s = 0; s < pp; s++) {
        int n = plan_pp_schedule(sched, pp, v, m, s, acts), k = 0;
        for (int i = 0; i < n; i++) {
            const plan_pp_action *a = &acts[i];
            if (a->kind != PLAN_PP_RUN)
                continue;
            int ch = plan_pp_chunk_of(sched, pp, s, a->vchunk);
            int from = a->fwd ? ch - 1 : ch + 1;
            SIM_ASSERT((size_t)k < S->run_per, "stage %d: more than %zu actions", s, S->run_per);
            S->runs[(size_t)s * S->run_per + (size_t)k++] = (run_act){
                .mb = a->mb, .chunk = (int16_t)ch, .fwd = a->fwd,
                .remote = from >= 0 && from < C && plan_pp_stage_of(sched, pp, from, 0) != s};
        }
        S->run_n[s] = k;
    }
    sim_free(acts);
    return S->runs;
}

double plan__screen_pipeline(plan_screen *S, const plan_scenario *sc, int pp, int v, int m,
                             const double *f, const double *b, const double *p2p)
{
    plan_schedule sched = sc->parallel.pipeline.schedule;
    int C = plan_pp_chunks(sched, pp, v);
    size_t nk = (size_t)(3 * C + 3);
    double *key = sim_calloc(nk, sizeof *key);
    key[0] = pp;
    key[1] = v;
    key[2] = m;
    key[3] = (double)sched;
    memcpy(key + 4, f, (size_t)C * sizeof *f);
    memcpy(key + 4 + C, b, (size_t)C * sizeof *b);
    memcpy(key + 4 + 2 * C, p2p, (size_t)(C - 1) * sizeof *p2p);
    bool found;
    memo *slot = plan__memo_slot(&S->pipes, key, nk, &found);
    if (found) {
        sim_free(key);
        return slot->v[0];
    }
    /* every stage's compute actions (the last schedule kept: candidates come in runs that
     * share it); done[c][mb] the end of chunk c's forward (backward) of micro-batch mb */
    const run_act *acts = stage_runs(S, sched, pp, v, m);
    const int *n = S->run_n;
    size_t per = S->run_per;
    int *at = sim_calloc((size_t)pp, sizeof *at);
    double *free_at = sim_calloc((size_t)pp, sizeof *free_at);
    double *fdone = sim_calloc((size_t)C * (size_t)m, sizeof *fdone);
    double *bdone = sim_calloc((size_t)C * (size_t)m, sizeof *bdone);
    for (size_t i = 0; i < (size_t)C * (size_t)m; i++)
        fdone[i] = bdone[i] = -1;
    bool progress = true;
    while (progress) {
        progress = false;
        for (int s = 0; s < pp; s++)
            for (; at[s] < n[s]; at[s]++) {
                const run_act *a = &acts[(size_t)s * per + (size_t)at[s]];
                int ch = a->chunk;
                double ready = free_at[s];
                if (a->fwd && ch > 0) {
                    double d = fdone[(size_t)(ch - 1) * m + a->mb];
                    if (d < 0)
                        break;
                    ready = fmax(ready, d + (a->remote ? p2p[ch - 1] : 0));
                } else if (!a->fwd) {
                    double d = ch < C - 1 ? bdone[(size_t)(ch + 1) * m + a->mb]
                                          : fdone[(size_t)ch * m + a->mb];
                    if (d < 0)
                        break;
                    ready = fmax(ready, d + (a->remote && ch < C - 1 ? p2p[ch] : 0));
                }
                double end = ready + (a->fwd ? f[ch] : b[ch]);
                (a->fwd ? fdone : bdone)[(size_t)ch * m + a->mb] = end;
                free_at[s] = end;
                progress = true;
            }
    }
    double T = 0;
    for (int s = 0; s < pp; s++) {
        SIM_ASSERT(at[s] == n[s], "stage %d stuck at %d of %d", s, at[s], n[s]);
        T = fmax(T, free_at[s]);
    }
    sim_free(at);
    sim_free(free_at);
    sim_free(fdone);
    sim_free(bdone);
    plan__memo_put(&S->pipes, slot, key, nk, T, 0);
    sim_free(key);
    return T;
}

/* The most chunk micro-batches stage s's schedule holds at once. */
int plan__screen_inflight(plan_screen *S, const plan_scenario *sc, int pp, int v, int m, int s)
{
    double key[5] = {sc->parallel.pipeline.schedule, pp, v, m, s};
    bool found;
    memo *slot = plan__memo_slot(&S->inflight, key, 5, &found);
    if (found)
        return (int)slot->v[0];
    plan_pp_action *acts = sim_calloc((size_t)PLAN_PP_ACTIONS(m, v), sizeof *acts);
    int n = plan_pp_schedule(sc->parallel.pipeline.schedule, pp, v, m, s, acts);
    int held = 0, most = 0;
    for (int i = 0; i < n; i++) {
        if (acts[i].kind != PLAN_PP_RUN)
            continue;
        held += acts[i].fwd ? 1 : acts[i].part != PLAN_PP_WEIGHT ? -1 : 0;
        most = SIM_MAX(most, held);
    }
    sim_free(acts);
    plan__memo_put(&S->inflight, slot, key, 5, most, 0);
    return most;
}

/* The most activation bytes stage s holds along its schedule: each forward of chunk c
 * leaves act[c], each backward frees it, and while a backward runs it briefly holds tr[c]
 * more (memoized). */
double plan__screen_activation_peak(plan_screen *S, const plan_scenario *sc, int pp, int v,
                                    int m, int s, const double *act, const double *tr)
{
    plan_schedule sched = sc->parallel.pipeline.schedule;
    int C = plan_pp_chunks(sched, pp, v);
    double key[5 + 2 * PLAN_SCREEN_CHUNKS_MAX] = {sched, pp, v, m, s};
    memcpy(key + 5, act, (size_t)C * sizeof *act);
    memcpy(key + 5 + C, tr, (size_t)C * sizeof *tr);
    size_t nk = 5 + 2 * (size_t)C;
    bool found;
    memo *slot = plan__memo_slot(&S->inflight, key, nk, &found);
    if (found)
        return slot->v[0];
    const run_act *runs = stage_runs(S, sched, pp, v, m) + (size_t)s * S->run_per;
    double held = 0, most = 0;
    for (int i = 0; i < S->run_n[s]; i++) {
        const run_act *a = &runs[i];
        if (a->fwd) {
            held += act[a->chunk];
        } else {
            most = fmax(most, held + tr[a->chunk]);
            held -= act[a->chunk];
        }
        most = fmax(most, held);
    }
    slot = plan__memo_slot(&S->inflight, key, nk, &found); /* stage_runs did not touch the table */
    plan__memo_put(&S->inflight, slot, key, nk, most, 0);
    return most;
}

void plan__screen_pipe_clear(plan_screen *S)
{
    memo_table *t[] = {&S->pipes, &S->chunks, &S->inflight};
    for (size_t k = 0; k < SIM_ARRAY_LEN(t); k++) {
        for (size_t i = 0; i < t[k]->cap; i++)
            sim_free(t[k]->e[i].key);
        sim_free(t[k]->e);
    }
    sim_free(S->runs);
    sim_free(S->run_n);
}
