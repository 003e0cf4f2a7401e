/* A fully loaded and validated scenario: cluster, model, training and parallel settings.
 *
 * The loader (sim/input) fills it from YAML; defaults are those of docs/scenario-format.md and are
 * set by plan_scenario_defaults. Keys whose feature does not exist yet are rejected by the loader
 * when set to a non-default value, so everything here is either supported or at its default. */
#ifndef SIM_PLAN_SCENARIO_H
#define SIM_PLAN_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/spec.h"
#include "model/model.h"

/* Process-group classes (also the communication stream classes). */
typedef enum plan_group_class {
    PLAN_GROUP_DP,
    PLAN_GROUP_TP,
    PLAN_GROUP_PP,
    PLAN_GROUP_EP,
    PLAN_GROUP_CP,
    PLAN_GROUP_COUNT
} plan_group_class;

const char *plan_group_name(plan_group_class g); /* "dp", "tp", ... */

typedef enum plan_master_weights { PLAN_MASTER_FP32, PLAN_MASTER_NONE } plan_master_weights;
typedef enum plan_optimizer { PLAN_OPT_ADAM, PLAN_OPT_SGD } plan_optimizer;
typedef enum plan_state_dtype {
    PLAN_STATE_FP32,
    PLAN_STATE_BF16,
    PLAN_STATE_INT8
} plan_state_dtype;
typedef enum plan_finetune { PLAN_FT_FULL, PLAN_FT_LORA, PLAN_FT_QLORA } plan_finetune;
/* The loss's implementation (docs/models.md, "Head"): Megatron's vocab-parallel cross entropy
 * (the fp32 gradient in place of the kept softmax), PyTorch's F.cross_entropy on fp32
 * logits (torchtitan, Hugging Face: two more fp32 logit-sized tensors in backward), or the
 * same compiled by torch.compile (torchtitan since April 2025: one fused kernel each way,
 * keeping the 16-bit logits, no fp32 tensor of the logits' size). */
typedef enum plan_cross_entropy {
    PLAN_CE_VOCAB_PARALLEL,
    PLAN_CE_PYTORCH,
    PLAN_CE_COMPILED
} plan_cross_entropy;
/* How an fp8 run scales its tensors (docs/models.md, "fp8"): Transformer Engine's delayed
 * scaling (the scale from the amax history: one pass over a tensor to cast it) or current
 * scaling (TE's Float8CurrentScaling, torchao's dynamic tensorwise float8: the tensor's own
 * amax first, a second pass to cast it). */
typedef enum plan_fp8_recipe { PLAN_FP8_DELAYED, PLAN_FP8_CURRENT } plan_fp8_recipe;
/* Which RMSNorm kernels run (docs/models.md, "Eager and compiled pointwise kernels"):
 * PyTorch's composite ops (torchtitan's and Hugging Face's RMSNorm, at::rms_norm: 8 kernels
 * forward, 12 backward, and autograd keeps an fp32 copy of the input), or one fused kernel each
 * way (torch.compile, Megatron/TE, torchtitan's Triton fused_rmsnorm, Liger). DEFAULT: composite
 * when training.compile is false, fused when it is true (plan_composite_norm). */
typedef enum plan_norm_kernel {
    PLAN_NORM_DEFAULT,
    PLAN_NORM_COMPOSITE,
    PLAN_NORM_FUSED
} plan_norm_kernel;
/* How gradients accumulate over a step's micro-batches (docs/strategies.md, "Gradient
 * accumulation"): inside the weight-gradient GEMMs, with no kernel of their own (Megatron's
 * gradient_accumulation_fusion into an fp32 main_grad; a first micro-batch's gradients are the
 * GEMMs' outputs), or, after each micro-batch's backward of a chunk, every parameter's 16-bit
 * gradient cast to fp32 and added into an fp32 buffer by two eager kernels per tensor, the
 * 16-bit gradients staying allocated beside it (DeepSpeed's BF16_Optimizer, update_hp_grads). */
