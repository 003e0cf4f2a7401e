/* Cluster description (parametric form of DESIGN.md §7) as the loader fills it.
 *
 * Issue 2 keeps the network a placeholder (see net.h): every GPU pair is joined by one
 * dedicated link per direction. Issue 3 turns this description into a device/link graph. */
#ifndef SIM_HW_TOPOLOGY_H
#define SIM_HW_TOPOLOGY_H

#include <stdbool.h>

#include "hw/gpu.h"

typedef enum hw_intra_kind { HW_INTRA_NVSWITCH, HW_INTRA_NVLINK, HW_INTRA_PCIE } hw_intra_kind;
typedef enum hw_fabric_kind {
    HW_FABRIC_NONE, /* single node */
    HW_FABRIC_FAT_TREE,
    HW_FABRIC_RAIL_OPTIMIZED,
    HW_FABRIC_SINGLE_SWITCH
} hw_fabric_kind;

typedef struct hw_topology_spec {
    char name[64];
    hw_gpu_spec gpu;
    int nodes;
    int gpus_per_node;
    struct {
        hw_intra_kind kind;
        double bw_Bps;       /* per GPU, per direction; for pcie derived from gen/lanes if 0 */
        sim_time latency_ps;
        bool sharp;          /* NVLink SHARP (in-switch reduction) */
        int pcie_gen;        /* intra kind pcie */
        int pcie_lanes;
        bool p2p;            /* PCIe peer-to-peer; false routes through host memory */
    } intra;
    struct {
        int gen, lanes;      /* GPU host link */
    } pcie;
    struct {
        int count;           /* per node; 0 = none */
        double bw_Bps;       /* per NIC, per direction */
        sim_time latency_ps;
    } nics;
    struct {
        hw_fabric_kind kind;
        double oversubscription; /* 1 = non-blocking; 2 = 2:1 */
        sim_time latency_ps;
    } fabric;
} hw_topology_spec;

/* Per-direction usable bandwidth of a PCIe link of `gen` (1..6) and `lanes`, after line
 * encoding (8b/10b for gen 1-2, 128b/130b for gen 3-5, FLIT for 6), before protocol
 * (TLP) overhead. Returns 0 for an unknown generation. */
double hw_pcie_bw_Bps(int gen, int lanes);

const char *hw_intra_kind_name(hw_intra_kind k);
const char *hw_fabric_kind_name(hw_fabric_kind k);

#endif
