/* Loader defaults that depend on other keys, and checks that span several keys
 * (docs/scenario-format.md, docs/scenario-format.md "Cross-checks"). Each error points at the value
 * the user most likely has to change, found again in the node tree: the value when it was written,
 * else the key of the mapping that lacks it, else the scenario's root. */
#include "core/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "input/keys.h"

static const char *dtype_name(hw_dtype d)
{
    static const char *const names[HW_DTYPE_COUNT] = {"bf16", "fp16", "fp8", "tf32", "fp32"};
    return d >= 0 && d < HW_DTYPE_COUNT ? names[d] : "?";
}

/* Sentinel for "not given" where 0 is a valid value. */
#define UNSET_TIME INPUT__UNSET_TIME

/* Default latencies (docs/scenario-format.md): per hop, NCCL-like base latencies. */
#define LAT_NVLINK_PS SIM_PS_PER_US       /* nvswitch, nvlink: 1 us */
#define LAT_NIC_PS (2 * SIM_PS_PER_US)    /* NIC: 2 us */
#define LAT_FABRIC_PS SIM_PS_PER_US       /* fabric switch hop: 1 us */
#define PCIE_GEN_DEFAULT 4
#define PCIE_LANES_DEFAULT 16

/* Defaults of the node's PCIe tree and host (docs/scenario-format.md, docs/topologies.md). */
#define PCIE_SOCKETS_DEFAULT 1
#define PCIE_SWITCH_LANES_DEFAULT 16
#define LAT_PCIE_HOP_PS (SIM_PS_PER_US / 2)      /* per PCIe hop: 0.5 us */
#define LAT_SOCKET_LINK_PS (SIM_PS_PER_US / 2)   /* 0.5 us */
#define FABRIC_RADIX_DEFAULT 64

void input__topology_prefill(hw_topology_spec *t)
{
    t->nodes = 1;
    t->intra.kind = HW_INTRA_NVSWITCH;
    t->intra.latency_ps = UNSET_TIME;
    t->intra.p2p = true;
    t->intra.shape = HW_NVLINK_MESH;
    t->pcie.switches = 0;
    t->pcie.sockets = PCIE_SOCKETS_DEFAULT;
    t->pcie.switch_lanes = PCIE_SWITCH_LANES_DEFAULT;
    t->pcie.latency_ps = LAT_PCIE_HOP_PS;
    t->host.memory_bw_Bps = HW_HOST_MEMORY_BPS_DEFAULT;
    t->host.memory_efficiency = HW_HOST_MEMORY_EFFICIENCY_DEFAULT;
    t->host.launch_eager_ps = HW_HOST_LAUNCH_EAGER_PS_DEFAULT;
    t->host.launch_compiled_ps = HW_HOST_LAUNCH_COMPILED_PS_DEFAULT;
    t->host.socket_link_bw_Bps = HW_HOST_SOCKET_LINK_BPS_DEFAULT;
    t->host.socket_link_latency_ps = LAT_SOCKET_LINK_PS;
    t->nics.latency_ps = UNSET_TIME;
    t->storage.count = 0; /* none until node.storage names its kind (storage_kind_fn) */
    t->storage.read_Bps = HW_STORAGE_READ_BPS_DEFAULT;
    t->storage.write_Bps = HW_STORAGE_WRITE_BPS_DEFAULT;
    t->storage.latency_ps = HW_STORAGE_LATENCY_PS_DEFAULT;
    t->fabric.kind = HW_FABRIC_NONE;
    t->fabric.oversubscription = 1.0;
    t->fabric.latency_ps = UNSET_TIME;
    t->fabric.radix = FABRIC_RADIX_DEFAULT;
    t->fabric.levels = 0;
    t->fabric.pxn = true;
    hw_protocols_defaults(&t->protocols);
}

void input__scenario_prefill(plan_scenario *sc)
{
    input__topology_prefill(&sc->topology);
    model_spec *m = &sc->model;
    m->activation = MODEL_ACT_SWIGLU;
    m->norm = MODEL_NORM_RMSNORM;
    m->position = MODEL_POS_ROPE;
    m->attention.kind = MODEL_ATTN_MHA;
}

/* The value at `path` if it was given (present and not null), else NULL. */
static const input_ynode *given(const input_ynode *root, const char *path)
{
    const input_ypair *p = input_ypath_find(root, path);
    return p && !input_ynode_is_null(p->value) ? p->value : NULL;
}

/* Where to report: the value at `value_path` if given, else the key `key_path` (the mapping
 * that lacks it), else the root. */
static const input_ynode *locate(const input_ynode *root, const char *value_path,
                                 const char *key_path)
{
    const input_ynode *v = value_path ? given(root, value_path) : NULL;
    if (v)
        return v;
    const input_ypair *k = key_path ? input_ypath_find(root, key_path) : NULL;
    return k ? k->key : root;
}

const input_ynode *input__given(const input_ynode *root, const char *path)
{
    return given(root, path);
}

const input_ynode *input__locate(const input_ynode *root, const char *value_path,
                                 const char *key_path)
{
    return locate(root, value_path, key_path);
}

/* The file stem of a path ("topologies/dgx-h100.yaml" -> "dgx-h100") into buf, truncated to
 * fit. */
void input__file_stem(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".yaml") == 0)
        len -= 5;
    else if (len > 4 && strcmp(base + len - 4, ".yml") == 0)
        len -= 4;
    if (len >= size)
        len = size - 1;
    memcpy(buf, base, len);
    buf[len] = '\0';
}

