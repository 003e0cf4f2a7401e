/* Mixture-of-experts layers (docs/models.md "Mixture of experts"; Fedus et al. 2021, Jiang
 * et al. 2024, DeepSeek-AI 2024): kernels, parameter counts and activation bytes.
 *
 * A MoE layer runs the dense layer's attention part (model.c, or mla.c), then replaces the
 * MLP by a router GEMM (T x h x E), a softmax/top-k gate, a permutation of the T tokens into
 * T·K expert-ordered rows, each local expert's MLP on the rows routed to it (f_e split by t
 * like the dense MLP), the weighted un-permutation of the T·K returned rows back into T, and
 * optional shared experts (a dense MLP of shared·f_e on all T tokens). Experts count the
 * FLOPs of the tokens they process: per token, only top_k experts' parameters are active.
 * Notation as in model.c; E experts, K top_k, n = E/ep local experts, tok_e the rows local
 * expert e processes. */
#include "model/model-internal.h"

/* The dims of a MoE layer: the shape's, with fine-tuning switched off (MoE layers are fully
 * trained; LoRA on experts is not modelled) and the routed load checked. */
static void moe_dims(const model_spec *m, const model_shape *sh, dims *o)
{
    model_shape full = *sh;
    full.ft = (model_ft){0};
    model__shape_dims(m, &full, o);
    SIM_ASSERT(o->E > 0, "model %s: a MoE layer of a dense model", m->name);
    SIM_ASSERT(o->n_local <= MODEL_MOE_LOCAL_MAX, "%lld local experts, at most %d",
               (long long)o->n_local, MODEL_MOE_LOCAL_MAX);
    if (sh->moe) {
        SIM_ASSERT(sh->moe->n_local == o->n_local && sh->moe->tokens,
                   "moe load: n_local=%d, experts/ep=%lld", sh->moe->n_local,
                   (long long)o->n_local);
        for (int e = 0; e < sh->moe->n_local; e++)
            SIM_ASSERT(sh->moe->tokens[e] >= 0, "moe load: expert %d has %g tokens", e,
                       sh->moe->tokens[e]);
    }
}

/* Tokens local expert e processes: the given load, or uniform routing. Uniform: the EP
 * group's ep·T tokens make ep·T·K (token, expert) assignments spread evenly over the E
 * experts, so each expert gets T·K·ep/E and this rank's n_local = E/ep experts together
 * T·K — the expert work per rank does not depend on ep. */
static double moe_tokens(const model_shape *sh, const dims *D, int e)
{
    if (sh->moe)
        return sh->moe->tokens[e];
    return D->T * (double)D->K * (double)D->ep / (double)D->E;
}

/* The rows this rank's experts process together. */
static double expert_tokens(const model_shape *sh, const dims *D)
{
    double tok = 0;
    for (int e = 0; e < (int)D->n_local; e++)
        tok += moe_tokens(sh, D, e);
    return tok;
}

/* fp8 experts (docs/models.md, "fp8"): Transformer Engine's grouped linear layers cast all
 * their experts' tensors of one kind in one multi-tensor kernel: the weights of both GEMMs
 * (first forward of the step: 4 bytes an element, fp8 and transposed), the up GEMMs' inputs
 * and the down GEMMs' inputs (cast_transpose, 4 bytes an element), placed ahead of the
 * experts' GEMMs (one stream runs them all back to back: the place does not change the
 * block's time). */
static void expert_casts_fwd(const model_shape *sh, const dims *D, model_op_list *l)
{
    double h = (double)D->h, n = (double)D->n_local, tok = expert_tokens(sh, D);
    double up = h * (double)D->upe_r, down = (double)D->fe_r * h;
    double b = model__fp8_cast_transpose_bytes(D);
    model__fp8_cast(l, "moe.expert_up.wcast", n * up, b * n * up)->weight_cast = true;
    model__fp8_cast(l, "moe.expert_down.wcast", n * down, b * n * down)->weight_cast = true;
    model__fp8_cast(l, "moe.expert_up.cast", tok * h, b * tok * h);
    model__fp8_cast(l, "moe.expert_down.cast", tok * (double)D->fe_r,
                    b * tok * (double)D->fe_r);
}

/* Forward of a MoE layer. Every kernel outside the experts sees the rank's T tokens (after
 * the SP all-gather, like the dense MLP's GEMMs); expert e sees the tok_e rows routed to it
 * from the whole EP group. Expert and shared-expert biases (models with `bias`) are folded
 * into their GEMMs as in the dense MLP; the router has no bias. */
