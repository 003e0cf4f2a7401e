/* fp8 linear layers (training.precision: fp8; docs/models.md, "fp8"), as Transformer Engine
 * runs them under its delayed-scaling recipe in NeMo and Megatron-LM: the GEMMs read fp8
 * operands, and Hopper's fp8 GEMM takes both in K-major layout, so every fp8 operand also
 * exists transposed. Per layer X (m x k) @ W (k x n):
 *   - the weight is cast to fp8 and transposed in the first forward of the step and kept for
 *     the others ("<g>.wcast", 4 k n bytes; Megatron passes is_first_microbatch);
 *   - the input is cast and transposed in one kernel (cast_transpose, "<g>.cast": reads 2
 *     bytes an element, writes 1 + 1: 4 m k). A layer fused with the norm before it (TE's
 *     LayerNormLinear: a dense layer's QKV and MLP up, MLA's up projections behind their
 *     latent norms) gets its fp8 input from the norm's own kernel, which writes it in 1 byte
 *     instead of 2, and transposes the (gathered) input for its weight gradient (2 m k
 *     bytes, less the elements the norm no longer writes twice: Tn k behind a sequence-
 *     parallel norm, m k behind a latent one). A plain layer whose input arrives as a
 *     sequence shard under SP (MLA's down projections, behind a separate norm) casts the
 *     shard (3 Tn k), gathers it in fp8 and transposes it whole (2 m k);
 *   - the output gradient dY (m x n) the same way before the backward GEMMs
 *     ("<dgrad>.cast"); under sequence parallelism a row-parallel layer's dY arrives as a
 *     sequence shard, cast there (3 Tn n) and gathered in fp8, then transposed whole (2 m n);
 *   - the GEMMs write bf16 (the weight gradient into its fp32 buffer).
 * The casts are memory-bound kernels with one comparison an element for the amax. Under
 * current scaling (training.fp8_recipe: current) each cast first reads its 16-bit input for
 * the amax (2 bytes an element more: TE's docs, "FP8 Delayed Scaling": current scaling
 * needs "two tensor reads"). A norm cannot write the fp8 input, since the scale is known
 * only after its output is, but it takes the output's amax as it writes it (TE's
 * FUSED_NORM_AMAX_FP8 path for current-scaling quantizers): those layers cast like a plain
 * one, without the extra read. */
#include <string.h>

#include "model/model-internal.h"

/* How a layer's forward input reaches its fp8 GEMM (the header's cases). */
enum fp8_input {
    FP8_IN_CAST,        /* cast_transpose of a whole 16-bit input */
    FP8_IN_NORM,        /* a sequence-parallel norm's fused fp8 output */
    FP8_IN_LATENT_NORM, /* a latent norm's (MLA, on all T tokens) fused fp8 output */
    FP8_IN_SHARD,       /* a plain layer's input, a sequence shard under SP */
};

/* A layer's kernels are named after its forward GEMM `g`. */
#define FP8_LAYER(g, in, in_mla, dy_sharded)                                                \
    {g, g ".dgrad", g ".cast", g ".dgrad.cast", g ".wcast", in, in_mla, dy_sharded}

static const struct fp8_names {
    const char *gemm, *dgrad, *cast, *dcast, *wcast;
    enum fp8_input in, in_mla; /* the dense (MHA/GQA) layer's, MLA's */
    bool dy_sharded;           /* row-parallel: dY arrives as a sequence shard under SP */
} fp8_names[] = {
    FP8_LAYER("qkv", FP8_IN_NORM, FP8_IN_SHARD, false),
    FP8_LAYER("proj", FP8_IN_CAST, FP8_IN_CAST, true),
    FP8_LAYER("mlp_up", FP8_IN_NORM, FP8_IN_NORM, false),
    FP8_LAYER("mlp_down", FP8_IN_CAST, FP8_IN_CAST, true),
    FP8_LAYER("attn.q_b", FP8_IN_LATENT_NORM, FP8_IN_LATENT_NORM, false),
    FP8_LAYER("attn.kv_b", FP8_IN_LATENT_NORM, FP8_IN_LATENT_NORM, false),
    FP8_LAYER("moe.shared_up", FP8_IN_CAST, FP8_IN_CAST, false),
    FP8_LAYER("moe.shared_down", FP8_IN_CAST, FP8_IN_CAST, false),
};
#undef FP8_LAYER

