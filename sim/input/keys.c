/* Key tables of the scenario format (docs/scenario-format.md): scenario, training, parallel,
 * simulation, collectives, topology (the explicit form's lists are read in explicit.c), GPU catalog
 * entry and model, plus the custom readers for the keys that are structured lists. Defaults come
 * from plan_scenario_defaults and input__scenario_prefill (validate.c); docs/scenario-format.md
 * documents every key. */
#include "core/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "input/keys.h"

/* INPUT_K_ENUM stores an int: every enum filled through the tables must be int-sized. */
_Static_assert(sizeof(hw_dtype) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_coll_algo) == sizeof(int), "enum size");
_Static_assert(sizeof(model_recompute) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_attn_kernel) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_cross_entropy) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_norm_kernel) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_grad_accum) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_fp8_recipe) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_sp_impl) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_intra_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_fabric_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_nvlink_shape) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_dev_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(hw_link_class) == sizeof(int), "enum size");
_Static_assert(sizeof(plan_group_class) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_time) == sizeof(int64_t), "time size");

/* ---------------------------------------------------------------------------------------- */
/* Enumerations                                                                             */

static const input_enum_name precision_names[] = {
    {"bf16", HW_DTYPE_BF16}, {"fp16", HW_DTYPE_FP16}, {"fp8", HW_DTYPE_FP8}, {NULL, 0}};
static const input_enum_name master_names[] = {
    {"fp32", PLAN_MASTER_FP32}, {"none", PLAN_MASTER_NONE}, {NULL, 0}};
static const input_enum_name grad_dtype_names[] = {
    {"bf16", HW_DTYPE_BF16}, {"fp32", HW_DTYPE_FP32}, {NULL, 0}};
static const input_enum_name grad_accum_names[] = {
    {"fused", PLAN_GRAD_ACCUM_FUSED}, {"cast_add", PLAN_GRAD_ACCUM_CAST_ADD}, {NULL, 0}};
static const input_enum_name optimizer_names[] = {
    {"adam", PLAN_OPT_ADAM}, {"sgd", PLAN_OPT_SGD}, {NULL, 0}};
static const input_enum_name state_names[] = {
    {"fp32", PLAN_STATE_FP32}, {"bf16", PLAN_STATE_BF16}, {"int8", PLAN_STATE_INT8}, {NULL, 0}};
static const input_enum_name recompute_names[] = {{"none", MODEL_RECOMPUTE_NONE},
                                               {"selective", MODEL_RECOMPUTE_SELECTIVE},
                                               {"full", MODEL_RECOMPUTE_FULL},
                                               {"op", MODEL_RECOMPUTE_OP},
                                               {NULL, 0}};
static const input_enum_name attn_kernel_names[] = {{"fa2", HW_ATTN_KERNEL_FA2},
                                                 {"fa3", HW_ATTN_KERNEL_FA3},
                                                 {"cudnn", HW_ATTN_KERNEL_CUDNN},
                                                 {"fa1", HW_ATTN_KERNEL_FA1},
                                                 {"fa_triton", HW_ATTN_KERNEL_FA_TRITON},
                                                 {NULL, 0}};
static const input_enum_name train_attn_kernel_names[] = {{"default", HW_ATTN_KERNEL_UNNAMED},
                                                       {"fa2", HW_ATTN_KERNEL_FA2},
                                                       {"fa3", HW_ATTN_KERNEL_FA3},
                                                       {"cudnn", HW_ATTN_KERNEL_CUDNN},
                                                       {"fa1", HW_ATTN_KERNEL_FA1},
                                                       {"fa_triton", HW_ATTN_KERNEL_FA_TRITON},
                                                       {NULL, 0}};
static const input_enum_name fp8_recipe_names[] = {{"delayed", PLAN_FP8_DELAYED},
                                                {"current", PLAN_FP8_CURRENT},
                                                {NULL, 0}};
static const input_enum_name norm_kernel_names[] = {{"default", PLAN_NORM_DEFAULT},
                                                 {"composite", PLAN_NORM_COMPOSITE},
                                                 {"fused", PLAN_NORM_FUSED},
                                                 {NULL, 0}};
static const input_enum_name ce_names[] = {{"vocab_parallel", PLAN_CE_VOCAB_PARALLEL},
                                        {"pytorch", PLAN_CE_PYTORCH},
                                        {"compiled", PLAN_CE_COMPILED},
                                        {NULL, 0}};
static const input_enum_name sp_impl_names[] = {
    {"megatron", PLAN_SP_MEGATRON}, {"dtensor", PLAN_SP_DTENSOR}, {NULL, 0}};
static const input_enum_name finetune_names[] = {
    {"full", PLAN_FT_FULL}, {"lora", PLAN_FT_LORA}, {"qlora", PLAN_FT_QLORA}, {NULL, 0}};
static const input_enum_name target_names[] = {{"q", 0},  {"k", 1},    {"v", 2},    {"o", 3},
                                            {"gate", 4}, {"up", 5}, {"down", 6}, {NULL, 0}};
static const input_enum_name schedule_names[] = {{"gpipe", PLAN_SCHED_GPIPE},
                                              {"1f1b", PLAN_SCHED_1F1B},
                                              {"interleaved", PLAN_SCHED_INTERLEAVED},
                                              {"zb-h1", PLAN_SCHED_ZB_H1},
                                              {"dualpipe", PLAN_SCHED_DUALPIPE},
                                              {"zbv", PLAN_SCHED_ZBV},
                                              {NULL, 0}};
static const input_enum_name fsdp_impl_names[] = {{"fsdp2", PLAN_FSDP2},
                                                {"fsdp1", PLAN_FSDP1},
                                                {"deepspeed", PLAN_DEEPSPEED},
                                                {NULL, 0}};
static const input_enum_name offload_names[] = {
    {"none", PLAN_OFFLOAD_NONE}, {"cpu", PLAN_OFFLOAD_CPU}, {"nvme", PLAN_OFFLOAD_NVME}, {NULL, 0}};
static const input_enum_name act_offload_names[] = {
    {"none", PLAN_OFFLOAD_NONE}, {"cpu", PLAN_OFFLOAD_CPU}, {NULL, 0}};
static const input_enum_name group_names[] = {{"tp", PLAN_GROUP_TP}, {"cp", PLAN_GROUP_CP},
                                           {"ep", PLAN_GROUP_EP}, {"dp", PLAN_GROUP_DP},
                                           {"pp", PLAN_GROUP_PP}, {NULL, 0}};
static const input_enum_name symmetry_names[] = {
    {"none", PLAN_SYMMETRY_NONE}, {"dp", PLAN_SYMMETRY_DP}, {NULL, 0}};
static const input_enum_name symcoll_names[] = {
    {"estimate", PLAN_SYMCOLL_ESTIMATE}, {"flows", PLAN_SYMCOLL_FLOWS}, {NULL, 0}};
static const input_enum_name steady_names[] = {
    {"auto", PLAN_STEADY_AUTO}, {"off", PLAN_STEADY_OFF}, {NULL, 0}};
