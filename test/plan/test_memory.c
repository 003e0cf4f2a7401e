/* The persistent memory plan of each rank (sim/plan/dp.c persistent(); docs/memory.md) and
 * the activations one layer keeps, for tiny models whose sizes are derived by hand.
 *
 * Parameters of tiny_llama (tiny.h), Ψ: per layer q, k, v 3 x 64 x 64 = 12,288, o 64 x 64 =
 * 4,096, SwiGLU gate, up, down 3 x 64 x 128 = 24,576, two RMSNorm weights 128: 41,088;
 * embedding 256 x 64 = 16,384, untied LM head 16,384, final norm 64. Ψ = 2 x 41,088 +
 * 16,384 + 16,384 + 64 = 115,008.
 *
 * Mixed-precision Adam (Rajbhandari et al. 2020, ZeRO §3: K = 12): 16-bit weights 2Ψ,
 * 16-bit gradients 2Ψ, fp32 master weights, momentum and variance 12Ψ. ZeRO-1 shards the 12Ψ
 * over the N_d data-parallel ranks, ZeRO-2 also the gradients, ZeRO-3 also the weights.
 * With N_d = 4 and Ψ = 115,008 (divisible by 4, so no rounding):
 *             params   grads    optimizer   (bytes per rank)
 *   DDP       230,016  230,016  1,380,096   2Ψ, 2Ψ, 12Ψ
 *   ZeRO-1    230,016  230,016    345,024   2Ψ, 2Ψ, 12Ψ/4
 *   ZeRO-2    230,016   57,504    345,024   2Ψ, 2Ψ/4, 12Ψ/4
 *   ZeRO-3     57,504   57,504    345,024   2Ψ/4, 2Ψ/4, 12Ψ/4   (DeepSpeed's, every tensor sharded)
 *   FSDP2           0  115,008    345,024   0, 4Ψ/4, 12Ψ/4
 * (PyTorch's FSDP keeps the fp32 master as its sharded parameter and no 16-bit shard, and
 * the gradient shard in the parameter's dtype, fp32: the same 16Ψ/4 in all.)
 * Besides: DDP and ZeRO-1 keep two gradient buckets in flight, min(2 x 25 MiB, 2Ψ) = 2Ψ =
 * 230,016 here (none for ZeRO-2/3, which reduce into their shards, nor on one GPU); every
 * rank reserves 512 MiB for the framework plus 256 MiB of NCCL buffers when there are
 * several ranks: 805,306,368 (536,870,912 on one GPU). */
#include "core/sim.h"

#include "plan/screen.h"

#include <string.h>

#include "test.h"
#include "tiny.h"

#define PSI INT64_C(115008)
#define FRAMEWORK (INT64_C(512) << 20)
#define NCCL (INT64_C(256) << 20)

static void test_psi(void)
{
    model_spec m = tiny_llama();
    model_params p;
    model_count_params(&m, &p);
    CHECK_INT_EQ(p.per_layer, 41088);
    CHECK_INT_EQ(p.total, PSI);
}

static plan *make(int dp, int zero, plan_fsdp_impl impl)
{
    static plan_scenario sc; /* the plan borrows it until plan_destroy */
    tiny_scenario(&sc, dp);
    sc.model = tiny_llama();
    sc.parallel.dp = dp;
    sc.parallel.zero = zero;
    sc.parallel.fsdp.implementation = impl;
    sc.parallel.fsdp.persistence_threshold = 0;
    sc.training.global_batch = dp;
    plan *p = tiny_plan(&sc, false);
    CHECK(p != NULL);
    return p;
}

static void check_mem(const plan_mem *m, int64_t params, int64_t grads, int64_t opt,
                      int64_t buffers, int64_t other)
{
    CHECK_INT_EQ(m->bytes[PLAN_MEM_PARAMS], params);
    CHECK_INT_EQ(m->bytes[PLAN_MEM_GRADS], grads);
    CHECK_INT_EQ(m->bytes[PLAN_MEM_OPTIMIZER], opt);
    CHECK_INT_EQ(m->bytes[PLAN_MEM_ACTIVATIONS], 0); /* transient: in the trace */
    CHECK_INT_EQ(m->bytes[PLAN_MEM_BUFFERS], buffers);
    CHECK_INT_EQ(m->bytes[PLAN_MEM_OTHER], other);
    CHECK_INT_EQ(m->total, params + grads + opt + buffers + other);
}

