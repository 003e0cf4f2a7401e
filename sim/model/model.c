/* Decoder transformer -> per-block kernels with FLOPs, HBM bytes and parameter counts (the
 * activation bytes are in activations.c). Every formula, with its source, is in
 * docs/models.md; the comments here say which kernel each term stands for.
 *
 * Notation (per micro-batch, per tensor-parallel rank): b micro-batch, s sequence length,
 * T = b*s tokens, h hidden, a query heads, k key/value heads, d head_dim, f ffn, V vocab,
 * t tensor-parallel degree. Megatron's column/row split gives each rank a/t query heads, k/t
 * key/value heads (k is replicated when k < t, as GQA implementations do), f/t of the MLP
 * and V/t of the vocabulary (non-divisible sizes are rounded up, as Megatron pads). Norms,
 * residual adds and dropout are replicated over the TP group, or run on T/t tokens each with
 * sequence parallelism.
 *
 * A GEMM (m x k) @ (k x n) executes 2*m*k*n FLOPs and moves (m*k + k*n) operand elements in
 * the compute dtype and m*n result elements in the activation dtype (16-bit at least: fp8
 * GEMMs write bf16). Its backward is two kernels of the same FLOPs, "<name>.dgrad" (input
 * gradient) and "<name>.wgrad" (weight gradient, carrying grad_params). Model FLOPs
 * (Megatron's MFU convention) count matmuls only, causal attention as the full s^2 and
 * backward as twice forward (Narayanan et al. 2021 §5.1; Korthikanti et al. 2022 App. A).
 *
 * Fine-tuning (docs/models.md "Fine-tuning: LoRA and QLoRA"). LoRA (Hu et al. 2021) adds
 * y += (x A) B beside a frozen W (in x out) with A (in x r), B (r x out): forward two GEMMs
 * "<t>.lora_a", "<t>.lora_b"; backward dgrad and wgrad of each; the frozen base keeps its
 * dgrad (the input gradient must flow) and loses its wgrad. QLoRA (Dettmers et al. 2023)
 * stores the frozen layer matrices in NF4 and dequantises them to 16 bits before every use
 * ("<gemm>.dequant" before the forward GEMM, "<gemm>.dgrad.dequant" before the dgrad).
 *
 * Mixture-of-experts layers are in moe.c, multi-head latent attention (MLA) in mla.c; what
 * the three files share is declared in model-internal.h. */
#include <string.h>

#include "model/model-internal.h"

/* Dequantising one NF4 weight: a 16-entry codebook lookup, then a multiply by its block's
 * scale (the double-quantised scale's own dequantisation is once per 64 weights). */
#define FLOPS_DEQUANT 2.0
/* The dequantised copy is 16-bit (bf16/fp16: QLoRA's compute dtype). */
#define DEQUANT_OUT_BYTES 2.0

_Static_assert(MODEL_TARGET_Q == 1 << T_Q && MODEL_TARGET_K == 1 << T_K &&
                   MODEL_TARGET_V == 1 << T_V && MODEL_TARGET_O == 1 << T_O &&
                   MODEL_TARGET_GATE == 1 << T_GATE && MODEL_TARGET_UP == 1 << T_UP &&
                   MODEL_TARGET_DOWN == 1 << T_DOWN &&
                   MODEL_TARGET_ALL == (1 << N_TARGETS) - 1,
               "MODEL_TARGET_* bits follow the T_* order");

/* Kernel names of one target's adapter (model_op.name must be a static string). */
typedef struct lora_names {
    const char *a, *b, *b_dgrad, *b_wgrad, *a_dgrad, *a_wgrad;
} lora_names;
#define LORA_NAMES(t)                                                                      \
    {.a = t ".lora_a", .b = t ".lora_b", .b_dgrad = t ".lora_b.dgrad",                     \
     .b_wgrad = t ".lora_b.wgrad", .a_dgrad = t ".lora_a.dgrad", .a_wgrad = t ".lora_a.wgrad"}
static const lora_names lora_names_of[N_TARGETS] = {
    [T_Q] = LORA_NAMES("q"),
    [T_K] = LORA_NAMES("k"),
    [T_V] = LORA_NAMES("v"),
    [T_O] = LORA_NAMES("o"),
    [T_GATE] = LORA_NAMES("gate"),
    [T_UP] = LORA_NAMES("up"),
    [T_DOWN] = LORA_NAMES("down"),
};
#undef LORA_NAMES

void model__spec_dims(const model_spec *m, dims *o)
{
    SIM_ASSERT(m->layers > 0 && m->hidden > 0 && m->heads > 0 && m->ffn > 0 && m->vocab > 0,
               "model %s not validated: layers=%d hidden=%d heads=%d ffn=%d vocab=%lld",
               m->name, m->layers, m->hidden, m->heads, m->ffn, (long long)m->vocab);
    SIM_ASSERT(m->moe.experts == 0 ||
                   (m->moe.top_k >= 1 && m->moe.top_k <= m->moe.experts &&
                    m->moe.expert_ffn > 0 && m->moe.shared_experts >= 0 &&
                    m->moe.dense_layers >= 0),
               "model %s: moe not validated: experts=%d top_k=%d expert_ffn=%d shared=%d "
               "dense_layers=%d",
               m->name, m->moe.experts, m->moe.top_k, m->moe.expert_ffn,
               m->moe.shared_experts, m->moe.dense_layers);
    o->h = m->hidden;
    o->heads = m->heads;
    o->kv_heads = m->kv_heads > 0 ? m->kv_heads : m->heads;
    o->d = m->head_dim > 0 ? m->head_dim : m->hidden / m->heads;
    SIM_ASSERT(o->d > 0 && o->kv_heads <= o->heads, "model %s: head_dim=%lld kv_heads=%lld",
               m->name, (long long)o->d, (long long)o->kv_heads);
    o->ffn = m->ffn;
    o->vocab = m->vocab;
    o->learned_pos = m->position == MODEL_POS_LEARNED;
    o->rope = m->position == MODEL_POS_ROPE;
    o->alibi = m->position == MODEL_POS_ALIBI;
    o->embed_norm = m->embed_norm;
    o->pos_rows = o->learned_pos ? m->max_seq_len : 0;
    o->swiglu = m->activation == MODEL_ACT_SWIGLU;
    o->rmsnorm = m->norm == MODEL_NORM_RMSNORM;
    o->dropout = m->dropout > 0;
    o->bias = m->bias;
    o->qkv_bias = m->bias || m->qkv_bias;
    o->qk_norm = m->qk_norm;
    o->tied = m->tied_embeddings;
    /* RMSNorm has a weight, LayerNorm a weight and a bias. */
    o->norm_params = m->norm == MODEL_NORM_LAYERNORM ? 2 * o->h : o->h;
    o->mla = m->attention.kind == MODEL_ATTN_MLA;
    o->dv = o->d, o->dr = o->ql = o->kl = 0;
    if (o->mla) {
        /* Every head has its own key and value, up-projected from the shared latent: no
         * GQA, kv_heads is not used. v_head_dim defaults to head_dim (qk_nope). */
        int ql = m->attention.q_lora_rank, kl = m->attention.kv_lora_rank;
        int dr = m->attention.qk_rope_head_dim, dv = m->attention.v_head_dim;
        SIM_ASSERT(kl > 0 && ql >= 0 && dr >= 0 && dv >= 0 && !m->qk_norm,
                   "model %s: MLA not validated: kv_lora_rank=%d q_lora_rank=%d "
                   "qk_rope_head_dim=%d v_head_dim=%d qk_norm=%d",
                   m->name, kl, ql, dr, dv, (int)m->qk_norm);
        o->kv_heads = o->heads;
        o->dv = dv > 0 ? dv : o->d;
        o->dr = dr, o->ql = ql, o->kl = kl;
    }
    o->E = m->moe.experts;
    o->K = o->E > 0 ? m->moe.top_k : 0;
    o->fe = o->E > 0 ? m->moe.expert_ffn : 0;
    o->fs = o->E > 0 ? (int64_t)m->moe.shared_experts * o->fe : 0;
}

