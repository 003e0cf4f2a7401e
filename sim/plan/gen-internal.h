/* The state of the trace generator, shared by plan/emit.c (kernels, collectives, buckets,
 * tensor-parallel collectives) and plan/dp.c (strategies and set-up). */
#ifndef SIM_PLAN_GEN_INTERNAL_H
#define SIM_PLAN_GEN_INTERNAL_H

#include <string.h>

#include "plan/pipeline.h"
#include "plan/plan-internal.h"

typedef struct unit {
    model_block blk;
    int layer;          /* TRACE_NO_LAYER for embedding and head */
    int64_t params;     /* parameters the unit owns */
    int64_t trainable;  /* of which trained (all, or the LoRA adapters) */
    int64_t trainable_expert; /* of which experts' (reduced and sharded over expert-DP) */
    double weight_bytes; /* its weights as stored (16-bit; QLoRA's frozen matrices in NF4) */
    int64_t persist;     /* DeepSpeed ZeRO-3: parameters kept whole on every rank (at most
                            persistence_threshold elements each), never gathered */
    double persist_bytes; /* their bytes */
    double expert_bytes;  /* MoE units: its experts' 16-bit weights (the rank's experts), which
                             ZeRO-3 shards over the expert-data-parallel group */
    double fp8_weights; /* training.precision fp8: the elements of its fp8 layers' weights
                           (the rank's share), which Transformer Engine keeps cast to fp8 and
                           transposed through the step (2 bytes each) where they stay
                           resident (plan__weights_resident) */
    double fp8_expert_weights; /* of which its routed experts' */
    double act;         /* activation bytes kept for backward, per micro-batch */
    double act_extra;   /* full or per-op recompute: bytes rebuilt for the backward */
    model_recompute rc; /* the layer's recompute (training.recompute on every
                           recompute_every-th layer, NONE elsewhere and on embedding/head) */
    bool has_bwd;       /* false for a frozen unit whose backward is empty (LoRA embedding) */
} unit;

typedef struct span {
    uint32_t first, last; /* ops of one unit's forward or backward on the compute stream */
    bool any;             /* false when the unit had no kernel */
} span;

typedef struct coll_seq {
    uint32_t *ids;   /* collective instances of one group, in emission order */
    size_t n, cap;
} coll_seq;

