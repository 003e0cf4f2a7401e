/* Cluster description (docs/topologies.md) as the loader fills it.
 *
 * Two forms: parametric (a node template plus an inter-node fabric) and explicit (devices
 * and links listed one by one). sim/hw/topo.h turns either into the device/link graph. */
#ifndef SIM_HW_SPEC_H
#define SIM_HW_SPEC_H

#include <stdbool.h>

#include "hw/gpu.h"

typedef enum hw_intra_kind { HW_INTRA_NVSWITCH, HW_INTRA_NVLINK, HW_INTRA_PCIE } hw_intra_kind;
typedef enum hw_nvlink_shape {
    HW_NVLINK_MESH, /* every GPU pair joined directly (bridges, 4-GPU boards) */
    HW_NVLINK_RING  /* each GPU joined to its two neighbours */
} hw_nvlink_shape;
typedef enum hw_fabric_kind {
    HW_FABRIC_NONE, /* single node */
    HW_FABRIC_FAT_TREE,
    HW_FABRIC_RAIL_OPTIMIZED,
    HW_FABRIC_SINGLE_SWITCH
} hw_fabric_kind;

/* Device and link kinds of the topology graph (also the explicit form's vocabulary). */
typedef enum hw_dev_kind {
    HW_DEV_GPU,
    HW_DEV_NVSWITCH,
    HW_DEV_PCIE_SWITCH,
    HW_DEV_CPU,         /* a CPU socket and its PCIe root complex */
    HW_DEV_HOST_MEMORY, /* one socket's DRAM */
    HW_DEV_NIC,
    HW_DEV_SWITCH,      /* a network switch */
    HW_DEV_STORAGE,     /* an NVMe drive on a socket's PCIe root complex */
    HW_DEV_KIND_COUNT
} hw_dev_kind;

typedef enum hw_link_class {
    HW_LINK_NVLINK,
    HW_LINK_PCIE,
    HW_LINK_IB,
    HW_LINK_ETHERNET,
    HW_LINK_CPU, /* socket interconnect (UPI/xGMI) and memory channels */
    HW_LINK_CLASS_COUNT
} hw_link_class;

const char *hw_dev_kind_name(hw_dev_kind k);     /* "gpu", "nvswitch", "pcie_switch", "cpu",
                                                    "host_memory", "nic", "switch",
                                                    "storage" */
const char *hw_link_class_name(hw_link_class c); /* "nvlink", "pcie", "ib", "ethernet", "cpu" */

/* NCCL's protocols (docs/collectives.md): how much of a link's bandwidth carries payload and
 * what each step (round) of a collective costs in latency, per link class. LL stores 8-byte
 * words of which 4 are a flag; LL128 stores 128-byte lines with an 8-byte flag; Simple
 * moves large chunks with memory fences. NVLS is NVLink SHARP's reduction in the switch. */
typedef enum hw_proto { HW_PROTO_LL, HW_PROTO_LL128, HW_PROTO_SIMPLE, HW_PROTO_COUNT } hw_proto;
const char *hw_proto_name(hw_proto p); /* "ll", "ll128", "simple" */

typedef struct hw_proto_params {
    bool enabled;                           /* false: never chosen on this machine */
    sim_time base_ps;                       /* once per collective (launch and set-up) */
    sim_time step_ps[HW_LINK_CLASS_COUNT];  /* per round, on top of the route's latency */
    double efficiency[HW_LINK_CLASS_COUNT]; /* payload share of a link's bandwidth, (0, 1] */
    int64_t chunk_bytes;                    /* pipelining grain of broadcast/reduce/tree */
} hw_proto_params;

typedef struct hw_protocols {
    hw_proto_params proto[HW_PROTO_COUNT];
    double nvls_efficiency; /* payload share of NVLink bandwidth with in-switch reduction */
    sim_time nvls_step_ps;  /* per NVLS round */
} hw_protocols;

/* The defaults of docs/collectives.md (NCCL's tuning model and nccl-tests measurements). */
void hw_protocols_defaults(hw_protocols *p);

/* Explicit form: devices and links listed one by one (docs/topologies.md). GPUs are numbered in
 * the order they are listed. */