static void test_zero_stages(void)
{
    /* the table of the file comment, on every rank of dp 4 */
    const struct {
        int zero;
        bool fsdp2;
        int64_t params, grads, opt, buffers;
    } rows[] = {
        {0, false, 2 * PSI, 2 * PSI, 12 * PSI, 2 * PSI},
        {1, false, 2 * PSI, 2 * PSI, 12 * PSI / 4, 2 * PSI},
        {2, false, 2 * PSI, 2 * PSI / 4, 12 * PSI / 4, 0},
        {3, false, 2 * PSI / 4, 2 * PSI / 4, 12 * PSI / 4, 0},
        {3, true, 0, 4 * PSI / 4, 12 * PSI / 4, 0},
    };
    CHECK_INT_EQ(2 * PSI, 230016);
    CHECK_INT_EQ(12 * PSI / 4, 345024);
    CHECK_INT_EQ(FRAMEWORK + NCCL, 805306368);
    for (size_t i = 0; i < SIM_ARRAY_LEN(rows); i++) {
        plan *p = make(4, rows[i].zero, rows[i].fsdp2 ? PLAN_FSDP2 : PLAN_DEEPSPEED);
        if (!p)
            continue;
        for (int r = 0; r < 4; r++)
            check_mem(&p->mem[r], rows[i].params, rows[i].grads, rows[i].opt,
                      rows[i].buffers, FRAMEWORK + NCCL);
        plan_destroy(p);
    }
    /* one GPU: all model states, no bucket in flight (nothing to reduce), no NCCL buffers:
     * 2Ψ + 2Ψ + 12Ψ + 512 MiB = 1,840,128 + 536,870,912 = 538,711,040 */
    plan *p = make(1, 0, PLAN_FSDP2);
    if (p) {
        check_mem(&p->mem[0], 2 * PSI, 2 * PSI, 12 * PSI, 0, FRAMEWORK);
        CHECK_INT_EQ(p->mem[0].total, 538711040);
        plan_destroy(p);
    }
}

/* Activations of one layer in the plan's trace: the forward of layer 0 allocates what its
 * backward needs, one event at its last kernel. For a GPT layer (LayerNorm, GELU MLP of 4h,
 * dropout kept, no flash attention, 16-bit) that is Korthikanti et al. 2022 Table 2 without
 * parallelism: sbh(34 + 5as/h). With s = 32, b = 1, h = 64, a = 4: sbh = 2,048 and
 * 5as/h = 5 x 4 x 32 / 64 = 10, so 2,048 x 44 = 90,112 bytes; the backward frees as much. */
static void test_layer_activations(void)
{
    static plan_scenario sc;
    tiny_scenario(&sc, 1);
    sc.model = (model_spec){.name = "tiny-gpt", .layers = 2, .hidden = 64, .heads = 4,
                            .kv_heads = 4, .head_dim = 16, .ffn = 256, .vocab = 256,
                            .activation = MODEL_ACT_GELU, .norm = MODEL_NORM_LAYERNORM,
                            .position = MODEL_POS_LEARNED, .dropout = 0.1,
                            .tied_embeddings = true, .max_seq_len = 32, .bias = true};
    sc.training.flash_attention = false;
    sc.training.global_batch = 1;
    plan *p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    const trace_rank *tr = &p->trace->ranks[0];
    int64_t alloc = 0, freed = 0;
    int n_alloc = 0;
    for (size_t i = 0; i < tr->n_ops; i++) {
        const trace_op *o = &tr->ops[i];
        if (o->layer != 0)
            continue;
        for (uint32_t k = 0; k < o->n_mem; k++) {
            const trace_mem *e = &tr->mem[o->mem_first + k];
            if (e->cat != PLAN_MEM_ACTIVATIONS)
                continue;
            if (e->bytes > 0) {
                alloc += e->bytes;
                n_alloc++;
            } else {
                freed -= e->bytes;
            }
        }
    }
    CHECK_INT_EQ(n_alloc, 1);
    CHECK_INT_EQ(alloc, 90112);
    CHECK_INT_EQ(freed, 90112);
    plan_destroy(p);
}

/* The bytes of category `cat` that op `o` of `tr` allocates (+) or frees (-) at its start
 * and at its end. */
