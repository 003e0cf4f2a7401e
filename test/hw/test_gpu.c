/* Unit test of the GPU compute model (sim/hw/gpu.c): dtype table, efficiency curves
 * interpolated linearly in log10(x) and clamped, and the roofline duration of one kernel
 * (launch overhead included, rounded up to the picosecond). */
#include "core/sim.h"

#include <math.h>
#include <string.h>

#include "hw/gpu.h"
#include "test.h"

/* An H100-like spec with an example efficiency curve; numbers chosen for hand
 * arithmetic, not the catalog's. */
static hw_gpu_spec spec_h100_like(void)
{
    hw_gpu_spec s = {.name = "test-h100",
                     .memory_bytes = INT64_C(85000000000),
                     .memory_bw_Bps = 3.35e12,
                     .launch_overhead_ps = 4 * SIM_PS_PER_US};
    s.peak_flops[HW_DTYPE_BF16] = 989e12;
    s.peak_flops[HW_DTYPE_FP16] = 989e12;
    s.peak_flops[HW_DTYPE_FP8] = 1979e12;
    s.peak_flops[HW_DTYPE_TF32] = 494e12;
    s.peak_flops[HW_DTYPE_FP32] = 67e12;
    /* [[0.1 GFLOP, 0.3], [10 GFLOP, 0.7], [1000 GFLOP, 0.8]] */
    s.matmul_eff = (hw_curve){.n = 3, .x = {1e8, 1e10, 1e12}, .y = {0.3, 0.7, 0.8}};
    /* one point: a constant 0.9 */
    s.memory_eff = (hw_curve){.n = 1, .x = {1e6}, .y = {0.9}};
    return s;
}

static void test_dtypes(void)
{
    CHECK_STR_EQ(hw_dtype_name(HW_DTYPE_BF16), "bf16");
    CHECK_STR_EQ(hw_dtype_name(HW_DTYPE_FP16), "fp16");
    CHECK_STR_EQ(hw_dtype_name(HW_DTYPE_FP8), "fp8");
    CHECK_STR_EQ(hw_dtype_name(HW_DTYPE_TF32), "tf32");
    CHECK_STR_EQ(hw_dtype_name(HW_DTYPE_FP32), "fp32");
    /* 16-bit formats 2 bytes, fp8 1, tf32 is stored as fp32: 4 */
    CHECK_INT_EQ(hw_dtype_bytes(HW_DTYPE_BF16), 2);
    CHECK_INT_EQ(hw_dtype_bytes(HW_DTYPE_FP16), 2);
    CHECK_INT_EQ(hw_dtype_bytes(HW_DTYPE_FP8), 1);
    CHECK_INT_EQ(hw_dtype_bytes(HW_DTYPE_TF32), 4);
    CHECK_INT_EQ(hw_dtype_bytes(HW_DTYPE_FP32), 4);
}

static void test_curves(void)
{
    hw_gpu_spec s = spec_h100_like();
    hw_gpu *g = hw_gpu_create(&s);
    /* Knots are reproduced exactly. */
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e8), 0.3, 1e-12, 0);
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e10), 0.7, 1e-12, 0);
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e12), 0.8, 1e-12, 0);
    /* Linear in log10(x): 1e9 is halfway between 1e8 and 1e10 in log10, so
     * 0.3 + (9 - 8) / (10 - 8) x (0.7 - 0.3) = 0.5; 1e11: 0.7 + 0.5 x 0.1 = 0.75. */
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e9), 0.5, 1e-12, 0);
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e11), 0.75, 1e-12, 0);
    /* 10^8.5 is a quarter of the way from 1e8 to 1e10 in log10: 0.3 + 0.25 x 0.4 = 0.4 */
    CHECK_NEAR(hw_gpu_matmul_eff(g, pow(10, 8.5)), 0.4, 1e-12, 0);
    /* Clamped outside the table (GSL would otherwise abort): the end values. */
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e3), 0.3, 0, 0);
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e15), 0.8, 0, 0);
    /* No logarithm at 0: treated as below the table. */
    CHECK_NEAR(hw_gpu_matmul_eff(g, 0), 0.3, 0, 0);
    /* A one-point table is a constant, at any x. */
    CHECK_NEAR(hw_gpu_memory_eff(g, 1.0), 0.9, 0, 0);
    CHECK_NEAR(hw_gpu_memory_eff(g, 1e12), 0.9, 0, 0);
    hw_gpu_destroy(g);

    /* No table at all: efficiency 1. */
    s.matmul_eff.n = 0;
    s.memory_eff.n = 0;
    g = hw_gpu_create(&s);
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e9), 1.0, 0, 0);
    CHECK_NEAR(hw_gpu_memory_eff(g, 1e9), 1.0, 0, 0);
    hw_gpu_destroy(g);

    /* Two points: plain linear in log10. [[1 MB, 0.5], [100 MB, 0.9]] at 10 MB: 0.7. */
    s.memory_eff = (hw_curve){.n = 2, .x = {1e6, 1e8}, .y = {0.5, 0.9}};
    g = hw_gpu_create(&s);
    CHECK_NEAR(hw_gpu_memory_eff(g, 1e7), 0.7, 1e-12, 0);
    hw_gpu_destroy(g);

    hw_gpu_destroy(NULL); /* no-op */
}

