/* Decoder-transformer description and its per-block operations.
 *
 * model_spec is what the loader fills from a model file. model_block_ops turns one block
 * (embedding, one transformer layer, or the head: final norm + LM head + loss) into the
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
typedef enum model_position { MODEL_POS_ROPE, MODEL_POS_LEARNED } model_position;
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
    int max_seq_len; /* learned positions: rows of the position table; 0 = seq_len */
    struct {
        int experts; /* 0 = dense model */
        int top_k;
        int expert_ffn;
        int shared_experts;
        int dense_layers;
    } moe;
    struct {
        model_attention_kind kind;
        int q_lora_rank, kv_lora_rank, qk_rope_head_dim, v_head_dim;
    } attention;
    bool qk_norm;    /* RMSNorm of each query and key head (weights head_dim each), Qwen3 */
    bool bias;       /* linear layers carry biases (GPT-2/3, Megatron GPT); false for Llama/Qwen3 */
} model_spec;

/* Fine-tuning method (docs/models.md "Fine-tuning: LoRA and QLoRA"). FULL trains every
 * parameter. LORA (Hu et al. 2021) freezes every base weight (layers, norms, embedding, LM
 * head) and trains a rank-r pair A (in x r), B (r x out) beside each targeted layer matrix.
 * QLORA (Dettmers et al. 2023) is LORA over base layer matrices stored in 4-bit NF4 with
 * double-quantised block scales and dequantised to 16 bits before each use. */
typedef enum model_ft_method { MODEL_FT_FULL, MODEL_FT_LORA, MODEL_FT_QLORA } model_ft_method;

/* Target matrices of the adapters, a bit set. q, k and v are separate targets although the
 * base QKV GEMM is fused; gate and up likewise (a gate target does nothing in a GELU MLP). */
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

/* The per-micro-batch shape the ops are generated for. */
typedef struct model_shape {
    int64_t micro_batch; /* b */
    int64_t seq_len;     /* s */
    int tp;              /* tensor-parallel degree t (weights and heads split by t) */
    bool sp;             /* sequence parallel: norm/dropout work split by t */
    hw_dtype dtype;      /* compute dtype */
    bool flash_attention;
    model_ft ft;         /* fine-tuning method; zero-initialised = full training */
} model_shape;

typedef enum model_block { MODEL_BLOCK_EMBED, MODEL_BLOCK_LAYER, MODEL_BLOCK_HEAD } model_block;
typedef enum model_phase { MODEL_PHASE_FWD, MODEL_PHASE_BWD } model_phase;

typedef struct model_op {
    const char *name;        /* static string: "qkv", "attn", "mlp_up.dgrad", ... */
    hw_op_class cls;
    double flops;            /* FLOPs the kernel executes (timing, hardware FLOPs) */
    double model_flops;      /* FLOPs by the Megatron convention (MFU): matmuls only, causal
                                attention counted as full s^2, backward = 2 x forward */
    double bytes;            /* HBM bytes read + written */
    int64_t grad_params;     /* > 0 for a weight-gradient kernel: gradients it produces */
    bool attn_core;          /* part of the attention core (QK^T, softmax, PV): what selective
                                recompute re-runs in backward */
} model_op;

/* A QLoRA layer's backward with all seven targets runs 46 kernels (docs/models.md). */
#define MODEL_OPS_MAX 64
typedef struct model_op_list {
    int n;
    model_op op[MODEL_OPS_MAX];
} model_op_list;

/* Fills `out` with the kernels of `blk` in `phase` for one micro-batch, in execution order
 * (backward kernels in backward order). Per-rank quantities under tensor parallelism (each
 * rank's share). With sh->ft.method LORA or QLORA the base weights are frozen: backward has
 * no base weight-gradient kernels (the embedding's backward is then empty, out->n == 0),
 * and the adapters' kernels are added; QLORA adds a "<gemm>.dequant" kernel before each base
 * GEMM and each base dgrad. Cannot fail; asserts the spec and shape were validated. */
void model_block_ops(const model_spec *m, const model_shape *sh, model_block blk,
                     model_phase phase, model_op_list *out);

typedef struct model_params {
    int64_t embedding;  /* token embedding (+ learned position table) */
    int64_t per_layer;  /* one transformer layer */
    int64_t final_norm;
    int64_t head;       /* LM head; 0 when tied to the embedding */
    int64_t total;
} model_params;

/* Parameter counts of the whole (unsharded) model. Cannot fail. */
void model_count_params(const model_spec *m, model_params *out);

/* Writes to *per_layer_out the trainable adapter parameters of one transformer layer
 * (unsharded): r x (in + out) for each targeted matrix, 0 for MODEL_FT_FULL. The embedding
 * and the head carry no adapters. Memory accounting for the planner (docs/models.md): the
 * frozen base weights cost 2 bytes per parameter (the layers' linear matrices
 * model_qlora_weight_bytes() under QLoRA) and have no gradients, master copies or optimizer
 * states; the adapters cost weights + gradients + optimizer states like any trained
 * parameter. Cannot fail; asserts ft->rank > 0 when the method is not FULL. */
void model_count_lora_params(const model_spec *m, const model_ft *ft, int64_t *per_layer_out);

/* Weights of one layer's linear matrices (q, k, v, o, gate, up, down; no biases, no norms),
 * unsharded: the part of model_params.per_layer that QLoRA stores in 4 bits. Cannot fail. */
int64_t model_layer_matrix_params(const model_spec *m);

/* Bytes per frozen base parameter in QLoRA storage: NF4 (4 bits) with one 8-bit absmax per
 * 64-weight block and one fp32 scale per 256 blocks (double quantisation, Dettmers et al.
 * 2023 §3): 0.5 + 65/4096 = 0.515869140625. Cannot fail. */
double model_qlora_weight_bytes(void);

typedef enum model_recompute {
    MODEL_RECOMPUTE_NONE,
    MODEL_RECOMPUTE_SELECTIVE,
    MODEL_RECOMPUTE_FULL
} model_recompute;

/* Activation bytes one transformer layer keeps for backward, per micro-batch, on one rank
 * (Korthikanti et al. 2022 Table 2 generalised to GQA, SwiGLU, RMSNorm, flash attention and
 * dropout; derivation in docs/models.md). LoRA adds each adapter's r-wide intermediate x A
 * (e_a b s r bytes per target). Cannot fail. */
double model_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                    model_recompute rc);

/* Activation bytes kept by the embedding and by the head (final norm input, logits for the
 * loss) per micro-batch. A frozen embedding (LoRA, QLoRA) keeps nothing. */
double model_embed_activation_bytes(const model_spec *m, const model_shape *sh);
double model_head_activation_bytes(const model_spec *m, const model_shape *sh);

#endif
