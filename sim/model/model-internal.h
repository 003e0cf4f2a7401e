/* What the model layer's files share: the spec's resolved dimensions (`dims`), the kernel
 * constants and the op-list builders of model.c, used by activations.c (activation memory),
 * moe.c (mixture-of-experts layers) and mla.c (multi-head latent attention). Formulas:
 * docs/models.md. */
#ifndef SIM_MODEL_MODEL_INTERNAL_H
#define SIM_MODEL_MODEL_INTERNAL_H

#include "core/sim.h"

#include "model/model.h"

/* FLOPs per element of the vector kernels: operation counts of the usual fused kernels
 * (docs/models.md "Kernels"). Vector kernels are memory-bound on every catalog GPU, so these
 * only matter on parts with little fp32 throughput. */
#define FLOPS_RMSNORM 4.0   /* square, accumulate, scale by rsqrt, scale by weight */
#define FLOPS_LAYERNORM 7.0 /* mean, subtract, square, accumulate, scale, weight, bias */
#define FLOPS_ROPE 3.0      /* x*cos + rotate(x)*sin */
#define FLOPS_GELU 8.0      /* tanh approximation */
#define FLOPS_SWIGLU 6.0    /* silu(gate) = gate / (1 + exp(-gate)), times up */
#define FLOPS_SOFTMAX 5.0   /* scale+mask, max, subtract+exp, sum, divide */
#define FLOPS_DROPOUT 2.0   /* random compare, scale */

/* Bytes per kept fp32 statistic (FlashAttention's logsumexp, cross-entropy softmax). */
#define FP32_BYTES 4.0
/* Token ids are int64 in PyTorch/Megatron. */
#define TOKEN_ID_BYTES 8.0

/* LoRA targets, in forward order; bit i of model_ft.targets is target i. */
enum { T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, N_TARGETS };

/* The spec with defaults resolved and the per-rank shape, in doubles for the formulas and
 * exact integers for parameter counts. */
typedef struct dims {
    /* whole model */
    int64_t h, heads, kv_heads, d, ffn, vocab, norm_params;
    int64_t pos_rows; /* rows of the learned position table: max_seq_len (0 if unset) */
    bool learned_pos, swiglu, dropout, bias, qkv_bias, qk_norm, tied, rope;
    bool alibi;       /* ALiBi: unfused attention adds the bias to its scores (attn_core_fwd) */
    bool embed_norm;  /* a norm on the embeddings (model_spec.embed_norm) */
    bool rmsnorm;     /* the hidden norms are RMSNorms (q/k norms always are) */
    /* attention: d is the query/key head dim (MLA: the non-rotary part, qk_nope), dv the
     * value head dim (d for MHA); MLA adds the decoupled rotary dim dr and the query and
     * key/value latent ranks ql, kl (all 0 for MHA; ql 0 = no query compression) */
    bool mla;
    int64_t dv, dr, ql, kl;
    /* per rank */
    int64_t a_r, kv_r, f_r, up_r, v_r;
    double b, s, T, Tn; /* s: the rank's sequence (s/cp), T = b·s its tokens, Tn those of
                           the replicated-or-SP kernels (T/t with sp) */
    double ctx;         /* the whole sequence the attention spans (= s without CP) */
    int64_t cp;         /* context-parallel degree (1: none) */
    double e;           /* bytes of a GEMM operand (compute dtype; 2 in an fp8 run, whose
                           fp8 GEMMs read 1-byte operands: model__lin_fwd) */
    bool fp8;           /* fp8 run (sh->dtype fp8): linear layers in fp8 (model__lin_fwd) */
    bool fp8_current;   /* ... with current scaling (model_shape.fp8_current) */
    double ea;          /* bytes of an activation element (>= 2: fp8 GEMMs keep bf16 I/O) */
    bool flash;
    bool eager;         /* unfused pointwise kernels (model_shape.eager) */
    bool composite_norm; /* RMSNorms as composite ops (model_shape.composite_norm) */
    bool fused_loss;    /* one fused cross-entropy kernel each way (model_shape.fused_loss) */
    double Tg;          /* tokens of a column-parallel GEMM's kept input: Tn, or T when
                           DTensor's SP keeps it gathered (model_shape.sp_dtensor) */
    /* fine-tuning */
    bool frozen;        /* LoRA/QLoRA: base weights get no gradients */
    bool qlora;         /* base layer matrices stored in NF4, dequantised before use */
    int64_t r;          /* adapter rank (0 for full training) */
    unsigned targets;   /* MODEL_TARGET_* bits (0 for full training) */
    /* mixture of experts (moe.experts > 0) */
    int64_t E, K;       /* routed experts, top_k */
    int64_t fe, fs;     /* expert_ffn, shared_experts x expert_ffn (0: no shared experts) */
    int64_t fe_r, upe_r, fs_r, ups_r; /* per rank: f_e/t and its up width, the same shared */
    int64_t ep, n_local; /* expert-parallel degree, experts on this rank (E/ep) */
} dims;