typedef struct gen {
    plan *p;
    const plan_scenario *sc;
    bool sharing;       /* ranks may borrow their template's ops (share.c) */
    model_spec model;   /* the scenario's model, vocabulary padded as Megatron pads it */
    trace *t;
    model_shape sh;
    int rank;
    int zero;
    int64_t A;          /* micro-batches per step */
    int n;              /* ranks sharing a shard (the dp group, or the node for hybrid) */
    bool hybrid;
    uint32_t g_shard, g_rep; /* process groups of this rank (g_rep: hybrid only) */
    uint32_t g_tp;           /* this rank's tensor-parallel group */
    int tp;
    bool sp;
    int cp;                  /* context-parallel degree */
    uint32_t g_cp;           /* this rank's context-parallel ring (cp > 1) */
    double cp_kv;            /* bytes of the K/V block a ring-attention step passes on */
    uint32_t cp_recv;        /* the shift that brings the next ring step its block */
    /* every rank's groups, by rank (groups.c); pp_*_of: [rank][chunk boundary] */
    uint32_t *shard_of, *rep_of, *tp_of, *cp_of, *ep_of, *edp_of, *pp_fwd_of, *pp_bwd_of;
    bool have_pending;       /* a TP collective the next compute kernel must wait for */
    uint32_t pending;
    bool defer_pending;      /* ... unless it is a wgrad GEMM, which runs beside its dgrad's
                              * collective (tp_grad_overlap); the kernel after it waits */
    bool have_held;          /* the collective held over that wgrad */
    uint32_t held;
    bool have_gather;        /* SP: the re-gather of a column-parallel GEMM's input that its
                              * next wgrad kernel waits for (the dgrad runs beside it) */
    uint32_t gather;
    uint32_t last_compute;   /* the latest compute kernel emitted on this rank */
    uint32_t *fsdp_ag;       /* ZeRO-3 with a pipeline: per unit, its latest gather */
    bool *fsdp_held;         /* ... gathered and kept (no resharding after forward) */
    uint64_t *ds_keep_fwd;   /* DeepSpeed ZeRO-3: per unit, the tensors (bits, fsdp.c's
                                unit_tensors order) kept gathered from forward to backward ... */
    uint64_t *ds_keep_rc;    /* ... and from the recomputed forward to the backward */
    bool *fsdp_grads;        /* ... holding unsharded gradients until the last micro-batch */
    bool have_compute;
    /* pipeline */
    int pp, vstages, stage, chunks; /* vstages: chunks a stage holds; chunks: the model's
                                     * (pp x vstages, DualPipe pp) */
    int pp_slots;            /* pipeline pair groups per rank and direction of transfer:
                              * chunks boundaries, times 2 directions of micro-batches under
                              * DualPipe (slot dir x chunks + boundary) */
    int *chunk_first;        /* first unit of each chunk; chunk_first[chunks] = n_units */
    bool *mine;              /* units held by this rank's stage */
    uint32_t *pp_fwd, *pp_bwd; /* this rank's p2p groups per slot: activations, gradients */
    plan_pp_action *pp_all;  /* zbv: every stage's schedule (plan_pp_schedule_all), else NULL */
    int *pp_n;
    /* experts */
    int ep, n_edp;           /* expert-parallel degree; ranks sharing an expert (dp / ep) */
    uint32_t g_ep, g_edp;    /* this rank's EP group and expert-data-parallel group */
    double *route;           /* tokens per local expert: [layer][micro-batch][local expert] */
    double *sent;            /* assignments each rank dispatches: [layer][micro-batch] */
    /* per EP group (dp / ep of them), drawn once: counts [block][layer][micro-batch][expert],
     * assignments dispatched per rank [block][layer][micro-batch] */
    bool *moe_drawn;
    unsigned int *moe_counts;
    double *moe_sent;
    double moe_assigned, moe_dropped, moe_imbalance_sum, moe_draws; /* statistics */
    int n_local;             /* experts per rank */
    model_moe_load load;     /* the load of the unit being emitted */
    coll_seq *seq;      /* per group */
    int *seq_pos;       /* per group: instances used so far by this rank */
    unit *units;
    int n_units;
    double wbytes, gbytes; /* bytes per parameter: 16-bit weights, gradients */
    /* bucketing (ZeRO <= 2) */
    double fill;
    double *deferred;   /* bucket sizes waiting for the end of backward (overlap: false) */
    size_t n_deferred, cap_deferred;
    bool have_last_coll;
    uint32_t last_coll;
    int *mem_sharers;   /* per rank: ranks staging in the same host memory (offload) */
    uint32_t *gather_of; /* overlap_param_gather: per unit, the all-gather its first forward
                            of the step waits for (UINT32_MAX: none) */
    double model_flops, hardware_flops;
    bool op_recompute;  /* emitting a per-op policy's recomputed forward (MODEL_RECOMPUTE_OP) */
    int bwd_part;       /* plan_pp_part of the backward being emitted (zero-bubble split) */
    /* called by plan__emit_bwd between a unit's recomputed forward (its last op
     * `recomputed`) and its backward, NULL: nothing between; returns whether the backward's
     * first op waits for *dep (DeepSpeed's parameters gathered again: fsdp.c) */
    bool (*between_passes)(struct gen *g, const unit *u, int mb, uint32_t recomputed,
                           uint32_t *dep);
    uint32_t *act_fetch; /* offload.activations: per unit, its activations' copy back to the GPU
                            issued ahead of its backward ... */
    int *act_fetch_mb;   /* ... for this micro-batch (-1: none) */
    bool *wcast_done;    /* training.precision fp8, weights resident: per unit, whether its
                            fp8 weight casts ran in this step (in its first forward) */
    /* memo of kernel names (model ops name kernels with static strings): name id by
     * (pointer, recompute), and the TP collective points by (pointer, phase, before) */
    struct {
        const char *name;
        uint32_t id[2];
        bool have[2];
        const void *tp[2][2];
        bool have_tp[2][2];
    } memo[512];
} gen;
/* Whether TP communication overlap applies to kernel `name` (parallel.tp_comm_overlap): every
 * matmul's under Transformer Engine. Under DTensor's SP it is torch's async TP, which
 * torch.compile applies inside the compiled code only, the transformer blocks (torchtitan
 * compiles each block, not the LM head), and only where its pattern pass finds a collective
 * next to one matmul (torch/_inductor/fx_passes/micro_pipeline_tp.py): a reduce-scatter
 * fuses with the matmul that produces its input, and the input gradient of a
 * column-parallel block is a sum of matmuls when the block holds its projections apart —
 * q, k and v (as torchtitan's and Hugging Face's attention do) and SwiGLU's gate and up —
 * so the reduce-scatters after "qkv.dgrad" and a gated "mlp_up.dgrad" stay plain. The model
 * file does not say whether a block fuses q, k and v into one Linear (GPT-2's c_attn): they
 * are taken apart, as DTensor's TP plans for Llama-style models hold them. */
