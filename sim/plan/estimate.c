/* The work a scenario implies, estimated without building it (see estimate.h). */
#include "core/sim.h"

#include <math.h>

#include "hw/gpu.h"
#include "model/model.h"
#include "plan/estimate.h"
#include "plan/plan-internal.h"

/* Bytes per op, measured (docs/performance.md, "Memory estimate"): a generated op carries
 * its record (trace_op, 72 bytes), its dependencies and memory events, and the replay's
 * successor lists, stream order and roofline duration derived from it (about 160 bytes
 * together, with the slack of growing arrays); every rank of the trace, borrowing or not,
 * holds its collective ops' instances (about 5 bytes per op averaged over all ops: the
 * 16,384-GPU Llama 3.1 405B step under symmetry, 0.41 GiB peak RSS for 82 M ops); every
 * replayed rank keeps per op its unfinished-dependency count and end time (12 bytes) and its
 * share of the collectives' replay state (about 19 bytes together: the same step at full
 * detail, 1.88 GiB, 24 bytes per op in all). */
#define BYTES_PER_GENERATED_OP 160.0
#define BYTES_PER_RANK_OP 5.0
#define BYTES_PER_REPLAYED_OP 19.0
/* A mixture-of-experts rank that borrows its template's ops keeps its own values of the
 * expert kernels (trace_op_var, 32 bytes each) and, replayed, their durations (8 bytes
 * each), about a sixth of its ops; its all-to-alls make more collective instances per op
 * than a dense rank's collectives. Measured (2026-12-06, peak RSS): the 512-GPU MoE bench
 * peaks at 0.0865 GiB for 2.99 M ops, 31 bytes per op, 7 more than the dense constants
 * above; DeepSeek-V3 on 2,048 H800s at 506 MiB for 13.5 M, 39.4 per op, at most 15.4 above
 * them; 20, to stay above both with a margin. */
#define BYTES_PER_MOE_BORROWED_OP 20.0
/* Planning alone (`stepsim mem`) streams: each rank's ops are walked and released as soon as
 * it is generated, templates excepted, so only the collective instances stay, about 2 bytes
 * per op of every rank (the 16,384-GPU step: 161 MiB peak RSS for 82 M ops; GPT-3 on 1,024
 * A100s: 104 MiB for 59 M). */
#define BYTES_PER_PLANNED_OP 2.0
/* The cluster's graph: devices, links and the routes between GPUs, per GPU (measured on
 * fat-trees of 8-GPU nodes: 1.1 KB per GPU for `check` of 65,536 nodes, 1.65 KB for `stepsim
 * topo` of 131,072 nodes, which also finds the bisection), and the process that holds it all
 * (the executable, libraries, HDF5's caches). */
#define BYTES_PER_GPU 1700.0
#define BYTES_FIXED (16.0 * 1024 * 1024)

/* Collective ops a layer adds per micro-batch, both passes, generously: TP's two all-reduces
 * per pass (with SP: all-gather and reduce-scatter each, and the backward's re-gathers; a
 * fully recomputed forward's again: selective recompute re-runs only the attention core),
 * CP's ring steps (a send and a receive each), EP's dispatch and combine (and their
 * gradients), ZeRO-3's gather per pass and reduce-scatter. DTensor's SP has no re-gathers
 * but a copy kernel beside each of its 8 collectives (async TP: a reduction kernel after
 * each fused reduce-scatter and a staging copy before each fused all-gather instead,
 * counted the same). */