/* Names default to the stem of the file a mapping was read from, if it has its own file. */
static void default_name_from_file(const input_ynode *root, const char *path,
                                   const input_ynode *parent, char *name, size_t size)
{
    const input_ypair *p = input_ypath_find(root, path);
    if (name[0] || !p || p->value->origin == parent->origin || p->value->origin->is_set)
        return;
    input__file_stem(p->value->origin->name, name, size);
}

/* The PCIe generation and lanes of a pcie node are given once: in node.intra (the older
 * spelling) or in node.pcie (each GPU's host link, which for kind pcie is the same link). A
 * value given in one place fills the other; both given and different is an error at
 * node.pcie. */
static int unify_pcie(const input_ynode *root, hw_topology_spec *t, input_schema_ctx *ctx)
{
    const char *keys[2] = {"gen", "lanes"};
    int *intra_v[2] = {&t->intra.pcie_gen, &t->intra.pcie_lanes};
    int *pcie_v[2] = {&t->pcie.gen, &t->pcie.lanes};
    for (size_t i = 0; i < 2; i++) {
        char ipath[64], ppath[64];
        snprintf(ipath, sizeof ipath, "topology.node.intra.%s", keys[i]);
        snprintf(ppath, sizeof ppath, "topology.node.pcie.%s", keys[i]);
        int *iv = intra_v[i], *pv = pcie_v[i];
        const input_ynode *ig = given(root, ipath), *pg = given(root, ppath);
        if (ig && pg && *iv != *pv) {
            input_schema_error(ctx, SIM_EINVAL, pg,
                            "%s: %d differs from topology.node.intra.%s (%d); for kind pcie "
                            "they describe the same link",
                            ppath, *pv, keys[i], *iv);
            sim_diag_hint(ctx->diag, "give it once, in node.pcie");
            return SIM_EINVAL;
        }
        if (!ig && pg)
            *iv = *pv;
    }
    return 0;
}

static int check_intra(const input_ynode *root, const input_ynode *intra, hw_topology_spec *t,
                       input_schema_ctx *ctx)
{
    static const char *const pcie_only[] = {"gen", "lanes", "p2p"};
    for (size_t i = 0; i < SIM_ARRAY_LEN(pcie_only); i++) {
        const input_ypair *k = input_ymap_find(intra, pcie_only[i]);
        if (k && t->intra.kind != HW_INTRA_PCIE)
            return input_schema_error(ctx, SIM_EINVAL, k->key,
                                   "topology.node.intra.%s applies only to kind pcie (this "
                                   "link is %s)",
                                   pcie_only[i], hw_intra_kind_name(t->intra.kind));
    }
    const input_ypair *shape = input_ymap_find(intra, "shape");
    if (shape && !input_ynode_is_null(shape->value) && t->intra.kind != HW_INTRA_NVLINK)
        return input_schema_error(ctx, SIM_EINVAL, shape->key,
                               "topology.node.intra.shape applies only to kind nvlink (this "
                               "link is %s)",
                               hw_intra_kind_name(t->intra.kind));
    const input_ypair *sharp = input_ymap_find(intra, "sharp");
    if (sharp && t->intra.sharp && t->intra.kind != HW_INTRA_NVSWITCH)
        return input_schema_error(ctx, SIM_EINVAL, sharp->value,
                               "topology.node.intra.sharp: NVLink SHARP needs kind nvswitch "
                               "(this link is %s)",
                               hw_intra_kind_name(t->intra.kind));
    if (t->intra.kind != HW_INTRA_PCIE) {
        if (t->intra.bw_Bps == 0)
            return input_schema_error(ctx, SIM_EINVAL, locate(root, NULL, "topology.node.intra"),
                                   "topology.node.intra: a %s link needs 'bandwidth'",
                                   hw_intra_kind_name(t->intra.kind));
        return 0;
    }
    const input_ypair *lat = input_ymap_find(intra, "latency");
    if (lat && !input_ynode_is_null(lat->value)) {
        input_schema_error(ctx, SIM_EINVAL, lat->key,
                        "topology.node.intra.latency does not apply to kind pcie: a PCIe path "
                        "takes the latency of each hop of the node's PCIe tree");
        sim_diag_hint(ctx->diag, "set node.pcie.latency (per PCIe hop)");
        return SIM_EINVAL;
    }
    int rc = unify_pcie(root, t, ctx);
    if (rc)
        return rc;
    if (t->intra.pcie_lanes == 0)
        t->intra.pcie_lanes = PCIE_LANES_DEFAULT;
    if (t->intra.bw_Bps == 0 && t->intra.pcie_gen == 0)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, NULL, "topology.node.intra"),
                               "topology.node.intra: a pcie link needs 'gen' (and 'lanes', "
                               "default 16), here or in node.pcie, or 'bandwidth'");
    return 0;
}

void input__node_defaults(hw_topology_spec *t)
{
    if (t->intra.latency_ps == UNSET_TIME)
        /* kind pcie: unused, the PCIe tree's per-hop latency (pcie.latency) applies */
        t->intra.latency_ps = t->intra.kind == HW_INTRA_PCIE ? 0 : LAT_NVLINK_PS;
    if (t->pcie.gen == 0)
        t->pcie.gen = (t->intra.kind == HW_INTRA_PCIE && t->intra.pcie_gen) ? t->intra.pcie_gen
                                                                            : PCIE_GEN_DEFAULT;
    if (t->pcie.lanes == 0)
        t->pcie.lanes = (t->intra.kind == HW_INTRA_PCIE && t->intra.pcie_lanes)
                            ? t->intra.pcie_lanes
                            : PCIE_LANES_DEFAULT;
    if (t->nics.latency_ps == UNSET_TIME)
        t->nics.latency_ps = LAT_NIC_PS;
}

