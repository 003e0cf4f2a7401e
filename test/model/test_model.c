/* Unit test of the transformer model (sim/model/model.c): exact parameter counts of
 * published models, per-GEMM shapes, model FLOPs against Korthikanti et al. 2022 App. A and
 * Narayanan et al. 2021 Eq. 3, gradient accounting, and activation bytes against
 * Korthikanti et al. 2022 Table 2 (test/validation/data/activation_memory.md) and its
 * generalisation to flash attention, GQA, SwiGLU and qk-norm (docs/models.md); LoRA
 * (Hu et al. 2021) and QLoRA (Dettmers et al. 2023) adapters, frozen bases and NF4 storage;
 * mixture-of-experts layers (Mixtral 8x7B, Jiang et al. 2024; Qwen3-30B-A3B): parameter
 * counts, kernels, FLOPs under uniform and skewed routing, gradients under EP, activations;
 * multi-head latent attention (DeepSeek-V3 technical report, arXiv:2412.19437: 671B total,
 * 37B activated): projections, TP split, gradients, LoRA, activations. */
#include "core/sim.h"

#include "model/model.h"
#include "test.h"

/* ---- published configurations ---------------------------------------------------------- */

/* meta-llama/Llama-3.1-8B config.json: hidden 4096, intermediate 14336, 32 layers, 32 heads,
 * 8 KV heads, vocab 128256, untied, RMSNorm, RoPE, no biases. */
static model_spec llama31_8b(void)
{
    return (model_spec){.name = "llama3.1-8b", .layers = 32, .hidden = 4096, .heads = 32,
                        .kv_heads = 8, .head_dim = 128, .ffn = 14336, .vocab = 128256,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE};
}

/* Qwen/Qwen3-4B config.json: hidden 2560, intermediate 9728, 36 layers, 32 heads of 128,
 * 8 KV heads, vocab 151936, tied embeddings, q_norm/k_norm per head. */
static model_spec qwen3_4b(void)
{
    return (model_spec){.name = "qwen3-4b", .layers = 36, .hidden = 2560, .heads = 32,
                        .kv_heads = 8, .head_dim = 128, .ffn = 9728, .vocab = 151936,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE, .tied_embeddings = true,
                        .qk_norm = true};
}

/* A Megatron GPT (GPT-3 family, Brown et al. 2020 Table 2.1): GELU MLP of 4h, LayerNorm,
 * learned positions, biases everywhere, tied embeddings, dropout 0.1. */
static model_spec gpt(int layers, int hidden, int heads, int64_t vocab, int max_seq)
{
    return (model_spec){.name = "gpt", .layers = layers, .hidden = hidden, .heads = heads,
                        .kv_heads = heads, .head_dim = hidden / heads, .ffn = 4 * hidden,
                        .vocab = vocab, .activation = MODEL_ACT_GELU,
                        .norm = MODEL_NORM_LAYERNORM, .position = MODEL_POS_LEARNED,
                        .dropout = 0.1, .tied_embeddings = true, .max_seq_len = max_seq,
                        .bias = true};
}

/* mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, intermediate 14336, 32 layers, 32
 * heads of 128, 8 KV heads, vocab 32000, untied, RMSNorm, RoPE, 8 local experts, 2 per
 * token, no biases; every layer is MoE. The dense ffn (the loader requires one) is the
 * expert's. */
static model_spec mixtral_8x7b(void)
{
    return (model_spec){.name = "mixtral-8x7b", .layers = 32, .hidden = 4096, .heads = 32,
                        .kv_heads = 8, .head_dim = 128, .ffn = 14336, .vocab = 32000,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE,
                        .moe = {.experts = 8, .top_k = 2, .expert_ffn = 14336}};
}

/* Qwen/Qwen3-30B-A3B config.json: hidden 2048, 48 layers, 32 heads of 128, 4 KV heads, vocab
 * 151936, untied, qk-norm, 128 experts of moe_intermediate_size 768, 8 per token (the dense
 * intermediate_size 6144 is unused: every layer is MoE). */
static model_spec qwen3_30b_a3b(void)
{
    return (model_spec){.name = "qwen3-30b-a3b", .layers = 48, .hidden = 2048, .heads = 32,
                        .kv_heads = 4, .head_dim = 128, .ffn = 6144, .vocab = 151936,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE, .qk_norm = true,
                        .moe = {.experts = 128, .top_k = 8, .expert_ffn = 768}};
}

static model_shape shape(int64_t b, int64_t s, int tp, bool sp, bool flash)
{
    return (model_shape){.micro_batch = b, .seq_len = s, .tp = tp, .sp = sp,
                         .dtype = HW_DTYPE_BF16, .flash_attention = flash};
}

static const model_op *find(const model_op_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->op[i].name, name) == 0)
            return &l->op[i];
    fprintf(stderr, "op %s not found\n", name);
    return NULL;
}

/* Sums over one micro-batch's forward and backward of every block. */
typedef struct totals {
    double model_flops, flops;
    double matmul_flops; /* executed FLOPs of the matmul-class kernels only */
    int64_t grad_params;
    double layer_fwd_model_flops;
} totals;

static void add_block(const model_spec *m, const model_shape *sh, model_block blk,
                      model_phase ph, double times, totals *t)
{
    model_op_list l;
    model_block_ops(m, sh, blk, ph, &l);
    for (int i = 0; i < l.n; i++) {
        t->model_flops += times * l.op[i].model_flops;
        t->flops += times * l.op[i].flops;
        if (l.op[i].cls != HW_OP_VECTOR) /* GEMMs and attention */
            t->matmul_flops += times * l.op[i].flops;
        t->grad_params += (int64_t)times * l.op[i].grad_params;
        if (blk == MODEL_BLOCK_LAYER && ph == MODEL_PHASE_FWD)
            t->layer_fwd_model_flops += l.op[i].model_flops;
        /* vector kernels never count toward model FLOPs */
        if (l.op[i].cls == HW_OP_VECTOR)
            CHECK(l.op[i].model_flops == 0);
        /* only backward kernels produce gradients */
        if (ph == MODEL_PHASE_FWD)
            CHECK_INT_EQ(l.op[i].grad_params, 0);
    }
}

static totals step_totals(const model_spec *m, const model_shape *sh)
{
    totals t = {0};
    for (int ph = MODEL_PHASE_FWD; ph <= MODEL_PHASE_BWD; ph++) {
        add_block(m, sh, MODEL_BLOCK_EMBED, (model_phase)ph, 1, &t);
        add_block(m, sh, MODEL_BLOCK_LAYER, (model_phase)ph, m->layers, &t);
        add_block(m, sh, MODEL_BLOCK_HEAD, (model_phase)ph, 1, &t);
    }
    return t;
}

/* ---- parameters --------------------------------------------------------------------------- */

static void test_params(void)
{
    model_params p;

    /* Llama-3.1-8B. Embedding 128256 x 4096 = 525,336,576 (and the same again for the
     * untied LM head). Per layer: q 4096 x 4096 = 16,777,216; k and v 2 x 4096 x 1024 =
     * 8,388,608; o 16,777,216; MLP 3 x 4096 x 14336 = 176,160,768; two RMSNorm weights
     * 8,192: 218,112,000. Total 2 x 525,336,576 + 32 x 218,112,000 + 4,096 (final norm)
     * = 8,030,261,248, the count Meta publishes for the checkpoint. */
    model_spec m = llama31_8b();
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.embedding, 525336576);
    CHECK_INT_EQ(p.head, 525336576);
    CHECK_INT_EQ(p.per_layer, 218112000);
    CHECK_INT_EQ(p.final_norm, 4096);
    CHECK_INT_EQ(p.total, INT64_C(8030261248));

    /* Llama-3.1-70B (hidden 8192, ffn 28672, 80 layers, 64 heads, 8 KV): per layer
     * 2 x 8192 x 8192 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 2 x 8192 = 855,654,400;
     * total 2 x 128256 x 8192 + 80 x 855,654,400 + 8192 = 70,553,706,496. */
    m.layers = 80, m.hidden = 8192, m.heads = 64, m.ffn = 28672;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, 855654400);
    CHECK_INT_EQ(p.total, INT64_C(70553706496));

    /* Llama-3.1-405B (hidden 16384, ffn 53248, 126 layers, 128 heads, 8 KV): per layer
     * 2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 + 2 x 16384 = 3,187,703,808;
     * total 2 x 128256 x 16384 + 126 x 3,187,703,808 + 16384 = 405,853,388,800. */
    m.layers = 126, m.hidden = 16384, m.heads = 128, m.ffn = 53248;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, INT64_C(3187703808));
    CHECK_INT_EQ(p.total, INT64_C(405853388800));

    /* Qwen3-4B (tied). Embedding 151936 x 2560 = 388,956,160, no separate head. Per layer:
     * q 2560 x 4096 = 10,485,760; k, v 2 x 2560 x 1024 = 5,242,880; o 4096 x 2560 =
     * 10,485,760; MLP 3 x 2560 x 9728 = 74,711,040; norms 2 x 2560 = 5,120; q_norm and
     * k_norm 2 x 128 = 256: 100,930,816. Total 388,956,160 + 36 x 100,930,816 + 2,560 =
     * 4,022,468,096 (the model card's "4.0B", 3.6B of it non-embedding). */
    m = qwen3_4b();
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.embedding, 388956160);
    CHECK_INT_EQ(p.head, 0);
    CHECK_INT_EQ(p.per_layer, 100930816);
    CHECK_INT_EQ(p.total, INT64_C(4022468096));
    /* without qk-norm, 36 x 256 = 9,216 fewer */
    m.qk_norm = false;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.total, INT64_C(4022458880));

    /* Qwen3-0.6B (hidden 1024, ffn 3072, 28 layers, 16 heads of 128, 8 KV, tied): per layer
     * 1024 x 2048 + 2 x 1024 x 1024 + 2048 x 1024 + 3 x 1024 x 3072 + 2 x 1024 + 256
     * = 15,730,944; total 151936 x 1024 + 28 x 15,730,944 + 1024 = 596,049,920. */
    m = qwen3_4b();
    m.layers = 28, m.hidden = 1024, m.heads = 16, m.ffn = 3072;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.total, 596049920);

    /* GPT-3 175B (96 layers, h 12288, 96 heads, vocab 50257, 2048 learned positions,
     * LayerNorm and linear biases, tied). Embedding (50257 + 2048) x 12288 = 642,723,840.
     * Per layer 12h^2 + 13h (qkv 3h^2 + 3h, proj h^2 + h, MLP 8h^2 + 5h, two LayerNorms
     * 4h) = 1,812,099,072. Total 642,723,840 + 96 x 1,812,099,072 + 2h = 174,604,259,328,
     * the "175B" of Brown et al. 2020. */
    m = gpt(96, 12288, 96, 50257, 2048);
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.embedding, 642723840);
    CHECK_INT_EQ(p.per_layer, INT64_C(1812099072));
    CHECK_INT_EQ(p.final_norm, 24576);
    CHECK_INT_EQ(p.head, 0);
    CHECK_INT_EQ(p.total, INT64_C(174604259328));

    /* Defaults: kv_heads 0 = heads, head_dim 0 = hidden / heads (an MHA GPT without
     * biases): per layer 12h^2 + 4h. h = 1024: 12,582,912 + 4,096 = 12,587,008. */
    m = gpt(2, 1024, 16, 1000, 128);
    m.kv_heads = 0, m.head_dim = 0, m.bias = false;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, 12587008);
}

/* ---- kernels ------------------------------------------------------------------------------ */

static void test_llama_gemms(void)
{
    /* b = 2, s = 4096: T = 8192 tokens. */
    model_spec m = llama31_8b();
    model_shape sh = shape(2, 4096, 1, false, true);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);

    /* Execution order of a Llama layer (no qk-norm, no dropout, flash attention). */
    static const char *const fwd[] = {"norm1", "qkv", "rope", "attn", "proj", "residual1",
                                      "norm2", "mlp_up", "act", "mlp_down", "residual2"};
    CHECK_INT_EQ(l.n, (int)SIM_ARRAY_LEN(fwd));
    for (int i = 0; i < l.n && i < (int)SIM_ARRAY_LEN(fwd); i++)
        CHECK_STR_EQ(l.op[i].name, fwd[i]);

    /* qkv: (T x 4096) @ (4096 x (4096 + 2 x 1024)): 2 x 8192 x 4096 x 6144 =
     * 412,316,860,416 FLOPs; bytes (8192 x 4096 + 4096 x 6144 + 8192 x 6144) x 2
     * = 218,103,808. */
    const model_op *op = find(&l, "qkv");
    CHECK_NEAR(op->flops, 2.0 * 8192 * 4096 * (4096 + 2 * 1024), 0, 0);
    CHECK_NEAR(op->flops, 412316860416.0, 0, 0);
    CHECK_NEAR(op->model_flops, op->flops, 0, 0);
    CHECK_NEAR(op->bytes, 218103808.0, 0, 0);
    CHECK(op->cls == HW_OP_MATMUL);
    /* proj 2 x 8192 x 4096 x 4096; mlp_up (gate and up fused) 2 x 8192 x 4096 x 28672;
     * mlp_down 2 x 8192 x 14336 x 4096 */
    CHECK_NEAR(find(&l, "proj")->flops, 274877906944.0, 0, 0);
    CHECK_NEAR(find(&l, "mlp_up")->flops, 1924145348608.0, 0, 0);
    CHECK_NEAR(find(&l, "mlp_down")->flops, 962072674304.0, 0, 0);
    /* Inner dimensions (what the GPU's per-tile overhead is charged against): a forward
     * GEMM X (m x k) @ W (k x n) reduces over k, the hidden size 4096 for qkv and mlp_up,
     * the FFN width 14336 for mlp_down; vector ops have none. */
    CHECK_NEAR(op->inner, 4096, 0, 0);
    CHECK_NEAR(find(&l, "mlp_down")->inner, 14336, 0, 0);
    CHECK_NEAR(find(&l, "norm1")->inner, 0, 0, 0);
    /* Causal flash attention executes half of 4 b s^2 (heads x head_dim) =
     * 2 x 2 x 4096^2 x 4096 = 274,877,906,944 FLOPs; model FLOPs count the full
     * 549,755,813,888. */
    op = find(&l, "attn");
    CHECK_NEAR(op->flops, 274877906944.0, 0, 0);
    CHECK_NEAR(op->model_flops, 549755813888.0, 0, 0);
    CHECK(op->attn_core);
    CHECK(op->cls == HW_OP_ATTN_FWD); /* timed by the catalog's attention table */
    CHECK(!find(&l, "qkv")->attn_core);
    /* SwiGLU reads gate and up (2 x T x 14336) and writes T x 14336, 2 bytes each:
     * 3 x 8192 x 14336 x 2 = 704,643,072 bytes; 6 FLOPs per output element. */
    op = find(&l, "act");
    CHECK(op->cls == HW_OP_VECTOR);
    CHECK_NEAR(op->bytes, 704643072.0, 0, 0);
    CHECK_NEAR(op->flops, 6.0 * 8192 * 14336, 0, 0);
    /* RMSNorm over T x 4096: reads x and 4096 weights, writes y: (2 x 8192 x 4096 + 4096)
     * x 2 = 134,225,920 bytes. */
    CHECK_NEAR(find(&l, "norm1")->bytes, 134225920.0, 0, 0);

    /* Backward: each GEMM is dgrad then wgrad with the forward's FLOPs; the wgrad carries
     * its weight's parameters (qkv: 4096 x 6144 = 25,165,824). */
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    static const char *const bwd[] = {
        "residual2.bwd", "mlp_down.dgrad", "mlp_down.wgrad", "act.bwd", "mlp_up.dgrad",
        "mlp_up.wgrad", "norm2.bwd", "residual1.bwd", "proj.dgrad", "proj.wgrad",
        "attn.bwd", "rope.bwd", "qkv.dgrad", "qkv.wgrad", "norm1.bwd"};
    CHECK_INT_EQ(l.n, (int)SIM_ARRAY_LEN(bwd));
    for (int i = 0; i < l.n && i < (int)SIM_ARRAY_LEN(bwd); i++)
        CHECK_STR_EQ(l.op[i].name, bwd[i]);
    CHECK_NEAR(find(&l, "qkv.dgrad")->flops, 412316860416.0, 0, 0);
    CHECK_NEAR(find(&l, "qkv.wgrad")->model_flops, 412316860416.0, 0, 0);
    CHECK_INT_EQ(find(&l, "qkv.wgrad")->grad_params, 25165824);
    CHECK_INT_EQ(find(&l, "qkv.dgrad")->grad_params, 0);
    CHECK_INT_EQ(find(&l, "norm1.bwd")->grad_params, 4096);
    /* dX = dY @ W^T reduces over the forward's n (qkv: 4096 + 2 x 1024 = 6144), dW = X^T @ dY
     * over the tokens m (T = 8192). */
    CHECK_NEAR(find(&l, "qkv.dgrad")->inner, 6144, 0, 0);
    CHECK_NEAR(find(&l, "qkv.wgrad")->inner, 8192, 0, 0);
    /* FlashAttention-2 backward: 2.5 x the executed forward (5 matmuls vs 2) =
     * 687,194,767,360 FLOPs; model FLOPs 2 x the full forward = 1,099,511,627,776. */
    op = find(&l, "attn.bwd");
    CHECK_NEAR(op->flops, 687194767360.0, 0, 0);
    CHECK_NEAR(op->model_flops, 1099511627776.0, 0, 0);
    CHECK(op->attn_core);
    CHECK(op->cls == HW_OP_ATTN_BWD);

    /* LM head: (T x 4096) @ (4096 x 128256) = 8,607,114,461,184 FLOPs; its wgrad carries
     * the untied head's 525,336,576 parameters. The loss, as Megatron's unfused
     * vocab-parallel cross entropy runs it, passes over the T x 128256 logits six times
     * forward: cast to fp32 (read 2, write 4), max (read 4), subtract (read 4, write 4), exp
     * (read 4, write 4), sum (read 4), divide (read 4, write 4) = 38 bytes per logit; backward
     * times the incoming gradient in place (read 4, write 4) and casts back to bf16 (read 4,
     * write 2) = 14. */
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "lm_head")->flops, 8607114461184.0, 0, 0);
    CHECK_NEAR(find(&l, "loss")->bytes, 8192.0 * 128256 * 38, 0, 0);
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "loss.bwd")->bytes, 8192.0 * 128256 * 14, 0, 0);
    CHECK_INT_EQ(find(&l, "lm_head.wgrad")->grad_params, 525336576);
    CHECK_NEAR(find(&l, "lm_head.dgrad")->model_flops, 8607114461184.0, 0, 0);
    /* Compiled (torch.compile's F.cross_entropy(logits.float())): two reductions over the
     * bf16 logits forward (read 2 each) = 4 bytes per logit; backward one kernel reading the
     * logits and writing the bf16 gradient = 4. The FLOPs do not change. */
    double loss_flops = find(&l, "loss.bwd")->flops;
    sh.fused_loss = true;
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "loss")->bytes, 8192.0 * 128256 * 4, 0, 0);
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "loss.bwd")->bytes, 8192.0 * 128256 * 4, 0, 0);
    CHECK_NEAR(find(&l, "loss.bwd")->flops, loss_flops, 0, 0);
    sh.fused_loss = false;
    /* Embedding: gathers have no FLOPs; its backward carries the table's gradients. */
    model_block_ops(&m, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 1);
    CHECK_NEAR(l.op[0].model_flops, 0, 0, 0);
    model_block_ops(&m, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(find(&l, "embed.wgrad")->grad_params, 525336576);

    /* Tensor parallel t = 2: each rank has 16 query and 4 KV heads, so qkv has
     * (16 + 2 x 4) x 128 = 3072 columns: half the FLOPs; the row-parallel proj has a
     * 2048-deep input: half as well. */
    sh.tp = 2;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv")->flops, 412316860416.0 / 2, 0, 0);
    CHECK_NEAR(find(&l, "proj")->flops, 274877906944.0 / 2, 0, 0);
    CHECK_NEAR(find(&l, "attn")->flops, 274877906944.0 / 2, 0, 0);
    /* Norms are replicated without SP (T x h each) and split by t with SP. */
    CHECK_NEAR(find(&l, "norm1")->bytes, 134225920.0, 0, 0);
    sh.sp = true;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    /* (2 x 4096 x 4096 + 4096) x 2 = 67,117,056 */
    CHECK_NEAR(find(&l, "norm1")->bytes, 67117056.0, 0, 0);
    /* the GEMMs still see all T tokens (after the SP all-gather) */
    CHECK_NEAR(find(&l, "qkv")->flops, 412316860416.0 / 2, 0, 0);
}

