/* Each framework's fields as stepsim settings (docs/import.md has the tables). A setting
 * names the field it came from; a value stepsim cannot represent is an error at the field;
 * a field with no equivalent is listed, with why when it is known. */
#include "core/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "input/import-internal.h"

/* ---- shared ------------------------------------------------------------------------------- */

/* Whether `s` contains `word`, case aside. */
static bool has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0)
            return true;
    return false;
}

/* A precision name of any framework (bf16, bfloat16, fp16, float16, fp8, no, fp32, ...) as
 * training.precision, or NULL for full precision, which stepsim does not model. */
static const char *precision_of(const char *s)
{
    if (!strcasecmp(s, "bf16") || !strcasecmp(s, "bfloat16"))
        return "bf16";
    if (!strcasecmp(s, "fp16") || !strcasecmp(s, "float16") || !strcasecmp(s, "half"))
        return "fp16";
    if (!strcasecmp(s, "fp8") || !strcasecmp(s, "float8"))
        return "fp8";
    return NULL;
}

static int set_precision(import_ctx *c, const char *source, const input_ynode *v)
{
    const char *p = v && v->kind == INPUT_YSCALAR ? precision_of(v->text) : NULL;
    if (!p)
        return import__error(c, v, "%s: '%s': stepsim models bf16, fp16 and fp8 training, not "
                             "full precision", source, v && v->kind == INPUT_YSCALAR ? v->text : "?");
    import__set(c, "training.precision", source, v, "%s", p);
    return 0;
}

static int set_int(import_ctx *c, const char *key, const char *path, const char *source)
{
    const input_ynode *v = import__get(c, path);
    long long x;
    if (!v)
        return 0;
    int rc = import__int(c, v, source, &x);
    if (!rc)
        import__set(c, key, source, v, "%lld", x);
    return rc;
}

/* ---- DeepSpeed -------------------------------------------------------------------------- */

static int offload_device(import_ctx *c, const char *path, const char *key)
{
    const input_ynode *v = import__get(c, path);
    if (!v || import__text(v, "none"))
        return 0;
    if (!import__text(v, "cpu") && !import__text(v, "nvme"))
        return import__error(c, v, "%s: device '%s': stepsim offloads to cpu or nvme", path,
                             v->kind == INPUT_YSCALAR ? v->text : "?");
    import__set(c, key, path, v, "%s", import__text(v, "cpu") ? "cpu" : "nvme");
    return 0;
}