void model__shape_dims(const model_spec *m, const model_shape *sh, dims *o)
{
    model__spec_dims(m, o);
    SIM_ASSERT(sh->micro_batch > 0 && sh->seq_len > 0 && sh->tp >= 1,
               "shape b=%lld s=%lld tp=%d", (long long)sh->micro_batch,
               (long long)sh->seq_len, sh->tp);
    int64_t t = sh->tp;
    o->a_r = model__ceil_div(o->heads, t);
    o->kv_r = o->kv_heads >= t ? model__ceil_div(o->kv_heads, t) : 1;
    o->f_r = model__ceil_div(o->ffn, t);
    o->up_r = o->swiglu ? 2 * o->f_r : o->f_r; /* SwiGLU: gate and up fused, 2f columns */
    o->v_r = model__ceil_div(o->vocab, t);
    o->cp = sh->cp > 1 ? sh->cp : 1;
    SIM_ASSERT(sh->seq_len % o->cp == 0 && (o->cp == 1 || sh->flash_attention),
               "cp=%lld with s=%lld flash=%d not validated", (long long)o->cp,
               (long long)sh->seq_len, (int)sh->flash_attention);
    o->b = (double)sh->micro_batch;
    o->ctx = (double)sh->seq_len;
    o->s = o->ctx / (double)o->cp;
    o->T = o->b * o->s;
    o->Tn = sh->sp ? o->T / (double)t : o->T;
    o->fp8 = sh->dtype == HW_DTYPE_FP8;
    o->fp8_current = o->fp8 && sh->fp8_current;
    o->e = o->fp8 ? 2 : hw_dtype_bytes(sh->dtype);
    o->ea = SIM_MAX(2.0, o->e);
    o->flash = sh->flash_attention;
    o->eager = sh->eager;
    o->composite_norm = sh->composite_norm;
    o->fused_loss = sh->fused_loss;
    o->Tg = sh->sp && sh->sp_dtensor ? o->T : o->Tn;
    const model_ft *ft = &sh->ft;
    SIM_ASSERT(ft->method == MODEL_FT_FULL || ft->method == MODEL_FT_LORA ||
                   ft->method == MODEL_FT_QLORA,
               "fine-tuning method %d", (int)ft->method);
    o->frozen = ft->method != MODEL_FT_FULL;
    o->qlora = ft->method == MODEL_FT_QLORA;
    SIM_ASSERT(!o->frozen || ft->rank > 0, "LoRA rank %d not validated", ft->rank);
    o->r = o->frozen ? ft->rank : 0;
    o->targets = o->frozen ? ft->targets & MODEL_TARGET_ALL : 0;
    o->fe_r = model__ceil_div(o->fe, t);
    o->upe_r = o->swiglu ? 2 * o->fe_r : o->fe_r;
    o->fs_r = model__ceil_div(o->fs, t);
    o->ups_r = o->swiglu ? 2 * o->fs_r : o->fs_r;
    o->ep = sh->ep > 1 ? sh->ep : 1;
    SIM_ASSERT(o->E == 0 || o->E % o->ep == 0, "ep=%lld does not divide %lld experts",
               (long long)o->ep, (long long)o->E);
    o->n_local = o->E / o->ep;
}

bool model__has_target(const dims *D, unsigned targets, int i)
{
    if (D->mla && (i == T_Q || i == T_K || i == T_V))
        return false;
    return ((targets >> i) & 1u) && (i != T_GATE || D->swiglu);
}

/* in x out of LoRA target i's base matrix, per rank or whole. Under TP the adapter follows
 * its base matrix's split: column-parallel q, k, v, gate, up split `out` (B is sharded, A
 * whole on every rank); row-parallel o, down split `in` (A sharded, B whole). o's input is
 * the attention output, heads x v_head_dim (MLA's v_head_dim may differ from head_dim). */
static void target_shape(const dims *D, int i, bool per_rank, int64_t *in, int64_t *out)
{
    int64_t q = (per_rank ? D->a_r : D->heads) * D->d;
    int64_t kv = (per_rank ? D->kv_r : D->kv_heads) * D->d;
    int64_t o = (per_rank ? D->a_r : D->heads) * D->dv;
    int64_t f = per_rank ? D->f_r : D->ffn;
    *in = i == T_O ? o : i == T_DOWN ? f : D->h;
    *out = i == T_Q ? q : i == T_K || i == T_V ? kv : i == T_GATE || i == T_UP ? f : D->h;
}

/* ---- op list construction ------------------------------------------------------------ */

model_op *model__push(model_op_list *l, const char *name, hw_op_class cls, double flops,
                      double model_flops, double bytes, int64_t grad_params)
{
    SIM_ASSERT(l->n < MODEL_OPS_MAX, "more than %d ops in one block", MODEL_OPS_MAX);
    model_op *op = &l->op[l->n++];
    *op = (model_op){.name = name,
                     .cls = cls,
                     .flops = flops,
                     .model_flops = model_flops,
                     .bytes = bytes,
                     .grad_params = grad_params};
    return op;
}

void model__vec(model_op_list *l, const char *name, double flops, double bytes,
                int64_t grad_params)
{
    model__push(l, name, HW_OP_VECTOR, flops, 0, bytes, grad_params);
}

/* Pointwise work as `kernels` composite ops (`composite`) or one fused kernel. The
 * composite ops are eager PyTorch's native kernels, timed by the GPU's eager memory curve
 * (HW_VECTOR_EAGER; docs/calibration.md, "Eager kernels"). */