static const input_enum_name coll_names[] = {{"auto", PLAN_COLL_AUTO},
                                          {"ring", PLAN_COLL_RING},
                                          {"tree", PLAN_COLL_TREE},
                                          {"hd", PLAN_COLL_HD},
                                          {"direct", PLAN_COLL_DIRECT},
                                          {"hierarchical", PLAN_COLL_HIERARCHICAL},
                                          {"nvls", PLAN_COLL_NVLS},
                                          {"pairwise", PLAN_COLL_PAIRWISE},
                                          {NULL, 0}};
static const input_enum_name intra_names[] = {{"nvswitch", HW_INTRA_NVSWITCH},
                                           {"nvlink", HW_INTRA_NVLINK},
                                           {"pcie", HW_INTRA_PCIE},
                                           {NULL, 0}};
static const input_enum_name shape_names[] = {
    {"mesh", HW_NVLINK_MESH}, {"ring", HW_NVLINK_RING}, {NULL, 0}};
const input_enum_name input__dev_kind_names[] = {{"gpu", HW_DEV_GPU},
                                           {"nvswitch", HW_DEV_NVSWITCH},
                                           {"pcie_switch", HW_DEV_PCIE_SWITCH},
                                           {"cpu", HW_DEV_CPU},
                                           {"host_memory", HW_DEV_HOST_MEMORY},
                                           {"nic", HW_DEV_NIC},
                                           {"switch", HW_DEV_SWITCH},
                                           {"storage", HW_DEV_STORAGE},
                                           {NULL, 0}};
const input_enum_name input__link_class_names[] = {{"nvlink", HW_LINK_NVLINK},
                                             {"pcie", HW_LINK_PCIE},
                                             {"ib", HW_LINK_IB},
                                             {"ethernet", HW_LINK_ETHERNET},
                                             {"cpu", HW_LINK_CPU},
                                             {NULL, 0}};
static const input_enum_name fabric_names[] = {{"fat-tree", HW_FABRIC_FAT_TREE},
                                            {"rail-optimized", HW_FABRIC_RAIL_OPTIMIZED},
                                            {"single-switch", HW_FABRIC_SINGLE_SWITCH},
                                            {NULL, 0}};
static const input_enum_name activation_names[] = {
    {"swiglu", MODEL_ACT_SWIGLU}, {"gelu", MODEL_ACT_GELU}, {NULL, 0}};
static const input_enum_name norm_names[] = {
    {"rmsnorm", MODEL_NORM_RMSNORM}, {"layernorm", MODEL_NORM_LAYERNORM}, {NULL, 0}};
static const input_enum_name position_names[] = {
    {"rope", MODEL_POS_ROPE}, {"learned", MODEL_POS_LEARNED}, {"alibi", MODEL_POS_ALIBI},
    {NULL, 0}};
static const input_enum_name attention_names[] = {
    {"mha", MODEL_ATTN_MHA}, {"mla", MODEL_ATTN_MLA}, {NULL, 0}};

/* ---------------------------------------------------------------------------------------- */
/* Custom keys                                                                              */

const input_ynode *input__expect_list(input_schema_ctx *ctx, const input_ynode *v,
                                      const char *example, int *rc)
{
    if (v->kind == INPUT_YSEQ) {
        *rc = 0;
        return v;
    }
    *rc = input_schema_error(
        ctx, SIM_EINVAL, v, "%s: expected a list such as %s, got %s%s%s%s", ctx->path, example,
        input_ykind_name(v->kind), v->kind == INPUT_YSCALAR ? " '" : "",
        v->kind == INPUT_YSCALAR ? v->text : "", v->kind == INPUT_YSCALAR ? "'" : "");
    return NULL;
}

/* training.finetune.targets: a list of projection names, each at most once. */
static int targets_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    (void)key;
    plan_training *t = base;
    int rc;
    if (!input__expect_list(ctx, v, "[q, k, v, o]", &rc))
        return rc;
    if (v->n == 0)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: name at least one projection",
                                  ctx->path);
    if (v->n > PLAN_TARGETS_MAX)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: at most %d targets", ctx->path,
                               PLAN_TARGETS_MAX);
    t->finetune.n_targets = 0;
    for (size_t i = 0; i < v->n; i++) {
        char what[INPUT_SCHEMA_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s[%zu]", ctx->path, i);
        int id;
        if ((rc = input_schema_enum(ctx, what, v->items[i], target_names, &id)))
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(v->items[j]->text, v->items[i]->text) == 0)
                return input_schema_error(ctx, SIM_EINVAL, v->items[i], "%s: '%s' is listed twice",
                                       ctx->path, v->items[i]->text);
        snprintf(t->finetune.targets[i], sizeof t->finetune.targets[i], "%s", v->items[i]->text);
        t->finetune.n_targets++;
    }
    return 0;
}

/* parallel.pipeline.stage_layers: `auto` or a list of layer counts (>= 1) per stage. */
static int stage_layers_fn(const input_key *key, const input_ynode *v, void *base,
                           input_schema_ctx *ctx)
{
    (void)key;
    plan_parallel *p = base;
    if (v->kind == INPUT_YSCALAR && !v->quoted && strcmp(v->text, "auto") == 0) {
        p->pipeline.n_stage_layers = 0;
        return 0;
    }
    if (v->kind == INPUT_YSCALAR)
        return input_schema_error(ctx, SIM_EINVAL, v,
                               "%s: expected auto or a list of layer counts such as [8, 8], got "
                               "'%s'",
                               ctx->path, v->text);
    int rc;
    if (!input__expect_list(ctx, v, "[8, 8]", &rc))
        return rc;
    if (v->n == 0 || v->n > PLAN_STAGES_MAX)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: expected 1 to %d stages, got %zu",
                               ctx->path, PLAN_STAGES_MAX, v->n);
    for (size_t i = 0; i < v->n; i++) {
        char what[INPUT_SCHEMA_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s[%zu]", ctx->path, i);
        int64_t x;
        if ((rc = input_schema_int(ctx, what, v->items[i], &x)))
            return rc;
        if (x < 1 || x > 1000000)
            return input_schema_error(ctx, SIM_EINVAL, v->items[i],
                                      "%s: must be at least 1 (got %s)", what, v->items[i]->text);
        p->pipeline.stage_layers[i] = (int)x;
    }
    p->pipeline.n_stage_layers = (int)v->n;
    return 0;
}

/* node.storage.kind: nvme, the one kind there is; naming it gives the node its drives (one
 * unless `count` says otherwise). */
static int storage_kind_fn(const input_key *key, const input_ynode *v, void *base,
                           input_schema_ctx *ctx)
{
    (void)key;
    hw_topology_spec *t = base;
    static const input_enum_name kinds[] = {{"nvme", 1}, {NULL, 0}};
    int kind, rc = input_schema_enum(ctx, ctx->path, v, kinds, &kind);
    if (rc)
        return rc;
    if (t->storage.count == 0)
        t->storage.count = 1;
    return 0;
}

