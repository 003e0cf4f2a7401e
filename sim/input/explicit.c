/* The topology's two forms, and the explicit one's `devices:` and `links:` lists
 * (docs/scenario-format.md "Explicit form", docs/topologies.md).
 *
 * A topology is either parametric (`nodes`, `node`, `fabric`) or explicit (`devices`,
 * `links`); input__topology_check, run once the whole topology mapping is read, rejects a mix at
 * the key that completes it. Devices and links are read item by item through small schemas
 * (so unknown keys, types and units get the usual errors); links name their ends, which are
 * resolved to device indices only after both lists are read, so the lists may come in either
 * order. Defaults that depend on the ends (the link class, then the latency by class) are
 * filled there too. */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "input/keys.h"
#include "input/suggest.h"

/* Default latency of a link by class when the link gives none (docs/scenario-format.md). */
static sim_time class_latency_ps(hw_link_class c)
{
    switch (c) {
    case HW_LINK_NVLINK: return SIM_PS_PER_US / 2;   /* 0.5 us */
    case HW_LINK_PCIE: return SIM_PS_PER_US / 2;     /* 0.5 us */
    case HW_LINK_IB: return SIM_PS_PER_US;           /* 1 us */
    case HW_LINK_ETHERNET: return 2 * SIM_PS_PER_US; /* 2 us */
    case HW_LINK_CPU: return SIM_PS_PER_US / 5;      /* 0.2 us */
    default: break;
    }
    SIM_ASSERT(0, "link class %d", (int)c);
    return 0;
}

/* Class of a link that gives none, from the kinds of its ends: gpu-gpu or anything-nvswitch
 * is nvlink; nic-switch or switch-switch is ib; cpu-cpu or cpu-host_memory is cpu; anything
 * else is pcie. */
static hw_link_class infer_class(hw_dev_kind a, hw_dev_kind b)
{
    if ((a == HW_DEV_GPU && b == HW_DEV_GPU) || a == HW_DEV_NVSWITCH || b == HW_DEV_NVSWITCH)
        return HW_LINK_NVLINK;
    if ((a == HW_DEV_SWITCH && (b == HW_DEV_NIC || b == HW_DEV_SWITCH)) ||
        (b == HW_DEV_SWITCH && a == HW_DEV_NIC))
        return HW_LINK_IB;
    if ((a == HW_DEV_CPU && (b == HW_DEV_CPU || b == HW_DEV_HOST_MEMORY)) ||
        (b == HW_DEV_CPU && a == HW_DEV_HOST_MEMORY))
        return HW_LINK_CPU;
    return HW_LINK_PCIE;
}

static const char *kind_name(hw_dev_kind k)
{
    for (const input_enum_name *e = input__dev_kind_names; e->name; e++)
        if (e->value == (int)k)
            return e->name;
    return "?";
}

/* The pair of `key` in mapping `m` when its value is given (not null), else NULL. */
static const input_ypair *given_pair(const input_ynode *m, const char *key)
{
    const input_ypair *p = input_ymap_find(m, key);
    return p && !input_ynode_is_null(p->value) ? p : NULL;
}

/* Index of the pair `p` in mapping `m` (for "which came first"). */
static size_t pair_index(const input_ynode *m, const input_ypair *p)
{
    return (size_t)(p - m->pairs);
}

/* Appends "[i]" to ctx->path; returns the length to restore. */
static size_t path_index(input_schema_ctx *ctx, size_t i)
{
    size_t len = strlen(ctx->path);
    snprintf(ctx->path + len, sizeof ctx->path - len, "[%zu]", i);
    return len;
}

static int expect_items(input_schema_ctx *ctx, const input_ynode *v, const char *example,
                        size_t max, const char *what)
{
    if (v->kind != INPUT_YSEQ)
        return input_schema_error(
            ctx, SIM_EINVAL, v, "%s: expected a list such as %s, got %s%s%s%s", ctx->path, example,
            input_ykind_name(v->kind), v->kind == INPUT_YSCALAR ? " '" : "",
            v->kind == INPUT_YSCALAR ? v->text : "", v->kind == INPUT_YSCALAR ? "'" : "");
    if (v->n > max)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: at most %zu %s, got %zu", ctx->path, max,
                               what, v->n);
    return 0;
}