static void moe_fwd(const model_spec *m, const model_shape *sh, const dims *D,
                    model_op_list *l)
{
    double T = D->T, h = (double)D->h, E = (double)D->E, K = (double)D->K, ea = D->ea;
    double TK = T * K; /* (token, expert) assignments of this rank's tokens */

    model__layer_attn_fwd(m, D, l);
    /* Router logits (T x h) @ (h x E), replicated over TP. */
    model__gemm_fwd(l, D, "moe.router", T, h, E);
    /* Softmax over the E logits and top-K selection: reads the logits, writes the fp32
     * probabilities, the K chosen experts (int64, as torch.topk) and their fp32 weights. */
    model__vec(l, "moe.gate", (FLOPS_SOFTMAX + K) * T * E,
               T * E * (ea + FP32_BYTES) + TK * (TOKEN_ID_BYTES + FP32_BYTES), 0);
    /* Gathers each token's row once per chosen expert into expert order (the dispatch
     * send buffer): reads T rows and the indices, writes T·K rows. */
    model__vec(l, "moe.permute", 0, T * h * ea + TK * TOKEN_ID_BYTES + TK * h * ea, 0);
    if (D->fp8)
        expert_casts_fwd(sh, D, l);
    for (int e = 0; e < (int)D->n_local; e++) {
        double tok = moe_tokens(sh, D, e);
        model__lin_gemm_fwd(l, D, "moe.expert_up", tok, h, (double)D->upe_r, false);
        model__act_fwd(l, D, "moe.expert_act", tok * (double)D->fe_r);
        model__lin_gemm_fwd(l, D, "moe.expert_down", tok, (double)D->fe_r, h, false);
    }
    /* Weighted sum of each token's K returned rows: reads the T·K rows and their weights,
     * writes T rows; a multiply-add per element. */
    model__vec(l, "moe.unpermute", 2 * TK * h, TK * h * ea + TK * FP32_BYTES + T * h * ea, 0);
    if (D->fs > 0) {
        /* Shared experts: one dense MLP of shared·f_e on all T tokens. Its down GEMM adds
         * into the routed output in its epilogue (beta = 1: reads T x h more). */
        double fs = (double)D->fs_r;
        model__lin_fwd(l, D, "moe.shared_up", T, h, (double)D->ups_r, false);
        model__act_fwd(l, D, "moe.shared_act", T * fs);
        model__lin_fwd(l, D, "moe.shared_down", T, fs, h, true);
    }
    model__residual_op(l, D, "residual2");
}

/* Backward of a MoE layer: the forward reversed, experts last-first. */
static void moe_bwd(const model_spec *m, const model_shape *sh, const dims *D,
                    model_op_list *l)
{
    double T = D->T, h = (double)D->h, E = (double)D->E, K = (double)D->K, ea = D->ea;
    double TK = T * K;
    int64_t hi = D->h, b = D->bias ? 1 : 0;

    model__residual_op(l, D, "residual2.bwd");
    if (D->fs > 0) {
        double fs = (double)D->fs_r;
        model__lin_bwd(l, D, "moe.shared_down.dgrad", "moe.shared_down.wgrad", T, fs, h,
                        D->fs_r * hi + b * hi);
        model__act_bwd(l, D, "moe.shared_act.bwd", T * fs);
        model__lin_bwd(l, D, "moe.shared_up.dgrad", "moe.shared_up.wgrad", T, h,
                        (double)D->ups_r, hi * D->ups_r + b * D->ups_r);
    }
    /* d(row k of token i) = w_ik · dY_i and dw_ik = <dY_i, row k>: reads dY, the kept
     * returned rows and the weights; writes the rows' gradient and the weights'. */
    model__vec(l, "moe.unpermute.bwd", 3 * TK * h,
               T * h * ea + 2 * TK * h * ea + 2 * TK * FP32_BYTES, 0);
    if (D->fp8) {
        /* the output gradients of both grouped GEMMs, cast and transposed (4 bytes an
         * element) by one multi-tensor kernel each, ahead of the experts' GEMMs */
        double tok = expert_tokens(sh, D), cb = model__fp8_cast_transpose_bytes(D);
        model__fp8_cast(l, "moe.expert_down.dgrad.cast", tok * h, cb * tok * h);
        model__fp8_cast(l, "moe.expert_up.dgrad.cast", tok * (double)D->upe_r,
                        cb * tok * (double)D->upe_r);
    }
    for (int e = (int)D->n_local - 1; e >= 0; e--) {
        double tok = moe_tokens(sh, D, e);
        model__lin_gemm_bwd(l, D, "moe.expert_down.dgrad", "moe.expert_down.wgrad", tok,
                        (double)D->fe_r, h, D->fe_r * hi + b * hi);
        model__act_bwd(l, D, "moe.expert_act.bwd", tok * (double)D->fe_r);
        model__lin_gemm_bwd(l, D, "moe.expert_up.dgrad", "moe.expert_up.wgrad", tok, h,
                        (double)D->upe_r, hi * D->upe_r + b * D->upe_r);
    }
    /* Scatter-add of the T·K row gradients back to their T tokens; with shared experts it
     * adds onto their dgrad's output (reads it as well). */
    model__vec(l, "moe.permute.bwd", TK * h,
               TK * h * ea + TK * TOKEN_ID_BYTES + (D->fs > 0 ? 2 : 1) * T * h * ea, 0);
    /* Softmax backward through the top-K selection: reads the weights' gradient with the
     * indices and the fp32 probabilities, writes the logits' gradient. */
    model__vec(l, "moe.gate.bwd", 2 * FLOPS_SOFTMAX * T * E,
               TK * (FP32_BYTES + TOKEN_ID_BYTES) + T * E * (FP32_BYTES + ea), 0);
    /* The router's input gradient adds into the tokens' (beta = 1); its weight gradient is
     * the whole h x E matrix on every TP rank, as a replicated norm's. */
    model__gemm_dgrad(l, D, "moe.router.dgrad", T, h, E, true);
    model__gemm_wgrad(l, D, "moe.router.wgrad", T, h, E, hi * D->E);
    model__layer_attn_bwd(m, D, l);
}

