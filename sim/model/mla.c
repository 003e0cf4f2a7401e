/* Multi-head latent attention (MLA): the attention part of a layer whose keys and values are
 * up-projected from one shared low-rank latent per token (DeepSeek-AI 2024, DeepSeek-V2
 * §2.1.2-2.1.3; DeepSeek-V3 technical report §2.1.1; Hugging Face modeling_deepseek.py,
 * Megatron-Core multi_latent_attention.py). Kernels, parameter counts and activation bytes;
 * docs/models.md "Multi-head latent attention" has the tables.
 *
 * Per token x (h wide), with a heads, query/key head dim d + dr (d = head_dim, the
 * non-rotary "nope" part; dr = qk_rope_head_dim, the decoupled RoPE part), value head dim dv,
 * query latent rank ql (0: no query compression) and key/value latent rank kl:
 *   c_q           = RMSNorm(x W_qa)        W_qa  h x ql           q_a, q_a_layernorm
 *   [q_n | q_r]   = c_q W_qb  (per head)   W_qb  ql x a(d+dr)     q_b  (ql = 0: x W_q, h x a(d+dr))
 *   [c_kv | k_r]  = x W_kva                W_kva h x (kl+dr)      kv_a_proj_with_mqa
 *   [k_n | v]     = RMSNorm(c_kv) W_kvb    W_kvb kl x a(d+dv)     kv_a_layernorm, kv_b
 *   q = [q_n | RoPE(q_r)], k = [k_n | RoPE(k_r)] (k_r is shared by every head)
 *   o = softmax(q k^T / sqrt(d+dr)) v per head, y = o W_o   W_o a·dv x h
 * The latent norms follow the model's `norm` (DeepSeek: RMSNorm).
 *
 * Kernels: the down projections q_a and kv_a read the same input and are one GEMM, "qkv"
 * (h -> ql + kl + dr; Megatron-Core's fused linear_qkv_down_proj, SGLang's
 * fused_qkv_a_proj_with_mqa). Keeping MHA's names for the GEMMs that read the layer input
 * and write its output ("qkv", "proj") keeps the planner's tensor-parallel collectives in
 * place: an all-gather (SP) before "qkv", a reduction after "qkv.dgrad" of the input
 * gradient (partial on each rank: every rank's heads contribute to it through the latents),
 * an all-reduce or reduce-scatter after "proj". Then "attn.q_a_norm", "attn.kv_a_norm",
 * "attn.q_b", "attn.kv_b", "rope" (RoPE of q_r and k_r fused with assembling K and V, as
 * Megatron-Core's fused MLA RoPE kernels do), the attention core of model.c (query/key dim
 * d + dr, value dim dv, causal, counted exactly as MHA's), "proj".
 *
 * Tensor parallelism (Megatron-Core's MLA): q_b (or q), kv_b and o are split by heads, a/t
 * on each rank; q_a, kv_a and the latent norms are replicated on every rank, whole. They run
 * on the T tokens the GEMMs see after the SP all-gather, as every GEMM of this model does
 * (Megatron-Core with SP runs them on the sequence shard and gathers the latents instead:
 * the same result, with (t-1)/t fewer FLOPs on them). Without query compression the q
 * columns of "qkv" split by heads and the kv_a columns stay whole, as a GQA KV head
 * replicated over t > k ranks does in MHA's fused qkv.
 *
 * Biases: only o carries one (β·h), as Megatron-Core's MLA (add_bias_linear on linear_proj
 * only); DeepSeek's configs have none. */
#include "model/model-internal.h"

/* Weights of a norm over `width` features: RMSNorm a weight, LayerNorm weight and bias (the
 * h-wide norms' norm_params is h or 2h). */
static int64_t latent_norm_params(const dims *D, int64_t width)
{
    return D->norm_params / D->h * width;
}

/* Output columns of the fused down projection on one rank (whole with per_rank false):
 * q_a's ql (replicated), or without query compression the rank's a/t query heads of d + dr;
 * kv_a's kl + dr (replicated). */
static int64_t down_cols(const dims *D, bool per_rank)
{
    int64_t q = D->ql > 0 ? D->ql : (per_rank ? D->a_r : D->heads) * (D->d + D->dr);
    return q + D->kl + D->dr;
}