static void test_unfused_attention(void)
{
    /* Without flash attention the scores are computed for the full s x s and a separate
     * softmax reads and writes b x heads x s^2 elements. b = 1, s = 1024, Llama-8B heads:
     * S = 32 x 1024^2 = 33,554,432 elements; each matmul 2 x 1024^2 x 4096 =
     * 8,589,934,592 FLOPs, executed in full. */
    model_spec m = llama31_8b();
    model_shape sh = shape(1, 1024, 1, false, false);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    const model_op *sc = find(&l, "attn.scores"), *sm = find(&l, "attn.softmax"),
                   *cx = find(&l, "attn.context");
    CHECK_NEAR(sc->flops, 8589934592.0, 0, 0);
    CHECK_NEAR(sc->model_flops, 8589934592.0, 0, 0);
    CHECK_NEAR(cx->flops, 8589934592.0, 0, 0);
    CHECK(sm->cls == HW_OP_VECTOR);
    /* no dropout: reads and writes S elements of 2 bytes */
    CHECK_NEAR(sm->bytes, 2.0 * 33554432 * 2, 0, 0);
    CHECK(sc->attn_core && sm->attn_core && cx->attn_core);
    CHECK(find(&l, "rope") + 1 == sc);
    CHECK(cx + 1 == find(&l, "proj"));
    /* QK^T reduces over the head dim (128), PV over the s = 1024 keys. */
    CHECK_NEAR(sc->inner, 128, 0, 0);
    CHECK_NEAR(cx->inner, 1024, 0, 0);
    /* backward: 2 x forward, dP/dV then softmax then dQ/dK */
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "attn.context.bwd")->flops, 2 * 8589934592.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.scores.bwd")->model_flops, 2 * 8589934592.0, 0, 0);
    CHECK(find(&l, "attn.context.bwd") + 1 == find(&l, "attn.softmax.bwd"));
    CHECK(find(&l, "attn.softmax.bwd") + 1 == find(&l, "attn.scores.bwd"));
    CHECK(find(&l, "attn.dropout.bwd") == NULL);
    /* dP = dO V^T over the value dim (128) and dV = P^T dO over the 1024 queries: one kernel
     * of two equal products, timed as their harmonic mean 2 / (1/128 + 1/1024) = 227.56
     * (each product's (1 + k0/k) summed); dQ = dS K and dK = dS^T Q both over 1024. */
    CHECK_NEAR(find(&l, "attn.context.bwd")->inner, 2048.0 / 9, 1e-12, 0);
    CHECK_NEAR(find(&l, "attn.scores.bwd")->inner, 1024, 1e-12, 0);

    /* With dropout (Megatron 2021's GPT) the probabilities go through torch's dropout as a
     * kernel of its own: it reads P (2 bytes), writes the dropped copy (2) and a 1-byte
     * mask: 5 x 33,554,432 = 167,772,160 bytes; 2 FLOPs per element. The softmax keeps its
     * 4 bytes per element. Backward: dP = dP' * mask / (1 - p) reads dP' and the mask and
     * writes dP (5 bytes per element again), between dP' and the softmax backward, which
     * reads P and dP and writes dS (6 bytes per element). */
    m.dropout = 0.1;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    const model_op *dr = find(&l, "attn.dropout");
    CHECK(dr != NULL && dr->cls == HW_OP_VECTOR && dr->attn_core);
    CHECK_NEAR(dr->bytes, 167772160.0, 0, 0);
    CHECK_NEAR(dr->flops, 2.0 * 33554432, 0, 0);
    CHECK_NEAR(find(&l, "attn.softmax")->bytes, 4.0 * 33554432, 0, 0);
    CHECK(find(&l, "attn.softmax") + 1 == dr && dr + 1 == find(&l, "attn.context"));
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    dr = find(&l, "attn.dropout.bwd");
    CHECK(dr != NULL && dr->attn_core);
    CHECK_NEAR(dr->bytes, 167772160.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.softmax.bwd")->bytes, 6.0 * 33554432, 0, 0);
    CHECK(find(&l, "attn.context.bwd") + 1 == dr && dr + 1 == find(&l, "attn.softmax.bwd"));

    /* ALiBi (BLOOM's Megatron-DeepSpeed: the bias is baddbmm's input, beta = 1): a copy
     * writes the bias into the S-element scores buffer, 2 x 33,554,432 = 67,108,864 bytes,
     * just before QK^T, which reads the buffer back: its bytes grow by the same 67,108,864
     * and its FLOPs do not change. No rotary kernel, no parameter, nothing in backward. */
    double scores_bytes = find(&l, "attn.scores.bwd")->bytes;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    double plain = find(&l, "attn.scores")->bytes;
    model_params before, after;
    model_count_params(&m, &before);
    m.position = MODEL_POS_ALIBI;
    model_count_params(&m, &after);
    CHECK_INT_EQ(after.total, before.total);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    const model_op *al = find(&l, "attn.alibi");
    CHECK(al != NULL && al->cls == HW_OP_VECTOR && al->attn_core);
    CHECK_NEAR(al->bytes, 67108864.0, 0, 0);
    CHECK(al + 1 == find(&l, "attn.scores"));
    CHECK_NEAR(find(&l, "attn.scores")->bytes - plain, 67108864.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.scores")->flops, 8589934592.0, 0, 0);
    CHECK(find(&l, "rope") == NULL);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "attn.scores.bwd")->bytes, scores_bytes, 0, 0);
    CHECK(find(&l, "attn.alibi") == NULL && find(&l, "rope.bwd") == NULL);
    /* with flash attention the kernel adds the bias itself (FlashAttention-2's alibi_slopes) */
    sh.flash_attention = true;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK(find(&l, "attn.alibi") == NULL);
}

/* ---- model FLOPs ------------------------------------------------------------------------- */

static void test_model_flops(void)
{
    /* Korthikanti et al. 2022 App. A (and Narayanan et al. 2021 §5.1): a GELU transformer
     * with ffn = 4h and a = h/d heads does per layer and token, forward, 2 x (3h^2 + h^2 +
     * 8h^2) = 24h^2 GEMM FLOPs (qkv, proj, MLP) and 4 s h attention FLOPs (QK^T and PV over
     * the full s, causal or not); the LM head 2 h V per token. Backward doubles every
     * matmul, so one micro-batch of T = b s tokens costs
     *   3 (24 T L h^2 + 4 T L s h + 2 T h V) = 72 b L s h^2 (1 + s/(6h) + V/(12 h L)).
     * GPT-3 175B, b = 1, s = 2048: 2,204,412,785,197,056 FLOPs (biases do not change it:
     * they are vector work). */
    model_spec m = gpt(96, 12288, 96, 50257, 2048);
    double b = 1, s = 2048, L = 96, h = 12288, V = 50257;
    double expect = 72 * b * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
    model_shape sh = shape(1, 2048, 1, false, false);
    totals t = step_totals(&m, &sh);
    CHECK_NEAR(t.model_flops, expect, 1e-12, 0);
    CHECK_NEAR(t.model_flops, 2204412785197056.0, 1e-12, 0);
    /* Unfused attention executes what it is credited: matmul hardware FLOPs = model
     * FLOPs (vector kernels add their few FLOPs per element on top). */
    CHECK_NEAR(t.matmul_flops, expect, 1e-12, 0);
    CHECK(t.flops > t.matmul_flops);
    /* Narayanan et al. 2021 Eq. 3 (full recompute: one extra forward of every layer):
     * 96 b s L h^2 (1 + s/(6h) + V/(16 L h)) = 72(...) + L (24 T h^2 + 4 T s h). */
    CHECK_NEAR(t.model_flops + L * t.layer_fwd_model_flops,
               96 * b * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h)), 1e-12, 0);

    /* Flash attention changes executed FLOPs, not model FLOPs: attention executes
     * 0.5 (fwd) + 1.25 (bwd) of the 4 b s^2 h it is credited 1 + 2 for, so hardware FLOPs
     * are lower by 1.25 x 4 b s^2 h per layer. */
    sh.flash_attention = true;
    totals tf = step_totals(&m, &sh);
    CHECK_NEAR(tf.model_flops, expect, 1e-12, 0);
    CHECK_NEAR(tf.matmul_flops, expect - L * 1.25 * 4 * b * s * s * h, 1e-12, 0);

    /* Model FLOPs do not depend on the tensor-parallel split: t ranks together do the
     * same matmul work. With a vocabulary divisible by t (no padding) the t ranks' sum is
     * exactly the formula's. */
    m.vocab = 50304; /* Megatron's padded GPT-2 vocabulary, divisible by 8 */
    sh = shape(1, 2048, 8, true, true);
    totals t8 = step_totals(&m, &sh);
    V = 50304;
    CHECK_NEAR(8 * t8.model_flops, 72 * b * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L)),
               1e-12, 0);
}

/* ---- gradient accounting ----------------------------------------------------------------- */

static void test_grad_params(void)
{
    /* Every parameter's gradient is produced by exactly one backward kernel: summed over
     * embedding, layers and head, grad_params equals the parameter count. Tied embeddings
     * count once (in embed.wgrad, which completes the shared matrix's gradient). */
    model_spec specs[] = {llama31_8b(), qwen3_4b(), gpt(96, 12288, 96, 50257, 2048)};
    for (size_t i = 0; i < SIM_ARRAY_LEN(specs); i++) {
        model_params p;
        model_count_params(&specs[i], &p);
        model_shape sh = shape(1, 2048, 1, false, true);
        CHECK_INT_EQ(step_totals(&specs[i], &sh).grad_params, p.total);
    }
    /* Tied: the LM head's wgrad still runs (its FLOPs are real) but carries nothing. */
    model_spec q = qwen3_4b();
    model_shape sh = shape(1, 2048, 1, false, true);
    model_op_list l;
    model_block_ops(&q, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(find(&l, "lm_head.wgrad")->grad_params, 0);
    CHECK(find(&l, "lm_head.wgrad")->flops > 0);
    /* qk-norm backward carries q_norm and k_norm weights: 2 x 128 */
    model_block_ops(&q, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(find(&l, "qk_norm.bwd")->grad_params, 256);

    /* Under TP each rank produces its shard's gradients; norms are replicated. Llama-8B,
     * t = 2: a layer's 218,103,808 matrix parameters halve to 109,051,904, plus the two
     * full 4096-weight norms: 109,060,096 per rank. */
    model_spec m = llama31_8b();
    sh.tp = 2;
    totals t = {0};
    add_block(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, 1, &t);
    CHECK_INT_EQ(t.grad_params, 109060096);
}

/* ---- activations ------------------------------------------------------------------------- */

/* |bytes / 1e9 - table| within half a unit of the table's last digit */
static void check_gb(double bytes, double table, double unit)
{
    CHECK_NEAR(bytes / 1e9, table, 0, unit / 2);
}

static void test_korthikanti(void)
{
    /* Korthikanti et al. 2022 Table 2 (validation/activation_memory.md): GPT, 16-bit,
     * dropout masks kept, no flash attention. Per layer, sbh x
     *   34 + 5as/h            no parallelism
     *   10 + 24/t + 5as/(ht)  tensor parallel
     *   34/t + 5as/(ht)       tensor + sequence parallel
     *   10 + 24/t, 34/t       the same with selective recompute (no 5as/h term)
     *   2                     full recompute (only the layer input). */
    struct row {
        int64_t s, b;
        int h, a, t;
        double none, tp, tpsp, tpsel, tpspsel, full; /* worked values, GB */
    } rows[] = {
        {2048, 1, 12288, 96, 8, 2.869, 0.579, 0.359, 0.327, 0.1070, 0.0503},  /* GPT-3 175B */
        {2048, 1, 20480, 128, 8, 4.110, 0.881, 0.514, 0.545, 0.1783, 0.0839}, /* MT-NLG 530B */
        {2048, 4, 6144, 64, 8, 7.080, 1.325, 0.885, 0.654, 0.2139, 0.1007},   /* 22B */
    };
    for (size_t i = 0; i < SIM_ARRAY_LEN(rows); i++) {
        const struct row *r = &rows[i];
        model_spec m = gpt(96, r->h, r->a, 51200, 2048);
        double s = (double)r->s, b = (double)r->b, h = r->h, a = r->a, t = r->t;
        double sbh = s * b * h;
        model_shape sh = shape(r->b, r->s, 1, false, false);
        double v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE);
        CHECK_NEAR(v, sbh * (34 + 5 * a * s / h), 1e-12, 0);
        check_gb(v, r->none, 1e-3);

        sh.tp = r->t;
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE);
        CHECK_NEAR(v, sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1e-12, 0);
        check_gb(v, r->tp, 1e-3);
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE);
        CHECK_NEAR(v, sbh * (10 + 24 / t), 1e-12, 0);
        check_gb(v, r->tpsel, 1e-3);
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL);
        CHECK_NEAR(v, sbh * 2, 1e-12, 0);
        check_gb(v, r->full, 1e-4);

        sh.sp = true;
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE);
        CHECK_NEAR(v, sbh * (34 / t + 5 * a * s / (h * t)), 1e-12, 0);
        check_gb(v, r->tpsp, 1e-3);
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE);
        CHECK_NEAR(v, sbh * 34 / t, 1e-12, 0);
        check_gb(v, r->tpspsel, 1e-4);
        /* With SP the checkpointed layer input is the sequence shard: 2sbh/t. */
        v = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL);
        CHECK_NEAR(v, sbh * 2 / t, 1e-12, 0);
    }

    /* Without dropout the two residual masks (1 sbh each) and the attention-probability
     * mask and dropped copy (3as^2b of the 5) disappear: sbh (32 + 2as/h). */
    model_spec m = gpt(96, 12288, 96, 51200, 2048);
    m.dropout = 0;
    model_shape sh = shape(1, 2048, 1, false, false);
    double sbh = 2048.0 * 12288;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE),
               sbh * (32 + 2.0 * 96 * 2048 / 12288), 1e-12, 0);
}

