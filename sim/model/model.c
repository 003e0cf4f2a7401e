/* Decoder transformer -> per-block kernels with FLOPs, HBM bytes, parameter counts and
 * activation bytes. Every formula, with its source, is in docs/models.md; the comments here
 * say which kernel each term stands for.
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
 * Mixture of experts (docs/models.md "Mixture of experts"; Fedus et al. 2021, Jiang et al.
 * 2024, DeepSeek-AI 2024). A MoE layer replaces the MLP by a router GEMM (T x h x E), a
 * softmax/top-k gate, a permutation of the T tokens into T·K expert-ordered rows, each local
 * expert's MLP on the rows routed to it (f_e split by t like the dense MLP), the weighted
 * un-permutation of the T·K returned rows back into T, and optional shared experts (a dense
 * MLP of shared·f_e on all T tokens). Experts count the FLOPs of the tokens they process:
 * per token, only top_k experts' parameters are active. */
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
/* Dequantising one NF4 weight: a 16-entry codebook lookup, then a multiply by its block's
 * scale (the double-quantised scale's own dequantisation is once per 64 weights). */
#define FLOPS_DEQUANT 2.0
/* The dequantised copy is 16-bit (bf16/fp16: QLoRA's compute dtype). */
#define DEQUANT_OUT_BYTES 2.0

/* LoRA targets, in forward order; bit i of model_ft.targets is target i. */
enum { T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, N_TARGETS };
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

/* The spec with defaults resolved and the per-rank shape, in doubles for the formulas and
 * exact integers for parameter counts. */
typedef struct dims {
    /* whole model */
    int64_t h, heads, kv_heads, d, ffn, vocab, norm_params;
    int64_t pos_rows; /* rows of the learned position table: max_seq_len (0 if unset) */
    bool learned_pos, swiglu, dropout, bias, qk_norm, tied;
    /* per rank */
    int64_t a_r, kv_r, f_r, up_r, v_r;
    double b, s, T, Tn; /* Tn: tokens of the replicated-or-SP kernels (T/t with sp) */
    double e;           /* bytes of a GEMM operand (compute dtype) */
    double ea;          /* bytes of an activation element (>= 2: fp8 GEMMs keep bf16 I/O) */
    bool flash;
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

static int64_t ceil_div(int64_t x, int64_t y)
{
    return (x + y - 1) / y;
}

static void spec_dims(const model_spec *m, dims *o)
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
    SIM_ASSERT(m->attention.kind == MODEL_ATTN_MHA, "model %s: MLA is not modelled yet",
               m->name);
    o->h = m->hidden;
    o->heads = m->heads;
    o->kv_heads = m->kv_heads > 0 ? m->kv_heads : m->heads;
    o->d = m->head_dim > 0 ? m->head_dim : m->hidden / m->heads;
    SIM_ASSERT(o->d > 0 && o->kv_heads <= o->heads, "model %s: head_dim=%lld kv_heads=%lld",
               m->name, (long long)o->d, (long long)o->kv_heads);
    o->ffn = m->ffn;
    o->vocab = m->vocab;
    o->learned_pos = m->position == MODEL_POS_LEARNED;
    o->pos_rows = o->learned_pos ? m->max_seq_len : 0;
    o->swiglu = m->activation == MODEL_ACT_SWIGLU;
    o->dropout = m->dropout > 0;
    o->bias = m->bias;
    o->qk_norm = m->qk_norm;
    o->tied = m->tied_embeddings;
    /* RMSNorm has a weight, LayerNorm a weight and a bias. */
    o->norm_params = m->norm == MODEL_NORM_LAYERNORM ? 2 * o->h : o->h;
    o->E = m->moe.experts;
    o->K = o->E > 0 ? m->moe.top_k : 0;
    o->fe = o->E > 0 ? m->moe.expert_ffn : 0;
    o->fs = o->E > 0 ? (int64_t)m->moe.shared_experts * o->fe : 0;
}

static void shape_dims(const model_spec *m, const model_shape *sh, dims *o)
{
    spec_dims(m, o);
    SIM_ASSERT(sh->micro_batch > 0 && sh->seq_len > 0 && sh->tp >= 1,
               "shape b=%lld s=%lld tp=%d", (long long)sh->micro_batch,
               (long long)sh->seq_len, sh->tp);
    int64_t t = sh->tp;
    o->a_r = ceil_div(o->heads, t);
    o->kv_r = o->kv_heads >= t ? ceil_div(o->kv_heads, t) : 1;
    o->f_r = ceil_div(o->ffn, t);
    o->up_r = o->swiglu ? 2 * o->f_r : o->f_r; /* SwiGLU: gate and up fused, 2f columns */
    o->v_r = ceil_div(o->vocab, t);
    o->b = (double)sh->micro_batch;
    o->s = (double)sh->seq_len;
    o->T = o->b * o->s;
    o->Tn = sh->sp ? o->T / (double)t : o->T;
    o->e = hw_dtype_bytes(sh->dtype);
    o->ea = SIM_MAX(2.0, o->e);
    o->flash = sh->flash_attention;
    const model_ft *ft = &sh->ft;
    SIM_ASSERT(ft->method == MODEL_FT_FULL || ft->method == MODEL_FT_LORA ||
                   ft->method == MODEL_FT_QLORA,
               "fine-tuning method %d", (int)ft->method);
    o->frozen = ft->method != MODEL_FT_FULL;
    o->qlora = ft->method == MODEL_FT_QLORA;
    SIM_ASSERT(!o->frozen || ft->rank > 0, "LoRA rank %d not validated", ft->rank);
    o->r = o->frozen ? ft->rank : 0;
    o->targets = o->frozen ? ft->targets & MODEL_TARGET_ALL : 0;
    o->fe_r = ceil_div(o->fe, t);
    o->upe_r = o->swiglu ? 2 * o->fe_r : o->fe_r;
    o->fs_r = ceil_div(o->fs, t);
    o->ups_r = o->swiglu ? 2 * o->fs_r : o->fs_r;
    o->ep = sh->ep > 1 ? sh->ep : 1;
    SIM_ASSERT(o->E == 0 || o->E % o->ep == 0, "ep=%lld does not divide %lld experts",
               (long long)o->ep, (long long)o->E);
    o->n_local = o->E / o->ep;
}