static void vec_composite(model_op_list *l, bool composite, const char *name, double flops,
                          double fused_bytes, double composite_bytes, int kernels,
                          int64_t grad_params)
{
    if (!composite) {
        model__vec(l, name, flops, fused_bytes, grad_params);
        return;
    }
    int n = SIM_MAX(kernels, 1);
    for (int i = 0; i < n; i++)
        model__push(l, name, HW_OP_VECTOR, flops / n, 0, composite_bytes / n,
                    i == n - 1 ? grad_params : 0)->inner = HW_VECTOR_EAGER;
}

void model__vec_eager(model_op_list *l, const dims *D, const char *name, double flops,
                      double fused_bytes, double eager_bytes, int kernels, int64_t grad_params)
{
    vec_composite(l, D->eager, name, flops, fused_bytes, eager_bytes, kernels, grad_params);
}

/* Pointwise work modelled as one kernel either way (LayerNorm, GELU, a residual or position
 * add): `native` when eager PyTorch runs it as its own native kernel, timed at the eager
 * memory curve like the composite ops' (docs/calibration.md, "Eager kernels"), else a fused
 * kernel (compiled, Apex/Transformer Engine, Megatron's jit fusions). */
static void native_op(model_op_list *l, bool native, const char *name, double flops,
                      double bytes, int64_t grad_params)
{
    vec_composite(l, native, name, flops, bytes, bytes, 1, grad_params);
}

/* Eager PyTorch's own kernel for a GELU or an add: eager, and not an fp8 run (Transformer
 * Engine's modules fuse them). */
static bool native_pointwise(const dims *D)
{
    return D->eager && !D->fp8;
}

/* Forward GEMM Y (m x n) = X (m x k) @ W (k x n). */
model_op *model__gemm_fwd(model_op_list *l, const dims *D, const char *name, double m,
                          double k, double n)
{
    double f = 2 * m * k * n;
    model_op *o = model__push(l, name, HW_OP_MATMUL, f, f,
                              (m * k + k * n) * D->e + m * n * D->ea, 0);
    o->inner = k;
    return o;
}

/* Input gradient of that GEMM, dX = dY @ W^T. With `accumulate` the result is added into
 * an existing dX (GEMM beta = 1: the LoRA branch's dgrad adds to the base's), which reads
 * it as well. */
model_op *model__gemm_dgrad(model_op_list *l, const dims *D, const char *name, double m,
                            double k, double n, bool accumulate)
{
    double f = 2 * m * k * n;
    model_op *o = model__push(l, name, HW_OP_MATMUL, f, f,
                              (m * n + k * n) * D->e + (accumulate ? 2 : 1) * m * k * D->ea, 0);
    o->inner = n;
    return o;
}

/* Weight gradient of that GEMM, dW = X^T @ dY. */
model_op *model__gemm_wgrad(model_op_list *l, const dims *D, const char *name, double m,
                            double k, double n, int64_t grad_params)
{
    double f = 2 * m * k * n;
    model_op *o = model__push(l, name, HW_OP_MATMUL, f, f,
                              (m * k + m * n) * D->e + k * n * D->ea, grad_params);
    o->inner = m;
    return o;
}

/* Backward of that GEMM: dgrad, then wgrad (the weight gradient is the later kernel so that
 * a gradient bucket closes as soon as it is complete). */
void model__gemm_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     double m, double k, double n, int64_t grad_params)
{
    model__gemm_dgrad(l, D, dgrad, m, k, n, false);
    model__gemm_wgrad(l, D, wgrad, m, k, n, grad_params);
}

/* QLoRA: reads a k x n NF4 weight shard with its scales, writes it in 16 bits. */
static void dequant_op(model_op_list *l, const char *name, double k, double n)
{
    double P = k * n;
    model__vec(l, name, FLOPS_DEQUANT * P,
               P * (model_qlora_weight_bytes() + DEQUANT_OUT_BYTES), 0);
}

/* A layer's base GEMM (m x k) @ (k x n) in forward, dequantised first under QLoRA. */
void model__base_fwd(model_op_list *l, const dims *D, const char *name, const char *dequant,
                     double m, double k, double n)
{
    if (D->qlora)
        dequant_op(l, dequant, k, n);
    model__lin_fwd(l, D, name, m, k, n, false);
}

/* Its backward: the dgrad always (dequantised first under QLoRA), the wgrad only when the
 * weight is trained. */
void model__base_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     const char *dequant, double m, double k, double n, int64_t grad_params)
{
    if (D->qlora)
        dequant_op(l, dequant, k, n);
    if (!D->frozen) {
        model__lin_bwd(l, D, dgrad, wgrad, m, k, n, grad_params);
        return;
    }
    SIM_ASSERT(!D->fp8, "fp8 with frozen base weights (%s) not validated", dgrad);
    model__gemm_dgrad(l, D, dgrad, m, k, n, false);
}

/* Forward of the adapters of targets first..last (one base GEMM's), on T tokens:
 * x A (T x in @ in x r), then (x A) B (T x r @ r x out) added into the base output by the
 * GEMM's epilogue (beta = 1: it reads that output too; the alpha/r scale is folded in). */
void model__lora_fwd(model_op_list *l, const dims *D, int first, int last)
{
    double T = D->T, r = (double)D->r;
    for (int i = first; i <= last; i++) {
        if (!model__has_target(D, D->targets, i))
            continue;
        int64_t in, out;
        target_shape(D, i, true, &in, &out);
        double o = (double)out, fl = 2 * T * r * o;
        model__gemm_fwd(l, D, lora_names_of[i].a, T, (double)in, r);
        model__push(l, lora_names_of[i].b, HW_OP_MATMUL, fl, fl,
                    (T * r + r * o) * D->e + 2 * T * o * D->ea, 0)
            ->inner = r;
    }
}

/* Backward of those adapters, last target first: B's dgrad d(xA) = dY B^T and wgrad
 * dB = (xA)^T dY, then A's dgrad (added into the base dgrad's dX) and wgrad dA = x^T d(xA).
 * Every parameter of the adapter gets its gradient here: r x out in B's wgrad, in x r in
 * A's. */
void model__lora_bwd(model_op_list *l, const dims *D, int first, int last)
{
    double T = D->T, r = (double)D->r;
    for (int i = last; i >= first; i--) {
        if (!model__has_target(D, D->targets, i))
            continue;
        int64_t in, out;
        target_shape(D, i, true, &in, &out);
        const lora_names *n = &lora_names_of[i];
        model__gemm_bwd(l, D, n->b_dgrad, n->b_wgrad, T, r, (double)out, D->r * out);
        model__gemm_dgrad(l, D, n->a_dgrad, T, (double)in, r, true);
        model__gemm_wgrad(l, D, n->a_wgrad, T, (double)in, r, in * D->r);
    }
}