/* ---- dims (model.c) ------------------------------------------------------------------ */

/* Resolves the spec's defaults into *o (whole-model fields only). Asserts a validated spec. */
void model__spec_dims(const model_spec *m, dims *o);
/* model__spec_dims plus the per-rank shape. Asserts a validated shape. */
void model__shape_dims(const model_spec *m, const model_shape *sh, dims *o);

static inline int64_t model__ceil_div(int64_t x, int64_t y)
{
    return (x + y - 1) / y;
}

/* Whether target i is in the bit set and the layer has that matrix: a GELU MLP has no gate,
 * and MLA has no separate q, k or v projection, so those bits then adapt nothing. */
bool model__has_target(const dims *D, unsigned targets, int i);

/* What a composite RMSNorm (D->composite_norm; `rms`: the norm is one) keeps for backward
 * beyond the fused kernel's input (e_a bytes an element), for X normalised elements:
 * at::rms_norm's autograd keeps the fp32 upcast of x (read by pow's and the rsqrt multiply's
 * backward; x itself when activations are fp32), not x, and the normalised output cast back
 * where the weight multiply's backward needs it, i.e. when the weight trains (autograd keeps
 * a product's factor only for the other factor's gradient; LoRA/QLoRA freeze the norms):
 * (4 - e_a) + e_a = 4 bytes more trained, 4 - e_a frozen (2 in bf16, 0 in fp32). 0 for a
 * fused norm (docs/models.md, "Activation memory"). */
double model__norm_extra_bytes(const dims *D, double X, bool rms);

/* ---- op list builders (model.c) ------------------------------------------------------ */

/* Appends one kernel; asserts the list has room. */
model_op *model__push(model_op_list *l, const char *name, hw_op_class cls, double flops,
                      double model_flops, double bytes, int64_t grad_params);
/* A vector kernel (model FLOPs 0). */
void model__vec(model_op_list *l, const char *name, double flops, double bytes,
                int64_t grad_params);
/* Pointwise work that eager PyTorch runs as `kernels` composite ops moving `eager_bytes` in
 * all, and a fused kernel as one moving `fused_bytes`: the first with D->eager (the kernels
 * equal, the gradients on the last), else the second. */
void model__vec_eager(model_op_list *l, const dims *D, const char *name, double flops,
                      double fused_bytes, double eager_bytes, int kernels, int64_t grad_params);
/* GEMM Y (m x n) = X (m x k) @ W (k x n) in forward; its input gradient (added into an
 * existing dX with `accumulate`); its weight gradient; and both, dgrad first. */
model_op *model__gemm_fwd(model_op_list *l, const dims *D, const char *name, double m,
                          double k, double n);
model_op *model__gemm_dgrad(model_op_list *l, const dims *D, const char *name, double m,
                            double k, double n, bool accumulate);
model_op *model__gemm_wgrad(model_op_list *l, const dims *D, const char *name, double m,
                            double k, double n, int64_t grad_params);
void model__gemm_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     double m, double k, double n, int64_t grad_params);
/* ---- fp8 linear layers (fp8.c) ---------------------------------------------------------- */

/* A linear layer's GEMM (the projections, the MLP, the shared experts): in an fp8 run
 * Transformer Engine's fp8 GEMM with its casts ("<name>.wcast", "<name>.cast" before the
 * forward, "<dgrad>.cast" before the backward; docs/models.md, "fp8"), else the 16-bit GEMM
 * of model__gemm_*. `beta`: the forward adds into an existing output (reads it as well). */
void model__lin_fwd(model_op_list *l, const dims *D, const char *name, double m, double k,
                    double n, bool beta);
void model__lin_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                    double m, double k, double n, int64_t grad_params);
/* The same GEMMs without the casts (the routed experts: their casts are grouped, moe.c). */
void model__lin_gemm_fwd(model_op_list *l, const dims *D, const char *name, double m, double k,
                         double n, bool beta);