void model__moe_block_ops(const model_spec *m, const model_shape *sh, model_phase phase,
                          model_op_list *out)
{
    dims D;
    moe_dims(m, sh, &D);
    out->n = 0;
    if (phase == MODEL_PHASE_FWD)
        moe_fwd(m, sh, &D, out);
    else
        moe_bwd(m, sh, &D, out);
}

/* ---- parameters and activations ------------------------------------------------------ */

void model_count_moe_params(const model_spec *m, int64_t *dense_part_per_moe_layer,
                            int64_t *per_expert, int64_t *router, int64_t *shared)
{
    dims D;
    model__spec_dims(m, &D);
    if (dense_part_per_moe_layer)
        *dense_part_per_moe_layer = model__attn_part_params(&D);
    if (per_expert)
        *per_expert = D.E > 0 ? model__mlp_params(&D, D.fe) : 0;
    if (router)
        *router = D.h * D.E;
    if (shared)
        *shared = D.fs > 0 ? model__mlp_params(&D, D.fs) : 0;
}

double model_moe_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                        model_recompute rc, double local_tokens)
{
    dims D;
    moe_dims(m, sh, &D);
    double T = D.T, h = (double)D.h, ea = D.ea, K = (double)D.K;
    double Tn_h = D.Tn * h;

    if (rc == MODEL_RECOMPUTE_FULL)
        return ea * Tn_h; /* only the layer input (sequence-sharded with SP) */
    if (local_tokens < 0)
        local_tokens = expert_tokens(sh, &D);

    double x = 0;
    /* attention block, norm2 input */
    x += model__attn_activation_bytes(&D, rc);
    /* router, gate, permutation */
    x += ea * D.Tg * h;                 /* router input = norm2 output (also the permute's and
                                           the shared experts' input; Megatron's SP: shard,
                                           re-gathered; DTensor's: gathered) */
    x += FP32_BYTES * T * (double)D.E;  /* fp32 router probabilities: softmax backward */
    x += T * K * (TOKEN_ID_BYTES + FP32_BYTES); /* chosen experts and their weights */
    x += ea * T * K * h;                /* returned expert rows: the weights' gradient */
    /* this rank's experts: each dispatched row's input (up wgrad) and its intermediates */
    x += (D.fp8 ? 1 : ea) * h * local_tokens; /* (fp8 experts: their fp8 cast) */
    x += model__mlp_activation_bytes(&D, local_tokens, (double)D.fe_r);
    /* shared experts: a dense MLP of shared·f_e on the T tokens */
    if (D.fs > 0)
        x += model__mlp_activation_bytes(&D, T, (double)D.fs_r);
    if (D.dropout)
        x += Tn_h;                      /* residual dropout mask */
    return x;
}