/* An RMSNorm over X elements with P weights, `tensors` of them normalised apart (each its own
 * kernels when composite); backward writes the weight gradient (`params`) unless frozen.
 * Composite (D->composite_norm: eager PyTorch without a fused norm) is at::rms_norm (PyTorch 2.4-2.7; torchtitan's and Hugging
 * Face's Llama), per element of a 16-bit x in fp32 opmath (4 bytes; e = D->ea bytes of an
 * activation; the two casts vanish when activations are fp32):
 *   forward:  x.float() e+4, pow(2) 8, mean reads 4, x * rsqrt(...) 8, type_as 4+e,
 *             * weight 2e: 20 + 2e + 2(e+4) = 36 bytes at e = 2 (the fused kernel: 2e = 4);
 *             8 kernels (add-eps and rsqrt on the per-row statistic besides);
 *   backward: the weight's mul (dy * w 2e, dy * xn 3e, its row sum e), the downcast's e+4,
 *             g * rsqrt 8, g * x 12 and its row sum 4, mean's expand 4, pow's 2x * g 12, the
 *             two paths' sum 12, the upcast's 4+e: 52 + 6e + 2(e+4) = 76 at e = 2 (fused:
 *             3e = 6); 12 kernels. */
static void rmsnorm_op(model_op_list *l, const dims *D, const char *name, double X, double P,
                       int64_t params, int tensors, model_phase ph)
{
    bool fwd = ph == MODEL_PHASE_FWD;
    double e = D->ea, casts = e < 4 ? 2 * (e + 4) : 0;
    double per = fwd ? 20 + 2 * e + casts : 52 + 6 * e + casts;
    int kernels = tensors * ((fwd ? 6 : 10) + (e < 4 ? 2 : 0));
    double w = (fwd || D->frozen ? 1 : 2) * P * e; /* weights read, gradient written */
    vec_composite(l, D->composite_norm, name, (fwd ? 1 : 2) * FLOPS_RMSNORM * X,
                  (fwd ? 2 : 3) * X * e + w, per * X + w, kernels,
                  fwd || D->frozen ? 0 : params);
}

/* torchtitan's apply_rotary_emb on X rotated elements of Q and K: x.float() viewed as
 * complex, times the rotation, back to x's dtype: e+4, 8, 4+e per element (20 at e = 2; the
 * fused kernel 2e = 4), three kernels per tensor (one without the casts); its backward the
 * same three in reverse. */
static void rope_op(model_op_list *l, const dims *D, const char *name, double X)
{
    double e = D->ea;
    bool casts = e < 4;
    model__vec_eager(l, D, name, FLOPS_ROPE * X, 2 * X * e, (8 + (casts ? 2 * (e + 4) : 0)) * X,
                     2 * (casts ? 3 : 1), 0);
}

/* Norm over `tokens` x `width`: reads x and the weights, writes y. Backward reads x and dy,
 * writes dx and the weight gradient (its grad_params: the norm is replicated over TP); a
 * frozen norm (LoRA) still computes dx but writes no weight gradient. */
void model__norm_op(model_op_list *l, const model_spec *m, const dims *D, const char *name,
                    double tokens, double width, int64_t params, model_phase ph)
{
    double X = tokens * width, P = (double)params;
    if (m->norm == MODEL_NORM_RMSNORM) {
        rmsnorm_op(l, D, name, X, P, params, 1, ph);
        return;
    }
    /* LayerNorm: PyTorch's native kernel where the norms are eager PyTorch's
     * (D->composite_norm: training.norm_kernel composite), a fused one (Apex, Transformer
     * Engine, Liger, compiled) otherwise; the same bytes either way (PyTorch's backward is two
     * kernels, dx and the weight gradients, modelled as one) */
    bool native = D->composite_norm && !D->fp8;
    if (ph == MODEL_PHASE_FWD)
        native_op(l, native, name, FLOPS_LAYERNORM * X, (2 * X + P) * D->ea, 0);
    else if (D->frozen)
        native_op(l, native, name, 2 * FLOPS_LAYERNORM * X, (3 * X + P) * D->ea, 0);
    else
        native_op(l, native, name, 2 * FLOPS_LAYERNORM * X, (3 * X + 2 * P) * D->ea, params);
}

/* The h-wide norms (norm1, norm2, final_norm) on T' tokens. */
static void hidden_norm(model_op_list *l, const model_spec *m, const dims *D, const char *name,
                        model_phase ph)
{
    model__norm_op(l, m, D, name, D->Tn, (double)D->h, D->norm_params, ph);
}

/* Residual add fused with bias and dropout (Megatron's bias-dropout-add): reads the branch
 * output and the residual, writes the sum, and with dropout writes a 1-byte mask. Backward
 * accumulates the two gradient streams (reads 2, writes 1) and applies the mask. */
void model__residual_op(model_op_list *l, const dims *D, const char *name)
{
    double X = D->Tn * (double)D->h;
    double fl = X * (1 + (D->bias ? 1 : 0) + (D->dropout ? FLOPS_DROPOUT : 0));
    native_op(l, native_pointwise(D), name, fl, 3 * X * D->ea + (D->dropout ? X : 0), 0);
}

/* ---- blocks ------------------------------------------------------------------------- */

/* The embedding norm (model.embed_norm): always a LayerNorm (weight and bias, 2h), as
 * Megatron-DeepSpeed and BLOOM build it, on the T tokens of the whole sequence. */
static void embed_norm_op(model_op_list *l, const model_spec *m, const dims *D, const char *name,
                          model_phase ph)
{
    model_spec ln = *m;
    ln.norm = MODEL_NORM_LAYERNORM;
    model__norm_op(l, &ln, D, name, D->T, (double)D->h, 2 * D->h, ph);
}

