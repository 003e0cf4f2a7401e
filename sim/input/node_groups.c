/* topology.node_groups (docs/scenario-format.md, docs/topologies.md): a cluster of
 * consecutive groups of nodes that differ in their GPU or their node. Each group starts from
 * the topology's own gpu and node and overrides what it names:
 *
 *   node_groups:
 *     - {nodes: 2, gpu: h100-sxm}
 *     - {nodes: 2, gpu: a100-sxm-80gb, node: {nics: {count: 8, bandwidth: 200 Gb/s}}}
 *
 * Nodes 0-1 are the first group's, 2-3 the second's; topology.nodes, if given, must be their
 * sum. Groups keep the topology's GPUs per node and NICs per node (the collectives' node
 * layout and the rail wiring assume them): other counts are not supported yet. */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "input/keys.h"

int input__node_groups_fn(const input_key *key, const input_ynode *v, void *base,
                          input_schema_ctx *ctx)
{
    (void)key;
    (void)base;
    if (v->kind != INPUT_YSEQ || v->n == 0 || v->n > HW_NODE_GROUPS_MAX) {
        input_schema_error(ctx, SIM_EINVAL, v,
                           "%s: expected a list of 1 to %d node groups, got %s", ctx->path,
                           HW_NODE_GROUPS_MAX,
                           v->kind == INPUT_YSEQ ? (v->n == 0 ? "an empty list" : "more")
                                                 : input_ykind_name(v->kind));
        sim_diag_hint(ctx->diag, "node_groups: [{nodes: 2, gpu: h100-sxm}, {nodes: 2, gpu: "
                                 "a100-sxm-80gb}]");
        return SIM_EINVAL;
    }
    for (size_t i = 0; i < v->n; i++)
        if (v->items[i]->kind != INPUT_YMAP)
            return input_schema_error(ctx, SIM_EINVAL, v->items[i],
                                      "%s[%zu]: expected a mapping {nodes, gpu, node}, got %s",
                                      ctx->path, i, input_ykind_name(v->items[i]->kind));
    return 0;
}

int input__node_groups_apply(const input_ynode *topo, hw_topology_spec *t, input_schema_ctx *ctx)
{
    const input_ypair *ng = input_ymap_find(topo, "node_groups");
    if (!ng || input_ynode_is_null(ng->value))
        return 0;
    const input_ynode *v = ng->value;
    hw_topology_spec *tmp = sim_calloc(1, sizeof *tmp);
    hw_topology_spec *fresh = sim_calloc(1, sizeof *fresh);
    input__topology_prefill(fresh);
    long long sum = 0;
    int rc = 0;
    size_t saved = strlen(ctx->path);
    for (size_t i = 0; i < v->n && !rc; i++) {
        const input_ynode *item = v->items[i];
        *tmp = *t;
        tmp->n_groups = 0;
        if (input_ymap_find(item, "gpu")) /* a GPU of its own: nothing of the topology's */
            tmp->gpu = fresh->gpu;
        /* an intra-node fabric of another kind: none of the topology's link settings (a
         * PCIe group must not inherit an NVSwitch's bandwidth) */
        const input_ypair *nd = input_ymap_find(item, "node");
        const input_ypair *in = nd && nd->value->kind == INPUT_YMAP
                                    ? input_ymap_find(nd->value, "intra") : NULL;
        const input_ypair *kind = in && in->value->kind == INPUT_YMAP
                                      ? input_ymap_find(in->value, "kind") : NULL;
        if (kind && kind->value->kind == INPUT_YSCALAR &&
            strcmp(kind->value->text, hw_intra_kind_name(t->intra.kind)) != 0)
            tmp->intra = fresh->intra;
        snprintf(ctx->path + saved, sizeof ctx->path - saved, ".node_groups[%zu]", i);
        rc = input_schema_apply(input__node_group_schema(), item, ng->key, tmp, ctx);
        ctx->path[saved] = '\0';
        if (rc)
            break;
        t->groups[i] = (hw_node_group){.nodes = tmp->nodes, .gpu = tmp->gpu, .node = tmp->node};
        sum += tmp->nodes;
    }
    sim_free(tmp);
    sim_free(fresh);
    if (rc)
        return rc;
    t->n_groups = (int)v->n;
    const input_ypair *nodes = input_ymap_find(topo, "nodes");
    if (nodes && !input_ynode_is_null(nodes->value) && t->nodes != sum) {
        input_schema_error(ctx, SIM_EINVAL, nodes->value,
                           "%s.nodes: %d, but the node groups hold %lld nodes", ctx->path,
                           t->nodes, sum);
        sim_diag_hint(ctx->diag, "with node_groups, leave nodes out (it is their sum)");
        return SIM_EINVAL;
    }
    if (sum > (1LL << 20))
        return input_schema_error(ctx, SIM_EINVAL, ng->value,
                                  "%s.node_groups: %lld nodes in all, too many", ctx->path, sum);
    t->nodes = (int)sum;
    return 0;
}

