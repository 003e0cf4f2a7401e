/* Did-you-mean suggestions (see suggest.h). */
#include "core/sim.h"

#include <ctype.h>
#include <string.h>

#include "input/suggest.h"

#define SUGGEST_LEN_MAX 63

static int min3(int a, int b, int c)
{
    return SIM_MIN(a, SIM_MIN(b, c));
}

int input_edit_distance(const char *a, const char *b)
{
    size_t na = SIM_MIN(strlen(a), (size_t)SUGGEST_LEN_MAX);
    size_t nb = SIM_MIN(strlen(b), (size_t)SUGGEST_LEN_MAX);
    int d[SUGGEST_LEN_MAX + 1][SUGGEST_LEN_MAX + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = SIM_MIN(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[na][nb];
}

static int same_ignoring_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const char *input_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t len = strlen(word);
    int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        int dist =
            same_ignoring_case(word, candidates[i]) ? 1 : input_edit_distance(word, candidates[i]);
        if (dist < best_d) {
            best_d = dist;
            best = candidates[i];
        }
    }
    return best;
}

/* Framework names of stepsim keys (docs/import.md): what users write from habit. */
static const struct {
    const char *name, *means;
} aliases[] = {
    {"gradient_checkpointing", "training.recompute: full (Hugging Face's gradient_checkpointing)"},
    {"activation_checkpointing", "training.recompute: full or selective (activation checkpointing)"},
    {"recompute_granularity", "training.recompute (Megatron's --recompute-granularity)"},
    {"checkpoint_activations", "training.recompute: full (Megatron's old flag)"},
    {"use_reentrant", "training.recompute_early_stop: true for use_reentrant=False (PyTorch's "
                      "non-reentrant checkpoint stops re-running early), false for True"},
    {"activation_checkpointing_reentrant", "training.recompute_early_stop: true for false "
                                           "(Composer's non-reentrant checkpoint), false for "
                                           "true"},
    {"early_stop", "training.recompute_early_stop (PyTorch's and torchtitan's checkpoint "
                   "early stop)"},
    {"micro_batch_size", "training.micro_batch (Megatron's --micro-batch-size)"},
    {"train_micro_batch_size_per_gpu", "training.micro_batch (DeepSpeed)"},
    {"per_device_train_batch_size", "training.micro_batch (Hugging Face Trainer)"},
    {"local_batch_size", "training.micro_batch (torchtitan; with pp, its micro-batch size)"},
    {"global_batch_size", "training.global_batch"},
    {"train_batch_size", "training.global_batch (DeepSpeed)"},
    {"gradient_accumulation_steps", "training.global_batch = micro_batch x steps x dp "
                                    "(stepsim counts sequences a step)"},
    {"seq_length", "training.seq_len"},
    {"max_seq_length", "training.seq_len"},
    {"sequence_length", "training.seq_len"},
    {"zero_stage", "parallel.zero (DeepSpeed's ZeRO stage)"},
    {"zero_optimization", "parallel.zero and parallel.offload (or parallel.from: {deepspeed: "
                          "FILE})"},
    {"sharding_strategy", "parallel.zero: 3 (FULL_SHARD), with parallel.fsdp.reshard_after_"
                          "forward: false (SHARD_GRAD_OP) or hybrid_shard: true (HYBRID_SHARD)"},
    {"fsdp_sharding_strategy", "parallel.zero: 3 and parallel.fsdp (FSDP's sharding strategy)"},
    {"use_distributed_optimizer", "parallel.zero: 1 (Megatron's distributed optimizer)"},
    {"tensor_model_parallel_size", "parallel.tp"},
    {"tensor_parallel_degree", "parallel.tp"},
    {"tp_size", "parallel.tp"},
    {"pipeline_model_parallel_size", "parallel.pp"},
    {"pipeline_parallel_degree", "parallel.pp"},
    {"pp_size", "parallel.pp"},
    {"context_parallel_size", "parallel.cp"},
    {"context_parallel_degree", "parallel.cp"},
    {"expert_model_parallel_size", "parallel.ep"},
    {"expert_parallel_degree", "parallel.ep"},
    {"data_parallel_size", "parallel.dp"},
    {"data_parallel_shard_degree", "parallel.dp with parallel.zero: 3 (torchtitan's FSDP)"},
    {"sequence_parallel", "parallel.sp"},
    {"virtual_pipeline_model_parallel_size", "parallel.pipeline.virtual_stages"},
    {"pipeline_parallel_schedule", "parallel.pipeline.schedule"},
    {"overlap_comm", "parallel.ddp.overlap (DeepSpeed's overlap_comm)"},
    {"overlap_grad_reduce", "parallel.ddp.overlap (Megatron)"},
    {"overlap_param_gather", "parallel.ddp.overlap_param_gather"},
    {"offload_optimizer", "parallel.offload.optimizer: cpu or nvme"},
    {"offload_param", "parallel.offload.params: cpu or nvme"},
    {"cpu_offload", "parallel.offload: {params: cpu, optimizer: cpu} (FSDP's CPUOffload)"},
    {"mixed_precision", "training.precision"},
    {"torch_dtype", "training.precision"},
    {"bf16", "training.precision: bf16"},
    {"fp16", "training.precision: fp16"},
    {"num_layers", "model.layers"},
    {"num_hidden_layers", "model.layers"},
    {"n_layer", "model.layers"},
    {"hidden_size", "model.hidden"},
    {"n_embd", "model.hidden"},
    {"d_model", "model.hidden"},
    {"num_attention_heads", "model.heads"},
    {"n_head", "model.heads"},
    {"num_key_value_heads", "model.kv_heads"},
    {"num_query_groups", "model.kv_heads (Megatron's query groups)"},
    {"intermediate_size", "model.ffn"},
    {"ffn_hidden_size", "model.ffn"},
    {"vocab_size", "model.vocab"},
    {"tie_word_embeddings", "model.tied_embeddings"},
    {"num_experts", "model.moe.experts"},
    {"num_local_experts", "model.moe.experts"},
    {"n_routed_experts", "model.moe.experts"},
    {"num_experts_per_tok", "model.moe.top_k"},
    {"moe_router_topk", "model.moe.top_k"},
    {"moe_intermediate_size", "model.moe.expert_ffn"},
};

const char *input_framework_alias(const char *name)
{
    char norm[64];
    size_t n = 0;
    for (; name[n] && n + 1 < sizeof norm; n++)
        norm[n] = name[n] == '-' ? '_' : (char)tolower((unsigned char)name[n]);
    norm[n] = '\0';
    for (size_t i = 0; i < SIM_ARRAY_LEN(aliases); i++)
        if (strcmp(aliases[i].name, norm) == 0)
            return aliases[i].means;
    return NULL;
}