/* The dims of a MoE layer: the shape's, with fine-tuning switched off (MoE layers are fully
 * trained; LoRA on experts is not modelled) and the routed load checked. */
static void moe_dims(const model_spec *m, const model_shape *sh, dims *o)
{
    model_shape full = *sh;
    full.ft = (model_ft){0};
    shape_dims(m, &full, o);
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

/* Whether target i is in the bit set and the model has that matrix (a GELU MLP has no
 * gate: the bit then does nothing). */
static bool has_target(const dims *D, unsigned targets, int i)
{
    return ((targets >> i) & 1u) && (i != T_GATE || D->swiglu);
}

/* in x out of LoRA target i's base matrix, given the query, key/value and MLP widths (per
 * rank or whole). Under TP the adapter follows its base matrix's split: column-parallel q,
 * k, v, gate, up split `out` (B is sharded, A whole on every rank); row-parallel o, down
 * split `in` (A sharded, B whole). */
static void target_shape(const dims *D, int i, int64_t q, int64_t kv, int64_t f, int64_t *in,
                         int64_t *out)
{
    *in = i == T_O ? q : i == T_DOWN ? f : D->h;
    *out = i == T_Q ? q : i == T_K || i == T_V ? kv : i == T_GATE || i == T_UP ? f : D->h;
}

/* ---- op list construction ------------------------------------------------------------ */

static model_op *push(model_op_list *l, const char *name, hw_op_class cls, double flops,
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

static void vec(model_op_list *l, const char *name, double flops, double bytes,
                int64_t grad_params)
{
    push(l, name, HW_OP_VECTOR, flops, 0, bytes, grad_params);
}

/* Forward GEMM Y (m x n) = X (m x k) @ W (k x n). */
static void gemm_fwd(model_op_list *l, const dims *D, const char *name, double m, double k,
                     double n)
{
    double f = 2 * m * k * n;
    push(l, name, HW_OP_MATMUL, f, f, (m * k + k * n) * D->e + m * n * D->ea, 0);
}

/* Input gradient of that GEMM, dX = dY @ W^T. With `accumulate` the result is added into
 * an existing dX (GEMM beta = 1: the LoRA branch's dgrad adds to the base's), which reads
 * it as well. */
static void gemm_dgrad(model_op_list *l, const dims *D, const char *name, double m, double k,
                       double n, bool accumulate)
{
    double f = 2 * m * k * n;
    push(l, name, HW_OP_MATMUL, f, f,
         (m * n + k * n) * D->e + (accumulate ? 2 : 1) * m * k * D->ea, 0);
}

/* Weight gradient of that GEMM, dW = X^T @ dY. */
static void gemm_wgrad(model_op_list *l, const dims *D, const char *name, double m, double k,
                       double n, int64_t grad_params)
{
    double f = 2 * m * k * n;
    push(l, name, HW_OP_MATMUL, f, f, (m * k + m * n) * D->e + k * n * D->ea, grad_params);
}

/* Backward of that GEMM: dgrad, then wgrad (the weight gradient is the later kernel so that
 * a gradient bucket closes as soon as it is complete). */
static void gemm_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     double m, double k, double n, int64_t grad_params)
{
    gemm_dgrad(l, D, dgrad, m, k, n, false);
    gemm_wgrad(l, D, wgrad, m, k, n, grad_params);
}

/* QLoRA: reads a k x n NF4 weight shard with its scales, writes it in 16 bits. */
static void dequant_op(model_op_list *l, const char *name, double k, double n)
{
    double P = k * n;
    vec(l, name, FLOPS_DEQUANT * P, P * (model_qlora_weight_bytes() + DEQUANT_OUT_BYTES), 0);
}

/* A layer's base GEMM (m x k) @ (k x n) in forward, dequantised first under QLoRA. */
static void base_fwd(model_op_list *l, const dims *D, const char *name, const char *dequant,
                     double m, double k, double n)
{
    if (D->qlora)
        dequant_op(l, dequant, k, n);
    gemm_fwd(l, D, name, m, k, n);
}

/* Its backward: the dgrad always (dequantised first under QLoRA), the wgrad only when the
 * weight is trained. */
static void base_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                     const char *dequant, double m, double k, double n, int64_t grad_params)
{
    if (D->qlora)
        dequant_op(l, dequant, k, n);
    gemm_dgrad(l, D, dgrad, m, k, n, false);
    if (!D->frozen)
        gemm_wgrad(l, D, wgrad, m, k, n, grad_params);
}