static int check_topology(const input_ynode *root, hw_topology_spec *t, input_schema_ctx *ctx)
{
    /* The explicit form (t->n_devices > 0) was checked with the topology mapping
     * (input__topology_check); its parametric fields keep their defaults, filled below. */
    bool parametric = t->n_devices == 0;
    if (parametric && (double)t->nodes * t->gpus_per_node > PLAN_GPUS_MAX) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "topology.nodes", "topology"),
                           "topology.nodes: %d nodes x %d GPUs is more than %d GPUs, the "
                           "largest cluster stepsim simulates", t->nodes, t->gpus_per_node,
                           PLAN_GPUS_MAX);
        return SIM_EINVAL;
    }
    const input_ynode *intra = given(root, "topology.node.intra");
    if (parametric && !intra && t->gpus_per_node > 1)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, NULL, "topology.node"),
                               "topology.node: 'intra' is required when a node has more than "
                               "one GPU (%d)",
                               t->gpus_per_node);
    int rc;
    if (parametric && intra && (rc = check_intra(root, intra, t, ctx)))
        return rc;
    input__node_defaults(t);
    if (t->fabric.latency_ps == UNSET_TIME)
        t->fabric.latency_ps = LAT_FABRIC_PS;
    if (t->fabric.radix % 2 != 0) {
        input_schema_error(ctx, SIM_EINVAL,
                           locate(root, "topology.fabric.radix", "topology.fabric"),
                           "topology.fabric.radix: must be even (got %d)", t->fabric.radix);
        sim_diag_hint(ctx->diag, "a leaf switch uses half its ports for NICs and half for "
                                 "uplinks");
        return SIM_EINVAL;
    }
    if (parametric && t->nodes > 1 && (t->fabric.kind == HW_FABRIC_NONE || t->nics.count == 0)) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "topology.nodes", "topology"),
                        "topology.nodes: %d nodes need a network, but topology%s%s%s has no %s",
                        t->nodes, t->name[0] ? " '" : "", t->name, t->name[0] ? "'" : "",
                        t->fabric.kind == HW_FABRIC_NONE ? "'fabric'" : "NICs (node.nics)");
        sim_diag_hint(ctx->diag, "add fabric: {kind: fat-tree} and node.nics: {count: 8, "
                                 "bandwidth: 400 Gb/s}, or use nodes: 1");
        return SIM_EINVAL;
    }

    hw_gpu_spec *g = &t->gpu;
    if (g->peak_flops[HW_DTYPE_BF16] == 0 && g->peak_flops[HW_DTYPE_FP16] == 0)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, NULL, "topology.gpu.peak"),
                               "topology.gpu.peak: needs bf16 or fp16 (tensor-core peak of a "
                               "training GPU)");
    return input__node_groups_finish(root, t, ctx);
}