static void embed_ops(const model_spec *m, const dims *D, model_phase ph, model_op_list *l)
{
    double Th = D->T * (double)D->h;
    int64_t table = D->v_r * D->h;
    /* elements of the T rows whose token falls in this rank's vocabulary shard */
    double shard = Th * (double)D->v_r / (double)D->vocab;
    if (ph == MODEL_PHASE_FWD) {
        /* Vocab-parallel gather: token ids, the rows of this rank's shard (T/t on average),
         * the full T x h output (zeros outside the shard, summed by the TP all-reduce).
         * Without learned positions, embedding dropout (if any) is fused here. */
        bool drop_here = D->dropout && !D->learned_pos;
        model__vec(l, "embed", drop_here ? FLOPS_DROPOUT * Th : 0,
                   D->T * TOKEN_ID_BYTES + (shard + Th) * D->ea + (drop_here ? Th : 0), 0);
        /* the embedding norm: a LayerNorm on all T tokens of the summed (all-reduced) token
         * embeddings, before the position table is added and before SP scatters them
         * (Megatron-DeepSpeed's VocabParallelEmbedding, BLOOM's word_embeddings_layernorm);
         * the embedding dropout, after it there, is counted in the kernels around it */
        if (D->embed_norm)
            embed_norm_op(l, m, D, "embed_norm", ph);
        if (D->learned_pos)
            /* x + P[position], then embedding dropout: reads x and s rows of the table (an
             * add, like a residual's) */
            native_op(l, native_pointwise(D), "pos_embed",
                      Th * (1 + (D->dropout ? FLOPS_DROPOUT : 0)),
                      (2 * Th + D->s * (double)D->h) * D->ea + (D->dropout ? Th : 0), 0);
        return;
    }
    if (D->frozen)
        return; /* LoRA: the embedding (and position table) is frozen; nothing to do */
    if (D->embed_norm) /* first: the gradient of the norm's input feeds the tables' */
        embed_norm_op(l, m, D, "embed_norm.bwd", ph);
    if (D->learned_pos)
        /* Sum of the T position gradients into the table (replicated over TP): reads dY,
         * zero-fills and writes the table's gradient (at least the s rows touched). Its
         * grad_params are the table's count, max_seq_len rows, as model_count_params. */
        model__vec(l, "pos_embed.wgrad", Th,
                   (Th + SIM_MAX((double)D->pos_rows, D->s) * (double)D->h) * D->ea,
                   D->pos_rows * D->h);
    /* Scatter-add of dY rows into this rank's shard of the embedding gradient: reads dY,
     * read-modify-writes the touched rows, zero-fills the shard's dense gradient. With tied
     * embeddings this kernel also completes the LM head's contribution to the same matrix,
     * so it carries the shared matrix's grad_params (the head's wgrad carries 0). */
    model__vec(l, "embed.wgrad", shard, (Th + 2 * shard + (double)table) * D->ea, table);
}

/* The attention core on this rank's a_r query heads. Per token, Q has a_r·dqk elements, K
 * kvh·dqk, V kvh·dvh and the output O a_r·dvh; QK^T of the rank's s queries over the whole
 * context ctx is 2·b·s·ctx·a_r·dqk FLOPs, PV 2·b·s·ctx·a_r·dvh (MHA without CP: dqk = dvh =
 * d, s = ctx, together Korthikanti's 4·b·s²·a·d/t).
 *
 * Context parallelism (cp = c > 1, Megatron's ring attention with causal load balancing):
 * the sequence is cut into 2c chunks and rank i holds chunks i and 2c-1-i, so every ring
 * step sees the same unmasked work: with chunks of m tokens, step 1 (its own K/V) computes
 * its two diagonal blocks (m²/2 each) and chunk 2c-1-i against chunk i (m²), and each
 * other step one of its chunks against both received chunks or both against one: 2m² pairs
 * a step, c steps, 2c·m² = (s·ctx)/2 in all — the causal half of the rank's share. Each
 * step is one flash kernel of 1/c of that work; steps after the first also merge their
 * partial output into the running one by the logsumexps (read both outputs, write one). */
void model__attn_core_fwd(const dims *D, double dqk, double dvh, double kvh, model_op_list *l)
{
    double a = (double)D->a_r;
    double q = a * dqk, k = kvh * dqk, v = kvh * dvh, o = a * dvh;
    double full_s = 2 * D->b * D->s * D->ctx * q;  /* QK^T over the whole context */
    double full_pv = 2 * D->b * D->s * D->ctx * o; /* PV over the whole context */
    double full = full_s + full_pv;
    if (D->flash) {
        /* FlashAttention-2 with a causal mask skips the tiles above the diagonal: it
         * executes half of the full matmul FLOPs (Dao 2023 §3.1). Ideal I/O: Q, K, V in,
         * O and the fp32 logsumexp per (head, token) out. */
        double c = (double)D->cp, lse = FP32_BYTES * D->b * a * D->s;
        for (int j = 0; j < D->cp; j++) {
            double merge = j > 0 ? 3 * D->T * o * D->ea + 3 * lse : 0;
            /* ring steps after the first see no mask (docs/models.md) */
            model_op *op = model__push(l, "attn", j > 0 ? HW_OP_ATTN_FWD_FULL : HW_OP_ATTN_FWD,
                                       full / 2 / c, full / c,
                                       D->T * (q + k + v + o) * D->ea + lse + merge, 0);
            op->attn_core = true;
            op->cp_step = D->cp > 1 ? j + 1 : 0;
            op->inner = dqk; /* the head dimension the kernel's rate depends on */
        }
        return;
    }
    /* Unfused attention (Megatron's core attention): scores S = QK^T for the full s x s,
     * a fused scale-mask-softmax, the attention dropout as its own kernel (Megatron runs
     * torch's dropout on the probabilities: reads P, writes the dropped copy and a 1-byte
     * mask), then O = P V. ALiBi (BLOOM's Megatron-DeepSpeed) passes the per-head bias as
     * baddbmm's input with beta = 1: PyTorch first expands it into the scores buffer (a
     * copy writing S; the [b·a, 1, s] bias it reads is negligible), then the GEMM reads that
     * buffer back as it adds its product (S more bytes). */
    double S = D->b * a * D->s * D->s;
    if (D->alibi)
        model__push(l, "attn.alibi", HW_OP_VECTOR, 0, 0, S * D->ea, 0)->attn_core = true;
    model_op *op = model__push(l, "attn.scores", HW_OP_MATMUL, full_s, full_s,
                               D->T * (q + k) * D->ea + (D->alibi ? 2 : 1) * S * D->ea, 0);
    op->attn_core = true;
    op->inner = dqk;
    op = model__push(l, "attn.softmax", HW_OP_VECTOR, S * FLOPS_SOFTMAX, 0, 2 * S * D->ea, 0);
    op->attn_core = true;
    if (D->dropout) {
        op = model__push(l, "attn.dropout", HW_OP_VECTOR, S * FLOPS_DROPOUT, 0,
                         2 * S * D->ea + S, 0);
        op->attn_core = true;
    }
    op = model__push(l, "attn.context", HW_OP_MATMUL, full_pv, full_pv,
                     S * D->ea + D->T * (v + o) * D->ea, 0);
    op->attn_core = true;
    op->inner = D->ctx;
}

