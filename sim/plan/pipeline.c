/* Pipeline partition and schedules (see pipeline.h). */
#include "core/sim.h"

#include <string.h>

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

/* DualPipe (pipeline.h): the step of deepseek-ai/DualPipe for stage s, its calls written
 * out as items. Phases are the stage's two chunks (0: chunk h, 1: chunk p-1-h); each has its
 * own forward, backward and transfer counters, since micro-batches of one direction go
 * through a chunk in order. */
typedef struct dual {
    plan_pp_action *out;
    int n, p, m, h;
    bool second;       /* stage in the second half: phase 0 is direction 1 */
    int count[2][6];   /* per phase: F, B, recv F, send F, recv B, send B */
    int queued;        /* the items before this hold no split backward left to weigh */
} dual;

enum { DUAL_F, DUAL_B, DUAL_RECV_F, DUAL_SEND_F, DUAL_RECV_B, DUAL_SEND_B };

/* Whether phase `ph`'s chunk is its direction's first (last) chunk, which receives no
 * activations (gradients) and sends no gradients (activations). */
static int dual_chunk(const dual *d, int ph)
{
    return ph == 0 ? d->h : d->p - 1 - d->h;
}

static void dual_item(dual *d, uint8_t kind, bool fwd, int ph, int counter, uint8_t part)
{
    int dir = ph ^ (int)d->second;
    int i = counter >= 0 ? d->count[ph][counter]++ : 0;
    d->out[d->n++] = (plan_pp_action){.kind = kind, .fwd = fwd, .vchunk = ph, .part = part,
                                      .dir = (uint8_t)dir, .mb = i + dir * (d->m / 2)};
}

static void dual_recv(dual *d, int ph, bool fwd)
{
    int c = dual_chunk(d, ph);
    if (fwd ? c > 0 : c < d->p - 1)
        dual_item(d, PLAN_PP_RECV, fwd, ph, fwd ? DUAL_RECV_F : DUAL_RECV_B, 0);
}

static void dual_send(dual *d, int ph, bool fwd)
{
    int c = dual_chunk(d, ph);
    if (fwd ? c < d->p - 1 : c > 0)
        dual_item(d, PLAN_PP_SEND, fwd, ph, fwd ? DUAL_SEND_F : DUAL_SEND_B, 0);
}

static void dual_commit(dual *d)
{
    d->out[d->n++] = (plan_pp_action){.kind = PLAN_PP_COMMIT};
}

static void dual_fwd(dual *d, int ph, bool recv, bool send)
{
    if (recv)
        dual_recv(d, ph, true);
    dual_commit(d);
    dual_item(d, PLAN_PP_RUN, true, ph, DUAL_F, 0);
    if (send)
        dual_send(d, ph, true);
}

/* A backward, split (zb: input gradients now, the weight pass queued) or whole. */
static void dual_bwd(dual *d, int ph, bool zb, bool recv, bool send)
{
    if (recv)
        dual_recv(d, ph, false);
    dual_commit(d);
    dual_item(d, PLAN_PP_RUN, false, ph, DUAL_B, zb ? PLAN_PP_INPUT : PLAN_PP_FULL);
    if (send)
        dual_send(d, ph, false);
}

/* Forward of phase f overlapped with the (whole) backward of phase b. */
static void dual_pair(dual *d, int f, int b, bool recv_f)
{
    if (recv_f)
        dual_recv(d, f, true);
    dual_recv(d, b, false);
    dual_commit(d);
    dual_item(d, PLAN_PP_RUN, true, f, DUAL_F, 0); /* (run one after the other here) */
    dual_item(d, PLAN_PP_RUN, false, b, DUAL_B, PLAN_PP_FULL);
    dual_send(d, f, true);
    dual_send(d, b, false);
}

/* The weight pass of the oldest split backward (the implementation's FIFO queue). */
static void dual_weight(dual *d)
{
    dual_commit(d);
    for (int i = d->queued; i < d->n; i++) {
        plan_pp_action *a = &d->out[i];
        if (a->kind == PLAN_PP_RUN && !a->fwd && a->part == PLAN_PP_INPUT) {
            a->part = 0xff; /* taken (restored below) */
            d->queued = i + 1;
            d->out[d->n++] = (plan_pp_action){.kind = PLAN_PP_RUN, .mb = a->mb,
                                              .vchunk = a->vchunk, .dir = a->dir,
                                              .part = PLAN_PP_WEIGHT};
            return;
        }
    }
    SIM_ASSERT(false, "dualpipe: a weight pass with none queued");
}