/* Forward of the adapters of targets first..last (one base GEMM's), on T tokens:
 * x A (T x in @ in x r), then (x A) B (T x r @ r x out) added into the base output by the
 * GEMM's epilogue (beta = 1: it reads that output too; the alpha/r scale is folded in). */
static void lora_fwd(model_op_list *l, const dims *D, int first, int last)
{
    double T = D->T, r = (double)D->r;
    for (int i = first; i <= last; i++) {
        if (!has_target(D, D->targets, i))
            continue;
        int64_t in, out;
        target_shape(D, i, D->a_r * D->d, D->kv_r * D->d, D->f_r, &in, &out);
        double o = (double)out, fl = 2 * T * r * o;
        gemm_fwd(l, D, lora_names_of[i].a, T, (double)in, r);
        push(l, lora_names_of[i].b, HW_OP_MATMUL, fl, fl,
             (T * r + r * o) * D->e + 2 * T * o * D->ea, 0);
    }
}

/* Backward of those adapters, last target first: B's dgrad d(xA) = dY B^T and wgrad
 * dB = (xA)^T dY, then A's dgrad (added into the base dgrad's dX) and wgrad dA = x^T d(xA).
 * Every parameter of the adapter gets its gradient here: r x out in B's wgrad, in x r in
 * A's. */
static void lora_bwd(model_op_list *l, const dims *D, int first, int last)
{
    double T = D->T, r = (double)D->r;
    for (int i = last; i >= first; i--) {
        if (!has_target(D, D->targets, i))
            continue;
        int64_t in, out;
        target_shape(D, i, D->a_r * D->d, D->kv_r * D->d, D->f_r, &in, &out);
        const lora_names *n = &lora_names_of[i];
        gemm_bwd(l, D, n->b_dgrad, n->b_wgrad, T, r, (double)out, D->r * out);
        gemm_dgrad(l, D, n->a_dgrad, T, (double)in, r, true);
        gemm_wgrad(l, D, n->a_wgrad, T, (double)in, r, in * D->r);
    }
}

static double norm_flops(const model_spec *m)
{
    return m->norm == MODEL_NORM_LAYERNORM ? FLOPS_LAYERNORM : FLOPS_RMSNORM;
}

/* Norm over `tokens` x h: reads x and the weights, writes y. Backward reads x and dy,
 * writes dx and the weight gradient (its grad_params: the norm is replicated over TP); a
 * frozen norm (LoRA) still computes dx but writes no weight gradient. */
static void norm_op(model_op_list *l, const model_spec *m, const dims *D, const char *name,
                    double tokens, model_phase ph)
{
    double X = tokens * (double)D->h, P = (double)D->norm_params;
    if (ph == MODEL_PHASE_FWD)
        vec(l, name, norm_flops(m) * X, (2 * X + P) * D->ea, 0);
    else if (D->frozen)
        vec(l, name, 2 * norm_flops(m) * X, (3 * X + P) * D->ea, 0);
    else
        vec(l, name, 2 * norm_flops(m) * X, (3 * X + 2 * P) * D->ea, D->norm_params);
}

/* Residual add fused with bias and dropout (Megatron's bias-dropout-add): reads the branch
 * output and the residual, writes the sum, and with dropout writes a 1-byte mask. Backward
 * accumulates the two gradient streams (reads 2, writes 1) and applies the mask. */
static void residual_op(model_op_list *l, const dims *D, const char *name)
{
    double X = D->Tn * (double)D->h;
    double fl = X * (1 + (D->bias ? 1 : 0) + (D->dropout ? FLOPS_DROPOUT : 0));
    vec(l, name, fl, 3 * X * D->ea + (D->dropout ? X : 0), 0);
}

/* ---- blocks ------------------------------------------------------------------------- */

static void embed_ops(const dims *D, model_phase ph, model_op_list *l)
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
        vec(l, "embed", drop_here ? FLOPS_DROPOUT * Th : 0,
            D->T * TOKEN_ID_BYTES + (shard + Th) * D->ea + (drop_here ? Th : 0), 0);
        if (D->learned_pos)
            /* x + P[position], then embedding dropout: reads x and s rows of the table. */
            vec(l, "pos_embed", Th * (1 + (D->dropout ? FLOPS_DROPOUT : 0)),
                (2 * Th + D->s * (double)D->h) * D->ea + (D->dropout ? Th : 0), 0);
        return;
    }
    if (D->frozen)
        return; /* LoRA: the embedding (and position table) is frozen; nothing to do */
    if (D->learned_pos)
        /* Sum of the T position gradients into the table (replicated over TP): reads dY,
         * zero-fills and writes the table's gradient (at least the s rows touched). Its
         * grad_params are the table's count, max_seq_len rows, as model_count_params. */
        vec(l, "pos_embed.wgrad", Th,
            (Th + SIM_MAX((double)D->pos_rows, D->s) * (double)D->h) * D->ea,
            D->pos_rows * D->h);
    /* Scatter-add of dY rows into this rank's shard of the embedding gradient: reads dY,
     * read-modify-writes the touched rows, zero-fills the shard's dense gradient. With tied
     * embeddings this kernel also completes the LM head's contribution to the same matrix,
     * so it carries the shared matrix's grad_params (the head's wgrad carries 0). */
    vec(l, "embed.wgrad", shard, (Th + 2 * shard + (double)table) * D->ea, table);
}

