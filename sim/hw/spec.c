/* Cluster description helpers (the spec of hw/spec.h): PCIe bandwidth by generation and the
 * names of the device, link, intra-node and protocol kinds. */
#include "core/sim.h"

#include "hw/spec.h"

double hw_pcie_bw_Bps(int gen, int lanes)
{
    /* Per-lane signalling rate (GT/s) and line-code efficiency by generation (PCI-SIG):
     * gen1 2.5 GT/s and gen2 5 GT/s use 8b/10b; gen3 8, gen4 16, gen5 32 GT/s use
     * 128b/130b; gen6 64 GT/s uses PAM4 FLIT mode (242/256 payload). One transfer carries
     * one bit per lane. */
    static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    static const double code[] = {0, 0.8, 0.8, 128.0 / 130.0, 128.0 / 130.0, 128.0 / 130.0,
                                  242.0 / 256.0};
    if (gen < 1 || gen > 6 || lanes <= 0)
        return 0;
    return gts[gen] * 1e9 * code[gen] * lanes / 8.0;
}

const char *hw_intra_kind_name(hw_intra_kind k)
{
    switch (k) {
    case HW_INTRA_NVSWITCH: return "nvswitch";
    case HW_INTRA_NVLINK: return "nvlink";
    case HW_INTRA_PCIE: return "pcie";
    }
    return "?";
}

const char *hw_dev_kind_name(hw_dev_kind k)
{
    static const char *const names[HW_DEV_KIND_COUNT] = {
        "gpu", "nvswitch", "pcie_switch", "cpu", "host_memory", "nic", "switch", "storage"};
    SIM_ASSERT(k >= 0 && k < HW_DEV_KIND_COUNT, "device kind %d", (int)k);
    return names[k];
}

const char *hw_link_class_name(hw_link_class c)
{
    static const char *const names[HW_LINK_CLASS_COUNT] = {"nvlink", "pcie", "ib", "ethernet",
                                                           "cpu"};
    SIM_ASSERT(c >= 0 && c < HW_LINK_CLASS_COUNT, "link class %d", (int)c);
    return names[c];
}

const char *hw_proto_name(hw_proto p)
{
    static const char *const names[HW_PROTO_COUNT] = {"ll", "ll128", "simple"};
    SIM_ASSERT(p >= 0 && p < HW_PROTO_COUNT, "protocol %d", (int)p);
    return names[p];
}

void hw_protocols_defaults(hw_protocols *p)
{
    /* Sources and reasoning: docs/collectives.md, "Protocols". Latencies per step follow
     * NCCL's tuning model (src/graph/tuning.cc: per-hop hardware latency of a ring step on
     * NVLink LL 0.47 us, LL128 1.9 us, Simple 3.4 us; base latency of a few us per
     * collective); the Simple efficiency on NVLink, 0.80, is the ratio nccl-tests reaches
     * on NVSwitch machines (H100 370 / 450 GB/s, A100 232 / 300 GB/s, nccl_busbw.csv);
     * LL carries 4 payload bytes per 8-byte store and polls flags (NCCL models it at 1/4
     * of the link), LL128 120 of 128 bytes of each line. PCIe, network and CPU figures are
     * estimates until calibrated (docs/calibration.md). */
    enum { NV = HW_LINK_NVLINK, PC = HW_LINK_PCIE, IB = HW_LINK_IB, ET = HW_LINK_ETHERNET,
           CP = HW_LINK_CPU };
    const sim_time us = SIM_PS_PER_US;
    *p = (hw_protocols){0};
    hw_proto_params *simple = &p->proto[HW_PROTO_SIMPLE];
    simple->enabled = true;
    simple->base_ps = 8 * us;
    simple->step_ps[NV] = simple->step_ps[CP] = 3 * us;
    simple->step_ps[PC] = 4 * us;
    simple->step_ps[IB] = simple->step_ps[ET] = 6 * us;
    simple->efficiency[NV] = 0.80;
    simple->efficiency[PC] = simple->efficiency[CP] = 0.80;
    simple->efficiency[IB] = simple->efficiency[ET] = 0.92;
    simple->chunk_bytes = 512 * 1024;

    hw_proto_params *ll128 = &p->proto[HW_PROTO_LL128];
    *ll128 = *simple;
    ll128->base_ps = 6 * us;
    for (int c = 0; c < HW_LINK_CLASS_COUNT; c++) {
        ll128->efficiency[c] = simple->efficiency[c] * 120.0 / 128.0;
        ll128->step_ps[c] = simple->step_ps[c] / 2;
    }
    ll128->chunk_bytes = 128 * 1024;

    hw_proto_params *ll = &p->proto[HW_PROTO_LL];
    *ll = *simple;
    ll->base_ps = 4 * us;
    for (int c = 0; c < HW_LINK_CLASS_COUNT; c++) {
        ll->efficiency[c] = 0.25;
        ll->step_ps[c] = simple->step_ps[c] / 6;
    }
    ll->chunk_bytes = 16 * 1024;

    /* NVLink SHARP: NVIDIA reports 480 GB/s busbw for 8x H100 all_reduce (nccl_busbw.csv);
     * the NVLS schedule moves S(1 + 1/n) each way per GPU, so busbw = 2(n-1)/(n+1) x 450 x e:
     * e = 480 / 700 = 0.686 — the throughput of the switch's multimem reductions. */
    p->nvls_efficiency = 0.686;
    p->nvls_step_ps = 2 * us;
}

int hw_topology_group_of(const hw_topology_spec *s, int node)
{
    for (int g = 0, first = 0; g < s->n_groups; g++) {
        first += s->groups[g].nodes;
        if (node < first)
            return g;
    }
    return 0;
}

const hw_gpu_spec *hw_topology_node_gpu(const hw_topology_spec *s, int node)
{
    return s->n_groups > 0 ? &s->groups[hw_topology_group_of(s, node)].gpu : &s->gpu;
}

const hw_node_spec *hw_topology_node_spec(const hw_topology_spec *s, int node)
{
    return s->n_groups > 0 ? &s->groups[hw_topology_group_of(s, node)].node : &s->node;
}

sim_time hw_node_launch_ps(const hw_node_spec *node, bool compiled)
{
    return compiled ? node->host.launch_compiled_ps : node->host.launch_eager_ps;
}

sim_time hw_topology_launch_max_ps(const hw_topology_spec *s, bool compiled)
{
    if (s->n_groups == 0)
        return hw_node_launch_ps(&s->node, compiled);
    sim_time t = 0;
    for (int g = 0; g < s->n_groups; g++)
        t = SIM_MAX(t, hw_node_launch_ps(&s->groups[g].node, compiled));
    return t;
}