/* RoPE of q_r (a_r heads of dr) and of the shared k_r (dr, once per token), fused with
 * assembling the attention inputs: reads q_b's output and writes Q (a_r(d+dr) each); reads
 * kv_b's output (a_r(d+dv)) and k_r, writes K (a_r(d+dr), k_r copied into every head) and V
 * (a_r·dv). Backward moves the same bytes the other way and also sums the a_r heads' k_r
 * gradients (rotation is linear: sum, then rotate once). */
static void rope_op(model_op_list *l, const dims *D, model_phase ph)
{
    double T = D->T, a = (double)D->a_r, d = (double)D->d, dr = (double)D->dr;
    double dv = (double)D->dv, dq = d + dr;
    double rotated = T * (a * dr + dr);
    double bytes = D->ea * T * (2 * a * dq + a * (d + dv) + dr + a * (dq + dv));
    if (ph == MODEL_PHASE_FWD)
        model__vec(l, "rope", FLOPS_ROPE * rotated, bytes, 0);
    else
        model__vec(l, "rope.bwd", FLOPS_ROPE * rotated + T * a * dr, bytes, 0);
}

void model__mla_attn_fwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h, a = (double)D->a_r;
    double d = (double)D->d, dr = (double)D->dr, dv = (double)D->dv;
    double ql = (double)D->ql, kl = (double)D->kl;

    model__norm_op(l, m, D, "norm1", D->Tn, h, D->norm_params, MODEL_PHASE_FWD);
    model__base_fwd(l, D, "qkv", "qkv.dequant", T, h, (double)down_cols(D, true));
    if (D->ql > 0)
        model__norm_op(l, m, D, "attn.q_a_norm", T, ql, latent_norm_params(D, D->ql),
                       MODEL_PHASE_FWD);
    model__norm_op(l, m, D, "attn.kv_a_norm", T, kl, latent_norm_params(D, D->kl),
                   MODEL_PHASE_FWD);
    if (D->ql > 0)
        model__base_fwd(l, D, "attn.q_b", "attn.q_b.dequant", T, ql, a * (d + dr));
    model__base_fwd(l, D, "attn.kv_b", "attn.kv_b.dequant", T, kl, a * (d + dv));
    if (D->rope)
        rope_op(l, D, MODEL_PHASE_FWD);
    model__attn_core_fwd(D, d + dr, dv, a, l);
    model__base_fwd(l, D, "proj", "proj.dequant", T, a * dv, h);
    model__lora_fwd(l, D, T_O, T_O);
    model__residual_op(l, D, "residual1");
    model__norm_op(l, m, D, "norm2", D->Tn, h, D->norm_params, MODEL_PHASE_FWD);
}

void model__mla_attn_bwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h, a = (double)D->a_r;
    double d = (double)D->d, dr = (double)D->dr, dv = (double)D->dv;
    double ql = (double)D->ql, kl = (double)D->kl;
    int64_t hi = D->h, ai = D->a_r, b = D->bias ? 1 : 0;
    int64_t down = down_cols(D, true);

    model__norm_op(l, m, D, "norm2.bwd", D->Tn, h, D->norm_params, MODEL_PHASE_BWD);
    model__residual_op(l, D, "residual1.bwd");
    /* o's bias is row-parallel: replicated over TP, h on every rank */
    model__base_bwd(l, D, "proj.dgrad", "proj.wgrad", "proj.dgrad.dequant", T, a * dv, h,
                    ai * D->dv * hi + b * hi);
    model__lora_bwd(l, D, T_O, T_O);
    model__attn_core_bwd(D, d + dr, dv, a, l);
    if (D->rope)
        rope_op(l, D, MODEL_PHASE_BWD);
    model__base_bwd(l, D, "attn.kv_b.dgrad", "attn.kv_b.wgrad", "attn.kv_b.dgrad.dequant", T,
                    kl, a * (d + dv), D->kl * ai * (D->d + D->dv));
    if (D->ql > 0)
        model__base_bwd(l, D, "attn.q_b.dgrad", "attn.q_b.wgrad", "attn.q_b.dgrad.dequant", T,
                        ql, a * (d + dr), D->ql * ai * (D->d + D->dr));
    /* the latent norms are replicated: each rank writes their whole weight gradient */
    model__norm_op(l, m, D, "attn.kv_a_norm.bwd", T, kl, latent_norm_params(D, D->kl),
                   MODEL_PHASE_BWD);
    if (D->ql > 0)
        model__norm_op(l, m, D, "attn.q_a_norm.bwd", T, ql, latent_norm_params(D, D->ql),
                       MODEL_PHASE_BWD);
    model__base_bwd(l, D, "qkv.dgrad", "qkv.wgrad", "qkv.dgrad.dequant", T, h, (double)down,
                    hi * down);
    model__norm_op(l, m, D, "norm1.bwd", D->Tn, h, D->norm_params, MODEL_PHASE_BWD);
}