static inline bool plan__tp_fusable(const plan_scenario *sc, const char *name)
{
    if (!sc->parallel.tp_comm_overlap)
        return false;
    if (sc->parallel.sp_implementation != PLAN_SP_DTENSOR)
        return true;
    if (!strncmp(name, "lm_head", 7) || !strcmp(name, "qkv.dgrad"))
        return false;
    return strcmp(name, "mlp_up.dgrad") || sc->model.activation != MODEL_ACT_SWIGLU;
}

/* Whether kernel `name` ends with `suffix` (".wgrad", ".dgrad"), and whether it is an
 * expert's kernel. */
static inline bool plan__ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n > k && !strcmp(name + n - k, suffix);
}

static inline bool plan__is_expert(const char *name)
{
    return strncmp(name, "moe.expert", 10) == 0;
}

/* Whether the rank gathers its layers' weights for each use (ZeRO-3 over more than one rank,
 * or with offloaded parameters): the FSDP step (fsdp.c) rather than the resident one. */
static inline bool plan__gathers_weights(const gen *g)
{
    return g->zero == 3 && (g->n > 1 || g->sc->parallel.offload.params != PLAN_OFFLOAD_NONE);
}

/* Whether kernel `name`'s weights stay resident through the step: not gathered for each use,
 * or an expert's where ZeRO-3 leaves each rank its experts whole (one rank per expert-data-
 * parallel group). An fp8 weight cast of resident weights runs once a step. */
static inline bool plan__weights_resident(const gen *g, const char *name)
{
    return !plan__gathers_weights(g) || (plan__is_expert(name) && g->n_edp <= 1);
}

static inline int64_t plan__ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Bytes of one optimizer state per parameter: fp32 4, bf16 2, int8 1 plus an fp32 scale per
 * 2048-element block (8-bit Adam). */
double plan__state_bytes(plan_state_dtype d);

/* The instance for this rank's next collective on `group` (shared by all its members). */
uint32_t plan__coll_next(gen *g, uint32_t group, coll_op op, double bytes);
/* A collective op on the stream of its group's class. */
uint32_t plan__add_coll_op(gen *g, uint32_t group, coll_op op, double bytes, const char *name,
                           int layer, int mb, const uint32_t *deps, size_t n_deps);
/* The forward (backward) kernels of one unit for micro-batch `mb`, with activation memory
 * events, TP collectives and (backward) gradient bucketing; the first kernel waits for
 * `deps`. */
span plan__emit_fwd(gen *g, const unit *u, int mb, const uint32_t *deps, size_t n_deps);
span plan__emit_bwd(gen *g, const unit *u, int mb, bool bucketing, const uint32_t *deps,
                    size_t n_deps);
/* Points the shape at the expert load of (layer, micro-batch) for a MoE unit, or clears it. */
void plan__moe_shape(gen *g, const unit *u, int mb);

/* Issues the open and deferred gradient buckets after `last_bwd`. */
void plan__bucket_flush(gen *g, uint32_t last_bwd, int mb);
/* Creates g->t with every process group (groups.c: layout and member order) and sets g->n
 * and g->n_edp; clears g->hybrid on a single node. Needs g->p, g->sc, g->ep, g->chunks,
 * g->hybrid. Returns 0 or an error with diag set (hybrid shard over unequal nodes, or with
 * tp or cp). */
int plan__groups_create(gen *g, sim_diag *diag);
/* Points g's per-rank fields (rank, groups, stage, pp_fwd/pp_bwd) at rank r. */
void plan__groups_select(gen *g, int r);
void plan__groups_destroy(gen *g);

/* Ranks borrowing a template rank's ops (plan/share.c). */
typedef struct plan_share {
    bool enabled;
    bool adopt;              /* MoE: each rank is generated (its EP group's routing), then
                                borrows its template's arrays if only expert kernels'
                                values differ (plan__share_adopt) */
    int n;                   /* ranks */
    int *tmpl;               /* per rank: the rank it borrows from, or -1 (generated) */
    int *users;              /* per template: ranks expected to borrow from it */
    double *model_flops, *hardware_flops; /* per template: what its ops add to the totals */
    uint16_t **roles;        /* per template: the role of each collective op's group */
} plan_share;

