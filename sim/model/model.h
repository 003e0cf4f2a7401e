/* Decoder-transformer description and its per-block operations.
 *
 * model_spec is what the loader fills from a model file. model_block_ops turns one block
 * (embedding, one transformer layer — dense, or with a mixture-of-experts MLP; with MHA/GQA
 * or multi-head latent attention — or the head: final norm + LM head + loss) into the
 * kernels it runs for one micro-batch in forward or backward, with FLOPs, HBM bytes and the
 * parameters whose gradients each backward kernel produces. Formulas and sources:
 * docs/models.md. */
#ifndef SIM_MODEL_MODEL_H
#define SIM_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/gpu.h"

typedef enum model_activation { MODEL_ACT_SWIGLU, MODEL_ACT_GELU } model_activation;
typedef enum model_norm { MODEL_NORM_RMSNORM, MODEL_NORM_LAYERNORM } model_norm;
/* Position information: rotary embeddings, a learned table added to the token embeddings, or
 * ALiBi (Press et al. 2022: a per-head linear bias added to the attention scores; no
 * parameters, no kernel of its own in fused attention). */
typedef enum model_position { MODEL_POS_ROPE, MODEL_POS_LEARNED, MODEL_POS_ALIBI } model_position;
typedef enum model_attention_kind { MODEL_ATTN_MHA, MODEL_ATTN_MLA } model_attention_kind;

typedef struct model_spec {
    char name[64];
    int layers;
    int hidden;
    int heads;
    int kv_heads;   /* default heads */
    int head_dim;   /* default hidden / heads */
    int ffn;
    int64_t vocab;
    model_activation activation;
    model_norm norm;
    model_position position;
    double dropout;
    bool tied_embeddings;
    bool embed_norm; /* a norm (model.norm's kind) on the embeddings before the first layer:
                        BLOOM's word_embeddings_layernorm, Megatron-DeepSpeed's
                        --embed-layernorm */
    int max_seq_len; /* learned positions: rows of the position table; 0 = seq_len */
    struct {
        int experts; /* 0 = dense model */
        int top_k;
        int expert_ffn;
        int shared_experts;
        int dense_layers;
    } moe;
    /* MLA (DeepSeek-V2/V3; docs/models.md "Multi-head latent attention"): head_dim is the
     * query/key non-rotary part (qk_nope_head_dim), kv_heads is not used (every head has its
     * own key and value). kv_lora_rank > 0 (the loader must check it with kind MLA);
     * q_lora_rank 0 = no query compression; qk_rope_head_dim may be 0; v_head_dim 0 =
     * head_dim. qk_norm must be false with MLA. All ignored with MHA. */
    struct {
        model_attention_kind kind;
        int q_lora_rank, kv_lora_rank, qk_rope_head_dim, v_head_dim;
    } attention;
    bool qk_norm;    /* RMSNorm of each query and key head (weights head_dim each), Qwen3 */
    bool bias;       /* linear layers carry biases (GPT-2/3, Megatron GPT); false for Llama/Qwen3 */
    bool qkv_bias;   /* the q, k and v projections carry biases though the others do not
                        (Qwen2); implied by `bias` */
    bool qkv_fused;  /* q, k and v are one parameter tensor (Megatron's query_key_value,
                        GPT-2's c_attn): what DeepSpeed ZeRO-3 handles tensor by tensor;
                        the kernels are the same either way */
} model_spec;

/* Fine-tuning method (docs/models.md "Fine-tuning: LoRA and QLoRA"). FULL trains every
 * parameter. LORA (Hu et al. 2021) freezes every base weight (layers, norms, embedding, LM
 * head) and trains a rank-r pair A (in x r), B (r x out) beside each targeted layer matrix.
 * QLORA (Dettmers et al. 2023) is LORA over base layer matrices stored in 4-bit NF4 with
 * double-quantised block scales and dequantised to 16 bits before each use. */
typedef enum model_ft_method { MODEL_FT_FULL, MODEL_FT_LORA, MODEL_FT_QLORA } model_ft_method;

/* Target matrices of the adapters, a bit set. q, k and v are separate targets although the
 * base QKV GEMM is fused; gate and up likewise (a gate target does nothing in a GELU MLP).
 * MLA layers have no q, k or v matrix: those bits adapt nothing there (only o and the MLP
 * are adapted; the loader should reject explicit q/k/v targets on an MLA model). */
enum {
    MODEL_TARGET_Q = 1,
    MODEL_TARGET_K = 2,
    MODEL_TARGET_V = 4,
    MODEL_TARGET_O = 8,
    MODEL_TARGET_GATE = 16,
    MODEL_TARGET_UP = 32,
    MODEL_TARGET_DOWN = 64,
    MODEL_TARGET_ALL = 127
};

