/* GPU compute model: dtype table, efficiency curves and the per-kernel roofline.
 *
 * A kernel's duration is (see gpu.h)
 *
 *   t = max(FLOPs / (peak x eff_mm(FLOPs)) x (1 + k0 / k),  bytes / (HBM bw x eff_mem(bytes)))
 *       + launch
 *
 * for matmul-class ops (k the inner dimension, when known), and the same with the fp32
 * CUDA-core peak and no matmul efficiency for vector ops; fused attention kernels use the
 * attention table at their sequence length in place of eff_mm. The efficiency curves are tabulated
 * in the catalog and interpolated linearly in log10(x) with GSL, clamped to the end values outside
 * the table: a GEMM larger than any measured one runs at the largest measured efficiency, never
 * above it. How the catalog curves were obtained is in docs/calibration.md.
 *
 * GSL's interpolators abort through its default error handler when evaluated outside the
 * range (docs/platform.md); we turn the handler off, clamp before evaluating and use the _e
 * variant. No gsl_interp_accel is kept: it is a mutable cache, and hw_gpu_op_time takes a
 * const model that several replay contexts may share; the table has at most HW_CURVE_MAX
 * points, so the binary search it saves is a handful of comparisons. */
#include "core/sim.h"

#include <math.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>

#include "hw/gpu.h"

/* One efficiency curve ready to evaluate: x is stored as log10(x). */
typedef struct gpu_curve {
    int n;
    double lx[HW_CURVE_MAX];
    double y[HW_CURVE_MAX];
    gsl_interp *interp; /* NULL when n < 2 (constant or absent curve) */
} gpu_curve;

struct hw_gpu {
    hw_gpu_spec spec;
    gpu_curve matmul;
    gpu_curve matmul_fp8; /* n = 0: fp8 GEMMs use `matmul` */
    gpu_curve memory;
    gpu_curve memory_eager; /* n = 0: eager kernels use `memory` */
    gpu_curve attn[HW_ATTN_TABLES]; /* by class - HW_OP_ATTN_FWD (hw_gpu_spec.attn_eff) */
    gpu_curve attn_head[2];          /* forward, backward head-dim factors */
};

const char *hw_dtype_name(hw_dtype d)
{
    switch (d) {
    case HW_DTYPE_BF16: return "bf16";
    case HW_DTYPE_FP16: return "fp16";
    case HW_DTYPE_FP8: return "fp8";
    case HW_DTYPE_TF32: return "tf32";
    case HW_DTYPE_FP32: return "fp32";
    case HW_DTYPE_COUNT: break;
    }
    return "?";
}

const char *hw_attn_kernel_name(hw_attn_kernel k)
{
    switch (k) {
    case HW_ATTN_KERNEL_UNNAMED: return "default";
    case HW_ATTN_KERNEL_FA2: return "fa2";
    case HW_ATTN_KERNEL_FA3: return "fa3";
    case HW_ATTN_KERNEL_CUDNN: return "cudnn";
    case HW_ATTN_KERNEL_FA1: return "fa1";
    case HW_ATTN_KERNEL_FA_TRITON: return "fa_triton";
    case HW_ATTN_KERNEL_COUNT: break;
    }
    return "?";
}

const char *hw_op_class_name(hw_op_class c)
{
    switch (c) {
    case HW_OP_MATMUL: return "matmul";
    case HW_OP_VECTOR: return "vector";
    case HW_OP_ATTN_FWD: return "attn_fwd";
    case HW_OP_ATTN_BWD: return "attn_bwd";
    case HW_OP_ATTN_FWD_FULL: return "attn_fwd_full";
    case HW_OP_ATTN_BWD_FULL: return "attn_bwd_full";
    case HW_OP_CLASS_COUNT: break;
    }
    return "?";
}

int hw_dtype_bytes(hw_dtype d)
{
    switch (d) {
    case HW_DTYPE_BF16:
    case HW_DTYPE_FP16: return 2;
    case HW_DTYPE_FP8: return 1;
    /* TF32 is a tensor-core input format; its operands live in memory as fp32. */
    case HW_DTYPE_TF32:
    case HW_DTYPE_FP32: return 4;
    case HW_DTYPE_COUNT: break;
    }
    SIM_ASSERT(0, "unknown dtype %d", (int)d);
    return 0;
}