static int expect_item_map(input_schema_ctx *ctx, const input_ynode *item, const char *example)
{
    if (item->kind == INPUT_YMAP)
        return 0;
    return input_schema_error(
        ctx, SIM_EINVAL, item, "%s: expected a mapping such as %s, got %s%s%s%s", ctx->path,
        example, input_ykind_name(item->kind), item->kind == INPUT_YSCALAR ? " '" : "",
        item->kind == INPUT_YSCALAR ? item->text : "", item->kind == INPUT_YSCALAR ? "'" : "");
}

/* ---------------------------------------------------------------------------------------- */
/* Devices                                                                                  */

#define DV(m) offsetof(hw_dev_spec, m)
static const input_key device_keys[] = {
    {.name = "name", .type = INPUT_K_STRING, .offset = DV(name),
     .size = sizeof(((hw_dev_spec *)0)->name), .flags = INPUT_KEY_REQUIRED},
    {.name = "kind", .type = INPUT_K_ENUM, .offset = DV(kind), .enums = input__dev_kind_names,
     .flags = INPUT_KEY_REQUIRED},
    {.name = "node", .type = INPUT_K_INT, .offset = DV(node),
     .flags = INPUT_KEY_MIN | INPUT_KEY_MAX,
     .min = 0, .max = 1048575},
    {.name = "p2p", .type = INPUT_K_BOOL, .offset = DV(p2p)},
    {.name = "bandwidth", .type = INPUT_K_QUANTITY, .offset = DV(bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH,
     .flags = INPUT_KEY_MIN_EXCL, .min = 0},
};
static const input_map device_map = {
    .what = "device", .keys = device_keys, .n_keys = SIM_ARRAY_LEN(device_keys)};

/* Checks of one device entry that involve several of its keys; `i` is its index. */
static int check_device(const hw_topology_spec *t, const input_ynode *item, size_t i,
                        input_schema_ctx *ctx)
{
    const hw_dev_spec *d = &t->devices[i];
    const input_ypair *name = input_ymap_find(item, "name"), *p;
    if (!d->name[0])
        return input_schema_error(ctx, SIM_EINVAL, name->value, "%s.name: must not be empty",
                               ctx->path);
    if (d->kind != HW_DEV_GPU && (p = given_pair(item, "p2p")))
        return input_schema_error(ctx, SIM_EINVAL, p->key,
                               "%s.p2p applies only to kind gpu (this device is %s)", ctx->path,
                               kind_name(d->kind));
    if (d->kind != HW_DEV_HOST_MEMORY && (p = given_pair(item, "bandwidth"))) {
        input_schema_error(ctx, SIM_EINVAL, p->key,
                        "%s.bandwidth applies only to kind host_memory (this device is %s)",
                        ctx->path, kind_name(d->kind));
        sim_diag_hint(ctx->diag, "give a link's bandwidth on the link (links: [{between: [a, "
                                 "b], bandwidth: ...}])");
        return SIM_EINVAL;
    }
    if (d->kind == HW_DEV_HOST_MEMORY && !given_pair(item, "bandwidth")) {
        input_schema_error(ctx, SIM_EINVAL, item,
                        "%s: host_memory '%s' needs 'bandwidth' (its DRAM bandwidth, shared by "
                        "reads and writes)",
                        ctx->path, d->name);
        sim_diag_hint(ctx->diag, "e.g. bandwidth: 89.6 GB/s for dual-channel DDR5-5600");
        return SIM_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
        if (strcmp(t->devices[j].name, d->name) == 0)
            return input_schema_error(ctx, SIM_EINVAL, name->value,
                                   "%s.name: device '%s' is listed twice (first as devices[%zu])",
                                   ctx->path, d->name, j);
    return 0;
}

int input__devices_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    (void)key;
    hw_topology_spec *t = base;
    int rc = expect_items(ctx, v, "[{name: gpu0, kind: gpu}, {name: cpu0, kind: cpu}]",
                          HW_EXPLICIT_DEVICES_MAX, "devices (HW_EXPLICIT_DEVICES_MAX)");
    if (rc)
        return rc;
    t->n_devices = 0;
    for (size_t i = 0; i < v->n; i++) {
        const input_ynode *item = v->items[i];
        hw_dev_spec *d = &t->devices[i];
        memset(d, 0, sizeof *d);
        d->p2p = true;
        size_t saved = path_index(ctx, i);
        if (!(rc = expect_item_map(ctx, item, "{name: gpu0, kind: gpu}")) &&
            !(rc = input_schema_apply(&device_map, item, NULL, d, ctx)))
            rc = check_device(t, item, i, ctx);
        ctx->path[saved] = '\0';
        if (rc)
            return rc;
    }
    t->n_devices = (int)v->n;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Links                                                                                    */

/* `between`, `from`, `to`: device names, resolved in input__topology_check; here only their
 * shape is checked. */
static int endpoint_fn(const input_key *key, const input_ynode *v, void *base,
                       input_schema_ctx *ctx)
{
    (void)key;
    (void)base;
    if (v->kind != INPUT_YSCALAR)
        return input_schema_error(ctx, SIM_EINVAL, v, "%s: expected a device name, got %s",
                               ctx->path, input_ykind_name(v->kind));
    return 0;
}

static int between_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    (void)key;
    (void)base;
    if (v->kind != INPUT_YSEQ || v->n != 2)
        return input_schema_error(ctx, SIM_EINVAL, v,
                               "%s: expected two device names such as [gpu0, cpu0], got %s%s%s%s",
                               ctx->path,
                               v->kind == INPUT_YSEQ ? "" : input_ykind_name(v->kind),
                               v->kind == INPUT_YSCALAR ? " '" : "",
                               v->kind == INPUT_YSCALAR ? v->text : "",
                               v->kind == INPUT_YSCALAR ? "'" : "");
    for (size_t i = 0; i < 2; i++) {
        const input_ynode *n = v->items[i];
        if (n->kind != INPUT_YSCALAR || input_ynode_is_null(n))
            return input_schema_error(ctx, SIM_EINVAL, n, "%s[%zu]: expected a device name, got %s",
                                   ctx->path, i,
                                   input_ynode_is_null(n) ? "null" : input_ykind_name(n->kind));
    }
    return 0;
}

#define LK(m) offsetof(hw_link_spec, m)
static const input_key link_keys[] = {
    {.name = "between", .type = INPUT_K_CUSTOM, .fn = between_fn},
    {.name = "from", .type = INPUT_K_CUSTOM, .fn = endpoint_fn},
    {.name = "to", .type = INPUT_K_CUSTOM, .fn = endpoint_fn},
    {.name = "bandwidth", .type = INPUT_K_QUANTITY, .offset = LK(bw_Bps),
     .unit = INPUT_UNIT_BANDWIDTH,
     .flags = INPUT_KEY_REQUIRED | INPUT_KEY_MIN_EXCL, .min = 0},
    {.name = "latency", .type = INPUT_K_TIME, .offset = LK(latency_ps), .flags = INPUT_KEY_MIN,
     .min = 0},
    {.name = "class", .type = INPUT_K_ENUM, .offset = LK(cls), .enums = input__link_class_names},
};
static const input_map link_map = {
    .what = "link", .keys = link_keys, .n_keys = SIM_ARRAY_LEN(link_keys)};

/* Exactly one of `between` and `from` + `to`. */
static int check_link_ends(const input_ynode *item, input_schema_ctx *ctx)
{
    const input_ypair *bw = given_pair(item, "between"), *fr = given_pair(item, "from"),
                   *to = given_pair(item, "to");
    if (bw && (fr || to)) {
        /* at whichever of the two forms comes second */
        const input_ypair *one =
            fr && (!to || pair_index(item, fr) < pair_index(item, to)) ? fr : to;
        const input_ypair *at = pair_index(item, bw) > pair_index(item, one) ? bw : one;
        input_schema_error(ctx, SIM_EINVAL, at->key,
                        "%s: a link has either 'between' (both directions) or 'from' and 'to' "
                        "(one direction), not both",
                        ctx->path);
        sim_diag_hint(ctx->diag, "for one direction write {from: a, to: b, ...}; for both, "
                                 "{between: [a, b], ...}");
        return SIM_EINVAL;
    }
    if (!bw && !fr && !to) {
        input_schema_error(ctx, SIM_EINVAL, item,
                        "%s: a link needs 'between: [a, b]' (both directions) or 'from' and "
                        "'to' (one direction)",
                        ctx->path);
        sim_diag_hint(ctx->diag, "e.g. {between: [gpu0, cpu0], bandwidth: 31.5 GB/s}");
        return SIM_EINVAL;
    }
    if (!bw && (!fr || !to))
        return input_schema_error(ctx, SIM_EINVAL, (fr ? fr : to)->key, "%s: '%s' needs '%s'",
                               ctx->path, fr ? "from" : "to", fr ? "to" : "from");
    return 0;
}

int input__links_fn(const input_key *key, const input_ynode *v, void *base, input_schema_ctx *ctx)
{
    (void)key;
    hw_topology_spec *t = base;
    int rc = expect_items(ctx, v, "[{between: [gpu0, cpu0], bandwidth: 31.5 GB/s}]",
                          HW_EXPLICIT_LINKS_MAX, "links (HW_EXPLICIT_LINKS_MAX)");
    if (rc)
        return rc;
    t->n_links = 0;
    for (size_t i = 0; i < v->n; i++) {
        const input_ynode *item = v->items[i];
        hw_link_spec *l = &t->links[i];
        memset(l, 0, sizeof *l);
        l->src = l->dst = -1;                 /* resolved in input__topology_check */
        l->latency_ps = INPUT__UNSET_TIME;       /* by class */
        l->cls = HW_LINK_CLASS_COUNT;         /* inferred from the ends */
        size_t saved = path_index(ctx, i);
        if (!(rc = expect_item_map(ctx, item, "{between: [gpu0, cpu0], bandwidth: 31.5 GB/s}")) &&
            !(rc = input_schema_apply(&link_map, item, NULL, l, ctx)))
            rc = check_link_ends(item, ctx);
        ctx->path[saved] = '\0';
        if (rc)
            return rc;
        l->bidirectional = given_pair(item, "between") != NULL;
    }
    t->n_links = (int)v->n;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The whole topology                                                                       */

/* Index of the device named by scalar `n`, or an error at `n` with a did-you-mean. */
static int resolve_name(const hw_topology_spec *t, const input_ynode *n, const char *what,
                        input_schema_ctx *ctx, int *out)
{
    const char *names[HW_EXPLICIT_DEVICES_MAX];
    for (int i = 0; i < t->n_devices; i++) {
        if (strcmp(t->devices[i].name, n->text) == 0) {
            *out = i;
            return 0;
        }
        names[i] = t->devices[i].name;
    }
    const char *sug = input_suggest(n->text, names, (size_t)t->n_devices);
    if (sug)
        input_schema_error(ctx, SIM_EINVAL, n, "%s: unknown device '%s'; did you mean '%s'?", what,
                        n->text, sug);
    else
        input_schema_error(ctx, SIM_EINVAL, n, "%s: unknown device '%s'", what, n->text);
    char list[SIM_DIAG_HINT_MAX / 2];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < t->n_devices && len + 60 < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    if (t->n_devices > 0)
        sim_diag_hint(ctx->diag, "devices: %s%s", list, len + 60 >= sizeof list ? ", ..." : "");
    else
        sim_diag_hint(ctx->diag, "list the devices under topology.devices");
    return SIM_EINVAL;
}

/* Resolves every link's ends, infers classes and latencies, and checks the device graph:
 * no self links, at least one GPU, every GPU on some link. Then nodes and gpus_per_node. */
static int finish_explicit(const input_ynode *topo, hw_topology_spec *t, input_schema_ctx *ctx)
{
    const input_ypair *devs = given_pair(topo, "devices"), *links = given_pair(topo, "links");
    if (!devs || t->n_devices == 0)
        return input_schema_error(ctx, SIM_EINVAL, devs ? devs->value : links->key,
                               "%s.devices: the explicit form needs at least one device of kind "
                               "gpu",
                               ctx->path);
    bool linked[HW_EXPLICIT_DEVICES_MAX] = {false};
    for (int i = 0; links && i < t->n_links; i++) {
        const input_ynode *item = links->value->items[i];
        hw_link_spec *l = &t->links[i];
        const input_ypair *bw = given_pair(item, "between");
        const input_ynode *end[2] = {bw ? bw->value->items[0] : given_pair(item, "from")->value,
                                  bw ? bw->value->items[1] : given_pair(item, "to")->value};
        int idx[2];
        for (int e = 0; e < 2; e++) {
            char what[INPUT_SCHEMA_PATH_MAX + 48];
            if (bw)
                snprintf(what, sizeof what, "%s.links[%d].between[%d]", ctx->path, i, e);
            else
                snprintf(what, sizeof what, "%s.links[%d].%s", ctx->path, i, e ? "to" : "from");
            int rc = resolve_name(t, end[e], what, ctx, &idx[e]);
            if (rc)
                return rc;
            if (e == 1 && idx[1] == idx[0])
                return input_schema_error(ctx, SIM_EINVAL, end[1],
                                       "%s: a link from '%s' to itself", what, end[1]->text);
        }
        l->src = idx[0];
        l->dst = idx[1];
        linked[idx[0]] = linked[idx[1]] = true;
        if (l->cls == HW_LINK_CLASS_COUNT)
            l->cls = infer_class(t->devices[idx[0]].kind, t->devices[idx[1]].kind);
        if (l->latency_ps == INPUT__UNSET_TIME)
            l->latency_ps = class_latency_ps(l->cls);
    }

    bool has_memory = false;
    for (int i = 0; i < t->n_devices; i++)
        has_memory |= t->devices[i].kind == HW_DEV_HOST_MEMORY;
    int n_gpus = 0, max_node = 0, per_node_max = 0;
    for (int i = 0; i < t->n_devices; i++) {
        const hw_dev_spec *d = &t->devices[i];
        if (d->kind != HW_DEV_GPU)
            continue;
        if (!linked[i]) {
            input_schema_error(ctx, SIM_EINVAL, devs->value->items[i],
                            "%s.devices[%d]: gpu '%s' is not on any link", ctx->path, i,
                            d->name);
            sim_diag_hint(ctx->diag, "connect it, e.g. links: [{between: [%s, cpu0], "
                                     "bandwidth: 31.5 GB/s, class: pcie}]",
                          d->name);
            return SIM_EINVAL;
        }
        if (!d->p2p && !has_memory) {
            const input_ynode *item = devs->value->items[i];
            input_schema_error(ctx, SIM_EINVAL, input_ymap_find(item, "p2p")->value,
                            "%s.devices[%d].p2p: gpu '%s' stages its copies in host memory, "
                            "but the topology lists no host_memory device",
                            ctx->path, i, d->name);
            sim_diag_hint(ctx->diag, "add {name: mem0, kind: host_memory, bandwidth: ...} and "
                                     "a link {between: [cpu0, mem0], bandwidth: ...}");
            return SIM_EINVAL;
        }
        n_gpus++;
        max_node = SIM_MAX(max_node, d->node);
        int same = 0;
        for (int j = 0; j < t->n_devices; j++)
            same += t->devices[j].kind == HW_DEV_GPU && t->devices[j].node == d->node;
        per_node_max = SIM_MAX(per_node_max, same);
    }
    if (n_gpus == 0)
        return input_schema_error(ctx, SIM_EINVAL, devs->value,
                               "%s.devices: the explicit form needs at least one device of kind "
                               "gpu",
                               ctx->path);
    t->nodes = max_node + 1;
    t->gpus_per_node = per_node_max;
    return 0;
}

int input__topology_check(const input_ynode *node, const input_ynode *parent_key, void *base,
                       input_schema_ctx *ctx)
{
    hw_topology_spec *t = base;
    /* The forms do not mix: report at the key that makes the mix (the later one). */
    static const char *const explicit_keys[] = {"devices", "links"};
    static const char *const parametric_keys[] = {"nodes", "node", "fabric", "node_groups"};
    const input_ypair *first_explicit = NULL, *first_parametric = NULL;
    for (size_t i = 0; i < node->n; i++) {
        const input_ypair *p = &node->pairs[i];
        if (input_ynode_is_null(p->value))
            continue;
        for (size_t k = 0; k < SIM_ARRAY_LEN(explicit_keys); k++)
            if (strcmp(p->key->text, explicit_keys[k]) == 0 && !first_explicit)
                first_explicit = p;
        for (size_t k = 0; k < SIM_ARRAY_LEN(parametric_keys); k++)
            if (strcmp(p->key->text, parametric_keys[k]) == 0 && !first_parametric)
                first_parametric = p;
        if (first_explicit && first_parametric) {
            const input_ypair *other = p == first_explicit ? first_parametric : first_explicit;
            input_schema_error(ctx, SIM_EINVAL, p->key,
                            "%s.%s: the explicit form (devices, links) replaces nodes, node and "
                            "fabric, but this topology also gives '%s'",
                            ctx->path, p->key->text, other->key->text);
            sim_diag_hint(ctx->diag, "describe the machine either by a node template (nodes, "
                                     "node, fabric) or by devices and links, not both");
            return SIM_EINVAL;
        }
    }
    if (first_explicit)
        return finish_explicit(node, t, ctx);
    if (!given_pair(node, "node"))
        return input_schema_missing(ctx, "topology", node, parent_key, "node");
    return input__node_groups_apply(node, t, ctx);
}