typedef struct model_ft {
    model_ft_method method; /* FULL (0) ignores rank and targets */
    int rank;               /* r, > 0 for LORA and QLORA */
    unsigned targets;       /* MODEL_TARGET_* bits */
} model_ft;

/* Routed load of one MoE layer on one rank for one micro-batch: what the planner draws (or
 * takes as uniform) and hands to model_block_ops. Owned by the caller; model_block_ops only
 * reads it during the call. */
typedef struct model_moe_load {
    int n_local;            /* experts held by this rank (experts / ep) */
    const double *tokens;   /* tokens each local expert processes in this micro-batch
                               (routed to it from every rank of the EP group), n_local
                               entries, each >= 0 */
} model_moe_load;

/* Most experts one rank may hold (DeepSeek-V3's 256 routed experts without EP). */
#define MODEL_MOE_LOCAL_MAX 256

/* The per-micro-batch shape the ops are generated for. */
typedef struct model_shape {
    int64_t micro_batch; /* b */
    int64_t seq_len;     /* s */
    int tp;              /* tensor-parallel degree t (weights and heads split by t) */
    bool sp;             /* sequence parallel: norm/dropout work split by t */
    hw_dtype dtype;      /* compute dtype */
    bool flash_attention;
    model_ft ft;         /* fine-tuning method; zero-initialised = full training */
    int ep;              /* expert-parallel degree (0 or 1: no EP); must divide moe.experts */
    int cp;              /* context-parallel degree c (0 or 1: none): each rank holds s/c of
                            the sequence (two load-balanced chunks of s/2c), every per-token
                            kernel works on b·s/c tokens, and the attention core is c ring
                            steps (flash attention only; c must divide s) */
    bool eager;          /* eager PyTorch (training.compile: false): the pointwise work of
                            RoPE and SwiGLU runs as PyTorch's composite ops, one kernel per op
                            through HBM, instead of one fused kernel each, and autograd keeps
                            SwiGLU's silu output (docs/models.md, "Eager and compiled
                            pointwise kernels"); RMSNorm's kernels: composite_norm */
    bool composite_norm; /* RMSNorm as PyTorch's composite ops (training.norm_kernel, by
                            default with eager): 8 kernels forward and 12 backward through HBM,
                            and autograd keeps its fp32 input copy (docs/models.md); false:
                            one fused kernel each way, keeping the 16-bit input */
    bool sp_dtensor;     /* with sp: PyTorch DTensor's sequence parallelism, whose autograd
                            keeps the gathered input of a column-parallel GEMM (QKV, MLP up,
                            LM head) where Megatron keeps its sequence shard and gathers it
                            again in backward (docs/models.md, "Activation memory") */
    bool fp8_current;    /* dtype fp8 with current scaling: each cast reads its input once more
                            for the amax, and no norm emits fp8 (docs/models.md, "fp8") */
    bool fused_loss;     /* the cross entropy as one fused kernel each way (torch.compile's):
                            it reads the 16-bit logits, keeps them (not an fp32 softmax) and
                            writes the 16-bit gradient (docs/models.md, "Loss") */
    const model_moe_load *moe; /* MoE layers' routed load; NULL = uniform routing: each of the
                                  experts/ep local experts processes T·top_k·ep/experts
                                  tokens, T = b·s the rank's own tokens (docs/models.md) */
} model_shape;

/* MODEL_BLOCK_LAYER is a dense transformer layer (the only kind in a dense model, and the
 * first moe.dense_layers layers of a MoE model); MODEL_BLOCK_MOE is a transformer layer whose
 * MLP is a mixture of experts (layer index >= moe.dense_layers of a model with
 * moe.experts > 0). Which layer is which is the caller's choice. */
typedef enum model_block {
    MODEL_BLOCK_EMBED,
    MODEL_BLOCK_LAYER,
    MODEL_BLOCK_HEAD,
    MODEL_BLOCK_MOE
} model_block;
typedef enum model_phase { MODEL_PHASE_FWD, MODEL_PHASE_BWD } model_phase;