static double layer_colls(const plan_scenario *sc, bool moe)
{
    const plan_parallel *p = &sc->parallel;
    double n = 0;
    if (p->tp > 1) /* a recomputed forward repeats its collectives */
        n += (p->sp ? (p->sp_implementation == PLAN_SP_DTENSOR ? 16 : 10) : 4) +
             (sc->training.recompute == MODEL_RECOMPUTE_FULL ||
                      sc->training.recompute == MODEL_RECOMPUTE_OP
                  ? (p->sp && p->sp_implementation == PLAN_SP_DTENSOR ? 8 : 4)
                  : 0);
    if (p->cp > 1)
        n += 4.0 * p->cp;
    if (moe)
        n += 4;
    if (p->zero == 3) {
        /* gathers for forward and backward and a reduce-scatter (experts': as many again);
         * FSDP2's copies around each; a fetch before each gather with parameter offload */
        double colls = moe ? 6 : 3;
        n += colls;
        if (p->fsdp.implementation == PLAN_FSDP2)
            n += colls;
        if (p->offload.params != PLAN_OFFLOAD_NONE) /* nvme: read, then copy up */
            n += (p->offload.params == PLAN_OFFLOAD_NVME ? 2 : 1) * 2 * colls / 3;
    }
    if (p->offload.activations != PLAN_OFFLOAD_NONE)
        n += 2; /* out after the forward, back before the backward */
    return n;
}

/* One block's kernels in both passes for one micro-batch: their count (recompute's included)
 * into *ops, their time back to back into *s. */
static void block_work(const plan_scenario *sc, const model_spec *m, const model_shape *sh,
                       const hw_gpu *gpu, model_block blk, model_op_list *list, double *ops,
                       double *s)
{
    *ops = 0;
    *s = 0;
    double attn_seq = (double)sc->training.seq_len / SIM_MAX(1, sc->parallel.cp);
    for (int ph = 0; ph < 2; ph++) {
        model_block_ops(m, sh, blk, ph ? MODEL_PHASE_BWD : MODEL_PHASE_FWD, list);
        for (int i = 0; i < list->n; i++) {
            const model_op *o = &list->op[i];
            double t = sim_time_to_s(hw_gpu_kernel_time(
                gpu, o->cls, model_op_dtype(sh, o), o->flops, o->bytes, o->inner, attn_seq));
            /* a layer's forward kernel runs again in backward under full recompute, an
             * attention core's under selective (embedding and head are not recomputed; an
             * fp8 weight cast is counted in every micro-batch, an estimate above the one
             * per step it is) */
            bool layer = blk == MODEL_BLOCK_LAYER || blk == MODEL_BLOCK_MOE;
            double again = layer && ph == 0 && !o->weight_cast &&
                                   model_recompute_share(o, sc->training.recompute,
                                                         sc->training.recompute_early_stop) > 0
                               ? 2 : 1;
            *ops += again;
            *s += again * t;
        }
    }
}

/* The slowest link a rank's traffic may cross (per direction). */
static double slowest_link_Bps(const hw_topology_spec *t)
{
    double bw = INFINITY;
    if (t->n_devices > 0) {
        for (int i = 0; i < t->n_links; i++)
            if (t->links[i].bw_Bps > 0)
                bw = fmin(bw, t->links[i].bw_Bps);
        return isfinite(bw) ? bw : 1e9;
    }
    if (t->gpus_per_node > 1)
        bw = t->intra.bw_Bps > 0 ? t->intra.bw_Bps
                                 : hw_pcie_bw_Bps(t->intra.pcie_gen, t->intra.pcie_lanes);
    if (t->nodes > 1 && t->nics.count > 0)
        bw = fmin(bw, t->nics.bw_Bps / (t->fabric.oversubscription > 1
                                             ? t->fabric.oversubscription : 1));
    return isfinite(bw) ? bw : 1e12;
}

