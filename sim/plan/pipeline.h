/* Pipeline parallelism: how layers are split into model chunks and in which order each stage
 * runs the forward and backward passes of micro-batches (docs/strategies.md).
 *
 * With p stages and v virtual stages (interleaving), the model is cut into C = p·v chunks;
 * chunk c runs on stage c mod p as its virtual chunk c / p. Chunk 0 also holds the embedding,
 * chunk C-1 the LM head and loss. The schedules (Huang et al. 2019 GPipe; Narayanan et al.
 * 2021 1F1B and interleaved 1F1B, Megatron-LM's order):
 *   gpipe        every forward, then every backward (reverse micro-batch order)
 *   1f1b         warm-up of min(p-s-1, m) forwards, then one forward one backward, then the
 *                remaining backwards
 *   interleaved  the same over m·v micro-batch chunks: warm-up (p-s-1)·2 + (v-1)·p; the k-th
 *                forward runs virtual chunk (k mod p·v) / p of micro-batch
 *                (k / (p·v))·p + k mod p; backwards visit the chunks in reverse. Needs m to be
 *                a multiple of p (as Megatron requires).
 * With uniform stages and free communication GPipe and 1F1B idle (p-1)/(m+p-1) of the step,
 * interleaved (p-1)/(v·m+p-1). */
#ifndef SIM_PLAN_PIPELINE_H
#define SIM_PLAN_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/scenario.h"

/* What an action runs of its micro-batch's backward: all of it, or (zero-bubble schedules)
 * the input gradients alone, or later the weight gradients alone. */
typedef enum plan_pp_part { PLAN_PP_FULL, PLAN_PP_INPUT, PLAN_PP_WEIGHT } plan_pp_part;

/* What an item of a stage's schedule is. Every schedule is a list of PLAN_PP_RUN actions;
 * DualPipe's also says when transfers are posted and waited for, as its implementation
 * batches them: PLAN_PP_RECV and PLAN_PP_SEND add a transfer of micro-batch `mb` on the
 * chunk `vchunk` (`fwd`: activations, else their gradients) to the open batch, and
 * PLAN_PP_COMMIT issues the batch once the stage's previous compute has ended (sends are
 * posted there, not when their data is ready) and makes the next action wait for all of it. */
typedef enum plan_pp_kind { PLAN_PP_RUN, PLAN_PP_RECV, PLAN_PP_SEND, PLAN_PP_COMMIT } plan_pp_kind;

typedef struct plan_pp_action {
    bool fwd;
    int32_t mb;     /* micro-batch */
    int32_t vchunk; /* the stage's virtual chunk, 0..v-1 (DualPipe: 0 or 1, the two it holds) */
    uint8_t part;   /* backward actions: plan_pp_part */
    uint8_t kind;   /* plan_pp_kind */
    uint8_t dir;    /* DualPipe: the micro-batch's direction (0: enters at stage 0), else 0 */
} plan_pp_action;

/* Items of stage `s`'s schedule per step: 2·m·v actions, 3·m for zb-h1, and DualPipe's
 * transfers (at most PLAN_PP_ACTIONS(m, v) in all). */
#define PLAN_PP_ACTIONS(m, v) (12 * (m) * (v) + 8)