#define HW_EXPLICIT_DEVICES_MAX 512
#define HW_EXPLICIT_LINKS_MAX 2048
typedef struct hw_dev_spec {
    char name[48];
    hw_dev_kind kind;
    int node;      /* which node (server) the device belongs to; default 0 */
    bool p2p;      /* gpu: PCIe peer-to-peer allowed (false: copies stage in host memory) */
    double bw_Bps; /* host_memory: DRAM bandwidth shared by reads and writes */
} hw_dev_spec;
typedef struct hw_link_spec {
    int src, dst;          /* device indices */
    bool bidirectional;    /* true: one link per direction, each with bw_Bps */
    double bw_Bps;         /* per direction */
    sim_time latency_ps;
    hw_link_class cls;
} hw_link_spec;

/* Defaults of a node's host and drives (the loader sets them; docs/topologies.md):
 * host memory 8 channels x DDR4-3200 x 8 B = 204.8 GB/s per socket; a 64 GB/s socket link
 * per direction; memory-bound CPU code (STREAM Triad, CPU Adam) sustains 0.75 of the DIMMs'
 * rate (measured Triad over the theoretical rate is 0.67-0.79 on the DDR4/LPDDR4 systems of
 * TI's SPRAD45/SPRACV1 reports and 70-80% on servers; docs/calibration.md says how to
 * measure it); an NVMe drive is a PCIe 4.0 x4 enterprise U.2 drive (Samsung PM1733 3.84 TB
 * datasheet: 7.0 GB/s sequential read, 3.8 GB/s write; ~0.1 ms access, an estimate). */
#define HW_HOST_MEMORY_BPS_DEFAULT 204.8e9
#define HW_HOST_SOCKET_LINK_BPS_DEFAULT 64e9
#define HW_HOST_MEMORY_EFFICIENCY_DEFAULT 0.75
/* Host time per GPU op issued (node.host.launch; docs/calibration.md "Host launch"):
 * eager PyTorch's Python, autograd and dispatcher layers and the launch, about 5-25 us an op
 * by their parts (an estimate: 10 us); a compiled step's generated wrapper launches each
 * kernel directly (an estimate: 3 us). */
#define HW_HOST_LAUNCH_EAGER_PS_DEFAULT (10 * SIM_PS_PER_US)
#define HW_HOST_LAUNCH_COMPILED_PS_DEFAULT (3 * SIM_PS_PER_US)
#define HW_STORAGE_READ_BPS_DEFAULT 7.0e9
#define HW_STORAGE_WRITE_BPS_DEFAULT 3.8e9
#define HW_STORAGE_LATENCY_PS_DEFAULT (100 * SIM_PS_PER_US)

/* One node's parts (topology.node): written once, as the fields of hw_node_spec and, under
 * the same names, of hw_topology_spec (whose `node` views them as one hw_node_spec). */
#define HW_NODE_FIELDS                                                                      \
    int gpus_per_node;                                                                      \
    struct {                                                                                \
        hw_intra_kind kind;                                                                 \
        double bw_Bps;       /* per GPU, per direction; for pcie derived from gen/lanes if 0 */ \
        sim_time latency_ps; /* GPU to GPU through the intra-node fabric */                 \
        bool sharp;          /* NVLink SHARP (in-switch reduction) */                       \
        int pcie_gen;        /* intra kind pcie */                                          \
        int pcie_lanes;                                                                     \
        bool p2p;            /* PCIe peer-to-peer; false routes through host memory */      \
        hw_nvlink_shape shape; /* intra kind nvlink */                                      \
    } intra;                                                                                \
    struct {                                                                                \
        int gen, lanes;      /* each GPU's (and NIC's) host link */                         \
        int switches;        /* PCIe switches per node; 0 = GPUs on the root complexes */   \
        int sockets;         /* CPU sockets per node (>= 1) */                              \
        int switch_lanes;    /* lanes of each switch's uplink to its socket */              \
        sim_time latency_ps; /* per PCIe hop */                                             \
    } pcie;                                                                                 \
    struct {                                                                                \
        double memory_bw_Bps;      /* DRAM bandwidth per socket (reads + writes) */         \
        double socket_link_bw_Bps; /* between two sockets, per direction */                 \
        double memory_efficiency;  /* the share of memory_bw_Bps CPU code sustains */       \
        /* host time the framework's thread spends per GPU op it issues (Python, autograd,  \
           the dispatcher, the launch): eager PyTorch, and compiled code (training.compile) */ \
        sim_time launch_eager_ps, launch_compiled_ps;                                       \
        sim_time socket_link_latency_ps;                                                    \
        int64_t memory_bytes; /* DRAM capacity per node, all sockets; 0 = not given (the    \
                                 offloaded bytes are then not checked against it) */        \
    } host;                                                                                 \
    struct {                                                                                \
        int count;           /* per node; 0 = none */                                       \
        double bw_Bps;       /* per NIC, per direction */                                   \
        sim_time latency_ps; /* NIC to its switch */                                        \
    } nics;                                                                                 \
    /* NVMe drives per node (ZeRO-Infinity's offload target), drive d on socket d mod       \
     * sockets; count 0 = none */                                                           \
    struct {                                                                                \
        int count;                                                                          \
        double read_Bps, write_Bps; /* per drive */                                         \
        sim_time latency_ps;                                                                \
    } storage;

