/* The optimizer step (docs/strategies.md, "Data parallelism"; docs/memory.md): its passes
 * over the parameters each rank updates on the GPU, or, with parallel.offload.optimizer,
 * the gradients' copies to host memory, CPU Adam and the parameters' return; and the
 * layout facts the step and the persistent memory share: which gradients it casts to fp32,
 * PyTorch FSDP's fp32-master layout, the bytes of a kept and of a host-bound gradient.
 *
 * GPU step: one op per unit on the memory curve, standing for the step's passes (cast,
 * norm, unscale, update); the fp32 copy of 16-bit gradients a buffer of the step.
 * Offload: per unit a cast (when the host's dtype is wider), the copy down, CPU Adam at the
 * host memory's sustained rate shared by the ranks staging there, the copy up. */
#include "core/sim.h"

#include <math.h>

#include "plan/gen-internal.h"

/* Whether the GPU step first casts 16-bit gradients to the fp32 gradient it works on: with
 * fp32 master weights (Megatron's optimizers when main_grad is 16-bit: main_grad.float();
 * DeepSpeed's ZeRO-1/2 step: the partition's .to(fp32)), except under DeepSpeed's
 * BF16_Optimizer (grad_accumulation: cast_add), whose buffer is fp32 already. */
bool plan__optimizer_casts_grads(const gen *g)
{
    const plan_training *t = &g->sc->training;
    return t->master_weights == PLAN_MASTER_FP32 && g->gbytes < 4 &&
           t->grad_accumulation != PLAN_GRAD_ACCUM_CAST_ADD &&
           g->sc->parallel.offload.optimizer == PLAN_OFFLOAD_NONE;
}

/* PyTorch's FSDP (fsdp1, fsdp2) with fp32 master weights, nothing offloaded, and every
 * trained weight gathered for its use: its sharded parameter is the fp32 master, so it
 * keeps no 16-bit shard of what it trains (each gather casts into its input buffer), and
 * the gradient it keeps is in the parameter's dtype, fp32, whatever the reduction's
 * (reduce_dtype; FSDP2's foreach_reduce casts the reduced shard to the parameter's dtype,
 * FSDP1 _cast_grad_to_param_dtype). Otherwise (an offload; one rank, or experts one rank
 * per expert-data-parallel group, whose weights the model keeps resident in 16 bits) the
 * model keeps DeepSpeed's accounting, a 16-bit copy beside the fp32 master:
 * docs/memory.md. */
bool plan__torch_fsdp_master(const gen *g)
{
    const plan_parallel *par = &g->sc->parallel;
    if (g->zero != 3 || par->fsdp.implementation == PLAN_DEEPSPEED ||
        g->sc->training.master_weights != PLAN_MASTER_FP32 ||
        par->offload.optimizer != PLAN_OFFLOAD_NONE || par->offload.params != PLAN_OFFLOAD_NONE ||
        !plan__gathers_weights(g))
        return false;
    if (g->n_edp <= 1)
        for (int i = 0; i < g->n_units; i++)
            if (g->units[i].trainable_expert > 0)
                return false;
    return true;
}

/* The bytes of a gradient element the GPU keeps (accumulated, sharded): fp32 under PyTorch's
 * FSDP with fp32 master weights (plan__torch_fsdp_master), else training.grad_dtype's. */
double plan__grad_store_bytes(const gen *g)
{
    return plan__torch_fsdp_master(g) ? 4 : g->gbytes;
}

/* The fp32 gradients that cast allocates, for the parameters the rank updates (the units
 * g->mine marks): 4 bytes each, all cast before the step (Megatron casts every group's,
 * then clips and updates) and held until the next zeroing of the gradients, which frees
 * them before the next forward. 0 without the cast, and under PyTorch's FSDP, whose kept
 * gradient is fp32 already (plan__torch_fsdp_master; cast per micro-batch in the
 * backward). */