void model__attn_core_bwd(const dims *D, double dqk, double dvh, double kvh, model_op_list *l)
{
    double a = (double)D->a_r;
    double q = a * dqk, k = kvh * dqk, v = kvh * dvh, o = a * dvh;
    double full_s = 2 * D->b * D->s * D->ctx * q;
    double full_pv = 2 * D->b * D->s * D->ctx * o;
    double full = full_s + full_pv;
    if (D->flash) {
        /* FlashAttention-2 backward recomputes S and P and runs five matmuls: S, dQ = dS K
         * and dK = dS^T Q of QK^T's size, dP = dO V^T and dV = P^T dO of PV's — 2.5 x the
         * executed forward when dqk = dvh, causal half included. Reads Q, K, V, O, dO and
         * the logsumexp; writes dQ, dK, dV; the fp32 row sums D = rowsum(dO * O) are
         * written and read once. Under CP, c steps of 1/c each (as the forward); after the
         * first, a step adds its dK, dV share into the block's running gradient that came
         * with it around the ring (read it, write the sum). */
        double c = (double)D->cp;
        for (int j = 0; j < D->cp; j++) {
            double acc = j > 0 ? 2 * D->T * (k + v) * D->ea : 0;
            model_op *op = model__push(l, "attn.bwd",
                                       j > 0 ? HW_OP_ATTN_BWD_FULL : HW_OP_ATTN_BWD,
                                       (3 * full_s + 2 * full_pv) / 2 / c, 2 * full / c,
                                       D->T * (2 * q + 2 * k + 2 * v + 2 * o) * D->ea +
                                           3 * FP32_BYTES * D->b * a * D->s + acc,
                                       0);
            op->attn_core = true;
            op->cp_step = D->cp > 1 ? j + 1 : 0;
            op->inner = dqk;
        }
        return;
    }
    double S = D->b * a * D->s * D->s;
    /* dP = dO V^T and dV = P^T dO: two matmuls of the forward PV's size. */
    model_op *op = model__push(l, "attn.context.bwd", HW_OP_MATMUL, 2 * full_pv, 2 * full_pv,
                               (2 * S + 2 * D->T * o + 2 * D->T * v) * D->ea, 0);
    op->attn_core = true;
    op->inner = 2 / (1 / dvh + 1 / D->s); /* dP over the value dim, dV over the s queries */
    /* Through the dropout: dP = dP' * mask / (1 - p): reads dP' and the mask, writes dP. */
    if (D->dropout) {
        op = model__push(l, "attn.dropout.bwd", HW_OP_VECTOR, S * FLOPS_DROPOUT, 0,
                         2 * S * D->ea + S, 0);
        op->attn_core = true;
    }
    /* dS = P * (dP - rowsum(dP * P)): reads P, dP, writes dS. */
    op = model__push(l, "attn.softmax.bwd", HW_OP_VECTOR, 2 * S * FLOPS_SOFTMAX, 0,
                     3 * S * D->ea, 0);
    op->attn_core = true;
    /* dQ = dS K and dK = dS^T Q. */
    op = model__push(l, "attn.scores.bwd", HW_OP_MATMUL, 2 * full_s, 2 * full_s,
                     (2 * S + 2 * D->T * q + 2 * D->T * k) * D->ea, 0);
    op->attn_core = true;
    op->inner = 2 / (1 / D->ctx + 1 / D->s); /* dQ over the keys, dK over the queries */
}

/* The MLP activation on X = tokens x (f/t) elements: GELU reads its f-wide input; SwiGLU
 * reads gate and up (2f) and writes f. Backward: SwiGLU reads gate, up and dY, writes dgate
 * and dup; GELU reads x and dY, writes dx. */
void model__act_fwd(model_op_list *l, const dims *D, const char *name, double X)
{
    if (D->swiglu) /* eager: silu (reads a, writes s), then s * b: two kernels, 5e per element */
        model__vec_eager(l, D, name, FLOPS_SWIGLU * X, 3 * X * D->ea, 5 * X * D->ea, 2, 0);
    else
        native_op(l, native_pointwise(D), name, (FLOPS_GELU + (D->bias ? 1 : 0)) * X,
                  2 * X * D->ea, 0);
}

void model__act_bwd(model_op_list *l, const dims *D, const char *name, double X)
{
    if (D->swiglu) /* eager: the product's two gradients (3e each), silu's backward (3e) */
        model__vec_eager(l, D, name, 2 * FLOPS_SWIGLU * X, 5 * X * D->ea, 9 * X * D->ea, 3, 0);
    else
        native_op(l, native_pointwise(D), name, 2 * (FLOPS_GELU + (D->bias ? 1 : 0)) * X,
                  3 * X * D->ea, 0);
}

/* A layer's forward up to its MLP (norm1 ... residual1, norm2): shared by the dense and the
 * MoE layer. MLA's is in mla.c. */
void model__layer_attn_fwd(const model_spec *m, const dims *D, model_op_list *l)
{
    if (D->mla) {
        model__mla_attn_fwd(m, D, l);
        return;
    }
    double T = D->T, h = (double)D->h;
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double qk = T * (q + kv); /* elements of Q and K */

    hidden_norm(l, m, D, "norm1", MODEL_PHASE_FWD);
    model__base_fwd(l, D, "qkv", "qkv.dequant", T, h, q + 2 * kv);
    model__lora_fwd(l, D, T_Q, T_V);
    if (D->qk_norm) /* q_norm and k_norm: d weights each */
        rmsnorm_op(l, D, "qk_norm", qk, 2 * (double)D->d, 2 * D->d, 2, MODEL_PHASE_FWD);
    if (D->rope)
        rope_op(l, D, "rope", qk);
    model__attn_core_fwd(D, (double)D->d, (double)D->d, (double)D->kv_r, l);
    model__base_fwd(l, D, "proj", "proj.dequant", T, q, h);
    model__lora_fwd(l, D, T_O, T_O);
    model__residual_op(l, D, "residual1");
    hidden_norm(l, m, D, "norm2", MODEL_PHASE_FWD);
}

/* What a dense MHA/GQA layer's recomputed forward re-runs. torchtitan's per-op checkpoint
 * policy (MODEL_RECOMPUTE_OP, pytorch/torchtitan's _custom_policy): aten.mm outputs are
 * saved except every second one, counted q (1), k (2), v (3), o (4), then gate (5), up (6),
 * down (7) with SwiGLU or fc1 (5), fc2 (6) with GELU; the flash attention kernel's outputs
 * and TP reduce-scatters are saved; everything else is re-run. The fused "qkv" GEMM so re-runs
 * k's columns, kv / (q + 2 kv) of it; "mlp_up" (gate and up side by side) half of it under
 * SwiGLU. PyTorch's non-reentrant
 * checkpoint stops re-running once the last tensor backward needs (the down GEMM's input) is
 * rebuilt, so "mlp_down" and "residual2" are not re-run (GELU's fc2 is not either). With
 * residual dropout the last is the second dropout's mask: "residual2" re-runs, and so does
 * GELU's fc2 before it (the sixth matmul, not saved; SwiGLU's down is the seventh, saved).
 * Without flash attention the core is batched matmuls and a softmax, none on the save list:
 * re-run.
 *
 * The same stop marks the kernels a full recompute skips when it stops early
 * (after_last_save: PyTorch's non-reentrant checkpoint, torch.utils.checkpoint with
 * use_reentrant=False; early stop is its default since PyTorch 2.1, pytorch/pytorch#96866):
 * the down GEMM (fc2 under GELU), TP's collective after it, and the second residual add.
 * With residual dropout the last saved tensor is the second dropout's mask, which exists only
 * once the down GEMM has run; an fp8 layer's linear layers are Transformer Engine's autograd
 * functions, which save after their GEMM: the whole layer re-runs in both, as it does in MoE,
 * MLA and LoRA layers (whose last saved tensors are not modelled). */