typedef struct hw_node_spec {
    HW_NODE_FIELDS
} hw_node_spec;

/* topology.node_groups: consecutive nodes of another GPU and node than the topology's own
 * (a mixed cluster); at most HW_NODE_GROUPS_MAX groups. */
#define HW_NODE_GROUPS_MAX 8
typedef struct hw_node_group {
    int nodes;
    hw_gpu_spec gpu;
    hw_node_spec node;
} hw_node_group;

typedef struct hw_topology_spec {
    char name[64];
    hw_gpu_spec gpu;
    int nodes;
    union {
        hw_node_spec node;
        struct {
            HW_NODE_FIELDS
        };
    };
    struct {
        hw_fabric_kind kind;
        double oversubscription; /* 1 = non-blocking; 2 = 2:1 (leaf uplinks = downlinks / 2) */
        sim_time latency_ps;     /* per switch-to-switch hop */
        int radix;               /* switch ports; a leaf serves radix/2 NICs */
        int levels;              /* fat-tree levels; 0 = as many as the size needs */
        bool pxn;                /* NCCL's PXN for point-to-point traffic between nodes
                                    (hw_topo_route_p2p); true unless NCCL_PXN_DISABLE=1 */
    } fabric;
    hw_protocols protocols;
    double price_per_gpu_hour;   /* cost of one GPU for an hour, any currency; 0 = unknown */
    /* node_groups (n_groups > 0): nodes 0.. of groups[0], then groups[1]'s, ...; `gpu` and
     * the node fields above are the first group's, `nodes` their sum */
    int n_groups;
    hw_node_group groups[HW_NODE_GROUPS_MAX];
    /* explicit form (n_devices > 0 replaces nodes/node/fabric) */
    int n_devices;
    hw_dev_spec devices[HW_EXPLICIT_DEVICES_MAX];
    int n_links;
    hw_link_spec links[HW_EXPLICIT_LINKS_MAX];
} hw_topology_spec;

/* The group of node n (0 without groups), its GPU and its node's parts. */
int hw_topology_group_of(const hw_topology_spec *s, int node);
const hw_gpu_spec *hw_topology_node_gpu(const hw_topology_spec *s, int node);
const hw_node_spec *hw_topology_node_spec(const hw_topology_spec *s, int node);
/* The host's time per GPU op issued on `node`: host.launch.compiled for a compiled step
 * (training.compile), else host.launch.eager. */
sim_time hw_node_launch_ps(const hw_node_spec *node, bool compiled);
/* The same on the topology's slowest host (the largest over its node groups). */
sim_time hw_topology_launch_max_ps(const hw_topology_spec *s, bool compiled);

/* Per-direction usable bandwidth of a PCIe link of `gen` (1..6) and `lanes`, after line
 * encoding (8b/10b for gen 1-2, 128b/130b for gen 3-5, FLIT for 6), before protocol
 * (TLP) overhead. Returns 0 for an unknown generation. */
double hw_pcie_bw_Bps(int gen, int lanes);

const char *hw_intra_kind_name(hw_intra_kind k);

#endif