typedef struct model_op {
    const char *name;        /* static string: "qkv", "attn", "mlp_up.dgrad", ... */
    hw_op_class cls;
    double flops;            /* FLOPs the kernel executes (timing, hardware FLOPs) */
    double model_flops;      /* FLOPs by the Megatron convention (MFU): matmuls only, causal
                                attention counted as full s^2, backward = 2 x forward */
    double bytes;            /* HBM bytes read + written */
    double inner;            /* matmuls: the inner (reduction) dimension k the kernel runs
                                over (two products of one kernel: their harmonic mean, which
                                times the same as both); fused attention: the query/key head
                                dimension; a vector kernel of eager PyTorch's own (a
                                composite op's, a native LayerNorm, GELU or add):
                                HW_VECTOR_EAGER; 0 otherwise */
    int64_t grad_params;     /* > 0 for a weight-gradient kernel: gradients it produces */
    bool attn_core;          /* part of the attention core (QK^T, softmax, PV): what selective
                                recompute re-runs in backward */
    int cp_step;             /* with sh->cp = c > 1: 1..c for the attention core's ring steps
                                (step k works on the K/V block of the rank k-1 places back in
                                the ring); 0 for every other kernel */
    double op_share;         /* forward kernels of a dense MHA/GQA layer: the share of the
                                kernel (FLOPs and bytes) that the per-op checkpoint policy
                                (MODEL_RECOMPUTE_OP) re-runs in backward, 0..1; 0 elsewhere */
    bool after_last_save;    /* forward kernels of a dense bf16/fp16 MHA/GQA layer without
                                dropout under full training that run after the last tensor
                                its backward needs is saved (the down GEMM, whose aten op
                                saves its input before it runs, and the second residual add,
                                which saves nothing):
                                an early-stopping full recompute (PyTorch's non-reentrant
                                checkpoint) does not re-run them */
    bool fp8;                /* a GEMM of an fp8 linear layer (sh->dtype fp8): fp8 operands at
                                the fp8 peak; every other kernel of an fp8 run is bf16 */
    bool weight_cast;        /* an fp8 layer's weight cast ("<gemm>.wcast"): Transformer Engine
                                keeps the fp8 weight for the step's later micro-batches, so it
                                runs in the first micro-batch's forward only (not again in a
                                recomputed forward) where the weights stay resident */
} model_op;

/* The dtype kernel `o` runs in under `sh`: an fp8 run's fp8 GEMMs fp8, its other kernels
 * bf16; any other run's kernels its compute dtype. */
static inline hw_dtype model_op_dtype(const model_shape *sh, const model_op *o)
{
    if (sh->dtype != HW_DTYPE_FP8)
        return sh->dtype;
    return o->fp8 ? HW_DTYPE_FP8 : HW_DTYPE_BF16;
}

/* A QLoRA layer's backward with all seven targets runs 46 kernels; a MoE layer's backward
 * runs 5 per local expert plus at most 24 with MHA, 29 with MLA (docs/models.md); eager
 * PyTorch splits a SwiGLU backward into 3 kernels (model_shape.eager) and a composite
 * RMSNorm's into 12 (model_shape.composite_norm), so 7 per local expert plus at most about 90: MODEL_MOE_LOCAL_MAX experts fit. A list
 * is about 140 KB: callers keep one or two on the stack. */
#define MODEL_OPS_MAX (7 * MODEL_MOE_LOCAL_MAX + 128)
typedef struct model_op_list {
    int n;
    model_op op[MODEL_OPS_MAX];
} model_op_list;