static int dualpipe(int p, int m, int s, plan_pp_action *out)
{
    int h = SIM_MIN(s, p - 1 - s), half = p / 2;
    bool middle = s == half - 1 || s == half;
    dual d = {.out = out, .p = p, .m = m, .h = h, .second = s >= half};
    for (int i = 0; i < 2 * (half - h - 1); i++) /* 1: forwards of chunk h */
        dual_fwd(&d, 0, true, true);
    dual_recv(&d, 0, true); /* 2: pairs of forwards, the next chunk-h input posted ahead */
    for (int i = 0; i < h + 1; i++) {
        dual_fwd(&d, 0, false, middle);
        dual_recv(&d, 0, true);
        dual_fwd(&d, 1, true, !middle || i < h);
        if (!middle)
            dual_send(&d, 0, true);
    }
    for (int i = 0; i < half - h - 1; i++) { /* 3: split backward, its weights, forward */
        dual_bwd(&d, 1, true, true, true);
        dual_recv(&d, 1, true);
        dual_weight(&d);
        dual_fwd(&d, 1, false, true);
    }
    for (int i = 0; i < m / 2 - p + h + 1; i++) { /* 4: the main step, two pairs */
        if (i == 0 && middle) { /* the middle stages run the first pair apart */
            dual_fwd(&d, 0, false, false);
            dual_send(&d, 1, true);
            dual_bwd(&d, 1, false, true, false);
            dual_send(&d, 0, true);
            dual_send(&d, 1, false);
        } else {
            dual_pair(&d, 0, 1, i > 0);
        }
        dual_pair(&d, 1, 0, true);
    }
    for (int i = 0; i < half - h - 1; i++) { /* 5: backward, pair */
        dual_bwd(&d, 1, false, true, true);
        dual_pair(&d, 1, 0, true);
    }
    bool zb = false; /* 6: pairs of backwards, the second half split */
    for (int i = 0; i < h + 1; i++) {
        if (i == (h + 1) / 2 && h % 2 == 1)
            zb = true;
        dual_bwd(&d, 1, zb, true, true);
        if (i == (h + 1) / 2 && h % 2 == 0)
            zb = true;
        dual_bwd(&d, 0, zb, true, true);
    }
    for (int i = 0; i < half - h - 1; i++) { /* 7: weights, split backward */
        dual_weight(&d);
        dual_bwd(&d, 0, true, true, true);
    }
    for (int i = 0; i < h + 1; i++) /* 8: the weights left */
        dual_weight(&d);
    dual_commit(&d);
    for (int i = 0; i < d.n; i++)
        if (out[i].part == 0xff)
            out[i].part = PLAN_PP_INPUT;
    return d.n;
}

/* ZB-V (pipeline.h): a list scheduler over the whole pipeline in unit time (T_F = T_B = T_W
 * = 1, free transfers). Each step the stage that is earliest in time among those with
 * something to run takes, of what is ready by then, the op its variant prefers; with
 * nothing ready it runs a queued W rather than idle, else it waits for the earliest. A stage
 * holds at most 2p chunk micro-batches of activations (a forward adds one, its W frees it):
 * 1F1B's p whole-stage micro-batches. */
enum { ZBV_F, ZBV_B, ZBV_W };

typedef struct zbv {
    int p, m, C;
    int64_t *done_f, *done_b; /* end time by chunk x m + micro-batch, -1: not yet */
    int *next_f, *next_b;     /* per chunk: its next micro-batch */
    int *wq, *wq_head, *wq_tail; /* per stage: queued W's (chunk x m + micro-batch), FIFO */
    int *inflight;
    int64_t *t;               /* per stage: when it is free */
} zbv;

typedef struct zbv_cand {
    int kind, c, mb;
    int64_t ready;
} zbv_cand;

static int zbv_stage_of(int p, int c)
{
    return c < p ? c : 2 * p - 1 - c;
}

/* Stage s's candidates into `out` (at most 5): B and F of each of its chunks, its next W. */
static int zbv_cands(const zbv *z, int s, zbv_cand *out)
{
    int n = 0, chunk[2] = {s, 2 * z->p - 1 - s};
    for (int k = 0; k < 2; k++) {
        int c = chunk[k], mb = z->next_b[c];
        if (mb < z->m) {
            int64_t dep = c < z->C - 1 ? z->done_b[(c + 1) * z->m + mb] : z->done_f[c * z->m + mb];
            if (dep >= 0)
                out[n++] = (zbv_cand){ZBV_B, c, mb, dep};
        }
        mb = z->next_f[c];
        if (mb < z->m && z->inflight[s] < 2 * z->p) {
            int64_t dep = c > 0 ? z->done_f[(c - 1) * z->m + mb] : 0;
            if (dep >= 0)
                out[n++] = (zbv_cand){ZBV_F, c, mb, dep};
        }
    }
    if (z->wq_head[s] < z->wq_tail[s]) {
        int e = z->wq[s * 2 * z->m + z->wq_head[s]];
        out[n++] = (zbv_cand){ZBV_W, e / z->m, e % z->m, 0};
    }
    return n;
}