static int deepspeed(import_ctx *c)
{
    int rc = 0;
    rc = rc ? rc : set_int(c, "training.global_batch", "train_batch_size", "train_batch_size");
    rc = rc ? rc : set_int(c, "training.micro_batch", "train_micro_batch_size_per_gpu",
                           "train_micro_batch_size_per_gpu");
    rc = rc ? rc : set_int(c, "training.grad_accum", "gradient_accumulation_steps",
                           "gradient_accumulation_steps");
    for (size_t i = 0; !rc && i < c->im->n; i++)
        if (!strcmp(c->im->items[i].key, "training.grad_accum") &&
            strtoll(c->im->items[i].value, NULL, 10) < 1)
            rc = import__error(c, import__get(c, "gradient_accumulation_steps"),
                               "gradient_accumulation_steps: must be at least 1");
    const input_ynode *both_bf = import__get(c, "bf16.enabled");
    if (!rc && import__bool(both_bf) && import__bool(import__get(c, "fp16.enabled")))
        rc = import__error(c, both_bf, "bf16 and fp16 are both enabled: DeepSpeed takes one");
    const input_ynode *bf = import__get(c, "bf16.enabled"), *fp = import__get(c, "fp16.enabled");
    if (import__bool(bf))
        import__set(c, "training.precision", "bf16.enabled", bf, "bf16");
    else if (import__bool(fp))
        import__set(c, "training.precision", "fp16.enabled", fp, "fp16");
    else if (bf || fp)
        import__unmapped(c, "bf16/fp16", "neither enabled: fp32 training, which stepsim does "
                                          "not model; the scenario's precision applies");
    long long stage = 0;
    const input_ynode *st = import__get(c, "zero_optimization.stage");
    if (!rc && st && !(rc = import__int(c, st, "zero_optimization.stage", &stage))) {
        if (stage < 0 || stage > 3)
            return import__error(c, st, "zero_optimization.stage: %lld is not 0..3", stage);
        import__set(c, "parallel.zero", "zero_optimization.stage", st, "%lld", stage);
        if (stage == 3)
            import__set(c, "parallel.fsdp.implementation", "zero_optimization.stage", st,
                        "deepspeed");
    }
    /* ZeRO-Offload needs ZeRO: at stage 0 DeepSpeed ignores the offload settings */
    if (stage >= 1) {
        rc = rc ? rc : offload_device(c, "zero_optimization.offload_optimizer.device",
                                      "parallel.offload.optimizer");
        rc = rc ? rc : offload_device(c, "zero_optimization.offload_param.device",
                                      "parallel.offload.params");
    } else {
        static const char *const devs[] = {"zero_optimization.offload_optimizer.device",
                                           "zero_optimization.offload_param.device"};
        for (size_t i = 0; i < SIM_ARRAY_LEN(devs); i++)
            if (import__get(c, devs[i]))
                import__unmapped(c, devs[i], "ZeRO off (stage 0): nothing is offloaded");
    }
    /* BF16_Optimizer with an fp32 buffer (engine.py: bf16 with data_types.grad_accum_dtype
     * fp32 at stage 1 without an offloaded optimizer, and at stage 0 in DeepSpeed before
     * 0.18.5, which refuses that mix; before 0.17.6 bf16 at stage 0 ran it unasked): each
     * micro-batch's bf16 gradients cast and added into the buffer (update_hp_grads), the fp32
     * master weights and Adam states sharded over the data-parallel ranks ("its own zero
     * stage 1 equivalent"), the buffer reduced after the backward by allreduce_gradients in
     * buckets of MEMORY_OPT_ALLREDUCE_SIZE (5e8 elements), overlap_comm or not. */
    const input_ynode *acc = import__get(c, "data_types.grad_accum_dtype");
    const input_ynode *od = import__get(c, "zero_optimization.offload_optimizer.device");
    bool offloaded = stage >= 1 && od && !import__text(od, "none");
    bool acc32 = import__text(acc, "fp32") || import__text(acc, "float32") ||
                 import__text(acc, "float") || import__text(acc, "torch.float32");
    bool bf16_opt = !rc && import__bool(bf) && acc32 && stage <= 1 && !offloaded;
    if (bf16_opt) {
        import__set(c, "parallel.zero", "data_types.grad_accum_dtype fp32 (BF16_Optimizer)", acc,
                    "1");
        import__set(c, "training.grad_accumulation",
                    "data_types.grad_accum_dtype fp32 (BF16_Optimizer)", acc, "cast_add");
    } else if (acc) {
        import__unmapped(c, "data_types.grad_accum_dtype", "gradients accumulated where "
                                                           "autograd or ZeRO puts them");
    }
    /* when the gradients are reduced: stage 0's engine and BF16_Optimizer after the backward
     * (allreduce_gradients at the accumulation boundary; the pipeline engine's ReduceGrads
     * after the last backward); ZeRO-1/2 as overlap_comm says (off by default below stage
     * 3) */
    const input_ynode *ov = import__get(c, "zero_optimization.overlap_comm");
    if (!rc && (stage == 0 || bf16_opt)) {
        import__set(c, "parallel.ddp.overlap",
                    bf16_opt ? "BF16_Optimizer (reduces after the backward)"
                    : st     ? "zero_optimization.stage 0"
                             : "no zero_optimization.stage (0)",
                    bf16_opt ? acc : st, "false");
        if (ov)
            import__unmapped(c, "zero_optimization.overlap_comm",
                             "a ZeRO option: the gradients are reduced after the backward");
    } else if (!rc && stage <= 2) {
        import__set(c, "parallel.ddp.overlap",
                    ov ? "zero_optimization.overlap_comm"
                       : "no zero_optimization.overlap_comm (false below stage 3)",
                    ov ? ov : st, "%s", import__bool(ov) ? "true" : "false");
    } else if (ov) {
        import__unmapped(c, "zero_optimization.overlap_comm", "ZeRO-3's gathers and reductions "
                                                              "overlap compute in stepsim's model");
    }
    const input_ynode *rb = import__get(c, "zero_optimization.reduce_bucket_size");
    const input_ynode *cd = import__get(c, "communication_data_type");
    /* the reduction's bytes an element: communication_data_type's (16-bit by default);
     * DeepSpeed lowercases it and takes fp32, fp16 and bf16 (bfp16 in older releases) */
    bool cd32 = cd && cd->kind == INPUT_YSCALAR && !strcasecmp(cd->text, "fp32");
    bool cd16 = cd && cd->kind == INPUT_YSCALAR &&
                (!strcasecmp(cd->text, "fp16") || !strcasecmp(cd->text, "bf16") ||
                 !strcasecmp(cd->text, "bfp16"));
    int eb = cd32 ? 4 : 2;
    long long x;
    if (!rc && (stage == 0 || bf16_opt)) {
        /* allreduce_gradients' buckets: MEMORY_OPT_ALLREDUCE_SIZE, 5e8 elements */
        import__set(c, "parallel.ddp.bucket", "5e8 elements (DeepSpeed's allreduce_gradients)",
                    st, "%lld B", 500000000LL * eb);
        if (rb)
            import__unmapped(c, "zero_optimization.reduce_bucket_size",
                             "a ZeRO option: allreduce_gradients' buckets are 5e8 elements");
    } else if (!rc && rb && !(rc = import__int(c, rb, "zero_optimization.reduce_bucket_size", &x))) {
        if (stage == 3)
            import__set(c, "parallel.fsdp.reduce_bucket", "zero_optimization.reduce_bucket_size",
                        rb, "%lld", x);
        else if (x < 1) /* elements of gradients */
            return import__error(c, rb, "zero_optimization.reduce_bucket_size: %lld is not a "
                                 "positive number of elements", x);
        else
            import__set(c, "parallel.ddp.bucket", "zero_optimization.reduce_bucket_size",
                        rb, "%lld B", eb * x);
    } else if (!rc && stage <= 2) {
        import__set(c, "parallel.ddp.bucket", "no zero_optimization.reduce_bucket_size (5e8 "
                    "elements)", st, "%lld B", 500000000LL * eb);
    }
    if (!rc && stage == 3) {
        rc = set_int(c, "parallel.fsdp.prefetch_bucket",
                     "zero_optimization.stage3_prefetch_bucket_size",
                     "zero_optimization.stage3_prefetch_bucket_size");
        rc = rc ? rc : set_int(c, "parallel.fsdp.persistence_threshold",
                               "zero_optimization.stage3_param_persistence_threshold",
                               "zero_optimization.stage3_param_persistence_threshold");
        rc = rc ? rc : set_int(c, "parallel.fsdp.max_reuse_distance",
                               "zero_optimization.stage3_max_reuse_distance",
                               "zero_optimization.stage3_max_reuse_distance");
        rc = rc ? rc : set_int(c, "parallel.fsdp.sub_group_size", "zero_optimization.sub_group_size",
                               "zero_optimization.sub_group_size");
    }
    /* the reduction's dtype: fp32, or 16 bits (bf16 and fp16 move the same bytes) */
    if (cd32)
        import__set(c, "training.grad_dtype", "communication_data_type", cd, "fp32");
    else if (cd16)
        import__set(c, "training.grad_dtype", "communication_data_type (16 bits)", cd, "bf16");
    else if (cd)
        return import__error(c, cd, "communication_data_type: '%s' is not fp32, fp16 or bf16",
                             cd->kind == INPUT_YSCALAR ? cd->text : "?");
    /* Megatron-DeepSpeed's activation checkpointing: the layers' inputs only, maybe on the CPU */
    const input_ypair *ac = input_ymap_find(c->root, "activation_checkpointing");
    if (ac && ac->value->kind == INPUT_YMAP) {
        import__set(c, "training.recompute", "activation_checkpointing", ac->key, "full");
        const input_ynode *cpu = import__get(c, "activation_checkpointing.cpu_checkpointing");
        if (import__bool(cpu))
            import__set(c, "parallel.offload.activations",
                        "activation_checkpointing.cpu_checkpointing", cpu, "cpu");
    }
    const input_ynode *opt = import__get(c, "optimizer.type");
    if (opt && opt->kind == INPUT_YSCALAR) {
        bool adam = has_word(opt->text, "adam"), sgd = import__text(opt, "sgd");
        if (adam || sgd)
            import__set(c, "training.optimizer", "optimizer.type", opt, adam ? "adam" : "sgd");
        else
            import__unmapped(c, "optimizer.type", "stepsim models Adam and SGD");
    }
    static const char *const why[] = {
        "gradient_clipping", "numerics only",
        "scheduler", "the learning rate: no effect on time or memory",
        "params", "hyper-parameters: no effect on time or memory",
        "steps_per_print", "logging", "wall_clock_breakdown", "logging",
        "contiguous_gradients", "a copy stepsim does not model",
        "allgather_bucket_size", "stepsim has one bucket size (parallel.ddp.bucket)",
        "stage3_max_live_parameters", "not modelled: the prefetch bucket bounds what is gathered",
        "stage3_gather_16bit_weights_on_model_save", "checkpointing",
        "sub_group_size", "ZeRO-3's (parallel.fsdp.sub_group_size): no effect below stage 3",
        "pin_memory", "pinned buffers assumed",
        "loss_scale", "numerics only", "loss_scale_window", "numerics only",
        "initial_scale_power", "numerics only", "hysteresis", "numerics only",
        "min_loss_scale", "numerics only", "zero_allow_untested_optimizer", "no effect",
        "partition_activations", "Megatron-DeepSpeed's TP split of the checkpoints: not modelled",
        "contiguous_memory_optimization", "not modelled", "number_checkpoints", "not modelled",
        "synchronize_checkpoint_boundary", "no effect", "profile", "profiling",
        NULL};
    if (!rc)
        import__list_unused(c, why);
    return rc;
}