double plan__optimizer_grad_bytes(const gen *g)
{
    if (!plan__optimizer_casts_grads(g) || plan__torch_fsdp_master(g))
        return 0;
    double params = 0;
    for (int i = 0; i < g->n_units; i++)
        if (g->mine[i] && g->units[i].trainable > 0)
            params += plan__shard_params(g, &g->units[i]);
    /* DeepSpeed's ZeRO-3 casts, updates and frees them a sub-group at a time
     * (_prepare_fp32_grad_for_sub_group, _release_sub_group): a sub-group takes
     * parameters' partitions (ceil(numel / n) each) until it holds sub_group_size elements,
     * so it overshoots by less than the largest partition */
    if (g->zero == 3) {
        int64_t part = 0;
        for (int i = 0; i < g->n_units; i++)
            if (g->mine[i] && g->units[i].trainable > 0)
                part = SIM_MAX(part, plan__ceil_div(plan__largest_param_tensor(g, &g->units[i]), g->n));
        params = fmin(params, g->sc->parallel.fsdp.sub_group_size + (double)part);
    }
    return 4 * params;
}

double plan__optimizer_bytes_per_param(const gen *g)
{
    const plan_training *t = &g->sc->training;
    double states = t->optimizer == PLAN_OPT_ADAM ? 2 : 1;
    bool master = t->master_weights == PLAN_MASTER_FP32;
    /* the gradient the step works on: with fp32 master weights an fp32 one, which 16-bit
     * gradients are first cast to (plan__optimizer_casts_grads): read 16-bit, write fp32 */
    double main = master ? 4 : g->gbytes;
    double cast = plan__optimizer_casts_grads(g) ? g->gbytes + 4 : 0;
    /* fp16's loss scaling: before the norm and the update that gradient is unscaled in place
     * and checked for inf/NaN in one pass (PyTorch's fused non-finite check and unscale,
     * which AMP's GradScaler and Megatron's fp16 optimizer run): read and written once */
    double unscale = t->precision == HW_DTYPE_FP16 ? 2.0 * main : 0;
    /* read it twice (global-norm clipping, then the update), read and write the 16-bit
     * weights (none under PyTorch's FSDP, whose parameter is the master), the fp32 master
     * copy and every optimizer state */
    double w16 = plan__torch_fsdp_master(g) ? 0 : 2.0 * g->wbytes;
    return cast + 2.0 * main + unscale + w16 +
           2.0 * states * plan__state_bytes(t->optimizer_state) + (master ? 8 : 0);
}

static uint32_t emit_optimizer(gen *g, const uint32_t *deps, size_t n_deps)
{
    const plan_training *t = &g->sc->training;
    double per = plan__optimizer_bytes_per_param(g);
    double flops_per = t->optimizer == PLAN_OPT_ADAM ? 12 : 4;
    int64_t cast_bytes = (int64_t)ceil(plan__optimizer_grad_bytes(g));
    uint32_t last = 0;
    bool first = true;
    for (int i = 0; i < g->n_units; i++) {
        const unit *u = &g->units[i];
        if (u->trainable == 0 || !g->mine[i])
            continue;
        double params = plan__shard_params(g, u);
        trace_op op = {
            .kind = TRACE_OP_COMPUTE,
            .stream = TRACE_STREAM_COMPUTE,
            .phase = TRACE_PHASE_OPT,
            .cls = HW_OP_VECTOR,
            .dtype = HW_DTYPE_FP32,
            .layer = u->layer,
            .microbatch = TRACE_NO_MICROBATCH,
            .name = trace_intern(g->t, u->blk == MODEL_BLOCK_EMBED   ? "optimizer.embed"
                                       : u->blk == MODEL_BLOCK_HEAD ? "optimizer.head"
                                                                    : "optimizer.layer"),
            .flops = flops_per * params,
            .bytes = per * params,
            .duration_ps = TRACE_MEASURED_NONE,
        };
        last = trace_add_op(g->t, g->rank, &op, first ? deps : NULL, first ? n_deps : 0);
        if (first && cast_bytes > 0) /* the cast's fp32 gradients, from the step's start */
            trace_add_mem(g->t, g->rank, last, PLAN_MEM_GRADS, cast_bytes, false);
        first = false;
    }
    if (!first && cast_bytes > 0) /* to its end (the next zeroing frees them) */
        trace_add_mem(g->t, g->rank, last, PLAN_MEM_GRADS, -cast_bytes, true);
    return last;
}