static void test_generalised_activations(void)
{
    /* Llama-3.1-8B, b = 1, s = 4096, bf16, flash attention, no dropout. Bytes kept per
     * token: norm1 input 2h = 8192; QKV input 8192; Q 2 x 4096 + K, V 2 x 2 x 1024 =
     * 12288; FlashAttention logsumexp 4 x 32 heads = 128; proj input 8192; norm2 input
     * 8192; mlp_up input 8192; SwiGLU gate and up 2 x 2 x 14336 = 57344; down input
     * 2 x 14336 = 28672. Total 139,392 bytes per token, x 4096 tokens = 570,949,632. */
    model_spec m = llama31_8b();
    model_shape sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 570949632.0, 0, 0);
    /* selective recompute drops the logsumexp: 139,264 per token */
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE),
               139264.0 * 4096, 0, 0);
    /* full recompute: the 2h-byte layer input, 8192 per token */
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL), 8192.0 * 4096, 0,
               0);
    /* TP 2 with SP splits every term (8 KV heads >= 2 split too): half, 69,696 per token */
    sh.tp = 2, sh.sp = true;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 69696.0 * 4096, 0,
               0);
    /* DTensor's SP keeps the QKV and mlp_up inputs gathered (8192 per token each, not 4096):
     * 69,696 + 2 x 4096 = 77,888 per token; so does selective recompute (69,632 + 8192 =
     * 77,824). Full and per-op recompute keep no GEMM input: unchanged (the layer input's
     * shard, 4096; the per-op policy's saved outputs). The head keeps the LM head's input
     * gathered: + 4096 x 2 x 4096 / 2 = 16,777,216. */
    double head_sp = model_head_activation_bytes(&m, &sh);
    double full_sp = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL);
    double op_sp = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_OP);
    sh.sp_dtensor = true;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 77888.0 * 4096, 0,
               0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE),
               77824.0 * 4096, 0, 0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL), full_sp, 0, 0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_OP), op_sp, 0, 0);
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), head_sp + 16777216.0, 0, 0);
    /* without SP the flag means nothing */
    sh.sp = false;
    double no_sp = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE);
    sh.sp_dtensor = false;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), no_sp, 0, 0);
    sh.sp = true;
    /* TP 16 > 8 KV heads: each rank keeps one whole KV head (replicated), so K and V are
     * 2 x 2 x 128 per token instead of 2 x 2 x 64; Q 2 x 2 x 128 (2 query heads); the
     * replicated part with SP is 34-style /16. Per token: norm1, qkv in, norm2, up in:
     * 4 x 8192 / 16 = 2048; Q 512 + K, V 512 = 1024; lse 4 x 2 = 8; proj in 512; SwiGLU
     * (896 per rank) 3 x 2 x 896 = 5376. Total 8,968. */
    sh.tp = 16;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 8968.0 * 4096, 0,
               0);

    /* Unfused attention keeps the 2-byte softmax output: + 2 x 32 x 4096 = 262,144 per
     * token instead of the 128-byte logsumexp. */
    sh = shape(1, 4096, 1, false, false);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE),
               (139392.0 - 128 + 262144) * 4096, 0, 0);

    /* Qwen3-4B, b = 2, s = 2048, flash: per token 2h x 4 (norm inputs, qkv and up inputs)
     * = 20480; Q, K, V 2 x (4096 + 2 x 1024) = 12288; qk-norm inputs 2 x (4096 + 1024) =
     * 10240; logsumexp 128; proj input 8192; SwiGLU 3 x 2 x 9728 = 58368. Total 109,696
     * per token, x 4096 tokens. */
    model_spec qw = qwen3_4b();
    sh = shape(2, 2048, 1, false, true);
    CHECK_NEAR(model_layer_activation_bytes(&qw, &sh, MODEL_RECOMPUTE_NONE), 109696.0 * 4096, 0,
               0);

    /* Embedding keeps the int64 token ids: 8 x 4096. Head keeps the final-norm and LM-head
     * inputs (2 x 2 x 4096 per token) and the fp32 softmax of the logits (4 x 128256 per
     * token): 4096 x (16384 + 513024) = 2,168,455,168. */
    sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_embed_activation_bytes(&m, &sh), 32768.0, 0, 0);
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), 2168455168.0, 0, 0);
    /* TP 8 with SP: inputs sequence-sharded, logits vocabulary-sharded: all / 8. */
    sh.tp = 8, sh.sp = true;
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), 2168455168.0 / 8, 0, 0);
    /* The compiled loss keeps the bf16 logits instead of the fp32 softmax: 4096 x (16384 +
     * 2 x 128256) = 1,117,782,016 (all / 8 with TP 8 and SP, as above). While its backward
     * runs it holds nothing more (it writes the bf16 gradient directly), PyTorch's eager one
     * two fp32 gradients (8 bytes per logit), Megatron's in-place one nothing; after it,
     * each holds the bf16 gradient until the LM head's backward: 2 bytes per logit. */
    sh.fused_loss = true;
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), 1117782016.0 / 8, 0, 0);
    sh.tp = 1, sh.sp = false;
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), 1117782016.0, 0, 0);
    double during, after;
    model_loss_grad_bytes(&m, &sh, false, &during, &after);
    CHECK_NEAR(during, 0, 0, 0);
    CHECK_NEAR(after, 2.0 * 4096 * 128256, 0, 0);
    sh.fused_loss = false;
    model_loss_grad_bytes(&m, &sh, false, &during, &after);
    CHECK_NEAR(during, 8.0 * 4096 * 128256, 0, 0);
    model_loss_grad_bytes(&m, &sh, true, &during, &after);
    CHECK_NEAR(during, 0, 0, 0);
    CHECK_NEAR(after, 2.0 * 4096 * 128256, 0, 0);
    /* A GPT with embedding dropout also keeps the 1-byte mask: 8 + 12288 per token. */
    model_spec g = gpt(96, 12288, 96, 50257, 2048);
    sh = shape(1, 2048, 1, false, false);
    CHECK_NEAR(model_embed_activation_bytes(&g, &sh), 2048.0 * (8 + 12288), 0, 0);
    /* An embedding norm (BLOOM's word_embeddings_layernorm: model.embed_norm) keeps its
     * 16-bit input, 2 x 12,288 bytes a token more: 8 + 12,288 + 24,576 = 36,872; its
     * LayerNorm weight and bias, 2 x 12,288 = 24,576 parameters, join the embedding's count.
     * Forward: the norm right after the lookup, before the position add (Megatron-DeepSpeed's
     * VocabParallelEmbedding: T x h elements, 7 FLOPs each: 2,048 x 12,288 x 7 =
     * 176,160,768); backward: its gradient first, carrying the 24,576 parameters' gradients.
     * Under TP 2 with SP the norm still sees all 2,048 tokens (it runs before SP scatters
     * them), the same FLOPs and kept input, while the dropout mask is the rank's 1,024 x
     * 12,288: 2,048 x (8 + 24,576) + 1,024 x 12,288 = 62,930,944 bytes. With RMSNorm layers
     * it is a LayerNorm still (2h parameters). */
    model_params before, after_p;
    model_count_params(&g, &before);
    g.embed_norm = true;
    model_count_params(&g, &after_p);
    CHECK_INT_EQ(after_p.embedding - before.embedding, 24576);
    CHECK_INT_EQ(after_p.total - before.total, 24576);
    CHECK_NEAR(model_embed_activation_bytes(&g, &sh), 2048.0 * 36872, 0, 0);
    model_op_list l;
    model_block_ops(&g, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, &l);
    CHECK(l.n == 3 && find(&l, "embed") + 1 == find(&l, "embed_norm") &&
          find(&l, "embed_norm") + 1 == find(&l, "pos_embed"));
    CHECK_NEAR(find(&l, "embed_norm")->flops, 176160768.0, 0, 0);
    model_block_ops(&g, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_BWD, &l);
    CHECK(l.n == 3 && !strcmp(l.op[0].name, "embed_norm.bwd"));
    CHECK_INT_EQ(l.op[0].grad_params, 24576);
    model_shape sp = shape(1, 2048, 2, true, false);
    model_block_ops(&g, &sp, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "embed_norm")->flops, 176160768.0, 0, 0);
    CHECK_NEAR(model_embed_activation_bytes(&g, &sp), 62930944.0, 0, 0);
    g.norm = MODEL_NORM_RMSNORM;
    model_count_params(&g, &after_p);
    model_params rms;
    g.embed_norm = false;
    model_count_params(&g, &rms);
    CHECK_INT_EQ(after_p.embedding - rms.embedding, 24576);
}

/* ---- fine-tuning: LoRA and QLoRA ---------------------------------------------------------- */

static model_shape ft_shape(int64_t b, int64_t s, int tp, bool sp, bool flash,
                            model_ft_method method, int rank, unsigned targets)
{
    model_shape sh = shape(b, s, tp, sp, flash);
    sh.ft = (model_ft){.method = method, .rank = rank, .targets = targets};
    return sh;
}

static bool has_op(const model_op_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->op[i].name, name) == 0)
            return true;
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static double sum_flops(const model_op_list *l, bool model)
{
    double x = 0;
    for (int i = 0; i < l->n; i++)
        x += model ? l->op[i].model_flops : l->op[i].flops;
    return x;
}

static void test_lora_params(void)
{
    /* Llama-3.1-8B, r = 16 on all seven matrices (Hu et al. 2021: r x (in + out) per
     * adapted W): q 16 (4096 + 4096) = 131,072; k and v 16 (4096 + 1024) = 81,920 each;
     * o 131,072; gate and up 16 (4096 + 14336) = 294,912 each; down 16 (14336 + 4096) =
     * 294,912. Per layer 16 x (8192 + 5120 + 5120 + 8192 + 3 x 18432) = 16 x 81,920 =
     * 1,310,720; x 32 layers = 41,943,040 (the usual "~42M trainable" of Llama-8B r = 16
     * all-linear). */
    model_spec m = llama31_8b();
    model_ft ft = {.method = MODEL_FT_LORA, .rank = 16, .targets = MODEL_TARGET_ALL};
    int64_t per = -1;
    model_count_lora_params(&m, &ft, &per);
    CHECK_INT_EQ(per, 1310720);
    CHECK_INT_EQ(per * m.layers, 41943040);
    /* QLoRA trains the same adapters */
    ft.method = MODEL_FT_QLORA;
    model_count_lora_params(&m, &ft, &per);
    CHECK_INT_EQ(per, 1310720);
    /* PEFT's default Llama targets, q_proj and v_proj: 131,072 + 81,920 = 212,992 */
    ft.targets = MODEL_TARGET_Q | MODEL_TARGET_V;
    model_count_lora_params(&m, &ft, &per);
    CHECK_INT_EQ(per, 212992);
    /* full training has no adapters */
    ft = (model_ft){.method = MODEL_FT_FULL, .rank = 16, .targets = MODEL_TARGET_ALL};
    model_count_lora_params(&m, &ft, &per);
    CHECK_INT_EQ(per, 0);

    /* GPT-3 175B (GELU, f = 4h, MHA), r = 8, all targets: q, k, v, o 8 (h + h) each, up
     * 8 (h + 4h), down 8 (4h + h), no gate: 8 x 18h = 1,769,472 for h = 12288. A gate
     * target alone adapts nothing. */
    model_spec g = gpt(96, 12288, 96, 50257, 2048);
    ft = (model_ft){.method = MODEL_FT_LORA, .rank = 8, .targets = MODEL_TARGET_ALL};
    model_count_lora_params(&g, &ft, &per);
    CHECK_INT_EQ(per, 1769472);
    ft.targets = MODEL_TARGET_GATE;
    model_count_lora_params(&g, &ft, &per);
    CHECK_INT_EQ(per, 0);

    /* What QLoRA quantises: the layer's linear matrices. Llama-8B 218,112,000 - 2 x 4096
     * norm weights = 218,103,808; GPT-3 12h^2 = 1,811,939,328 (its 13h biases and norms
     * stay 16-bit). */
    CHECK_INT_EQ(model_layer_matrix_params(&m), 218103808);
    CHECK_INT_EQ(model_layer_matrix_params(&g), INT64_C(1811939328));

    /* NF4 with double quantisation (Dettmers et al. 2023 §3, "Double Quantization"):
     * 4 bits + 8/64 + 32/(64 x 256) = 4.126953125 bits = 2113/4096 bytes per weight. */
    CHECK_NEAR(model_qlora_weight_bytes(), 0.515869140625, 0, 0);
    CHECK_NEAR(model_qlora_weight_bytes(), (4 + 8.0 / 64 + 32.0 / (64 * 256)) / 8, 0, 0);
    /* Llama-8B's 32 layers in NF4: 32 x 218,103,808 x 2113/4096 = 3,600,416,768 bytes
     * (the embedding and LM head stay 16-bit: 2 x 525,336,576 x 2 more). */
    CHECK_NEAR(32.0 * (double)model_layer_matrix_params(&m) * model_qlora_weight_bytes(),
               3600416768.0, 0, 0);
}

static void test_lora_kernels(void)
{
    /* Llama-3.1-8B, b = 2, s = 4096 (T = 8192), t = 1, flash, LoRA r = 16 on all seven
     * matrices, against the same shape fully trained. */
    model_spec m = llama31_8b();
    model_shape full = shape(2, 4096, 1, false, true);
    model_shape sh = ft_shape(2, 4096, 1, false, true, MODEL_FT_LORA, 16, MODEL_TARGET_ALL);
    model_op_list l, lf;

    /* Forward: each base GEMM is followed by its adapters' x A and (x A) B. */
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    static const char *const fwd[] = {
        "norm1", "qkv", "q.lora_a", "q.lora_b", "k.lora_a", "k.lora_b", "v.lora_a",
        "v.lora_b", "rope", "attn", "proj", "o.lora_a", "o.lora_b", "residual1", "norm2",
        "mlp_up", "gate.lora_a", "gate.lora_b", "up.lora_a", "up.lora_b", "act", "mlp_down",
        "down.lora_a", "down.lora_b", "residual2"};
    CHECK_INT_EQ(l.n, (int)SIM_ARRAY_LEN(fwd));
    for (int i = 0; i < l.n && i < (int)SIM_ARRAY_LEN(fwd); i++)
        CHECK_STR_EQ(l.op[i].name, fwd[i]);
    /* q.lora_a: (8192 x 4096) @ (4096 x 16): 2 x 8192 x 4096 x 16 = 1,073,741,824 FLOPs,
     * counted as model FLOPs too; bytes (8192 x 4096 + 4096 x 16) x 2 + 8192 x 16 x 2 =
     * 67,502,080. q.lora_b: (8192 x 16) @ (16 x 4096), the same FLOPs; reads x A and B,
     * and its epilogue adds into the q output (read and write 8192 x 4096): (131,072 +
     * 65,536) x 2 + 2 x 8192 x 4096 x 2 = 134,610,944. */
    const model_op *op = find(&l, "q.lora_a");
    CHECK(op->cls == HW_OP_MATMUL);
    CHECK_NEAR(op->flops, 1073741824.0, 0, 0);
    CHECK_NEAR(op->model_flops, op->flops, 0, 0);
    CHECK_NEAR(op->bytes, 67502080.0, 0, 0);
    op = find(&l, "q.lora_b");
    CHECK_NEAR(op->flops, 1073741824.0, 0, 0);
    CHECK_NEAR(op->bytes, 134610944.0, 0, 0);
    /* k's B is 16 x 1024: 2 x 8192 x 16 x 1024 = 268,435,456 */
    CHECK_NEAR(find(&l, "k.lora_b")->flops, 268435456.0, 0, 0);
    /* The base kernels are those of full training, unchanged; the adapters add
     * 2 T r (in + out) per target = 2 x 8192 x 16 x 81,920 = 21,474,836,480 FLOPs. */
    model_block_ops(&m, &full, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &lf);
    for (int i = 0; i < lf.n; i++) {
        const model_op *b = find(&l, lf.op[i].name);
        CHECK(b && b->flops == lf.op[i].flops && b->bytes == lf.op[i].bytes);
    }
    const double lora_fwd = 21474836480.0;
    CHECK_NEAR(sum_flops(&l, false) - sum_flops(&lf, false), lora_fwd, 1e-12, 0);
    CHECK_NEAR(sum_flops(&l, true) - sum_flops(&lf, true), lora_fwd, 1e-12, 0);

    /* Backward: base dgrads only (no base wgrad), each followed by its adapters' B then A
     * kernels, last target first. */
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    static const char *const bwd[] = {
        "residual2.bwd", "mlp_down.dgrad", "down.lora_b.dgrad", "down.lora_b.wgrad",
        "down.lora_a.dgrad", "down.lora_a.wgrad", "act.bwd", "mlp_up.dgrad",
        "up.lora_b.dgrad", "up.lora_b.wgrad", "up.lora_a.dgrad", "up.lora_a.wgrad",
        "gate.lora_b.dgrad", "gate.lora_b.wgrad", "gate.lora_a.dgrad", "gate.lora_a.wgrad",
        "norm2.bwd", "residual1.bwd", "proj.dgrad", "o.lora_b.dgrad", "o.lora_b.wgrad",
        "o.lora_a.dgrad", "o.lora_a.wgrad", "attn.bwd", "rope.bwd", "qkv.dgrad",
        "v.lora_b.dgrad", "v.lora_b.wgrad", "v.lora_a.dgrad", "v.lora_a.wgrad",
        "k.lora_b.dgrad", "k.lora_b.wgrad", "k.lora_a.dgrad", "k.lora_a.wgrad",
        "q.lora_b.dgrad", "q.lora_b.wgrad", "q.lora_a.dgrad", "q.lora_a.wgrad", "norm1.bwd"};
    CHECK_INT_EQ(l.n, (int)SIM_ARRAY_LEN(bwd));
    for (int i = 0; i < l.n && i < (int)SIM_ARRAY_LEN(bwd); i++)
        CHECK_STR_EQ(l.op[i].name, bwd[i]);
    /* Every gradient comes from an adapter's wgrad: B's r x out, A's in x r (down: B
     * 16 x 4096 = 65,536, A 14336 x 16 = 229,376); their sum is the layer's 1,310,720. No
     * other kernel carries gradients (the norms are frozen) and no base wgrad runs. */
    int64_t grads = 0;
    for (int i = 0; i < l.n; i++) {
        grads += l.op[i].grad_params;
        if (ends_with(l.op[i].name, ".wgrad"))
            CHECK(strstr(l.op[i].name, ".lora_") != NULL);
        else
            CHECK_INT_EQ(l.op[i].grad_params, 0);
    }
    CHECK_INT_EQ(grads, 1310720);
    CHECK_INT_EQ(find(&l, "down.lora_b.wgrad")->grad_params, 65536);
    CHECK_INT_EQ(find(&l, "down.lora_a.wgrad")->grad_params, 229376);
    /* A's dgrad adds x's LoRA gradient into the base dgrad's (reads and writes T x in):
     * down.lora_a.dgrad (8192 x 16) @ (16 x 14336): bytes (8192 x 16 + 14336 x 16) x 2 +
     * 2 x 8192 x 14336 x 2 = 470,482,944; its wgrad (x^T d(xA)) reads x and d(xA), writes
     * A: (8192 x 14336 + 8192 x 16) x 2 + 14336 x 16 x 2 = 235,601,920. */
    CHECK_NEAR(find(&l, "down.lora_a.dgrad")->bytes, 470482944.0, 0, 0);
    CHECK_NEAR(find(&l, "down.lora_a.wgrad")->bytes, 235601920.0, 0, 0);
    /* A frozen RMSNorm's backward still computes dx but writes no weight gradient:
     * (3 x 8192 x 4096 + 4096) x 2 = 201,334,784 bytes instead of + 2 x 4096 weights. */
    CHECK_NEAR(find(&l, "norm1.bwd")->bytes, 201334784.0, 0, 0);

    /* Backward FLOPs: full training's minus the four base wgrads (they equal the base
     * forward GEMMs, G = 2 T (h (q + 2kv) + q h + 2 h f + f h) = 3,573,412,790,272) plus
     * the adapters' dgrad and wgrad (2 x 21,474,836,480). In model FLOPs the backward is
     * then G (dgrads) + 2 x 549,755,813,888 (attention) + 2 x 21,474,836,480 =
     * 4,715,874,091,008: about forward + adapters, not twice the forward. */
    const double G = 3573412790272.0, attn = 549755813888.0;
    model_block_ops(&m, &full, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &lf);
    CHECK_NEAR(sum_flops(&l, false), sum_flops(&lf, false) - G + 2 * lora_fwd, 1e-12, 0);
    CHECK_NEAR(sum_flops(&l, true), G + 2 * attn + 2 * lora_fwd, 1e-12, 0);
    CHECK_NEAR(sum_flops(&l, true), 4715874091008.0, 1e-12, 0);

    /* Head: the LM head keeps its dgrad, loses its wgrad; the final norm is frozen. */
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 3);
    CHECK(has_op(&l, "lm_head.dgrad") && !has_op(&l, "lm_head.wgrad"));
    CHECK_INT_EQ(find(&l, "final_norm.bwd")->grad_params, 0);
    /* Embedding: its forward gather still runs; its backward is empty, and it keeps no
     * activations for one. */
    model_block_ops(&m, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 1);
    model_block_ops(&m, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 0);
    CHECK_NEAR(model_embed_activation_bytes(&m, &sh), 0, 0, 0);

    /* Whole step: the gradients are the 32 layers' adapters, 41,943,040; model FLOPs are
     * full training's minus 32 base wgrads and the LM head's (2 x 8192 x 4096 x 128256 =
     * 8,607,114,461,184), plus 32 x 3 x the adapters' forward. */
    totals tl = step_totals(&m, &sh), tfull = step_totals(&m, &full);
    CHECK_INT_EQ(tl.grad_params, 41943040);
    CHECK_NEAR(tl.model_flops,
               tfull.model_flops - 32 * G - 8607114461184.0 + 32 * 3 * lora_fwd, 1e-12, 0);

    /* Method FULL ignores rank and targets: the kernels are exactly full training's. */
    model_shape f2 = ft_shape(2, 4096, 1, false, true, MODEL_FT_FULL, 16, MODEL_TARGET_ALL);
    for (int ph = MODEL_PHASE_FWD; ph <= MODEL_PHASE_BWD; ph++) {
        model_block_ops(&m, &f2, MODEL_BLOCK_LAYER, (model_phase)ph, &l);
        model_block_ops(&m, &full, MODEL_BLOCK_LAYER, (model_phase)ph, &lf);
        CHECK_INT_EQ(l.n, lf.n);
        for (int i = 0; i < l.n && i < lf.n; i++)
            CHECK(strcmp(l.op[i].name, lf.op[i].name) == 0 && l.op[i].flops == lf.op[i].flops &&
                  l.op[i].bytes == lf.op[i].bytes &&
                  l.op[i].grad_params == lf.op[i].grad_params);
    }

    /* A GELU model has no gate: a gate-only LoRA adds no kernel, and the frozen layer's
     * backward produces no gradient at all. */
    model_spec g = gpt(2, 1024, 16, 1000, 128);
    sh = ft_shape(1, 128, 1, false, true, MODEL_FT_LORA, 8, MODEL_TARGET_GATE);
    model_block_ops(&g, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    model_shape gf = shape(1, 128, 1, false, true);
    model_block_ops(&g, &gf, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &lf);
    CHECK_INT_EQ(l.n, lf.n);
    CHECK(!has_op(&l, "gate.lora_a"));
    totals tg = step_totals(&g, &sh);
    CHECK_INT_EQ(tg.grad_params, 0);

    /* TP t = 2: adapters split as their base matrix. Column-parallel q, k, v, gate, up
     * shard B's columns and keep A whole (4096 x 16 = 65,536 each); row-parallel o, down
     * shard A's rows and keep B whole (16 x 4096 = 65,536 each). Per rank: 7 x 65,536
     * whole + q B 16 x 2048 + k, v B 16 x 512 each + o A 2048 x 16 + gate, up B and down A
     * 16 x 7168 each = 458,752 + 32,768 + 16,384 + 32,768 + 344,064 = 884,736. */
    sh = ft_shape(1, 2048, 2, false, true, MODEL_FT_LORA, 16, MODEL_TARGET_ALL);
    totals t2 = {0};
    add_block(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, 1, &t2);
    CHECK_INT_EQ(t2.grad_params, 884736);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    /* x A with the whole A is the same on both ranks: 2 x 2048 x 4096 x 16; B on 2048
     * columns: 2 x 2048 x 16 x 2048. */
    CHECK_NEAR(find(&l, "q.lora_a")->flops, 2.0 * 2048 * 4096 * 16, 0, 0);
    CHECK_NEAR(find(&l, "q.lora_b")->flops, 2.0 * 2048 * 16 * 2048, 0, 0);
}