/* parallel.order: a permutation of the five group names, inner to outer. */
static int order_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    (void)key;
    plan_parallel *p = base;
    int rc;
    if (!input__expect_list(ctx, v, "[tp, cp, ep, dp, pp]", &rc))
        return rc;
    if (v->n != PLAN_GROUP_COUNT) {
        input_schema_error(ctx, SIM_EINVAL, v, "%s: expected all of tp, cp, ep, dp, pp once each, "
                                            "got %zu names",
                        ctx->path, v->n);
        sim_diag_hint(ctx->diag, "the default is [tp, cp, ep, dp, pp] (inner to outer)");
        return SIM_EINVAL;
    }
    unsigned seen = 0;
    for (size_t i = 0; i < v->n; i++) {
        char what[INPUT_SCHEMA_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s[%zu]", ctx->path, i);
        int g;
        if ((rc = input_schema_enum(ctx, what, v->items[i], group_names, &g)))
            return rc;
        if (seen & (1u << g))
            return input_schema_error(ctx, SIM_EINVAL, v->items[i], "%s: '%s' is listed twice",
                                   ctx->path, v->items[i]->text);
        seen |= 1u << g;
        p->order[i] = (plan_group_class)g;
    }
    return 0;
}

/* GPU efficiency curves: [[size, efficiency], ...], sizes with units of key->unit, strictly
 * increasing, efficiencies in (0, 1]. */
static int curve_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    hw_curve *c = (hw_curve *)((char *)base + key->offset);
    /* x is a quantity of key->unit, or a plain count of tokens with INPUT_UNIT_KIND_COUNT */
    bool plain = key->unit == INPUT_UNIT_KIND_COUNT;
    char example[64];
    snprintf(example, sizeof example, "[[%s, 0.5]]",
             plain ? "4096" : input_unit_kind_example(key->unit));
    int rc;
    if (!input__expect_list(ctx, v, example, &rc))
        return rc;
    if (v->n == 0 || v->n > HW_CURVE_MAX)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: expected 1 to %d points, got %zu",
                               ctx->path, HW_CURVE_MAX, v->n);
    for (size_t i = 0; i < v->n; i++) {
        const input_ynode *pt = v->items[i];
        char what[INPUT_SCHEMA_PATH_MAX + 32];
        snprintf(what, sizeof what, "%s[%zu]", ctx->path, i);
        if (pt->kind != INPUT_YSEQ || pt->n != 2)
            return input_schema_error(ctx, SIM_EINVAL, pt,
                                   "%s: expected a pair [%s, efficiency] such as %s", what,
                                   plain ? "sequence length" : input_unit_kind_name(key->unit),
                                   example + 1);
        double x, y;
        if ((rc = plain ? input_schema_float(ctx, what, pt->items[0], &x)
                        : input_schema_quantity(ctx, what, pt->items[0], key->unit, &x)) ||
            (rc = input_schema_float(ctx, what, pt->items[1], &y)))
            return rc;
        if (!(x > 0))
            return input_schema_error(ctx, SIM_EINVAL, pt->items[0],
                                      "%s: must be positive (got %s)", what, pt->items[0]->text);
        if (i > 0 && !(x > c->x[i - 1]))
            return input_schema_error(ctx, SIM_EINVAL, pt->items[0],
                                   "%s: sizes must be strictly increasing (%s is not above the "
                                   "previous point)",
                                   what, pt->items[0]->text);
        double ymax = key->max > 0 ? key->max : 1; /* factors may exceed 1 */
        if (!(y > 0 && y <= ymax))
            return input_schema_error(ctx, SIM_EINVAL, pt->items[1],
                                   "%s: %s must be in (0, %g] (got %s)", what,
                                   key->max > 0 ? "factor" : "efficiency", ymax,
                                   pt->items[1]->text);
        c->x[i] = x;
        c->y[i] = y;
    }
    c->n = (int)v->n;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Tables                                                                                   */

#define MAP(name_, what_, keys_) \
    static const input_map name_ = {.what = what_, .keys = keys_, .n_keys = SIM_ARRAY_LEN(keys_)}

#define POSITIVE (INPUT_KEY_MIN_EXCL), .min = 0
#define NONNEG (INPUT_KEY_MIN), .min = 0
#define AT_LEAST_1 (INPUT_KEY_MIN), .min = 1
#define DEGREE (INPUT_KEY_MIN | INPUT_KEY_MAX), .min = 1, .max = 1048576
/* Sizes: the largest value stepsim simulates (docs/scenario-format.md, "Limits"), far beyond
 * any model trained (Llama 3.1 405B: 126 layers, hidden 16384, vocab 128256, 131072-token
 * context; DeepSeek-V3: 256 experts); they keep every product of sizes inside int64. */
#define SIZE_UP_TO(max_) (INPUT_KEY_MIN_EXCL | INPUT_KEY_MAX), .min = 0, .max = (max_)
#define COUNT_UP_TO(max_) (INPUT_KEY_MIN | INPUT_KEY_MAX), .min = 0, .max = (max_)
#define MAX_TOKENS 16777216.0  /* 2^24: seq_len, micro_batch, max_seq_len */
#define MAX_WIDTH 1048576.0    /* 2^20: hidden, ffn, ranks of low-rank projections */
#define MAX_COUNT 65536.0      /* 2^16: layers, heads, head_dim, experts */

#define TR(m) offsetof(plan_training, m)
static const input_key finetune_keys[] = {
    {.name = "method", .type = INPUT_K_ENUM, .offset = TR(finetune.method),
     .enums = finetune_names},
    {.name = "rank", .type = INPUT_K_INT, .offset = TR(finetune.rank), .flags = DEGREE},
    {.name = "targets", .type = INPUT_K_CUSTOM, .fn = targets_fn},
};
MAP(finetune_map, "finetune", finetune_keys);

static const input_key training_keys[] = {
    {.name = "seq_len", .type = INPUT_K_INT64, .offset = TR(seq_len),
     .flags = SIZE_UP_TO(MAX_TOKENS)},
    {.name = "global_batch", .type = INPUT_K_INT64, .offset = TR(global_batch), .flags = NONNEG},
    {.name = "micro_batch", .type = INPUT_K_INT64, .offset = TR(micro_batch),
     .flags = SIZE_UP_TO(MAX_TOKENS)},
    {.name = "precision", .type = INPUT_K_ENUM, .offset = TR(precision), .enums = precision_names},
    {.name = "master_weights", .type = INPUT_K_ENUM, .offset = TR(master_weights),
     .enums = master_names},
    {.name = "grad_dtype", .type = INPUT_K_ENUM, .offset = TR(grad_dtype),
     .enums = grad_dtype_names},
    {.name = "grad_accumulation", .type = INPUT_K_ENUM, .offset = TR(grad_accumulation),
     .enums = grad_accum_names},
    {.name = "optimizer", .type = INPUT_K_ENUM, .offset = TR(optimizer), .enums = optimizer_names},
    {.name = "optimizer_state", .type = INPUT_K_ENUM, .offset = TR(optimizer_state),
     .enums = state_names},
    {.name = "recompute", .type = INPUT_K_ENUM, .offset = TR(recompute), .enums = recompute_names},
    {.name = "recompute_every", .type = INPUT_K_INT, .offset = TR(recompute_every),
     .flags = (INPUT_KEY_MIN | INPUT_KEY_MAX), .min = 1, .max = MAX_COUNT},
    {.name = "recompute_early_stop", .type = INPUT_K_BOOL, .offset = TR(recompute_early_stop)},
    {.name = "flash_attention", .type = INPUT_K_BOOL, .offset = TR(flash_attention)},
    {.name = "compile", .type = INPUT_K_BOOL, .offset = TR(compile)},
    {.name = "norm_kernel", .type = INPUT_K_ENUM, .offset = TR(norm_kernel),
     .enums = norm_kernel_names},
    {.name = "fp8_recipe", .type = INPUT_K_ENUM, .offset = TR(fp8_recipe),
     .enums = fp8_recipe_names},
    {.name = "cross_entropy", .type = INPUT_K_ENUM, .offset = TR(cross_entropy),
     .enums = ce_names},
    {.name = "attention_kernel", .type = INPUT_K_ENUM, .offset = TR(attention_kernel),
     .enums = train_attn_kernel_names},
    {.name = "finetune", .type = INPUT_K_MAP,
     .map = &finetune_map}, /* anonymous struct: offset 0 */
    {.name = "tokens", .type = INPUT_K_FLOAT, .offset = TR(tokens), .flags = NONNEG},
    {.name = "moe_routing_skew", .type = INPUT_K_FLOAT, .offset = TR(moe_routing_skew),
     .flags = NONNEG},
    {.name = "moe_capacity_factor", .type = INPUT_K_FLOAT, .offset = TR(moe_capacity_factor),
     .flags = NONNEG},
};
MAP(training_map, "training", training_keys);