typedef enum plan_grad_accum { PLAN_GRAD_ACCUM_FUSED, PLAN_GRAD_ACCUM_CAST_ADD } plan_grad_accum;
typedef enum plan_schedule {
    PLAN_SCHED_GPIPE,
    PLAN_SCHED_1F1B,
    PLAN_SCHED_INTERLEAVED,
    PLAN_SCHED_ZB_H1, /* zero-bubble ZB-H1: backward split into input and weight gradients */
    PLAN_SCHED_DUALPIPE, /* DeepSeek-V3's bidirectional DualPipe */
    PLAN_SCHED_ZBV      /* zero-bubble ZB-V: two chunks a stage in a V */
} plan_schedule;
typedef enum plan_offload { PLAN_OFFLOAD_NONE, PLAN_OFFLOAD_CPU, PLAN_OFFLOAD_NVME } plan_offload;
/* Which sharded-data-parallel implementation runs ZeRO-3 (docs/strategies.md, "FSDP"). */
typedef enum plan_fsdp_impl {
    PLAN_FSDP2,     /* PyTorch fully_shard: per-parameter shards, copy-out after each gather
                       and copy-in before each reduce-scatter on the compute stream */
    PLAN_FSDP1,     /* PyTorch FullyShardedDataParallel: one flat parameter per unit, gathered
                       in place; the rate limiter keeps two gathers in flight */
    PLAN_DEEPSPEED  /* DeepSpeed ZeRO stage 3: prefetch and gradient buckets in parameters,
                       small parameters persistent */
} plan_fsdp_impl;
typedef enum plan_symmetry { PLAN_SYMMETRY_NONE, PLAN_SYMMETRY_DP } plan_symmetry;
/* Whose sequence parallelism (docs/strategies.md, "Tensor and sequence parallelism"):
 * Megatron's ([s, b, h] activations, split along the leading dimension NCCL's collectives
 * cut; a linear layer keeps its input's shard and gathers it again for the weight gradient)
 * or PyTorch DTensor's (torchtitan: [b, s, h] split along dimension 1, which PyTorch's
 * functional collectives rearrange through a copy of the whole tensor; autograd keeps the
 * gathered input, or the recomputation gathers it again). */
typedef enum plan_sp_impl { PLAN_SP_MEGATRON, PLAN_SP_DTENSOR } plan_sp_impl;
/* How symmetry times the collectives that span replicas (docs/scenario-format.md). */
typedef enum plan_symmetry_coll {
    PLAN_SYMCOLL_ESTIMATE, /* the selector's cost model on the real topology, as if alone */
    PLAN_SYMCOLL_FLOWS     /* every member's transfers as flows, round by round */
} plan_symmetry_coll;
typedef enum plan_coll_algo {
    PLAN_COLL_AUTO,
    PLAN_COLL_RING,
    PLAN_COLL_TREE,
    PLAN_COLL_HD,
    PLAN_COLL_DIRECT,
    PLAN_COLL_HIERARCHICAL,
    PLAN_COLL_NVLS,
    PLAN_COLL_PAIRWISE, /* all_to_all in n-1 shifted rounds */
    PLAN_COLL_ALGO_COUNT
} plan_coll_algo;

const char *plan_coll_algo_name(plan_coll_algo a);
/* The coll_algo a `collectives` setting fixes, or -1 for auto. */
int plan_coll_algo_id(plan_coll_algo a);

#define PLAN_TARGETS_MAX 16
#define PLAN_STAGES_MAX 256
/* The largest cluster stepsim simulates (docs/scenario-format.md, "Limits"). */
#define PLAN_GPUS_MAX 1048576
/* The largest model, in parameters (2^50, ~1.1e15: sums of products of sizes stay exact in
 * int64 and double far below it). */
#define PLAN_PARAMS_MAX 1125899906842624.0

typedef struct plan_training {
    int64_t seq_len;
    int64_t global_batch; /* sequences per optimizer step, all DP replicas */
    int64_t micro_batch;  /* sequences per forward/backward of one DP replica */
    hw_dtype precision;   /* bf16 | fp16 | fp8 */
    plan_fp8_recipe fp8_recipe; /* with precision fp8 */
    plan_master_weights master_weights;
    hw_dtype grad_dtype;  /* bf16 | fp32 */
    plan_grad_accum grad_accumulation;
    plan_optimizer optimizer;
    plan_state_dtype optimizer_state;
    model_recompute recompute;
    int recompute_every;     /* recompute applies to layers l with (l + 1) % this == 0 (every
                                N-th layer, torchtitan's per-layer checkpointing); the others
                                keep everything. >= 1 (validated); 1 = every layer */
    bool recompute_early_stop; /* full recompute as PyTorch's non-reentrant checkpoint runs
                                  it (>= 2.1, or torch.compile's): the re-run stops once the
                                  last tensor the backward needs is rebuilt, so a dense
                                  layer's down GEMM and second residual add do not run again
                                  (model_op.after_last_save); false: the whole layer re-runs
                                  (Megatron's, DeepSpeed's and reentrant checkpointing) */
    bool flash_attention;
    plan_cross_entropy cross_entropy;
    bool compile;            /* pointwise work in fused kernels (torch.compile, Megatron/TE's
                                fused kernels); false: eager PyTorch's composite ops */
    plan_norm_kernel norm_kernel; /* RMSNorm's kernels (DEFAULT: as compile says) */
    hw_attn_kernel attention_kernel; /* whose fused-attention tables time the flash kernels
                                        (UNNAMED: the catalog's attention_efficiency); the
                                        loader has copied them into topology.gpu.attn_eff */
    struct {
        plan_finetune method;
        int rank;                               /* LoRA rank */
        int n_targets;
        char targets[PLAN_TARGETS_MAX][32];     /* e.g. q, k, v, o, gate, up, down */
    } finetune;
    double moe_routing_skew;
    double tokens;              /* training budget in tokens (time to train); 0 = none */
    double moe_capacity_factor; /* 0 = dropless; else tokens per expert capped (Megatron) */
} plan_training;