static void test_spec_copied(void)
{
    hw_gpu_spec s = spec_h100_like();
    hw_gpu *g = hw_gpu_create(&s);
    s.memory_bw_Bps = 1;
    s.matmul_eff.y[0] = 0.01;
    /* the model kept its own copy */
    CHECK_NEAR(hw_gpu_get_spec(g)->memory_bw_Bps, 3.35e12, 0, 0);
    CHECK_STR_EQ(hw_gpu_get_spec(g)->name, "test-h100");
    CHECK_NEAR(hw_gpu_matmul_eff(g, 1e8), 0.3, 0, 0);
    hw_gpu_destroy(g);
}

static void test_op_time(void)
{
    hw_gpu_spec s = spec_h100_like();
    hw_gpu *g = hw_gpu_create(&s);
    sim_time launch = 4 * SIM_PS_PER_US;

    /* A 1 TFLOP bf16 GEMM (eff 0.8 at 1e12) moving 100 MB: compute 1e12 / (989e12 x 0.8)
     * = 1.2639029322548 ms = 1,263,902,932.25 ps, rounded up to 1,263,902,933 ps; memory
     * 1e8 / (3.35e12 x 0.9) = 33.2 us is hidden. Plus 4 us launch. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e12, 1e8, 0),
                 1263902933 + launch);
    /* The dtype picks the peak: fp8 1979 TFLOP/s, 1e12 / (1979e12 x 0.8) s
     * = 631,632,137.44 ps -> 631,632,138 ps. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_FP8, 1e12, 1e8, 0),
                 631632138 + launch);
    /* With an fp8 curve (matmul_efficiency_fp8, a constant 0.5 here) an fp8 GEMM takes it
     * and the others keep theirs: 1e12 / (1979e12 x 0.5) = 1,010,611,419.91 ps ->
     * 1,010,611,420 ps; bf16 unchanged. */
    hw_gpu_spec s8 = spec_h100_like();
    s8.matmul_eff_fp8 = (hw_curve){.n = 1, .x = {1e9}, .y = {0.5}};
    hw_gpu *g8 = hw_gpu_create(&s8);
    CHECK_NEAR(hw_gpu_matmul_eff_of(g8, HW_DTYPE_FP8, 1e12), 0.5, 0, 0);
    CHECK_NEAR(hw_gpu_matmul_eff_of(g8, HW_DTYPE_BF16, 1e12), 0.8, 0, 0);
    CHECK_NEAR(hw_gpu_matmul_eff_of(g, HW_DTYPE_FP8, 1e12), 0.8, 0, 0); /* none: bf16's */
    CHECK_INT_EQ(hw_gpu_op_time(g8, HW_OP_MATMUL, HW_DTYPE_FP8, 1e12, 1e8, 0),
                 1010611420 + launch);
    CHECK_INT_EQ(hw_gpu_op_time(g8, HW_OP_MATMUL, HW_DTYPE_BF16, 1e12, 1e8, 0),
                 1263902933 + launch);
    hw_gpu_destroy(g8);
    /* A memory-bound matmul: 1 GFLOP (eff 0.5, 2.02 us) reading 1 GB: 1e9 / (3.35e12 x 0.9)
     * = 331,674,958.54 ps -> 331,674,959 ps. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e9, 1e9, 0),
                 331674959 + launch);
    /* A vector op moving 1 GB with 1 GFLOP: memory-bound as above (fp32 part 14.9 us). */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 1e9, 1e9, 0),
                 331674959 + launch);
    /* A vector op's FLOPs run at the fp32 peak with no efficiency curve, whatever dtype is
     * passed: 1e12 / 67e12 s = 14,925,373,134.33 ps -> 14,925,373,135 ps. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_FP8, 1e12, 1e3, 0),
                 INT64_C(14925373135) + launch);
    /* The inner dimension k: with k0 = matmul_k_overhead = 128, the 1 TFLOP GEMM above over
     * k = 512 takes 1 + 128/512 = 1.25 x its compute time: 1,263,902,932.25 x 1.25 =
     * 1,579,878,665.3 ps -> 1,579,878,666 ps. k = 0 (unknown) takes no correction, and a
     * vector op ignores the dimension. */
    hw_gpu_destroy(g);
    s.matmul_k_overhead = 128;
    g = hw_gpu_create(&s);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e12, 1e8, 512),
                 1579878666 + launch);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e12, 1e8, 0),
                 1263902933 + launch);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 1e9, 1e9, 512),
                 331674959 + launch);
    /* The memory-bound matmul above stays memory-bound while the corrected compute time is
     * shorter: 1 GFLOP at eff 0.5 = 2.022 us x (1 + 128/128) = 4.04 us < 331.7 us. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e9, 1e9, 128),
                 331674959 + launch);
    s.matmul_k_overhead = 0;
    /* A kernel of an eager composite op (inner HW_VECTOR_EAGER) without an eager curve takes
     * the memory curve's time (above); with memory_eff_eager a constant 0.6 it takes
     * 1e9 / (3.35e12 x 0.6) = 497,512,437.81 ps -> 497,512,438 ps, and the other vector ops
     * keep the memory curve. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 1e9, 1e9, HW_VECTOR_EAGER),
                 331674959 + launch);
    CHECK_NEAR(hw_gpu_memory_eff_eager(g, 1e9), 0.9, 0, 0);
    hw_gpu_destroy(g);
    s.memory_eff_eager = (hw_curve){.n = 1, .x = {1e6}, .y = {0.6}};
    g = hw_gpu_create(&s);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 1e9, 1e9, HW_VECTOR_EAGER),
                 497512438 + launch);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 1e9, 1e9, 0), 331674959 + launch);
    CHECK_NEAR(hw_gpu_memory_eff_eager(g, 1e9), 0.6, 0, 0);
    s.memory_eff_eager.n = 0;
    /* An empty kernel costs its launch. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 0, 0, 0), launch);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_VECTOR, HW_DTYPE_BF16, 0, 0, 0), launch);
    hw_gpu_destroy(g);

    /* With no launch overhead and efficiency 1: 989 GFLOP at 989 TFLOP/s is exactly 1 ms. */
    s.launch_overhead_ps = 0;
    s.matmul_eff.n = 0;
    g = hw_gpu_create(&s);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 989e9, 0, 0), SIM_PS_PER_MS);
    hw_gpu_destroy(g);
}