static void attention_fwd(const dims *D, model_op_list *l)
{
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double full = 4 * D->b * D->s * D->s * q; /* QK^T and PV over the full s x s */
    if (D->flash) {
        /* FlashAttention-2 with a causal mask skips the tiles above the diagonal: it
         * executes half of the full matmul FLOPs (Dao 2023 §3.1). Ideal I/O: Q, K, V in,
         * O and the fp32 logsumexp per (head, token) out. */
        model_op *op = push(l, "attn", HW_OP_MATMUL, full / 2, full,
                            D->T * (2 * q + 2 * kv) * D->ea +
                                FP32_BYTES * D->b * (double)D->a_r * D->s,
                            0);
        op->attn_core = true;
        return;
    }
    /* Unfused attention (Megatron's core attention): scores S = QK^T for the full s x s,
     * a fused scale-mask-softmax (+ attention dropout), then O = P V. */
    double S = D->b * (double)D->a_r * D->s * D->s;
    model_op *op = push(l, "attn.scores", HW_OP_MATMUL, full / 2, full / 2,
                        D->T * (q + kv) * D->ea + S * D->ea, 0);
    op->attn_core = true;
    op = push(l, "attn.softmax", HW_OP_VECTOR,
              S * (FLOPS_SOFTMAX + (D->dropout ? FLOPS_DROPOUT : 0)), 0,
              2 * S * D->ea + (D->dropout ? S * (1 + D->ea) : 0), 0);
    op->attn_core = true;
    op = push(l, "attn.context", HW_OP_MATMUL, full / 2, full / 2,
              S * D->ea + D->T * (kv + q) * D->ea, 0);
    op->attn_core = true;
}

static void attention_bwd(const dims *D, model_op_list *l)
{
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double full = 4 * D->b * D->s * D->s * q;
    if (D->flash) {
        /* FlashAttention-2 backward recomputes S and P and runs five matmuls (S, dP, dV,
         * dQ, dK) against the forward's two: 2.5 x the executed forward FLOPs, causal
         * half included. Reads Q, K, V, O, dO and the logsumexp; writes dQ, dK, dV; the
         * fp32 row sums D = rowsum(dO * O) are written and read once. */
        model_op *op = push(l, "attn.bwd", HW_OP_MATMUL, 2.5 * (full / 2), 2 * full,
                            D->T * (4 * q + 4 * kv) * D->ea +
                                3 * FP32_BYTES * D->b * (double)D->a_r * D->s,
                            0);
        op->attn_core = true;
        return;
    }
    double S = D->b * (double)D->a_r * D->s * D->s;
    /* dP = dO V^T and dV = P^T dO: two matmuls of the forward PV's size. */
    model_op *op = push(l, "attn.context.bwd", HW_OP_MATMUL, full, full,
                        (2 * S + 2 * D->T * q + 2 * D->T * kv) * D->ea, 0);
    op->attn_core = true;
    /* dS = P * (dP - rowsum(dP * P)), through the dropout mask: reads P, dP, writes dS. */
    op = push(l, "attn.softmax.bwd", HW_OP_VECTOR,
              2 * S * (FLOPS_SOFTMAX + (D->dropout ? FLOPS_DROPOUT : 0)), 0,
              3 * S * D->ea + (D->dropout ? S : 0), 0);
    op->attn_core = true;
    /* dQ = dS K and dK = dS^T Q. */
    op = push(l, "attn.scores.bwd", HW_OP_MATMUL, full, full,
              (2 * S + 2 * D->T * q + 2 * D->T * kv) * D->ea, 0);
    op->attn_core = true;
}

/* The MLP activation on X = tokens x (f/t) elements: GELU reads its f-wide input; SwiGLU
 * reads gate and up (2f) and writes f. Backward: SwiGLU reads gate, up and dY, writes dgate
 * and dup; GELU reads x and dY, writes dx. */
static void act_fwd(model_op_list *l, const dims *D, const char *name, double X)
{
    if (D->swiglu)
        vec(l, name, FLOPS_SWIGLU * X, 3 * X * D->ea, 0);
    else
        vec(l, name, (FLOPS_GELU + (D->bias ? 1 : 0)) * X, 2 * X * D->ea, 0);
}

static void act_bwd(model_op_list *l, const dims *D, const char *name, double X)
{
    if (D->swiglu)
        vec(l, name, 2 * FLOPS_SWIGLU * X, 5 * X * D->ea, 0);
    else
        vec(l, name, 2 * (FLOPS_GELU + (D->bias ? 1 : 0)) * X, 3 * X * D->ea, 0);
}