/* ymax: 1 for an efficiency, 2 for a factor on one (attn_head) */
static void curve_init(gpu_curve *c, const hw_curve *src, double ymax)
{
    SIM_ASSERT(src->n >= 0 && src->n <= HW_CURVE_MAX, "curve with %d points", src->n);
    c->n = src->n;
    for (int i = 0; i < src->n; i++) {
        SIM_ASSERT(src->x[i] > 0 && (i == 0 || src->x[i] > src->x[i - 1]),
                   "curve x[%d] = %g not positive and strictly increasing", i, src->x[i]);
        SIM_ASSERT(src->y[i] > 0 && src->y[i] <= ymax, "curve y[%d] = %g outside (0, %g]", i,
                   src->y[i], ymax);
        c->lx[i] = log10(src->x[i]);
        c->y[i] = src->y[i];
    }
    c->interp = NULL;
    if (c->n >= 2) {
        c->interp = gsl_interp_alloc(gsl_interp_linear, (size_t)c->n);
        SIM_ASSERT(c->interp != NULL, "gsl_interp_alloc failed for %d points", c->n);
        int rc = gsl_interp_init(c->interp, c->lx, c->y, (size_t)c->n);
        SIM_ASSERT(rc == GSL_SUCCESS, "gsl_interp_init: %s", gsl_strerror(rc));
    }
}

static double curve_eval(const gpu_curve *c, double x)
{
    if (c->n == 0)
        return 1.0;
    /* x <= 0 (an op with no FLOPs or bytes) has no logarithm: it is "smaller than the
     * table" and takes the first value, as any other x below the range does. */
    if (c->n == 1 || !(x > 0))
        return c->y[0];
    double lx = log10(x);
    if (lx <= c->lx[0])
        return c->y[0];
    if (lx >= c->lx[c->n - 1])
        return c->y[c->n - 1];
    double y = 0;
    int rc = gsl_interp_eval_e(c->interp, c->lx, c->y, lx, NULL, &y);
    SIM_ASSERT(rc == GSL_SUCCESS, "gsl_interp_eval_e at log10(x)=%g: %s", lx,
               gsl_strerror(rc));
    return y;
}

hw_gpu *hw_gpu_create(const hw_gpu_spec *spec)
{
    SIM_ASSERT(spec != NULL, "NULL spec");
    /* Process-wide by nature (GSL keeps one handler); every caller in stepsim wants it off,
     * so setting it again here is idempotent. */
    gsl_set_error_handler_off();
    hw_gpu *gpu = sim_calloc(1, sizeof(*gpu));
    gpu->spec = *spec;
    curve_init(&gpu->matmul, &spec->matmul_eff, 1);
    curve_init(&gpu->matmul_fp8, &spec->matmul_eff_fp8, 1);
    curve_init(&gpu->memory, &spec->memory_eff, 1);
    curve_init(&gpu->memory_eager, &spec->memory_eff_eager, 1);
    for (int i = 0; i < HW_ATTN_TABLES; i++)
        curve_init(&gpu->attn[i], &spec->attn_eff[i], 1);
    for (int i = 0; i < 2; i++)
        curve_init(&gpu->attn_head[i], &spec->attn_head[i], 2);
    return gpu;
}

void hw_gpu_destroy(hw_gpu *gpu)
{
    if (!gpu)
        return;
    gsl_interp_free(gpu->matmul.interp); /* NULL-safe in GSL 2.x */
    gsl_interp_free(gpu->matmul_fp8.interp);
    gsl_interp_free(gpu->memory.interp);
    gsl_interp_free(gpu->memory_eager.interp);
    for (int i = 0; i < HW_ATTN_TABLES; i++)
        gsl_interp_free(gpu->attn[i].interp);
    for (int i = 0; i < 2; i++)
        gsl_interp_free(gpu->attn_head[i].interp);
    sim_free(gpu);
}

const hw_gpu_spec *hw_gpu_get_spec(const hw_gpu *gpu)
{
    return &gpu->spec;
}

double hw_gpu_matmul_eff(const hw_gpu *gpu, double flops)
{
    return curve_eval(&gpu->matmul, flops);
}

