/* GPU compute model: the catalog entry (hw_gpu_spec, filled by the loader) and the roofline
 * that turns an op's FLOPs and bytes into a duration.
 *
 *   t = max(FLOPs / (peak[dtype] x eff_mm(FLOPs)) x (1 + k0 / k),
 *           bytes / (HBM bw x eff_mem(bytes))) + launch_overhead      for matmul-class ops
 *   t = max(FLOPs / peak[fp32], bytes / (HBM bw x eff_mem(bytes))) + launch_overhead
 *                                                             for vector (elementwise) ops
 *
 * k is the GEMM's inner (reduction) dimension and k0 the catalog's matmul_k_overhead: each
 * output tile streams k elements of its operands and pays a fixed prologue and epilogue
 * worth k0 more (docs/calibration.md); eff_mm is the rate as k grows large. An op whose k is
 * not known (0) takes no correction.
 *
 * Fused (flash) attention kernels take the matmul form with the catalog's attention
 * efficiency at the kernel's sequence length, eff_attn(seq), in place of eff_mm(FLOPs)
 * (forward and backward have their own tables; a GPU without one uses eff_mm).
 *
 * Efficiencies are piecewise-linear in log10(size), clamped outside the table (GSL linear
 * interpolation; a one-point table is a constant). Sources of each catalog curve are in the
 * catalog files and docs/calibration.md. */
#ifndef SIM_HW_GPU_H
#define SIM_HW_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "core/time.h"

typedef enum hw_dtype {
    HW_DTYPE_BF16,
    HW_DTYPE_FP16,
    HW_DTYPE_FP8,
    HW_DTYPE_TF32,
    HW_DTYPE_FP32,
    HW_DTYPE_COUNT
} hw_dtype;

/* "bf16", "fp16", ... Static strings. */
const char *hw_dtype_name(hw_dtype d);
/* Bytes per element: bf16/fp16 2, fp8 1, tf32/fp32 4. */
int hw_dtype_bytes(hw_dtype d);

#define HW_CURVE_MAX 32
typedef struct hw_curve {
    int n;                  /* points; 0 = not given (efficiency 1) */
    double x[HW_CURVE_MAX]; /* strictly increasing, > 0 (FLOP or bytes) */
    double y[HW_CURVE_MAX]; /* efficiency in (0, 1] */
} hw_curve;

/* Fused-attention tables: one per HW_OP_ATTN_* class, in that order. */
#define HW_ATTN_TABLES 4

/* Fused-attention kernels the catalog may tabulate (docs/calibration.md, "Fused attention").
 * UNNAMED: the catalog does not say which kernel attention_efficiency measures; as a
 * scenario's training.attention_kernel, "default": the catalog's own table. */
typedef enum hw_attn_kernel {
    HW_ATTN_KERNEL_UNNAMED,
    HW_ATTN_KERNEL_FA2,
    HW_ATTN_KERNEL_FA3,
    HW_ATTN_KERNEL_CUDNN,
    HW_ATTN_KERNEL_FA1,       /* FlashAttention (v1, flash-attn 1.x CUDA kernels) */
    HW_ATTN_KERNEL_FA_TRITON, /* FlashAttention's Triton implementation (flash_attn_triton.py,
                                 llm-foundry's attn_impl: triton) */
    HW_ATTN_KERNEL_COUNT
} hw_attn_kernel;

/* "default", "fa2", "fa3", "cudnn", "fa1", "fa_triton". Static strings. */
const char *hw_attn_kernel_name(hw_attn_kernel k);

typedef struct hw_gpu_spec {
    char name[64];
    int64_t memory_bytes;            /* usable by a training process */
    double memory_bw_Bps;            /* HBM bandwidth */
    double peak_flops[HW_DTYPE_COUNT]; /* dense FLOP/s; 0 = dtype not supported */
    hw_curve matmul_eff;             /* x = FLOP of one GEMM, at a large inner dimension */
    hw_curve matmul_eff_fp8;         /* the same for fp8 GEMMs (at the fp8 peak); n = 0:
                                        matmul_eff */
    double matmul_k_overhead;        /* k0: a GEMM with inner dimension k runs at
                                        k / (k + k0) of matmul_eff (elements; 0: none) */
    hw_curve memory_eff;             /* x = bytes moved by one kernel */
    hw_curve memory_eff_eager;       /* the same for eager PyTorch's own kernels (its
                                        composite ops', its native LayerNorm, GELU and adds:
                                        vector ops marked HW_VECTOR_EAGER); n = 0: memory_eff */
    hw_curve attn_eff[HW_ATTN_TABLES]; /* fused attention by hw_op_class - HW_OP_ATTN_FWD
                                        (causal forward, causal backward, unmasked forward,
                                        unmasked backward); x = keys each query attends over
                                        (tokens); n = 0: unmasked falls back to causal,
                                        causal to matmul_eff */
    hw_curve attn_head[2];           /* fused attention's rate by head dimension, forward
                                        and backward, as a factor on attn_eff (x = head
                                        dim; y in (0, 2]: 1 at the tables' own head dim);
                                        n = 0: no factor */
    hw_attn_kernel attn_kernel;      /* the kernel attn_eff measures (UNNAMED: not said) */
    hw_curve attn_alt[HW_ATTN_KERNEL_COUNT][HW_ATTN_TABLES]; /* other kernels' tables, by
                                        kernel (a scenario's training.attention_kernel
                                        copies one into attn_eff); forward n = 0: none */
    hw_curve attn_alt_head[HW_ATTN_KERNEL_COUNT][2]; /* their head-dim factors */
    sim_time launch_overhead_ps;     /* per kernel */
    double comm_interference;        /* compute slowdown while NCCL kernels run: a kernel that
                                        starts then takes (1 + this) times as long */
    /* A GPU-to-GPU copy staged in host memory (p2p: false; docs/topologies.md, "Routing"):
     * the source's copy engine writes a chunk to a host buffer, then the destination's reads
     * it, chunk after chunk. Each chunk waits for a hand-off between the two (a semaphore in
     * host memory and the second copy's start), not overlapped with the data. */
    sim_time staging_latency_ps;     /* the hand-off of one chunk (0: none) */
    int64_t staging_chunk_bytes;     /* bytes per hand-off (0: one per copy) */
} hw_gpu_spec;