/* Fills `out` with the kernels of `blk` in `phase` for one micro-batch, in execution order
 * (backward kernels in backward order). Per-rank quantities under tensor parallelism (each
 * rank's share). With sh->ft.method LORA or QLORA the base weights are frozen: backward has
 * no base weight-gradient kernels (the embedding's backward is then empty, out->n == 0),
 * and the adapters' kernels are added; QLORA adds a "<gemm>.dequant" kernel before each base
 * GEMM and each base dgrad.
 *
 * An MLA layer (attention.kind MODEL_ATTN_MLA) runs, instead of MHA's "qkv" ... "proj":
 * forward  "qkv" (the fused down projections q_a and kv_a: h -> q_lora_rank + kv_lora_rank
 *          + qk_rope_head_dim, replicated over TP; without query compression q's a/t heads
 *          and kv_a), ["attn.q_a_norm"], "attn.kv_a_norm", ["attn.q_b"], "attn.kv_b",
 *          "rope", the attention core, "proj" (o);
 * backward "proj.dgrad", ".wgrad", the core's backward, "rope.bwd", "attn.kv_b.dgrad",
 *          ".wgrad", ["attn.q_b.dgrad", ".wgrad"], "attn.kv_a_norm.bwd",
 *          ["attn.q_a_norm.bwd"], "qkv.dgrad", "qkv.wgrad" — bracketed kernels only with
 *          q_lora_rank > 0. The names the planner keys its TP collectives on ("qkv",
 *          "qkv.dgrad", "proj", "proj.dgrad") keep their MHA roles.
 * MODEL_BLOCK_MOE (a model with moe.experts > 0) runs the dense layer's attention part, then
 * forward:  "moe.router", "moe.gate", "moe.permute", for each local expert e = 0..n-1
 *           "moe.expert_up", "moe.expert_act", "moe.expert_down", then "moe.unpermute",
 *           [with shared experts "moe.shared_up", "moe.shared_act", "moe.shared_down"],
 *           "residual2";
 * backward: "residual2.bwd", [shared: "moe.shared_down.dgrad", ".wgrad",
 *           "moe.shared_act.bwd", "moe.shared_up.dgrad", ".wgrad"], "moe.unpermute.bwd",
 *           for e = n-1..0 "moe.expert_down.dgrad", "moe.expert_down.wgrad",
 *           "moe.expert_act.bwd", "moe.expert_up.dgrad", "moe.expert_up.wgrad", then
 *           "moe.permute.bwd", "moe.gate.bwd", "moe.router.dgrad", "moe.router.wgrad",
 *           and the attention part's backward from "norm2.bwd".
 * The expert kernels are contiguous: the dispatch all-to-all belongs right before the first
 * "moe.expert_up", the combine right after the last "moe.expert_down"; in backward the
 * combine's gradient before the first "moe.expert_down.dgrad", the dispatch's gradient after
 * the last "moe.expert_up.wgrad". Expert token counts come from sh->moe (or are uniform).
 * MoE layers ignore sh->ft: they are always fully trained (LoRA on MoE is not modelled).
 * Cannot fail; asserts the spec and shape were validated (and, for MoE, that
 * sh->moe->n_local == experts / ep <= MODEL_MOE_LOCAL_MAX). */
void model_block_ops(const model_spec *m, const model_shape *sh, model_block blk,
                     model_phase phase, model_op_list *out);

typedef struct model_params {
    int64_t embedding;  /* token embedding (+ learned position table, + embedding norm) */
    int64_t per_layer;  /* one transformer layer */
    int64_t final_norm;
    int64_t head;       /* LM head; 0 when tied to the embedding */
    int64_t total;
    int64_t per_moe_layer; /* one MoE layer, all experts (0 for a dense model) */
    int64_t active;        /* parameters one token uses: total, with top_k routed experts
                              per MoE layer instead of all (= total for a dense model) */
} model_params;

/* Parameter counts of the whole (unsharded) model: per_layer is one dense layer (an MLP of
 * `ffn`); a MoE model has min(moe.dense_layers, layers) of those and MoE layers for the rest.
 * Cannot fail. */
void model_count_params(const model_spec *m, model_params *out);

/* Parameters of one MoE layer, unsharded, in parts (docs/models.md "Mixture of experts"):
 * the attention part and both norms (what a dense layer has besides its MLP), one routed
 * expert's MLP (gate/up and down of expert_ffn, with biases when the model has them), the
 * router (hidden x experts, no bias) and all shared experts together (one MLP of
 * shared_experts x expert_ffn). per_moe_layer = dense_part + experts x per_expert + router +
 * shared. Any pointer may be NULL. For a dense model the last three are 0. Cannot fail. */
void model_count_moe_params(const model_spec *m, int64_t *dense_part_per_moe_layer,
                            int64_t *per_expert, int64_t *router, int64_t *shared);

/* Writes to *per_layer_out the trainable adapter parameters of one transformer layer
 * (unsharded): r x (in + out) for each targeted matrix (MLA: o and the MLP only), 0 for
 * MODEL_FT_FULL. The embedding
 * and the head carry no adapters. Memory accounting for the planner (docs/models.md): the
 * frozen base weights cost 2 bytes per parameter (the layers' linear matrices
 * model_qlora_weight_bytes() under QLoRA) and have no gradients, master copies or optimizer
 * states; the adapters cost weights + gradients + optimizer states like any trained
 * parameter. Cannot fail; asserts ft->rank > 0 when the method is not FULL. */
void model_count_lora_params(const model_spec *m, const model_ft *ft, int64_t *per_layer_out);

/* Weights of one layer's linear matrices (q, k, v, o, gate, up, down; MLA: q_a or q, kv_a,
 * q_b, kv_b, o; no biases, no norms), unsharded: the part of model_params.per_layer that
 * QLoRA stores in 4 bits. Cannot fail. */
int64_t model_layer_matrix_params(const model_spec *m);