static uint32_t add_offload_op(gen *g, trace_op_kind kind, const char *name, int layer,
                               trace_copy dir, double bytes, sim_time duration, uint32_t dep,
                               bool have_dep)
{
    if (kind == TRACE_OP_COPY)
        return plan__add_copy(g, name, dir, TRACE_PHASE_OPT, layer, TRACE_NO_MICROBATCH, bytes,
                              dep, have_dep);
    trace_op op = {
        .kind = (uint8_t)kind,
        .stream = TRACE_STREAM_HOST,
        .phase = TRACE_PHASE_OPT,
        .layer = layer,
        .microbatch = TRACE_NO_MICROBATCH,
        .name = trace_intern(g->t, name),
        .duration_ps = duration,
    };
    return trace_add_op(g->t, g->rank, &op, have_dep ? &dep : NULL, have_dep);
}

/* The bytes of a gradient element as it reaches the host for CPU Adam: with fp32 master
 * weights an fp32 one, which the GPU casts the reduced 16-bit gradient to before the copy
 * (DeepSpeed's ZeRO-1/2 async_inplace_copy_grad_to_fp32_buffer_from_gpu and ZeRO-3
 * _offload_grad_partition_at_boundary: .to(master_weights_and_grads_dtype), then the copy
 * into the host's fp32 gradient; PyTorch FSDP's CPU offload casts the shard to the
 * parameter's dtype first too); else the gradient's own dtype. */
double plan__host_grad_bytes(const gen *g)
{
    return g->sc->training.master_weights == PLAN_MASTER_FP32 ? 4 : g->gbytes;
}

double plan__cpu_adam_bytes_per_param(const gen *g)
{
    const plan_training *t = &g->sc->training;
    double states = t->optimizer == PLAN_OPT_ADAM ? 2 : 1;
    /* read the gradient, read and write the master copy and every state, write the 16-bit
     * parameter to send back */
    return plan__host_grad_bytes(g) + 2.0 * states * plan__state_bytes(t->optimizer_state) +
           (t->master_weights == PLAN_MASTER_FP32 ? 8 : 0) + g->wbytes;
}

double plan__cpu_adam_Bps(const gen *g, int r)
{
    hw_topo *topo = g->p->topo;
    int mem = hw_topo_host_memory(topo, r);
    /* CPU Adam streams its states at the rate memory-bound CPU code sustains, shared by the
     * ranks whose optimizer lives in the same memory */
    const hw_node_spec *node = hw_topology_node_spec(&g->sc->topology, g->p->coords[r].node);
    return hw_topo_memory_bw_Bps(topo, mem) * node->host.memory_efficiency / g->mem_sharers[r];
}