/* ---- Accelerate (FSDP, DDP, DeepSpeed plugin) ------------------------------------------ */

static int accelerate(import_ctx *c)
{
    const input_ynode *dt = import__get(c, "distributed_type");
    const input_ynode *mp = import__get(c, "mixed_precision");
    bool mixed = mp && !import__text(mp, "no");
    int rc = 0;
    if (mixed)
        rc = set_precision(c, "mixed_precision", mp);
    else if (mp)
        import__unmapped(c, "mixed_precision", "no: fp32 training, which stepsim does not model; "
                                               "the scenario's precision applies");
    const input_ynode *np = import__get(c, "num_processes");
    long long procs = 0;
    if (!rc && np && !(rc = import__int(c, np, "num_processes", &procs)))
        import__set(c, "parallel.dp", "num_processes", np, "%lld", procs);
    if (rc)
        return rc;
    if (import__text(dt, "MULTI_GPU") || import__text(dt, "NO")) {
        import__set(c, "parallel.zero", "distributed_type", dt, "0");
        /* PyTorch DDP under autocast: the parameters, so their gradients, stay fp32 */
        if (mixed)
            import__set(c, "training.grad_dtype", "distributed_type with mixed_precision "
                        "(autocast keeps fp32 parameters and gradients)", dt, "fp32");
    } else if (import__text(dt, "DEEPSPEED")) {
        /* the plugin's stage: given, or Accelerate's default (DeepSpeedPlugin, 2); a
         * deepspeed_config_file says it all itself: import that file instead */
        const input_ynode *z = import__get(c, "deepspeed_config.zero_stage");
        const input_ynode *file = import__get(c, "deepspeed_config.deepspeed_config_file");
        long long stage = 2;
        if (z && !(rc = import__int(c, z, "deepspeed_config.zero_stage", &stage))) {
            if (stage < 0 || stage > 3)
                return import__error(c, z, "deepspeed_config.zero_stage: %lld is not 0..3", stage);
            import__set(c, "parallel.zero", "deepspeed_config.zero_stage", z, "%lld", stage);
        }
        else if (!z && !file)
            import__set(c, "parallel.zero", "no deepspeed_config.zero_stage (Accelerate's "
                        "default, 2)", dt, "2");
        if (!rc && stage == 3)
            import__set(c, "parallel.fsdp.implementation", "distributed_type", dt, "deepspeed");
        /* below stage 3 DeepSpeed reduces after the backward, or serially in it
         * (overlap_comm's default), which the plugin's own keys cannot change */
        if (!rc && stage < 3 && !file) {
            import__set(c, "parallel.ddp.overlap",
                        z ? "deepspeed_config.zero_stage (overlap_comm off below 3)"
                          : "Accelerate's stage 2 (overlap_comm off)", z ? z : dt, "false");
            /* DeepSpeed's buckets: 5e8 elements of 16-bit gradients (allreduce_gradients at
             * stage 0, reduce_bucket_size's default at 1-2) */
            import__set(c, "parallel.ddp.bucket", "5e8 elements (DeepSpeed's default)",
                        z ? z : dt, "%lld B", 1000000000LL);
        }
        if (file)
            import__unmapped(c, "deepspeed_config.deepspeed_config_file",
                             "import that file with `stepsim import deepspeed`");
        rc = rc ? rc : offload_device(c, "deepspeed_config.offload_optimizer_device",
                                      "parallel.offload.optimizer");
        rc = rc ? rc : offload_device(c, "deepspeed_config.offload_param_device",
                                      "parallel.offload.params");
        rc = rc ? rc : set_int(c, "training.grad_accum",
                               "deepspeed_config.gradient_accumulation_steps",
                               "deepspeed_config.gradient_accumulation_steps");
    } else if (import__text(dt, "FSDP")) {
        const input_ynode *s = import__get(c, "fsdp_config.fsdp_sharding_strategy");
        /* FULL_SHARD 1, SHARD_GRAD_OP 2, NO_SHARD 3, HYBRID_SHARD 4, _HYBRID_SHARD_ZERO2 5 */
        static const char *const names[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD",
                                            "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"};
        int k = s ? -1 : 0;
        for (int i = 0; s && i < 5; i++)
            if (import__text(s, names[i]) || (s->kind == INPUT_YSCALAR && atoi(s->text) == i + 1))
                k = i;
        if (k < 0)
            return import__error(c, s, "fsdp_config.fsdp_sharding_strategy: '%s' is not a "
                                 "sharding strategy", s->kind == INPUT_YSCALAR ? s->text : "?");
        const char *src = s ? "fsdp_config.fsdp_sharding_strategy" : "distributed_type";
        const input_ynode *at = s ? s : dt;
        import__set(c, "parallel.zero", src, at, k == 2 ? "0" : "3");
        if (k == 1 || k == 4) /* parameters kept gathered from forward to backward */
            import__set(c, "parallel.fsdp.reshard_after_forward", src, at, "false");
        if (k >= 3)
            import__set(c, "parallel.fsdp.hybrid_shard", src, at, "true");
        const input_ynode *ver = import__get(c, "fsdp_config.fsdp_version");
        import__set(c, "parallel.fsdp.implementation", ver ? "fsdp_config.fsdp_version"
                                                           : "fsdp_config (Accelerate's default "
                                                             "version 1)",
                    ver, "%s", import__text(ver, "2") ? "fsdp2" : "fsdp1");
        const input_ynode *ra = import__get(c, "fsdp_config.fsdp_reshard_after_forward");
        if (ra && ra->kind == INPUT_YSCALAR) {
            bool on = import__bool(ra) || import__text(ra, "FULL_SHARD");
            import__set(c, "parallel.fsdp.reshard_after_forward",
                        "fsdp_config.fsdp_reshard_after_forward", ra, on ? "true" : "false");
        }
        const input_ynode *bp = import__get(c, "fsdp_config.fsdp_backward_prefetch");
        if (!bp)
            bp = import__get(c, "fsdp_config.fsdp_backward_prefetch_policy");
        if (bp)
            import__set(c, "parallel.fsdp.prefetch", "fsdp_config.fsdp_backward_prefetch", bp,
                        import__text(bp, "NO_PREFETCH") ? "0" : "1");
        const input_ynode *off = import__get(c, "fsdp_config.fsdp_offload_params");
        if (import__bool(off)) { /* CPUOffload: parameters and the update on the CPU */
            import__set(c, "parallel.offload.params", "fsdp_config.fsdp_offload_params", off,
                        "cpu");
            import__set(c, "parallel.offload.optimizer", "fsdp_config.fsdp_offload_params", off,
                        "cpu");
        }
        const input_ynode *ac = import__get(c, "fsdp_config.fsdp_activation_checkpointing");
        if (ac)
            import__set(c, "training.recompute", "fsdp_config.fsdp_activation_checkpointing", ac,
                        import__bool(ac) ? "full" : "none");
        if (ac && import__bool(ac)) /* FSDP's checkpoint_wrapper, non-reentrant */
            import__set(c, "training.recompute_early_stop",
                        "fsdp_config.fsdp_activation_checkpointing", ac, "true");
    } else if (dt) {
        return import__error(c, dt, "distributed_type: '%s': stepsim reads FSDP, DEEPSPEED, "
                             "MULTI_GPU and NO", dt->kind == INPUT_YSCALAR ? dt->text : "?");
    }
    /* dynamo_config.dynamo_backend: whether Accelerate wraps the model in torch.compile, and
     * with which backend. Inductor (and the old nvFuser ones) fuse the pointwise ops, a
     * Hugging Face model's loss (in its forward) with them; NO, EAGER, AOT_EAGER and
     * CUDAGRAPHS run PyTorch's own kernels, its loss PyTorch's cross entropy on fp32 logits;
     * the rest are inference or other-device backends. Without it the config says nothing
     * (the script may compile): the scenario's values apply. */
    const input_ypair *dc = input_ypath_find(c->root, "dynamo_config"); /* not a use */
    if (!rc && dc && !input_ynode_is_null(dc->value) && dc->value->kind != INPUT_YMAP)
        return import__error(c, dc->value, "dynamo_config: a mapping (dynamo_backend: ...), "
                             "not %s", input_ykind_name(dc->value->kind));
    const input_ynode *dyn = import__get(c, "dynamo_config.dynamo_backend");
    static const char *const fused[] = {"INDUCTOR", "AOT_TS_NVFUSER", "NVPRIMS_NVFUSER"};
    static const char *const eager[] = {"NO", "EAGER", "AOT_EAGER", "CUDAGRAPHS"};
    int kind = 0; /* 1 fused, 2 eager */
    for (size_t i = 0; dyn && i < SIM_ARRAY_LEN(fused); i++)
        kind = import__text(dyn, fused[i]) ? 1 : kind;
    for (size_t i = 0; dyn && i < SIM_ARRAY_LEN(eager); i++)
        kind = import__text(dyn, eager[i]) ? 2 : kind;
    if (!rc && dyn && !kind)
        return import__error(c, dyn, "dynamo_config.dynamo_backend: '%s': stepsim models "
                             "training with INDUCTOR (fused kernels) or NO, EAGER, AOT_EAGER, "
                             "CUDAGRAPHS (PyTorch's own kernels)",
                             dyn->kind == INPUT_YSCALAR ? dyn->text : "?");
    if (dyn) {
        import__set(c, "training.compile", "dynamo_config.dynamo_backend", dyn, "%s",
                    kind == 1 ? "true" : "false");
        import__set(c, "training.cross_entropy", "dynamo_config.dynamo_backend", dyn, "%s",
                    kind == 1 ? "compiled" : "pytorch");
    }
    static const char *const why[] = {
        "num_machines", "the topology decides the nodes",
        "machine_rank", "a launch setting", "main_process_ip", "a launch setting",
        "main_process_port", "a launch setting", "rdzv_backend", "a launch setting",
        "same_network", "a launch setting", "main_training_function", "a launch setting",
        "compute_environment", "a launch setting", "debug", "a launch setting",
        "use_cpu", "a launch setting", "tpu_env", "TPUs", "tpu_use_cluster", "TPUs",
        "tpu_use_sudo", "TPUs", "downcast_bf16", "TPUs", "enable_cpu_affinity", "no effect",
        "fsdp_auto_wrap_policy", "stepsim wraps each transformer layer",
        "fsdp_transformer_layer_cls_to_wrap", "stepsim wraps each transformer layer",
        "fsdp_state_dict_type", "checkpointing", "fsdp_sync_module_states", "start-up only",
        "fsdp_use_orig_params", "no effect modelled", "fsdp_cpu_ram_efficient_loading",
        "start-up only", "fsdp_forward_prefetch", "stepsim's prefetch applies in both passes",
        "zero3_init_flag", "start-up only", "zero3_save_16bit_model", "checkpointing",
        "dynamo_config.dynamo_mode", "torch.compile's fusions beyond the pointwise ops are "
        "not modelled", "dynamo_config.dynamo_use_fullgraph", "no effect modelled",
        "dynamo_config.dynamo_use_dynamic", "no effect modelled",
        NULL};
    if (!rc)
        import__list_unused(c, why);
    return rc;
}