static int check_model(const input_ynode *root, plan_scenario *sc, input_schema_ctx *ctx)
{
    model_spec *m = &sc->model;
    if (m->kv_heads == 0)
        m->kv_heads = m->heads;
    if (m->heads % m->kv_heads != 0)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, "model.kv_heads", "model"),
                               "model.kv_heads: heads (%d) must be a multiple of kv_heads (%d)",
                               m->heads, m->kv_heads);
    if (m->attention.kind == MODEL_ATTN_MLA) {
        /* MLA: head_dim is qk_nope_head_dim, unrelated to hidden / heads (DeepSeek-V3: 128,
         * not 56), so it must be given; the key/value latent is what MLA is */
        const char *missing = m->head_dim == 0                  ? "model.head_dim"
                              : m->attention.kv_lora_rank == 0  ? "model.attention.kv_lora_rank"
                              : m->attention.v_head_dim == 0    ? "model.attention.v_head_dim"
                                                                : NULL;
        if (missing) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "model.attention.kind", "model"),
                            "model.attention.kind: mla needs %s > 0", missing);
            sim_diag_hint(ctx->diag, "MLA's shape comes from the model's config.json: head_dim "
                                     "= qk_nope_head_dim, kv_lora_rank, v_head_dim "
                                     "(workloads/deepseek-v3.yaml)");
            return SIM_EINVAL;
        }
        if (m->position == MODEL_POS_ALIBI) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "model.position", "model"),
                               "model.position: alibi does not apply to MLA, whose decoupled "
                               "rotary part carries the positions");
            sim_diag_hint(ctx->diag, "use position: rope with attention.kind: mla");
            return SIM_EINVAL;
        }
        if (m->qk_norm || m->qkv_bias || m->qkv_fused) {
            const char *key = m->qk_norm ? "qk_norm" : m->qkv_bias ? "qkv_bias" : "qkv_fused";
            char path[32];
            snprintf(path, sizeof path, "model.%s", key);
            return input_schema_error(ctx, SIM_EINVAL, locate(root, path, "model"),
                                      "model.%s: %s do not apply to MLA (its q and k/v go "
                                      "through latents)",
                                      key,
                                      m->qk_norm    ? "per-head q/k norms"
                                      : m->qkv_bias ? "q/k/v biases"
                                                    : "fused q/k/v matrices");
        }
        for (int i = 0; i < sc->training.finetune.n_targets; i++) {
            const char *t = sc->training.finetune.targets[i];
            if (t[1] == '\0' && (t[0] == 'q' || t[0] == 'k' || t[0] == 'v'))
                return input_schema_error(ctx, SIM_EINVAL,
                                       locate(root, "training.finetune.targets", "training"),
                                       "training.finetune.targets: '%s': MLA has no %s "
                                       "projection; adapt o and the MLP", t, t);
        }
    }
    if (m->head_dim == 0) {
        if (m->hidden % m->heads != 0) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "model.heads", "model"),
                            "model.heads: hidden (%d) is not a multiple of heads (%d)", m->hidden,
                            m->heads);
            sim_diag_hint(ctx->diag, "give head_dim explicitly when it is not hidden / heads");
            return SIM_EINVAL;
        }
        m->head_dim = m->hidden / m->heads;
    }
    /* Parameter counts are int64 sums of products of these sizes: bound them in double first
     * (generously: every layer as wide as the widest kind, all experts and shared experts
     * with gated MLPs, untied embeddings). */
    double h = m->hidden, hd = m->head_dim, a = m->heads, kv = m->kv_heads;
    double qr = m->attention.q_lora_rank, kvr = m->attention.kv_lora_rank,
           rope = m->attention.qk_rope_head_dim, vd = m->attention.v_head_dim;
    double attn = m->attention.kind == MODEL_ATTN_MLA
                      ? (qr + kvr + rope) * h + qr * a * (hd + rope) + kvr * a * (hd + vd) +
                            a * vd * h
                      : h * (a * hd + 2 * kv * hd) + a * hd * h;
    double mlp = 3 * h * m->ffn;
    if (m->moe.experts > 0)
        mlp = fmax(mlp, ((double)m->moe.experts + m->moe.shared_experts) * 3 * h *
                            m->moe.expert_ffn + (double)m->moe.experts * h);
    double params = (double)m->layers * (attn + mlp + 4 * h) + 2 * (double)m->vocab * h;
    if (params > PLAN_PARAMS_MAX) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, NULL, "model"),
                           "model: about %.3g parameters, more than the %.3g (2^50) stepsim "
                           "represents", params, PLAN_PARAMS_MAX);
        sim_diag_hint(ctx->diag, "check layers, hidden, ffn, heads, vocab and moe.experts "
                                 "(Llama 3.1 405B has 4.1e11 parameters)");
        return SIM_EINVAL;
    }
    if (m->max_seq_len > 0 && sc->training.seq_len > m->max_seq_len)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, "training.seq_len", "training"),
                               "training.seq_len: %lld exceeds model.max_seq_len (%d)",
                               (long long)sc->training.seq_len, m->max_seq_len);
    return 0;
}

/* training.attention_kernel: the GPU's tables for that kernel replace attention_efficiency
 * (unless they are the ones it holds). Idempotent: a second pass finds them in place. */
static int select_attention_kernel(const input_ynode *root, plan_scenario *sc, hw_gpu_spec *g,
                                   input_schema_ctx *ctx)
{
    hw_attn_kernel k = sc->training.attention_kernel;
    const char *name = hw_attn_kernel_name(k);
    if (!sc->training.flash_attention) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "training.attention_kernel", "training"),
                           "training.attention_kernel: %s is a fused attention kernel, but "
                           "training.flash_attention is false", name);
        sim_diag_hint(ctx->diag, "drop attention_kernel, or set flash_attention: true");
        return SIM_EINVAL;
    }
    /* ALiBi needs a kernel that adds the bias: FlashAttention 1.x takes none, and
     * FlashAttention-3 does not implement it (Dao-AILab/flash-attention#1666) */
    if (sc->model.position == MODEL_POS_ALIBI &&
        (k == HW_ATTN_KERNEL_FA1 || k == HW_ATTN_KERNEL_FA3)) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "training.attention_kernel", "training"),
                           "training.attention_kernel: %s has no ALiBi bias (model.position: "
                           "alibi)", name);
        sim_diag_hint(ctx->diag, "FlashAttention-2 (fa2, from 2.4) and cuDNN's attention add it; "
                                 "or run unfused attention (flash_attention: false)");
        return SIM_EINVAL;
    }
    if (k == g->attn_kernel)
        return 0;
    if (g->attn_alt[k][0].n == 0) {
        char have[64] = "";
        for (int i = 1; i < HW_ATTN_KERNEL_COUNT; i++)
            if (i == (int)g->attn_kernel || g->attn_alt[i][0].n > 0)
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
                         have[0] ? ", " : "", hw_attn_kernel_name((hw_attn_kernel)i));
        input_schema_error(ctx, SIM_EINVAL, locate(root, "training.attention_kernel", "training"),
                           "training.attention_kernel: GPU '%s' has no %s table", g->name, name);
        if (have[0])
            sim_diag_hint(ctx->diag, "its catalog entry has: %s (or use default)", have);
        else
            sim_diag_hint(ctx->diag, "its catalog entry names no kernel: use default");
        return SIM_EINVAL;
    }
    for (int i = 0; i < HW_ATTN_TABLES; i++)
        g->attn_eff[i] = g->attn_alt[k][i];
    for (int i = 0; i < 2; i++)
        g->attn_head[i] = g->attn_alt_head[k][i];
    g->attn_kernel = k;
    return 0;
}