typedef struct plan_parallel {
    int dp, tp, pp, ep, cp;
    bool sp;
    int zero; /* 0..3 */
    struct {
        bool reshard_after_forward;
        int prefetch;
        bool hybrid_shard;
        plan_fsdp_impl implementation;
        bool limit_all_gathers;       /* fsdp1: at most two gathers in flight */
        double prefetch_bucket;       /* deepspeed: parameters gathered ahead (elements) */
        double reduce_bucket;         /* deepspeed: gradients per reduce-scatter (elements) */
        double persistence_threshold; /* deepspeed: parameters of at most this many elements
                                         stay whole on every rank */
        double max_reuse_distance; /* deepspeed: a gathered tensor used again before this
                                      many parameters' uses stays gathered (elements) */
        double sub_group_size; /* deepspeed: the step casts, updates and frees the shard's
                                  fp32 gradients this many elements at a time */
        bool sync_fetch;       /* deepspeed: each fetch ends in a device synchronization */
        bool list_collectives; /* deepspeed: each tensor its own list collective (N copies) */
    } fsdp;
    struct {
        int64_t bucket_bytes;
        bool overlap;
        bool overlap_param_gather; /* ZeRO-1/2: gather each unit's updated parameters just
                                      ahead of its first forward of the next step (Megatron-
                                      Core's --overlap-param-gather), not after the update */
    } ddp;
    struct {
        plan_schedule schedule;
        int virtual_stages;
        int n_stage_layers; /* 0 = auto */
        int stage_layers[PLAN_STAGES_MAX];
    } pipeline;
    bool tp_comm_overlap;
    bool tp_grad_overlap;
    plan_sp_impl sp_implementation;
    struct {
        plan_offload optimizer;
        plan_offload params;      /* ZeRO-3: the 16-bit shards live in host memory */
        plan_offload activations; /* cpu: the saved activations copied to the host */
    } offload;
    plan_group_class order[PLAN_GROUP_COUNT]; /* inner to outer */
} plan_parallel;

/* simulation.stragglers: ranks whose kernels run `slowdown` times as long (one entry per
 * rank listed, in the order listed). */
#define PLAN_STRAGGLERS_MAX 1024
typedef struct plan_straggler {
    int32_t rank;
    double slowdown;
} plan_straggler;

/* simulation.steady_state (replay/steady.c) */
typedef enum plan_steady_state {
    PLAN_STEADY_AUTO, /* skip whole periods of a steady state found exactly (the default) */
    PLAN_STEADY_OFF   /* simulate every period */
} plan_steady_state;

typedef struct plan_simulation {
    int steps;
    uint64_t seed;
    bool timeline;
    plan_symmetry symmetry;
    plan_symmetry_coll symmetry_collectives;
    plan_steady_state steady_state;
    double jitter; /* coefficient of variation of each kernel's duration (lognormal, mean 1) */
    int n_stragglers;
    plan_straggler stragglers[PLAN_STRAGGLERS_MAX];
} plan_simulation;

typedef struct plan_scenario {
    char name[128];
    hw_topology_spec topology;
    model_spec model;
    plan_training training;
    plan_parallel parallel;
    plan_simulation simulation;
    plan_coll_algo collectives[PLAN_GROUP_COUNT];
} plan_scenario;

/* Fills every field with the defaults of docs/scenario-format.md (topology and model zeroed). */
void plan_scenario_defaults(plan_scenario *sc);

/* Whether RMSNorm runs as PyTorch's composite ops: norm_kernel composite, or its default
 * without torch.compile. */
bool plan_composite_norm(const plan_training *t);

#endif