#define PA(m) offsetof(plan_parallel, m)
static const input_key fsdp_keys[] = {
    {.name = "reshard_after_forward", .type = INPUT_K_BOOL,
     .offset = PA(fsdp.reshard_after_forward)},
    {.name = "prefetch", .type = INPUT_K_INT, .offset = PA(fsdp.prefetch),
     .flags = COUNT_UP_TO(MAX_COUNT)},
    {.name = "hybrid_shard", .type = INPUT_K_BOOL, .offset = PA(fsdp.hybrid_shard)},
    {.name = "implementation", .type = INPUT_K_ENUM, .offset = PA(fsdp.implementation),
     .enums = fsdp_impl_names},
    {.name = "limit_all_gathers", .type = INPUT_K_BOOL, .offset = PA(fsdp.limit_all_gathers)},
    {.name = "prefetch_bucket", .type = INPUT_K_FLOAT, .offset = PA(fsdp.prefetch_bucket),
     .flags = COUNT_UP_TO(1e15)},
    {.name = "reduce_bucket", .type = INPUT_K_FLOAT, .offset = PA(fsdp.reduce_bucket),
     .flags = SIZE_UP_TO(1e15)},
    {.name = "persistence_threshold", .type = INPUT_K_FLOAT,
     .offset = PA(fsdp.persistence_threshold), .flags = COUNT_UP_TO(1e15)},
    {.name = "max_reuse_distance", .type = INPUT_K_FLOAT, .offset = PA(fsdp.max_reuse_distance),
     .flags = COUNT_UP_TO(1e15)},
    {.name = "sub_group_size", .type = INPUT_K_FLOAT, .offset = PA(fsdp.sub_group_size),
     .flags = SIZE_UP_TO(1e15)},
    {.name = "sync_fetch", .type = INPUT_K_BOOL, .offset = PA(fsdp.sync_fetch)},
    {.name = "list_collectives", .type = INPUT_K_BOOL, .offset = PA(fsdp.list_collectives)},
};
MAP(fsdp_map, "fsdp", fsdp_keys);

static const input_key ddp_keys[] = {
    {.name = "bucket", .type = INPUT_K_BYTES, .offset = PA(ddp.bucket_bytes), .flags = POSITIVE},
    {.name = "overlap", .type = INPUT_K_BOOL, .offset = PA(ddp.overlap)},
    {.name = "overlap_param_gather", .type = INPUT_K_BOOL, .offset = PA(ddp.overlap_param_gather)},
};
MAP(ddp_map, "ddp", ddp_keys);

static const input_key pipeline_keys[] = {
    {.name = "schedule", .type = INPUT_K_ENUM, .offset = PA(pipeline.schedule),
     .enums = schedule_names},
    {.name = "virtual_stages", .type = INPUT_K_INT, .offset = PA(pipeline.virtual_stages),
     .flags = DEGREE},
    {.name = "stage_layers", .type = INPUT_K_CUSTOM, .fn = stage_layers_fn},
};
MAP(pipeline_map, "pipeline", pipeline_keys);

static const input_key offload_keys[] = {
    {.name = "params", .type = INPUT_K_ENUM, .offset = PA(offload.params),
     .enums = offload_names},
    {.name = "optimizer", .type = INPUT_K_ENUM, .offset = PA(offload.optimizer),
     .enums = offload_names},
    {.name = "activations", .type = INPUT_K_ENUM, .offset = PA(offload.activations),
     .enums = act_offload_names},
};
MAP(offload_map, "offload", offload_keys);

static const input_key parallel_keys[] = {
    {.name = "dp", .type = INPUT_K_INT, .offset = PA(dp), .flags = DEGREE},
    {.name = "tp", .type = INPUT_K_INT, .offset = PA(tp), .flags = DEGREE},
    {.name = "pp", .type = INPUT_K_INT, .offset = PA(pp), .flags = DEGREE},
    {.name = "ep", .type = INPUT_K_INT, .offset = PA(ep), .flags = DEGREE},
    {.name = "cp", .type = INPUT_K_INT, .offset = PA(cp), .flags = DEGREE},
    {.name = "sp", .type = INPUT_K_BOOL, .offset = PA(sp)},
    {.name = "zero", .type = INPUT_K_INT, .offset = PA(zero),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX,
     .min = 0, .max = 3},
    {.name = "fsdp", .type = INPUT_K_MAP, .map = &fsdp_map},
    {.name = "ddp", .type = INPUT_K_MAP, .map = &ddp_map},
    {.name = "pipeline", .type = INPUT_K_MAP, .map = &pipeline_map},
    {.name = "tp_comm_overlap", .type = INPUT_K_BOOL, .offset = PA(tp_comm_overlap)},
    {.name = "tp_grad_overlap", .type = INPUT_K_BOOL, .offset = PA(tp_grad_overlap)},
    {.name = "sp_implementation", .type = INPUT_K_ENUM, .offset = PA(sp_implementation),
     .enums = sp_impl_names},
    {.name = "offload", .type = INPUT_K_MAP, .map = &offload_map},
    {.name = "order", .type = INPUT_K_CUSTOM, .fn = order_fn},
};
MAP(parallel_map, "parallel", parallel_keys);