static void mark_recompute(const dims *D, model_op_list *l)
{
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    for (int i = 0; i < l->n; i++) {
        model_op *o = &l->op[i];
        const char *n = o->name;
        bool down = strcmp(n, "mlp_down") == 0, res2 = strcmp(n, "residual2") == 0;
        double share = 1;
        if (strcmp(n, "qkv") == 0)
            share = kv / (q + 2 * kv);
        else if (strcmp(n, "mlp_up") == 0)
            share = D->swiglu ? 0.5 : 0;
        else if (down)
            share = D->dropout && !D->swiglu ? 1 : 0;
        else if (res2)
            share = D->dropout ? 1 : 0;
        else if (o->attn_core)
            share = D->flash ? 0 : 1;
        o->op_share = share;
        o->after_last_save = (down || res2) && !D->dropout && !D->fp8;
    }
}

double model_recompute_share(const model_op *o, model_recompute rc, bool early_stop)
{
    switch (rc) {
    case MODEL_RECOMPUTE_SELECTIVE:
        return o->attn_core ? 1 : 0;
    case MODEL_RECOMPUTE_FULL:
        return early_stop && o->after_last_save ? 0 : 1;
    case MODEL_RECOMPUTE_OP:
        return o->op_share;
    case MODEL_RECOMPUTE_NONE:
        break;
    }
    return 0;
}

static void layer_fwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    double f = (double)D->f_r, up = (double)D->up_r;

    model__layer_attn_fwd(m, D, l);
    model__base_fwd(l, D, "mlp_up", "mlp_up.dequant", T, h, up);
    model__lora_fwd(l, D, T_GATE, T_UP);
    model__act_fwd(l, D, "act", T * f);
    model__base_fwd(l, D, "mlp_down", "mlp_down.dequant", T, f, h);
    model__lora_fwd(l, D, T_DOWN, T_DOWN);
    model__residual_op(l, D, "residual2");
    if (!D->mla && !D->frozen)
        mark_recompute(D, l);
}

/* A layer's backward from its MLP's input gradient on (norm2.bwd ... norm1.bwd): shared by
 * the dense and the MoE layer. MLA's is in mla.c. */
void model__layer_attn_bwd(const model_spec *m, const dims *D, model_op_list *l)
{
    if (D->mla) {
        model__mla_attn_bwd(m, D, l);
        return;
    }
    double T = D->T, h = (double)D->h;
    int64_t hi = D->h, qi = D->a_r * D->d, kvi = D->kv_r * D->d;
    double q = (double)qi, kv = (double)kvi;
    double qk = T * (q + kv);
    int64_t b = D->bias ? 1 : 0, bq = D->qkv_bias ? 1 : 0;

    hidden_norm(l, m, D, "norm2.bwd", MODEL_PHASE_BWD);
    model__residual_op(l, D, "residual1.bwd");
    model__base_bwd(l, D, "proj.dgrad", "proj.wgrad", "proj.dgrad.dequant", T, q, h,
                    qi * hi + b * hi);
    model__lora_bwd(l, D, T_O, T_O);
    model__attn_core_bwd(D, (double)D->d, (double)D->d, (double)D->kv_r, l);
    if (D->rope) /* rotation by -theta: same traffic as forward */
        rope_op(l, D, "rope.bwd", qk);
    if (D->qk_norm) /* frozen (LoRA): reads the two d-weight vectors, writes no gradient */
        rmsnorm_op(l, D, "qk_norm.bwd", qk, 2 * (double)D->d, 2 * D->d, 2, MODEL_PHASE_BWD);
    model__base_bwd(l, D, "qkv.dgrad", "qkv.wgrad", "qkv.dgrad.dequant", T, h, q + 2 * kv,
                    hi * (qi + 2 * kvi) + bq * (qi + 2 * kvi));
    model__lora_bwd(l, D, T_Q, T_V);
    hidden_norm(l, m, D, "norm1.bwd", MODEL_PHASE_BWD);
}

static void layer_bwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    int64_t hi = D->h;
    double f = (double)D->f_r, up = (double)D->up_r;
    int64_t b = D->bias ? 1 : 0;

    model__residual_op(l, D, "residual2.bwd");
    /* Row-parallel biases (proj, mlp_down) are replicated over TP: h each; column-parallel
     * ones are split with their weight. */
    model__base_bwd(l, D, "mlp_down.dgrad", "mlp_down.wgrad", "mlp_down.dgrad.dequant", T, f,
                    h, D->f_r * hi + b * hi);
    model__lora_bwd(l, D, T_DOWN, T_DOWN);
    model__act_bwd(l, D, "act.bwd", T * f);
    model__base_bwd(l, D, "mlp_up.dgrad", "mlp_up.wgrad", "mlp_up.dgrad.dequant", T, h, up,
                    hi * D->up_r + b * D->up_r);
    model__lora_bwd(l, D, T_GATE, T_UP);
    model__layer_attn_bwd(m, D, l);
}

/* Softmax cross-entropy on the T x V/t logits, as Megatron's (unfused) vocab-parallel cross
 * entropy computes it (megatron/core/tensor_parallel/cross_entropy.py), pass by pass over the
 * logits: cast to fp32 (read e_a, write 4), the row maximum (read 4), subtract it in place
 * (read 4, write 4), exp in place (read 4, write 4), the row sum (read 4), divide in place to
 * the softmax that backward keeps (read 4, write 4): e_a + 36 bytes per logit. Backward:
 * softmax - one-hot in place (a scatter at the targets), times the incoming gradient in place
 * (read 4, write 4), then the cast's backward back to 16 bits (read 4, write e_a):
 * 12 + e_a bytes per logit. Fused (torch.compile's code for F.cross_entropy(logits.float()),
 * D->fused_loss): forward, the row maximum and the row sum of exponentials as two reductions
 * over the 16-bit logits (read e_a each; the cast, the target's logit and the per-row
 * log-sum-exp are fused in): 2 e_a bytes per logit; backward, one kernel reading the logits
 * and writing the 16-bit gradient, exp(x - lse) - one-hot times the incoming gradient:
 * 2 e_a. */