/* ZeRO-Offload's step: per unit, gradients to host, CPU Adam, parameters back. */
static uint32_t emit_offload_step(gen *g, const uint32_t *deps, size_t n_deps)
{
    const plan_training *t = &g->sc->training;
    double states = t->optimizer == PLAN_OPT_ADAM ? 2 : 1;
    double sb = plan__state_bytes(t->optimizer_state);
    double per = plan__cpu_adam_bytes_per_param(g); /* host DRAM bytes per parameter */
    double bw = plan__cpu_adam_Bps(g, g->rank);
    uint32_t *d2h = sim_calloc((size_t)g->n_units, sizeof *d2h);
    uint32_t *cpu = sim_calloc((size_t)g->n_units, sizeof *cpu);
    uint32_t last = 0;
    /* With a cast to the host's dtype, each unit's is a kernel on the GPU before its copy,
     * and the next unit's cast waits for that copy (DeepSpeed issues both on one stream, a
     * tensor at a time): the cast's fp32 temporary, a buffer, lives until its copy ends.
     * What waits for the step's inputs (deps: the reductions, DualPipe's transfers) is the
     * first cast, or without casts every copy. Units with nothing to update copy nothing. */
    double hg = plan__host_grad_bytes(g);
    bool cast = hg > plan__grad_store_bytes(g);
    uint32_t prev = 0;
    bool have_prev = false;
    for (int i = 0; i < g->n_units; i++) {
        if (!g->mine[i])
            continue;
        double params = plan__shard_params(g, &g->units[i]);
        const uint32_t *in = have_prev ? &prev : deps;
        size_t n_in = have_prev ? 1 : n_deps;
        trace_op op = {
            .stream = TRACE_STREAM_COMPUTE,
            .phase = TRACE_PHASE_OPT,
            .layer = g->units[i].layer,
            .microbatch = TRACE_NO_MICROBATCH,
            .duration_ps = TRACE_MEASURED_NONE,
        };
        int64_t temp = 0;
        if (cast && params > 0) { /* read grad_dtype, write the host's dtype */
            op.kind = TRACE_OP_COMPUTE;
            op.cls = HW_OP_VECTOR;
            op.dtype = HW_DTYPE_FP32;
            op.name = trace_intern(g->t, "offload.grad_cast");
            op.bytes = params * (g->gbytes + hg);
            prev = trace_add_op(g->t, g->rank, &op, in, n_in);
            temp = (int64_t)ceil(params * hg);
            trace_add_mem(g->t, g->rank, prev, PLAN_MEM_BUFFERS, temp, false);
            in = &prev;
            n_in = 1;
        }
        op = (trace_op){
            .kind = TRACE_OP_COPY,
            .stream = TRACE_STREAM_OFFLOAD,
            .phase = TRACE_PHASE_OPT,
            .copy = TRACE_COPY_D2H,
            .layer = g->units[i].layer,
            .microbatch = TRACE_NO_MICROBATCH,
            .name = trace_intern(g->t, "offload.grads"),
            .bytes = params * hg,
            .duration_ps = TRACE_MEASURED_NONE,
        };
        d2h[i] = trace_add_op(g->t, g->rank, &op, in, n_in);
        if (temp > 0) {
            trace_add_mem(g->t, g->rank, d2h[i], PLAN_MEM_BUFFERS, -temp, true);
            prev = d2h[i];
            have_prev = true;
        }
    }
    /* ZeRO-Infinity (optimizer on NVMe): each unit's master weights and states are read
     * from the rank's drive into host memory for CPU Adam and written back after it */
    bool nvme = g->sc->parallel.offload.optimizer == PLAN_OFFLOAD_NVME;
    double kept = states * sb + (t->master_weights == PLAN_MASTER_FP32 ? 4 : 0);
    for (int i = 0; i < g->n_units; i++) {
        if (!g->mine[i])
            continue;
        double params = plan__shard_params(g, &g->units[i]);
        uint32_t ready = d2h[i];
        if (nvme) /* on the offload stream after the copies before it */
            ready = add_offload_op(g, TRACE_OP_COPY, "offload.read_states", g->units[i].layer,
                                   TRACE_COPY_READ, params * kept, 0, d2h[i], true);
        cpu[i] = add_offload_op(g, TRACE_OP_HOST, "cpu_adam", g->units[i].layer, false, 0,
                                sim_time_from_s(params * per / bw), ready, true);
        if (nvme)
            add_offload_op(g, TRACE_OP_COPY, "offload.write_states", g->units[i].layer,
                           TRACE_COPY_WRITE, params * kept, 0, cpu[i], true);
    }
    /* the updated 16-bit parameters go back to the GPU, unless they live on the host or its
     * drive (parameter offload: the next gathers fetch them) */
    plan_offload where = g->sc->parallel.offload.params;
    for (int i = 0; i < g->n_units; i++) {
        if (!g->mine[i])
            continue;
        double params = plan__shard_params(g, &g->units[i]);
        last = where == PLAN_OFFLOAD_NONE
                   ? add_offload_op(g, TRACE_OP_COPY, "offload.params", g->units[i].layer,
                                    TRACE_COPY_H2D, params * g->wbytes, 0, cpu[i], true)
               : where == PLAN_OFFLOAD_NVME
                   ? add_offload_op(g, TRACE_OP_COPY, "offload.write_params", g->units[i].layer,
                                    TRACE_COPY_WRITE, params * g->wbytes, 0, cpu[i], true)
                   : cpu[i];
    }
    sim_free(d2h);
    sim_free(cpu);
    return last;
}

uint32_t plan__emit_step(gen *g, const uint32_t *deps, size_t n_deps)
{
    if (g->sc->parallel.offload.optimizer != PLAN_OFFLOAD_NONE)
        return emit_offload_step(g, deps, n_deps);
    return emit_optimizer(g, deps, n_deps);
}