static void test_qlora_kernels(void)
{
    /* Llama-3.1-8B, b = 2, s = 4096, QLoRA r = 16 on all targets: the LoRA kernels plus a
     * dequantisation before every base GEMM (forward) and base dgrad (backward). It reads
     * the NF4 weights with their scales (2113/4096 bytes each) and writes them in bf16:
     * 2.515869140625 bytes and 2 FLOPs per weight. qkv: 4096 x 6144 = 25,165,824 weights,
     * 63,313,920 bytes; proj 16,777,216 -> 42,209,280; mlp_up 4096 x 28672 = 117,440,512
     * -> 295,464,960; mlp_down 58,720,256 -> 147,732,480. */
    model_spec m = llama31_8b();
    model_shape lora = ft_shape(2, 4096, 1, false, true, MODEL_FT_LORA, 16, MODEL_TARGET_ALL);
    model_shape sh = ft_shape(2, 4096, 1, false, true, MODEL_FT_QLORA, 16, MODEL_TARGET_ALL);
    static const struct {
        const char *gemm, *fwd, *bwd, *dgrad;
        double weights, bytes;
    } dq[] = {
        {"qkv", "qkv.dequant", "qkv.dgrad.dequant", "qkv.dgrad", 25165824, 63313920},
        {"proj", "proj.dequant", "proj.dgrad.dequant", "proj.dgrad", 16777216, 42209280},
        {"mlp_up", "mlp_up.dequant", "mlp_up.dgrad.dequant", "mlp_up.dgrad", 117440512,
         295464960},
        {"mlp_down", "mlp_down.dequant", "mlp_down.dgrad.dequant", "mlp_down.dgrad",
         58720256, 147732480},
    };
    model_op_list l, ll;
    for (int ph = MODEL_PHASE_FWD; ph <= MODEL_PHASE_BWD; ph++) {
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, (model_phase)ph, &l);
        model_block_ops(&m, &lora, MODEL_BLOCK_LAYER, (model_phase)ph, &ll);
        /* exactly the LoRA layer plus four dequantisations, each right before its GEMM */
        CHECK_INT_EQ(l.n, ll.n + 4);
        for (size_t i = 0; i < SIM_ARRAY_LEN(dq); i++) {
            const char *name = ph == MODEL_PHASE_FWD ? dq[i].fwd : dq[i].bwd;
            const char *next = ph == MODEL_PHASE_FWD ? dq[i].gemm : dq[i].dgrad;
            const model_op *op = find(&l, name);
            if (!op)
                continue;
            CHECK(op->cls == HW_OP_VECTOR);
            CHECK_NEAR(op->bytes, dq[i].bytes, 0, 0);
            CHECK_NEAR(op->bytes, dq[i].weights * (model_qlora_weight_bytes() + 2), 0, 0);
            CHECK_NEAR(op->flops, 2 * dq[i].weights, 0, 0);
            CHECK(op + 1 == find(&l, next));
        }
        /* everything else is the LoRA kernel, unchanged (the GEMMs read bf16 weights) */
        for (int i = 0; i < ll.n; i++) {
            const model_op *op = find(&l, ll.op[i].name);
            CHECK(op && op->flops == ll.op[i].flops && op->bytes == ll.op[i].bytes &&
                  op->grad_params == ll.op[i].grad_params);
        }
    }
    /* The LM head stays bf16 (bitsandbytes does not quantise the output layer): no
     * dequantisation in the head. */
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, &l);
    model_block_ops(&m, &lora, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, &ll);
    CHECK_INT_EQ(l.n, ll.n);

    /* The largest layer: Qwen3-4B (qk-norm), unfused attention, QLoRA on all targets.
     * Full training runs 14 forward kernels (norm1, qkv, qk_norm, rope, 3 attention, proj,
     * residual1, norm2, mlp_up, act, mlp_down, residual2) and 18 backward (the same with
     * dgrad + wgrad per GEMM and the 3 attention backward kernels). QLoRA forward: 14 + 4
     * dequantisations + 7 x 2 adapter GEMMs = 32; backward: 18 - 4 base wgrads + 4
     * dequantisations + 7 x 4 adapter kernels = 46, within MODEL_OPS_MAX. */
    model_spec q = qwen3_4b();
    sh = ft_shape(1, 2048, 1, false, false, MODEL_FT_QLORA, 64, MODEL_TARGET_ALL);
    model_block_ops(&q, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 32);
    model_block_ops(&q, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 46);
    CHECK(l.n <= MODEL_OPS_MAX);
    /* frozen q_norm/k_norm: no gradients */
    CHECK_INT_EQ(find(&l, "qk_norm.bwd")->grad_params, 0);
}

static void test_lora_activations(void)
{
    /* Llama-3.1-8B, b = 1, s = 4096, flash, r = 16 on all seven targets. The adapters'
     * inputs are the base GEMMs' inputs, already kept; each keeps its x A for B's wgrad:
     * 7 x 16 x 2 = 224 bytes per token on top of full training's 139,392:
     * 139,616 x 4096 = 571,867,136. QLoRA keeps the same (dequantised weights are
     * transient). */
    model_spec m = llama31_8b();
    model_shape sh = ft_shape(1, 4096, 1, false, true, MODEL_FT_LORA, 16, MODEL_TARGET_ALL);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 571867136.0, 0, 0);
    sh.ft.method = MODEL_FT_QLORA;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 571867136.0, 0, 0);
    /* selective recompute: (139,264 + 224) x 4096; full recompute keeps the layer input
     * only (8192 per token): the adapters' x A is recomputed with the layer */
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE),
               (139264.0 + 224) * 4096, 0, 0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL), 8192.0 * 4096, 0,
               0);
    /* q and v only: + 2 x 16 x 2 = 64 per token */
    sh.ft.targets = MODEL_TARGET_Q | MODEL_TARGET_V;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE),
               (139392.0 + 64) * 4096, 0, 0);
    /* TP 2 + SP: the base terms halve (69,696 per token), x A does not (A or B is whole
     * on every rank, so x A is T x r on each): 69,696 + 224 = 69,920 per token. */
    sh = ft_shape(1, 4096, 2, true, true, MODEL_FT_LORA, 16, MODEL_TARGET_ALL);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 69920.0 * 4096, 0,
               0);
}

/* ---- mixture of experts ----------------------------------------------------------------- */

static void test_moe_params(void)
{
    /* Mixtral 8x7B. Attention part of a layer: q 4096 x 4096 = 16,777,216; k, v
     * 2 x 4096 x 1024 = 8,388,608; o 16,777,216; two RMSNorms 8,192: 41,951,232. One expert
     * (SwiGLU: w1, w3 4096 x 14336 and w2 14336 x 4096) 3 x 58,720,256 = 176,160,768; the
     * router 4096 x 8 = 32,768. A MoE layer: 41,951,232 + 8 x 176,160,768 + 32,768 =
     * 1,451,270,144. Embedding and untied head 2 x 32000 x 4096 = 262,144,000; final norm
     * 4,096. Total 32 x 1,451,270,144 + 262,144,000 + 4,096 = 46,702,792,704: the published
     * "46.7B" (Jiang et al. 2024). */
    model_spec m = mixtral_8x7b();
    model_params p;
    int64_t attn = -1, expert = -1, router = -1, shared = -1;
    model_count_moe_params(&m, &attn, &expert, &router, &shared);
    CHECK_INT_EQ(attn, 41951232);
    CHECK_INT_EQ(expert, 176160768);
    CHECK_INT_EQ(router, 32768);
    CHECK_INT_EQ(shared, 0);
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_moe_layer, INT64_C(1451270144));
    CHECK_INT_EQ(p.embedding, 131072000);
    CHECK_INT_EQ(p.head, 131072000);
    CHECK_INT_EQ(p.total, INT64_C(46702792704));
    /* Active per token: 2 of the 8 experts, 41,951,232 + 2 x 176,160,768 + 32,768 =
     * 394,305,536 per layer; 32 x that + 262,148,096 = 12,879,925,248: the published
     * "12.9B active". */
    CHECK_INT_EQ(p.active, INT64_C(12879925248));
    /* per_layer stays one dense layer (attention + an MLP of ffn 14336: Llama-3.1-8B's
     * 218,112,000); with every layer MoE it enters no total. */
    CHECK_INT_EQ(p.per_layer, 218112000);
    /* NULL pointers are allowed */
    model_count_moe_params(&m, NULL, &expert, NULL, NULL);
    CHECK_INT_EQ(expert, 176160768);

    /* dense_layers = 1 (layer 0 dense, DeepSeek-V3's first_k_dense_replace): one MoE layer
     * replaced by a dense one, 46,702,792,704 - 1,451,270,144 + 218,112,000 =
     * 45,469,634,560; active 12,879,925,248 - 394,305,536 + 218,112,000 = 12,703,731,712. */
    m.moe.dense_layers = 1;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.total, INT64_C(45469634560));
    CHECK_INT_EQ(p.active, INT64_C(12703731712));

    /* One shared expert (DeepSeek-V3 style): an MLP of 1 x 14336 more per MoE layer,
     * active for every token: + 176,160,768 x 32 to both counts. */
    m.moe.dense_layers = 0, m.moe.shared_experts = 1;
    model_count_moe_params(&m, NULL, NULL, NULL, &shared);
    CHECK_INT_EQ(shared, 176160768);
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.total, INT64_C(46702792704) + 32 * INT64_C(176160768));
    CHECK_INT_EQ(p.active, INT64_C(12879925248) + 32 * INT64_C(176160768));

    /* Qwen3-30B-A3B. Attention part: q 2048 x 4096 = 8,388,608; k, v 2 x 2048 x 512 =
     * 2,097,152; o 8,388,608; norms 4,096; q/k norms 256: 18,878,720. Expert 3 x 2048 x 768
     * = 4,718,592; router 2048 x 128 = 262,144. MoE layer 18,878,720 + 128 x 4,718,592 +
     * 262,144 = 623,120,640; total 48 x that + 2 x 151936 x 2048 + 2048 = 30,532,122,624
     * ("30.5B", model card); active 48 x (18,878,720 + 8 x 4,718,592 + 262,144) +
     * 622,331,904 = 48 x 56,889,600 + 622,331,904 = 3,353,032,704 ("3.3B activated"). */
    m = qwen3_30b_a3b();
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_moe_layer, 623120640);
    CHECK_INT_EQ(p.total, INT64_C(30532122624));
    CHECK_INT_EQ(p.active, INT64_C(3353032704));

    /* A dense model: no MoE part, active = total. */
    m = llama31_8b();
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_moe_layer, 0);
    CHECK_INT_EQ(p.active, p.total);
    model_count_moe_params(&m, &attn, &expert, &router, &shared);
    CHECK_INT_EQ(attn + 3 * INT64_C(4096) * 14336, p.per_layer);
    CHECK_INT_EQ(expert + router + shared, 0);
}

static double sum_model_flops(const model_op_list *l, const char *prefix)
{
    double x = 0;
    for (int i = 0; i < l->n; i++)
        if (!prefix || strncmp(l->op[i].name, prefix, strlen(prefix)) == 0)
            x += l->op[i].model_flops;
    return x;
}

static int64_t sum_grads(const model_op_list *l)
{
    int64_t x = 0;
    for (int i = 0; i < l->n; i++)
        x += l->op[i].grad_params;
    return x;
}

static void check_names(const model_op_list *l, const char *const *names, int n)
{
    CHECK_INT_EQ(l->n, n);
    for (int i = 0; i < l->n && i < n; i++)
        CHECK_STR_EQ(l->op[i].name, names[i]);
}