static void op_mem(const trace_rank *tr, const trace_op *o, int cat, int64_t *at_start,
                   int64_t *at_end)
{
    for (uint32_t k = 0; k < o->n_mem; k++) {
        const trace_mem *e = &tr->mem[o->mem_first + k];
        if (e->cat == cat)
            *(e->at_end ? at_end : at_start) += e->bytes;
    }
}

/* Activation bytes of one layer: allocated (and freed) by its ops, into *alloc (the sum of
 * allocations) and *n_alloc; *recompute_flops the FLOPs of its recomputed kernels. */
static void layer_mem(const plan *p, int layer, int64_t *alloc, int *n_alloc,
                      double *recompute_flops, double *recompute_qkv)
{
    const trace_rank *tr = &p->trace->ranks[0];
    *alloc = 0, *n_alloc = 0, *recompute_flops = 0, *recompute_qkv = 0;
    for (size_t i = 0; i < tr->n_ops; i++) {
        const trace_op *o = &tr->ops[i];
        if (o->layer != layer)
            continue;
        if (o->kind == TRACE_OP_COMPUTE && o->recompute) {
            *recompute_flops += o->flops;
            if (strcmp(trace_name(p->trace, o->name), "recompute.qkv") == 0)
                *recompute_qkv += o->flops;
        }
        for (uint32_t k = 0; k < o->n_mem; k++) {
            const trace_mem *e = &tr->mem[o->mem_first + k];
            if (e->cat == PLAN_MEM_ACTIVATIONS && e->bytes > 0) {
                *alloc += e->bytes;
                (*n_alloc)++;
            }
        }
    }
}

/* Ops of `layer` on rank 0 named `name`. */
static int count_named(const plan *p, int layer, const char *name)
{
    const trace_rank *tr = &p->trace->ranks[0];
    int n = 0;
    for (size_t i = 0; i < tr->n_ops; i++)
        n += tr->ops[i].layer == layer && strcmp(trace_name(p->trace, tr->ops[i].name), name) == 0;
    return n;
}

/* torchtitan's per-op policy (training.recompute: op) on every second layer
 * (recompute_every: 2: layer l recomputes when l + 1 is a multiple of 2, so layer 1 only).
 * tiny_llama, s = 32, b = 1, 16-bit, flash attention; per token (h = q = kv = 64, f = 128):
 *   none: norm1 in 128, qkv in 128, Q K V 3 x 128 = 384, logsumexp 4 x 4 heads = 16, proj in
 *         128, norm2 in 128, mlp_up in 128, SwiGLU gate, up, down in 3 x 256 = 768: 1,808,
 *         x 32 tokens = 57,856 bytes (layer 0, one allocation, no recompute);
 *   op:   the layer input 128, q's and v's GEMM outputs 2 x 128, gate's output 256, the
 *         attention output 128 and logsumexp 16, down's output 128: 912, x 32 = 29,184 kept
 *         from forward, and while its backward runs the recomputed forward rebuilds the
 *         rest, 57,856 - 29,184 = 28,672 (layer 1, two allocations).
 * The recomputed qkv is k's columns only: 2 x 32 tokens x 64 x 64 = 262,144 FLOPs of the
 * fused GEMM's 2 x 32 x 64 x 192 = 786,432. With full recompute every layer re-runs. */
