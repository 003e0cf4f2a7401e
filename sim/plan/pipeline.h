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

typedef struct plan_pp_action {
    bool fwd;
    int32_t mb;     /* micro-batch */
    int32_t vchunk; /* the stage's virtual chunk, 0..v-1 */
    uint8_t part;   /* backward actions: plan_pp_part */
} plan_pp_action;

/* Actions of stage `s` per step: 2·m·v, or 3·m for zb-h1 (at most PLAN_PP_ACTIONS). */
#define PLAN_PP_ACTIONS(m, v) (3 * (m) * (v))

/* The actions of stage `s`, in order, into `out` (room for PLAN_PP_ACTIONS(m, v)); returns
 * their count. Asserts the arguments are valid (interleaved: m a multiple of p; zb-h1:
 * v = 1).
 *   zb-h1  (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", the handcrafted ZB-H1, as
 *          its authors' Megatron/DeepSpeed schedule runs it): p-s-1 forwards; then s of one
 *          forward and one input-gradient backward B; then one forward, one B and one
 *          weight-gradient pass W while forwards remain; then B and W; then the W's left
 *          (s of them). The first stage runs each backward whole. At most p micro-batches
 *          in flight (1F1B's limit), and with uniform stages the idle time is
 *          (p-1)(T_F + T_B - T_W) instead of 1F1B's (p-1)(T_F + T_B + T_W). */
int plan_pp_schedule(plan_schedule sched, int p, int v, int m, int s, plan_pp_action *out);

/* Layers per chunk for `layers` over `chunks` chunks, as even as possible; when they do not
 * divide, the first and last chunks (which also hold the embedding and the head) give up a
 * layer first, then the next ones inwards. Writes `chunks` counts (each >= 1). Asserts
 * layers >= chunks. */
void plan_pp_partition(int layers, int chunks, int *out);

#endif