/* `stream`: ranks are walked and released one at a time (`stepsim mem`), so a MoE rank keeps
 * its generated ops (nothing to gain by borrowing) and no MoE template is kept. */
void plan__share_init(gen *g, plan_share *s, bool stream);
void plan__share_clear(plan_share *s);
/* Call after generating rank T (its flops recorded in s): prepares it to be borrowed. */
void plan__share_template_done(gen *g, plan_share *s, int T);
/* Makes rank r (groups selected) borrow its template's ops and join its own groups'
 * collectives; false (nothing done) when it has no template or its groups do not match. */
bool plan__share_clone(gen *g, plan_share *s, int r);
/* After generating rank r (finished): with `adopt`, borrows its template's arrays when they
 * match but for compute ops' values (trace_adopt_template). */
void plan__share_adopt(gen *g, plan_share *s, int r);

/* Gradient bytes the unit's backward produces on this rank. */
double plan__unit_grad_bytes(const gen *g, const unit *u);

/* A memory-bound kernel (fp32 vector class) moving `bytes` on the rank's compute stream,
 * after `dep` when `have`: FSDP's copies and casts, DTensor SP's copies and reductions.
 * Returns it; the caller decides whether it is the latest compute kernel (emit.c). */
uint32_t plan__add_vector(gen *g, const char *name, trace_phase ph, int layer, int mb,
                          bool recompute, double bytes, uint32_t dep, bool have);

/* A copy on the rank's offload stream (trace_copy `dir`) of `bytes`, after `dep` when
 * `have`; returns it (emit.c). */
uint32_t plan__add_copy(gen *g, const char *name, trace_copy dir, trace_phase ph, int layer,
                        int mb, double bytes, uint32_t dep, bool have);

/* The optimizer step after `deps` (on the GPU, or ZeRO-Offload's copies and CPU Adam);
 * returns its last op (dp.c). */
uint32_t plan__emit_step(gen *g, const uint32_t *deps, size_t n_deps);
uint32_t plan__grad_accum(gen *g, int u0, int u1, int mb, uint32_t after);
/* How the dense gradient buckets are reduced: all-reduced without ZeRO, and under DeepSpeed's
 * BF16_Optimizer (grad_accumulation: cast_add), which all-reduces its whole fp32 buffer
 * (buffered_allreduce_fallback) and then updates its shard; reduce-scattered by ZeRO-1/2's
 * distributed optimizers. */
static inline coll_op plan__grad_reduce_op(const gen *g)
{
    return g->zero == 0 || g->sc->training.grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD
               ? COLL_ALL_REDUCE
               : COLL_REDUCE_SCATTER;
}

/* dp.c, ZeRO-1/2: the parameter gathers of the step, ahead of it (overlap_param_gather)
 * or after the update `opt`; the gather unit u's first forward of the step (`first`) waits
 * for, or NULL. */
void plan__param_gather_ahead(gen *g);
void plan__param_gather(gen *g, uint32_t opt);
const uint32_t *plan__gather_dep(const gen *g, int u, bool first);

/* dp.c's set-up, shared with the screen (screen.c): the generator's view of p->sc (model
 * with the padded vocabulary, micro-batch shape, bytes per weight and gradient, chunks), the
 * units with their parameters and activation bytes, and the persistent bytes of the rank
 * g->rank holding the units g->mine marks (its host bytes into p->host_bytes[g->rank]);
 * needs g->n and g->n_edp. */
void plan__init_gen(gen *g, plan *p, bool sharing);
void plan__build_units(gen *g);
void plan__persistent(gen *g, plan_mem *m);
/* The parameters of unit u the rank updates (its ZeRO shard, or all it trains); the bytes
 * the GPU optimizer step and CPU Adam move per parameter (dp.c, optimizer.c). */
double plan__shard_params(const gen *g, const unit *u);
double plan__optimizer_bytes_per_param(const gen *g);
/* Whether the GPU step casts 16-bit gradients to fp32 first, and the fp32 bytes that cast
 * holds through the step for the units g->mine marks (optimizer.c). */
bool plan__optimizer_casts_grads(const gen *g);
/* PyTorch's FSDP with fp32 master weights, nothing offloaded and every trained weight
 * gathered (no 16-bit shard of trained weights kept, fp32 gradients kept), and the bytes of
 * a kept gradient element (optimizer.c). */