static void test_moe_kernels(void)
{
    /* Mixtral 8x7B, b = 1, s = 4096 (T = 4096), t = 1, no EP, flash, uniform routing:
     * each of the 8 experts gets T x 2 / 8 = 1024 tokens. */
    model_spec m = mixtral_8x7b();
    model_shape sh = shape(1, 4096, 1, false, true);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    {
        static const char *const fwd[] = {
            "norm1", "qkv", "rope", "attn", "proj", "residual1", "norm2", "moe.router",
            "moe.gate", "moe.permute",
            "moe.expert_up", "moe.expert_act", "moe.expert_down", /* expert 0 */
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down",
            "moe.expert_up", "moe.expert_act", "moe.expert_down", /* expert 7 */
            "moe.unpermute", "residual2"};
        check_names(&l, fwd, (int)SIM_ARRAY_LEN(fwd));
    }
    /* Model FLOPs: attention qkv 2 x 4096 x 4096 x 6144 = 206,158,430,208 + attention
     * 4 x 4096^2 x 4096 = 274,877,906,944 + proj 2 x 4096^3 = 137,438,953,472 =
     * 618,475,290,624; router 2 T h E = 2 x 4096 x 4096 x 8 = 268,435,456; experts
     * top_k x T x (3 x 2 h f) = 2 x 4096 x 6 x 4096 x 14336 = 2,886,218,022,912 (the 8
     * experts' 1024 tokens each: each token pays for its 2 experts only). Sum
     * 3,504,961,748,992. */
    CHECK_NEAR(sum_model_flops(&l, NULL), 3504961748992.0, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, "moe.router"), 268435456.0, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, "moe.expert"), 2886218022912.0, 0, 0);
    /* The same as a dense layer whose MLP is top_k experts wide (ffn 2 x 14336), plus the
     * router. */
    model_spec dense = llama31_8b();
    dense.ffn = 2 * 14336;
    model_op_list ld;
    model_block_ops(&dense, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &ld);
    CHECK_NEAR(sum_model_flops(&l, NULL), sum_model_flops(&ld, NULL) + 268435456.0, 1e-15, 0);
    /* One expert_up: (1024 x 4096) @ (4096 x 2 x 14336): 2 x 1024 x 4096 x 28672 =
     * 240,518,168,576 FLOPs; bytes (1024 x 4096 + 4096 x 28672) x 2 + 1024 x 28672 x 2 =
     * 301,989,888. Its SwiGLU: 3 x 1024 x 14336 x 2 = 88,080,384 bytes. */
    const model_op *op = find(&l, "moe.expert_up");
    CHECK(op->cls == HW_OP_MATMUL);
    CHECK_NEAR(op->flops, 240518168576.0, 0, 0);
    CHECK_NEAR(op->bytes, 301989888.0, 0, 0);
    CHECK_NEAR(find(&l, "moe.expert_act")->bytes, 88080384.0, 0, 0);
    /* Gate: softmax + top-2 on 4096 x 8 logits, (5 + 2) FLOPs each = 229,376; reads the
     * bf16 logits, writes fp32 probabilities (4096 x 8 x 6 = 196,608) and the int64 index and
     * fp32 weight of each of the 8192 choices (8192 x 12 = 98,304): 294,912 bytes. */
    op = find(&l, "moe.gate");
    CHECK(op->cls == HW_OP_VECTOR);
    CHECK_NEAR(op->flops, 229376.0, 0, 0);
    CHECK_NEAR(op->bytes, 294912.0, 0, 0);
    /* Permute: reads T x h x 2 = 33,554,432 and 8192 indices (65,536), writes 8192 rows
     * (67,108,864): 100,728,832 bytes. Unpermute: reads 8192 rows and fp32 weights
     * (67,108,864 + 32,768), writes T rows (33,554,432), 2 x 8192 x 4096 FLOPs. */
    CHECK_NEAR(find(&l, "moe.permute")->bytes, 100728832.0, 0, 0);
    CHECK_NEAR(find(&l, "moe.unpermute")->bytes, 100696064.0, 0, 0);
    CHECK_NEAR(find(&l, "moe.unpermute")->flops, 2.0 * 8192 * 4096, 0, 0);

    /* Backward: reversed, experts last-first; model FLOPs twice the forward's. With
     * ep = 1 every expert's gradients are on this rank: grad_params = the layer's
     * 1,451,270,144 parameters. 5 kernels per expert and 15 others (residual2, unpermute,
     * permute, gate, router x 2, norm2, residual1, proj x 2, attn, rope, qkv x 2, norm1). */
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(sum_model_flops(&l, NULL), 2 * 3504961748992.0, 0, 0);
    CHECK_INT_EQ(sum_grads(&l), INT64_C(1451270144));
    CHECK_INT_EQ(l.n, 5 * 8 + 15);

    /* EP 4: two local experts; uniform routing gives each T x top_k x ep / E = 4096 tokens
     * (the EP group's 4 T tokens make 8 T (token, expert) assignments spread over 8
     * experts), so the rank's two experts still process top_k x T = 8192 rows: FLOPs do
     * not depend on ep. */
    sh.ep = 4;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 10 + 3 * 2 + 2);
    CHECK_NEAR(find(&l, "moe.expert_up")->flops, 2.0 * 4096 * 4096 * 28672, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, NULL), 3504961748992.0, 0, 0);
    /* Backward order with 2 local experts: the combine's gradient goes before
     * moe.expert_down.dgrad of expert 1, the dispatch's after moe.expert_up.wgrad of
     * expert 0. */
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    {
        static const char *const bwd[] = {
            "residual2.bwd", "moe.unpermute.bwd",
            "moe.expert_down.dgrad", "moe.expert_down.wgrad", "moe.expert_act.bwd",
            "moe.expert_up.dgrad", "moe.expert_up.wgrad", /* expert 1 */
            "moe.expert_down.dgrad", "moe.expert_down.wgrad", "moe.expert_act.bwd",
            "moe.expert_up.dgrad", "moe.expert_up.wgrad", /* expert 0 */
            "moe.permute.bwd", "moe.gate.bwd", "moe.router.dgrad", "moe.router.wgrad",
            "norm2.bwd", "residual1.bwd", "proj.dgrad", "proj.wgrad", "attn.bwd", "rope.bwd",
            "qkv.dgrad", "qkv.wgrad", "norm1.bwd"};
        check_names(&l, bwd, (int)SIM_ARRAY_LEN(bwd));
    }
    /* Gradients on this rank: attention and norms 41,951,232 + router 32,768 + its
     * 2 experts 2 x 176,160,768 = 394,305,536. */
    CHECK_INT_EQ(sum_grads(&l), 394305536);
    CHECK_INT_EQ(find(&l, "moe.expert_up.wgrad")->grad_params, 4096 * 28672);
    CHECK_INT_EQ(find(&l, "moe.expert_down.wgrad")->grad_params, 14336 * 4096);
    CHECK_INT_EQ(find(&l, "moe.router.wgrad")->grad_params, 32768);
    /* TP 2 on top: attention 4096 x 6144 / 2 + 4096 x 4096 / 2 + norms 8,192 =
     * 20,979,712; router whole 32,768; experts split like the MLP, 176,160,768 for the
     * two halves: 197,173,248. The router is not split (2 T h E on every rank), the
     * experts' GEMMs are. */
    sh.tp = 2;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(sum_grads(&l), 197173248);
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "moe.router")->flops, 268435456.0, 0, 0);
    CHECK_NEAR(find(&l, "moe.expert_up")->flops, 2.0 * 4096 * 4096 * 14336, 0, 0);

    /* Skewed load, ep = 4: this rank's experts get 3000 and 500 tokens (from the 4 ranks'
     * routing). Expert FLOPs follow the counts: 2 x 3000 x 4096 x 28672 for expert 0's up,
     * 2 x 500 x 14336 x 4096 for expert 1's down; the experts' model FLOPs total
     * 3500 x 6 x 4096 x 14336 = 1,233,125,376,000 and the layer 618,475,290,624 +
     * 268,435,456 + that = 1,851,869,102,080. */
    const double tokens[2] = {3000, 500};
    model_moe_load load = {.n_local = 2, .tokens = tokens};
    sh = shape(1, 4096, 1, false, true);
    sh.ep = 4, sh.moe = &load;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    const model_op *up0 = find(&l, "moe.expert_up");
    CHECK_NEAR(up0->flops, 2.0 * 3000 * 4096 * 28672, 0, 0);
    CHECK_STR_EQ(up0[3].name, "moe.expert_up");
    CHECK_NEAR(up0[3].flops, 2.0 * 500 * 4096 * 28672, 0, 0);
    CHECK_NEAR(up0[5].flops, 2.0 * 500 * 14336 * 4096, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, "moe.expert"), 1233125376000.0, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, NULL), 1851869102080.0, 0, 0);
    /* The router, gate and permutations see the rank's own T tokens whatever the load. */
    CHECK_NEAR(find(&l, "moe.router")->flops, 268435456.0, 0, 0);
    /* Backward: expert 1 (500 tokens) first. */
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    op = find(&l, "moe.expert_down.dgrad");
    CHECK_NEAR(op->flops, 2.0 * 500 * 14336 * 4096, 0, 0);
    CHECK_NEAR(op[5].flops, 2.0 * 3000 * 14336 * 4096, 0, 0);
    CHECK_NEAR(sum_model_flops(&l, NULL), 2 * 1851869102080.0, 0, 0);
    /* An expert with no tokens keeps its kernels (0 FLOPs) and its gradients (zeros). */
    const double idle[2] = {0, 4000};
    load.tokens = idle;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 25);
    CHECK_INT_EQ(sum_grads(&l), 394305536);
    CHECK_NEAR(l.op[7].flops, 0, 0, 0); /* expert 0's down dgrad */

    /* Shared experts: one, after the unpermutation, on all T tokens (here ep = 1,
     * uniform). shared_up (4096 x 4096) @ (4096 x 28672); the layer's gradients gain its
     * 176,160,768. */
    m.moe.shared_experts = 1;
    sh = shape(1, 4096, 1, false, true);
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 36 + 3);
    op = find(&l, "moe.unpermute");
    CHECK_STR_EQ(op[1].name, "moe.shared_up");
    CHECK_STR_EQ(op[2].name, "moe.shared_act");
    CHECK_STR_EQ(op[3].name, "moe.shared_down");
    CHECK_STR_EQ(op[4].name, "residual2");
    CHECK_NEAR(op[1].flops, 2.0 * 4096 * 4096 * 28672, 0, 0);
    /* shared_down adds into the routed output (reads it, writes the sum):
     * (4096 x 14336 + 14336 x 4096) x 2 + 2 x 4096 x 4096 x 2 = 234,881,024 + 67,108,864 =
     * 301,989,888 bytes */
    CHECK_NEAR(op[3].bytes, 301989888.0, 0, 0);
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    {
        static const char *const head[] = {
            "residual2.bwd", "moe.shared_down.dgrad", "moe.shared_down.wgrad",
            "moe.shared_act.bwd", "moe.shared_up.dgrad", "moe.shared_up.wgrad",
            "moe.unpermute.bwd", "moe.expert_down.dgrad"};
        for (size_t i = 0; i < SIM_ARRAY_LEN(head); i++)
            CHECK_STR_EQ(l.op[i].name, head[i]);
    }
    CHECK_INT_EQ(sum_grads(&l), INT64_C(1451270144) + 176160768);
    /* with ep = 4: 394,305,536 + 176,160,768 = 570,466,304 */
    sh.ep = 4;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(sum_grads(&l), 570466304);

    /* The dense block of a MoE model is the dense layer (the caller picks the first
     * dense_layers layers): Mixtral's is exactly Llama-3.1-8B's layer. */
    m = mixtral_8x7b();
    model_spec llama = llama31_8b();
    sh = shape(1, 4096, 1, false, true);
    for (int ph = MODEL_PHASE_FWD; ph <= MODEL_PHASE_BWD; ph++) {
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, (model_phase)ph, &l);
        model_block_ops(&llama, &sh, MODEL_BLOCK_LAYER, (model_phase)ph, &ld);
        CHECK_INT_EQ(l.n, ld.n);
        for (int i = 0; i < l.n && i < ld.n; i++)
            CHECK(strcmp(l.op[i].name, ld.op[i].name) == 0 && l.op[i].flops == ld.op[i].flops &&
                  l.op[i].bytes == ld.op[i].bytes &&
                  l.op[i].grad_params == ld.op[i].grad_params);
    }

    /* MoE layers ignore LoRA: with ft = LoRA the MoE block is the fully trained one. */
    model_shape lo = sh;
    lo.ft = (model_ft){.method = MODEL_FT_QLORA, .rank = 16, .targets = MODEL_TARGET_ALL};
    model_block_ops(&m, &lo, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &ld);
    CHECK_INT_EQ(l.n, ld.n);
    CHECK_INT_EQ(sum_grads(&l), sum_grads(&ld));
}

/* Gradients and model FLOPs of a whole MoE model's step: embedding, dense_layers dense
 * layers, the rest MoE, head. */
static void moe_step(const model_spec *m, const model_shape *sh, int64_t *grads,
                     double *model_flops)
{
    model_op_list l;
    *grads = 0, *model_flops = 0;
    int dense = SIM_MIN(m->moe.dense_layers, m->layers);
    for (int ph = MODEL_PHASE_FWD; ph <= MODEL_PHASE_BWD; ph++) {
        static const model_block blocks[] = {MODEL_BLOCK_EMBED, MODEL_BLOCK_LAYER,
                                             MODEL_BLOCK_MOE, MODEL_BLOCK_HEAD};
        for (size_t b = 0; b < SIM_ARRAY_LEN(blocks); b++) {
            int64_t times = blocks[b] == MODEL_BLOCK_LAYER ? dense
                            : blocks[b] == MODEL_BLOCK_MOE ? m->layers - dense
                                                           : 1;
            model_block_ops(m, sh, blocks[b], (model_phase)ph, &l);
            for (int i = 0; i < l.n; i++) {
                *grads += times * l.op[i].grad_params;
                *model_flops += (double)times * l.op[i].model_flops;
                if (l.op[i].cls == HW_OP_VECTOR)
                    CHECK(l.op[i].model_flops == 0);
                if (ph == MODEL_PHASE_FWD)
                    CHECK_INT_EQ(l.op[i].grad_params, 0);
            }
        }
    }
}

static void test_moe_step(void)
{
    /* Without EP and TP one rank produces every gradient once: the step's grad_params are
     * model_count_params' total, with dense layers, shared experts or neither. */
    model_spec specs[4] = {mixtral_8x7b(), mixtral_8x7b(), mixtral_8x7b(), qwen3_30b_a3b()};
    specs[1].moe.dense_layers = 3;
    specs[2].moe.shared_experts = 2, specs[2].moe.dense_layers = 1;
    for (size_t i = 0; i < SIM_ARRAY_LEN(specs); i++) {
        model_params p;
        model_count_params(&specs[i], &p);
        model_shape sh = shape(1, 2048, 1, false, true);
        int64_t g;
        double f;
        moe_step(&specs[i], &sh, &g, &f);
        CHECK_INT_EQ(g, p.total);
    }
    /* Model FLOPs of Mixtral's step, uniform routing, b = 1, s = 4096: 3 x (32 x
     * 3,504,961,748,992 + LM head 2 x 4096 x 4096 x 32000) = 3 x (112,158,775,967,744 +
     * 1,073,741,824,000) = 339,697,553,375,232 — about 6 x 12.9B active x 4096 tokens
     * (3.17e14) plus attention. */
    model_spec m = mixtral_8x7b();
    model_shape sh = shape(1, 4096, 1, false, true);
    int64_t g;
    double f;
    moe_step(&m, &sh, &g, &f);
    CHECK_NEAR(f, 339697553375232.0, 1e-15, 0);

    /* Qwen3-30B-A3B without EP: 128 local experts, 5 x 128 + 16 = 656 backward kernels
     * (residual2, unpermute, permute, gate, router x 2, norm2, residual1, proj x 2, attn,
     * rope, qk_norm, qkv x 2, norm1), within MODEL_OPS_MAX; forward 3 x 128 + 13 (norm1,
     * qkv, qk_norm, rope, attn, proj, residual1, norm2, router, gate, permute, unpermute,
     * residual2) = 397. */
    model_spec q = qwen3_30b_a3b();
    model_op_list l;
    model_block_ops(&q, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 656);
    model_block_ops(&q, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_FWD, &l);
    CHECK_INT_EQ(l.n, 397);
    /* MODEL_MOE_LOCAL_MAX = 256 local experts, unfused attention and shared experts: the
     * longest list, 5 x 256 + 23 backward kernels (the 16 above, 2 more attention kernels,
     * 5 shared-expert kernels). */
    q.moe.experts = 256, q.moe.shared_experts = 1;
    sh.flash_attention = false;
    model_block_ops(&q, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 5 * 256 + 23);
    CHECK(l.n <= MODEL_OPS_MAX);
}

static void test_moe_activations(void)
{
    /* Mixtral, b = 1, s = 4096, flash, t = 1, ep = 1, uniform. Per token: the attention
     * part as Llama-3.1-8B's (norm1 input 8192, QKV input 8192, Q, K, V 12,288, logsumexp
     * 128, proj input 8192, norm2 input 8192) = 45,184; router input 8192; fp32
     * probabilities 4 x 8 = 32; 2 choices x (8 + 4) = 24; the 2 returned expert rows
     * 2 x 2 x 4096 = 16,384; the rank's experts process T x 2 rows: per token 2 input rows
     * 2 x 2 x 4096 = 16,384 and their SwiGLU intermediates 2 x 3 x 2 x 14336 = 172,032.
     * Total 258,232 per token, x 4096 = 1,057,718,272. */
    model_spec m = mixtral_8x7b();
    model_shape sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, -1),
               1057718272.0, 0, 0);
    /* the same with the local tokens given: 2 T = 8192 */
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, 8192),
               1057718272.0, 0, 0);
    /* selective drops the logsumexp (128 per token); full keeps the 8192-byte input */
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE, -1),
               258104.0 * 4096, 0, 0);
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL, -1),
               8192.0 * 4096, 0, 0);
    /* Skewed load on ep = 4: 3000 + 500 rows instead of 8192, each 2 x 4096 (input) +
     * 3 x 2 x 14336 (intermediates) = 94,208 bytes: 4692 rows fewer, 442,023,936 fewer. */
    const double tokens[2] = {3000, 500};
    model_moe_load load = {.n_local = 2, .tokens = tokens};
    sh.ep = 4, sh.moe = &load;
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, -1),
               1057718272.0 - 4692.0 * 94208, 0, 0);
    /* an explicit local_tokens overrides the load (the planner's peak rank, say) */
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, 8192),
               1057718272.0, 0, 0);
    /* One shared expert: a dense SwiGLU MLP of 14336 on the T tokens, 3 x 2 x 14336 =
     * 86,016 per token more (its input is the router's, already kept). */
    m.moe.shared_experts = 1;
    sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, -1),
               (258232.0 + 86016) * 4096, 0, 0);
    /* TP 2 + SP, no shared: the attention part halves (22,592), the router input too
     * (4096); probabilities, choices and returned rows (16,440) and the expert input rows
     * (16,384) do not; expert intermediates halve (86,016): 145,528 per token. */
    m.moe.shared_experts = 0;
    sh = shape(1, 4096, 2, true, true);
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, -1),
               145528.0 * 4096, 0, 0);
}

/* ---- multi-head latent attention ---------------------------------------------------------- */

/* deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads, q_lora_rank 1536,
 * kv_lora_rank 512, qk_nope_head_dim 128 (head_dim), qk_rope_head_dim 64, v_head_dim 128,
 * vocab 129280, untied, RMSNorm, RoPE, SwiGLU; intermediate_size 18432 for the first 3
 * (dense) layers, then 256 routed experts of 2048 (8 per token) and 1 shared expert. */
static model_spec deepseek_v3(void)
{
    return (model_spec){.name = "deepseek-v3", .layers = 61, .hidden = 7168, .heads = 128,
                        .head_dim = 128, .ffn = 18432, .vocab = 129280,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE,
                        .attention = {.kind = MODEL_ATTN_MLA, .q_lora_rank = 1536,
                                      .kv_lora_rank = 512, .qk_rope_head_dim = 64,
                                      .v_head_dim = 128},
                        .moe = {.experts = 256, .top_k = 8, .expert_ffn = 2048,
                                .shared_experts = 1, .dense_layers = 3}};
}

/* A small MLA model to count by hand: h 64, 4 heads, head_dim (qk_nope) 8, qk_rope 4,
 * v_head_dim 6, q_lora_rank 16, kv_lora_rank 12, SwiGLU ffn 128, vocab 100, 2 layers. */