double hw_gpu_matmul_eff_of(const hw_gpu *gpu, hw_dtype dtype, double flops)
{
    if (dtype == HW_DTYPE_FP8 && gpu->matmul_fp8.n > 0)
        return curve_eval(&gpu->matmul_fp8, flops);
    return curve_eval(&gpu->matmul, flops);
}

double hw_gpu_memory_eff(const hw_gpu *gpu, double bytes)
{
    return curve_eval(&gpu->memory, bytes);
}

double hw_gpu_memory_eff_eager(const hw_gpu *gpu, double bytes)
{
    return curve_eval(gpu->memory_eager.n > 0 ? &gpu->memory_eager : &gpu->memory, bytes);
}

double hw_gpu_attn_eff(const hw_gpu *gpu, hw_op_class cls, double seq, double head_dim,
                       double flops)
{
    SIM_ASSERT(cls >= HW_OP_ATTN_FWD && cls < HW_OP_CLASS_COUNT, "class %d is not attention",
               (int)cls);
    int i = (int)(cls - HW_OP_ATTN_FWD);
    if (gpu->attn[i].n == 0 && i >= 2)
        i -= 2; /* no unmasked table: the causal one, conservatively */
    if (gpu->attn[i].n == 0)
        return hw_gpu_matmul_eff(gpu, flops);
    /* the head-dim factor by direction: classes alternate forward, backward */
    double f = head_dim > 0 ? curve_eval(&gpu->attn_head[i % 2], head_dim) : 1.0;
    return curve_eval(&gpu->attn[i], seq) * f;
}

static sim_time op_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                        double bytes, double dim, double head_dim);

sim_time hw_gpu_op_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                        double bytes, double dim)
{
    return op_time(gpu, cls, dtype, flops, bytes, dim, 0);
}

sim_time hw_gpu_kernel_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                            double bytes, double inner, double seq)
{
    if (cls == HW_OP_MATMUL || cls == HW_OP_VECTOR)
        return op_time(gpu, cls, dtype, flops, bytes, inner, 0);
    return op_time(gpu, cls, dtype, flops, bytes, seq, inner);
}

static sim_time op_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                        double bytes, double dim, double head_dim)
{
    const hw_gpu_spec *s = &gpu->spec;
    SIM_ASSERT(flops >= 0 && bytes >= 0 && isfinite(flops) && isfinite(bytes),
               "op with flops=%g bytes=%g", flops, bytes);
    SIM_ASSERT(cls >= 0 && cls < HW_OP_CLASS_COUNT, "op class %d", (int)cls);
    double t_compute = 0;
    if (cls != HW_OP_VECTOR) {
        SIM_ASSERT(dtype >= 0 && dtype < HW_DTYPE_COUNT, "dtype %d", (int)dtype);
        double peak = s->peak_flops[dtype];
        SIM_ASSERT(peak > 0, "%s has no %s peak (dtype not supported)", s->name,
                   hw_dtype_name(dtype));
        double eff = cls == HW_OP_MATMUL ? hw_gpu_matmul_eff_of(gpu, dtype, flops)
                                         : hw_gpu_attn_eff(gpu, cls, dim, head_dim, flops);
        if (flops > 0)
            t_compute = flops / (peak * eff);
        if (cls == HW_OP_MATMUL && dim > 0)
            t_compute *= 1 + s->matmul_k_overhead / dim;
    } else {
        /* without an fp32 rate (0 = not given) a vector kernel is timed by its memory
         * traffic alone: norms, activations and the optimizer are memory-bound on every
         * GPU (about 1 FLOP per byte, against an fp32 ridge of 20 on an H100) */
        double peak = s->peak_flops[HW_DTYPE_FP32];
        if (flops > 0 && peak > 0)
            t_compute = flops / peak;
    }
    double t_memory = 0;
    if (bytes > 0) {
        SIM_ASSERT(s->memory_bw_Bps > 0, "%s has no memory bandwidth", s->name);
        bool eager = cls == HW_OP_VECTOR && dim == HW_VECTOR_EAGER;
        t_memory = bytes / (s->memory_bw_Bps * (eager ? hw_gpu_memory_eff_eager(gpu, bytes)
                                                      : hw_gpu_memory_eff(gpu, bytes)));
    }
    return sim_time_from_s(SIM_MAX(t_compute, t_memory)) + s->launch_overhead_ps;
}