static void test_recompute_policies(void)
{
    static plan_scenario sc;
    tiny_scenario(&sc, 1);
    sc.model = tiny_llama();
    sc.training.global_batch = 1;
    sc.training.recompute = MODEL_RECOMPUTE_OP;
    sc.training.recompute_every = 2;
    plan *p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    int64_t alloc;
    int n;
    double rf, rqkv;
    layer_mem(p, 0, &alloc, &n, &rf, &rqkv);
    CHECK_INT_EQ(alloc, 57856);
    CHECK_INT_EQ(n, 1);
    CHECK_NEAR(rf, 0, 0, 0);
    layer_mem(p, 1, &alloc, &n, &rf, &rqkv);
    CHECK_INT_EQ(alloc, 29184 + 28672);
    CHECK_INT_EQ(n, 2);
    CHECK_NEAR(rqkv, 262144, 0, 0);
    CHECK(rf > rqkv);
    plan_destroy(p);

    sc.training.recompute = MODEL_RECOMPUTE_FULL;
    sc.training.recompute_every = 1;
    p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    double full_rf[2];
    for (int l = 0; l < 2; l++) {
        layer_mem(p, l, &alloc, &n, &rf, &rqkv);
        CHECK_NEAR(rqkv, 786432, 0, 0); /* the whole fused GEMM again */
        CHECK_INT_EQ(n, 2);
        full_rf[l] = rf;
        CHECK_INT_EQ(count_named(p, l, "recompute.mlp_down"), 1);
        CHECK_INT_EQ(count_named(p, l, "recompute.residual2"), 1);
    }
    plan_destroy(p);

    /* PyTorch's non-reentrant checkpoint (recompute_early_stop) stops once the down GEMM's
     * input is rebuilt: the down GEMM, 2 x 32 tokens x 128 x 64 = 524,288 FLOPs, and the
     * second residual add, 32 x 64 = 2,048 FLOPs, do not run again; every other kernel
     * does (the fused QKV GEMM whole). */
    sc.training.recompute_early_stop = true;
    p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    for (int l = 0; l < 2; l++) {
        layer_mem(p, l, &alloc, &n, &rf, &rqkv);
        CHECK_NEAR(rqkv, 786432, 0, 0);
        CHECK_NEAR(full_rf[l] - rf, 524288 + 2048, 0, 0);
        CHECK_INT_EQ(count_named(p, l, "recompute.mlp_down"), 0);
        CHECK_INT_EQ(count_named(p, l, "recompute.residual2"), 0);
        CHECK_INT_EQ(count_named(p, l, "recompute.mlp_up"), 1);
    }
    plan_destroy(p);
}

/* The loss backward's transient (docs/models.md, "Embedding and head"): tiny_llama's T = 32
 * tokens of V = 256 logits. Megatron's vocab-parallel cross entropy (the default) computes
 * the fp32 gradient in place: only the 16-bit gradient, 2 x 32 x 256 = 16,384 bytes, from the
 * end of loss.bwd to the end of the head's backward. PyTorch's F.cross_entropy on fp32 logits
 * holds two fp32 gradients while loss.bwd runs, 8 x 32 x 256 = 65,536 bytes, then the same
 * 16-bit one: loss.bwd's events are +65,536 at its start and 16,384 - 65,536 = -49,152 at
 * its end. */
static void test_loss_transient(void)
{
    static plan_scenario sc;
    for (int pt = 0; pt < 2; pt++) {
        tiny_scenario(&sc, 1);
        sc.model = tiny_llama();
        sc.training.global_batch = 1;
        sc.training.cross_entropy = pt ? PLAN_CE_PYTORCH : PLAN_CE_VOCAB_PARALLEL;
        plan *p = tiny_plan(&sc, true);
        CHECK(p != NULL);
        if (!p)
            return;
        const trace_rank *tr = &p->trace->ranks[0];
        int64_t start = 0, end = 0;
        int found = 0;
        for (size_t i = 0; i < tr->n_ops; i++) {
            const trace_op *o = &tr->ops[i];
            if (o->kind != TRACE_OP_COMPUTE || strcmp(trace_name(p->trace, o->name), "loss.bwd"))
                continue;
            found++;
            op_mem(tr, o, PLAN_MEM_ACTIVATIONS, &start, &end);
        }
        CHECK_INT_EQ(found, 1);
        CHECK_INT_EQ(start, pt ? 65536 : 0);
        CHECK_INT_EQ(end, pt ? -49152 : 16384);
        plan_destroy(p);
    }
}