static int check_training(const input_ynode *root, plan_scenario *sc, input_schema_ctx *ctx)
{
    plan_training *tr = &sc->training;
    plan_parallel *p = &sc->parallel;
    const hw_topology_spec *t = &sc->topology;

    /* every GPU of the cluster (the topology's, and each node group's) */
    for (int i = -1; i < t->n_groups; i++) {
        hw_gpu_spec *g = i < 0 ? &sc->topology.gpu : &sc->topology.groups[i].gpu;
        if (g->peak_flops[tr->precision] == 0) {
            const input_ynode *at = given(root, "training.precision");
            return input_schema_error(
                ctx, SIM_EINVAL, at ? at : locate(root, NULL, "topology.gpu.peak"),
                "training.precision: %s needs topology.gpu.peak.%s, which GPU%s%s%s "
                "does not give",
                dtype_name(tr->precision), dtype_name(tr->precision), g->name[0] ? " '" : "",
                g->name, g->name[0] ? "'" : "");
        }
        if (tr->precision == HW_DTYPE_FP8 && g->peak_flops[HW_DTYPE_BF16] == 0) {
            const input_ynode *at = given(root, "training.precision");
            return input_schema_error(
                ctx, SIM_EINVAL, at ? at : locate(root, NULL, "topology.gpu.peak"),
                "training.precision: fp8 runs its linear layers in fp8 and every other kernel "
                "in bf16, which GPU%s%s%s has no peak for (topology.gpu.peak.bf16)",
                g->name[0] ? " '" : "", g->name, g->name[0] ? "'" : "");
        }
        int rc = tr->attention_kernel != HW_ATTN_KERNEL_UNNAMED
                     ? select_attention_kernel(root, sc, g, ctx)
                     : 0;
        if (rc)
            return rc;
    }

    if (tr->precision == HW_DTYPE_FP8 && tr->finetune.method != PLAN_FT_FULL)
        return input_schema_error(ctx, SIM_EINVAL,
                                  locate(root, "training.finetune.method", "training"),
                                  "training.finetune.method: fp8 training of LoRA/QLoRA adapters "
                                  "is not modelled; use training.precision: bf16");

    /* Degrees are at most 2^20 each, so the product fits in a double exactly. */
    double need = (double)p->dp * p->tp * p->pp * p->cp;
    double have = (double)t->nodes * t->gpus_per_node;
    char shape[64];
    snprintf(shape, sizeof shape, "%d nodes x %d", t->nodes, t->gpus_per_node);
    if (t->n_devices > 0) { /* explicit form: the GPUs listed */
        int gpus = 0;
        for (int i = 0; i < t->n_devices; i++)
            gpus += t->devices[i].kind == HW_DEV_GPU;
        have = gpus;
        snprintf(shape, sizeof shape, "listed in topology.devices");
    }
    if (need > have) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.dp", "parallel"),
                           "parallel.dp: dp %d x tp %d x pp %d x cp %d needs %.0f GPUs but "
                           "topology%s%s%s has %.0f (%s)",
                           p->dp, p->tp, p->pp, p->cp, need, t->name[0] ? " '" : "", t->name,
                           t->name[0] ? "'" : "", have, shape);
        sim_diag_hint(ctx->diag, t->n_groups > 0 ? "a smaller layout, or more nodes in a node "
                                                   "group (topology.node_groups[i].nodes)"
                                 : t->n_devices > 0 ? "a smaller layout, or more GPUs listed"
                                                    : "a smaller layout, or more nodes "
                                                      "(topology.nodes)");
        return SIM_EINVAL;
    }
    if (p->dp % p->ep != 0)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.ep", "parallel"),
                               "parallel.ep: %d does not divide dp (%d)", p->ep, p->dp);
    /* Megatron splits attention heads and the MLP's hidden dimension over the TP group; KV
     * heads are split too, or replicated when there are fewer of them than TP ranks. */
    const model_spec *m = &sc->model;
    if (p->tp > 1) {
        const char *what = NULL;
        int value = 0;
        if (m->heads % p->tp != 0)
            what = "model.heads", value = m->heads;
        else if (m->ffn % p->tp != 0)
            what = "model.ffn", value = m->ffn;
        else if (m->kv_heads % p->tp != 0 && p->tp % m->kv_heads != 0)
            what = "model.kv_heads", value = m->kv_heads;
        if (what) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.tp", "parallel"),
                            "parallel.tp: %d does not split %s (%d) evenly", p->tp, what, value);
            sim_diag_hint(ctx->diag, "choose a tp that divides the number of heads and the ffn "
                                     "size (kv_heads may also be a divisor of tp)");
            return SIM_EINVAL;
        }
    }
    /* Ring attention with causal load balancing (Megatron/Transformer Engine): the sequence
     * is cut into 2·cp equal chunks, and the steps are flash-attention kernels. */
    if (p->cp > 1 && tr->seq_len % (2 * (int64_t)p->cp) != 0) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.cp", "parallel"),
                        "parallel.cp: %d needs training.seq_len (%lld) to be a multiple of "
                        "2 x cp = %d", p->cp, (long long)tr->seq_len, 2 * p->cp);
        sim_diag_hint(ctx->diag, "causal load balancing gives each rank two of 2 x cp equal "
                                 "chunks of the sequence");
        return SIM_EINVAL;
    }
    /* ALiBi under context parallelism: no ring-attention kernel adds the bias (Transformer
     * Engine turns its flash and fused backends off for an alibi bias under CP) */
    if (p->cp > 1 && sc->model.position == MODEL_POS_ALIBI) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.cp", "parallel"),
                           "parallel.cp: context parallelism with ALiBi (model.position: alibi) "
                           "is not modelled");
        sim_diag_hint(ctx->diag, "no ring-attention kernel adds ALiBi's bias; use cp: 1");
        return SIM_EINVAL;
    }
    if (p->cp > 1 && !tr->flash_attention) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.cp", "parallel"),
                        "parallel.cp: context parallelism needs training.flash_attention: "
                        "true");
        sim_diag_hint(ctx->diag, "ring attention runs one fused attention kernel per ring "
                                 "step, as Transformer Engine does");
        return SIM_EINVAL;
    }
    model_spec *mm = &sc->model;
    if (tr->recompute == MODEL_RECOMPUTE_OP) {
        const char *why = mm->moe.experts > 0 ? "mixture-of-experts layers"
                          : mm->attention.kind == MODEL_ATTN_MLA ? "multi-head latent attention"
                          : tr->finetune.method != PLAN_FT_FULL ? "LoRA/QLoRA adapters"
                                                                 : NULL;
        if (why) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "training.recompute", "training"),
                               "training.recompute: op (torchtitan's per-op policy) is not "
                               "modelled with %s", why);
            sim_diag_hint(ctx->diag, "use selective or full; op is defined over a dense "
                                     "MHA/GQA layer's seven matmuls");
            return SIM_EINVAL;
        }
    }
    if (tr->grad_accumulation == PLAN_GRAD_ACCUM_CAST_ADD) {
        /* DeepSpeed's BF16_Optimizer (engine.py selects it for bf16 without ZeRO-2/3 or an
         * offload, bf16_optimizer.py asserts bf16; its pipeline engine runs 1F1B): dense
         * layers trained in full, the fp32 buffer whole on every rank and reduced once the
         * backward has filled it */
        const char *why =
            p->zero > 1 ? "ZeRO-2/3 (DeepSpeed runs BF16_Optimizer without ZeRO, sharding "
                          "only the optimizer: parallel.zero 0 or 1)"
            : tr->precision != HW_DTYPE_BF16 ? "fp16 or fp8 training (BF16_Optimizer is bf16's)"
            : p->offload.optimizer != PLAN_OFFLOAD_NONE ? "an offloaded optimizer"
            : tr->master_weights != PLAN_MASTER_FP32    ? "master_weights: none"
            : p->pp > 1 && p->pipeline.schedule != PLAN_SCHED_1F1B
                ? "a pipeline schedule other than 1f1b (DeepSpeed's pipeline engine's)"
            : mm->moe.experts > 0                      ? "mixture-of-experts layers"
            : mm->attention.kind == MODEL_ATTN_MLA     ? "multi-head latent attention"
            : tr->finetune.method != PLAN_FT_FULL      ? "LoRA/QLoRA adapters"
            : p->ddp.overlap ? "gradient reduction overlapped with the backward (the fp32 "
                               "buffer is complete only after it: parallel.ddp.overlap: false)"
                             : NULL;
        if (why) {
            input_schema_error(ctx, SIM_EINVAL,
                               locate(root, "training.grad_accumulation", "training"),
                               "training.grad_accumulation: cast_add is not modelled with %s",
                               why);
            sim_diag_hint(ctx->diag, "cast_add is DeepSpeed's BF16_Optimizer; fused (the "
                                     "default) accumulates in the weight-gradient GEMMs");
            return SIM_EINVAL;
        }
    }
    if (tr->recompute_every > 1 && tr->recompute == MODEL_RECOMPUTE_NONE) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "training.recompute_every", "training"),
                           "training.recompute_every: %d has nothing to apply to "
                           "(training.recompute is none)", tr->recompute_every);
        sim_diag_hint(ctx->diag, "set training.recompute (full for torchtitan's per-layer "
                                 "checkpointing) or drop recompute_every");
        return SIM_EINVAL;
    }
    if (tr->recompute_every > mm->layers) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "training.recompute_every", "training"),
                           "training.recompute_every: %d is more than model.layers (%d): no "
                           "layer would be recomputed", tr->recompute_every, mm->layers);
        sim_diag_hint(ctx->diag, "use recompute: none to keep every layer's activations");
        return SIM_EINVAL;
    }
    if (mm->moe.experts > 0) {
        if (mm->moe.top_k < 1 || mm->moe.top_k > mm->moe.experts)
            return input_schema_error(ctx, SIM_EINVAL, locate(root, "model.moe.top_k", "model.moe"),
                                   "model.moe.top_k: must be from 1 to experts (%d), got %d",
                                   mm->moe.experts, mm->moe.top_k);
        if (mm->moe.expert_ffn == 0)
            mm->moe.expert_ffn = mm->ffn; /* default: the dense MLP's size */
        if (tr->finetune.method != PLAN_FT_FULL)
            return input_schema_error(ctx, SIM_EINVAL,
                                   locate(root, "training.finetune.method", "training"),
                                   "training.finetune.method: LoRA/QLoRA on mixture-of-experts "
                                   "models is not supported yet");
        if (mm->moe.dense_layers >= mm->layers)
            return input_schema_error(ctx, SIM_EINVAL,
                                   locate(root, "model.moe.dense_layers", "model.moe"),
                                   "model.moe.dense_layers: %d leaves no MoE layer of %d",
                                   mm->moe.dense_layers, mm->layers);
    }
    if (mm->moe.experts == 0 && (tr->moe_capacity_factor > 0 || tr->moe_routing_skew > 0)) {
        bool cf = tr->moe_capacity_factor > 0;
        const char *key = cf ? "training.moe_capacity_factor" : "training.moe_routing_skew";
        input_schema_error(ctx, SIM_EINVAL, locate(root, key, "training"),
                        "%s: the model has no experts (model.moe.experts is 0)", key);
        sim_diag_hint(ctx->diag, "routing settings apply to mixture-of-experts models only");
        return SIM_EINVAL;
    }
    if (p->ep > 1 && (mm->moe.experts == 0 || mm->moe.experts % p->ep != 0))
        return input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.ep", "parallel"),
                               "parallel.ep: %d must divide the number of experts (%d)", p->ep,
                               mm->moe.experts);
    if (mm->moe.experts / p->ep > MODEL_MOE_LOCAL_MAX) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.ep", "model.moe.experts"),
                           "%s: %d experts over ep %d put %d on each GPU, more than the %d one "
                           "GPU may hold", p->ep > 1 ? "parallel.ep" : "model.moe.experts",
                           mm->moe.experts, p->ep, mm->moe.experts / p->ep, MODEL_MOE_LOCAL_MAX);
        sim_diag_hint(ctx->diag, "raise parallel.ep (a divisor of dp and of the experts) to at "
                                 "least %d", (mm->moe.experts + MODEL_MOE_LOCAL_MAX - 1) /
                                                 MODEL_MOE_LOCAL_MAX);
        return SIM_EINVAL;
    }
    if (p->sp && p->tp == 1)
        return input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.sp", "parallel"),
                               "parallel.sp: sequence parallelism needs tp > 1");
    if (p->tp_comm_overlap && !p->sp) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.tp_comm_overlap", "parallel"),
                        "parallel.tp_comm_overlap: overlapping TP communication needs "
                        "sequence parallelism (sp: true)");
        sim_diag_hint(ctx->diag, "Megatron's userbuffers overlap the all-gathers and "
                                 "reduce-scatters of sequence parallelism with their GEMMs");
        return SIM_EINVAL;
    }

    if (tr->global_batch > 0) {
        /* micro_batch and dp are bounded (int64 and 2^20): compare in double to avoid overflow */
        double per_step = (double)tr->micro_batch * p->dp;
        if (per_step > (double)tr->global_batch ||
            tr->global_batch % (tr->micro_batch * p->dp) != 0) {
            input_schema_error(ctx, SIM_EINVAL, locate(root, "training.global_batch", "training"),
                            "training.global_batch: %lld is not a multiple of micro_batch x dp "
                            "= %lld x %d",
                            (long long)tr->global_batch, (long long)tr->micro_batch, p->dp);
            sim_diag_hint(ctx->diag, "accumulation steps = global_batch / (micro_batch x dp) "
                                     "must be a whole number");
            return SIM_EINVAL;
        }
    }

    if (p->pipeline.virtual_stages > 1 && p->pipeline.schedule != PLAN_SCHED_INTERLEAVED)
        return input_schema_error(ctx, SIM_EINVAL,
                               locate(root, "parallel.pipeline.virtual_stages", "parallel"),
                               "parallel.pipeline.virtual_stages: %d virtual stages need "
                               "schedule: interleaved",
                               p->pipeline.virtual_stages);
    /* Each pipeline chunk (pp stages x virtual_stages chunks each; the plan ignores
     * virtual_stages without a pipeline) holds at least one layer. */
    int vst = p->pp > 1 ? p->pipeline.virtual_stages : 1;
    if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_ZBV)
        vst = 2; /* two chunks a stage */
    long long chunks = (long long)p->pp * vst;
    if (chunks > sc->model.layers) {
        bool by_v = vst > 1 && given(root, "parallel.pipeline.virtual_stages") &&
                    p->pipeline.schedule != PLAN_SCHED_ZBV;
        if (by_v)
            input_schema_error(ctx, SIM_EINVAL, given(root, "parallel.pipeline.virtual_stages"),
                               "parallel.pipeline.virtual_stages: pp %d x virtual_stages %d = "
                               "%lld pipeline chunks for %d layers",
                               p->pp, vst, chunks, sc->model.layers);
        else
            input_schema_error(ctx, SIM_EINVAL, locate(root, "parallel.pp", "parallel"),
                               "parallel.pp: %d pipeline stages%s for %d layers", p->pp,
                               vst > 1 ? " (zbv: two chunks each)" : "", sc->model.layers);
        sim_diag_hint(ctx->diag, "every pipeline chunk holds at least one layer");
        return SIM_EINVAL;
    }
    if (p->pp > 1 && vst > 1 && p->pipeline.schedule == PLAN_SCHED_INTERLEAVED) {
        int64_t per = tr->micro_batch * p->dp; /* global_batch is a multiple (checked above) */
        int64_t accum = tr->global_batch > 0 ? tr->global_batch / per : 1;
        if (accum % p->pp != 0) {
            input_schema_error(ctx, SIM_EINVAL,
                               locate(root, "parallel.pipeline.schedule", "parallel"),
                               "parallel.pipeline.schedule: interleaved needs the micro-batches "
                               "per pipeline (%lld) to be a multiple of pp (%d)",
                               (long long)accum, p->pp);
            sim_diag_hint(ctx->diag, "micro-batches per pipeline = global_batch / (micro_batch "
                                     "x dp)");
            return SIM_EINVAL;
        }
    }
    if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_DUALPIPE) {
        int64_t per = tr->micro_batch * p->dp;
        int64_t accum = tr->global_batch > 0 ? tr->global_batch / per : 1;
        if (p->pp % 2 != 0 || accum % 2 != 0 || accum < 2 * (int64_t)p->pp) {
            bool odd = p->pp % 2 != 0;
            input_schema_error(ctx, SIM_EINVAL,
                               locate(root, odd ? "parallel.pp" : "training.global_batch",
                                      odd ? "parallel" : "training"),
                               odd ? "parallel.pp: dualpipe pairs stage s with stage pp-1-s, "
                                     "and pp %d is odd"
                                   : "training.global_batch: dualpipe needs an even number of "
                                     "micro-batches per pipeline, at least 2 x pp = %d, and "
                                     "this batch gives %lld",
                               odd ? p->pp : 2 * p->pp, (long long)accum);
            sim_diag_hint(ctx->diag, odd ? "use an even pp, or schedule: 1f1b"
                                         : "micro-batches per pipeline = global_batch / "
                                           "(micro_batch x dp); half enter at each end");
            return SIM_EINVAL;
        }
    }
    if (p->zero == 3 && mm->moe.experts > 0 &&
        (p->fsdp.implementation == PLAN_DEEPSPEED || p->fsdp.hybrid_shard)) {
        bool ds = p->fsdp.implementation == PLAN_DEEPSPEED;
        return input_schema_error(ctx, ds ? SIM_EINVAL : SIM_ENOTSUP,
                                  locate(root, ds ? "parallel.fsdp.implementation"
                                                  : "parallel.fsdp.hybrid_shard",
                                         "parallel"),
                                  ds ? "parallel.fsdp.implementation: DeepSpeed's MoE layers run "
                                       "ZeRO stage 2 at most, not stage 3"
                                     : "parallel.fsdp.hybrid_shard: hybrid sharding of a "
                                       "mixture-of-experts model is not supported yet");
    }
    if (p->zero == 3 && p->pp > 1 && p->fsdp.implementation == PLAN_DEEPSPEED) {
        input_schema_error(ctx, SIM_EINVAL,
                           locate(root, "parallel.fsdp.implementation", "parallel"),
                           "parallel.fsdp.implementation: DeepSpeed's pipeline engine runs "
                           "ZeRO stage 1 at most, not stage 3");
        sim_diag_hint(ctx->diag, "use fsdp2 (torchtitan's FSDP with pipelining) or fsdp1, or "
                                 "parallel.zero: 1");
        return SIM_EINVAL;
    }
    int rc = input__check_parallel_options(root, sc, ctx);
    if (rc)
        return rc;
    if (p->pipeline.n_stage_layers > 0) {
        const input_ynode *at = locate(root, "parallel.pipeline.stage_layers", "parallel");
        /* one entry per chunk: ZB-V has two a stage */
        long long stages = (long long)p->pp * p->pipeline.virtual_stages, sum = 0;
        if (p->pp > 1 && p->pipeline.schedule == PLAN_SCHED_ZBV)
            stages = 2LL * p->pp;
        for (int i = 0; i < p->pipeline.n_stage_layers; i++)
            sum += p->pipeline.stage_layers[i];
        if (p->pipeline.n_stage_layers != stages)
            return input_schema_error(ctx, SIM_EINVAL, at,
                                   "parallel.pipeline.stage_layers: %d entries, but the "
                                   "pipeline has %lld chunks (pp x virtual_stages; zbv 2 x pp)",
                                   p->pipeline.n_stage_layers, stages);
        if (sum != sc->model.layers)
            return input_schema_error(ctx, SIM_EINVAL, at,
                                   "parallel.pipeline.stage_layers: the stages hold %lld layers, "
                                   "the model has %d",
                                   sum, sc->model.layers);
    }

    if (tr->finetune.n_targets == 0) {
        static const char *const all[] = {"q", "k", "v", "o", "gate", "up", "down"};
        for (size_t i = 0; i < SIM_ARRAY_LEN(all); i++)
            snprintf(tr->finetune.targets[i], sizeof tr->finetune.targets[i], "%s", all[i]);
        tr->finetune.n_targets = (int)SIM_ARRAY_LEN(all);
    }
    return 0;
}

