/* Topology helpers: PCIe bandwidth by generation and the names of intra/inter kinds. */
#include "core/sim.h"

#include "hw/topology.h"

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

const char *hw_fabric_kind_name(hw_fabric_kind k)
{
    switch (k) {
    case HW_FABRIC_NONE: return "none";
    case HW_FABRIC_FAT_TREE: return "fat-tree";
    case HW_FABRIC_RAIL_OPTIMIZED: return "rail-optimized";
    case HW_FABRIC_SINGLE_SWITCH: return "single-switch";
    }
    return "?";
}

const char *hw_dev_kind_name(hw_dev_kind k)
{
    static const char *const names[HW_DEV_KIND_COUNT] = {
        "gpu", "nvswitch", "pcie_switch", "cpu", "host_memory", "nic", "switch"};
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
