/* Activation memory: what a layer, the embedding and the head keep for backward per
 * micro-batch under each recompute policy, and the loss backward's transient gradients
 * (formulas and sources: docs/models.md, "Activation memory"). MLA's and the MoE layer's
 * own parts are in mla.c and moe.c. */
#include "model/model-internal.h"

double model__norm_extra_bytes(const dims *D, double X, bool rms)
{
    if (!D->composite_norm || !rms)
        return 0;
    double upcast = D->ea < FP32_BYTES ? FP32_BYTES - D->ea : 0; /* beyond the input's e_a */
    return (upcast + (D->frozen ? 0 : D->ea)) * X;
}

/* What a layer keeps up to its MLP's input: the attention block and norm2's input. Not for
 * full recompute. */
double model__attn_activation_bytes(const dims *D, model_recompute rc)
{
    double norm_x = D->ea * D->Tn * (double)D->h + /* a hidden norm's input */
                    model__norm_extra_bytes(D, D->Tn * (double)D->h, D->rmsnorm);
    if (D->mla)
        return model__mla_activation_bytes(D, rc) +
               (D->dropout ? D->Tn * (double)D->h : 0) /* residual dropout mask */
               + norm_x;                               /* norm2 input */
    double T = D->T, h = (double)D->h, ea = D->ea;
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double Tn_h = D->Tn * h; /* one token-by-hidden tensor of a replicated (or SP) kernel */
    double x = 0;
    /* attention block */
    x += norm_x;                   /* norm1 input (a composite RMSNorm's fp32 copy too) */
    x += (D->fp8 ? 1 : ea) * D->Tg * h; /* QKV GEMM input (Megatron's SP keeps the shard
                                      and re-gathers it, DTensor's keeps it gathered; an fp8
                                      layer keeps its fp8 cast: docs/models.md, "fp8") */
    x += ea * T * (q + 2 * kv);    /* Q, K (after RoPE) and V: attention inputs */
    if (D->qk_norm)                /* q_norm/k_norm inputs (RMSNorms) */
        x += ea * T * (q + kv) + model__norm_extra_bytes(D, T * (q + kv), true);
    if (rc != MODEL_RECOMPUTE_SELECTIVE) {
        double S = D->b * (double)D->a_r * D->s * D->s;
        if (D->flash)
            x += FP32_BYTES * D->b * (double)D->a_r * D->s; /* logsumexp per head and token */
        else
            /* softmax output; with dropout also its 1-byte mask and the dropped copy that
             * PV reads (Korthikanti's 5as^2b at 16 bits) */
            x += ea * S + (D->dropout ? (1 + ea) * S : 0);
    }
    x += ea * T * q;               /* attention output = proj input (FlashAttention's O) */
    if (D->fp8)
        x += T * q;                /* the projection's own fp8 copy of it, transposed (the
                                      attention keeps O in bf16 for its backward) */
    if (D->dropout)
        x += Tn_h;                 /* residual dropout mask, 1 byte */
    x += norm_x;                   /* norm2 input */
    return x;
}

/* An MLP's intermediates on `tokens` rows of width f (per rank): SwiGLU keeps gate and up
 * (the activation's inputs) and the down GEMM's input; GELU its input and the down input.
 * An fp8 down GEMM keeps its input's fp8 cast (1 byte) instead. Eager SwiGLU, silu(gate) *
 * up as two ops, keeps silu's output as well (the product's backward reads it; the fused
 * kernel recomputes it). */
double model__mlp_activation_bytes(const dims *D, double tokens, double f)
{
    double keep = D->swiglu ? (D->eager ? 3 : 2) : 1;
    return tokens * (D->ea * keep * f + (D->fp8 ? 1 : D->ea) * f);
}

double model_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                    model_recompute rc)
{
    dims D;
    model__shape_dims(m, sh, &D);
    double T = D.T, h = (double)D.h, ea = D.ea, f = (double)D.f_r;
    double Tn_h = D.Tn * h;

    if (rc == MODEL_RECOMPUTE_FULL)
        return ea * Tn_h; /* only the layer input (sequence-sharded with SP) */
    if (rc == MODEL_RECOMPUTE_OP) {
        /* the saved outputs of the per-op policy (model.c, mark_recompute): the layer
         * input, q's and v's GEMM outputs, gate's (GELU: fc1's), SwiGLU's down output
         * (before TP's reduce-scatter: all T tokens), flash attention's output and
         * logsumexp, and with SP the two reduce-scatters' outputs; k, RoPE, norms, the
         * activation and the residual sums are rebuilt */
        double q = (double)(D.a_r * D.d), kv = (double)(D.kv_r * D.d);
        double x = ea * Tn_h + ea * T * (q + kv) + ea * T * f;
        if (D.flash)
            x += ea * T * q + FP32_BYTES * D.b * (double)D.a_r * D.s;
        if (D.swiglu)
            x += ea * T * h;
        if (D.Tn < D.T)
            x += 2 * ea * Tn_h;
        return x;
    }

    double x = 0;
    /* attention block, norm2 input */
    x += model__attn_activation_bytes(&D, rc);
    /* MLP block */
    x += (D.fp8 ? 1 : ea) * D.Tg * h; /* mlp_up input (as QKV's) */
    x += model__mlp_activation_bytes(&D, T, f); /* gate and up or GELU input; down input */
    if (D.dropout)
        x += Tn_h;                 /* residual dropout mask */
    /* LoRA: each adapter's input is the base GEMM's input, kept above; B's wgrad needs the
     * r-wide x A, one per target (replicated over TP: A or B is whole on every rank). The
     * QLoRA dequantised weights are transient, not kept. */
    for (int i = 0; i < N_TARGETS; i++)
        if (model__has_target(&D, D.targets, i))
            x += ea * T * (double)D.r;
    return x;
}

double model_embed_activation_bytes(const model_spec *m, const model_shape *sh)
{
    dims D;
    model__shape_dims(m, sh, &D);
    /* The gather's backward needs only the token ids; embedding dropout keeps its mask, an
     * embedding norm (a LayerNorm on all T tokens, before SP scatters them) its input. A
     * frozen embedding has no backward. */
    if (D.frozen)
        return 0;
    return TOKEN_ID_BYTES * D.T + (D.dropout ? D.Tn * (double)D.h : 0) +
           (D.embed_norm ? D.ea * D.T * (double)D.h : 0);
}

double model_head_activation_bytes(const model_spec *m, const model_shape *sh)
{
    dims D;
    model__shape_dims(m, sh, &D);
    /* final-norm input (a composite RMSNorm's fp32 copy too), LM-head input (sequence-sharded
     * with Megatron's SP, gathered with DTensor's), and what the cross-entropy backward reads: the fp32 softmax of the logits,
     * or the fused loss's 16-bit logits themselves (it recomputes the softmax from them and
     * the per-row log-sum-exp) */
    return D.ea * (D.Tn + D.Tg) * (double)D.h +
           model__norm_extra_bytes(&D, D.Tn * (double)D.h, D.rmsnorm) +
           (D.fused_loss ? D.ea : FP32_BYTES) * D.T * (double)D.v_r;
}

void model_loss_grad_bytes(const model_spec *m, const model_shape *sh, bool inplace,
                           double *during, double *after)
{
    dims D;
    model__shape_dims(m, sh, &D);
    double logits = D.T * (double)D.v_r;
    *during = inplace || D.fused_loss ? 0 : 2 * FP32_BYTES * logits;
    *after = D.ea * logits;
}