/* A layer's forward up to its MLP (norm1 ... residual1, norm2): shared by the dense and the
 * MoE layer. */
static void layer_attn_fwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double qk = T * (q + kv); /* elements of Q and K */

    norm_op(l, m, D, "norm1", D->Tn, MODEL_PHASE_FWD);
    base_fwd(l, D, "qkv", "qkv.dequant", T, h, q + 2 * kv);
    lora_fwd(l, D, T_Q, T_V);
    if (D->qk_norm)
        vec(l, "qk_norm", FLOPS_RMSNORM * qk, (2 * qk + 2 * (double)D->d) * D->ea, 0);
    if (m->position == MODEL_POS_ROPE)
        vec(l, "rope", FLOPS_ROPE * qk, 2 * qk * D->ea, 0);
    attention_fwd(D, l);
    base_fwd(l, D, "proj", "proj.dequant", T, q, h);
    lora_fwd(l, D, T_O, T_O);
    residual_op(l, D, "residual1");
    norm_op(l, m, D, "norm2", D->Tn, MODEL_PHASE_FWD);
}

static void layer_fwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    double f = (double)D->f_r, up = (double)D->up_r;

    layer_attn_fwd(m, D, l);
    base_fwd(l, D, "mlp_up", "mlp_up.dequant", T, h, up);
    lora_fwd(l, D, T_GATE, T_UP);
    act_fwd(l, D, "act", T * f);
    base_fwd(l, D, "mlp_down", "mlp_down.dequant", T, f, h);
    lora_fwd(l, D, T_DOWN, T_DOWN);
    residual_op(l, D, "residual2");
}

/* A layer's backward from its MLP's input gradient on (norm2.bwd ... norm1.bwd): shared by
 * the dense and the MoE layer. */
static void layer_attn_bwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    int64_t hi = D->h, qi = D->a_r * D->d, kvi = D->kv_r * D->d;
    double q = (double)qi, kv = (double)kvi;
    double qk = T * (q + kv);
    int64_t b = D->bias ? 1 : 0;

    norm_op(l, m, D, "norm2.bwd", D->Tn, MODEL_PHASE_BWD);
    residual_op(l, D, "residual1.bwd");
    base_bwd(l, D, "proj.dgrad", "proj.wgrad", "proj.dgrad.dequant", T, q, h,
             qi * hi + b * hi);
    lora_bwd(l, D, T_O, T_O);
    attention_bwd(D, l);
    if (m->position == MODEL_POS_ROPE)
        /* rotation by -theta: same traffic as forward */
        vec(l, "rope.bwd", FLOPS_ROPE * qk, 2 * qk * D->ea, 0);
    if (D->qk_norm)
        /* frozen (LoRA): reads the two d-weight vectors, writes no gradient for them */
        vec(l, "qk_norm.bwd", 2 * FLOPS_RMSNORM * qk,
            (3 * qk + (D->frozen ? 2 : 4) * (double)D->d) * D->ea, D->frozen ? 0 : 2 * D->d);
    base_bwd(l, D, "qkv.dgrad", "qkv.wgrad", "qkv.dgrad.dequant", T, h, q + 2 * kv,
             hi * (qi + 2 * kvi) + b * (qi + 2 * kvi));
    lora_bwd(l, D, T_Q, T_V);
    norm_op(l, m, D, "norm1.bwd", D->Tn, MODEL_PHASE_BWD);
}

static void layer_bwd(const model_spec *m, const dims *D, model_op_list *l)
{
    double T = D->T, h = (double)D->h;
    int64_t hi = D->h;
    double f = (double)D->f_r, up = (double)D->up_r;
    int64_t b = D->bias ? 1 : 0;

    residual_op(l, D, "residual2.bwd");
    /* Row-parallel biases (proj, mlp_down) are replicated over TP: h each; column-parallel
     * ones are split with their weight. */
    base_bwd(l, D, "mlp_down.dgrad", "mlp_down.wgrad", "mlp_down.dgrad.dequant", T, f, h,
             D->f_r * hi + b * hi);
    lora_bwd(l, D, T_DOWN, T_DOWN);
    act_bwd(l, D, "act.bwd", T * f);
    base_bwd(l, D, "mlp_up.dgrad", "mlp_up.wgrad", "mlp_up.dgrad.dequant", T, h, up,
             hi * D->up_r + b * D->up_r);
    lora_bwd(l, D, T_GATE, T_UP);
    layer_attn_bwd(m, D, l);
}

/* ---- mixture of experts ------------------------------------------------------------- */

/* Forward of a MoE layer. Every kernel outside the experts sees the rank's T tokens (after
 * the SP all-gather, like the dense MLP's GEMMs); expert e sees the tok_e rows routed to it
 * from the whole EP group. Expert and shared-expert biases (models with `bias`) are folded
 * into their GEMMs as in the dense MLP; the router has no bias. */