int input__topology_finish(const input_ynode *root, const char *default_name, hw_topology_spec *t,
                        input_schema_ctx *ctx)
{
    const input_ypair *topo = input_ypath_find(root, "topology");
    default_name_from_file(root, "topology", root, t->name, sizeof t->name);
    if (!t->name[0] && default_name)
        snprintf(t->name, sizeof t->name, "%s", default_name);
    if (topo)
        default_name_from_file(root, "topology.gpu", topo->value, t->gpu.name,
                               sizeof t->gpu.name);
    return check_topology(root, t, ctx);
}

int input__scenario_finish(const input_ynode *root, const char *default_name, plan_scenario *sc,
                        input_schema_ctx *ctx)
{
    if (!sc->name[0])
        snprintf(sc->name, sizeof sc->name, "%s", default_name);
    default_name_from_file(root, "model", root, sc->model.name, sizeof sc->model.name);
    /* the run's group in a results file is /runs/NAME: one HDF5 link name */
    const char *n = sc->name;
    if (!n[0] || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strchr(n, '/')) {
        input_schema_error(ctx, SIM_EINVAL, locate(root, "name", NULL),
                           "name: \"%s\" cannot name a run (it is empty, \".\", \"..\" or "
                           "contains '/')", n);
        sim_diag_hint(ctx->diag, "a run is stored as the group /runs/NAME of a results file");
        return SIM_EINVAL;
    }

    int rc;
    if ((rc = input__topology_finish(root, NULL, &sc->topology, ctx)) ||
        (rc = check_model(root, sc, ctx)) || (rc = check_training(root, sc, ctx)))
        return rc;
    return 0;
}