/* Fused attention: the catalog's table by sequence length replaces the matmul curve. */
static void test_attention(void)
{
    hw_gpu_spec s = spec_h100_like();
    s.launch_overhead_ps = 0;
    hw_gpu *g = hw_gpu_create(&s);
    /* No attention table: a forward kernel takes the matmul curve at its FLOPs (0.8 at
     * 1e12), whatever its sequence length: the same 1,263,902,933 ps as a GEMM. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 1e12, 1e8, 4096),
                 1263902933);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_BWD, 512, 0, 1e12) - 0.8) < 1e-12);
    hw_gpu_destroy(g);

    /* Forward 0.25 at 1,024 keys and 0.5 at 4,096; backward a constant 0.4. */
    s.attn_eff[0] = (hw_curve){.n = 2, .x = {1024, 4096}, .y = {0.25, 0.5}};
    s.attn_eff[1] = (hw_curve){.n = 1, .x = {2048}, .y = {0.4}};
    g = hw_gpu_create(&s);
    /* 2,048 keys lie halfway in log10 between 1,024 and 4,096: eff 0.375. 989 GFLOP at
     * 989e12 x 0.375 FLOP/s = 1/0.375 ms = 2,666,666,666.67 ps -> 2,666,666,667 ps. */
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 0, 989e9) - 0.375) < 1e-12);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 989e9, 1e6, 2048),
                 INT64_C(2666666667));
    /* Clamped outside the table: 16,384 keys run at 0.5 (2 ms), 256 at 0.25 (4 ms). */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 989e9, 0, 16384),
                 2 * SIM_PS_PER_MS);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 989e9, 0, 256),
                 4 * SIM_PS_PER_MS);
    /* The backward table: 989 GFLOP at 0.4 = 2.5 ms. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_BWD, HW_DTYPE_BF16, 989e9, 0, 4096),
                 INT64_C(2500000000));
    /* A plain GEMM still uses the matmul curve (0.8 at 1e12). */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_MATMUL, HW_DTYPE_BF16, 1e12, 0, 4096), 1263902933);
    /* The roofline still holds: 1 GFLOP at 0.5 of the peak takes 2.02 us, reading 1 GB at
     * 3.35e12 x 0.9 B/s takes 331,674,958.54 ps -> 331,674,959 ps, the longer. */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 1e9, 1e9, 4096), 331674959);
    CHECK(strcmp(hw_op_class_name(HW_OP_ATTN_BWD), "attn_bwd") == 0);
    /* No unmasked table: an unmasked block takes the causal table (0.375 at 2,048 keys). */
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD_FULL, 2048, 0, 1) - 0.375) < 1e-12);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_BWD_FULL, 2048, 0, 1) - 0.4) < 1e-12);
    hw_gpu_destroy(g);

    /* With one, its own: a constant 0.6 forward gives 989 GFLOP in 1/0.6 ms =
     * 1,666,666,666.67 ps -> 1,666,666,667 ps; the causal forward keeps its table. */
    s.attn_eff[2] = (hw_curve){.n = 1, .x = {4096}, .y = {0.6}};
    g = hw_gpu_create(&s);
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD_FULL, HW_DTYPE_BF16, 989e9, 0, 2048),
                 INT64_C(1666666667));
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 0, 1) - 0.375) < 1e-12);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_BWD_FULL, 2048, 0, 1) - 0.4) < 1e-12);
    hw_gpu_destroy(g);

    /* Head-dim factors: forward 0.7 at 64 and 1 at 128, backward 0.8 at 64 (one point: a
     * constant). Head dim 64: the forward 0.375 at 2,048 keys becomes 0.2625, 989 GFLOP in
     * 1/0.2625 ms = 3,809,523,809.52 ps -> 3,809,523,810 ps; the unmasked backward 0.4 x 0.8
     * = 0.32. Head dim 90.51 (= 64 x 2^0.5, halfway in log10): 0.85 x 0.375 = 0.31875. Head
     * dim 0 (not known) takes no factor; 256, beyond the table, the last point's 1. */
    s.attn_head[0] = (hw_curve){.n = 2, .x = {64, 128}, .y = {0.7, 1}};
    s.attn_head[1] = (hw_curve){.n = 1, .x = {64}, .y = {0.8}};
    g = hw_gpu_create(&s);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 64, 1) - 0.2625) < 1e-12);
    CHECK_INT_EQ(hw_gpu_kernel_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 989e9, 0, 64, 2048),
                 INT64_C(3809523810));
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_BWD_FULL, 2048, 64, 1) - 0.32) < 1e-12);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 64 * sqrt(2.0), 1) - 0.31875) < 1e-12);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 0, 1) - 0.375) < 1e-12);
    CHECK(fabs(hw_gpu_attn_eff(g, HW_OP_ATTN_FWD, 2048, 256, 1) - 0.375) < 1e-12);
    /* hw_gpu_op_time knows no head dim: no factor */
    CHECK_INT_EQ(hw_gpu_op_time(g, HW_OP_ATTN_FWD, HW_DTYPE_BF16, 989e9, 1e6, 2048),
                 INT64_C(2666666667));
    hw_gpu_destroy(g);
}

int main(void)
{
    test_dtypes();
    test_curves();
    test_attention();
    test_spec_copied();
    test_op_time();
    return test_finish();
}