static void moe_fwd(const model_spec *m, const model_shape *sh, const dims *D,
                    model_op_list *l)
{
    double T = D->T, h = (double)D->h, E = (double)D->E, K = (double)D->K, ea = D->ea;
    double TK = T * K; /* (token, expert) assignments of this rank's tokens */

    layer_attn_fwd(m, D, l);
    /* Router logits (T x h) @ (h x E), replicated over TP. */
    gemm_fwd(l, D, "moe.router", T, h, E);
    /* Softmax over the E logits and top-K selection: reads the logits, writes the fp32
     * probabilities, the K chosen experts (int64, as torch.topk) and their fp32 weights. */
    vec(l, "moe.gate", (FLOPS_SOFTMAX + K) * T * E,
        T * E * (ea + FP32_BYTES) + TK * (TOKEN_ID_BYTES + FP32_BYTES), 0);
    /* Gathers each token's row once per chosen expert into expert order (the dispatch
     * send buffer): reads T rows and the indices, writes T·K rows. */
    vec(l, "moe.permute", 0, T * h * ea + TK * TOKEN_ID_BYTES + TK * h * ea, 0);
    for (int e = 0; e < (int)D->n_local; e++) {
        double tok = moe_tokens(sh, D, e);
        gemm_fwd(l, D, "moe.expert_up", tok, h, (double)D->upe_r);
        act_fwd(l, D, "moe.expert_act", tok * (double)D->fe_r);
        gemm_fwd(l, D, "moe.expert_down", tok, (double)D->fe_r, h);
    }
    /* Weighted sum of each token's K returned rows: reads the T·K rows and their weights,
     * writes T rows; a multiply-add per element. */
    vec(l, "moe.unpermute", 2 * TK * h, TK * h * ea + TK * FP32_BYTES + T * h * ea, 0);
    if (D->fs > 0) {
        /* Shared experts: one dense MLP of shared·f_e on all T tokens. Its down GEMM adds
         * into the routed output in its epilogue (beta = 1: reads T x h more). */
        double fs = (double)D->fs_r;
        gemm_fwd(l, D, "moe.shared_up", T, h, (double)D->ups_r);
        act_fwd(l, D, "moe.shared_act", T * fs);
        double fl = 2 * T * fs * h;
        push(l, "moe.shared_down", HW_OP_MATMUL, fl, fl,
             (T * fs + fs * h) * D->e + 2 * T * h * ea, 0);
    }
    residual_op(l, D, "residual2");
}

/* Backward of a MoE layer: the forward reversed, experts last-first. */
static void moe_bwd(const model_spec *m, const model_shape *sh, const dims *D,
                    model_op_list *l)
{
    double T = D->T, h = (double)D->h, E = (double)D->E, K = (double)D->K, ea = D->ea;
    double TK = T * K;
    int64_t hi = D->h, b = D->bias ? 1 : 0;

    residual_op(l, D, "residual2.bwd");
    if (D->fs > 0) {
        double fs = (double)D->fs_r;
        gemm_bwd(l, D, "moe.shared_down.dgrad", "moe.shared_down.wgrad", T, fs, h,
                 D->fs_r * hi + b * hi);
        act_bwd(l, D, "moe.shared_act.bwd", T * fs);
        gemm_bwd(l, D, "moe.shared_up.dgrad", "moe.shared_up.wgrad", T, h,
                 (double)D->ups_r, hi * D->ups_r + b * D->ups_r);
    }
    /* d(row k of token i) = w_ik · dY_i and dw_ik = <dY_i, row k>: reads dY, the kept
     * returned rows and the weights; writes the rows' gradient and the weights'. */
    vec(l, "moe.unpermute.bwd", 3 * TK * h,
        T * h * ea + 2 * TK * h * ea + 2 * TK * FP32_BYTES, 0);
    for (int e = (int)D->n_local - 1; e >= 0; e--) {
        double tok = moe_tokens(sh, D, e);
        gemm_bwd(l, D, "moe.expert_down.dgrad", "moe.expert_down.wgrad", tok,
                 (double)D->fe_r, h, D->fe_r * hi + b * hi);
        act_bwd(l, D, "moe.expert_act.bwd", tok * (double)D->fe_r);
        gemm_bwd(l, D, "moe.expert_up.dgrad", "moe.expert_up.wgrad", tok, h,
                 (double)D->upe_r, hi * D->upe_r + b * D->upe_r);
    }
    /* Scatter-add of the T·K row gradients back to their T tokens; with shared experts it
     * adds onto their dgrad's output (reads it as well). */
    vec(l, "moe.permute.bwd", TK * h,
        TK * h * ea + TK * TOKEN_ID_BYTES + (D->fs > 0 ? 2 : 1) * T * h * ea, 0);
    /* Softmax backward through the top-K selection: reads the weights' gradient with the
     * indices and the fp32 probabilities, writes the logits' gradient. */
    vec(l, "moe.gate.bwd", 2 * FLOPS_SOFTMAX * T * E,
        TK * (FP32_BYTES + TOKEN_ID_BYTES) + T * E * (FP32_BYTES + ea), 0);
    /* The router's input gradient adds into the tokens' (beta = 1); its weight gradient is
     * the whole h x E matrix on every TP rank, as a replicated norm's. */
    gemm_dgrad(l, D, "moe.router.dgrad", T, h, E, true);
    gemm_wgrad(l, D, "moe.router.wgrad", T, h, E, hi * D->E);
    layer_attn_bwd(m, D, l);
}