/* ---- torchtitan --------------------------------------------------------------------------- */

static int torchtitan(import_ctx *c)
{
    int rc = 0;
    const input_ynode *name = import__get(c, "model.name"), *fl = import__get(c, "model.flavor");
    if (name && fl && import__text(name, "llama3") && fl->kind == INPUT_YSCALAR) {
        /* torchtitan's llama3 flavors are Llama 3.1's shapes */
        if (!strcasecmp(fl->text, "8B") || !strcasecmp(fl->text, "70B") ||
            !strcasecmp(fl->text, "405B")) {
            char w[32];
            snprintf(w, sizeof w, "llama3.1-%s", fl->text);
            for (char *p = w; *p; p++)
                *p = (char)(*p == 'B' ? 'b' : *p);
            snprintf(c->im->model, sizeof c->im->model, "%s", w);
        }
    }
    if (name && !c->im->model[0])
        import__unmapped(c, "model.name/flavor", "not a model stepsim ships: give --model");
    long long tp = 1, pp = 1, cp = 1, ep = 1, shard = -1, rep = 1;
    const input_ynode *v;
    if ((v = import__get(c, "parallelism.tensor_parallel_degree")) &&
        !(rc = import__int(c, v, "tensor_parallel_degree", &tp)))
        import__set(c, "parallel.tp", "parallelism.tensor_parallel_degree", v, "%lld", tp);
    if (!rc && tp > 1) { /* torchtitan's TP shards the norms' sequence too, as DTensor does
                          * it, and DTensor's backward reduce-scatters a column-parallel
                          * layer's input gradient after both of its GEMMs */
        import__set(c, "parallel.sp", "parallelism.tensor_parallel_degree", v, "true");
        import__set(c, "parallel.sp_implementation", "parallelism.tensor_parallel_degree", v,
                    "dtensor");
        import__set(c, "parallel.tp_grad_overlap", "parallelism.tensor_parallel_degree", v,
                    "false");
    }
    if (!rc && (v = import__get(c, "parallelism.pipeline_parallel_degree")) &&
        !(rc = import__int(c, v, "pipeline_parallel_degree", &pp)))
        import__set(c, "parallel.pp", "parallelism.pipeline_parallel_degree", v, "%lld", pp);
    if (!rc && (v = import__get(c, "parallelism.context_parallel_degree")) &&
        !(rc = import__int(c, v, "context_parallel_degree", &cp)))
        import__set(c, "parallel.cp", "parallelism.context_parallel_degree", v, "%lld", cp);
    if (!rc && (v = import__get(c, "parallelism.expert_parallel_degree")) &&
        !(rc = import__int(c, v, "expert_parallel_degree", &ep)))
        import__set(c, "parallel.ep", "parallelism.expert_parallel_degree", v, "%lld", ep);
    const input_ynode *sh = import__get(c, "parallelism.data_parallel_shard_degree");
    const input_ynode *rp = import__get(c, "parallelism.data_parallel_replicate_degree");
    if (!rc && sh)
        rc = import__int(c, sh, "data_parallel_shard_degree", &shard);
    if (!rc && rp)
        rc = import__int(c, rp, "data_parallel_replicate_degree", &rep);
    if (rc)
        return rc;
    /* FSDP2 over the shard degree (-1: every GPU left), replicas across them (HSDP) */
    if (shard != 1) {
        import__set(c, "parallel.zero", "parallelism.data_parallel_shard_degree", sh, "3");
        import__set(c, "parallel.fsdp.implementation", "parallelism.data_parallel_shard_degree",
                    sh, "fsdp2");
    }
    if (shard > 0)
        import__set(c, "parallel.dp", "parallelism.data_parallel_shard_degree x replicate",
                    sh ? sh : rp, "%lld", shard * rep);
    if (rep > 1 && shard != 1)
        import__set(c, "parallel.fsdp.hybrid_shard", "parallelism.data_parallel_replicate_degree",
                    rp, "true");
    const input_ynode *ra = import__get(c, "parallelism.fsdp_reshard_after_forward");
    bool keep = ra ? import__text(ra, "never") : pp > 1; /* "default": not with pipelining */
    if (shard != 1)
        import__set(c, "parallel.fsdp.reshard_after_forward",
                    ra ? "parallelism.fsdp_reshard_after_forward" : "torchtitan's default", ra,
                    keep ? "false" : "true");
    const input_ynode *sched = import__get(c, "parallelism.pipeline_parallel_schedule");
    if (sched && pp > 1) {
        static const char *const map[][2] = {{"1F1B", "1f1b"}, {"GPipe", "gpipe"},
                                             {"Interleaved1F1B", "interleaved"},
                                             {"ZBVZeroBubble", "zbv"}};
        const char *s = NULL;
        for (size_t i = 0; i < SIM_ARRAY_LEN(map); i++)
            if (import__text(sched, map[i][0]))
                s = map[i][1];
        if (!s)
            return import__error(c, sched, "pipeline_parallel_schedule: '%s' is not a schedule "
                                 "stepsim models (1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble)",
                                 sched->kind == INPUT_YSCALAR ? sched->text : "?");
        import__set(c, "parallel.pipeline.schedule", "parallelism.pipeline_parallel_schedule",
                    sched, "%s", s);
        if (!strcmp(s, "interleaved"))
            import__set(c, "parallel.pipeline.virtual_stages",
                        "parallelism.pipeline_parallel_schedule (two stages a rank)", sched, "2");
    }
    const input_ynode *async_tp = import__get(c, "parallelism.enable_async_tensor_parallel");
    if (import__bool(async_tp) && tp > 1)
        import__set(c, "parallel.tp_comm_overlap", "parallelism.enable_async_tensor_parallel",
                    async_tp, "true");
    /* batch: per data-parallel rank per step; micro-batches of the pipeline's size */
    long long local = 0, mbs = 1, global = -1;
    const input_ynode *lb = import__get(c, "training.local_batch_size");
    if (!lb)
        lb = import__get(c, "training.batch_size");
    const input_ynode *mb = import__get(c, "parallelism.pipeline_parallel_microbatch_size");
    const input_ynode *gb = import__get(c, "training.global_batch_size");
    if (lb && (rc = import__int(c, lb, "training.local_batch_size", &local)))
        return rc;
    if (mb && (rc = import__int(c, mb, "pipeline_parallel_microbatch_size", &mbs)))
        return rc;
    if (gb && (rc = import__int(c, gb, "training.global_batch_size", &global)))
        return rc;
    if (lb) {
        long long micro = pp > 1 ? mbs : local;
        if (micro < 1 || local % micro != 0)
            return import__error(c, mb ? mb : lb, "local_batch_size %lld is not a multiple of "
                                 "the micro-batch %lld", local, micro);
        import__set(c, "training.micro_batch", pp > 1 ? "parallelism.pipeline_parallel_"
                                                        "microbatch_size" : "training.local_batch_size",
                    pp > 1 && mb ? mb : lb, "%lld", micro);
        if (global > 0)
            import__set(c, "training.global_batch", "training.global_batch_size", gb, "%lld",
                        global);
        else
            import__set(c, "training.grad_accum", "training.local_batch_size / micro-batch", lb,
                        "%lld", local / micro);
    }
    rc = set_int(c, "training.seq_len", "training.seq_len", "training.seq_len");
    const input_ynode *mpp = import__get(c, "training.mixed_precision_param");
    if (!rc && mpp)
        rc = set_precision(c, "training.mixed_precision_param", mpp);
    const input_ynode *mpr = import__get(c, "training.mixed_precision_reduce");
    if (!rc && mpr)
        import__set(c, "training.grad_dtype", "training.mixed_precision_reduce", mpr, "%s",
                    import__text(mpr, "float32") ? "fp32" : "bf16");
    else if (!rc)
        import__set(c, "training.grad_dtype", "training.mixed_precision_reduce absent "
                    "(torchtitan's default float32)", NULL, "fp32");
    const input_ynode *conv = import__get(c, "model.converters");
    for (size_t i = 0; !rc && conv && conv->kind == INPUT_YSEQ && i < conv->n; i++)
        if (import__text(conv->items[i], "float8")) {
            /* torchao's float8 scales each tensor by its own amax (dynamic tensorwise
             * scaling, its default); its row-wise recipes scale each row and run cuBLAS's
             * row-scaled GEMMs, which stepsim does not model */
            const input_ynode *rn = import__get(c, "float8.recipe_name");
            if (rn && !import__text(rn, "tensorwise")) {
                rc = import__error(c, rn, "float8.recipe_name: '%s': stepsim models tensorwise "
                                   "float8 scaling (the default), not row-wise scaling",
                                   rn->text);
                break;
            }
            import__set(c, "training.precision", "model.converters", conv->items[i], "fp8");
            import__set(c, "training.fp8_recipe", "model.converters", conv->items[i],
                        "current");
        }
    /* What torch.compile covers: the model (its blocks) and the loss, PyTorch's cross entropy
     * on fp32 logits: compile.components ("model", "loss"; both by default) since August
     * 2025, both with training.compile before (the loss since April 2025) */
    const input_ynode *comp = import__get(c, "compile.enable");
    if (!comp)
        comp = import__get(c, "training.compile");
    const input_ynode *parts = import__get(c, "compile.components");
    if (!rc && parts && parts->kind != INPUT_YSEQ)
        return import__error(c, parts, "compile.components: a list of \"model\" and \"loss\"");
    bool compiling = comp && import__bool(comp), model_on = compiling, loss_on = compiling;
    if (compiling && parts) {
        model_on = loss_on = false;
        for (size_t i = 0; i < parts->n; i++) {
            model_on |= import__text(parts->items[i], "model");
            loss_on |= import__text(parts->items[i], "loss");
        }
    }
    if (comp)
        import__set(c, "training.compile", parts ? "compile.enable, compile.components" :
                    "compile.enable", comp, "%s", model_on ? "true" : "false");
    import__set(c, "training.cross_entropy",
                comp ? (parts ? "compile.enable, compile.components" : "compile.enable")
                     : "torchtitan's loss (not compiled)",
                comp, "%s", loss_on ? "compiled" : "pytorch");
    /* torchtitan's norm_type (its 2024 configs): "fused_rmsnorm" is its Triton kernel and
     * "compiled_rmsnorm" the norm alone under torch.compile, one kernel each way in eager mode
     * too; "rmsnorm" PyTorch's composite ops, which torch.compile fuses (stepsim's default
     * either way). Its LayerNorms do not fit the RMSNorm models torchtitan trains. */
    const input_ynode *nt = import__get(c, "model.norm_type");
    if (!rc && nt && (import__text(nt, "fused_rmsnorm") || import__text(nt, "compiled_rmsnorm")))
        import__set(c, "training.norm_kernel", "model.norm_type", nt, "fused");
    else if (!rc && nt && !import__text(nt, "rmsnorm"))
        return import__error(c, nt, "model.norm_type: '%s': stepsim reads rmsnorm, "
                             "fused_rmsnorm and compiled_rmsnorm (the models are RMSNorm ones)",
                             nt->kind == INPUT_YSCALAR ? nt->text : "?");
    const input_ynode *ac = import__get(c, "activation_checkpoint.mode");
    const input_ynode *opt = import__get(c, "activation_checkpoint.selective_ac_option");
    if (!rc && ac) {
        /* torchtitan wraps blocks in FSDP's checkpoint_wrapper: PyTorch's non-reentrant
         * checkpoint, which stops re-running a block once its last saved tensor is rebuilt
         * (PyTorch's default). Since pytorch/torchtitan#1580 (August 2025)
         * activation_checkpoint.early_stop passes the choice, false by default; a compiled
         * model recomputes only what its backward reads either way. Set whatever the mode:
         * it says how full recompute runs (the per-op policy stops early anyway), which
         * `plan` and the remedies' full-recompute runs follow. */
        const input_ynode *es = import__get(c, "activation_checkpoint.early_stop");
        if (es && !import__bool(es) && !model_on)
            import__set(c, "training.recompute_early_stop", "activation_checkpoint.early_stop",
                        es, "false");
        else
            import__set(c, "training.recompute_early_stop",
                        es ? (model_on ? "activation_checkpoint.early_stop (compiled model)"
                                       : "activation_checkpoint.early_stop")
                           : "activation_checkpoint.mode",
                        es ? es : ac, "true");
        if (import__text(ac, "none") || import__text(ac, "full")) {
            import__set(c, "training.recompute", "activation_checkpoint.mode", ac, "%s",
                        import__text(ac, "full") ? "full" : "none");
        } else if (import__text(ac, "selective") && (!opt || import__text(opt, "op"))) {
            import__set(c, "training.recompute", "activation_checkpoint.mode (op)", ac, "op");
        } else if (import__text(ac, "selective")) { /* every n-th layer checkpointed whole */
            long long n;
            if (!(rc = import__int(c, opt, "activation_checkpoint.selective_ac_option", &n))) {
                import__set(c, "training.recompute", "activation_checkpoint.mode", ac, "full");
                import__set(c, "training.recompute_every",
                            "activation_checkpoint.selective_ac_option", opt, "%lld", n);
            }
        } else {
            return import__error(c, ac, "activation_checkpoint.mode: '%s' is not none, "
                                 "selective or full", ac->kind == INPUT_YSCALAR ? ac->text : "?");
        }
    }
    const input_ynode *on = import__get(c, "optimizer.name");
    if (on && on->kind == INPUT_YSCALAR && has_word(on->text, "adam"))
        import__set(c, "training.optimizer", "optimizer.name", on, "adam");
    static const char *const why[] = {
        "job", "run bookkeeping", "metrics", "logging", "checkpoint", "checkpointing",
        "lr_scheduler", "the learning rate: no effect on time or memory",
        "lr", "hyper-parameter", "eps", "hyper-parameter", "weight_decay", "hyper-parameter",
        "max_norm", "numerics only", "steps", "the run's length (training.tokens)",
        "dataset", "data", "dataset_path", "data", "tokenizer_path", "data",
        "hf_assets_path", "data", "seed", "no effect", "deterministic", "no effect",
        "comm", "timeouts", "profiling", "profiling", "experimental", "not read",
        "memory_estimation", "stepsim's memory plan is its own", "validation", "evaluation",
        "fault_tolerance", "not modelled", "float8",
        "its all-gather and scale options: fp8 runs as Transformer Engine's current scaling "
        "(docs/models.md)",
        NULL};
    if (!rc)
        import__list_unused(c, why);
    return rc;
}