static model_spec small_mla(void)
{
    return (model_spec){.name = "small-mla", .layers = 2, .hidden = 64, .heads = 4,
                        .head_dim = 8, .ffn = 128, .vocab = 100,
                        .activation = MODEL_ACT_SWIGLU, .norm = MODEL_NORM_RMSNORM,
                        .position = MODEL_POS_ROPE,
                        .attention = {.kind = MODEL_ATTN_MLA, .q_lora_rank = 16,
                                      .kv_lora_rank = 12, .qk_rope_head_dim = 4,
                                      .v_head_dim = 6}};
}

static void test_mla_params(void)
{
    /* small_mla. The fused down projection q_a + kv_a: 64 x (16 + 12 + 4) = 2,048; q_a norm
     * 16; q_b 16 x 4 heads x (8 + 4) = 768; kv_a norm 12; kv_b 12 x 4 x (8 + 6) = 672; o
     * (4 x 6) x 64 = 1,536; norm1, norm2 2 x 64 = 128: attention part 5,180. MLP
     * 3 x 64 x 128 = 24,576: per layer 29,756. Embedding and head 2 x 100 x 64 = 12,800,
     * final norm 64: total 12,864 + 2 x 29,756 = 72,376. */
    model_spec m = small_mla();
    model_params p;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, 29756);
    CHECK_INT_EQ(p.total, 72376);
    CHECK_INT_EQ(p.active, p.total);
    int64_t attn = 0;
    model_count_moe_params(&m, &attn, NULL, NULL, NULL);
    CHECK_INT_EQ(attn, 5180);
    /* the linear matrices (QLoRA's part): 2,048 + 768 + 672 + 1,536 + 24,576 = 29,600; the
     * rest, 156 = two 64-wide norms and the 16- and 12-wide latent norms, are the norms */
    CHECK_INT_EQ(model_layer_matrix_params(&m), 29600);

    /* Without query compression (q_lora_rank 0) q is h x a(d + dr) = 64 x 48 = 3,072 in the
     * fused GEMM beside kv_a's 64 x 16 = 1,024; no q_b, no q_a norm: 128 + 4,096 + 12 + 672
     * + 1,536 = 6,444. */
    m.attention.q_lora_rank = 0;
    model_count_moe_params(&m, &attn, NULL, NULL, NULL);
    CHECK_INT_EQ(attn, 6444);
    /* v_head_dim 0 defaults to head_dim 8: kv_b 12 x 4 x 16 = 768, o 32 x 64 = 2,048:
     * 5,180 - 672 - 1,536 + 768 + 2,048 = 5,788. */
    m = small_mla();
    m.attention.v_head_dim = 0;
    model_count_moe_params(&m, &attn, NULL, NULL, NULL);
    CHECK_INT_EQ(attn, 5788);
    /* LayerNorm: every norm gets a bias, 64 + 64 + 16 + 12 = 156 more; linear biases: only
     * o has one (Megatron-Core's MLA), 64 more. */
    m = small_mla();
    m.norm = MODEL_NORM_LAYERNORM;
    model_count_moe_params(&m, &attn, NULL, NULL, NULL);
    CHECK_INT_EQ(attn, 5180 + 156);
    m.norm = MODEL_NORM_RMSNORM, m.bias = true;
    model_count_moe_params(&m, &attn, NULL, NULL, NULL);
    CHECK_INT_EQ(attn, 5180 + 64);

    /* DeepSeek-V3. Attention part: q_a + kv_a 7168 x (1536 + 512 + 64) = 15,138,816; q_b
     * 1536 x 128 x 192 = 37,748,736; kv_b 512 x 128 x 256 = 16,777,216; o 16384 x 7168 =
     * 117,440,512; latent norms 1,536 + 512; norm1, norm2 14,336: 187,121,664. Dense layer
     * + 3 x 7168 x 18432 = 396,361,728: 583,483,392. MoE layer: + 256 experts x 3 x 7168 x
     * 2048 (44,040,192 each) + router 7168 x 256 = 1,835,008 + shared 44,040,192:
     * 187,121,664 + 11,274,289,152 + 1,835,008 + 44,040,192 = 11,507,286,016. Embedding and
     * head 2 x 129280 x 7168 = 1,853,358,080, final norm 7,168. Total 1,853,365,248 +
     * 3 x 583,483,392 + 58 x 11,507,286,016 = 671,026,404,352. Active: 8 experts instead of
     * 256 in each MoE layer, 58 x 248 x 44,040,192 = 633,492,121,728 fewer:
     * 37,552,282,624. */
    m = deepseek_v3();
    int64_t expert, router, shared;
    model_count_moe_params(&m, &attn, &expert, &router, &shared);
    CHECK_INT_EQ(attn, 187121664);
    CHECK_INT_EQ(expert, 44040192);
    CHECK_INT_EQ(router, 1835008);
    CHECK_INT_EQ(shared, 44040192);
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, 583483392);
    CHECK_INT_EQ(p.per_moe_layer, INT64_C(11507286016));
    CHECK_INT_EQ(p.total, INT64_C(671026404352));
    CHECK_INT_EQ(p.active, INT64_C(37552282624));
    /* Against the published "671B total, 37B activated" (DeepSeek-V3 technical report,
     * abstract; the 671B are the main model, the 14B MTP module aside). Both figures are
     * rounded to the billion, so each is good to +-0.5B. The total, 671.03B, is within it.
     * The report does not say how it counts the 0.93B input embedding, which a token only
     * reads one row of: counted in full our active figure is 37.55B, 0.55B above; without
     * it 36.63B, within 37 +- 0.5B. The check takes the latter, and bounds the former by
     * the embedding's size. */
    CHECK_NEAR((double)p.total, 671e9, 0, 0.5e9);
    CHECK_NEAR((double)(p.active - p.embedding), 37e9, 0, 0.5e9);
    CHECK_NEAR((double)p.active, 37e9, 0, 0.5e9 + (double)p.embedding);
}

static void test_mla_kernels(void)
{
    /* One dense DeepSeek-V3 layer, b = 1, s = 4096 (T = 4096), t = 1, flash. */
    model_spec m = deepseek_v3();
    model_shape sh = shape(1, 4096, 1, false, true);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    static const char *const fwd[] = {
        "norm1", "qkv", "attn.q_a_norm", "attn.kv_a_norm", "attn.q_b", "attn.kv_b", "rope",
        "attn", "proj", "residual1", "norm2", "mlp_up", "act", "mlp_down", "residual2"};
    check_names(&l, fwd, (int)SIM_ARRAY_LEN(fwd));

    /* Projections, 2 m k n each:
     *   qkv (q_a + kv_a)  2 x 4096 x 7168 x (1536 + 512 + 64)   =   124,017,180,672
     *   attn.q_b          2 x 4096 x 1536 x (128 x 192)         =   309,237,645,312
     *   attn.kv_b         2 x 4096 x 512 x (128 x 256)          =   137,438,953,472
     *   proj (o)          2 x 4096 x (128 x 128) x 7168         =   962,072,674,304 */
    CHECK_NEAR(find(&l, "qkv")->flops, 124017180672.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.q_b")->flops, 309237645312.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_b")->flops, 137438953472.0, 0, 0);
    CHECK_NEAR(find(&l, "proj")->flops, 962072674304.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_b")->model_flops, 137438953472.0, 0, 0);
    /* GEMM bytes: (T x h + h x 2112 + T x 2112) x 2 = 106,299,392 */
    CHECK_NEAR(find(&l, "qkv")->bytes, 106299392.0, 0, 0);
    /* Latent norms: RMSNorm over T x 1536 reads x and 1536 weights, writes y:
     * (2 x 4096 x 1536 + 1536) x 2 = 25,168,896 bytes, 4 FLOPs per element. */
    const model_op *op = find(&l, "attn.q_a_norm");
    CHECK(op->cls == HW_OP_VECTOR && !op->attn_core);
    CHECK_NEAR(op->bytes, 25168896.0, 0, 0);
    CHECK_NEAR(op->flops, 4.0 * 4096 * 1536, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_a_norm")->bytes, (2.0 * 4096 * 512 + 512) * 2, 0, 0);
    /* Attention core, scores of query/key dim 192, values of 128: the full QK^T and PV are
     * 2 s^2 a (192 + 128) = 2 x 4096^2 x 128 x 320 = 1,374,389,534,720 model FLOPs; causal
     * flash executes half, 687,194,767,360. It reads Q, K (128 x 192 each), V and writes O
     * (128 x 128 each) per token, 2 bytes, and the fp32 logsumexp per head:
     * 4096 x (2 x 24576 + 2 x 16384) x 2 + 4 x 128 x 4096 = 673,185,792 bytes. */
    op = find(&l, "attn");
    CHECK(op->attn_core);
    CHECK_NEAR(op->model_flops, 1374389534720.0, 0, 0);
    CHECK_NEAR(op->flops, 687194767360.0, 0, 0);
    CHECK_NEAR(op->bytes, 673185792.0, 0, 0);
    /* RoPE of the 128 query heads' 64 rotary dims and the shared 64-dim key, 3 FLOPs each:
     * 3 x 4096 x (128 x 64 + 64) = 101,449,728. Bytes, fused with assembling the inputs:
     * q in and Q out 2 x 128 x 192, kv_b's output 128 x 256 and k_rope 64 in, K and V
     * 128 x (192 + 128) out = 122,944 elements per token: 2 x 4096 x 122,944 = 1,007,157,248. */
    op = find(&l, "rope");
    CHECK_NEAR(op->flops, 101449728.0, 0, 0);
    CHECK_NEAR(op->bytes, 1007157248.0, 0, 0);
    /* A layer's forward model FLOPs: the four projections 1,532,766,453,760, the MLP
     * 2 x 4096 x 7168 x 36864 + 2 x 4096 x 18432 x 7168 = 3,246,995,275,776, attention
     * 1,374,389,534,720: 6,154,151,264,256. */
    CHECK_NEAR(sum_model_flops(&l, NULL), 6154151264256.0, 0, 0);

    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    static const char *const bwd[] = {
        "residual2.bwd", "mlp_down.dgrad", "mlp_down.wgrad", "act.bwd", "mlp_up.dgrad",
        "mlp_up.wgrad", "norm2.bwd", "residual1.bwd", "proj.dgrad", "proj.wgrad", "attn.bwd",
        "rope.bwd", "attn.kv_b.dgrad", "attn.kv_b.wgrad", "attn.q_b.dgrad", "attn.q_b.wgrad",
        "attn.kv_a_norm.bwd", "attn.q_a_norm.bwd", "qkv.dgrad", "qkv.wgrad", "norm1.bwd"};
    check_names(&l, bwd, (int)SIM_ARRAY_LEN(bwd));
    /* Backward is twice the forward in model FLOPs (every matmul), so 12,308,302,528,512. */
    CHECK_NEAR(sum_model_flops(&l, NULL), 2 * 6154151264256.0, 0, 0);
    /* FlashAttention-2's five backward matmuls: S, dQ, dK of the scores' size, dP, dV of the
     * context's: causal half of 2 s^2 a (3 x 192 + 2 x 128) = 4096^2 x 128 x 832 =
     * 1,786,706,395,136 executed FLOPs (2.6 x the forward's, not MHA's 2.5: dqk != dv). */
    op = find(&l, "attn.bwd");
    CHECK_NEAR(op->flops, 1786706395136.0, 0, 0);
    CHECK_NEAR(op->model_flops, 2 * 1374389534720.0, 0, 0);
    CHECK(op->attn_core);
    /* rope.bwd also sums the 128 heads' key-rope gradients: + 4096 x 128 x 64 */
    CHECK_NEAR(find(&l, "rope.bwd")->flops, 101449728.0 + 4096.0 * 128 * 64, 0, 0);
    /* each weight gradient is its matrix; the latent norms' wgrads are their weights */
    CHECK_INT_EQ(find(&l, "qkv.wgrad")->grad_params, 15138816);
    CHECK_INT_EQ(find(&l, "attn.q_b.wgrad")->grad_params, 37748736);
    CHECK_INT_EQ(find(&l, "attn.kv_b.wgrad")->grad_params, 16777216);
    CHECK_INT_EQ(find(&l, "proj.wgrad")->grad_params, 117440512);
    CHECK_INT_EQ(find(&l, "attn.q_a_norm.bwd")->grad_params, 1536);
    CHECK_INT_EQ(find(&l, "attn.kv_a_norm.bwd")->grad_params, 512);
    CHECK_INT_EQ(sum_grads(&l), 583483392); /* the dense layer's parameters */
    /* selective recompute re-runs only the attention core */
    for (int i = 0; i < l.n; i++)
        CHECK(l.op[i].attn_core == (strcmp(l.op[i].name, "attn.bwd") == 0));

    /* Unfused attention, s = 1024: scores 2 x 1024^2 x 128 x 192 = 51,539,607,552 and
     * context 2 x 1024^2 x 128 x 128 = 34,359,738,368, executed in full; backward twice
     * each. */
    sh = shape(1, 1024, 1, false, false);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "attn.scores")->flops, 51539607552.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.context")->flops, 34359738368.0, 0, 0);
    CHECK(find(&l, "rope") + 1 == find(&l, "attn.scores"));
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "attn.scores.bwd")->flops, 2 * 51539607552.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.context.bwd")->model_flops, 2 * 34359738368.0, 0, 0);
}

static void test_mla_tp(void)
{
    /* DeepSeek-V3, b = 1, s = 4096, t = 8: the per-head projections and the heads split by 8
     * (16 heads per rank), the down projections and latent norms do not. */
    model_spec m = deepseek_v3();
    model_shape sh = shape(1, 4096, 8, false, true);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv")->flops, 124017180672.0, 0, 0);       /* replicated */
    CHECK_NEAR(find(&l, "attn.q_b")->flops, 309237645312.0 / 8, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_b")->flops, 137438953472.0 / 8, 0, 0);
    CHECK_NEAR(find(&l, "proj")->flops, 962072674304.0 / 8, 0, 0);
    CHECK_NEAR(find(&l, "attn")->flops, 687194767360.0 / 8, 0, 0);
    CHECK_NEAR(find(&l, "attn.q_a_norm")->bytes, 25168896.0, 0, 0); /* replicated */
    /* Per-rank gradients: q_a + kv_a 15,138,816 and the latent norms 2,048 whole; q_b
     * 4,718,592, kv_b 2,097,152 and o 14,680,064 (an eighth each); norm1, norm2 14,336;
     * the MLP 396,361,728 / 8 = 49,545,216: 86,196,224. */
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(find(&l, "qkv.wgrad")->grad_params, 15138816);
    CHECK_INT_EQ(find(&l, "attn.q_b.wgrad")->grad_params, 4718592);
    CHECK_INT_EQ(find(&l, "attn.kv_b.wgrad")->grad_params, 2097152);
    CHECK_INT_EQ(find(&l, "proj.wgrad")->grad_params, 14680064);
    CHECK_INT_EQ(sum_grads(&l), 86196224);
    /* With SP the h-wide norms run on T/8 tokens; the GEMMs, the down projection
     * included, see all T (after the all-gather the planner puts before "qkv"). */
    sh.sp = true;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "norm1")->bytes, (2.0 * 512 * 7168 + 7168) * 2, 0, 0);
    CHECK_NEAR(find(&l, "qkv")->flops, 124017180672.0, 0, 0);
    /* Without query compression the fused GEMM carries the rank's 16 query heads of 192
     * and kv_a's 512 + 64 whole: 3,648 columns, 2 x 4096 x 7168 x 3648 FLOPs; its wgrad
     * 7168 x 3648 = 26,148,864 parameters. */
    m.attention.q_lora_rank = 0;
    sh.sp = false;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    static const char *const fwd[] = {"norm1", "qkv", "attn.kv_a_norm", "attn.kv_b", "rope",
                                      "attn", "proj", "residual1", "norm2", "mlp_up", "act",
                                      "mlp_down", "residual2"};
    check_names(&l, fwd, (int)SIM_ARRAY_LEN(fwd));
    CHECK_NEAR(find(&l, "qkv")->flops, 2.0 * 4096 * 7168 * 3648, 0, 0);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(find(&l, "qkv.wgrad")->grad_params, 26148864);
    CHECK(!has_op(&l, "attn.q_b.wgrad") && !has_op(&l, "attn.q_a_norm.bwd"));
}

static void test_mla_step(void)
{
    /* One rank without TP or EP produces every gradient once: DeepSeek-V3's step sums to
     * its 671,026,404,352 parameters, the small dense MLA model's to 72,376. */
    model_spec m = deepseek_v3();
    model_shape sh = shape(1, 2048, 1, false, true);
    int64_t g;
    double f;
    moe_step(&m, &sh, &g, &f);
    CHECK_INT_EQ(g, INT64_C(671026404352));
    model_spec s = small_mla();
    CHECK_INT_EQ(step_totals(&s, &sh).grad_params, 72376);

    /* MODEL_OPS_MAX: a MoE layer with MLA, unfused attention, a shared expert and 256 local
     * experts runs 5 x 256 + 28 backward kernels: residual2, 5 shared-expert kernels,
     * unpermute, permute, gate, router x 2 (11), and the MLA attention part: norm2,
     * residual1, proj x 2, 3 attention kernels, rope, kv_b x 2, q_b x 2, 2 latent norms,
     * qkv x 2, norm1 (17). */
    sh.flash_attention = false;
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_MOE, MODEL_PHASE_BWD, &l);
    CHECK_INT_EQ(l.n, 5 * 256 + 28);
    CHECK(l.n <= MODEL_OPS_MAX);
}