#define SI(m) offsetof(plan_simulation, m)
static const input_key simulation_keys[] = {
    {.name = "steps", .type = INPUT_K_INT, .offset = SI(steps),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX,
     .min = 1, .max = 1000000},
    {.name = "seed", .type = INPUT_K_UINT64, .offset = SI(seed)},
    {.name = "timeline", .type = INPUT_K_BOOL, .offset = SI(timeline)},
    {.name = "symmetry", .type = INPUT_K_ENUM, .offset = SI(symmetry), .enums = symmetry_names},
    {.name = "symmetry_collectives", .type = INPUT_K_ENUM, .offset = SI(symmetry_collectives),
     .enums = symcoll_names},
    {.name = "steady_state", .type = INPUT_K_ENUM, .offset = SI(steady_state),
     .enums = steady_names},
    {.name = "jitter", .type = INPUT_K_FLOAT, .offset = SI(jitter),
     .flags = (INPUT_KEY_MIN | INPUT_KEY_MAX), .min = 0, .max = 10},
    {.name = "stragglers", .type = INPUT_K_CUSTOM, .fn = input__stragglers_fn},
};
MAP(simulation_map, "simulation", simulation_keys);

#define COLL(g) (size_t)(g) * sizeof(plan_coll_algo)
static const input_key collectives_keys[] = {
    {.name = "dp", .type = INPUT_K_ENUM, .offset = COLL(PLAN_GROUP_DP), .enums = coll_names},
    {.name = "tp", .type = INPUT_K_ENUM, .offset = COLL(PLAN_GROUP_TP), .enums = coll_names},
    {.name = "pp", .type = INPUT_K_ENUM, .offset = COLL(PLAN_GROUP_PP), .enums = coll_names},
    {.name = "ep", .type = INPUT_K_ENUM, .offset = COLL(PLAN_GROUP_EP), .enums = coll_names},
    {.name = "cp", .type = INPUT_K_ENUM, .offset = COLL(PLAN_GROUP_CP), .enums = coll_names},
};
MAP(collectives_map, "collectives", collectives_keys);

#define GPU(m) offsetof(hw_gpu_spec, m)
#define PEAK(d) GPU(peak_flops) + (size_t)(d) * sizeof(double)
static const input_key peak_keys[] = {
    {.name = "bf16", .type = INPUT_K_QUANTITY, .offset = PEAK(HW_DTYPE_BF16),
     .unit = INPUT_UNIT_FLOP_RATE, .flags = NONNEG},
    {.name = "fp16", .type = INPUT_K_QUANTITY, .offset = PEAK(HW_DTYPE_FP16),
     .unit = INPUT_UNIT_FLOP_RATE, .flags = NONNEG},
    {.name = "fp8", .type = INPUT_K_QUANTITY, .offset = PEAK(HW_DTYPE_FP8),
     .unit = INPUT_UNIT_FLOP_RATE,
     .flags = NONNEG},
    {.name = "tf32", .type = INPUT_K_QUANTITY, .offset = PEAK(HW_DTYPE_TF32),
     .unit = INPUT_UNIT_FLOP_RATE, .flags = NONNEG},
    {.name = "fp32", .type = INPUT_K_QUANTITY, .offset = PEAK(HW_DTYPE_FP32),
     .unit = INPUT_UNIT_FLOP_RATE, .flags = NONNEG},
};
MAP(peak_map, "peak", peak_keys);

/* Fused attention's rate by head dimension, a factor on the tables (attention_efficiency.
 * head_dim, or a kernel's): forward and backward. */
#define ATTN_HEAD_KEYS(field_)                                                                 \
    {.name = "forward", .type = INPUT_K_CUSTOM, .offset = GPU(field_[0]),                      \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn, .max = 2},                                  \
    {.name = "backward", .type = INPUT_K_CUSTOM, .offset = GPU(field_[1]),                     \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn, .max = 2},
static const input_key attn_head_keys[] = {ATTN_HEAD_KEYS(attn_head)};
static const input_key attn_fa2_head_keys[] = {ATTN_HEAD_KEYS(attn_alt_head[HW_ATTN_KERNEL_FA2])};
static const input_key attn_fa3_head_keys[] = {ATTN_HEAD_KEYS(attn_alt_head[HW_ATTN_KERNEL_FA3])};
static const input_key attn_cudnn_head_keys[] = {
    ATTN_HEAD_KEYS(attn_alt_head[HW_ATTN_KERNEL_CUDNN])};
MAP(attn_head_map, "head_dim", attn_head_keys);
MAP(attn_fa2_head_map, "head_dim", attn_fa2_head_keys);
MAP(attn_fa3_head_map, "head_dim", attn_fa3_head_keys);
MAP(attn_cudnn_head_map, "head_dim", attn_cudnn_head_keys);
static const input_key attn_fa1_head_keys[] = {ATTN_HEAD_KEYS(attn_alt_head[HW_ATTN_KERNEL_FA1])};
static const input_key attn_fa_triton_head_keys[] = {
    ATTN_HEAD_KEYS(attn_alt_head[HW_ATTN_KERNEL_FA_TRITON])};
MAP(attn_fa1_head_map, "head_dim", attn_fa1_head_keys);
MAP(attn_fa_triton_head_map, "head_dim", attn_fa_triton_head_keys);

/* Fused-attention efficiency by the sequence length each query attends over (tokens): the
 * four tables and the head-dim factor of attention_efficiency, or of one kernel of
 * attention_kernels (attention_kernels.fa2, ...). */
#define ATTN_TABLE_KEYS(tables_, head_map_)                                                    \
    {.name = "forward", .type = INPUT_K_CUSTOM, .offset = GPU(tables_[0]),                     \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn},                                           \
    {.name = "backward", .type = INPUT_K_CUSTOM, .offset = GPU(tables_[1]),                    \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn},                                           \
    {.name = "forward_unmasked", .type = INPUT_K_CUSTOM, .offset = GPU(tables_[2]),            \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn},                                           \
    {.name = "backward_unmasked", .type = INPUT_K_CUSTOM, .offset = GPU(tables_[3]),           \
     .unit = INPUT_UNIT_KIND_COUNT, .fn = curve_fn},                                           \
    {.name = "head_dim", .type = INPUT_K_MAP, .map = &(head_map_)}
static const input_key attn_eff_keys[] = {ATTN_TABLE_KEYS(attn_eff, attn_head_map)};
MAP(attn_eff_map, "attention_efficiency", attn_eff_keys);
static const input_key attn_fa2_keys[] = {
    ATTN_TABLE_KEYS(attn_alt[HW_ATTN_KERNEL_FA2], attn_fa2_head_map)};
static const input_key attn_fa3_keys[] = {
    ATTN_TABLE_KEYS(attn_alt[HW_ATTN_KERNEL_FA3], attn_fa3_head_map)};
static const input_key attn_cudnn_keys[] = {
    ATTN_TABLE_KEYS(attn_alt[HW_ATTN_KERNEL_CUDNN], attn_cudnn_head_map)};
MAP(attn_fa2_map, "fa2", attn_fa2_keys);
MAP(attn_fa3_map, "fa3", attn_fa3_keys);
MAP(attn_cudnn_map, "cudnn", attn_cudnn_keys);
static const input_key attn_fa1_keys[] = {
    ATTN_TABLE_KEYS(attn_alt[HW_ATTN_KERNEL_FA1], attn_fa1_head_map)};
static const input_key attn_fa_triton_keys[] = {
    ATTN_TABLE_KEYS(attn_alt[HW_ATTN_KERNEL_FA_TRITON], attn_fa_triton_head_map)};