/* training.grad_accumulation: cast_add (DeepSpeed's BF16_Optimizer). tiny_llama on dp 2,
 * ZeRO-1, fp32 gradient reduction after the backward, 3 micro-batches a rank (global batch 6
 * of micro-batch 1). Each micro-batch's backward ends in one accumulation op over the rank's
 * Ψ = 115,008 parameters: the bf16 gradient cast to fp32 (reads 2, writes 4 bytes) and added
 * into the fp32 buffer (reads 4 + 4, writes 4): 18Ψ = 2,070,144 bytes, Ψ FLOPs, two launches
 * per tensor: per layer 2 norms, q, k, v, o, gate, up, down (9), 2 layers, the embedding
 * table, the final norm and the untied LM head: 21 tensors, 42 launches. The first gradient
 * bucket's reduce-scatter waits for the last accumulation. Memory: the fp32 buffer 4Ψ and the
 * bf16 gradients 2Ψ: grads 6Ψ = 690,048; the optimizer 12Ψ / 2 = 690,048; two fp32 buckets
 * in flight, min(2 x 25 MiB, 4Ψ) = 460,032. BF16_Optimizer all-reduces the buckets (its whole
 * buffer, then updates its shard) where ZeRO-1 reduce-scatters them. While the op runs, the
 * cast's fp32 temporary of
 * the largest tensor (the 256 x 64 embedding or LM head, 16,384 elements) is a buffer: +65,536
 * bytes at its start, -65,536 at its end. With `fused` (the default) there is no such op.
 * With a bf16 reduction (grad_dtype bf16: the buffer cast before it) the grads stay 6Ψ and
 * the buckets carry 2 bytes a gradient: min(2 x 25 MiB, 2Ψ) = 230,016.
 * Pipelined (pp 2 on the 2 GPUs, 1F1B, 2 micro-batches), each stage's gradient send waits for
 * its accumulation of the same micro-batch. */
static void test_grad_accum(void)
{
    static plan_scenario sc;
    for (int cast = 0; cast < 2; cast++) {
        tiny_scenario(&sc, 2);
        sc.model = tiny_llama();
        sc.parallel.dp = 2;
        sc.parallel.zero = 1;
        sc.parallel.ddp.overlap = false;
        sc.training.global_batch = 6;
        sc.training.grad_dtype = HW_DTYPE_FP32;
        sc.training.grad_accumulation = cast ? PLAN_GRAD_ACCUM_CAST_ADD : PLAN_GRAD_ACCUM_FUSED;
        plan *p = tiny_plan(&sc, true);
        CHECK(p != NULL);
        if (!p)
            return;
        check_mem(&p->mem[1], 2 * PSI, (cast ? 6 : 4) * PSI, 12 * PSI / 2, 4 * PSI,
                  FRAMEWORK + NCCL);
        CHECK_INT_EQ(6 * PSI, 690048);
        const trace_rank *tr = &p->trace->ranks[0];
        int found = 0;
        uint32_t last = 0;
        bool first_bucket = true;
        for (size_t i = 0; i < tr->n_ops; i++) {
            const trace_op *o = &tr->ops[i];
            const char *name = trace_name(p->trace, o->name);
            if (o->kind == TRACE_OP_COMPUTE && !strcmp(name, "grad_accum")) {
                CHECK_INT_EQ(o->microbatch, found);
                CHECK_NEAR(o->bytes, 2070144, 0, 0);
                CHECK_NEAR(o->flops, (double)PSI, 0, 0);
                CHECK_INT_EQ(trace_host_of(tr, (uint32_t)i).launches, 42);
                int64_t at_start = 0, at_end = 0;
                op_mem(tr, o, PLAN_MEM_BUFFERS, &at_start, &at_end);
                CHECK_INT_EQ(at_start, 65536);
                CHECK_INT_EQ(at_end, -65536);
                found++;
                last = (uint32_t)i;
            } else if (o->kind == TRACE_OP_COLL && !strcmp(name, "grad_bucket") && first_bucket) {
                first_bucket = false;
                CHECK_INT_EQ(p->trace->colls[tr->colls[o->coll]].op,
                             cast ? COLL_ALL_REDUCE : COLL_REDUCE_SCATTER);
                bool waits = false;
                for (uint32_t k = 0; k < o->n_deps; k++)
                    waits = waits || tr->deps[o->dep_first + k] == last;
                CHECK(!cast || (found == 3 && waits));
            }
        }
        CHECK_INT_EQ(found, cast ? 3 : 0);
        CHECK(!first_bucket);
        plan_destroy(p);
    }
    tiny_scenario(&sc, 2);
    sc.model = tiny_llama();
    sc.parallel.dp = 2;
    sc.parallel.zero = 1;
    sc.parallel.ddp.overlap = false;
    sc.training.global_batch = 6;
    sc.training.grad_accumulation = PLAN_GRAD_ACCUM_CAST_ADD; /* grad_dtype bf16 */
    plan *p = tiny_plan(&sc, false);
    CHECK(p != NULL);
    if (p) {
        check_mem(&p->mem[0], 2 * PSI, 6 * PSI, 12 * PSI / 2, 2 * PSI, FRAMEWORK + NCCL);
        plan_destroy(p);
    }
    tiny_scenario(&sc, 2);
    sc.model = tiny_llama();
    sc.parallel.pp = 2;
    sc.parallel.ddp.overlap = false;
    sc.training.global_batch = 2;
    sc.training.grad_dtype = HW_DTYPE_FP32;
    sc.training.grad_accumulation = PLAN_GRAD_ACCUM_CAST_ADD;
    p = tiny_plan(&sc, true);
    CHECK(p != NULL);
    if (!p)
        return;
    int sends = 0;
    for (int r = 0; r < 2; r++) {
        const trace_rank *tr = &p->trace->ranks[r];
        for (size_t i = 0; i < tr->n_ops; i++) {
            const trace_op *o = &tr->ops[i];
            if (strcmp(trace_name(p->trace, o->name), "pp.send_gradient"))
                continue;
            bool waits = false;
            for (uint32_t k = 0; k < o->n_deps; k++) {
                const trace_op *d = &tr->ops[tr->deps[o->dep_first + k]];
                waits = waits || (!strcmp(trace_name(p->trace, d->name), "grad_accum") &&
                                  d->microbatch == o->microbatch);
            }
            CHECK(waits);
            sends++;
        }
    }
    CHECK_INT_EQ(sends, 2); /* stage 1 sends each of its 2 micro-batches' gradient back */
    plan_destroy(p);
}