void model__lin_gemm_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                         double m, double k, double n, int64_t grad_params);
/* An fp8 cast kernel of `elems` elements moving `bytes` (memory-bound, no model FLOPs). */
model_op *model__fp8_cast(model_op_list *l, const char *name, double elems, double bytes);
/* Bytes per element of a whole 16-bit tensor's cast_transpose: read 2, write 1 + 1 (4), and
 * under current scaling the amax's first read, 2 more (6). */
double model__fp8_cast_transpose_bytes(const dims *D);
/* A layer's base (LoRA-freezable, QLoRA-quantised) GEMM: forward dequantised first under
 * QLoRA; backward the dgrad (dequantised first) and the wgrad only when trained. */
void model__base_fwd(model_op_list *l, const dims *D, const char *name, const char *dequant,
                     double m, double k, double n);
void model__base_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     const char *dequant, double m, double k, double n, int64_t grad_params);
/* The adapters of LoRA targets first..last (one base GEMM's), forward and backward. */
void model__lora_fwd(model_op_list *l, const dims *D, int first, int last);
void model__lora_bwd(model_op_list *l, const dims *D, int first, int last);
/* A norm of `width` features (weights `params`) over `tokens` rows, forward or backward;
 * a frozen norm's backward writes no weight gradient. */
void model__norm_op(model_op_list *l, const model_spec *m, const dims *D, const char *name,
                    double tokens, double width, int64_t params, model_phase ph);
/* The fused bias-dropout-residual add on T' x h (forward or backward: same traffic). */
void model__residual_op(model_op_list *l, const dims *D, const char *name);
/* The MLP activation on X = tokens x (f/t) elements, forward and backward. */
void model__act_fwd(model_op_list *l, const dims *D, const char *name, double X);
void model__act_bwd(model_op_list *l, const dims *D, const char *name, double X);

/* The attention core (flash "attn", or "attn.scores", "attn.softmax", "attn.context"), all
 * flagged attn_core, for this rank's a_r query heads of query/key dim dqk and value dim
 * dvh, with kvh key/value heads (MHA: dqk = dvh = d, kvh = kv_r; MLA: dqk = d + dr,
 * dvh = dv, kvh = a_r). Backward: "attn.bwd" or the three ".bwd" kernels. */
void model__attn_core_fwd(const dims *D, double dqk, double dvh, double kvh, model_op_list *l);
void model__attn_core_bwd(const dims *D, double dqk, double dvh, double kvh, model_op_list *l);

/* A layer's forward up to its MLP (norm1 ... residual1, norm2) and its backward from the
 * MLP's input gradient on (norm2.bwd ... norm1.bwd): MHA here, MLA in mla.c. */
void model__layer_attn_fwd(const model_spec *m, const dims *D, model_op_list *l);
void model__layer_attn_bwd(const model_spec *m, const dims *D, model_op_list *l);

/* Parameters of a layer without its MLP (norms, attention), unsharded; of an MLP of width
 * f (model.c); activation bytes a layer keeps up to its MLP's input (not for full
 * recompute); an MLP's intermediates on `tokens` rows of per-rank width f (activations.c). */
int64_t model__attn_part_params(const dims *D);
int64_t model__mlp_params(const dims *D, int64_t f);
double model__attn_activation_bytes(const dims *D, model_recompute rc);
double model__mlp_activation_bytes(const dims *D, double tokens, double f);

/* ---- multi-head latent attention (mla.c) --------------------------------------------- */

/* model__layer_attn_fwd/_bwd of an MLA layer (D->mla): norm1 ... norm2 and back. */
void model__mla_attn_fwd(const model_spec *m, const dims *D, model_op_list *l);
void model__mla_attn_bwd(const model_spec *m, const dims *D, model_op_list *l);
/* Parameters of MLA's attention (projections and latent norms; not norm1/norm2), and of its
 * linear matrices alone (QLoRA's quantised part), unsharded. */
int64_t model__mla_params(const dims *D);
int64_t model__mla_matrix_params(const dims *D);
/* What MLA keeps between norm1's input and the attention output (both included). */
double model__mla_activation_bytes(const dims *D, model_recompute rc);

/* ---- mixture of experts (moe.c) ------------------------------------------------------ */

/* model_block_ops for MODEL_BLOCK_MOE. */
void model__moe_block_ops(const model_spec *m, const model_shape *sh, model_phase phase,
                          model_op_list *out);

#endif