/* Softmax cross-entropy on the T x V/t logits, as Megatron's (unfused) vocab-parallel cross
 * entropy computes it: the logits are cast to fp32, one pass gathers the max and the sum of
 * exponentials, one pass writes the normalised softmax that backward needs. */
static void head_ops(const model_spec *m, const dims *D, model_phase ph, model_op_list *l)
{
    double T = D->T, h = (double)D->h, V = (double)D->v_r;
    double X = T * V;
    int64_t head_grads = D->tied ? 0 : D->v_r * D->h;
    if (ph == MODEL_PHASE_FWD) {
        norm_op(l, m, D, "final_norm", D->Tn, MODEL_PHASE_FWD);
        gemm_fwd(l, D, "lm_head", T, h, V);
        vec(l, "loss", FLOPS_SOFTMAX * X, X * (D->ea + 4 * FP32_BYTES), 0);
        return;
    }
    /* dlogits = softmax - onehot: reads the fp32 softmax, writes the gradient. The LM head
     * is never quantised (bitsandbytes keeps the output layer in 16 bits), and under LoRA
     * it is frozen: dgrad only. */
    vec(l, "loss.bwd", 2 * X, X * (FP32_BYTES + D->ea), 0);
    gemm_dgrad(l, D, "lm_head.dgrad", T, h, V, false);
    if (!D->frozen)
        gemm_wgrad(l, D, "lm_head.wgrad", T, h, V, head_grads);
    norm_op(l, m, D, "final_norm.bwd", D->Tn, MODEL_PHASE_BWD);
}

