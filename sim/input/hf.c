/* Hugging Face config.json as a model (docs/models.md, "Hugging Face configs"): the fields of
 * the architectures stepsim models, mapped onto its model keys; the mapping replaces the JSON
 * in the scenario tree, so the schema checks the values where config.json has them and the
 * resolved scenario carries stepsim's keys.
 *
 * Families (model_type): llama, mistral, qwen2, qwen3 (QK-norm), mixtral, qwen3_moe,
 * deepseek_v3 (MLA, shared experts, first dense layers), gpt2, gpt_neox, bloom. A field that
 * changes what stepsim counts and that it cannot represent is an error naming it; a field
 * known not to change FLOPs or memory is listed as ignored, and so is one stepsim does not
 * know (the note says which). */
#include "core/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input/keys.h"

typedef enum hf_kind {
    HF_LLAMA,
    HF_MIXTRAL,
    HF_QWEN3_MOE,
    HF_DEEPSEEK_V3,
    HF_GPT2,
    HF_NEOX,
    HF_BLOOM
} hf_kind;

static const struct {
    const char *model_type;
    hf_kind kind;
    bool qk_norm;  /* the architecture normalises each q and k head (Qwen3) */
    bool qkv_bias; /* q, k and v carry biases whatever the config says (Qwen2) */
    bool tied;     /* tie_word_embeddings when the config omits it (the class's default) */
} families[] = {
    {"llama", HF_LLAMA, false, false, false},
    {"mistral", HF_LLAMA, false, false, false},
    {"qwen2", HF_LLAMA, false, true, false},
    {"qwen3", HF_LLAMA, true, false, false},
    {"mixtral", HF_MIXTRAL, false, false, false},
    {"qwen3_moe", HF_QWEN3_MOE, true, false, false},
    {"deepseek_v3", HF_DEEPSEEK_V3, false, false, false},
    {"gpt2", HF_GPT2, false, false, true},
    {"gpt_neox", HF_NEOX, false, false, false},
    {"bloom", HF_BLOOM, false, false, true},
};

/* Fields known not to change FLOPs or memory (tokens, initialisation, numerics, RoPE's
 * frequencies, caching, serialisation). */
static const char *const harmless[] = {
    "architectures", "model_type", "_name_or_path", "torch_dtype", "dtype",
    "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "use_cache", "rope_theta", "rope_scaling", "rope_parameters",
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "pretraining_tp", "max_window_layers",
    "use_sliding_window", "router_aux_loss_coef", "output_router_logits",
    "router_jitter_noise", "norm_topk_prob", "routed_scaling_factor", "scoring_func",
    "topk_method", "n_group", "topk_group", "aux_loss_alpha", "seq_aux", "ep_size",
    "auto_map", "task_specific_params",
    "use_parallel_residual", "rotary_pct", "rotary_emb_base", "classifier_dropout",
    "tie_word_embeddings", "max_position_embeddings", "n_ctx", "id2label", "label2id",
    "rope_interleave", "partial_rotary_factor", "head_dim", "hidden_act",
    "activation_function", "attention_bias", "mlp_bias", "layer_types",
    /* BLOOM's: fused kernels and numerics, the ALiBi offset, Megatron-DeepSpeed's knobs */
    "masked_softmax_fusion", "slow_but_exact", "offset_alibi", "attention_softmax_in_fp32",
    "bias_dropout_fusion", "skip_bias_add", "skip_bias_add_qkv", "unk_token_id", "seq_length",
    "n_inner" /* read for gpt2; BloomModel builds 4 x hidden whatever it says */};

typedef struct hf {
    input_yarena *a;
    const input_ynode *cfg;
    input_ynode *out;
    sim_diag *diag;
    const char *used[64]; /* fields read into the mapping */
    int n_used;
} hf;

static const input_ynode *field(hf *h, const char *name)
{
    const input_ypair *p = input_ymap_find(h->cfg, name);
    if (p && h->n_used < (int)SIM_ARRAY_LEN(h->used))
        h->used[h->n_used++] = name; /* read, even as null */
    return p && !input_ynode_is_null(p->value) ? p->value : NULL;
}