/* Bytes per frozen base parameter in QLoRA storage: NF4 (4 bits) with one 8-bit absmax per
 * 64-weight block and one fp32 scale per 256 blocks (double quantisation, Dettmers et al.
 * 2023 §3): 0.5 + 65/4096 = 0.515869140625. Cannot fail. */
double model_qlora_weight_bytes(void);

/* What a layer keeps for backward and re-runs to rebuild the rest (docs/models.md,
 * "Activation recomputation"). SELECTIVE re-runs the attention core (Korthikanti et al.
 * 2022); FULL the layer's forward from its input; OP is torchtitan's per-op selective
 * checkpointing: the outputs of matmuls, of the attention kernel and of TP reduce-scatters
 * are saved, except every second matmul of the layer (counted in forward order: q, k, v, o,
 * gate/fc1, up, down), and everything else (norms, RoPE, activations, residual adds) is
 * re-run from the layer input. OP is defined for dense MHA/GQA layers under full training
 * (the loader refuses it with MLA, MoE and LoRA). */
typedef enum model_recompute {
    MODEL_RECOMPUTE_NONE,
    MODEL_RECOMPUTE_SELECTIVE,
    MODEL_RECOMPUTE_FULL,
    MODEL_RECOMPUTE_OP
} model_recompute;

/* The share (0..1) of forward kernel `o` of a layer under policy `rc` that the backward's
 * recomputed forward runs again: SELECTIVE the attention core's kernels whole; FULL every
 * kernel, but with `early_stop` (PyTorch's non-reentrant checkpoint) none of those after the
 * layer's last saved tensor (o->after_last_save); OP the per-op policy's o->op_share (PyTorch's
 * checkpoint, which always stops early); NONE nothing. */
double model_recompute_share(const model_op *o, model_recompute rc, bool early_stop);

/* Activation bytes one transformer layer keeps for backward, per micro-batch, on one rank
 * (Korthikanti et al. 2022 Table 2 generalised to GQA, MLA, SwiGLU, RMSNorm, flash
 * attention and dropout; derivation in docs/models.md). LoRA adds each adapter's r-wide
 * intermediate x A (e_a b s r bytes per target). Cannot fail. */
double model_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                    model_recompute rc);

/* Context parallelism (sh->cp = c > 1): bytes of the K/V block one rank holds for one layer
 * and micro-batch, what each ring-attention step passes to the next rank: b·(s/c) tokens of
 * kv heads x (key dim + value dim) activations (MHA/GQA: kv_heads/t heads of 2·head_dim; MLA:
 * a/t heads of qk_nope + qk_rope + v_head_dim, keys and values as the attention consumes
 * them). 0 without CP. Cannot fail. */
double model_cp_kv_bytes(const model_spec *m, const model_shape *sh);

/* Activation bytes one MoE layer keeps for backward, per micro-batch, on one rank: the dense
 * layer's attention part, the router input and fp32 router probabilities, the routing
 * choices, the expert outputs the combine's weighting needs, the shared experts (as a dense
 * MLP), and what this rank's experts keep for `local_tokens` (token, expert) assignments:
 * each dispatched token's input row and its MLP intermediates (docs/models.md). Pass
 * local_tokens < 0 to take the sum of sh->moe->tokens, or with sh->moe NULL the uniform
 * T·top_k. Selective recompute drops only the attention-score terms; full keeps only the
 * layer input. MoE layers ignore sh->ft (no adapters). Cannot fail; asserts a MoE spec. */
double model_moe_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                        model_recompute rc, double local_tokens);

/* Activation bytes kept by the embedding and by the head (final norm input, logits for the
 * loss) per micro-batch. A frozen embedding (LoRA, QLoRA) keeps nothing. */
double model_embed_activation_bytes(const model_spec *m, const model_shape *sh);
double model_head_activation_bytes(const model_spec *m, const model_shape *sh);

/* The loss backward's transient gradients of the logits (per rank: its vocabulary shard;
 * docs/models.md, "Head"). Megatron's vocab-parallel cross entropy (`inplace`) computes the
 * fp32 gradient in place of the softmax it kept: *during = 0. PyTorch's
 * F.cross_entropy(logits.float()) holds the gradients of the log-softmax output and of its
 * input, both fp32, while "loss.bwd" runs: *during = 8 bytes per logit; compiled
 * (model_shape.fused_loss) it writes the 16-bit gradient directly: *during = 0. After it either
 * holds the 16-bit gradient of the logits until the LM head's backward has consumed it
 * (*after = e_a per logit). */
void model_loss_grad_bytes(const model_spec *m, const model_shape *sh, bool inplace,
                           double *during, double *after);

#endif