/* The schedule of stage `s` into `out` (room for PLAN_PP_ACTIONS(m, v)); returns the count.
 * Asserts the arguments are valid (interleaved: m a multiple of p; zb-h1: v = 1; dualpipe:
 * v = 2, p even, m even and at least 2p).
 *   zb-h1  (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", the handcrafted ZB-H1, as
 *          its authors' Megatron/DeepSpeed schedule runs it): p-s-1 forwards; then s of one
 *          forward and one input-gradient backward B; then one forward, one B and one
 *          weight-gradient pass W while forwards remain; then B and W; then the W's left
 *          (s of them). The first stage runs each backward whole. At most p micro-batches
 *          in flight (1F1B's limit), and with uniform stages the idle time is
 *          (p-1)(T_F + T_B - T_W) instead of 1F1B's (p-1)(T_F + T_B + T_W).
 *   dualpipe (DeepSeek-V3 technical report, arXiv 2412.19437, §3.2.1, and the step() of
 *          deepseek-ai/DualPipe): the model is cut into p chunks and every stage holds two,
 *          h = min(s, p-1-s) and p-1-h (vchunk 0 and 1), so stages s and p-1-s hold the same
 *          weights (twice 1F1B's parameters). Half the m micro-batches (direction 0,
 *          micro-batches 0..m/2-1) enter at stage 0 and run chunk c on stage c, the other
 *          half (m/2..m-1) enter at stage p-1 and run chunk c on stage p-1-c. Every stage runs
 *          its author's eight steps over its two chunks, written for h: 2(p/2-h-1) forwards
 *          of chunk h; h+1 pairs of forwards; p/2-h-1 of (backward of p-1-h split into B and
 *          W, forward); m/2-p+h+1 of two overlapped forward-backward pairs; p/2-h-1 of
 *          (backward, pair); h+1 pairs of backwards, the later half split; p/2-h-1 of
 *          (W, split backward); the h+1 W's left. With uniform stages the report's idle time
 *          per stage is (p/2-1)(F&B + B - 3W) (B: a whole backward; F&B: an overlapped pair),
 *          with at most p+1 micro-batch chunks of activations in flight.
 *   zbv    (Qi et al. 2024, ZB-V: the zero-bubble schedule with two chunks a stage in a V)
 *          the model is cut into 2p chunks and stage s holds s and 2p-1-s (vchunk 0 and 1),
 *          so a micro-batch goes down the stages and back up, its turn at stage p-1 local.
 *          Every backward is split into B and W. The order comes from a list scheduler run
 *          in unit time (T_F = T_B = T_W, free transfers) with the authors' memory limit of
 *          1F1B's (2p chunk micro-batches of activations a stage): the earliest stage with
 *          work runs, of what is ready, the op its variant prefers, a queued W when nothing
 *          is, and the best of four variants (B or F first; earlier or later chunk's B
 *          first; forwards to the later chunk first) is kept. In unit time every stage then idles p-1 chunk
 *          forwards, the fill no schedule avoids when a step starts empty (checked for p =
 *          2..16 and m = 2p..4p); the authors' "zero" counts steps that overlap across the
 *          optimizer (their post-validation), which this step boundary does not. */
int plan_pp_schedule(plan_schedule sched, int p, int v, int m, int s, plan_pp_action *out);

/* Every stage's schedule at once: stage s's n[s] items at out[s x PLAN_PP_ACTIONS(m, v)]
 * (zbv builds the whole pipeline's together; the others stage by stage). */
void plan_pp_schedule_all(plan_schedule sched, int p, int v, int m, plan_pp_action *out,
                          int *n);

/* Chunks a stage holds under `sched` with v virtual stages (dualpipe, zbv: 2), the model's
 * chunk count (p·v; dualpipe: p; zbv 2p), the chunk of a stage's virtual chunk, and the stage that runs
 * chunk `c` for micro-batches of direction `dir`. */
int plan_pp_stage_chunks(plan_schedule sched, int v);
int plan_pp_chunks(plan_schedule sched, int p, int v);
int plan_pp_chunk_of(plan_schedule sched, int p, int s, int vchunk);
int plan_pp_stage_of(plan_schedule sched, int p, int c, int dir);

/* Layers per chunk for `layers` over `chunks` chunks, as even as possible; when they do not
 * divide, the first and last chunks (which also hold the embedding and the head) give up a
 * layer first, then the next ones inwards. Writes `chunks` counts (each >= 1). Asserts
 * layers >= chunks. */
void plan_pp_partition(int layers, int chunks, int *out);

#endif
