/* Topology graph: builders, routes and bisection bandwidth (derivations above each check). */
#include "core/sim.h"

#include <string.h>

#include "hw/topo.h"
#include "test.h"

#define GB 1e9

/* n nodes of one GPU and one 400 Gb/s (50 GB/s) NIC each, PCIe gen5 x16 inside. */
static void small_cluster(hw_topology_spec *s, int nodes, hw_fabric_kind kind, double over)
{
    memset(s, 0, sizeof *s);
    s->nodes = nodes;
    s->gpus_per_node = 1;
    s->intra.kind = HW_INTRA_NVSWITCH;
    s->pcie.gen = 5;
    s->pcie.lanes = 16;
    s->pcie.sockets = 1;
    s->pcie.latency_ps = SIM_PS_PER_US / 2;
    s->nics.count = 1;
    s->nics.bw_Bps = 50 * GB;
    s->nics.latency_ps = 2 * SIM_PS_PER_US;
    s->fabric.kind = kind;
    s->fabric.oversubscription = over;
    s->fabric.latency_ps = SIM_PS_PER_US;
    s->fabric.radix = 4;
}

int main(void)
{
    hw_topology_spec *s = sim_calloc(1, sizeof *s);
    hw_topo *t;

    /* Single switch, 4 nodes: GPUs {0,1} -> {2,3} cross two 50 GB/s NIC links each way:
     * bisection 2 x 50 = 100 GB/s. A route: GPU -> cpu -> NIC -> switch -> NIC -> cpu ->
     * GPU = 6 links; latency 0.5 + 0.5 + 2 + 2 + 0.5 + 0.5 = 6 us. */
    small_cluster(s, 4, HW_FABRIC_SINGLE_SWITCH, 1);
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    CHECK_INT_EQ(hw_topo_gpu_count(t), 4);
    CHECK_INT_EQ(hw_topo_node_count(t), 4);
    CHECK_NEAR(hw_topo_bisection_Bps(t), 100 * GB, 1e-9, 0);
    const hw_route *r = hw_topo_route_gpus(t, 0, 3);
    CHECK_INT_EQ(r->n, 6);
    CHECK_INT_EQ(r->latency_ps, 6 * SIM_PS_PER_US);
    CHECK_NEAR(hw_topo_route_bw_Bps(t, r), 50 * GB, 1e-12, 0);
    CHECK(hw_topo_route_gpus(t, 0, 3) == r); /* cached */
    CHECK_INT_EQ(hw_topo_routes_computed(t), 1);
    hw_topo_destroy(t);

    /* Fat-tree, radix 4 (2 NICs per leaf), 2:1: leaf uplinks carry 2 x 50 / 2 = 50 GB/s.
     * GPUs {0,1} share leaf 0 and {2,3} leaf 1, so the bisection is one uplink: 50 GB/s.
     * Non-blocking: 100 GB/s. A route across leaves: GPU, cpu, NIC, leaf, root, leaf, NIC,
     * cpu, GPU = 8 links. */
    for (int over = 1; over <= 2; over++) {
        small_cluster(s, 4, HW_FABRIC_FAT_TREE, over);
        CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
        CHECK_NEAR(hw_topo_bisection_Bps(t), 100 * GB / over, 1e-9, 0);
        CHECK_INT_EQ(hw_topo_route_gpus(t, 0, 2)->n, 8);
        CHECK_INT_EQ(hw_topo_route_gpus(t, 0, 1)->n, 6);
        hw_topo_destroy(t);
    }

    /* Fat-tree of 64 nodes, radix 4: 32 leaves of 2 NICs, then 16, 8, 4, 2 and 1 switches
     * above them. The longest route (GPU 0 to GPU 63) climbs from its leaf through 5
     * uplinks and descends 5: GPU-cpu, cpu-NIC, NIC-leaf, 5 up, 5 down, leaf-NIC, NIC-cpu,
     * cpu-GPU = 16 links. With levels: 2, the leaves hang off one root: 8 links. */
    small_cluster(s, 64, HW_FABRIC_FAT_TREE, 1);
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    CHECK_INT_EQ(hw_topo_route_gpus(t, 0, 63)->n, 16);
    hw_topo_destroy(t);
    s->fabric.levels = 2;
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    CHECK_INT_EQ(hw_topo_route_gpus(t, 0, 63)->n, 8);
    /* non-blocking: 32 NICs on each side, 32 x 50 GB/s */
    CHECK_NEAR(hw_topo_bisection_Bps(t), 32 * 50 * GB, 1e-9, 0);
    hw_topo_destroy(t);

    /* NVLink mesh of 4 GPUs with 300 GB/s per GPU: 3 links of 100 GB/s each, one hop.
     * Ring: 2 links of 150 GB/s; GPU 0 -> 2 is not adjacent: no NVLink-only path... it goes
     * 0 -> 1 -> 2? GPUs do not forward, so the route falls back to PCIe (2 links). */
    memset(s, 0, sizeof *s);
    s->nodes = 1;
    s->gpus_per_node = 4;
    s->intra.kind = HW_INTRA_NVLINK;
    s->intra.bw_Bps = 300 * GB;
    s->intra.latency_ps = SIM_PS_PER_US;
    s->pcie.gen = 4;
    s->pcie.lanes = 16;
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    r = hw_topo_route_gpus(t, 0, 2);
    CHECK_INT_EQ(r->n, 1);
    CHECK_NEAR(hw_topo_route_bw_Bps(t, r), 100 * GB, 1e-12, 0);
    hw_topo_destroy(t);
    s->intra.shape = HW_NVLINK_RING;
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    r = hw_topo_route_gpus(t, 0, 1);
    CHECK_INT_EQ(r->n, 1);
    CHECK_NEAR(hw_topo_route_bw_Bps(t, r), 150 * GB, 1e-12, 0);
    r = hw_topo_route_gpus(t, 0, 2);
    CHECK_INT_EQ(r->n, 2);
    CHECK_INT_EQ(hw_topo_link(t, r->links[0])->cls, HW_LINK_PCIE);
    hw_topo_destroy(t);

    /* Explicit form: a p2p: false GPU stages in the nearest host memory (mem0, two hops
     * away, not mem1, three); a GPU that cannot reach the others is an error. */
    memset(s, 0, sizeof *s);
    const char *names[] = {"g0", "g1", "c0", "c1", "mem0", "mem1"};
    hw_dev_kind kinds[] = {HW_DEV_GPU, HW_DEV_GPU, HW_DEV_CPU, HW_DEV_CPU, HW_DEV_HOST_MEMORY,
                           HW_DEV_HOST_MEMORY};
    for (int i = 0; i < 6; i++) {
        snprintf(s->devices[i].name, sizeof s->devices[i].name, "%s", names[i]);
        s->devices[i].kind = kinds[i];
        s->devices[i].p2p = false;
        s->devices[i].bw_Bps = 100 * GB;
    }
    s->n_devices = 6;
    hw_link_spec ls[] = {{0, 2, true, 32 * GB, 0, HW_LINK_PCIE},
                         {1, 2, true, 32 * GB, 0, HW_LINK_PCIE},
                         {2, 3, true, 64 * GB, 0, HW_LINK_CPU},
                         {2, 4, true, 100 * GB, 0, HW_LINK_CPU},
                         {3, 5, true, 100 * GB, 0, HW_LINK_CPU}};
    memcpy(s->links, ls, sizeof ls);
    s->n_links = 5;
    CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
    CHECK_INT_EQ(hw_topo_device(t, 0)->staging, hw_topo_find(t, "mem0"));
    /* g0 -> c0, c0 = mem0 twice (half-duplex), c0 -> g1 */
    r = hw_topo_route_gpus(t, 0, 1);
    CHECK_INT_EQ(r->n, 4);
    CHECK(hw_topo_link(t, r->links[1])->half_duplex);
    /* 100 GB/s DRAM crossed twice: 50 GB/s > 32 GB/s PCIe */
    CHECK_NEAR(hw_topo_route_bw_Bps(t, r), 32 * GB, 1e-12, 0);
    hw_topo_destroy(t);
    s->n_links = 1; /* g1 now unreachable (and nobody stages) */
    for (int i = 0; i < 6; i++)
        s->devices[i].p2p = true;
    sim_diag d = {0};
    CHECK_INT_EQ(hw_topo_create(s, &t, &d), SIM_EINVAL);
    CHECK_STR_HAS(d.msg, "cannot reach");

    /* Nearest host memory, ties to the lowest device index: g0 - c0 reaches mem0 and mem1 at
     * 2 hops each (c0 - mem1 listed first), so mem0 (device 4); g1 - c1 - mem1 is 2 hops and
     * mem0 3 (g1 - c1 - c0 - mem0), so mem1 (device 5). The same for p2p: false GPUs (found
     * at creation) and p2p GPUs (hw_topo_host_memory, on first use). */
    for (int p2p = 0; p2p <= 1; p2p++) {
        memset(s, 0, sizeof *s);
        for (int i = 0; i < 6; i++) {
            snprintf(s->devices[i].name, sizeof s->devices[i].name, "%s", names[i]);
            s->devices[i].kind = kinds[i];
            s->devices[i].p2p = p2p;
            s->devices[i].bw_Bps = 100 * GB;
        }
        s->n_devices = 6;
        hw_link_spec ties[] = {{0, 2, true, 32 * GB, 0, HW_LINK_PCIE},
                               {1, 3, true, 32 * GB, 0, HW_LINK_PCIE},
                               {2, 3, true, 64 * GB, 0, HW_LINK_CPU},
                               {2, 5, true, 100 * GB, 0, HW_LINK_CPU},
                               {2, 4, true, 100 * GB, 0, HW_LINK_CPU},
                               {3, 5, true, 100 * GB, 0, HW_LINK_CPU}};
        memcpy(s->links, ties, sizeof ties);
        s->n_links = 6;
        CHECK_INT_EQ(hw_topo_create(s, &t, NULL), 0);
        CHECK_INT_EQ(hw_topo_host_memory(t, 0), hw_topo_find(t, "mem0"));
        CHECK_INT_EQ(hw_topo_host_memory(t, 1), hw_topo_find(t, "mem1"));
        hw_topo_destroy(t);
    }

    sim_free(s);
    return test_finish();
}