void plan_estimate_work(const plan_scenario *sc, bool op_sharing, plan_work *out)
{
    const plan_parallel *p = &sc->parallel;
    const plan_training *tr = &sc->training;
    const model_spec *m = &sc->model;
    *out = (plan_work){0};
    double ranks = (double)p->tp * p->cp * p->pp * p->dp;
    double per_step = (double)tr->micro_batch * p->dp;
    double A = tr->global_batch > 0 ? floor((double)tr->global_batch / per_step) : 1;
    A = SIM_MAX(A, 1.0);
    out->ranks = ranks;
    out->micro_batches = A;

    /* layers of the busiest stage: the explicit split's largest, else the even split's
     * chunks rounded up */
    int v = p->pp > 1 ? SIM_MAX(1, p->pipeline.virtual_stages) : 1;
    if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_ZBV)
        v = 2;
    double stage_layers = 0;
    if (p->pipeline.n_stage_layers > 0) {
        if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_DUALPIPE)
            v = 2; /* two chunks a stage, for the transfers below */
        for (int s = 0; s < p->pp; s++) {
            double sum = 0;
            for (int c = s; c < p->pipeline.n_stage_layers; c += p->pp)
                sum += p->pipeline.stage_layers[c];
            if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_DUALPIPE)
                sum += p->pipeline.stage_layers[p->pp - 1 - s]; /* its mirror's chunk */
            stage_layers = fmax(stage_layers, sum);
        }
    } else if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_DUALPIPE) {
        v = 2; /* two chunks of layers / pp each */
        stage_layers = ceil((double)m->layers / p->pp) * 2;
    } else {
        stage_layers = ceil((double)m->layers / ((double)p->pp * v)) * v;
    }
    stage_layers = fmin(stage_layers, m->layers);
    bool moe = m->moe.experts > 0;
    double moe_layers = moe ? fmax(0, m->layers - m->moe.dense_layers) : 0;
    double moe_share = m->layers > 0 ? moe_layers / m->layers : 0;

    /* kernels and their time per micro-batch, by block (uniform routing) */
    model_shape sh = {.micro_batch = tr->micro_batch, .seq_len = tr->seq_len, .tp = p->tp,
                      .sp = p->sp, .cp = p->cp, .dtype = tr->precision,
                      .flash_attention = tr->flash_attention, .eager = !tr->compile,
                      .composite_norm = plan_composite_norm(tr),
                      .fused_loss = tr->cross_entropy == PLAN_CE_COMPILED,
                      .fp8_current = tr->precision == HW_DTYPE_FP8 &&
                                     tr->fp8_recipe == PLAN_FP8_CURRENT,
                      .sp_dtensor = p->sp && p->sp_implementation == PLAN_SP_DTENSOR,
                      .ep = p->ep,
                      .ft = plan__finetune_of(tr)};
    hw_gpu *gpu = hw_gpu_create(&sc->topology.gpu);
    model_op_list *list = sim_calloc(1, sizeof *list);
    double n_layer, s_layer, n_moe = 0, s_moe = 0, n_embed, s_embed, n_head, s_head;
    block_work(sc, m, &sh, gpu, MODEL_BLOCK_LAYER, list, &n_layer, &s_layer);
    if (moe)
        block_work(sc, m, &sh, gpu, MODEL_BLOCK_MOE, list, &n_moe, &s_moe);
    block_work(sc, m, &sh, gpu, MODEL_BLOCK_EMBED, list, &n_embed, &s_embed);
    block_work(sc, m, &sh, gpu, MODEL_BLOCK_HEAD, list, &n_head, &s_head);
    sim_free(list);
    hw_gpu_destroy(gpu);

    double dense_in_stage = stage_layers * (1 - moe_share), moe_in_stage = stage_layers * moe_share;
    double per_mb = dense_in_stage * (n_layer + layer_colls(sc, false)) +
                    moe_in_stage * (n_moe + layer_colls(sc, true)) + n_embed + n_head +
                    4.0 * v; /* pipeline sends and receives, both passes, per chunk */
    double units = stage_layers + 2;
    /* per step: gradient buckets or reduce-scatters, gathers and the optimizer per unit */
    out->ops_per_rank = A * per_mb + 4 * units;
    bool shared = op_sharing && p->offload.optimizer == PLAN_OFFLOAD_NONE;
    double templates = fmin(ranks, (double)p->pp * 2);
    /* MoE: every rank is generated (its own routing), then borrows (plan/share.c) */
    out->generated = shared && !moe ? templates : ranks;
    double held = shared ? templates : ranks; /* ranks whose ops stay in memory */
    /* symmetry: one replica (with experts, one expert-parallel block of ep replicas) */
    double replicas = (double)p->dp / SIM_MAX(1, p->ep);
    bool symmetric = sc->simulation.symmetry == PLAN_SYMMETRY_DP && replicas > 1;
    out->replayed = symmetric ? ranks / replicas : ranks;
    out->ops = out->ops_per_rank * ranks;

    /* time: the kernels, then the bytes this rank sends over its slowest link */
    double compute_mb = dense_in_stage * s_layer + moe_in_stage * s_moe + s_embed + s_head;
    model_params mp;
    model_count_params(m, &mp);
    /* DualPipe: each stage holds two chunks and reduces with its mirror stage */
    bool dual = p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_DUALPIPE;
    double params_rank = (double)mp.total / ((double)p->tp * p->pp) * (dual ? 2 : 1);
    /* an fp8 run keeps 16-bit weights and activations (docs/models.md, "fp8"), as dp.c */
    double wbytes = tr->precision == HW_DTYPE_FP8 ? 2 : hw_dtype_bytes(tr->precision);
    double gbytes = hw_dtype_bytes(tr->grad_dtype);
    double dp_bytes = p->dp * p->cp > 1 || dual
                          ? params_rank * (2 * gbytes + (p->zero >= 1 ? wbytes : 0) +
                                           (p->zero == 3 ? 2 * wbytes * A : 0))
                          : 0;
    double act = (double)tr->micro_batch * (double)tr->seq_len / p->cp * m->hidden * wbytes;
    double act_bytes = 0;
    if (p->tp > 1)
        act_bytes += 8 * act * stage_layers; /* four all-reduces, each about twice its size */
    if (p->cp > 1)
        act_bytes += 4 * act * stage_layers; /* keys and values around the ring, both passes */
    if (moe)
        act_bytes += 4 * act * m->moe.top_k * moe_in_stage;
    if (p->pp > 1)
        act_bytes += 2 * act * v;
    out->compute_s = A * compute_mb;
    out->comm_s = (dp_bytes + A * act_bytes) / slowest_link_Bps(&sc->topology);
    /* a pipeline fills and drains: pp - 1 more micro-batch slots of a stage */
    out->step_s = (out->compute_s + out->comm_s) * (A + p->pp - 1) / A;
    out->run_s = out->step_s * sc->simulation.steps;

    out->topology_bytes = plan_estimate_topology_bytes(&sc->topology) - BYTES_FIXED;
    double common = BYTES_FIXED + out->topology_bytes +
                    held * out->ops_per_rank * BYTES_PER_GENERATED_OP +
                    ranks * out->ops_per_rank *
                        (BYTES_PER_RANK_OP + (shared && moe ? BYTES_PER_MOE_BORROWED_OP : 0));
    /* streaming keeps the templates (dense) or one rank at a time (MoE: nothing borrowed) */
    out->bytes_plan = BYTES_FIXED + out->topology_bytes +
                      (shared && !moe ? templates : 1) * out->ops_per_rank *
                          BYTES_PER_GENERATED_OP +
                      ranks * out->ops_per_rank * BYTES_PER_PLANNED_OP;
    out->bytes = common + out->replayed * out->ops_per_rank * BYTES_PER_REPLAYED_OP;
    out->bytes_symmetry = out->bytes;
    if (!symmetric && replicas > 1)
        out->bytes_symmetry =
            common + ranks / replicas * out->ops_per_rank * BYTES_PER_REPLAYED_OP;
}

double plan_estimate_trace_bytes(double ops, double deps, double mem_events, double ranks)
{
    /* an op as a generated one (its record, what the replay derives, its replay state), a
     * dependency twice (the list and the successors), a memory event (16 bytes) with its
     * read buffer, and a rank's fixed state */
    return BYTES_FIXED + ops * (BYTES_PER_GENERATED_OP + BYTES_PER_RANK_OP +
                                BYTES_PER_REPLAYED_OP) +
           deps * 8 + mem_events * 32 + ranks * 4096;
}

double plan_estimate_topology_bytes(const hw_topology_spec *t)
{
    double gpus = t->n_devices > 0 ? (double)t->n_devices : (double)t->nodes * t->gpus_per_node;
    return BYTES_FIXED + gpus * BYTES_PER_GPU;
}