bool plan__torch_fsdp_master(const gen *g);
double plan__grad_store_bytes(const gen *g);
double plan__optimizer_grad_bytes(const gen *g);
double plan__cpu_adam_bytes_per_param(const gen *g);
/* The bytes of a gradient element as the host receives it for CPU Adam (fp32 with fp32
 * master weights, cast on the GPU first; else grad_dtype's), optimizer.c. */
double plan__host_grad_bytes(const gen *g);
/* The host-memory bandwidth rank r's CPU Adam streams at, shared with the ranks whose
 * optimizer lives in the same memory (needs g->mem_sharers). */
double plan__cpu_adam_Bps(const gen *g, int r);

/* emit.c: the tensor-parallel collective at kernel `name` of phase `ph` (before it, or after
 * it) under sequence parallelism `sp`: false when there is none, else its operation, whether
 * it carries the loss's three fp32 per token (else the b·s·h activations), and whether it is
 * SP's backward re-gather that the weight gradient waits for. */
bool plan__tp_point(const char *name, model_phase ph, bool before, bool sp, coll_op *op,
                    bool *loss, bool *wgrad);

/* The bytes of one TP collective (emit.c: the b·s·h activations, or the loss's three fp32
 * per token), of one pipeline transfer (stages.c: a TP rank's slice of the activations), and
 * what ZeRO-3 gathers of a unit (fsdp.c): its dense bytes over the data-parallel group, its
 * experts' over the expert-data-parallel group (0 when each rank's experts are its alone). */
double plan__tp_bytes(const gen *g, bool loss);
/* The bytes of the TP collective `op` at kernel `kernel`: plan__tp_bytes, halved for an
 * all-gather that feeds an fp8 GEMM (training.precision fp8: Transformer Engine casts to
 * fp8 before it gathers). */
double plan__tp_coll_bytes(const gen *g, const char *kernel, coll_op op, bool loss);
double plan__p2p_bytes(const gen *g);
double plan__fsdp_dense_bytes(const unit *u);
double plan__fsdp_expert_bytes(const gen *g, const unit *u);

/* stages.c: one rank's pipeline-parallel step, and the most activation bytes its stage holds
 * in host memory under activation offload. */
void plan__gen_pipeline(gen *g);
double plan__offloaded_activations(const gen *g);

/* fsdp.c: one rank's ZeRO-3 step (zero 3, more than one rank sharing a shard), and the
 * parameters DeepSpeed keeps whole in a unit of block `blk`. */
void plan__gen_fsdp(gen *g);
int64_t plan__ds_persistent(const gen *g, model_block blk);
/* tensors.c: a block's parameter tensors as the frameworks hold them */
void plan__block_tensors(const gen *g, model_block blk, void (*each)(int64_t, int, void *),
                         void *ud);
int plan__param_tensors(const gen *g, model_block blk);
int64_t plan__largest_param_tensor(const gen *g, const unit *u);
typedef struct plan_accum_work {
    double params, bytes; /* trained parameters; bytes the kernels move */
    int launches;         /* two kernels a tensor */
    int64_t temp_bytes;   /* the cast's fp32 temporary of the largest tensor */
} plan_accum_work;
plan_accum_work plan__grad_accum_work(const gen *g, int u0, int u1);
/* DeepSpeed ZeRO-3's release rule (fsdp.c, parallel.fsdp.max_reuse_distance): per unit, the
 * share of its gathered dense bytes gathered again for its backward (bwd[]) and again after
 * its recomputed forward (rc[]; 0 without full or per-op recompute). */
void plan__ds_regathers(gen *g, double *bwd, double *rc);

/* fsdp.c, ZeRO-3 with pipeline parallelism: the state of a rank's step (begin/end), and one
 * chunk's forward or backward of micro-batch `mb` (units u0..u1-1) with its gathers and, on
 * the chunk's last micro-batch (`last_mb`), its reduce-scatters; `recv` is the first
 * kernel's dependency when `have_recv`. Returns the last kernel's span. */
void plan__fsdp_pp_begin(gen *g);
void plan__fsdp_pp_end(gen *g);
span plan__fsdp_pp_fwd(gen *g, int u0, int u1, int mb, uint32_t recv, bool have_recv);
span plan__fsdp_pp_bwd(gen *g, int u0, int u1, int mb, bool last_mb, uint32_t recv,
                       bool have_recv);

/* routing.c: points the rank at its EP group's token routing (g->route, g->sent), drawing
 * the group's routing on its first use; ep_block indexes the EP group, ep_coord is the
 * rank's place in it. */
void plan__route_tokens(gen *g, int ep_block, int ep_coord);

#endif