static void test_mla_lora(void)
{
    /* LoRA on the small dense MLA model, r = 2, all seven targets: MLA has no q, k or v
     * matrix, so o (24 -> 64) and the MLP are adapted: 2 x [(24 + 64) + (64 + 128) gate
     * + (64 + 128) up + (128 + 64) down] = 2 x 664 = 1,328 per layer. */
    model_spec m = small_mla();
    model_ft ft = {.method = MODEL_FT_LORA, .rank = 2, .targets = MODEL_TARGET_ALL};
    int64_t per_layer = -1;
    model_count_lora_params(&m, &ft, &per_layer);
    CHECK_INT_EQ(per_layer, 1328);
    model_shape sh = ft_shape(1, 64, 1, false, true, ft.method, ft.rank, ft.targets);
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK(!has_op(&l, "q.lora_a") && !has_op(&l, "k.lora_a") && !has_op(&l, "v.lora_a"));
    CHECK(find(&l, "proj") + 1 == find(&l, "o.lora_a"));
    /* frozen base: the step's gradients are the adapters' alone, 2 layers x 1,328 */
    CHECK_INT_EQ(step_totals(&m, &sh).grad_params, 2 * 1328);
    /* QLoRA dequantises every base GEMM of the layer before its forward and its dgrad:
     * qkv, attn.q_b, attn.kv_b, proj, mlp_up, mlp_down. */
    ft.method = MODEL_FT_QLORA;
    sh = ft_shape(1, 64, 1, false, true, ft.method, ft.rank, ft.targets);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    static const char *const deq[] = {"qkv.dequant", "attn.q_b.dequant", "attn.kv_b.dequant",
                                      "proj.dequant", "mlp_up.dequant", "mlp_down.dequant"};
    int n = 0;
    for (int i = 0; i < l.n; i++)
        n += ends_with(l.op[i].name, ".dequant");
    CHECK_INT_EQ(n, 6);
    for (size_t i = 0; i < SIM_ARRAY_LEN(deq); i++)
        CHECK(has_op(&l, deq[i]));
    /* the dequantised weights are QLoRA's matrices: the layer's 29,600 */
    double P = 0;
    for (int i = 0; i < l.n; i++)
        if (ends_with(l.op[i].name, ".dequant"))
            P += l.op[i].flops / 2;
    CHECK_NEAR(P, 29600.0, 0, 0);
}

static void test_mla_activations(void)
{
    /* A dense DeepSeek-V3 layer, b = 1, s = 4096, flash, t = 1, bytes per token:
     * norm1 and qkv inputs 2 x 2 x 7168 = 28,672; q_a_norm and q_b inputs 2 x 2 x 1536 =
     * 6,144; kv_a_norm and kv_b inputs 2 x 2 x 512 = 2,048; Q, K, V 2 x 128 x (192 + 192
     * + 128) = 131,072; logsumexp 4 x 128 = 512; attention output 2 x 128 x 128 = 32,768;
     * norm2 input 14,336: attention part 215,552. MLP: mlp_up input 14,336, SwiGLU
     * 3 x 2 x 18432 = 110,592. Total 340,480 per token, x 4096 = 1,394,606,080. */
    model_spec m = deepseek_v3();
    model_shape sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE),
               340480.0 * 4096, 0, 0);
    /* selective drops the logsumexp; full keeps the 14,336-byte layer input */
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_SELECTIVE),
               (340480.0 - 512) * 4096, 0, 0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL), 14336.0 * 4096,
               0, 0);
    /* t = 8, no SP: the h-wide tensors (3 x 14,336 + mlp_up's 14,336) and the latents
     * (8,192) stay whole; Q, K, V (16,384), logsumexp (64), output (4,096) and the SwiGLU
     * intermediates (13,824) split: 99,904 per token. */
    sh = shape(1, 4096, 8, false, true);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 99904.0 * 4096,
               0, 0);
    /* With SP the four h-wide tensors split too (4 x 1,792): 49,728 per token. */
    sh.sp = true;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 49728.0 * 4096,
               0, 0);
    /* Unfused attention at s = 1024 keeps the softmax output, 2 x 128 heads x 1024 per
     * token, instead of the logsumexp (no dropout). */
    sh = shape(1, 1024, 1, false, false);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE),
               (340480.0 - 512 + 2.0 * 128 * 1024) * 1024, 0, 0);
    /* A MoE layer, uniform routing, t = 1: the attention part 215,552; router input 14,336;
     * fp32 probabilities 4 x 256 = 1,024; 8 choices x 12 = 96; 8 returned rows 8 x 14,336 =
     * 114,688; 8 dispatched rows 114,688; their SwiGLU intermediates 8 x 3 x 2 x 2048 =
     * 98,304; the shared expert's 3 x 2 x 2048 = 12,288: 570,976 per token. */
    sh = shape(1, 4096, 1, false, true);
    CHECK_NEAR(model_moe_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE, -1),
               570976.0 * 4096, 0, 0);
}

/* Context parallelism (ring attention with causal load balancing). */
static void test_context_parallel(void)
{
    model_spec m = llama31_8b();
    model_shape one = shape(1, 32768, 1, false, true), four = one;
    four.cp = 4;
    model_op_list a, c;
    /* Per-token kernels work on the rank's s/c tokens: the QKV GEMM is a quarter */
    model_block_ops(&m, &one, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &a);
    model_block_ops(&m, &four, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &c);
    CHECK_NEAR(find(&c, "qkv")->flops, find(&a, "qkv")->flops / 4, 1e-12, 0);
    /* The core is c = 4 ring steps; a rank's queries (s/c) see the whole context (s), so its
     * executed causal work is (s/c)·s/2 of the s²/2 without CP, 1/c, split evenly over the c
     * steps by the load balancing: each step 1/c² = 1/16 of the unsplit kernel, in executed
     * and model FLOPs. Over c ranks x c steps the model FLOPs add up to the unsplit s². */
    int steps = 0;
    double flops = 0, model = 0;
    for (int i = 0; i < c.n; i++)
        if (c.op[i].attn_core) {
            steps++;
            CHECK_INT_EQ(c.op[i].cp_step, steps);
            CHECK_STR_EQ(c.op[i].name, "attn");
            /* the first step is the causal diagonal; the others see whole blocks, no mask */
            CHECK(c.op[i].cls == (steps == 1 ? HW_OP_ATTN_FWD : HW_OP_ATTN_FWD_FULL));
            CHECK_NEAR(c.op[i].flops, find(&a, "attn")->flops / 16, 1e-12, 0);
            flops += c.op[i].flops;
            model += c.op[i].model_flops;
        }
    CHECK_INT_EQ(steps, 4);
    CHECK_NEAR(4 * model, find(&a, "attn")->model_flops, 1e-12, 0);
    CHECK_INT_EQ(find(&a, "attn")->cp_step, 0);
    /* backward: 4 steps of 1/16 of "attn.bwd" */
    model_block_ops(&m, &one, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &a);
    model_block_ops(&m, &four, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &c);
    steps = 0;
    for (int i = 0; i < c.n; i++)
        if (c.op[i].attn_core) {
            steps++;
            CHECK_INT_EQ(c.op[i].cp_step, steps);
            CHECK(c.op[i].cls == (steps == 1 ? HW_OP_ATTN_BWD : HW_OP_ATTN_BWD_FULL));
            CHECK_NEAR(c.op[i].flops, find(&a, "attn.bwd")->flops / 16, 1e-12, 0);
        }
    CHECK_INT_EQ(steps, 4);
    /* The K/V block a step passes on: b·(s/c) = 8,192 tokens x 8 KV heads x (128 + 128) x 2
     * bytes = 33,554,432; with tp = 8, one KV head per rank: 4,194,304. None without CP. */
    CHECK_NEAR(model_cp_kv_bytes(&m, &four), 33554432.0, 0, 0);
    model_shape tp8 = four;
    tp8.tp = 8;
    CHECK_NEAR(model_cp_kv_bytes(&m, &tp8), 4194304.0, 0, 0);
    CHECK_NEAR(model_cp_kv_bytes(&m, &one), 0, 0, 0);
    /* MLA passes every head's key (qk_nope + qk_rope = 12) and value (6): 4 heads x 18 x 2
     * bytes per token, b·s/c = 2 x 64 / 2 = 64 tokens: 9,216 */
    model_spec mla = small_mla();
    model_shape ms = shape(2, 64, 1, false, true);
    ms.cp = 2;
    CHECK_NEAR(model_cp_kv_bytes(&mla, &ms), 9216.0, 0, 0);
    /* Activations are per token: cp = 4 at s keeps what cp = 1 keeps at s/4 */
    model_shape quarter = shape(1, 8192, 1, false, true);
    CHECK_NEAR(model_layer_activation_bytes(&m, &four, MODEL_RECOMPUTE_NONE),
               model_layer_activation_bytes(&m, &quarter, MODEL_RECOMPUTE_NONE), 1e-12, 0);
    CHECK_NEAR(model_head_activation_bytes(&m, &four), model_head_activation_bytes(&m, &quarter),
               1e-12, 0);
}

/* fp8 (training.precision: fp8; docs/models.md, "fp8"): Llama-3.1-8B, b = 2, s = 4096
 * (T = 8192), no TP, as test_llama_gemms. Transformer Engine's linear layers:
 *   forward  "<g>.wcast" (the weight, k x n: reads 2 bytes, writes fp8 and its transpose:
 *            4 k n bytes, k n FLOPs for the amax), "<g>.cast" (the input, T x k: 4 T k
 *            bytes), then the GEMM in fp8 reading 1-byte operands and writing bf16:
 *            qkv: T k + k n + 2 T n = 8192 x 4096 + 4096 x 6144 + 2 x 8192 x 6144
 *                 = 33,554,432 + 25,165,824 + 100,663,296 = 159,383,552 bytes;
 *            qkv.wcast 4 x 4096 x 6144 = 100,663,296. QKV is behind norm1 (TE's
 *            LayerNormLinear): the norm writes its fp8 input, 1 byte an element instead of 2
 *            (Tn k = 33,554,432 fewer), and "qkv.cast" is the transpose of that input for the
 *            weight gradient (read 1, write 1: 2 T k = 67,108,864): 33,554,432 net. The
 *            projection's input, the attention output, takes a whole cast_transpose:
 *            proj.cast 4 T q = 4 x 8192 x 4096 = 134,217,728.
 *   backward "<g>.dgrad.cast" (the output gradient, T x n: 4 T n bytes), the dgrad (reads
 *            dY and W in fp8, writes dX in bf16) and the wgrad (reads X^T and dY^T in fp8,
 *            writes dW in bf16), both fp8:
 *            qkv.dgrad.cast 4 x 8192 x 6144 = 201,326,592;
 *            qkv.dgrad T n + k n + 2 T k = 50,331,648 + 25,165,824 + 67,108,864 = 142,606,336;
 *            qkv.wgrad T k + T n + 2 k n = 33,554,432 + 50,331,648 + 50,331,648 = 134,217,728.
 * Attention, the norms and the LM head stay bf16 (2-byte operands, not fp8); FLOPs are the
 * bf16 run's. */
static void test_fp8_linear(void)
{
    model_spec m = llama31_8b();
    model_shape sh = shape(2, 4096, 1, false, true);
    sh.dtype = HW_DTYPE_FP8;
    model_op_list l;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    static const char *const fwd[] = {
        "norm1",      "qkv.wcast",     "qkv.cast",      "qkv",      "rope",
        "attn",       "proj.wcast",    "proj.cast",     "proj",     "residual1",
        "norm2",      "mlp_up.wcast",  "mlp_up.cast",   "mlp_up",   "act",
        "mlp_down.wcast", "mlp_down.cast", "mlp_down",  "residual2"};
    CHECK_INT_EQ(l.n, (int)SIM_ARRAY_LEN(fwd));
    for (int i = 0; i < l.n && i < (int)SIM_ARRAY_LEN(fwd); i++)
        CHECK_STR_EQ(l.op[i].name, fwd[i]);
    const model_op *op = find(&l, "qkv");
    CHECK(op->fp8 && !op->weight_cast);
    CHECK(model_op_dtype(&sh, op) == HW_DTYPE_FP8);
    CHECK_NEAR(op->flops, 412316860416.0, 0, 0);
    CHECK_NEAR(op->bytes, 159383552.0, 0, 0);
    op = find(&l, "qkv.cast");
    CHECK(op->cls == HW_OP_VECTOR && !op->fp8 && !op->weight_cast);
    CHECK_NEAR(op->bytes, 33554432.0, 0, 0);
    CHECK_NEAR(op->model_flops, 0, 0, 0);
    CHECK_NEAR(find(&l, "proj.cast")->bytes, 134217728.0, 0, 0);
    op = find(&l, "qkv.wcast");
    CHECK(op->weight_cast);
    CHECK_NEAR(op->bytes, 100663296.0, 0, 0);
    CHECK_NEAR(op->flops, 4096.0 * 6144, 0, 0);
    /* attention is bf16 in an fp8 run */
    op = find(&l, "attn");
    CHECK(!op->fp8 && model_op_dtype(&sh, op) == HW_DTYPE_BF16);

    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "qkv.dgrad.cast")->bytes, 201326592.0, 0, 0);
    op = find(&l, "qkv.dgrad");
    CHECK(op->fp8);
    CHECK_NEAR(op->bytes, 142606336.0, 0, 0);
    op = find(&l, "qkv.wgrad");
    CHECK(op->fp8);
    CHECK_NEAR(op->bytes, 134217728.0, 0, 0);
    CHECK_NEAR(op->grad_params, 4096.0 * 6144, 0, 0);

    /* Activations (docs/models.md, "fp8"): the QKV and MLP-up inputs are kept as their fp8
     * casts (1 byte instead of 2: -T h each), MLP-down's input too (-T f), and the
     * projection keeps its own fp8 copy beside the attention's bf16 output (+T q):
     * 8192 x (-4096 - 4096 - 14336 + 4096) = -150,994,944 bytes a layer, with no or selective
     * recompute; full recompute keeps the layer input alone, in bf16 either way. */
    model_shape b16 = shape(2, 4096, 1, false, true);
    for (int rc = 0; rc < 3; rc++) {
        model_recompute r = rc == 0 ? MODEL_RECOMPUTE_NONE
                            : rc == 1 ? MODEL_RECOMPUTE_SELECTIVE : MODEL_RECOMPUTE_FULL;
        CHECK_NEAR(model_layer_activation_bytes(&m, &sh, r) -
                       model_layer_activation_bytes(&m, &b16, r),
                   r == MODEL_RECOMPUTE_FULL ? 0 : -150994944.0, 0, 0);
    }

    /* Under TP 8 with sequence parallelism (Tn = T/8 = 1,024 tokens per shard): the norm's
     * fp8 output saves Tn h = 4,194,304 bytes, the transpose of the gathered input is still
     * 2 T h = 67,108,864: qkv.cast 62,914,560. The projection's output gradient arrives as
     * a sequence shard: cast there (read 2, write 1: 3 Tn h = 12,582,912), gathered in fp8,
     * transposed whole (2 T h = 67,108,864): proj.dgrad.cast 79,691,776; qkv.dgrad's dY is
     * whole (4 T n, n = 6144 / 8 = 768: 25,165,824). */
    model_shape tp8 = shape(2, 4096, 8, true, true);
    tp8.dtype = HW_DTYPE_FP8;
    model_block_ops(&m, &tp8, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 62914560.0, 0, 0);
    model_block_ops(&m, &tp8, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "proj.dgrad.cast")->bytes, 79691776.0, 0, 0);
    CHECK_NEAR(find(&l, "qkv.dgrad.cast")->bytes, 25165824.0, 0, 0);

    /* MLA (small_mla: h 64, q_lora_rank 16, kv_lora_rank 12), b = 1, s = 8, TP 2 with SP
     * (T = 8, Tn = 4). Megatron-Core's MLA has its input norm apart and plain down
     * projections ("qkv"): the shard is cast (3 Tn h = 768 bytes), gathered in fp8 and
     * transposed whole (2 T h = 1,024): 1,792. Its up projections are fused with their
     * latent norms, which run on all T tokens: only the transposes less what the norm no
     * longer writes, T ql = 128 and T kl = 96. The MLP's up behind norm2 as a dense layer's:
     * 2 T h - Tn h = 1,024 - 256 = 768. Without SP the down projection's cast is whole:
     * 4 T h = 2,048. */
    model_spec mla = small_mla();
    model_shape ms = shape(1, 8, 2, true, true);
    ms.dtype = HW_DTYPE_FP8;
    model_block_ops(&mla, &ms, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 1792.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.q_b.cast")->bytes, 128.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_b.cast")->bytes, 96.0, 0, 0);
    CHECK_NEAR(find(&l, "mlp_up.cast")->bytes, 768.0, 0, 0);
    ms.sp = false;
    model_block_ops(&mla, &ms, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 2048.0, 0, 0);

    /* Current scaling (training.fp8_recipe: current): each cast reads its 16-bit input once
     * more for the amax (2 bytes an element). The norm writes 16 bits and takes their amax
     * as it writes them (TE's fused norm + amax), so QKV's input is cast like a plain
     * layer's, without the extra read. No TP: qkv.wcast 6 k n = 6 x 4096 x 6144 =
     * 150,994,944; qkv.cast 4 T h = 4 x 8192 x 4096 = 134,217,728; proj.cast 6 T q =
     * 201,326,592; qkv.dgrad.cast 6 T n = 6 x 8192 x 6144 = 301,989,888. TP 8 + SP: QKV's
     * input arrives as a shard, cast there (3 Tn h = 12,582,912), gathered in fp8 and
     * transposed whole (2 T h = 67,108,864): 79,691,776; the projection's dY shard also takes
     * the amax read: (2 + 3) Tn h + 2 T h = 20,971,520 + 67,108,864 = 88,080,384. */
    model_shape cur = shape(2, 4096, 1, false, true);
    cur.dtype = HW_DTYPE_FP8;
    cur.fp8_current = true;
    model_block_ops(&m, &cur, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.wcast")->bytes, 150994944.0, 0, 0);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 134217728.0, 0, 0);
    CHECK_NEAR(find(&l, "proj.cast")->bytes, 201326592.0, 0, 0);
    model_block_ops(&m, &cur, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "qkv.dgrad.cast")->bytes, 301989888.0, 0, 0);
    cur = tp8;
    cur.fp8_current = true;
    model_block_ops(&m, &cur, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 79691776.0, 0, 0);
    model_block_ops(&m, &cur, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &l);
    CHECK_NEAR(find(&l, "proj.dgrad.cast")->bytes, 88080384.0, 0, 0);
    /* MLA under current scaling (small_mla, TP 2 + SP: T = 8, Tn = 4, h = 64): the down
     * projections' input is a plain shard with the amax read, (2 + 3) Tn h + 2 T h = 1,280 +
     * 1,024 = 2,304; the up projections behind their latent norms cast like a plain input
     * without it, 4 T ql = 512 and 4 T kl = 384; the MLP's up behind norm2 3 Tn h + 2 T h =
     * 1,792. */
    ms = shape(1, 8, 2, true, true);
    ms.dtype = HW_DTYPE_FP8;
    ms.fp8_current = true;
    model_block_ops(&mla, &ms, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
    CHECK_NEAR(find(&l, "qkv.cast")->bytes, 2304.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.q_b.cast")->bytes, 512.0, 0, 0);
    CHECK_NEAR(find(&l, "attn.kv_b.cast")->bytes, 384.0, 0, 0);
    CHECK_NEAR(find(&l, "mlp_up.cast")->bytes, 1792.0, 0, 0);

    /* the LM head is bf16: T h + h V + T V elements, 2 bytes each */
    model_block_ops(&m, &sh, MODEL_BLOCK_HEAD, MODEL_PHASE_FWD, &l);
    op = find(&l, "lm_head");
    CHECK(!op->fp8);
    CHECK_NEAR(op->bytes, 2.0 * (8192.0 * 4096 + 4096.0 * 128256 + 8192.0 * 128256), 0, 0);
}

/* Sum of FLOPs and bytes of the kernels named `name`, and their count. */
static int sum_named(const model_op_list *l, const char *name, double *flops, double *bytes)
{
    int n = 0;
    *flops = *bytes = 0;
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->op[i].name, name) == 0) {
            *flops += l->op[i].flops;
            *bytes += l->op[i].bytes;
            n++;
        }
    return n;
}