int64_t model__mla_params(const dims *D)
{
    int64_t q_norm = D->ql > 0 ? latent_norm_params(D, D->ql) : 0;
    return model__mla_matrix_params(D) + q_norm + latent_norm_params(D, D->kl) +
           (D->bias ? D->h : 0); /* o's bias */
}

int64_t model__mla_matrix_params(const dims *D)
{
    int64_t a = D->heads, q_up = D->ql > 0 ? D->ql * a * (D->d + D->dr) : 0;
    return D->h * down_cols(D, false)      /* q_a (or q) and kv_a */
           + q_up                          /* q_b */
           + D->kl * a * (D->d + D->dv)    /* kv_b */
           + a * D->dv * D->h;             /* o */
}

/* Korthikanti et al. 2022 §4.1 applied to MLA: every tensor a backward kernel reads, per
 * layer and micro-batch on one rank (e_a bytes each; T' = T/t with SP, T without):
 *   norm1 input, fused down-projection input   2·e_a·T'·h (SP: shard kept, re-gathered)
 *   q_a_norm input and q_b input (ql > 0)      2·e_a·T·ql (replicated: not split by t)
 *   kv_a_norm input and kv_b input             2·e_a·T·kl (replicated)
 *   Q, K, V after RoPE (attention inputs)      e_a·T·(a/t)·(2(d+dr) + dv)
 *   logsumexp (flash)                          4·b·(a/t)·s            } dropped by selective
 *   or softmax output [+ dropout mask, copy]   e_a·S [+ (1+e_a)·S]    } recompute
 *   attention output = o input                 e_a·T·(a/t)·dv
 * (S = b·(a/t)·s².) RoPE's backward needs only cos/sin, so neither q_r nor k_r before
 * rotation is kept, nor the up projections' outputs, which only feed the assembly of Q, K
 * and V. Composite norms (eager PyTorch) keep their fp32 copies besides, 4 bytes per
 * element of norm1's, q_a_norm's and kv_a_norm's inputs (model__norm_extra_bytes).
 * activations.c adds the residual dropout mask and norm2's input. */
double model__mla_activation_bytes(const dims *D, model_recompute rc)
{
    double T = D->T, h = (double)D->h, ea = D->ea, a = (double)D->a_r;
    double dq = (double)(D->d + D->dr), dv = (double)D->dv;
    double x = 0;
    x += ea * (D->Tn + D->Tg) * h;         /* norm1 input, qkv input (model_shape.sp_dtensor) */
    x += 2 * ea * T * (double)D->ql;       /* q_a_norm input, q_b input (0 without) */
    x += 2 * ea * T * (double)D->kl;       /* kv_a_norm input, kv_b input */
    /* composite norms' fp32 copies (the latent norms are of the model's kind, as their
     * kernels: model__norm_op) */
    x += model__norm_extra_bytes(D, (D->Tn * h + T * (double)(D->ql + D->kl)), D->rmsnorm);
    x += ea * T * a * (2 * dq + dv);       /* Q, K, V */
    if (rc != MODEL_RECOMPUTE_SELECTIVE) {
        double S = D->b * a * D->s * D->s;
        if (D->flash)
            x += FP32_BYTES * D->b * a * D->s;
        else
            x += ea * S + (D->dropout ? (1 + ea) * S : 0);
    }
    x += ea * T * a * dv;                  /* attention output = proj input */
    return x;
}