/* Whether candidate a goes before b under the variant: bit 0 prefers B to F, bit 1 takes
 * the earlier chunk's backward first; forwards go to the later chunk first (the earlier
 * first can fill the memory limit with first-chunk forwards that no backward follows). */
static bool zbv_before(const zbv_cand *a, const zbv_cand *b, int variant)
{
    static const int rank_fbw[3] = {0, 1, 2}, rank_bfw[3] = {1, 0, 2};
    const int *r = variant & 1 ? rank_bfw : rank_fbw;
    if (r[a->kind] != r[b->kind])
        return r[a->kind] < r[b->kind];
    bool early = a->kind == ZBV_B && (variant & 2);
    return a->kind != ZBV_W && (early ? a->c < b->c : a->c > b->c);
}

/* One variant's schedule of every stage: out[s * cap ...], n[s] actions; the makespan. */
static int64_t zbv_try(int p, int m, int variant, plan_pp_action *out, size_t cap, int *n)
{
    zbv z = {.p = p, .m = m, .C = 2 * p};
    size_t cm = (size_t)z.C * (size_t)m;
    z.done_f = sim_calloc(cm, sizeof *z.done_f);
    z.done_b = sim_calloc(cm, sizeof *z.done_b);
    for (size_t i = 0; i < cm; i++)
        z.done_f[i] = z.done_b[i] = -1;
    z.next_f = sim_calloc((size_t)z.C, sizeof *z.next_f);
    z.next_b = sim_calloc((size_t)z.C, sizeof *z.next_b);
    z.wq = sim_calloc((size_t)p * 2 * (size_t)m, sizeof *z.wq);
    z.wq_head = sim_calloc((size_t)p, sizeof *z.wq_head);
    z.wq_tail = sim_calloc((size_t)p, sizeof *z.wq_tail);
    z.inflight = sim_calloc((size_t)p, sizeof *z.inflight);
    z.t = sim_calloc((size_t)p, sizeof *z.t);
    for (int s = 0; s < p; s++)
        n[s] = 0;
    int64_t left = 6 * (int64_t)p * m, end = 0;
    while (left > 0) {
        int s = -1;
        zbv_cand c[5];
        int nc = 0;
        for (int k = 0; k < p; k++) { /* the earliest stage with something to run */
            zbv_cand tmp[5];
            int nt = zbv_cands(&z, k, tmp);
            if (nt > 0 && (s < 0 || z.t[k] < z.t[s])) {
                s = k;
                nc = nt;
                memcpy(c, tmp, sizeof tmp);
            }
        }
        if (s < 0) { /* stuck: this variant has no schedule here */
            end = -1;
            break;
        }
        /* what is ready now; else a queued W; else the earliest */
        int pick = -1;
        for (int i = 0; i < nc; i++)
            if (c[i].ready <= z.t[s] && (pick < 0 || zbv_before(&c[i], &c[pick], variant)))
                pick = i;
        for (int i = 0; i < nc && pick < 0; i++)
            if (c[i].kind == ZBV_W)
                pick = i;
        if (pick < 0) {
            pick = 0;
            for (int i = 1; i < nc; i++)
                if (c[i].ready < c[pick].ready ||
                    (c[i].ready == c[pick].ready && zbv_before(&c[i], &c[pick], variant)))
                    pick = i;
        }
        zbv_cand x = c[pick];
        int64_t fin = SIM_MAX(z.t[s], x.ready) + 1;
        z.t[s] = fin;
        end = SIM_MAX(end, fin);
        size_t at = (size_t)x.c * (size_t)m + (size_t)x.mb;
        int vchunk = x.c < p ? 0 : 1;
        SIM_ASSERT((size_t)n[s] < cap, "zbv: %d actions", n[s]);
        plan_pp_action *a = &out[(size_t)s * cap + (size_t)n[s]++];
        if (x.kind == ZBV_F) {
            z.done_f[at] = fin;
            z.next_f[x.c]++;
            z.inflight[s]++;
            *a = (plan_pp_action){.fwd = true, .mb = x.mb, .vchunk = vchunk};
        } else if (x.kind == ZBV_B) {
            z.done_b[at] = fin;
            z.next_b[x.c]++;
            z.wq[s * 2 * m + z.wq_tail[s]++] = (int)at;
            *a = (plan_pp_action){.mb = x.mb, .vchunk = vchunk, .part = PLAN_PP_INPUT};
        } else {
            z.wq_head[s]++;
            z.inflight[s]--;
            *a = (plan_pp_action){.mb = x.mb, .vchunk = vchunk, .part = PLAN_PP_WEIGHT};
        }
        left--;
    }
    sim_free(z.done_f);
    sim_free(z.done_b);
    sim_free(z.next_f);
    sim_free(z.next_b);
    sim_free(z.wq);
    sim_free(z.wq_head);
    sim_free(z.wq_tail);
    sim_free(z.inflight);
    sim_free(z.t);
    return end;
}