static void put_text(hf *h, const char *key, const char *text, const input_ynode *at)
{
    const input_ynode *pos = at ? at : h->cfg;
    input_ynode *k = input_yscalar_new(h->a, pos->origin, pos->line, pos->col, key, false);
    input_ynode *v = input_yscalar_new(h->a, pos->origin, pos->line, pos->col, text, false);
    input_ymap_append(h->a, h->out, k, v);
}

/* Copies config field `name` (a scalar) to model key `key`; false when absent. */
static bool copy(hf *h, const char *key, const char *name)
{
    const input_ynode *v = field(h, name);
    if (!v)
        return false;
    input_ynode *k = input_yscalar_new(h->a, v->origin, v->line, v->col, key, false);
    input_ymap_append(h->a, h->out, k, (input_ynode *)v);
    return true;
}

static int error_at(hf *h, const input_ynode *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int error_at(hf *h, const input_ynode *at, const char *fmt, ...)
{
    char msg[SIM_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const input_ynode *pos = at ? at : h->cfg;
    sim_diag_error_code(h->diag, SIM_ENOTSUP, pos->origin->name, pos->line, pos->col, "%s", msg);
    sim_diag_hint(h->diag, "or write the model's keys by hand for the closest architecture "
                           "stepsim models (docs/scenario-format.md, \"Model\")");
    return SIM_ENOTSUP;
}

static bool is_true(const input_ynode *v)
{
    return v && v->kind == INPUT_YSCALAR && strcmp(v->text, "true") == 0;
}

/* An integer field's value, or `dflt` when absent or not an integer (the schema reports a
 * bad value where it is copied). */
static long long int_of(const input_ynode *v, long long dflt)
{
    if (!v || v->kind != INPUT_YSCALAR)
        return dflt;
    char *end;
    long long x = strtoll(v->text, &end, 10);
    return *end || end == v->text ? dflt : x;
}

static void put_int(hf *h, const char *key, long long x, const input_ynode *at)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", x);
    put_text(h, key, buf, at);
}

/* The activation of a gated (Llama-style) MLP: silu is SwiGLU; another is not modelled. */
static int gated_act(hf *h)
{
    const input_ynode *v = field(h, "hidden_act");
    if (v && v->kind == INPUT_YSCALAR && strcmp(v->text, "silu") != 0 &&
        strcmp(v->text, "swish") != 0)
        return error_at(h, v, "hidden_act: '%s' in a gated MLP is not supported yet (stepsim "
                              "models SwiGLU: silu)", v->text);
    put_text(h, "activation", "swiglu", v);
    return 0;
}

/* Linear-layer biases: attention_bias and mlp_bias both (stepsim's `bias`), or none; Qwen2
 * biases q, k and v alone, whatever the config says (`qkv_bias`). */
static int biases(hf *h, bool qkv_only)
{
    const input_ynode *ab = field(h, "attention_bias"), *mb = field(h, "mlp_bias");
    if (qkv_only) {
        put_text(h, "bias", "false", NULL);
        put_text(h, "qkv_bias", "true", field(h, "model_type"));
        return 0;
    }
    if (is_true(ab) != is_true(mb))
        return error_at(h, is_true(ab) ? ab : mb, "%s: biases on %s alone are not supported "
                        "yet (stepsim's `bias` is every linear layer's)",
                        is_true(ab) ? "attention_bias" : "mlp_bias",
                        is_true(ab) ? "attention" : "the MLP");
    put_text(h, "bias", is_true(ab) ? "true" : "false", ab ? ab : mb);
    return 0;
}

/* The attention and MLP of the Llama-style families. */
static int llama_body(hf *h, bool qkv_bias)
{
    copy(h, "hidden", "hidden_size");
    copy(h, "layers", "num_hidden_layers");
    copy(h, "heads", "num_attention_heads");
    copy(h, "kv_heads", "num_key_value_heads");
    copy(h, "head_dim", "head_dim");
    copy(h, "ffn", "intermediate_size");
    copy(h, "vocab", "vocab_size");
    put_text(h, "norm", "rmsnorm", NULL);
    put_text(h, "position", "rope", NULL);
    const input_ynode *sw = field(h, "sliding_window"), *use = field(h, "use_sliding_window");
    if (sw && (!use || is_true(use)))
        return error_at(h, sw, "sliding_window: sliding-window attention is not modelled yet "
                               "(stepsim would count full causal attention)");
    int rc = gated_act(h);
    return rc ? rc : biases(h, qkv_bias);
}

/* copy() of a field the architecture cannot do without: its absence is named. */
static int need(hf *h, const char *key, const char *name)
{
    return copy(h, key, name) ? 0
                              : error_at(h, NULL, "%s: missing, and this architecture's "
                                         "model.moe.%s comes from it", name, key);
}

/* Mixtral, Qwen3-MoE, DeepSeek-V3: the expert fields. */
static int moe_fields(hf *h, hf_kind kind)
{
    const input_ynode *at = h->cfg;
    input_ynode *moe = input_ynode_new(h->a, INPUT_YMAP, at->origin, at->line, at->col);
    input_ynode *saved = h->out;
    h->out = moe;
    int rc = 0;
    if (kind == HF_MIXTRAL) {
        rc = need(h, "experts", "num_local_experts");
        rc = rc ? rc : need(h, "top_k", "num_experts_per_tok");
        rc = rc ? rc : need(h, "expert_ffn", "intermediate_size");
        put_text(h, "shared_experts", "0", NULL);
        put_text(h, "dense_layers", "0", NULL);
    } else if (kind == HF_QWEN3_MOE) {
        rc = need(h, "experts", "num_experts");
        rc = rc ? rc : need(h, "top_k", "num_experts_per_tok");
        rc = rc ? rc : need(h, "expert_ffn", "moe_intermediate_size");
        put_text(h, "shared_experts", "0", NULL);
        const input_ynode *step = field(h, "decoder_sparse_step");
        const input_ynode *dense = field(h, "mlp_only_layers");
        if (!rc && step && int_of(step, 1) != 1)
            rc = error_at(h, step, "decoder_sparse_step: MoE on every %s-th layer is not "
                          "supported yet (stepsim's MoE layers are every layer after the "
                          "first dense ones)", step->text);
        /* mlp_only_layers: dense layers, which stepsim supports as a prefix 0..k-1 */
        long long k = 0;
        for (size_t i = 0; !rc && dense && dense->kind == INPUT_YSEQ && i < dense->n; i++)
            if (int_of(dense->items[i], -1) != (long long)i)
                rc = error_at(h, dense->items[i], "mlp_only_layers: dense layers other than the "
                              "first ones are not supported yet");
            else
                k++;
        put_int(h, "dense_layers", k, dense);
    } else {
        rc = need(h, "experts", "n_routed_experts");
        rc = rc ? rc : need(h, "top_k", "num_experts_per_tok");
        rc = rc ? rc : need(h, "expert_ffn", "moe_intermediate_size");
        if (!copy(h, "shared_experts", "n_shared_experts"))
            put_text(h, "shared_experts", "0", NULL);
        if (!copy(h, "dense_layers", "first_k_dense_replace"))
            put_text(h, "dense_layers", "0", NULL);
        const input_ynode *freq = field(h, "moe_layer_freq");
        if (!rc && freq && int_of(freq, 1) != 1)
            rc = error_at(h, freq, "moe_layer_freq: MoE on every %s-th layer is not supported "
                          "yet", freq->text);
    }
    h->out = saved;
    input_ynode *k = input_yscalar_new(h->a, at->origin, at->line, at->col, "moe", false);
    input_ymap_append(h->a, h->out, k, moe);
    return rc;
}

static int deepseek_attention(hf *h)
{
    const input_ynode *at = h->cfg;
    input_ynode *attn = input_ynode_new(h->a, INPUT_YMAP, at->origin, at->line, at->col);
    input_ynode *saved = h->out;
    h->out = attn;
    put_text(h, "kind", "mla", NULL);
    if (!copy(h, "q_lora_rank", "q_lora_rank")) /* null: a full-rank q projection */
        put_text(h, "q_lora_rank", "0", NULL);
    copy(h, "kv_lora_rank", "kv_lora_rank");
    copy(h, "qk_rope_head_dim", "qk_rope_head_dim");
    copy(h, "v_head_dim", "v_head_dim");
    h->out = saved;
    copy(h, "head_dim", "qk_nope_head_dim");
    input_ynode *k = input_yscalar_new(h->a, at->origin, at->line, at->col, "attention", false);
    input_ymap_append(h->a, h->out, k, attn);
    return 0;
}

static int gpt2(hf *h)
{
    copy(h, "hidden", "n_embd");
    copy(h, "layers", "n_layer");
    copy(h, "heads", "n_head");
    copy(h, "vocab", "vocab_size");
    copy(h, "max_seq_len", "n_positions");
    const input_ynode *inner = field(h, "n_inner"), *e = field(h, "n_embd");
    long long embd = int_of(e, 0);
    if (inner)
        copy(h, "ffn", "n_inner");
    else if (embd > 0 && embd < (1LL << 40)) /* the GPT-2 default: 4 x n_embd */
        put_int(h, "ffn", 4 * embd, e);
    else /* no default from a bad width: the schema refuses hidden at n_embd */
        copy(h, "ffn", "n_embd");
    put_text(h, "activation", "gelu", field(h, "activation_function"));
    put_text(h, "norm", "layernorm", NULL);
    put_text(h, "position", "learned", NULL);
    put_text(h, "bias", "true", NULL);
    put_text(h, "qkv_fused", "true", NULL); /* c_attn: q, k and v in one tensor */
    return 0;
}

static int neox(hf *h)
{
    copy(h, "hidden", "hidden_size");
    copy(h, "layers", "num_hidden_layers");
    copy(h, "heads", "num_attention_heads");
    copy(h, "ffn", "intermediate_size");
    copy(h, "vocab", "vocab_size");
    const input_ynode *act = field(h, "hidden_act");
    if (act && act->kind == INPUT_YSCALAR && strncmp(act->text, "gelu", 4) != 0)
        return error_at(h, act, "hidden_act: '%s' is not supported yet for gpt_neox (stepsim "
                        "models its GeLU MLP)", act->text);
    put_text(h, "activation", "gelu", act);
    put_text(h, "norm", "layernorm", NULL);
    put_text(h, "position", "rope", NULL);
    const input_ynode *ab = field(h, "attention_bias");
    if (ab && !is_true(ab))
        return error_at(h, ab, "attention_bias: false in gpt_neox (its MLP keeps biases) is "
                        "not supported yet");
    put_text(h, "bias", "true", ab);
    put_text(h, "qkv_fused", "true", NULL); /* query_key_value: one tensor */
    return 0;
}

/* BloomConfig: n_embed (or hidden_size), n_layer, n_head, a GeLU MLP of 4 x hidden (n_inner,
 * kept by the config, is not read by the model), LayerNorm,
 * ALiBi, biases, query_key_value one tensor, a LayerNorm on the word embeddings
 * (word_embeddings_layernorm); tied by default. */
static int bloom(hf *h)
{
    const input_ynode *e = field(h, "n_embed"), *hs = field(h, "hidden_size");
    if (e && hs && (e->kind != INPUT_YSCALAR || hs->kind != INPUT_YSCALAR ||
                    strcmp(e->text, hs->text) != 0))
        return error_at(h, hs, "hidden_size and n_embed differ; BLOOM's config takes n_embed");
    const char *width = e ? "n_embed" : "hidden_size";
    copy(h, "hidden", width);
    copy(h, "layers", input_ymap_find(h->cfg, "num_hidden_layers") ? "num_hidden_layers"
                                                                   : "n_layer");
    copy(h, "heads", input_ymap_find(h->cfg, "num_attention_heads") ? "num_attention_heads"
                                                                    : "n_head");
    copy(h, "vocab", "vocab_size");
    const input_ynode *w = e ? e : hs;
    long long hidden = int_of(w, 0);
    if (hidden > 0 && hidden < (1LL << 40))
        put_int(h, "ffn", 4 * hidden, w); /* dense_h_to_4h */
    else /* no default from a bad width: the schema refuses hidden at the field */
        copy(h, "ffn", width);
    const input_ynode *post = field(h, "apply_residual_connection_post_layernorm");
    if (post && is_true(post))
        return error_at(h, post, "apply_residual_connection_post_layernorm: true (the residual "
                        "taken after the norm) is not supported yet");
    put_text(h, "activation", "gelu", NULL);
    put_text(h, "norm", "layernorm", NULL);
    put_text(h, "position", "alibi", NULL);
    put_text(h, "bias", "true", NULL);
    put_text(h, "qkv_fused", "true", NULL); /* query_key_value: one tensor */
    put_text(h, "embed_norm", "true", NULL); /* word_embeddings_layernorm */
    return 0;
}

/* Fields that describe something stepsim leaves out on purpose, with why. */
static const struct {
    const char *name, *why;
} left_out[] = {
    {"num_nextn_predict_layers", "DeepSeek's multi-token-prediction module, which the "
                                 "Hugging Face model class does not build either"},
    {"quantization_config", "the checkpoint's storage format; training runs in "
                            "training.precision"},
};

/* Dropout: stepsim has one rate for attention and residual dropout; the config's named
 * fields must agree (absent ones do not count). */
static int dropout(hf *h, const char *const *names, size_t n)
{
    const input_ynode *first = NULL;
    for (size_t i = 0; i < n; i++) {
        const input_ynode *v = field(h, names[i]);
        if (!v)
            continue;
        if (first && (v->kind != INPUT_YSCALAR || first->kind != INPUT_YSCALAR ||
                      strtod(v->text, NULL) != strtod(first->text, NULL)))
            return error_at(h, v, "%s: %s differs from the other dropout rates, and stepsim "
                            "has one (model.dropout)", names[i], v->text);
        if (!first)
            first = v;
    }
    if (first) {
        input_ynode *k = input_yscalar_new(h->a, first->origin, first->line, first->col,
                                           "dropout", false);
        input_ymap_append(h->a, h->out, k, (input_ynode *)first);
    }
    return 0;
}

static bool listed(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

int input__hf_model(input_yarena *a, const input_ynode *cfg, const char *name, input_ynode **out,
                    char *notes, size_t notes_size, sim_diag *diag)
{
    if (notes_size)
        notes[0] = '\0';
    if (cfg->kind != INPUT_YMAP)
        return sim_diag_error(diag, cfg->origin->name, cfg->line, cfg->col,
                              "a Hugging Face config.json must be an object of fields, not %s",
                              input_ykind_name(cfg->kind));
    hf h = {.a = a, .cfg = cfg, .diag = diag};
    h.out = input_ynode_new(a, INPUT_YMAP, cfg->origin, cfg->line, cfg->col);
    const input_ynode *mt = field(&h, "model_type");
    int fam = -1;
    for (size_t i = 0; mt && mt->kind == INPUT_YSCALAR && i < SIM_ARRAY_LEN(families); i++)
        if (strcmp(mt->text, families[i].model_type) == 0)
            fam = (int)i;
    if (fam < 0) {
        char list[256];
        size_t len = 0;
        for (size_t i = 0; i < SIM_ARRAY_LEN(families); i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    families[i].model_type);
        sim_diag_error_code(diag, SIM_ENOTSUP, (mt ? mt : cfg)->origin->name,
                            (mt ? mt : cfg)->line, (mt ? mt : cfg)->col,
                            mt ? "model_type: '%s' is not an architecture stepsim models yet"
                               : "%sno model_type: not a Hugging Face model config",
                            mt ? mt->text : "");
        sim_diag_hint(diag, "supported: %s; or write the model's keys (docs/scenario-format.md)",
                      list);
        return SIM_ENOTSUP;
    }
    put_text(&h, "name", name, NULL);
    hf_kind kind = families[fam].kind;
    int rc = 0;
    /* the switches read as booleans: JSON's true or false, not a string or a number that
     * would be read as false without a word */
    static const char *const switches[] = {"attention_bias", "mlp_bias", "use_sliding_window",
                                           "tie_word_embeddings"};
    for (size_t i = 0; i < SIM_ARRAY_LEN(switches) && !rc; i++) {
        const input_ypair *p = input_ymap_find(cfg, switches[i]);
        const input_ynode *v = p ? p->value : NULL;
        if (v && !input_ynode_is_null(v) &&
            (v->kind != INPUT_YSCALAR || v->quoted ||
             (strcmp(v->text, "true") != 0 && strcmp(v->text, "false") != 0)))
            rc = error_at(&h, v, "%s: expected true or false, got %s%s%s", switches[i],
                          v->kind != INPUT_YSCALAR ? "a list or object"
                          : v->quoted            ? "the string \""
                                                 : "",
                          v->kind == INPUT_YSCALAR ? v->text : "",
                          v->kind == INPUT_YSCALAR && v->quoted ? "\"" : "");
    }
    if (rc)
        return rc;
    if (kind == HF_GPT2)
        rc = gpt2(&h);
    else if (kind == HF_NEOX)
        rc = neox(&h);
    else if (kind == HF_BLOOM)
        rc = bloom(&h);
    else
        rc = llama_body(&h, families[fam].qkv_bias);
    static const char *const drop_llama[] = {"attention_dropout"};
    static const char *const drop_gpt2[] = {"attn_pdrop", "resid_pdrop", "embd_pdrop"};
    static const char *const drop_neox[] = {"attention_dropout", "hidden_dropout"};
    if (!rc)
        rc = kind == HF_GPT2   ? dropout(&h, drop_gpt2, SIM_ARRAY_LEN(drop_gpt2))
             : kind == HF_NEOX || kind == HF_BLOOM
                 ? dropout(&h, drop_neox, SIM_ARRAY_LEN(drop_neox))
                               : dropout(&h, drop_llama, SIM_ARRAY_LEN(drop_llama));
    if (!rc && families[fam].qk_norm)
        put_text(&h, "qk_norm", "true", mt);
    if (!rc && kind == HF_DEEPSEEK_V3)
        rc = deepseek_attention(&h);
    if (!rc && (kind == HF_MIXTRAL || kind == HF_QWEN3_MOE || kind == HF_DEEPSEEK_V3))
        rc = moe_fields(&h, kind);
    if (rc)
        return rc;
    const input_ynode *tie = field(&h, "tie_word_embeddings");
    put_text(&h, "tied_embeddings",
             tie ? (is_true(tie) ? "true" : "false") : (families[fam].tied ? "true" : "false"),
             tie);
    /* the note: what was not used: known harmless, left out on purpose, unknown */
    size_t len = 0;
    for (size_t i = 0; i < cfg->n && notes_size; i++)
        for (size_t j = 0; j < SIM_ARRAY_LEN(left_out); j++)
            if (strcmp(cfg->pairs[i].key->text, left_out[j].name) == 0 && len + 200 < notes_size)
                len += (size_t)snprintf(notes + len, notes_size - len, "%snot modelled: %s (%s)",
                                        len ? "; " : "", left_out[j].name, left_out[j].why);
    for (int pass = 0; pass < 2 && notes_size; pass++) {
        bool any = false;
        for (size_t i = 0; i < cfg->n; i++) {
            const char *k = cfg->pairs[i].key->text;
            bool known = listed(harmless, SIM_ARRAY_LEN(harmless), k);
            bool special = false;
            for (size_t j = 0; j < SIM_ARRAY_LEN(left_out); j++)
                special |= strcmp(k, left_out[j].name) == 0;
            if (listed(h.used, (size_t)h.n_used, k) || special || known != (pass == 0))
                continue;
            if (len + 64 >= notes_size)
                break;
            len += (size_t)snprintf(notes + len, notes_size - len, "%s%s",
                                    any         ? ", "
                                    : pass == 0 ? (len ? "; ignored (no effect on FLOPs or "
                                                         "memory): "
                                                       : "ignored (no effect on FLOPs or "
                                                         "memory): ")
                                                : "; not known to stepsim, ignored: ",
                                    k);
            any = true;
        }
    }
    *out = h.out;
    return 0;
}