typedef enum hw_op_class {
    HW_OP_MATMUL,   /* GEMMs and unfused attention matmuls: tensor-core peak */
    HW_OP_VECTOR,   /* elementwise, norms, softmax, optimizer: CUDA-core rate, memory-bound
                       (inner HW_VECTOR_EAGER: eager PyTorch's own kernel) */
    HW_OP_ATTN_FWD, /* fused (flash) causal attention forward: tensor-core peak x eff(seq) */
    HW_OP_ATTN_BWD, /* its backward */
    HW_OP_ATTN_FWD_FULL, /* fused attention over an unmasked block (context-parallel ring
                            steps after the first): the unmasked table */
    HW_OP_ATTN_BWD_FULL, /* its backward */
    HW_OP_CLASS_COUNT
} hw_op_class;

_Static_assert(HW_OP_CLASS_COUNT - HW_OP_ATTN_FWD == HW_ATTN_TABLES,
               "one attention table per HW_OP_ATTN_* class");

/* The `inner` of an HW_OP_VECTOR kernel that is eager PyTorch's own: one of its composite
 * ops' (an RMSNorm, RoPE or SwiGLU run op by op) or a native LayerNorm, GELU or add
 * (docs/models.md): timed by the GPU's memory_eff_eager curve. Other vector kernels have
 * inner 0. */
#define HW_VECTOR_EAGER 1.0

/* "matmul", "vector", "attn_fwd", "attn_bwd", "attn_fwd_full", "attn_bwd_full". Static
 * strings. */
const char *hw_op_class_name(hw_op_class c);

/* The compiled compute model of one GPU type (interpolators built once). */
typedef struct hw_gpu hw_gpu;

/* Builds the model from a validated spec (the loader has checked that the curves are
 * strictly increasing in x with efficiencies in (0, 1]). The spec is copied. Cannot fail. */
hw_gpu *hw_gpu_create(const hw_gpu_spec *spec);
void hw_gpu_destroy(hw_gpu *gpu);

const hw_gpu_spec *hw_gpu_get_spec(const hw_gpu *gpu);

/* Efficiency curves evaluated (clamped) at x. The matmul curve is the bf16/fp16/tf32 one;
 * hw_gpu_matmul_eff_of picks the fp8 curve for fp8 GEMMs where the catalog has one. */
double hw_gpu_matmul_eff(const hw_gpu *gpu, double flops);
double hw_gpu_matmul_eff_of(const hw_gpu *gpu, hw_dtype dtype, double flops);
double hw_gpu_memory_eff(const hw_gpu *gpu, double bytes);
/* Eager PyTorch's own kernels' curve (HW_VECTOR_EAGER), the memory curve where the catalog
 * has none. */
double hw_gpu_memory_eff_eager(const hw_gpu *gpu, double bytes);
/* Efficiency of a fused-attention kernel (HW_OP_ATTN_*) that attends over `seq` keys with
 * heads of `head_dim` (0: not known, no factor): the catalog's attention table times its
 * head-dim factor, or the matmul curve at `flops` when the GPU has no table. */
double hw_gpu_attn_eff(const hw_gpu *gpu, hw_op_class cls, double seq, double head_dim,
                       double flops);

/* Roofline duration of one kernel, launch overhead included, rounded up to the picosecond.
 * `dtype` selects the tensor-core peak (ignored for vector ops); `dim` is the kernel's shape
 * parameter: for a matmul its inner dimension k (0: not known, no correction), for fused
 * attention the keys each query attends over; vector ops ignore it. Asserts the dtype is
 * supported. */
sim_time hw_gpu_op_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                        double bytes, double dim);
/* A kernel's duration as the trace describes it: `inner` is a matmul's inner dimension k
 * or a fused-attention kernel's head dimension (0: not known, no correction), `seq` the
 * keys an attention kernel attends over (ignored by other classes). */
sim_time hw_gpu_kernel_time(const hw_gpu *gpu, hw_op_class cls, hw_dtype dtype, double flops,
                            double bytes, double inner, double seq);

#endif