void model_block_ops(const model_spec *m, const model_shape *sh, model_block blk,
                     model_phase phase, model_op_list *out)
{
    dims D;
    if (blk == MODEL_BLOCK_MOE)
        moe_dims(m, sh, &D);
    else
        shape_dims(m, sh, &D);
    out->n = 0;
    switch (blk) {
    case MODEL_BLOCK_EMBED: embed_ops(&D, phase, out); break;
    case MODEL_BLOCK_MOE:
        if (phase == MODEL_PHASE_FWD)
            moe_fwd(m, sh, &D, out);
        else
            moe_bwd(m, sh, &D, out);
        break;
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

/* A layer without its MLP: norms, qkv, q/k norms, proj. */
static int64_t attn_part_params(const dims *D)
{
    int64_t h = D->h, q = D->heads * D->d, kv = D->kv_heads * D->d;
    int64_t b = D->bias ? 1 : 0;
    return 2 * D->norm_params                     /* norm1, norm2 */
           + h * (q + 2 * kv) + b * (q + 2 * kv)  /* qkv */
           + (D->qk_norm ? 2 * D->d : 0)          /* q_norm, k_norm */
           + q * h + b * h;                       /* proj */
}

/* An MLP of width f: up (gate + up with SwiGLU) and down, with their biases. */
static int64_t mlp_params(const dims *D, int64_t f)
{
    int64_t h = D->h, up = D->swiglu ? 2 * f : f, b = D->bias ? 1 : 0;
    return h * up + b * up + f * h + b * h;
}

void model_count_moe_params(const model_spec *m, int64_t *dense_part_per_moe_layer,
                            int64_t *per_expert, int64_t *router, int64_t *shared)
{
    dims D;
    spec_dims(m, &D);
    if (dense_part_per_moe_layer)
        *dense_part_per_moe_layer = attn_part_params(&D);
    if (per_expert)
        *per_expert = D.E > 0 ? mlp_params(&D, D.fe) : 0;
    if (router)
        *router = D.h * D.E;
    if (shared)
        *shared = D.fs > 0 ? mlp_params(&D, D.fs) : 0;
}

void model_count_params(const model_spec *m, model_params *out)
{
    dims D;
    spec_dims(m, &D);
    int64_t h = D.h;
    out->embedding = D.vocab * h + D.pos_rows * h;
    out->per_layer = attn_part_params(&D) + mlp_params(&D, D.ffn);
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
    spec_dims(m, &D);
    *per_layer_out = 0;
    if (ft->method == MODEL_FT_FULL)
        return;
    SIM_ASSERT(ft->rank > 0, "LoRA rank %d not validated", ft->rank);
    int64_t r = ft->rank;
    for (int i = 0; i < N_TARGETS; i++) {
        if (!has_target(&D, ft->targets, i))
            continue;
        int64_t in, out;
        target_shape(&D, i, D.heads * D.d, D.kv_heads * D.d, D.ffn, &in, &out);
        *per_layer_out += r * (in + out);
    }
}

int64_t model_layer_matrix_params(const model_spec *m)
{
    dims D;
    spec_dims(m, &D);
    int64_t q = D.heads * D.d, kv = D.kv_heads * D.d;
    int64_t up = D.swiglu ? 2 * D.ffn : D.ffn;
    return D.h * (q + 2 * kv) + q * D.h + D.h * up + D.ffn * D.h;
}

/* NF4 (Dettmers et al. 2023 §3): 4 bits per weight, blocks of 64 weights. Their absmax
 * constants are double-quantised: 8-bit per block, plus one fp32 second-level constant per
 * 256 blocks, so 8/64 + 32/(64*256) = 0.126953125 bits per weight (the paper's "0.127").
 * In bytes: 1/2 + 1/64 + 1/4096 = 2113/4096, exact in binary. */
double model_qlora_weight_bytes(void)
{
    return 0.5 + 8.0 / (64 * 8) + 32.0 / (64.0 * 256 * 8);
}

/* ---- activations --------------------------------------------------------------------- */

/* What a layer keeps up to its MLP's input: the attention block and norm2's input. Not for
 * full recompute. */
static double attn_activation_bytes(const dims *D, model_recompute rc)
{
    double T = D->T, h = (double)D->h, ea = D->ea;
    double q = (double)(D->a_r * D->d), kv = (double)(D->kv_r * D->d);
    double Tn_h = D->Tn * h; /* one token-by-hidden tensor of a replicated (or SP) kernel */
    double x = 0;
    /* attention block */
    x += ea * Tn_h;                /* norm1 input */
    x += ea * Tn_h;                /* QKV GEMM input (SP keeps the shard, re-gathers) */
    x += ea * T * (q + 2 * kv);    /* Q, K (after RoPE) and V: attention inputs */
    if (D->qk_norm)
        x += ea * T * (q + kv);    /* q_norm/k_norm inputs */
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
    if (D->dropout)
        x += Tn_h;                 /* residual dropout mask, 1 byte */
    x += ea * Tn_h;                /* norm2 input */
    return x;
}

/* An MLP's intermediates on `tokens` rows of width f (per rank): SwiGLU keeps gate and up
 * (the activation's inputs) and the down GEMM's input; GELU its input and the down input. */
static double mlp_activation_bytes(const dims *D, double tokens, double f)
{
    return D->ea * tokens * (D->swiglu ? 3 * f : 2 * f);
}

double model_layer_activation_bytes(const model_spec *m, const model_shape *sh,
                                    model_recompute rc)
{
    dims D;
    shape_dims(m, sh, &D);
    double T = D.T, h = (double)D.h, ea = D.ea, f = (double)D.f_r;
    double Tn_h = D.Tn * h;

    if (rc == MODEL_RECOMPUTE_FULL)
        return ea * Tn_h; /* only the layer input (sequence-sharded with SP) */

    double x = 0;
    /* attention block, norm2 input */
    x += attn_activation_bytes(&D, rc);
    /* MLP block */
    x += ea * Tn_h;                /* mlp_up input */
    x += mlp_activation_bytes(&D, T, f); /* gate and up or GELU input; down input */
    if (D.dropout)
        x += Tn_h;                 /* residual dropout mask */
    /* LoRA: each adapter's input is the base GEMM's input, kept above; B's wgrad needs the
     * r-wide x A, one per target (replicated over TP: A or B is whole on every rank). The
     * QLoRA dequantised weights are transient, not kept. */
    for (int i = 0; i < N_TARGETS; i++)
        if (has_target(&D, D.targets, i))
            x += ea * T * (double)D.r;
    return x;
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
    if (local_tokens < 0) {
        local_tokens = 0;
        for (int e = 0; e < (int)D.n_local; e++)
            local_tokens += moe_tokens(sh, &D, e);
    }

    double x = 0;
    /* attention block, norm2 input */
    x += attn_activation_bytes(&D, rc);
    /* router, gate, permutation */
    x += ea * Tn_h;                     /* router input = norm2 output (also the permute's and
                                           the shared experts' input; SP: shard, re-gathered) */
    x += FP32_BYTES * T * (double)D.E;  /* fp32 router probabilities: softmax backward */
    x += T * K * (TOKEN_ID_BYTES + FP32_BYTES); /* chosen experts and their weights */
    x += ea * T * K * h;                /* returned expert rows: the weights' gradient */
    /* this rank's experts: each dispatched row's input (up wgrad) and its intermediates */
    x += ea * h * local_tokens;
    x += mlp_activation_bytes(&D, local_tokens, (double)D.fe_r);
    /* shared experts: a dense MLP of shared·f_e on the T tokens */
    if (D.fs > 0)
        x += mlp_activation_bytes(&D, T, (double)D.fs_r);
    if (D.dropout)
        x += Tn_h;                      /* residual dropout mask */
    return x;
}

double model_embed_activation_bytes(const model_spec *m, const model_shape *sh)
{
    dims D;
    shape_dims(m, sh, &D);
    /* The gather's backward needs only the token ids; embedding dropout keeps its mask. A
     * frozen embedding has no backward. */
    if (D.frozen)
        return 0;
    return TOKEN_ID_BYTES * D.T + (D.dropout ? D.Tn * (double)D.h : 0);
}

double model_head_activation_bytes(const model_spec *m, const model_shape *sh)
{
    dims D;
    shape_dims(m, sh, &D);
    /* final-norm input, LM-head input (sequence-sharded with SP), and the fp32 softmax of
     * the logits that the cross-entropy backward reads */
    return 2 * D.ea * D.Tn * (double)D.h + FP32_BYTES * D.T * (double)D.v_r;
}