static void head_ops(const model_spec *m, const dims *D, model_phase ph, model_op_list *l)
{
    double T = D->T, h = (double)D->h, V = (double)D->v_r;
    double X = T * V;
    int64_t head_grads = D->tied ? 0 : D->v_r * D->h;
    if (ph == MODEL_PHASE_FWD) {
        hidden_norm(l, m, D, "final_norm", MODEL_PHASE_FWD);
        model__gemm_fwd(l, D, "lm_head", T, h, V);
        model__vec(l, "loss", FLOPS_SOFTMAX * X,
                   X * (D->fused_loss ? 2 * D->ea : D->ea + 9 * FP32_BYTES), 0);
        return;
    }
    /* dlogits = (softmax - onehot) x dloss, cast to 16 bits (above). The LM head is never
     * quantised (bitsandbytes keeps the output layer in 16 bits), and under LoRA it is
     * frozen: dgrad only. */
    model__vec(l, "loss.bwd", 2 * X, X * (D->fused_loss ? 2 * D->ea : 3 * FP32_BYTES + D->ea), 0);
    model__gemm_dgrad(l, D, "lm_head.dgrad", T, h, V, false);
    if (!D->frozen)
        model__gemm_wgrad(l, D, "lm_head.wgrad", T, h, V, head_grads);
    hidden_norm(l, m, D, "final_norm.bwd", MODEL_PHASE_BWD);
}

void model_block_ops(const model_spec *m, const model_shape *sh, model_block blk,
                     model_phase phase, model_op_list *out)
{
    if (blk == MODEL_BLOCK_MOE) {
        model__moe_block_ops(m, sh, phase, out);
        return;
    }
    dims D;
    model__shape_dims(m, sh, &D);
    out->n = 0;
    switch (blk) {
    case MODEL_BLOCK_EMBED: embed_ops(m, &D, phase, out); break;
    case MODEL_BLOCK_MOE: break; /* above */
    case MODEL_BLOCK_LAYER:
        if (phase == MODEL_PHASE_FWD)
            layer_fwd(m, &D, out);
        else
            layer_bwd(m, &D, out);
        break;
    case MODEL_BLOCK_HEAD: head_ops(m, &D, phase, out); break;
    }
}

/* ---- parameters ---------------------------------------------------------------------- */

/* A layer without its MLP: norms, qkv, q/k norms, proj (MLA: norms and model__mla_params). */
int64_t model__attn_part_params(const dims *D)
{
    if (D->mla)
        return 2 * D->norm_params + model__mla_params(D);
    int64_t h = D->h, q = D->heads * D->d, kv = D->kv_heads * D->d;
    int64_t b = D->bias ? 1 : 0, bq = D->qkv_bias ? 1 : 0;
    return 2 * D->norm_params                     /* norm1, norm2 */
           + h * (q + 2 * kv) + bq * (q + 2 * kv) /* qkv */
           + (D->qk_norm ? 2 * D->d : 0)          /* q_norm, k_norm */
           + q * h + b * h;                       /* proj */
}

/* An MLP of width f: up (gate + up with SwiGLU) and down, with their biases. */
int64_t model__mlp_params(const dims *D, int64_t f)
{
    int64_t h = D->h, up = D->swiglu ? 2 * f : f, b = D->bias ? 1 : 0;
    return h * up + b * up + f * h + b * h;
}

void model_count_params(const model_spec *m, model_params *out)
{
    dims D;
    model__spec_dims(m, &D);
    int64_t h = D.h;
    out->embedding = D.vocab * h + D.pos_rows * h + (D.embed_norm ? 2 * h : 0);
    out->per_layer = model__attn_part_params(&D) + model__mlp_params(&D, D.ffn);
    out->final_norm = D.norm_params;
    out->head = D.tied ? 0 : D.vocab * h;
    int64_t dense_layers = m->layers, moe_layers = 0, moe_active = 0;
    out->per_moe_layer = 0;
    if (D.E > 0) {
        int64_t attn, expert, router, shared;
        model_count_moe_params(m, &attn, &expert, &router, &shared);
        dense_layers = SIM_MIN((int64_t)m->moe.dense_layers, (int64_t)m->layers);
        moe_layers = m->layers - dense_layers;
        out->per_moe_layer = attn + D.E * expert + router + shared;
        moe_active = attn + D.K * expert + router + shared;
    }
    int64_t rest = out->embedding + out->final_norm + out->head +
                   dense_layers * out->per_layer;
    out->total = rest + moe_layers * out->per_moe_layer;
    out->active = rest + moe_layers * moe_active;
}

void model_count_lora_params(const model_spec *m, const model_ft *ft, int64_t *per_layer_out)
{
    dims D;
    model__spec_dims(m, &D);
    *per_layer_out = 0;
    if (ft->method == MODEL_FT_FULL)
        return;
    SIM_ASSERT(ft->rank > 0, "LoRA rank %d not validated", ft->rank);
    int64_t r = ft->rank;
    for (int i = 0; i < N_TARGETS; i++) {
        if (!model__has_target(&D, ft->targets, i))
            continue;
        int64_t in, out;
        target_shape(&D, i, false, &in, &out);
        *per_layer_out += r * (in + out);
    }
}

int64_t model_layer_matrix_params(const model_spec *m)
{
    dims D;
    model__spec_dims(m, &D);
    int64_t q = D.heads * D.d, kv = D.kv_heads * D.d;
    int64_t up = D.swiglu ? 2 * D.ffn : D.ffn;
    int64_t attn = D.mla ? model__mla_matrix_params(&D) : D.h * (q + 2 * kv) + q * D.h;
    return attn + D.h * up + D.ffn * D.h;
}

/* NF4 (Dettmers et al. 2023 §3): 4 bits per weight, blocks of 64 weights. Their absmax
 * constants are double-quantised: 8-bit per block, plus one fp32 second-level constant per
 * 256 blocks, so 8/64 + 32/(64*256) = 0.126953125 bits per weight (the paper's "0.127").
 * In bytes: 1/2 + 1/64 + 1/4096 = 2113/4096, exact in binary. */
double model_qlora_weight_bytes(void)
{
    return 0.5 + 8.0 / (64 * 8) + 32.0 / (64.0 * 256 * 8);
}

double model_cp_kv_bytes(const model_spec *m, const model_shape *sh)
{
    dims D;
    model__shape_dims(m, sh, &D);
    if (D.cp == 1)
        return 0;
    double kvh = D.mla ? (double)D.a_r : (double)D.kv_r;
    double dqk = (double)(D.mla ? D.d + D.dr : D.d), dvh = (double)D.dv;
    return D.T * kvh * (dqk + dvh) * D.ea;
}