void plan_pp_schedule_all(plan_schedule sched, int p, int v, int m, plan_pp_action *out,
                          int *n)
{
    size_t cap = (size_t)PLAN_PP_ACTIONS(m, v);
    if (sched != PLAN_SCHED_ZBV) {
        for (int s = 0; s < p; s++)
            n[s] = plan_pp_schedule(sched, p, v, m, s, &out[(size_t)s * cap]);
        return;
    }
    SIM_ASSERT(v == 2, "zbv with %d chunks a stage", v);
    /* the variant with the shortest unit-time step (the first on ties) */
    plan_pp_action *tmp = sim_calloc((size_t)p * cap, sizeof *tmp);
    int *tn = sim_calloc((size_t)p, sizeof *tn);
    int64_t best = -1;
    for (int variant = 0; variant < 4; variant++) {
        int64_t span = zbv_try(p, m, variant, tmp, cap, tn);
        if (span >= 0 && (best < 0 || span < best)) {
            best = span;
            memcpy(out, tmp, (size_t)p * cap * sizeof *tmp);
            memcpy(n, tn, (size_t)p * sizeof *tn);
        }
    }
    SIM_ASSERT(best >= 0, "zbv: no variant schedules p=%d m=%d", p, m);
    sim_free(tmp);
    sim_free(tn);
}

int plan_pp_stage_chunks(plan_schedule sched, int v)
{
    return sched == PLAN_SCHED_DUALPIPE || sched == PLAN_SCHED_ZBV ? 2 : v;
}

int plan_pp_chunks(plan_schedule sched, int p, int v)
{
    return sched == PLAN_SCHED_DUALPIPE ? p : p * v;
}

int plan_pp_chunk_of(plan_schedule sched, int p, int s, int vchunk)
{
    if (sched == PLAN_SCHED_ZBV)
        return vchunk == 0 ? s : 2 * p - 1 - s;
    if (sched == PLAN_SCHED_DUALPIPE) {
        int h = SIM_MIN(s, p - 1 - s);
        return vchunk == 0 ? h : p - 1 - h;
    }
    return vchunk * p + s;
}

int plan_pp_stage_of(plan_schedule sched, int p, int c, int dir)
{
    if (sched == PLAN_SCHED_ZBV)
        return zbv_stage_of(p, c);
    if (sched == PLAN_SCHED_DUALPIPE)
        return dir == 0 ? c : p - 1 - c;
    return c % p;
}

int plan_pp_schedule(plan_schedule sched, int p, int v, int m, int s, plan_pp_action *out)
{
    SIM_ASSERT(p >= 1 && v >= 1 && m >= 1 && s >= 0 && s < p, "p=%d v=%d m=%d s=%d", p, v, m, s);
    if (sched == PLAN_SCHED_ZB_H1) {
        SIM_ASSERT(v == 1, "zb-h1 with %d virtual stages", v);
        return zb_h1(p, m, s, out);
    }
    if (sched == PLAN_SCHED_DUALPIPE) {
        SIM_ASSERT(v == 2 && p % 2 == 0 && m % 2 == 0 && m >= 2 * p,
                   "dualpipe with v=%d p=%d m=%d", v, p, m);
        return dualpipe(p, m, s, out);
    }
    if (sched == PLAN_SCHED_ZBV) { /* the whole pipeline's schedule, this stage's part */
        size_t cap = (size_t)PLAN_PP_ACTIONS(m, v);
        plan_pp_action *all = sim_calloc((size_t)p * cap, sizeof *all);
        int *n = sim_calloc((size_t)p, sizeof *n);
        plan_pp_schedule_all(sched, p, v, m, all, n);
        int k = n[s];
        memcpy(out, &all[(size_t)s * cap], (size_t)k * sizeof *out);
        sim_free(all);
        sim_free(n);
        return k;
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