/* The kernels named `name` marked as eager composite ops' (HW_VECTOR_EAGER). */
static int count_eager(const model_op_list *l, const char *name)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        n += strcmp(l->op[i].name, name) == 0 && l->op[i].cls == HW_OP_VECTOR &&
             l->op[i].inner == HW_VECTOR_EAGER;
    return n;
}

/* The single kernels of a GPT layer (LayerNorm, GELU, the residual adds, the position add)
 * are eager PyTorch's native kernels where it runs them itself, and carry the eager mark
 * (HW_VECTOR_EAGER: the GPU's memory_efficiency_eager times them); their bytes do not change.
 * gpt(2, 256, 4, 1000, 128), b = 2, s = 128, bf16 (e = 2): X = 256 x 256 = 65,536 hidden
 * elements, a LayerNorm forward 2e X + e 2h = 4 X + 1,024 bytes either way.
 *   eager, norms composite (norm_kernel default): norm1, act, residual1, pos_embed marked;
 *   eager, norms fused (Apex/TE/Liger, norm_kernel fused): LayerNorm not, the others marked;
 *   eager fp8 (Transformer Engine's modules): none; compiled: none. */
static void test_native_pointwise(void)
{
    model_spec m = gpt(2, 256, 4, 1000, 128);
    model_shape sh = shape(2, 128, 1, false, true);
    const double X = 256.0 * 256;
    static model_op_list l, emb;
    struct {
        bool eager, composite_norm, fp8;
        int norm, act, res, pos;
    } cases[] = {{true, true, false, 1, 1, 1, 1},
                 {true, false, false, 0, 1, 1, 1},
                 {true, true, true, 0, 0, 0, 0},
                 {false, false, false, 0, 0, 0, 0}};
    for (size_t c = 0; c < SIM_ARRAY_LEN(cases); c++) {
        sh.eager = cases[c].eager;
        sh.composite_norm = cases[c].composite_norm;
        sh.dtype = cases[c].fp8 ? HW_DTYPE_FP8 : HW_DTYPE_BF16;
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
        model_block_ops(&m, &sh, MODEL_BLOCK_EMBED, MODEL_PHASE_FWD, &emb);
        CHECK_INT_EQ(count_eager(&l, "norm1"), cases[c].norm);
        CHECK_INT_EQ(count_eager(&l, "act"), cases[c].act);
        CHECK_INT_EQ(count_eager(&l, "residual1"), cases[c].res);
        CHECK_INT_EQ(count_eager(&emb, "pos_embed"), cases[c].pos);
        const model_op *n1 = find(&l, "norm1");
        CHECK(n1 && n1->bytes == 4 * X + 1024);
    }
}

/* Which forward kernels an early-stopping full recompute (PyTorch's non-reentrant
 * checkpoint) skips: in a dense bf16 layer without dropout the down GEMM (fc2: aten's addmm
 * saves its input before it runs, the last tensor the backward needs) and the second
 * residual add after it; nothing in an fp8 layer (Transformer Engine's linear layers save
 * after their GEMM), nor with dropout (the second dropout's mask, saved once the down GEMM
 * has run, is the last tensor). The other policies are unchanged by the flag: selective
 * re-runs the attention core, the per-op policy its op_share (0 for the down GEMM), none
 * nothing. */
static void test_recompute_share(void)
{
    model_spec m = gpt(2, 256, 4, 1000, 128);
    model_shape sh = shape(2, 128, 1, false, true);
    static model_op_list l;
    for (int c = 0; c < 3; c++) {
        bool fp8 = c == 1, dropout = c == 2;
        m.dropout = dropout ? 0.1 : 0;
        sh.dtype = fp8 ? HW_DTYPE_FP8 : HW_DTYPE_BF16;
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &l);
        int skipped = 0;
        for (int i = 0; i < l.n; i++) {
            const model_op *o = &l.op[i];
            double full = model_recompute_share(o, MODEL_RECOMPUTE_FULL, false);
            double early = model_recompute_share(o, MODEL_RECOMPUTE_FULL, true);
            CHECK_NEAR(full, 1, 0, 0);
            bool down = strcmp(o->name, "mlp_down") == 0 || strcmp(o->name, "residual2") == 0;
            CHECK_NEAR(early, !fp8 && !dropout && down ? 0 : 1, 0, 0);
            skipped += early == 0;
            for (int es = 0; es < 2; es++) {
                CHECK_NEAR(model_recompute_share(o, MODEL_RECOMPUTE_NONE, es), 0, 0, 0);
                CHECK_NEAR(model_recompute_share(o, MODEL_RECOMPUTE_SELECTIVE, es),
                           o->attn_core ? 1 : 0, 0, 0);
                CHECK_NEAR(model_recompute_share(o, MODEL_RECOMPUTE_OP, es), o->op_share, 0, 0);
            }
        }
        CHECK_INT_EQ(skipped, fp8 || dropout ? 0 : 2);
        /* the per-op policy stops early too: this GELU layer's fc2 (the sixth matmul, not
         * saved) and the second residual add re-run only when the dropout mask after them is
         * the last saved tensor */
        const model_op *down = find(&l, "mlp_down"), *res2 = find(&l, "residual2");
        CHECK(down && res2);
        if (down && res2 && !fp8) {
            CHECK_NEAR(down->op_share, dropout ? 1 : 0, 0, 0);
            CHECK_NEAR(res2->op_share, dropout ? 1 : 0, 0, 0);
        }
    }
}

/* Eager PyTorch (model_shape.eager, training.compile: false) against fused pointwise kernels,
 * Llama-3.1-8B, b = 1, s = 4096, bf16 (e = 2), no TP: X = 4096 x 4096 = 16,777,216 elements
 * of the hidden state, h = 4096 norm weights.
 *   norm1 forward:  fused 2e X + e h = 4 X + 8,192 bytes, one kernel; eager (composite
 *                   rms_norm, model.c): 36 X + 8,192 in 8 kernels.
 *   norm1 backward: fused 3e X + 2e h = 6 X + 16,384; eager 76 X + 16,384 in 12 kernels, the
 *                   weight gradient (4,096) on the last.
 *   SwiGLU on T f = 4096 x 14336 = 58,720,256 elements: forward fused 3e = 6, eager 5e = 10
 *                   bytes each in 2 kernels; backward fused 5e = 10, eager 9e = 18 in 3.
 *   RoPE on Q and K, T (q + kv) = 4096 x 5120 = 20,971,520 elements: fused 2e = 4, eager
 *                   (e+4) + 8 + (4+e) = 20 bytes each in 3 kernels per tensor, 6 in all.
 * FLOPs are the same work either way; the GEMMs do not change. */
static void test_eager_pointwise(void)
{
    model_spec m = llama31_8b();
    model_shape sh = shape(1, 4096, 1, false, true);
    const double X = 4096.0 * 4096, F = 4096.0 * 14336, QK = 4096.0 * 5120;
    static model_op_list fused, eager;
    double ff, fb, ef, eb;
    for (int ph = 0; ph < 2; ph++) {
        model_phase mph = ph ? MODEL_PHASE_BWD : MODEL_PHASE_FWD;
        sh.eager = sh.composite_norm = false;
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, mph, &fused);
        sh.eager = sh.composite_norm = true;
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, mph, &eager);
        const char *norm = ph ? "norm1.bwd" : "norm1", *act = ph ? "act.bwd" : "act";
        const char *rope = ph ? "rope.bwd" : "rope";
        CHECK_INT_EQ(sum_named(&fused, norm, &ff, &fb), 1);
        CHECK_INT_EQ(sum_named(&eager, norm, &ef, &eb), ph ? 12 : 8);
        CHECK_NEAR(fb, (ph ? 6 : 4) * X + (ph ? 16384 : 8192), 1e-12, 0);
        CHECK_NEAR(eb, (ph ? 76 : 36) * X + (ph ? 16384 : 8192), 1e-12, 0);
        CHECK_NEAR(ef, ff, 1e-12, 0);
        CHECK_INT_EQ(sum_named(&fused, act, &ff, &fb), 1);
        CHECK_INT_EQ(sum_named(&eager, act, &ef, &eb), ph ? 3 : 2);
        CHECK_NEAR(fb, (ph ? 10 : 6) * F, 1e-12, 0);
        CHECK_NEAR(eb, (ph ? 18 : 10) * F, 1e-12, 0);
        CHECK_INT_EQ(sum_named(&fused, rope, &ff, &fb), 1);
        CHECK_INT_EQ(sum_named(&eager, rope, &ef, &eb), 6);
        CHECK_NEAR(fb, 4 * QK, 1e-12, 0);
        CHECK_NEAR(eb, 20 * QK, 1e-12, 0);
        /* each composite kernel is marked eager (the GPU's memory_efficiency_eager times
         * it), no fused one */
        CHECK_INT_EQ(count_eager(&eager, norm), ph ? 12 : 8);
        CHECK_INT_EQ(count_eager(&eager, act), ph ? 3 : 2);
        CHECK_INT_EQ(count_eager(&eager, rope), 6);
        CHECK_INT_EQ(count_eager(&fused, norm) + count_eager(&fused, act) +
                         count_eager(&fused, rope), 0);
        /* eager with a fused norm (training.norm_kernel: fused, torchtitan's fused_rmsnorm):
         * the norm is the fused kernel, SwiGLU stays eager */
        sh.composite_norm = false;
        static model_op_list mixed;
        model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, mph, &mixed);
        CHECK_INT_EQ(sum_named(&mixed, norm, &ef, &eb), 1);
        CHECK_NEAR(eb, (ph ? 6 : 4) * X + (ph ? 16384 : 8192), 1e-12, 0);
        CHECK_INT_EQ(count_eager(&mixed, norm), 0);
        CHECK_INT_EQ(sum_named(&mixed, act, &ef, &eb), ph ? 3 : 2);
        /* the GEMMs are the same kernels */
        const model_op *g1 = find(&fused, ph ? "mlp_up.dgrad" : "mlp_up");
        const model_op *g2 = find(&eager, ph ? "mlp_up.dgrad" : "mlp_up");
        CHECK(g1 && g2 && g1->flops == g2->flops && g1->bytes == g2->bytes);
    }
    /* the flash kernels carry their head dimension (the catalog's head-dim factor) */
    sh.eager = false;
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_FWD, &fused);
    const model_op *at = find(&fused, "attn");
    CHECK(at && at->inner == 128);
    model_block_ops(&m, &sh, MODEL_BLOCK_LAYER, MODEL_PHASE_BWD, &fused);
    at = find(&fused, "attn.bwd");
    CHECK(at && at->inner == 128);
    /* the weight gradient stays whole, on the last kernel of the norm's backward */
    int64_t grads = 0;
    for (int i = 0; i < eager.n; i++)
        if (strcmp(eager.op[i].name, "norm1.bwd") == 0)
            grads += eager.op[i].grad_params;
    CHECK_INT_EQ(grads, 4096);
}

/* What eager PyTorch's autograd keeps beyond the fused kernels' set (docs/models.md,
 * "Activation memory"), Llama-3.1-8B, b = 1, s = 4096, bf16, flash, per token:
 *   composite RMSNorm: the fp32 upcast of its input (4h) and the normalised 16-bit copy (2h)
 *     instead of the 16-bit input (2h): + 4h = 16,384 for each of norm1 and norm2;
 *   eager SwiGLU: silu(gate)'s output beside gate and up, + 2f = 28,672.
 * Without recompute 139,392 + 2 x 16,384 + 28,672 = 200,832 per token; with a fused norm
 * (norm_kernel: fused) 139,392 + 28,672 = 168,064. Per-op and full recompute keep what they
 * kept (the norms and SwiGLU are rebuilt), so what the layer rebuilds grows by the same
 * 61,440 per token. The head: final norm + 4h = 16,384 per token. Qwen3-4B's q/k norms
 * (RMSNorms on 4096 + 1024 of each token's elements) add 4 x 5120 = 20,480 per token. */
static void test_eager_activations(void)
{
    model_spec m = llama31_8b();
    model_shape sh = shape(1, 4096, 1, false, true);
    double head = model_head_activation_bytes(&m, &sh);
    double op = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_OP);
    double full = model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL);
    sh.eager = sh.composite_norm = true;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 200832.0 * 4096, 0,
               0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_OP), op, 0, 0);
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_FULL), full, 0, 0);
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), head + 16384.0 * 4096, 0, 0);
    sh.composite_norm = false;
    CHECK_NEAR(model_layer_activation_bytes(&m, &sh, MODEL_RECOMPUTE_NONE), 168064.0 * 4096, 0,
               0);
    CHECK_NEAR(model_head_activation_bytes(&m, &sh), head, 0, 0);
    /* a LayerNorm model's norms are one native kernel either way: only SwiGLU's extra */
    model_spec ln = m;
    ln.norm = MODEL_NORM_LAYERNORM;
    model_shape fused = shape(1, 4096, 1, false, true);
    double ln_none = model_layer_activation_bytes(&ln, &fused, MODEL_RECOMPUTE_NONE);
    sh.composite_norm = true;
    CHECK_NEAR(model_layer_activation_bytes(&ln, &sh, MODEL_RECOMPUTE_NONE),
               ln_none + 28672.0 * 4096, 0, 0);
    /* Qwen3-4B's q/k norms, b = 2, s = 2048: 109,696 (test_generalised_activations) + 4h x 2
     * hidden norms (h = 2560: 20,480) + 20,480 + SwiGLU's 2 x 9728 = 19,456 */
    model_spec q = qwen3_4b();
    model_shape qs = shape(2, 2048, 1, false, true);
    double q_none = model_layer_activation_bytes(&q, &qs, MODEL_RECOMPUTE_NONE);
    CHECK_NEAR(q_none, 109696.0 * 4096, 0, 0);
    qs.eager = qs.composite_norm = true;
    CHECK_NEAR(model_layer_activation_bytes(&q, &qs, MODEL_RECOMPUTE_NONE),
               (109696.0 + 20480 + 20480 + 19456) * 4096, 0, 0);

    /* The norms' part alone, composite minus fused with eager SwiGLU both ways, per token of
     * Llama-3.1-8B (b = 1, s = 4096, h = 4096):
     *   trained, bf16: norm1 and norm2, 4h each: 32,768;
     *   LoRA (norm weights frozen: the weight multiply keeps no normalised copy, only the
     *     fp32 upcast, 4 - 2 = 2 bytes more than the fused kernel's input): 2 x 2h = 16,384;
     *   fp32 activations: the upcast is x itself, the normalised copy 4h each: 32,768;
     *     frozen: 0;
     *   TP 2 with SP: the hidden norms on T/2 tokens: 16,384 a token of T.
     * The small MLA model (h 64, q_lora 16, kv_lora 12; b = 1, s = 64): norm1 and norm2 4 x 64
     * each, the latent norms 4 x (16 + 12): 624 a token, 39,936 in all. */
    model_ft lora = {.method = MODEL_FT_LORA, .rank = 16, .targets = MODEL_TARGET_ALL};
    static const struct {
        int ft, fp32, tp;
        double per_token;
    } cases[] = {{0, 0, 1, 32768}, {1, 0, 1, 16384}, {0, 1, 1, 32768}, {1, 1, 1, 0},
                 {0, 0, 2, 16384}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        model_shape a = shape(1, 4096, cases[i].tp, cases[i].tp > 1, true);
        if (cases[i].ft)
            a.ft = lora;
        if (cases[i].fp32)
            a.dtype = HW_DTYPE_FP32;
        a.eager = true;
        model_shape b = a;
        b.composite_norm = true;
        CHECK_NEAR(model_layer_activation_bytes(&m, &b, MODEL_RECOMPUTE_NONE) -
                       model_layer_activation_bytes(&m, &a, MODEL_RECOMPUTE_NONE),
                   cases[i].per_token * 4096, 0, 0);
    }
    model_spec mla = small_mla();
    model_shape ma = shape(1, 64, 1, false, true);
    ma.eager = true;
    model_shape mb = ma;
    mb.composite_norm = true;
    CHECK_NEAR(model_layer_activation_bytes(&mla, &mb, MODEL_RECOMPUTE_NONE) -
                   model_layer_activation_bytes(&mla, &ma, MODEL_RECOMPUTE_NONE),
               39936.0, 0, 0);
}

int main(void)
{
    test_recompute_share();
    test_params();
    test_llama_gemms();
    test_unfused_attention();
    test_model_flops();
    test_grad_params();
    test_korthikanti();
    test_generalised_activations();
    test_lora_params();
    test_lora_kernels();
    test_qlora_kernels();
    test_lora_activations();
    test_moe_params();
    test_moe_kernels();
    test_moe_step();
    test_moe_activations();
    test_mla_params();
    test_mla_kernels();
    test_mla_tp();
    test_mla_step();
    test_mla_lora();
    test_mla_activations();
    test_context_parallel();
    test_eager_pointwise();
    test_native_pointwise();
    test_eager_activations();
    test_fp8_linear();
    return test_finish();
}
