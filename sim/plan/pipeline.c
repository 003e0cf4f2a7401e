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
    dual_item(d, PLAN_PP_RUN, true, f, DUAL_F, 0);
    d->out[d->n - 1].paired = true;
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

int plan_pp_stage_chunks(plan_schedule sched, int v)
{
    return sched == PLAN_SCHED_DUALPIPE ? 2 : v;
}

int plan_pp_chunks(plan_schedule sched, int p, int v)
{
    return sched == PLAN_SCHED_DUALPIPE ? p : p * v;
}

int plan_pp_chunk_of(plan_schedule sched, int p, int s, int vchunk)
{
    if (sched == PLAN_SCHED_DUALPIPE) {
        int h = SIM_MIN(s, p - 1 - s);
        return vchunk == 0 ? h : p - 1 - h;
    }
    return vchunk * p + s;
}

int plan_pp_stage_of(plan_schedule sched, int p, int c, int dir)
{
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