MAP(attn_fa1_map, "fa1", attn_fa1_keys);
MAP(attn_fa_triton_map, "fa_triton", attn_fa_triton_keys);
static const input_key attn_kernels_keys[] = {
    {.name = "fa2", .type = INPUT_K_MAP, .map = &attn_fa2_map},
    {.name = "fa3", .type = INPUT_K_MAP, .map = &attn_fa3_map},
    {.name = "cudnn", .type = INPUT_K_MAP, .map = &attn_cudnn_map},
    {.name = "fa1", .type = INPUT_K_MAP, .map = &attn_fa1_map},
    {.name = "fa_triton", .type = INPUT_K_MAP, .map = &attn_fa_triton_map},
};
MAP(attn_kernels_map, "attention_kernels", attn_kernels_keys);

static const input_key staging_keys[] = {
    {.name = "latency", .type = INPUT_K_TIME, .offset = GPU(staging_latency_ps), .flags = NONNEG},
    {.name = "chunk", .type = INPUT_K_BYTES, .offset = GPU(staging_chunk_bytes),
     .flags = POSITIVE},
};
MAP(staging_map, "staging", staging_keys);

static const input_key gpu_keys[] = {
    {.name = "name", .type = INPUT_K_STRING, .offset = GPU(name),
     .size = sizeof(((hw_gpu_spec *)0)->name)},
    {.name = "memory", .type = INPUT_K_BYTES, .offset = GPU(memory_bytes),
     .flags = INPUT_KEY_REQUIRED | POSITIVE},
    {.name = "memory_bandwidth", .type = INPUT_K_QUANTITY, .offset = GPU(memory_bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = INPUT_KEY_REQUIRED | POSITIVE},
    {.name = "peak", .type = INPUT_K_MAP, .map = &peak_map, .flags = INPUT_KEY_REQUIRED},
    {.name = "matmul_efficiency", .type = INPUT_K_CUSTOM, .offset = GPU(matmul_eff),
     .unit = INPUT_UNIT_FLOPS, .fn = curve_fn},
    {.name = "matmul_efficiency_fp8", .type = INPUT_K_CUSTOM, .offset = GPU(matmul_eff_fp8),
     .unit = INPUT_UNIT_FLOPS, .fn = curve_fn},
    {.name = "matmul_k_overhead", .type = INPUT_K_FLOAT, .offset = GPU(matmul_k_overhead),
     .flags = NONNEG},
    {.name = "memory_efficiency", .type = INPUT_K_CUSTOM, .offset = GPU(memory_eff),
     .unit = INPUT_UNIT_BYTES, .fn = curve_fn},
    {.name = "memory_efficiency_eager", .type = INPUT_K_CUSTOM,
     .offset = GPU(memory_eff_eager), .unit = INPUT_UNIT_BYTES, .fn = curve_fn},
    {.name = "attention_efficiency", .type = INPUT_K_MAP, .map = &attn_eff_map},
    {.name = "attention_kernel", .type = INPUT_K_ENUM, .offset = GPU(attn_kernel),
     .enums = attn_kernel_names},
    {.name = "attention_kernels", .type = INPUT_K_MAP, .map = &attn_kernels_map},
    {.name = "launch_overhead", .type = INPUT_K_TIME, .offset = GPU(launch_overhead_ps),
     .flags = NONNEG},
    {.name = "comm_interference", .type = INPUT_K_FLOAT, .offset = GPU(comm_interference),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 0, .max = 1},
    {.name = "staging", .type = INPUT_K_MAP, .map = &staging_map},
};
MAP(gpu_map, "gpu", gpu_keys);

#define TO(m) offsetof(hw_topology_spec, m)
static const input_key intra_keys[] = {
    {.name = "kind", .type = INPUT_K_ENUM, .offset = TO(intra.kind), .enums = intra_names,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "bandwidth", .type = INPUT_K_QUANTITY, .offset = TO(intra.bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = POSITIVE},
    {.name = "latency", .type = INPUT_K_TIME, .offset = TO(intra.latency_ps), .flags = NONNEG},
    {.name = "sharp", .type = INPUT_K_BOOL, .offset = TO(intra.sharp)},
    {.name = "gen", .type = INPUT_K_INT, .offset = TO(intra.pcie_gen),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 6},
    {.name = "lanes", .type = INPUT_K_INT, .offset = TO(intra.pcie_lanes),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 32},
    {.name = "p2p", .type = INPUT_K_BOOL, .offset = TO(intra.p2p)},
    {.name = "shape", .type = INPUT_K_ENUM, .offset = TO(intra.shape), .enums = shape_names},
};
MAP(intra_map, "intra", intra_keys);

static const input_key pcie_keys[] = {
    {.name = "gen", .type = INPUT_K_INT, .offset = TO(pcie.gen),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX,
     .min = 1, .max = 6},
    {.name = "lanes", .type = INPUT_K_INT, .offset = TO(pcie.lanes),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 32},
    {.name = "switches", .type = INPUT_K_INT, .offset = TO(pcie.switches),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 0, .max = 256},
    {.name = "sockets", .type = INPUT_K_INT, .offset = TO(pcie.sockets),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 64},
    {.name = "switch_lanes", .type = INPUT_K_INT, .offset = TO(pcie.switch_lanes),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 32},
    {.name = "latency", .type = INPUT_K_TIME, .offset = TO(pcie.latency_ps), .flags = NONNEG},
};
MAP(pcie_map, "pcie", pcie_keys);

static const input_key launch_keys[] = {
    {.name = "eager", .type = INPUT_K_TIME, .offset = TO(host.launch_eager_ps), .flags = NONNEG},
    {.name = "compiled", .type = INPUT_K_TIME, .offset = TO(host.launch_compiled_ps),
     .flags = NONNEG},
};
MAP(launch_map, "launch", launch_keys);

static const input_key host_keys[] = {
    {.name = "memory_bandwidth", .type = INPUT_K_QUANTITY, .offset = TO(host.memory_bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = POSITIVE},
    {.name = "memory_efficiency", .type = INPUT_K_FLOAT, .offset = TO(host.memory_efficiency),
     .flags = INPUT_KEY_MIN_EXCL | INPUT_KEY_MAX, .min = 0, .max = 1},
    {.name = "socket_link", .type = INPUT_K_QUANTITY, .offset = TO(host.socket_link_bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = POSITIVE},
    {.name = "socket_link_latency", .type = INPUT_K_TIME, .offset = TO(host.socket_link_latency_ps),
     .flags = NONNEG},
    {.name = "memory", .type = INPUT_K_BYTES, .offset = TO(host.memory_bytes), .flags = POSITIVE},
    {.name = "launch", .type = INPUT_K_MAP, .map = &launch_map},
};
MAP(host_map, "host", host_keys);

static const input_key nics_keys[] = {
    {.name = "count", .type = INPUT_K_INT, .offset = TO(nics.count),
     .flags = INPUT_KEY_REQUIRED | INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 0, .max = 64},
    {.name = "bandwidth", .type = INPUT_K_QUANTITY, .offset = TO(nics.bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = INPUT_KEY_REQUIRED | POSITIVE},
    {.name = "latency", .type = INPUT_K_TIME, .offset = TO(nics.latency_ps), .flags = NONNEG},
};
MAP(nics_map, "nics", nics_keys);

static const input_key storage_keys[] = {
    {.name = "kind", .type = INPUT_K_CUSTOM, .fn = storage_kind_fn,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "count", .type = INPUT_K_INT, .offset = TO(storage.count),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 64},
    {.name = "read_bandwidth", .type = INPUT_K_QUANTITY, .offset = TO(storage.read_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = POSITIVE},
    {.name = "write_bandwidth", .type = INPUT_K_QUANTITY, .offset = TO(storage.write_Bps),
     .unit = INPUT_UNIT_BANDWIDTH, .flags = POSITIVE},
    {.name = "latency", .type = INPUT_K_TIME, .offset = TO(storage.latency_ps), .flags = NONNEG},
};
MAP(storage_map, "storage", storage_keys);

static const input_key node_keys[] = {
    {.name = "gpus", .type = INPUT_K_INT, .offset = TO(gpus_per_node),
     .flags = INPUT_KEY_REQUIRED | INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 1024},
    {.name = "intra", .type = INPUT_K_MAP, .map = &intra_map},
    {.name = "pcie", .type = INPUT_K_MAP, .map = &pcie_map},
    {.name = "host", .type = INPUT_K_MAP, .map = &host_map},
    {.name = "nics", .type = INPUT_K_MAP, .map = &nics_map},
    {.name = "storage", .type = INPUT_K_MAP, .map = &storage_map},
};
MAP(node_map, "node", node_keys);

/* A node group's node (topology.node_groups[i].node): every key optional, each overriding the
 * topology's node (node_groups.c checks gpus matches it). */
static const input_key group_node_keys[] = {
    {.name = "gpus", .type = INPUT_K_INT, .offset = TO(gpus_per_node),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 1024},
    {.name = "intra", .type = INPUT_K_MAP, .map = &intra_map},
    {.name = "pcie", .type = INPUT_K_MAP, .map = &pcie_map},
    {.name = "host", .type = INPUT_K_MAP, .map = &host_map},
    {.name = "nics", .type = INPUT_K_MAP, .map = &nics_map},
    {.name = "storage", .type = INPUT_K_MAP, .map = &storage_map},
};
MAP(group_node_map, "node", group_node_keys);

static const input_key fabric_keys[] = {
    {.name = "kind", .type = INPUT_K_ENUM, .offset = TO(fabric.kind), .enums = fabric_names,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "oversubscription", .type = INPUT_K_FLOAT, .offset = TO(fabric.oversubscription),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 1, .max = 1000},
    {.name = "latency", .type = INPUT_K_TIME, .offset = TO(fabric.latency_ps), .flags = NONNEG},
    {.name = "radix", .type = INPUT_K_INT, .offset = TO(fabric.radix),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 4, .max = 65536}, /* even: validate.c */
    {.name = "levels", .type = INPUT_K_INT, .offset = TO(fabric.levels),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX, .min = 0, .max = 16},
    {.name = "pxn", .type = INPUT_K_BOOL, .offset = TO(fabric.pxn)},
};
MAP(fabric_map, "fabric", fabric_keys);

/* NCCL protocol model (docs/collectives.md): offsets relative to hw_proto_params */
#define PP(m) offsetof(hw_proto_params, m)
#define PER_CLASS(field, kind, flags_)                                                       \
    {.name = "nvlink", .type = kind, .offset = PP(field) + HW_LINK_NVLINK * SZ(field), flags_}, \
    {.name = "pcie", .type = kind, .offset = PP(field) + HW_LINK_PCIE * SZ(field), flags_},     \
    {.name = "ib", .type = kind, .offset = PP(field) + HW_LINK_IB * SZ(field), flags_},         \
    {.name = "ethernet", .type = kind, .offset = PP(field) + HW_LINK_ETHERNET * SZ(field),      \
     flags_},                                                                                 \
    {.name = "cpu", .type = kind, .offset = PP(field) + HW_LINK_CPU * SZ(field), flags_}
#define SZ(field) sizeof(((hw_proto_params *)0)->field[0])
#define EFFICIENCY .flags = INPUT_KEY_MIN_EXCL | INPUT_KEY_MAX, .min = 0, .max = 1
static const input_key step_keys[] = {PER_CLASS(step_ps, INPUT_K_TIME, .flags = NONNEG)};
MAP(step_map, "step", step_keys);
static const input_key efficiency_keys[] = {PER_CLASS(efficiency, INPUT_K_FLOAT, EFFICIENCY)};
MAP(efficiency_map, "efficiency", efficiency_keys);
static const input_key proto_keys[] = {
    {.name = "enabled", .type = INPUT_K_BOOL, .offset = PP(enabled)},
    {.name = "base", .type = INPUT_K_TIME, .offset = PP(base_ps), .flags = NONNEG},
    {.name = "step", .type = INPUT_K_MAP, .map = &step_map},
    {.name = "efficiency", .type = INPUT_K_MAP, .map = &efficiency_map},
    {.name = "chunk", .type = INPUT_K_BYTES, .offset = PP(chunk_bytes), .flags = POSITIVE},
};
MAP(proto_map, "protocol", proto_keys);
#define PR(m) offsetof(hw_protocols, m)
static const input_key nvls_keys[] = {
    {.name = "efficiency", .type = INPUT_K_FLOAT, .offset = PR(nvls_efficiency), EFFICIENCY},
    {.name = "step", .type = INPUT_K_TIME, .offset = PR(nvls_step_ps), .flags = NONNEG},
};
MAP(nvls_map, "nvls", nvls_keys);
static const input_key protocols_keys[] = {
    {.name = "ll", .type = INPUT_K_MAP, .offset = PR(proto[HW_PROTO_LL]), .map = &proto_map},
    {.name = "ll128", .type = INPUT_K_MAP, .offset = PR(proto[HW_PROTO_LL128]), .map = &proto_map},
    {.name = "simple", .type = INPUT_K_MAP, .offset = PR(proto[HW_PROTO_SIMPLE]),
     .map = &proto_map},
    {.name = "nvls", .type = INPUT_K_MAP, .map = &nvls_map},
};
MAP(protocols_map, "protocols", protocols_keys);

/* topology.node_groups[i], applied onto a copy of the topology (node_groups.c) */
static const input_key node_group_keys[] = {
    {.name = "nodes", .type = INPUT_K_INT, .offset = TO(nodes),
     .flags = INPUT_KEY_REQUIRED | DEGREE},
    {.name = "gpu", .type = INPUT_K_MAP, .offset = TO(gpu), .map = &gpu_map},
    {.name = "node", .type = INPUT_K_MAP, .map = &group_node_map},
};
MAP(node_group_map, "node group", node_group_keys);

const input_map *input__node_group_schema(void)
{
    return &node_group_map;
}

static const input_key topology_keys[] = {
    {.name = "name", .type = INPUT_K_STRING, .offset = TO(name),
     .size = sizeof(((hw_topology_spec *)0)->name)},
    {.name = "gpu", .type = INPUT_K_MAP, .offset = TO(gpu), .map = &gpu_map,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "nodes", .type = INPUT_K_INT, .offset = TO(nodes), .flags = DEGREE},
    /* required in the parametric form: input__topology_check */
    {.name = "node", .type = INPUT_K_MAP, .map = &node_map},
    {.name = "fabric", .type = INPUT_K_MAP, .map = &fabric_map},
    {.name = "protocols", .type = INPUT_K_MAP, .offset = TO(protocols), .map = &protocols_map},
    {.name = "price_per_gpu_hour", .type = INPUT_K_FLOAT, .offset = TO(price_per_gpu_hour),
     .flags = NONNEG},
    {.name = "node_groups", .type = INPUT_K_CUSTOM, .fn = input__node_groups_fn},
    {.name = "devices", .type = INPUT_K_CUSTOM, .fn = input__devices_fn},
    {.name = "links", .type = INPUT_K_CUSTOM, .fn = input__links_fn},
};
static const input_map topology_map = {.what = "topology",
                                    .keys = topology_keys,
                                    .n_keys = SIM_ARRAY_LEN(topology_keys),
                                    .check = input__topology_check};

#define MO(m) offsetof(model_spec, m)
static const input_key moe_keys[] = {
    {.name = "experts", .type = INPUT_K_INT, .offset = MO(moe.experts),
     .flags = COUNT_UP_TO(MAX_COUNT)},
    {.name = "top_k", .type = INPUT_K_INT, .offset = MO(moe.top_k), .flags = DEGREE},
    {.name = "expert_ffn", .type = INPUT_K_INT, .offset = MO(moe.expert_ffn),
     .flags = SIZE_UP_TO(MAX_WIDTH)},
    {.name = "shared_experts", .type = INPUT_K_INT, .offset = MO(moe.shared_experts),
     .flags = COUNT_UP_TO(MAX_COUNT)},
    {.name = "dense_layers", .type = INPUT_K_INT, .offset = MO(moe.dense_layers), .flags = NONNEG},
};
MAP(moe_map, "moe", moe_keys);

static const input_key attention_keys[] = {
    {.name = "kind", .type = INPUT_K_ENUM, .offset = MO(attention.kind), .enums = attention_names},
    {.name = "q_lora_rank", .type = INPUT_K_INT, .offset = MO(attention.q_lora_rank),
     .flags = COUNT_UP_TO(MAX_WIDTH)},
    {.name = "kv_lora_rank", .type = INPUT_K_INT, .offset = MO(attention.kv_lora_rank),
     .flags = COUNT_UP_TO(MAX_WIDTH)},
    {.name = "qk_rope_head_dim", .type = INPUT_K_INT, .offset = MO(attention.qk_rope_head_dim),
     .flags = COUNT_UP_TO(MAX_WIDTH)},
    {.name = "v_head_dim", .type = INPUT_K_INT, .offset = MO(attention.v_head_dim),
     .flags = COUNT_UP_TO(MAX_WIDTH)},
};
MAP(attention_map, "attention", attention_keys);

static const input_key model_keys[] = {
    {.name = "name", .type = INPUT_K_STRING, .offset = MO(name),
     .size = sizeof(((model_spec *)0)->name)},
    {.name = "layers", .type = INPUT_K_INT, .offset = MO(layers),
     .flags = INPUT_KEY_REQUIRED | SIZE_UP_TO(MAX_COUNT)},
    {.name = "hidden", .type = INPUT_K_INT, .offset = MO(hidden),
     .flags = INPUT_KEY_REQUIRED | SIZE_UP_TO(MAX_WIDTH)},
    {.name = "heads", .type = INPUT_K_INT, .offset = MO(heads),
     .flags = INPUT_KEY_REQUIRED | SIZE_UP_TO(MAX_COUNT)},
    {.name = "kv_heads", .type = INPUT_K_INT, .offset = MO(kv_heads),
     .flags = SIZE_UP_TO(MAX_COUNT)},
    {.name = "head_dim", .type = INPUT_K_INT, .offset = MO(head_dim),
     .flags = SIZE_UP_TO(MAX_COUNT)},
    {.name = "ffn", .type = INPUT_K_INT, .offset = MO(ffn),
     .flags = INPUT_KEY_REQUIRED | SIZE_UP_TO(MAX_WIDTH)},
    {.name = "vocab", .type = INPUT_K_INT64, .offset = MO(vocab),
     .flags = INPUT_KEY_REQUIRED | SIZE_UP_TO(2147483647.0)},
    {.name = "activation", .type = INPUT_K_ENUM, .offset = MO(activation),
     .enums = activation_names},
    {.name = "norm", .type = INPUT_K_ENUM, .offset = MO(norm), .enums = norm_names},
    {.name = "position", .type = INPUT_K_ENUM, .offset = MO(position), .enums = position_names},
    {.name = "dropout", .type = INPUT_K_FLOAT, .offset = MO(dropout),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX_EXCL, .min = 0, .max = 1},
    {.name = "tied_embeddings", .type = INPUT_K_BOOL, .offset = MO(tied_embeddings)},
    {.name = "embed_norm", .type = INPUT_K_BOOL, .offset = MO(embed_norm)},
    {.name = "qk_norm", .type = INPUT_K_BOOL, .offset = MO(qk_norm)},
    {.name = "qkv_bias", .type = INPUT_K_BOOL, .offset = MO(qkv_bias)},
    {.name = "qkv_fused", .type = INPUT_K_BOOL, .offset = MO(qkv_fused)},
    {.name = "bias", .type = INPUT_K_BOOL, .offset = MO(bias)},
    {.name = "max_seq_len", .type = INPUT_K_INT, .offset = MO(max_seq_len),
     .flags = SIZE_UP_TO(MAX_TOKENS)},
    {.name = "moe", .type = INPUT_K_MAP, .map = &moe_map},
    {.name = "attention", .type = INPUT_K_MAP, .map = &attention_map},
};
MAP(model_map, "model", model_keys);

#define SC(m) offsetof(plan_scenario, m)
static const input_key scenario_keys[] = {
    {.name = "name", .type = INPUT_K_STRING, .offset = SC(name),
     .size = sizeof(((plan_scenario *)0)->name)},
    {.name = "topology", .type = INPUT_K_MAP, .offset = SC(topology), .map = &topology_map,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "model", .type = INPUT_K_MAP, .offset = SC(model), .map = &model_map,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "training", .type = INPUT_K_MAP, .offset = SC(training), .map = &training_map},
    {.name = "parallel", .type = INPUT_K_MAP, .offset = SC(parallel), .map = &parallel_map},
    {.name = "simulation", .type = INPUT_K_MAP, .offset = SC(simulation), .map = &simulation_map},
    {.name = "collectives", .type = INPUT_K_MAP, .offset = SC(collectives),
     .map = &collectives_map},
};
MAP(scenario_map, "the scenario", scenario_keys);

const input_map *input__scenario_schema(void)
{
    return &scenario_map;
}

const input_map *input__topology_schema(void)
{
    return &topology_map;
}