/* ---- Megatron-LM ---------------------------------------------------------------------------- */

static int megatron(import_ctx *c)
{
    static const struct {
        const char *arg, *key;
    } ints[] = {
        {"tensor-model-parallel-size", "parallel.tp"},
        {"pipeline-model-parallel-size", "parallel.pp"},
        {"context-parallel-size", "parallel.cp"},
        {"expert-model-parallel-size", "parallel.ep"},
        {"micro-batch-size", "training.micro_batch"},
        {"global-batch-size", "training.global_batch"},
        {"seq-length", "training.seq_len"},
        {"num-layers", "model.layers"},
        {"hidden-size", "model.hidden"},
        {"num-attention-heads", "model.heads"},
        {"ffn-hidden-size", "model.ffn"},
        {"kv-channels", "model.head_dim"},
        {"vocab-size", "model.vocab"},
        {"num-experts", "model.moe.experts"},
        {"moe-router-topk", "model.moe.top_k"},
        {"moe-ffn-hidden-size", "model.moe.expert_ffn"},
        {"virtual-pipeline-model-parallel-size", "parallel.pipeline.virtual_stages"},
    };
    int rc = 0;
    char src[96];
    for (size_t i = 0; !rc && i < SIM_ARRAY_LEN(ints); i++) {
        snprintf(src, sizeof src, "--%s", ints[i].arg);
        rc = set_int(c, ints[i].key, ints[i].arg, src);
    }
    if (rc)
        return rc;
    const input_ynode *v;
    if (import__get(c, "virtual-pipeline-model-parallel-size"))
        import__set(c, "parallel.pipeline.schedule", "--virtual-pipeline-model-parallel-size",
                    NULL, "interleaved");
    long long per = 0, layers = 0, pp = 1;
    const input_ynode *lv = import__get(c, "num-layers-per-virtual-pipeline-stage");
    if (lv && !(rc = import__int(c, lv, "--num-layers-per-virtual-pipeline-stage", &per))) {
        if (!import__get(c, "num-layers"))
            return import__error(c, lv, "--num-layers-per-virtual-pipeline-stage needs "
                                 "--num-layers (the layers it divides)");
        if ((rc = import__int(c, import__get(c, "num-layers"), "--num-layers", &layers)))
            return rc;
        const input_ynode *ppv = import__get(c, "pipeline-model-parallel-size");
        if (ppv)
            import__int(c, ppv, "--pipeline-model-parallel-size", &pp);
        if (per < 1 || layers % (pp * per) != 0)
            return import__error(c, lv, "--num-layers-per-virtual-pipeline-stage %lld does not "
                                 "divide the %lld layers of a stage", per, layers / SIM_MAX(pp, 1));
        import__set(c, "parallel.pipeline.schedule", "--num-layers-per-virtual-pipeline-stage",
                    lv, "interleaved");
        import__set(c, "parallel.pipeline.virtual_stages",
                    "--num-layers-per-virtual-pipeline-stage", lv, "%lld", layers / (pp * per));
    }
    if (rc)
        return rc;
    if ((v = import__get(c, "sequence-parallel")))
        import__set(c, "parallel.sp", "--sequence-parallel", v, "true");
    if ((v = import__get(c, "use-distributed-optimizer")))
        import__set(c, "parallel.zero", "--use-distributed-optimizer", v, "1");
    /* Megatron's defaults when a flag is absent: no overlap, biases, tied embeddings */
    v = import__get(c, "overlap-grad-reduce");
    import__set(c, "parallel.ddp.overlap", v ? "--overlap-grad-reduce" : "--overlap-grad-reduce "
                "absent (Megatron's default)", v, v ? "true" : "false");
    if ((v = import__get(c, "overlap-param-gather")))
        import__set(c, "parallel.ddp.overlap_param_gather", "--overlap-param-gather", v, "true");
    if ((v = import__get(c, "tp-comm-overlap")))
        import__set(c, "parallel.tp_comm_overlap", "--tp-comm-overlap", v, "true");
    if ((v = import__get(c, "bf16")))
        import__set(c, "training.precision", "--bf16", v, "bf16");
    else if ((v = import__get(c, "fp16")))
        import__set(c, "training.precision", "--fp16", v, "fp16");
    /* the gradients' dtype: with --bf16 Megatron accumulates and reduces them in fp32
     * (arguments.py turns accumulate_allreduce_grads_in_fp32 on) unless
     * --grad-reduce-in-bf16; with --fp16 in fp16 unless --accumulate-allreduce-grads-in-fp32 */
    if ((v = import__get(c, "grad-reduce-in-bf16")))
        import__set(c, "training.grad_dtype", "--grad-reduce-in-bf16", v, "bf16");
    else if ((v = import__get(c, "accumulate-allreduce-grads-in-fp32")))
        import__set(c, "training.grad_dtype", "--accumulate-allreduce-grads-in-fp32", v, "fp32");
    else if ((v = import__get(c, "bf16")))
        import__set(c, "training.grad_dtype", "--bf16 (Megatron then accumulates and reduces "
                    "gradients in fp32)", v, "fp32");
    if ((v = import__get(c, "fp8-format")))
        import__set(c, "training.precision", "--fp8-format", v, "fp8");
    /* --fp8-recipe: delayed (Megatron's default) or tensorwise (TE's current scaling); the
     * block-scaled ones are not modelled */
    if (!rc && import__get(c, "fp8-format") && (v = import__get(c, "fp8-recipe"))) {
        if (import__text(v, "delayed") || import__text(v, "tensorwise"))
            import__set(c, "training.fp8_recipe", "--fp8-recipe", v, "%s",
                        import__text(v, "delayed") ? "delayed" : "current");
        else
            rc = import__error(c, v, "--fp8-recipe: '%s': stepsim models delayed and tensorwise "
                               "(current) scaling, not block-scaled fp8 (mxfp8, blockwise)",
                               v->text);
    }
    const input_ynode *rg = import__get(c, "recompute-granularity");
    const input_ynode *rm = import__get(c, "recompute-method");
    const input_ynode *rn = import__get(c, "recompute-num-layers");
    if (rg) {
        if (!import__text(rg, "full") && !import__text(rg, "selective"))
            return import__error(c, rg, "--recompute-granularity '%s' is not full or selective",
                                 rg->text);
        if (import__text(rg, "full") && import__text(rm, "block"))
            return import__error(c, rm, "--recompute-method block (the first layers of each "
                                 "stage) is not modelled yet: stepsim recomputes every k-th "
                                 "layer (training.recompute_every)");
        import__set(c, "training.recompute", "--recompute-granularity", rg, "%s",
                    import__text(rg, "full") ? "full" : "selective");
        if (import__text(rg, "full") && rn) /* uniform: groups of n layers, each recomputed */
            import__unmapped(c, "recompute-num-layers", "uniform groups: stepsim recomputes "
                                                         "each layer");
    } else if ((v = import__get(c, "checkpoint-activations"))) {
        /* the old spelling (Megatron-LM 2021, Megatron-DeepSpeed): every layer from its input */
        import__set(c, "training.recompute", "--checkpoint-activations", v, "full");
    }
    /* the model */
    bool gqa = import__get(c, "group-query-attention") != NULL;
    const input_ynode *qg = import__get(c, "num-query-groups");
    long long groups;
    if (qg && gqa && !(rc = import__int(c, qg, "--num-query-groups", &groups)))
        import__set(c, "model.kv_heads", "--num-query-groups", qg, "%lld", groups);
    if (rc)
        return rc;
    import__set(c, "model.name", "megatron arguments", NULL, "megatron-gpt");
    import__set(c, "model.qkv_fused", "Megatron's linear_qkv (one tensor)", NULL, "true");
    v = import__get(c, "swiglu");
    import__set(c, "model.activation", v ? "--swiglu" : "--swiglu absent", v, v ? "swiglu" : "gelu");
    long long h = 0;
    if (!import__get(c, "ffn-hidden-size") && import__get(c, "hidden-size") &&
        !import__int(c, import__get(c, "hidden-size"), "--hidden-size", &h))
        import__set(c, "model.ffn", "4 x --hidden-size (Megatron's default)",
                    import__get(c, "hidden-size"), "%lld", v ? 8 * h / 3 / 64 * 64 : 4 * h);
    v = import__get(c, "normalization");
    import__set(c, "model.norm", v ? "--normalization" : "--normalization absent", v, "%s",
                import__text(v, "RMSNorm") ? "rmsnorm" : "layernorm");
    v = import__get(c, "position-embedding-type");
    /* Megatron-LM's rope and learned_absolute; Megatron-DeepSpeed's rotary, absolute, alibi */
    bool rope = import__text(v, "rope") || import__text(v, "rotary");
    if (v && !rope && !import__text(v, "alibi") && !import__text(v, "learned_absolute") &&
        !import__text(v, "absolute"))
        return import__error(c, v, "--position-embedding-type '%s': stepsim models rope "
                             "(rotary), learned_absolute (absolute) and alibi", v->text);
    const char *pos = rope ? "rope" : import__text(v, "alibi") ? "alibi" : "learned";
    import__set(c, "model.position", v ? "--position-embedding-type" : "learned_absolute "
                "(Megatron's default)", v, "%s", pos);
    long long rows;
    if (!strcmp(pos, "learned") && (v = import__get(c, "max-position-embeddings")) &&
        !(rc = import__int(c, v, "--max-position-embeddings", &rows)))
        import__set(c, "model.max_seq_len", "--max-position-embeddings", v, "%lld", rows);
    if (rc)
        return rc;
    v = import__get(c, "untie-embeddings-and-output-weights");
    import__set(c, "model.tied_embeddings", v ? "--untie-embeddings-and-output-weights"
                                               : "tied (Megatron's default)", v,
                v ? "false" : "true");
    v = import__get(c, "disable-bias-linear");
    import__set(c, "model.bias", v ? "--disable-bias-linear" : "biases (Megatron's default)", v,
                v ? "false" : "true");
    const input_ynode *ad = import__get(c, "attention-dropout");
    const input_ynode *hd = import__get(c, "hidden-dropout");
    double rate[2] = {0.1, 0.1};
    const input_ynode *given[2] = {ad, hd};
    for (int k = 0; k < 2; k++) {
        char *end = NULL;
        if (given[k])
            rate[k] = strtod(given[k]->text, &end);
        if (given[k] && (end == given[k]->text || *end || !(rate[k] >= 0 && rate[k] < 1)))
            return import__error(c, given[k], "--%s: '%s' is not a rate in [0, 1)",
                                 k ? "hidden-dropout" : "attention-dropout", given[k]->text);
    }
    if (ad && hd && rate[0] != rate[1])
        return import__error(c, hd, "--hidden-dropout %s differs from --attention-dropout %s, "
                             "and stepsim has one rate (model.dropout)", hd->text, ad->text);
    import__set(c, "model.dropout", ad ? "--attention-dropout" : hd ? "--hidden-dropout"
                                                                 : "0.1 (Megatron's default)",
                ad ? ad : hd, "%.15g", ad ? rate[0] : rate[1]);
    /* the vocabulary: given, or GPT-2's BPE tokenizer's 50,257 */
    const input_ynode *vf = import__get(c, "vocab-file");
    const input_ynode *tt = import__get(c, "tokenizer-type");
    if (!import__get(c, "vocab-size") &&
        ((vf && strstr(vf->text, "gpt2-vocab")) || import__text(tt, "GPT2BPETokenizer")))
        import__set(c, "model.vocab", vf ? "--vocab-file (GPT-2 BPE)" : "--tokenizer-type",
                    vf ? vf : tt, "50257");
    if ((v = import__get(c, "use-flash-attn")))
        import__set(c, "training.flash_attention", "--use-flash-attn", v, "true");
    if ((v = import__get(c, "embed-layernorm"))) /* Megatron-DeepSpeed's (BLOOM) */
        import__set(c, "model.embed_norm", "--embed-layernorm", v, "true");
    if (import__get(c, "num-experts"))
        import__set(c, "model.moe.dense_layers", "--num-experts (every layer MoE)", NULL, "0");
    static const char *const why[] = {
        "train-iters", "the run's length (training.tokens)", "lr", "hyper-parameter",
        "min-lr", "hyper-parameter", "lr-decay-style", "hyper-parameter",
        "lr-decay-iters", "hyper-parameter", "lr-warmup-fraction", "hyper-parameter",
        "lr-warmup-iters", "hyper-parameter", "weight-decay", "hyper-parameter",
        "clip-grad", "numerics only", "adam-beta1", "hyper-parameter",
        "adam-beta2", "hyper-parameter", "init-method-std", "hyper-parameter",
        "merge-file", "data", "data-path", "data", "split", "data", "save", "checkpointing",
        "load", "checkpointing", "save-interval", "checkpointing", "eval-interval", "evaluation",
        "eval-iters", "evaluation", "log-interval", "logging", "tensorboard-dir", "logging",
        "distributed-backend", "NCCL assumed", "seed", "no effect", "loss-scale", "numerics",
        "initial-loss-scale", "numerics", "hysteresis", "numerics",
        "no-masked-softmax-fusion", "kernel fusion not modelled",
        "no-bias-gelu-fusion", "kernel fusion not modelled",
        "no-gradient-accumulation-fusion", "kernel fusion not modelled",
        "DDP-impl", "Megatron's local DDP", "checkpoint-activations",
        "with --recompute-granularity, which says the same",
        "max-position-embeddings", "RoPE and ALiBi have no position table",
        NULL};
    import__list_unused(c, why);
    return 0;
}

int import__translate(input_framework fw, import_ctx *c)
{
    switch (fw) {
    case INPUT_FW_DEEPSPEED: return deepspeed(c);
    case INPUT_FW_ACCELERATE: return accelerate(c);
    case INPUT_FW_TORCHTITAN: return torchtitan(c);
    case INPUT_FW_MEGATRON: return megatron(c);
    default: break;
    }
    SIM_ASSERT(false, "framework %d", (int)fw);
    return SIM_EINVAL;
}