/* The i-th group's mapping in the scenario tree (for error locations). */
static const input_ynode *group_at(const input_ynode *root, int i, const char *key)
{
    const input_ypair *ng = input_ypath_find(root, "topology.node_groups");
    if (!ng || ng->value->kind != INPUT_YSEQ || (size_t)i >= ng->value->n)
        return ng ? ng->value : root;
    const input_ynode *item = ng->value->items[i];
    const input_ypair *k = key ? input_ymap_find(item, key) : NULL;
    return k ? k->value : item;
}

int input__node_groups_finish(const input_ynode *root, hw_topology_spec *t,
                              input_schema_ctx *ctx)
{
    if (t->n_groups == 0)
        return 0;
    hw_topology_spec *tmp = sim_calloc(1, sizeof *tmp);
    int rc = 0;
    for (int i = 0; i < t->n_groups && !rc; i++) {
        hw_node_group *g = &t->groups[i];
        *tmp = *t;
        tmp->node = g->node;
        input__node_defaults(tmp);
        g->node = tmp->node;
        const hw_node_spec *n = &g->node;
        const char *what = NULL;
        if (n->gpus_per_node != t->gpus_per_node)
            what = "GPUs";
        else if (n->nics.count != t->nics.count)
            what = "NICs";
        if (what) {
            rc = input_schema_error(ctx, SIM_ENOTSUP, group_at(root, i, "node"),
                                    "topology.node_groups[%d].node: %d %s per node, and the "
                                    "topology's nodes have %d: groups of another node size "
                                    "are not supported yet",
                                    i, what[0] == 'G' ? n->gpus_per_node : n->nics.count, what,
                                    what[0] == 'G' ? t->gpus_per_node : t->nics.count);
            sim_diag_hint(ctx->diag, "give every group the topology's node.gpus and "
                                     "node.nics.count; GPU models, links and bandwidths may "
                                     "differ");
            break;
        }
        bool pcie = n->intra.kind == HW_INTRA_PCIE;
        if (n->gpus_per_node > 1 && (pcie ? n->intra.bw_Bps == 0 && n->intra.pcie_gen == 0 &&
                                                n->pcie.gen == 0
                                          : n->intra.bw_Bps == 0)) {
            rc = input_schema_error(ctx, SIM_EINVAL, group_at(root, i, "node"),
                                    "topology.node_groups[%d].node.intra: a %s link needs "
                                    "'bandwidth'%s",
                                    i, hw_intra_kind_name(n->intra.kind),
                                    pcie ? " or 'gen'" : "");
            break;
        }
        if (g->gpu.peak_flops[HW_DTYPE_BF16] == 0 && g->gpu.peak_flops[HW_DTYPE_FP16] == 0) {
            rc = input_schema_error(ctx, SIM_EINVAL, group_at(root, i, "gpu"),
                                    "topology.node_groups[%d].gpu.peak: needs bf16 or fp16 "
                                    "(tensor-core peak of a training GPU)",
                                    i);
            break;
        }
        const input_ynode *gv = group_at(root, i, "gpu");
        if (!g->gpu.name[0] && gv->origin && !gv->origin->is_set &&
            gv->origin != group_at(root, i, NULL)->origin)
            input__file_stem(gv->origin->name, g->gpu.name, sizeof g->gpu.name);
    }
    sim_free(tmp);
    return rc;
}