/* The entry of the fp8 linear layer whose forward or dgrad kernel is `name`. */
static const struct fp8_names *fp8_of(const char *name, bool dgrad)
{
    for (size_t i = 0; i < SIM_ARRAY_LEN(fp8_names); i++)
        if (!strcmp(dgrad ? fp8_names[i].dgrad : fp8_names[i].gemm, name))
            return &fp8_names[i];
    SIM_ASSERT(0, "no fp8 linear layer has the kernel %s", name);
}

model_op *model__fp8_cast(model_op_list *l, const char *name, double elems, double bytes)
{
    return model__push(l, name, HW_OP_VECTOR, elems, 0, bytes, 0);
}

double model__fp8_cast_transpose_bytes(const dims *D)
{
    return D->fp8_current ? 6 : 4;
}

/* The dims of a linear layer's GEMMs: an fp8 run's read 1-byte operands. */
static dims lin_dims(const dims *D)
{
    dims d = *D;
    if (D->fp8)
        d.e = 1;
    return d;
}

void model__lin_gemm_fwd(model_op_list *l, const dims *D, const char *name, double m, double k,
                         double n, bool beta)
{
    dims d = lin_dims(D);
    model_op *g = model__gemm_fwd(l, &d, name, m, k, n);
    if (beta)
        g->bytes += m * n * D->ea; /* adds into its output: reads it as well */
    g->fp8 = D->fp8;
}

void model__lin_gemm_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                         double m, double k, double n, int64_t grad_params)
{
    dims d = lin_dims(D);
    model__gemm_dgrad(l, &d, dgrad, m, k, n, false)->fp8 = D->fp8;
    model__gemm_wgrad(l, &d, wgrad, m, k, n, grad_params)->fp8 = D->fp8;
}

void model__lin_fwd(model_op_list *l, const dims *D, const char *name, double m, double k,
                    double n, bool beta)
{
    if (D->fp8) {
        const struct fp8_names *nm = fp8_of(name, false);
        double amax = D->fp8_current ? 2 : 0; /* current scaling's first read, 2 bytes each */
        model__fp8_cast(l, nm->wcast, k * n, model__fp8_cast_transpose_bytes(D) * k * n)
            ->weight_cast = true;
        bool sp = D->Tn < D->T;
        enum fp8_input in = D->mla ? nm->in_mla : nm->in;
        if (D->fp8_current && (in == FP8_IN_NORM || in == FP8_IN_LATENT_NORM)) {
            /* the norm writes 16 bits and their amax: cast like a plain layer's input, with
             * no read for the amax */
            in = in == FP8_IN_NORM ? FP8_IN_SHARD : FP8_IN_CAST;
            amax = 0;
        }
        double bytes = (4 + amax) * m * k;
        switch (in) {
        case FP8_IN_CAST: break;
        case FP8_IN_NORM: bytes = 2 * m * k - D->Tn * k; break;
        case FP8_IN_LATENT_NORM: bytes = m * k; break;
        case FP8_IN_SHARD:
            if (sp)
                bytes = (3 + amax) * D->Tn * k + 2 * m * k;
            break;
        }
        model__fp8_cast(l, nm->cast, m * k, bytes);
    }
    model__lin_gemm_fwd(l, D, name, m, k, n, beta);
}

void model__lin_bwd(model_op_list *l, const dims *D, const char *dgrad, const char *wgrad,
                    double m, double k, double n, int64_t grad_params)
{
    if (D->fp8) {
        const struct fp8_names *nm = fp8_of(dgrad, true);
        bool shard = nm->dy_sharded && D->Tn < D->T;
        double amax = D->fp8_current ? 2 : 0;
        double bytes = shard ? (3 + amax) * D->Tn * n + 2 * m * n
                             : model__fp8_cast_transpose_bytes(D) * m * n;
        model__fp8_cast(l, nm->dcast, m * n, bytes);
    }
    model__lin_gemm_bwd(l, D, dgrad, wgrad, m, k, n, grad_params);
}
