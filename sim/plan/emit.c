/* Emitting kernels and collectives into the trace: compute kernels with their memory events,
 * collectives shared by a group's members, Megatron's tensor-parallel collectives, and
 * gradient buckets (see plan/dp.c for the strategies that drive them). */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "plan/gen-internal.h"
#include "plan/pipeline.h"


double plan__state_bytes(plan_state_dtype d)
{
    return d == PLAN_STATE_FP32 ? 4 : d == PLAN_STATE_BF16 ? 2 : 1 + 4.0 / 2048;
}


uint32_t plan__coll_next(gen *g, uint32_t group, coll_op op, double bytes)
{
    coll_seq *s = &g->seq[group];
    size_t k = (size_t)g->seq_pos[group]++;
    if (k == s->n) {
        SIM_GROW(s->ids, s->cap, s->n + 1);
        s->ids[s->n++] = trace_add_coll(g->t, op, g->sc->collectives[g->t->groups[group].cls],
                                        group, bytes, 0);
    }
    SIM_ASSERT(g->t->colls[s->ids[k]].op == op && g->t->colls[s->ids[k]].bytes == bytes,
               "rank %d diverges from its group's collective sequence", g->rank);
    return s->ids[k];
}

uint32_t plan__add_coll_op(gen *g, uint32_t group, coll_op op, double bytes, const char *name,
                            int layer, int mb, const uint32_t *deps, size_t n_deps)
{
    int cls = g->t->groups[group].cls;
    trace_op o = {
        .kind = TRACE_OP_COLL,
        .stream = (uint8_t)TRACE_STREAM_COMM(cls),
        .phase = TRACE_PHASE_COMM,
        .layer = layer,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .coll = plan__coll_next(g, group, op, bytes),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    uint32_t idx = trace_add_op(g->t, g->rank, &o, deps, n_deps);
    if (cls == PLAN_GROUP_DP) {
        g->last_coll = idx;
        g->have_last_coll = true;
    }
    return idx;
}

/* The memo slot of a kernel name (a static string), claimed for it. */
static size_t memo_slot(gen *g, const char *name)
{
    size_t k = ((uintptr_t)name >> 3) % SIM_ARRAY_LEN(g->memo);
    if (g->memo[k].name != name) {
        memset(&g->memo[k], 0, sizeof g->memo[k]);
        g->memo[k].name = name;
    }
    return k;
}

static uint32_t kernel_name(gen *g, const char *name, bool recompute)
{
    size_t k = memo_slot(g, name);
    if (!g->memo[k].have[recompute]) {
        char buf[96];
        snprintf(buf, sizeof buf, "%s%s", recompute ? "recompute." : "", name);
        g->memo[k].id[recompute] = trace_intern(g->t, buf);
        g->memo[k].have[recompute] = true;
    }
    return g->memo[k].id[recompute];
}

static uint32_t add_compute(gen *g, const model_op *mo, trace_phase phase, int layer, int mb,
                            bool recompute, const uint32_t *deps, size_t n_deps)
{
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = (uint8_t)phase,
        .cls = (uint8_t)mo->cls,
        .dtype = (uint8_t)model_op_dtype(&g->sh, mo),
        .recompute = recompute,
        .layer = layer,
        .microbatch = mb,
        .name = kernel_name(g, mo->name, recompute),
        .flops = mo->flops,
        .model_flops = mo->model_flops,
        .bytes = mo->bytes,
        .inner = (float)mo->inner,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    if (!recompute)
        g->model_flops += mo->model_flops;
    g->hardware_flops += mo->model_flops;
    uint32_t all[10];
    size_t n = 0;
    for (size_t i = 0; i < n_deps && n < 7; i++)
        all[n++] = deps[i];
    if (g->have_held) {
        all[n++] = g->held;
        g->have_held = false;
    }
    bool wgrad = (g->have_gather || (g->have_pending && g->defer_pending)) &&
                 plan__ends_with(mo->name, ".wgrad");
    if (wgrad && g->have_gather) {
        all[n++] = g->gather;
        g->have_gather = false;
    }
    if (g->have_pending && g->defer_pending && wgrad) {
        /* this wgrad runs beside its dgrad's collective; the next kernel waits for it */
        g->held = g->pending;
        g->have_held = true;
        g->have_pending = false;
    } else if (g->have_pending) {
        all[n++] = g->pending;
        g->have_pending = false;
    }
    g->defer_pending = false;
    uint32_t idx = trace_add_op(g->t, g->rank, &op, all, n);
    g->last_compute = idx;
    g->have_compute = true;
    return idx;
}

/* ---- tensor and sequence parallelism (Megatron) ----------------------------------------
 *
 * Megatron's f and g operators around the column- (QKV, MLP up) and row-parallel (output
 * projection, MLP down) GEMMs. Without SP: an all-reduce of the b·s·h activations after each
 * row-parallel GEMM in forward and after each column-parallel GEMM's input gradient in
 * backward (4 per layer per micro-batch). With SP the activations outside those GEMMs are
 * split along the sequence: an all-gather before each column-parallel GEMM and a
 * reduce-scatter after each row-parallel one in forward, mirrored in backward (8 per layer,
 * the same bytes: each moves (t-1)/t of 2bsh). Vocabulary-parallel embedding: an all-reduce
 * (SP: reduce-scatter) of its output; the LM head gathers its input under SP, reduces its
 * input gradient; the vocabulary-parallel cross-entropy all-reduces three fp32 values per
 * token (max logit, target logit, sum of exponentials). Per GPU per layer per micro-batch:
 * 16·b·s·h·(t-1)/t bytes, forward plus backward (Korthikanti et al. 2022 §4.2.2). */
typedef struct tp_point {
    const char *kernel;
    model_phase phase;
    bool before;   /* the collective comes before the kernel (else after) */
    bool sp;       /* applies with sequence parallelism (else without) */
    coll_op op;
    bool loss;     /* the cross-entropy's 3 fp32 per token, not 2bsh */
    bool wgrad;    /* feeds the weight gradient: the kernel runs beside it, the next wgrad
                    * waits for it */
} tp_point;

static const tp_point tp_points[] = {
    /* without sequence parallelism */
    {"embed", MODEL_PHASE_FWD, false, false, COLL_ALL_REDUCE, false, false},
    {"proj", MODEL_PHASE_FWD, false, false, COLL_ALL_REDUCE, false, false},
    {"mlp_down", MODEL_PHASE_FWD, false, false, COLL_ALL_REDUCE, false, false},
    {"loss", MODEL_PHASE_FWD, false, false, COLL_ALL_REDUCE, true, false},
    {"lm_head.dgrad", MODEL_PHASE_BWD, false, false, COLL_ALL_REDUCE, false, false},
    {"mlp_up.dgrad", MODEL_PHASE_BWD, false, false, COLL_ALL_REDUCE, false, false},
    {"qkv.dgrad", MODEL_PHASE_BWD, false, false, COLL_ALL_REDUCE, false, false},
    /* with sequence parallelism */
    {"embed", MODEL_PHASE_FWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"qkv", MODEL_PHASE_FWD, true, true, COLL_ALL_GATHER, false, false},
    {"proj", MODEL_PHASE_FWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"mlp_up", MODEL_PHASE_FWD, true, true, COLL_ALL_GATHER, false, false},
    {"mlp_down", MODEL_PHASE_FWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"lm_head", MODEL_PHASE_FWD, true, true, COLL_ALL_GATHER, false, false},
    {"loss", MODEL_PHASE_FWD, false, true, COLL_ALL_REDUCE, true, false},
    {"lm_head.dgrad", MODEL_PHASE_BWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"mlp_down.dgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, false},
    {"mlp_up.dgrad", MODEL_PHASE_BWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"proj.dgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, false},
    {"qkv.dgrad", MODEL_PHASE_BWD, false, true, COLL_REDUCE_SCATTER, false, false},
    {"embed.wgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, false},
    /* SP keeps a column-parallel GEMM's input split along the sequence (Korthikanti's
     * activation formula counts it so); its weight gradient needs the whole input, so
     * backward gathers it again, beside the dgrad GEMM (Megatron's linear layer with
     * sequence parallelism; Transformer Engine's LayerNormLinear likewise) */
    {"lm_head.dgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, true},
    {"mlp_up.dgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, true},
    {"qkv.dgrad", MODEL_PHASE_BWD, true, true, COLL_ALL_GATHER, false, true},
};

static const tp_point *tp_point_of(const char *name, model_phase ph, bool before, bool sp)
{
    for (size_t i = 0; i < SIM_ARRAY_LEN(tp_points); i++) {
        const tp_point *t = &tp_points[i];
        if (t->phase == ph && t->before == before && t->sp == sp && !strcmp(t->kernel, name))
            return t;
    }
    return NULL;
}

bool plan__tp_point(const char *name, model_phase ph, bool before, bool sp, coll_op *op,
                    bool *loss, bool *wgrad)
{
    const tp_point *t = tp_point_of(name, ph, before, sp);
    if (t) {
        *op = t->op;
        *loss = t->loss;
        *wgrad = t->wgrad;
    }
    return t != NULL;
}

/* Emits the TP collective at kernel `name` (before or after it), if any: it waits for the
 * latest compute kernel and the next compute kernel waits for it. */
static const tp_point *tp_find(gen *g, const char *name, model_phase ph, bool before)
{
    if (g->tp <= 1)
        return NULL;
    size_t k = memo_slot(g, name);
    if (g->memo[k].have_tp[ph][before])
        return g->memo[k].tp[ph][before];
    const tp_point *found = tp_point_of(name, ph, before, g->sp);
    g->memo[k].tp[ph][before] = found;
    g->memo[k].have_tp[ph][before] = true;
    return found;
}

double plan__tp_bytes(const gen *g, bool loss)
{
    double tokens = (double)g->sh.micro_batch * (double)g->sh.seq_len / g->cp;
    return loss ? tokens * 3 * 4 : tokens * g->model.hidden * 2.0;
}

/* Transformer Engine's fp8 linear layers cast their input before they gather it under
 * sequence parallelism (the QKV and MLP-up inputs, and the copies their weight gradients
 * gather again) and their output gradient before the dgrad gathers it (the projection's and
 * MLP-down's): those all-gathers move 1-byte elements. The reduce-scatters stay 16-bit, as
 * do the LM head's and the embedding's collectives (not fp8 layers). */
double plan__tp_coll_bytes(const gen *g, const char *kernel, coll_op op, bool loss)
{
    double bytes = plan__tp_bytes(g, loss);
    if (g->sh.dtype == HW_DTYPE_FP8 && op == COLL_ALL_GATHER && !loss &&
        strncmp(kernel, "lm_head", 7) != 0 && strncmp(kernel, "embed", 5) != 0)
        bytes /= 2;
    return bytes;
}

static double tp_bytes(const gen *g, const tp_point *t)
{
    return plan__tp_coll_bytes(g, t->kernel, t->op, t->loss);
}

/* Adds TP collective `t` at kernel `name` ("tp.<name><suffix>"), after the latest compute
 * kernel; returns its index. */
static uint32_t tp_add(gen *g, const tp_point *t, const char *name, const char *suffix,
                       int layer, int mb)
{
    char cname[48];
    snprintf(cname, sizeof cname, "tp.%s%s", name, suffix);
    uint32_t dep = g->last_compute;
    return plan__add_coll_op(g, g->g_tp, t->op, tp_bytes(g, t), cname, layer, mb, &dep,
                             g->have_compute);
}

/* Emits TP collective `t` (if any): it waits for the latest compute kernel and the next
 * compute kernel waits for it. */
static void tp_collective(gen *g, const tp_point *t, const char *name, int layer, int mb)
{
    if (!t)
        return;
    g->pending = tp_add(g, t, name, "", layer, mb);
    g->have_pending = true;
}

/* DTensor's sequence parallelism (parallel.sp_implementation: dtensor) on [b, s, h]
 * activations: PyTorch's functional collectives gather and scatter along dimension 1 by
 * concatenating the all-gather's chunks after it (torch.cat(torch.chunk(out, t), dim=1))
 * and the reduce-scatter's input chunks before it: a copy of the whole 2bsh tensor, read
 * and written, on the compute stream. The all-reduces (the loss's, and TP without SP) have
 * no dimension to rearrange. */
static bool sp_copies(const gen *g, const tp_point *t)
{
    return t && g->sc->parallel.sp_implementation == PLAN_SP_DTENSOR &&
           (t->op == COLL_ALL_GATHER || t->op == COLL_REDUCE_SCATTER);
}

uint32_t plan__add_vector(gen *g, const char *name, trace_phase ph, int layer, int mb,
                          bool recompute, double bytes, uint32_t dep, bool have)
{
    trace_op op = {
        .kind = TRACE_OP_COMPUTE,
        .stream = TRACE_STREAM_COMPUTE,
        .phase = (uint8_t)ph,
        .cls = HW_OP_VECTOR,
        .dtype = HW_DTYPE_FP32,
        .recompute = recompute,
        .layer = layer,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    return trace_add_op(g->t, g->rank, &op, have ? &dep : NULL, have);
}

/* A memory-bound kernel of DTensor's SP around collective "tp.<name>" ("tp.<name><suffix>":
 * ".copy", ".reduce") moving `bytes`, after the latest compute kernel and `dep` when
 * `have_dep`; it leaves the TP bookkeeping (pending, held) to the caller. */
static void sp_kernel(gen *g, const char *name, const char *suffix, double bytes,
                      trace_phase phase, int layer, int mb, bool recompute, uint32_t dep,
                      bool have_dep)
{
    char cname[64];
    snprintf(cname, sizeof cname, "%stp.%s%s", recompute ? "recompute." : "", name, suffix);
    g->last_compute = plan__add_vector(g, cname, phase, layer, mb, recompute, bytes, dep, have_dep);
    g->have_compute = true;
}

/* Megatron's TP communication overlap (Transformer Engine's userbuffers, with SP), as
 * TE sets it up by default:
 *  - the all-gather feeding a GEMM (QKV and MLP-up forward, output-projection and MLP-down
 *    input gradients) is a ring exchange: the GEMM is cut into t pieces, one per rank's
 *    shard; piece 0 multiplies the local shard at once while the shards pass around the
 *    ring, t-1 shifts of B/t each (B the gathered buffer: the all-gather's (t-1)/t·B in
 *    all), and piece i waits for shift i;
 *  - the reduce-scatter after a GEMM (output projection and MLP down, forward) is a
 *    pipeline of TP_OVERLAP_SPLITS pieces: reduce-scatter piece i waits for GEMM piece i.
 * The smaller GEMM pieces run at their own, lower, efficiency and pay their own launches.
 * With DTensor's SP the overlap is torch's async TP (symmetric memory), whose
 * matmul + reduce-scatter computes one piece per rank (t), exchanges the partial chunks,
 * and ends with one reduction kernel over the t chunks it received: it reads the whole
 * GEMM output and writes its 1/t (torch/distributed/_symmetric_memory,
 * _fused_matmul_reduce_scatter_impl), on the compute stream once the last chunk is in; and
 * whose all-gather + matmul first copies the local shard into its symmetric-memory buffer,
 * where the peers read it, before the first piece and the first transfer
 * (_pipelined_multi_all_gather_and_consume: torch gives up overlapping that copy with the
 * first piece), a kernel reading and writing the shard (`tp.<name>.stage`). */
#define TP_OVERLAP_SPLITS 4

static uint32_t emit_overlapped(gen *g, const model_op *mo, const tp_point *t, trace_phase phase,
                                int layer, int mb, bool recompute, const uint32_t *deps,
                                size_t n_deps)
{
    bool ring = t->before;
    SIM_ASSERT(!ring || t->op == COLL_ALL_GATHER, "ring exchange of a %d", (int)t->op);
    bool torch_rs = !ring && g->sc->parallel.sp_implementation == PLAN_SP_DTENSOR;
    int pieces = ring || torch_rs ? g->tp : TP_OVERLAP_SPLITS;
    model_op piece = *mo;
    piece.flops /= pieces;
    piece.model_flops /= pieces;
    piece.bytes /= pieces;
    double bytes = tp_bytes(g, t) / pieces;
    char cname[48];
    snprintf(cname, sizeof cname, "tp.%s", mo->name);
    uint32_t idx = 0;
    if (ring) {
        /* the shifts queue on the TP stream, each emitted one piece ahead; the first waits
         * for the kernel that made the local shard, as GEMM piece 0 does (under torch's
         * async TP, for the shard's copy into the symmetric buffer) */
        if (g->sc->parallel.sp_implementation == PLAN_SP_DTENSOR)
            sp_kernel(g, mo->name, ".stage", 2 * bytes, phase, layer, mb, recompute, 0, false);
        uint32_t dep = g->last_compute;
        uint32_t next = plan__add_coll_op(g, g->g_tp, COLL_RING_SHIFT, bytes, cname, layer, mb,
                                          &dep, g->have_compute);
        idx = add_compute(g, &piece, phase, layer, mb, recompute, deps, n_deps);
        for (int i = 1; i < pieces; i++) {
            uint32_t shift = next;
            if (i + 1 < pieces)
                next = plan__add_coll_op(g, g->g_tp, COLL_RING_SHIFT, bytes, cname, layer, mb,
                                         &dep, 0);
            g->pending = shift;
            g->have_pending = true;
            idx = add_compute(g, &piece, phase, layer, mb, recompute, NULL, 0);
        }
        return idx;
    }
    for (int i = 0; i < pieces; i++) {
        idx = add_compute(g, &piece, phase, layer, mb, recompute, i == 0 ? deps : NULL,
                          i == 0 ? n_deps : 0);
        g->have_pending = false;
        g->pending = plan__add_coll_op(g, g->g_tp, t->op, bytes, cname, layer, mb, &idx, 1);
    }
    g->have_pending = true; /* the next kernel waits for the last piece */
    if (torch_rs) { /* ... the reduction, which the next kernel follows */
        double out = tp_bytes(g, t);
        sp_kernel(g, mo->name, ".reduce", out * (1 + 1.0 / g->tp), phase, layer, mb, recompute,
                  g->pending, true);
        g->have_pending = false;
    }
    return idx;
}

/* SP's backward re-gather of a column-parallel GEMM's input (tp_point.wgrad): launched once
 * the kernel before the dgrad is done, not waited for by the dgrad; the next wgrad kernel
 * waits for it. Under LoRA the frozen base GEMM takes no weight gradient and the adapters'
 * own inputs are not modelled as gathered: no re-gather. DTensor's SP has none either:
 * autograd keeps the gathered input (model_shape.sp_dtensor), or the recomputation that
 * rebuilds it gathers it again. */
static void regather(gen *g, const tp_point *t, const char *name, int layer, int mb)
{
    if (g->sc->training.finetune.method != PLAN_FT_FULL ||
        g->sc->parallel.sp_implementation == PLAN_SP_DTENSOR)
        return;
    g->gather = tp_add(g, t, name, ".input", layer, mb);
    g->have_gather = true;
}

/* Megatron's asynchronous input-gradient communication (parallel.tp_grad_overlap): the
 * all-reduce (SP: reduce-scatter) of a column-parallel GEMM's input gradient is launched as
 * soon as the dgrad GEMM ends and the weight-gradient GEMM, which does not need it, runs
 * beside it; the kernel after the wgrad waits. Without it (Megatron before late 2021) the
 * collective sits between the two. Only a wgrad emitted right after its dgrad is let through
 * (under LoRA a frozen GEMM has none). */
static bool grad_overlap(const gen *g, const model_op *mo, model_phase mph)
{
    return g->sc->parallel.tp_grad_overlap && mph == MODEL_PHASE_BWD &&
           plan__ends_with(mo->name, ".dgrad");
}

/* One kernel with the TP collectives around it (overlapped with it when configured). */
static uint32_t emit_kernel(gen *g, const model_op *mo, trace_phase phase, model_phase mph,
                            int layer, int mb, bool recompute, const uint32_t *deps,
                            size_t n_deps)
{
    const tp_point *before = tp_find(g, mo->name, mph, true);
    const tp_point *after = tp_find(g, mo->name, mph, false);
    if (g->op_recompute && after && after->op == COLL_REDUCE_SCATTER)
        after = NULL; /* the per-op policy saved the reduce-scatter's output */
    if (before && before->wgrad) {
        regather(g, before, mo->name, layer, mb);
        before = NULL;
    }
    if (plan__tp_fusable(g->sc, mo->name) && mo->cls == HW_OP_MATMUL) {
        if (before && before->op == COLL_ALL_GATHER && !after)
            return emit_overlapped(g, mo, before, phase, layer, mb, recompute, deps, n_deps);
        if (after && after->op == COLL_REDUCE_SCATTER && !before) {
            uint32_t idx = emit_overlapped(g, mo, after, phase, layer, mb, recompute, deps,
                                           n_deps);
            g->defer_pending = grad_overlap(g, mo, mph);
            return idx;
        }
    }
    tp_collective(g, before, mo->name, layer, mb);
    if (sp_copies(g, before)) { /* the gathered chunks concatenated: the kernel reads that */
        sp_kernel(g, mo->name, ".copy", 2 * tp_bytes(g, before), phase, layer, mb, recompute,
                  g->pending, true);
        g->have_pending = false;
    }
    uint32_t idx = add_compute(g, mo, phase, layer, mb, recompute, deps, n_deps);
    if (sp_copies(g, after)) /* the chunks along the sequence lined up for the reduce-scatter */
        sp_kernel(g, mo->name, ".copy", 2 * tp_bytes(g, after), phase, layer, mb, recompute, 0,
                  false);
    tp_collective(g, after, mo->name, layer, mb);
    g->defer_pending = after && grad_overlap(g, mo, mph);
    return idx;
}

/* ---- experts ------------------------------------------------------------------------- */

void plan__moe_shape(gen *g, const unit *u, int mb)
{
    if (u->blk != MODEL_BLOCK_MOE) {
        g->sh.moe = NULL;
        return;
    }
    g->load.n_local = g->n_local;
    g->load.tokens = &g->route[((size_t)u->layer * (size_t)g->A + (size_t)mb) * (size_t)g->n_local];
    g->sh.moe = &g->load;
}

/* The all-to-all that moves the tokens (or their gradients) between the EP group's ranks:
 * every rank sends each of its T tokens to top_k experts, (ep-1)/ep of them remote:
 * T·top_k·h·2 bytes of buffer, nccl-tests' all_to_all size; tokens dropped at an expert's
 * capacity are not sent (g->sent, the group's mean assignments per rank). */
static void ep_all_to_all(gen *g, const char *name, int layer, int mb)
{
    if (g->ep <= 1)
        return;
    double bytes = g->sent[(size_t)layer * (size_t)g->A + (size_t)mb] * g->model.hidden * 2.0;
    uint32_t dep = g->last_compute;
    g->pending = plan__add_coll_op(g, g->g_ep, COLL_ALL_TO_ALL, bytes, name, layer, mb, &dep,
                                   g->have_compute);
    g->have_pending = true;
}

/* ---- context parallelism: ring attention --------------------------------------------
 *
 * Megatron/Transformer Engine's ring attention (model__attn_core_fwd has the load-balanced
 * split): the attention core is cp steps; step k attends to the K/V block of the rank k-1
 * places back in the ring. Each hop is a ring_shift over the CP group: every rank passes
 * the block it holds (B = model_cp_kv_bytes) to its successor while it computes on it, into
 * the second of two receive buffers. Forward, steps C1..Cc and shifts S1..S(c-1):
 *   S1 (own block) after the kernel that produced K and V;  C1;
 *   Sj (j < c) once C(j-1) has freed its buffer;  Cj waits for S(j-1).
 * So a rank sends (c-1)·B per layer and micro-batch. Backward re-circulates K and V and
 * carries each block's running dK, dV along with it: Sj (2 <= j < c) moves the dK, dV that
 * C(j-1) added to plus the next K/V block (2B); Sc only the gradient; after Cc a last shift
 * returns every block's finished gradient to its owner, and the next kernel (which needs dK
 * and dV) waits for it: (2c-1)·B per layer and micro-batch. Recomputation repeats the
 * forward's shifts. The receive buffers (two K/V blocks, plus two gradient blocks in
 * backward) are held from the first step to the last. */
static uint32_t cp_shift(gen *g, double bytes, bool bwd, uint32_t dep, int layer, int mb)
{
    return plan__add_coll_op(g, g->g_cp, COLL_RING_SHIFT, bytes, bwd ? "cp.kv_grad" : "cp.kv",
                             layer, mb, &dep, 1);
}

static uint32_t emit_kernel(gen *g, const model_op *mo, trace_phase phase, model_phase mph,
                            int layer, int mb, bool recompute, const uint32_t *deps,
                            size_t n_deps);

static uint32_t emit_cp_step(gen *g, const model_op *mo, trace_phase phase, model_phase mph,
                             int layer, int mb, bool recompute, const uint32_t *deps,
                             size_t n_deps)
{
    int c = g->cp, j = mo->cp_step;
    double B = g->cp_kv;
    bool bwd = mph == MODEL_PHASE_BWD;
    int64_t buffers = (int64_t)(B * ((c > 2 ? 2 : 1) + (bwd ? 2 : 0)));
    uint32_t all[8];
    size_t n = 0;
    for (size_t i = 0; i < n_deps && n < 7; i++)
        all[n++] = deps[i];
    uint32_t idx;
    if (j == 1) {
        SIM_ASSERT(g->have_compute, "rank %d: ring attention before any kernel", g->rank);
        g->cp_recv = cp_shift(g, B, bwd, g->last_compute, layer, mb);
        idx = emit_kernel(g, mo, phase, mph, layer, mb, recompute, all, n);
        trace_add_mem(g->t, g->rank, idx, PLAN_MEM_BUFFERS, buffers, false);
    } else {
        all[n++] = g->cp_recv; /* the block this step works on */
        double bytes = bwd ? (j < c ? 2 * B : B) : (j < c ? B : 0);
        if (bytes > 0) /* C(j-1) (the latest kernel) has freed the buffer */
            g->cp_recv = cp_shift(g, bytes, bwd, g->last_compute, layer, mb);
        idx = emit_kernel(g, mo, phase, mph, layer, mb, recompute, all, n);
    }
    if (j == c) {
        trace_add_mem(g->t, g->rank, idx, PLAN_MEM_BUFFERS, -buffers, true);
        if (bwd) { /* the finished dK, dV go home; the next kernel consumes them */
            g->pending = cp_shift(g, B, bwd, idx, layer, mb);
            g->have_pending = true;
        }
    }
    return idx;
}

/* ---- gradient buckets (DDP, ZeRO-1/2) ------------------------------------------------ */

static void bucket_coll(gen *g, double bytes, uint32_t dep, int mb)
{
    char name[40];
    snprintf(name, sizeof name, "grad_bucket");
    coll_op op = plan__grad_reduce_op(g);
    uint32_t c = plan__add_coll_op(g, g->g_shard, op, bytes, name, TRACE_NO_LAYER, mb, &dep, 1);
    if (g->zero == 2) /* the bucket's whole gradients are released once reduce-scattered */
        trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)bytes, true);
}

/* A weight-gradient kernel produced `params` gradients: fill the open bucket. */
static void bucket_grads(gen *g, uint32_t op, int64_t params, int mb)
{
    double bytes = (double)params * g->gbytes;
    if (g->zero == 2)
        trace_add_mem(g->t, g->rank, op, PLAN_MEM_BUFFERS, (int64_t)bytes, true);
    g->fill += bytes;
    if (g->fill < (double)g->sc->parallel.ddp.bucket_bytes)
        return;
    if (g->sc->parallel.ddp.overlap) {
        bucket_coll(g, g->fill, op, mb);
    } else {
        SIM_GROW(g->deferred, g->cap_deferred, g->n_deferred + 1);
        g->deferred[g->n_deferred++] = g->fill;
    }
    g->fill = 0;
}

void plan__bucket_flush(gen *g, uint32_t last_bwd, int mb)
{
    for (size_t b = 0; b < g->n_deferred; b++)
        bucket_coll(g, g->deferred[b], last_bwd, mb);
    g->n_deferred = 0;
    if (g->fill > 0)
        bucket_coll(g, g->fill, last_bwd, mb);
    g->fill = 0;
}

/* ---- forward and backward of one unit ------------------------------------------------ */

/* Parameters whose gradients a unit's backward produces outside its weight-gradient kernels
 * (experts' excepted: they are reduced over the expert-data-parallel group). */
static int64_t split_grads(const model_op_list *ops)
{
    int64_t n = 0;
    for (int i = 0; i < ops->n; i++)
        if (!plan__ends_with(ops->op[i].name, ".wgrad") && !plan__is_expert(ops->op[i].name))
            n += ops->op[i].grad_params;
    return n;
}

/* Kernels of one pass over a unit with the expert all-to-alls around its expert kernels
 * (`before`/`after` name them); returns the span, fills *exp_bytes with the expert gradient
 * bytes its weight-gradient kernels produced. */
static span emit_pass(gen *g, const unit *u, int mb, const model_op_list *ops, trace_phase phase,
                      model_phase mph, bool recompute, bool bucketing, const char *before,
                      const char *after, const uint32_t *deps, size_t n_deps, bool first_deps,
                      double *exp_bytes)
{
    /* zero-bubble split: the input-gradient pass skips the weight-gradient kernels, the
     * weight pass runs only those; the tokens move with the input gradients (the weight
     * pass has its expert inputs and output gradients at hand) */
    bool split = mph == MODEL_PHASE_BWD && g->bwd_part != PLAN_PP_FULL;
    bool weights = g->bwd_part == PLAN_PP_WEIGHT;
    /* an fp8 weight cast runs in the unit's first forward of the step only, where the
     * weights stay resident (Transformer Engine keeps the fp8 copy); it needs no tokens, so
     * the expert all-to-alls do not wait on it */
    int ui = (int)(u - g->units);
    bool again = recompute || g->wcast_done[ui];
    int first_exp = -1, last_exp = -1;
    for (int i = 0; i < ops->n && !(split && weights); i++)
        if (plan__is_expert(ops->op[i].name) && !ops->op[i].weight_cast &&
            !(split && plan__ends_with(ops->op[i].name, ".wgrad"))) {
            last_exp = i;
            if (first_exp < 0)
                first_exp = i;
        }
    span s = {0};
    bool first = first_deps;
    g->op_recompute = recompute && u->rc == MODEL_RECOMPUTE_OP;
    bool early_stop = g->sc->training.recompute_early_stop;
    for (int i = 0; i < ops->n; i++) {
        const model_op *mo = &ops->op[i];
        model_op part;
        /* the share of the kernel the recomputed forward re-runs */
        double share = recompute ? model_recompute_share(mo, u->rc, early_stop) : 1;
        if (share <= 0)
            continue;
        if (mo->weight_cast && again && plan__weights_resident(g, mo->name))
            continue; /* the fp8 weight of the unit's first forward, kept */
        if (split && plan__ends_with(mo->name, ".wgrad") != weights)
            continue;
        if (share < 1) {
            part = *mo;
            part.flops *= share;
            part.model_flops *= share;
            part.bytes *= share;
            mo = &part;
        }
        if (i == first_exp)
            ep_all_to_all(g, before, u->layer, mb);
        uint32_t idx = mo->cp_step > 0
                           ? emit_cp_step(g, mo, phase, mph, u->layer, mb, recompute,
                                          first ? deps : NULL, first ? n_deps : 0)
                           : emit_kernel(g, mo, phase, mph, u->layer, mb, recompute,
                                         first ? deps : NULL, first ? n_deps : 0);
        if (!s.any)
            s.first = idx;
        first = false;
        s.last = idx;
        s.any = true;
        if (bucketing && mo->grad_params > 0) {
            if (plan__is_expert(mo->name) && g->ep > 1) {
                double bytes = (double)mo->grad_params * g->gbytes;
                *exp_bytes += bytes;
                if (g->zero == 2)
                    trace_add_mem(g->t, g->rank, idx, PLAN_MEM_BUFFERS, (int64_t)bytes, true);
            } else {
                bucket_grads(g, idx, mo->grad_params, mb);
            }
        }
        if (i == last_exp)
            ep_all_to_all(g, after, u->layer, mb);
    }
    /* the gradients the input pass's kernels produced (norms' and biases' weights, fused
     * with their input gradients) join the buckets with the weight pass's, once the unit's
     * parameters all have theirs */
    if (split && weights && bucketing && s.any && split_grads(ops) > 0)
        bucket_grads(g, s.last, split_grads(ops), mb);
    if (mph == MODEL_PHASE_FWD && !recompute)
        g->wcast_done[ui] = true;
    g->op_recompute = false;
    return s;
}

/* ---- activation offload (parallel.offload.activations: cpu) ---------------------------
 *
 * A layer's activations (what it keeps for backward) are copied to host memory after its
 * forward and freed on the GPU once there; before its backward they are copied back, the
 * next layer's (in backward order) issued as this one's backward starts, so the copy runs
 * beside it. */
static bool act_offloaded(const gen *g, const unit *u)
{
    return g->sc->parallel.offload.activations == PLAN_OFFLOAD_CPU && u->act > 0 &&
           (u->blk == MODEL_BLOCK_LAYER || u->blk == MODEL_BLOCK_MOE);
}

uint32_t plan__add_copy(gen *g, const char *name, trace_copy dir, trace_phase ph, int layer,
                        int mb, double bytes, uint32_t dep, bool have)
{
    trace_op op = {
        .kind = TRACE_OP_COPY,
        .stream = TRACE_STREAM_OFFLOAD,
        .phase = (uint8_t)ph,
        .copy = (uint8_t)dir,
        .layer = layer,
        .microbatch = mb,
        .name = trace_intern(g->t, name),
        .bytes = bytes,
        .duration_ps = TRACE_MEASURED_NONE,
    };
    return trace_add_op(g->t, g->rank, &op, have ? &dep : NULL, have);
}

static uint32_t act_copy(gen *g, const unit *u, int mb, trace_copy dir, uint32_t dep, bool have)
{
    bool out = dir == TRACE_COPY_D2H;
    uint32_t c = plan__add_copy(g, out ? "offload.activations_out" : "offload.activations_in",
                                dir, out ? TRACE_PHASE_FWD : TRACE_PHASE_BWD, u->layer, mb,
                                u->act, dep, have);
    /* on the GPU: freed once copied out, held again from the copy back's start */
    trace_add_mem(g->t, g->rank, c, PLAN_MEM_ACTIVATIONS,
                  dir == TRACE_COPY_D2H ? -(int64_t)u->act : (int64_t)u->act,
                  dir == TRACE_COPY_D2H);
    return c;
}

/* The copy back the backward of unit `ui` waits for: the one issued ahead, or one now. */
static uint32_t act_fetch(gen *g, int ui, int mb)
{
    if (g->act_fetch_mb[ui] == mb) {
        g->act_fetch_mb[ui] = -1;
        return g->act_fetch[ui];
    }
    return act_copy(g, &g->units[ui], mb, TRACE_COPY_H2D, g->last_compute, g->have_compute);
}

span plan__emit_fwd(gen *g, const unit *u, int mb, const uint32_t *deps, size_t n_deps)
{
    model_op_list ops;
    double exp_bytes = 0;
    plan__moe_shape(g, u, mb);
    model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_FWD, &ops);
    span s = emit_pass(g, u, mb, &ops, TRACE_PHASE_FWD, MODEL_PHASE_FWD, false, false,
                       "ep.dispatch", "ep.combine", deps, n_deps, true, &exp_bytes);
    if (s.any)
        trace_add_mem(g->t, g->rank, s.last, PLAN_MEM_ACTIVATIONS, (int64_t)u->act, true);
    if (s.any && act_offloaded(g, u))
        act_copy(g, u, mb, TRACE_COPY_D2H, s.last, true);
    g->sh.moe = NULL;
    return s;
}

/* Whether unit u begins a pipeline chunk (the unit before it, if the rank holds it too, is
 * another chunk's, whose backward of this micro-batch need not come next). */
static bool chunk_start(const gen *g, int u)
{
    for (int c = 0; c < g->chunks; c++)
        if (g->chunk_first[c] == u)
            return true;
    return false;
}

/* Whether the unit's backward has weight-gradient kernels (a zero-bubble W pass to run). */
static bool has_wgrad(const model_op_list *ops)
{
    for (int i = 0; i < ops->n; i++)
        if (plan__ends_with(ops->op[i].name, ".wgrad"))
            return true;
    return false;
}

span plan__emit_bwd(gen *g, const unit *u, int mb, bool bucketing, const uint32_t *deps,
                     size_t n_deps)
{
    model_op_list ops;
    span s = {0};
    double exp_bytes = 0;
    plan__moe_shape(g, u, mb);
    bool layer = u->blk == MODEL_BLOCK_LAYER || u->blk == MODEL_BLOCK_MOE;
    /* zero-bubble split: the input pass recomputes and keeps the activations for the weight
     * pass, which frees them (or the input pass does, when there is no weight pass) */
    int part = g->bwd_part;
    bool weights_later = false;
    if (part != PLAN_PP_FULL) { /* (the op list is built again below, after any recompute) */
        model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_BWD, &ops);
        weights_later = part == PLAN_PP_INPUT && has_wgrad(&ops);
        if (part == PLAN_PP_WEIGHT && !has_wgrad(&ops)) {
            if (bucketing && g->have_compute && split_grads(&ops) > 0)
                bucket_grads(g, g->last_compute, split_grads(&ops), mb);
            g->sh.moe = NULL;
            return s;
        }
    }
    /* offloaded activations: back before the backward, the next layer's prefetched */
    uint32_t all[8];
    if (act_offloaded(g, u) && part != PLAN_PP_WEIGHT) {
        int ui = (int)(u - g->units);
        SIM_ASSERT(n_deps < SIM_ARRAY_LEN(all), "%zu dependencies", n_deps);
        if (n_deps)
            memcpy(all, deps, n_deps * sizeof *deps);
        all[n_deps++] = act_fetch(g, ui, mb);
        deps = all;
        if (ui > 0 && g->mine[ui - 1] && !chunk_start(g, ui) &&
            act_offloaded(g, &g->units[ui - 1])) {
            g->act_fetch[ui - 1] = act_copy(g, &g->units[ui - 1], mb, TRACE_COPY_H2D,
                                            g->last_compute, g->have_compute);
            g->act_fetch_mb[ui - 1] = mb;
        }
    }
    if (layer && u->rc != MODEL_RECOMPUTE_NONE && part != PLAN_PP_WEIGHT) {
        /* the recomputed forward repeats its collectives (Megatron checkpoints the whole
         * layer, f and g operators and token dispatch included; the per-op policy keeps
         * the reduce-scatters' outputs) */
        model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_FWD, &ops);
        s = emit_pass(g, u, mb, &ops, TRACE_PHASE_BWD, MODEL_PHASE_FWD, true, false,
                      "ep.dispatch", "ep.combine", deps, n_deps, true, &exp_bytes);
        if (s.any)
            trace_add_mem(g->t, g->rank, s.first, PLAN_MEM_ACTIVATIONS, (int64_t)u->act_extra,
                          false);
    }
    uint32_t mid = 0;
    bool have_mid = s.any && g->between_passes && g->between_passes(g, u, mb, s.last, &mid);
    model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_BWD, &ops);
    span b = emit_pass(g, u, mb, &ops, TRACE_PHASE_BWD, MODEL_PHASE_BWD, false, bucketing,
                       "ep.combine_grad", "ep.dispatch_grad", have_mid ? &mid : deps,
                       have_mid ? 1 : n_deps, have_mid || !s.any, &exp_bytes);
    if (u->blk == MODEL_BLOCK_HEAD && b.any && part != PLAN_PP_WEIGHT) {
        /* the logits' gradients: PyTorch's two fp32 ones while the loss backward (the
         * pass's first kernel) runs, then the 16-bit one until the head's backward ends */
        double during, after;
        model_loss_grad_bytes(&g->model, &g->sh,
                              g->sc->training.cross_entropy == PLAN_CE_VOCAB_PARALLEL, &during,
                              &after);
        trace_add_mem(g->t, g->rank, b.first, PLAN_MEM_ACTIVATIONS, (int64_t)during, false);
        trace_add_mem(g->t, g->rank, b.first, PLAN_MEM_ACTIVATIONS, (int64_t)(after - during),
                      true);
        trace_add_mem(g->t, g->rank, b.last, PLAN_MEM_ACTIVATIONS, -(int64_t)after, true);
    }
    if (b.any) {
        if (!s.any)
            s.first = b.first;
        s.last = b.last;
        s.any = true;
    }
    if (s.any && !weights_later) {
        trace_add_mem(g->t, g->rank, s.last, PLAN_MEM_ACTIVATIONS, -(int64_t)u->act, true);
        trace_add_mem(g->t, g->rank, s.last, PLAN_MEM_ACTIVATIONS, -(int64_t)u->act_extra, true);
    }
    /* expert gradients are reduced over the ranks that hold the same experts */
    if (exp_bytes > 0 && g->n_edp > 1) {
        coll_op op = g->zero == 0 ? COLL_ALL_REDUCE : COLL_REDUCE_SCATTER;
        uint32_t c = plan__add_coll_op(g, g->g_edp, op, exp_bytes, "expert_grads", u->layer, mb,
                                       &s.last, 1);
        if (g->zero == 2)
            trace_add_mem(g->t, g->rank, c, PLAN_MEM_BUFFERS, -(int64_t)exp_bytes, true);
    } else if (exp_bytes > 0 && g->zero == 2) {
        trace_add_mem(g->t, g->rank, s.last, PLAN_MEM_BUFFERS, -(int64_t)exp_bytes, true);
    }
    g->sh.moe = NULL;
    return s;
}

/* Gradient bytes the unit's backward produces (its owned parameters; a tied LM head's
 * gradient belongs to the embedding). */
double plan__unit_grad_bytes(const gen *g, const unit *u)
{
    model_op_list ops;
    model_block_ops(&g->model, &g->sh, u->blk, MODEL_PHASE_BWD, &ops);
    double p = 0;
    for (int i = 0; i < ops.n; i++)
        p += (double)ops.op[i].grad_params;
    return p * g->gbytes;
}