/* The optimizer step's fp32 copy of 16-bit gradients (dp.c plan__optimizer_grad_bytes) in
 * the program-order walk and in the plan's screen, on tiny_llama (seq 32: a layer keeps a few
 * tens of KB, far below the copy) with mixed-precision Adam, where the step is the
 * peak: persistent bytes plus 4 bytes for each parameter the rank updates.
 *   DDP over dp 4: all Ψ: 4Ψ = 460,032 over the persistent 2Ψ + 2Ψ + 12Ψ + 2Ψ (buckets)
 *   + 768 MiB.
 *   DeepSpeed ZeRO-3 on one GPU (dp 1, nothing gathered): all Ψ again, 4Ψ, with the default
 *   sub_group_size (1e9); with sub_group_size 30,000 a sub-group of at most 30,000 + the
 *   largest tensor (the embedding or the head, 256 x 64 = 16,384): 4 x 46,384 = 185,536.
 * The screen must give the same peak, to the byte. */
static void test_step_grad_copy(void)
{
    const struct {
        int dp, zero;
        plan_fsdp_impl impl;
        double sub_group;
        int64_t copy;
    } rows[] = {
        {4, 0, PLAN_FSDP2, 1e9, 4 * PSI},
        {1, 3, PLAN_DEEPSPEED, 1e9, 4 * PSI},
        {1, 3, PLAN_DEEPSPEED, 30000, 4 * (30000 + 16384)},
    };
    CHECK_INT_EQ(4 * PSI, 460032);
    for (size_t i = 0; i < SIM_ARRAY_LEN(rows); i++) {
        static plan_scenario sc;
        tiny_scenario(&sc, rows[i].dp);
        sc.model = tiny_llama();
        sc.parallel.dp = rows[i].dp;
        sc.parallel.zero = rows[i].zero;
        sc.parallel.fsdp.implementation = rows[i].impl;
        sc.parallel.fsdp.persistence_threshold = 0;
        sc.parallel.fsdp.sub_group_size = rows[i].sub_group;
        sc.training.global_batch = rows[i].dp;
        plan *p = tiny_plan(&sc, false);
        CHECK(p != NULL);
        if (!p)
            continue;
        for (int r = 0; r < rows[i].dp; r++)
            CHECK_INT_EQ(p->peak[r].total, p->mem[r].total + rows[i].copy);
        plan_screen *scr = NULL;
        sim_diag diag = {0};
        CHECK(plan_screen_create(&sc, &scr, &diag) == 0);
        if (scr) {
            plan_screen_est est;
            plan_screen_eval(scr, &sc, false, &est);
            CHECK_INT_EQ(est.peak_bytes, p->peak[0].total);
            plan_screen_destroy(scr);
        }
        plan_destroy(p);
    }
}

int main(void)
{
    test_psi();
    test_zero_stages();
    test_layer_activations();
    test_recompute_policies();
    test_loss_transient();
    test_grad_accum();
    test_step_grad_copy();
    return test_finish();
}
