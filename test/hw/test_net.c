/* Flow-level network on topology graphs: exact max-min cases (derivations above each). */
#include "core/sim.h"

#include <string.h>

#include "core/eventq.h"
#include "hw/net.h"
#include "test.h"

typedef struct done_log {
    int n;
    uint64_t tag[64];
    sim_time t[64];
} done_log;

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    done_log *d = ctx;
    d->tag[d->n] = tag;
    d->t[d->n] = now;
    d->n++;
}

typedef struct bench {
    hw_topo *topo;
    sim_eventq *q;
    hw_net *net;
    done_log log;
} bench;

static void bench_init(bench *b, const hw_topology_spec *spec)
{
    memset(b, 0, sizeof *b);
    sim_diag d = {0};
    int rc = hw_topo_create(spec, &b->topo, &d);
    if (rc)
        fprintf(stderr, "topology: %s\n", d.msg);
    SIM_ASSERT(rc == 0, "topology");
    b->q = sim_eventq_create();
    b->net = hw_net_create(b->topo, b->q, 7, on_done, &b->log);
}

/* Runs events up to and including time `until`. */
static void run_until(bench *b, sim_time until)
{
    while (sim_eventq_size(b->q) > 0 && sim_eventq_peek_time(b->q) <= until)
        hw_net_handle(b->net, sim_eventq_pop(b->q));
}

static void bench_clear(bench *b)
{
    hw_net_destroy(b->net);
    sim_eventq_destroy(b->q);
    hw_topo_destroy(b->topo);
}

static sim_time find_done(const bench *b, uint64_t tag)
{
    for (int i = 0; i < b->log.n; i++)
        if (b->log.tag[i] == tag)
            return b->log.t[i];
    return -1;
}

static int dev(hw_topology_spec *s, const char *name, hw_dev_kind kind, int node)
{
    hw_dev_spec *d = &s->devices[s->n_devices];
    snprintf(d->name, sizeof d->name, "%s", name);
    d->kind = kind;
    d->node = node;
    d->p2p = true;
    return s->n_devices++;
}

static void lnk(hw_topology_spec *s, int a, int b, double bw, bool both)
{
    s->links[s->n_links++] = (hw_link_spec){.src = a, .dst = b, .bidirectional = both,
                                            .bw_Bps = bw, .latency_ps = 0, .cls = HW_LINK_PCIE};
}

#define GB 1e9

int main(void)
{
    hw_topology_spec *s = sim_calloc(1, sizeof *s);

    /* One flow on one link: two GPUs joined by a 10 GB/s link with 1 us latency; 1 GB takes
     * 1 us + 100 ms exactly. */
    {
        memset(s, 0, sizeof *s);
        int a = dev(s, "g0", HW_DEV_GPU, 0), b = dev(s, "g1", HW_DEV_GPU, 0);
        lnk(s, a, b, 10 * GB, true);
        s->links[0].latency_ps = SIM_PS_PER_US;
        bench x;
        bench_init(&x, s);
        hw_net_start_flow(x.net, 0, 0, 1, 1 * GB, 1);
        run_until(&x, SIM_TIME_NEVER - 1);
        CHECK_INT_EQ(find_done(&x, 1), SIM_PS_PER_US + 100 * SIM_PS_PER_MS);
        CHECK_NEAR(hw_net_link(x.net, 0)->bytes, 1 * GB, 1e-12, 0);
        CHECK_INT_EQ(hw_net_link(x.net, 0)->busy_ps, 100 * SIM_PS_PER_MS);
        bench_clear(&x);
    }

    /* Textbook max-min (Bertsekas & Gallager §6.5): link X (s0 -> s1) of 10 GB/s carries
     * flows a (g0 -> g2) and b (g1 -> g3); link Y (s1 -> g3) of 4 GB/s carries b and c
     * (g2 -> g3). Y offers 4/2 = 2 per flow, X 10/2 = 5: Y binds first, b = c = 2; X has
     * 10 - 2 = 8 left for a. Access links are 100 GB/s, latency 0.
     * Sizes a 8 GB, b 2 GB, c 1 GB. c ends at 1/2 = 0.5 s. Then Y gives b 4, X gives a 6:
     * b has 2 - 1 = 1 GB left, ends at 0.5 + 1/4 = 0.75 s; a has 8 - 4 - 1.5 = 2.5 GB
     * left at 0.75 s, then alone at 10 GB/s: ends at 1.0 s. */
    {
        memset(s, 0, sizeof *s);
        int g0 = dev(s, "g0", HW_DEV_GPU, 0), g1 = dev(s, "g1", HW_DEV_GPU, 0),
            g2 = dev(s, "g2", HW_DEV_GPU, 0), g3 = dev(s, "g3", HW_DEV_GPU, 0);
        int s0 = dev(s, "s0", HW_DEV_SWITCH, 0), s1 = dev(s, "s1", HW_DEV_SWITCH, 0);
        lnk(s, g0, s0, 100 * GB, true);
        lnk(s, g1, s0, 100 * GB, true);
        lnk(s, s0, s1, 10 * GB, true); /* X (and its reverse) */
        lnk(s, s1, g2, 100 * GB, true);
        lnk(s, s1, g3, 4 * GB, false); /* Y */
        lnk(s, g3, s1, 100 * GB, false);
        bench x;
        bench_init(&x, s);
        hw_net_start_flow(x.net, 0, 0, 2, 8 * GB, 'a');
        hw_net_start_flow(x.net, 0, 1, 3, 2 * GB, 'b');
        hw_net_start_flow(x.net, 0, 2, 3, 1 * GB, 'c');
        run_until(&x, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 'a'), 8 * GB, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 'b'), 2 * GB, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 'c'), 2 * GB, 1e-12, 0);
        run_until(&x, SIM_PS_PER_S / 2);
        CHECK_INT_EQ(find_done(&x, 'c'), SIM_PS_PER_S / 2);
        CHECK_NEAR(hw_net_flow_rate(x.net, 'a'), 6 * GB, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 'b'), 4 * GB, 1e-12, 0);
        run_until(&x, SIM_TIME_NEVER - 1);
        CHECK_INT_EQ(find_done(&x, 'b'), 3 * SIM_PS_PER_S / 4);
        CHECK_NEAR(find_done(&x, 'a'), SIM_PS_PER_S, 0, 2);
        /* one solve for the three admissions, then one per completion */
        CHECK_INT_EQ(hw_net_solves(x.net), 4);
        bench_clear(&x);
    }

    /* Incremental re-solve: two pairs on separate direct links (g0 -> g1, g2 -> g3; every
     * GPU also reaches a switch, so all pairs are routable). The four flows admitted
     * together form two components of two flows: 4 flows solved. When flow 1 ends at
     * 1 GB / 5 GB/s = 0.2 s, only its component (flow 2) is re-solved: 5 in all. */
    {
        memset(s, 0, sizeof *s);
        int g0 = dev(s, "g0", HW_DEV_GPU, 0), g1 = dev(s, "g1", HW_DEV_GPU, 0),
            g2 = dev(s, "g2", HW_DEV_GPU, 0), g3 = dev(s, "g3", HW_DEV_GPU, 0);
        int sw = dev(s, "sw", HW_DEV_SWITCH, 0);
        lnk(s, g0, g1, 10 * GB, true);
        lnk(s, g2, g3, 10 * GB, true);
        lnk(s, g0, sw, 1 * GB, true);
        lnk(s, g1, sw, 1 * GB, true);
        lnk(s, g2, sw, 1 * GB, true);
        lnk(s, g3, sw, 1 * GB, true);
        bench x;
        bench_init(&x, s);
        hw_net_start_flow(x.net, 0, 0, 1, 1 * GB, 1); /* 5 GB/s each on g0 -> g1 */
        hw_net_start_flow(x.net, 0, 0, 1, 2 * GB, 2);
        hw_net_start_flow(x.net, 0, 2, 3, 2 * GB, 3); /* 5 GB/s each on g2 -> g3 */
        hw_net_start_flow(x.net, 0, 2, 3, 2 * GB, 4);
        run_until(&x, 0);
        CHECK_INT_EQ(hw_net_flows_resolved(x.net), 4);
        /* flow 1 ends at 1/5 = 0.2 s; flow 2 then has 1 GB left at 10 GB/s: 0.3 s */
        run_until(&x, SIM_PS_PER_S / 5);
        CHECK_INT_EQ(hw_net_flows_resolved(x.net), 5);
        run_until(&x, SIM_TIME_NEVER - 1);
        CHECK_INT_EQ(find_done(&x, 2), 3 * SIM_PS_PER_S / 10);
        CHECK_INT_EQ(find_done(&x, 3), 2 * SIM_PS_PER_S / 5); /* 2 GB at 5 GB/s */
        bench_clear(&x);
    }

    /* 2x RTX 4090 on PCIe gen4 x16 without P2P, one socket with 89.6 GB/s of DRAM
     * (dual-channel DDR5-5600). PCIe gen4 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.508 GB/s.
     * A copy gpu0 -> gpu1 is staged in host memory: it crosses the DRAM link twice (write
     * then read), so alone it gets min(31.508, 89.6 / 2) = 31.508 GB/s. Two opposite copies
     * weigh 4 on the DRAM link: 89.6 / 4 = 22.4 GB/s each. With p2p both go direct through
     * the root complex and do not contend: 31.508 GB/s each. */
    {
        double pcie = 16e9 * 16 * 128.0 / 130.0 / 8;
        memset(s, 0, sizeof *s);
        s->nodes = 1;
        s->gpus_per_node = 2;
        s->intra.kind = HW_INTRA_PCIE;
        s->intra.pcie_gen = 4;
        s->intra.pcie_lanes = 16;
        s->intra.p2p = false;
        s->pcie.gen = 4;
        s->pcie.lanes = 16;
        s->pcie.sockets = 1;
        s->host.memory_bw_Bps = 89.6 * GB;
        bench x;
        bench_init(&x, s);
        const hw_route *r = hw_topo_route_gpus(x.topo, 0, 1);
        CHECK_INT_EQ(r->n, 4); /* gpu0 -> cpu0, DRAM, DRAM, cpu0 -> gpu1 */
        CHECK_INT_EQ(r->links[1], r->links[2]);
        CHECK_NEAR(hw_topo_route_bw_Bps(x.topo, r), pcie, 1e-12, 0);
        hw_net_start_flow(x.net, 0, 0, 1, 1 * GB, 1);
        run_until(&x, SIM_PS_PER_US * 10);
        CHECK_NEAR(hw_net_flow_rate(x.net, 1), pcie, 1e-12, 0);
        hw_net_start_flow(x.net, SIM_PS_PER_US * 10, 1, 0, 1 * GB, 2);
        run_until(&x, SIM_PS_PER_US * 20);
        CHECK_NEAR(hw_net_flow_rate(x.net, 1), 22.4 * GB, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 2), 22.4 * GB, 1e-12, 0);
        bench_clear(&x);

        s->intra.p2p = true;
        bench_init(&x, s);
        r = hw_topo_route_gpus(x.topo, 0, 1);
        CHECK_INT_EQ(r->n, 2); /* gpu0 -> cpu0 -> gpu1 */
        hw_net_start_flow(x.net, 0, 0, 1, 1 * GB, 1);
        hw_net_start_flow(x.net, 0, 1, 0, 1 * GB, 2);
        run_until(&x, SIM_PS_PER_US * 20);
        CHECK_NEAR(hw_net_flow_rate(x.net, 1), pcie, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 2), pcie, 1e-12, 0);
        bench_clear(&x);
    }

    /* DGX H100-like node: 8 GPUs on NVSwitch at 450 GB/s per direction. Eight flows
     * i -> i+1 (mod 8) each use one GPU's up-port and another's down-port once: 450 GB/s
     * each, not the PCIe path. */
    hw_topology_spec dgx;
    {
        memset(s, 0, sizeof *s);
        s->nodes = 4;
        s->gpus_per_node = 8;
        s->intra.kind = HW_INTRA_NVSWITCH;
        s->intra.bw_Bps = 450 * GB;
        s->intra.latency_ps = SIM_PS_PER_US;
        s->pcie.gen = 5;
        s->pcie.lanes = 16;
        s->pcie.switches = 4;
        s->pcie.sockets = 2;
        s->nics.count = 8;
        s->nics.bw_Bps = 50 * GB; /* 400 Gb/s */
        s->nics.latency_ps = 2 * SIM_PS_PER_US;
        s->fabric.kind = HW_FABRIC_RAIL_OPTIMIZED;
        s->fabric.oversubscription = 1;
        s->fabric.latency_ps = SIM_PS_PER_US;
        s->fabric.radix = 4; /* a leaf serves 2 nodes: nodes {0,1} and {2,3} form 2 groups */
        dgx = *s;
        bench x;
        bench_init(&x, s);
        for (int i = 0; i < 8; i++)
            hw_net_start_flow(x.net, 0, i, (i + 1) % 8, 1 * GB, (uint64_t)i);
        run_until(&x, 2 * SIM_PS_PER_US);
        for (int i = 0; i < 8; i++) {
            CHECK_NEAR(hw_net_flow_rate(x.net, (uint64_t)i), 450 * GB, 1e-12, 0);
            const hw_route *r = hw_topo_route_gpus(x.topo, i, (i + 1) % 8);
            CHECK_INT_EQ(r->n, 2);
            CHECK_INT_EQ(hw_topo_link(x.topo, r->links[0])->cls, HW_LINK_NVLINK);
        }
        /* 1 GB at 450 GB/s = 2.2222 ms after 1 us of latency (0.5 us per NVSwitch hop) */
        run_until(&x, SIM_TIME_NEVER - 1);
        CHECK_INT_EQ(find_done(&x, 0), SIM_PS_PER_US + INT64_C(2222222223));
        bench_clear(&x);
    }

    /* Rail-optimized, 4 nodes, radix 4 (a leaf serves 2 nodes of one rail). GPU 0 of node 0
     * -> GPU 0 of node 2, and GPU 0 of node 1 -> GPU 0 of node 3: both on rail 0, both
     * leave leaf (rail 0, nodes 0-1) through its uplink of 2 x 50 GB/s / oversubscription.
     * Non-blocking: 100 GB/s for two 50 GB/s flows, no contention, 50 GB/s each (NIC-bound).
     * 2:1: the uplink carries 50 GB/s, shared: 25 GB/s each. Flows inside one group never
     * reach the uplink: node 0 -> node 1 gets 50 GB/s either way. */
    for (int over = 1; over <= 2; over++) {
        *s = dgx;
        s->fabric.oversubscription = over;
        bench x;
        bench_init(&x, s);
        hw_net_start_flow(x.net, 0, 0, 16, 1 * GB, 1);
        hw_net_start_flow(x.net, 0, 8, 24, 1 * GB, 2);
        hw_net_start_flow(x.net, 0, 1, 9, 1 * GB, 3); /* rail 1, same group */
        run_until(&x, 50 * SIM_PS_PER_US);
        CHECK_NEAR(hw_net_flow_rate(x.net, 1), 50 * GB / over, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 2), 50 * GB / over, 1e-12, 0);
        CHECK_NEAR(hw_net_flow_rate(x.net, 3), 50 * GB, 1e-12, 0);
        /* the route uses GPU 0's own NIC (rail affinity) */
        const hw_route *r = hw_topo_route_gpus(x.topo, 0, 16);
        bool via_nic0 = false;
        for (int i = 0; i < r->n; i++)
            via_nic0 |= strcmp(hw_topo_device(x.topo, hw_topo_link(x.topo, r->links[i])->dst)->name,
                               "n0.nic0") == 0;
        CHECK(via_nic0);
        bench_clear(&x);
    }
    /* PXN (NCCL's point-to-point path between nodes, hw_topo_route_p2p), same fabric at 2:1.
     * GPU 0 of node 0 (device gpu 0) sends 1 GB to GPU 1 of node 2 (gpu 17), another rail;
     * GPU 0 of node 1 (gpu 8) sends 1 GB to GPU 0 of node 3 (gpu 24), on rail 0; both cross
     * to the other group of nodes, so both climb to the spine.
     * - PXN off: gpu 0 leaves through its own NIC (rail 0), so both flows share the uplink
     *   of rail 0's leaf of nodes 0-1: 2 x 50 GB/s / 2 = 50 GB/s, 25 GB/s each: 1 GB in
     *   40 ms.
     * - PXN on: gpu 0 first crosses NVLink to gpu 1 (its node-mate with the receiver's index)
     *   and leaves through gpu 1's NIC, on rail 1, whose leaf uplink carries nothing else:
     *   each flow is bound by its 50 GB/s NIC: 1 GB in 20 ms.
     * Rounds with isolation off make the transfers ordinary flows started at `act` = 0, so
     * each ends at exactly bytes / rate. Rail-0 traffic (gpu 8 -> gpu 24) takes the same
     * route either way: the sender already has the receiver's index. */
    for (int pxn = 0; pxn <= 1; pxn++) {
        *s = dgx;
        s->fabric.oversubscription = 2;
        s->fabric.pxn = pxn;
        bench x;
        bench_init(&x, s);
        hw_net_set_rounds(x.net, false);
        int g0 = hw_topo_gpu_device(x.topo, 0), g17 = hw_topo_gpu_device(x.topo, 17);
        int g8 = hw_topo_gpu_device(x.topo, 8), g24 = hw_topo_gpu_device(x.topo, 24);
        const hw_route *r = hw_topo_route_p2p(x.topo, g0, g17);
        CHECK(hw_topo_route_p2p(x.topo, g8, g24) == hw_topo_route(x.topo, g8, g24));
        hw_net_round_begin(x.net);
        hw_net_round_add(x.net, 0, 1 * GB, r);
        hw_net_round_end(x.net, 1);
        hw_net_round_begin(x.net);
        hw_net_round_add(x.net, 0, 1 * GB, hw_topo_route_p2p(x.topo, g8, g24));
        hw_net_round_end(x.net, 2);
        run_until(&x, SIM_TIME_NEVER - 1);
        sim_time want = pxn ? INT64_C(20000000000) : INT64_C(40000000000);
        CHECK_INT_EQ(find_done(&x, 1), want);
        CHECK_INT_EQ(find_done(&x, 2), INT64_C(20000000000) * (pxn ? 1 : 2));
        bool nic0 = false, nic1 = false;
        for (int i = 0; i < r->n; i++) {
            const char *dst = hw_topo_device(x.topo, hw_topo_link(x.topo, r->links[i])->dst)->name;
            nic0 |= strcmp(dst, "n0.nic0") == 0;
            nic1 |= strcmp(dst, "n0.nic1") == 0;
        }
        CHECK(nic0 == !pxn && nic1 == !!pxn);
        /* on: gpu 0 -> NVSwitch -> gpu 1 first (two NVLink links), then gpu 1's own route */
        if (pxn) {
            const hw_route *from1 = hw_topo_route(x.topo, hw_topo_gpu_device(x.topo, 1), g17);
            CHECK_INT_EQ(r->n, from1->n + 2);
            CHECK_INT_EQ(hw_topo_link(x.topo, r->links[0])->cls, HW_LINK_NVLINK);
            CHECK_INT_EQ(r->latency_ps, from1->latency_ps + 2 * (SIM_PS_PER_US / 2));
            CHECK_INT_EQ(hw_topo_p2p_source(x.topo, g0, g17), hw_topo_gpu_device(x.topo, 1));
            /* within a node, and to a peer of the sender's own index: no proxy */
            CHECK_INT_EQ(hw_topo_p2p_source(x.topo, g0, hw_topo_gpu_device(x.topo, 3)), g0);
            CHECK_INT_EQ(hw_topo_p2p_source(x.topo, g8, g24), g8);
        } else {
            CHECK(r == hw_topo_route(x.topo, g0, g17));
        }
        bench_clear(&x);
    }
    /* Randomised check of the incremental solver: 6 nodes of 2 GPUs on a 2:1 fat-tree of
     * radix 4 (tight uplinks, so flows couple through the tree), 60 flows of random sizes
     * admitted at random instants; after every event the rates must equal a from-scratch
     * max-min solution (component-local re-solves and the removal threshold included). */
    {
        memset(s, 0, sizeof *s);
        s->nodes = 6;
        s->gpus_per_node = 2;
        s->intra.kind = HW_INTRA_PCIE;
        s->intra.p2p = false; /* staged copies: weight-2 DRAM links join the game */
        s->intra.pcie_gen = 4;
        s->intra.pcie_lanes = 16;
        s->pcie.gen = 4;
        s->pcie.lanes = 16;
        s->pcie.sockets = 1;
        s->host.memory_bw_Bps = 40 * GB;
        s->nics.count = 1;
        s->nics.bw_Bps = 25 * GB;
        s->fabric.kind = HW_FABRIC_FAT_TREE;
        s->fabric.oversubscription = 2;
        s->fabric.radix = 4;
        bench x;
        bench_init(&x, s);
        uint64_t r = 12345;
        for (int i = 0; i < 60; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            int a = (int)(r % 12), b = (int)((r >> 8) % 12);
            double bytes = (double)((r >> 16) % 1000 + 1) * 1e6;
            sim_time at = (sim_time)((r >> 32) % 50) * SIM_PS_PER_MS / 10;
            hw_net_start_flow(x.net, at, a, b, bytes, (uint64_t)i);
        }
        int bad = 0, events = 0;
        while (sim_eventq_size(x.q) > 0) {
            hw_net_handle(x.net, sim_eventq_pop(x.q));
            events++;
            if (hw_net__check(x.net) != 0)
                bad++;
        }
        CHECK_INT_EQ(bad, 0);
        CHECK_INT_EQ(x.log.n, 60);
        CHECK(events > 120);
        bench_clear(&x);
    }
    /* Isolated rounds (hw_net_round_*): four GPUs on a switch, each with its own 10 GB/s
     * link in each direction and 1 us latency per link, so a GPU-to-GPU route is two links
     * and 2 us. */
    {
        memset(s, 0, sizeof *s);
        for (int i = 0; i < 4; i++) {
            char name[8];
            snprintf(name, sizeof name, "g%d", i);
            dev(s, name, HW_DEV_GPU, 0);
        }
        int sw = dev(s, "sw", HW_DEV_NVSWITCH, 0);
        for (int i = 0; i < 4; i++) {
            lnk(s, i, sw, 10 * GB, false);
            lnk(s, sw, i, 10 * GB, false);
        }
        for (int i = 0; i < s->n_links; i++)
            s->links[i].latency_ps = SIM_PS_PER_US;
        for (int split = 0; split < 2; split++)
            for (int rounds = 1; rounds >= 0; rounds--) {
                bench x;
                bench_init(&x, s);
                hw_net_set_rounds(x.net, rounds);
                /* g0 -> g1 (1 GB) and g2 -> g3 (2 GB) share no link: alone, each runs at
                 * 10 GB/s after its 2 us latency, ending at 2 us + 100 ms and 2 us + 200 ms */
                const hw_route *r01 = hw_topo_route_gpus(x.topo, 0, 1);
                const hw_route *r23 = hw_topo_route_gpus(x.topo, 2, 3);
                hw_net_round_begin(x.net);
                hw_net_round_add(x.net, r01->latency_ps, 1 * GB, r01);
                hw_net_round_add(x.net, r23->latency_ps, 2 * GB, r23);
                hw_net_round_end(x.net, 7);
                if (split) {
                    /* at 50 ms a 1 GB flow g2 -> g3 joins (active from 50 ms + 2 us): the
                     * round turns into flows, g2 -> g3 having sent 10 GB/s x (50 ms - 2 us);
                     * the two then share the 10 GB/s links by max-min. The last completion
                     * and the link's bytes must be the flow path's, compared below */
                    run_until(&x, 50 * SIM_PS_PER_MS);
                    hw_net_start_flow(x.net, 50 * SIM_PS_PER_MS, 2, 3, 1 * GB, 8);
                }
                run_until(&x, SIM_TIME_NEVER - 1);
                static sim_time last[2][2];
                static double bytes[2][2];
                last[split][rounds] = x.log.t[x.log.n - 1];
                bytes[split][rounds] = hw_net_link(x.net, r23->links[0])->bytes;
                if (!split) {
                    /* both completions are reported at the round's end when isolated */
                    CHECK_INT_EQ(hw_net_rounds_isolated(x.net), rounds ? 1 : 0);
                    CHECK_INT_EQ(find_done(&x, 7), rounds ? 2 * SIM_PS_PER_US + 200 * SIM_PS_PER_MS
                                                          : 2 * SIM_PS_PER_US + 100 * SIM_PS_PER_MS);
                    CHECK_INT_EQ(last[0][rounds], 2 * SIM_PS_PER_US + 200 * SIM_PS_PER_MS);
                } else {
                    CHECK_INT_EQ(hw_net_rounds_split(x.net), rounds ? 1 : 0);
                    /* by hand: at 50 ms + 2 us g2 -> g3 has 2 GB - 10 GB/s x 50 ms = 1.5 GB
                     * left; sharing 5 GB/s each, the new 1 GB flow ends 200 ms later
                     * (250 ms + 2 us) with 0.5 GB of the other left, which then runs at
                     * 10 GB/s for 50 ms: last completion 300 ms + 2 us (to rounding, a few ps) */
                    CHECK_NEAR((double)last[1][rounds],
                               (double)(300 * SIM_PS_PER_MS + 2 * SIM_PS_PER_US), 0, 4);
                }
                CHECK_INT_EQ(x.log.n, split ? 3 : 2);
                CHECK(hw_net__check(x.net) == 0);
                if (rounds == 0) {
                    /* the same last completion and link bytes either way */
                    CHECK_INT_EQ(last[split][1], last[split][0]);
                    CHECK(bytes[split][1] == bytes[split][0]);
                }
                bench_clear(&x);
            }
        /* Closed rounds (net-closed.c): g0 -> g1 (1 GB) and g0 -> g2 (2 GB) share g0's
         * 10 GB/s egress and nothing else. By hand: both active from 2 us at 5 GB/s each;
         * g0 -> g1 ends at 2 us + 200 ms with 1 GB of g0 -> g2 left, which then runs alone
         * at 10 GB/s for 100 ms: the round ends at 2 us + 300 ms, g0's egress having
         * carried 3 GB and been busy 300 ms. The same round again at 400 ms is timed from
         * the first one's evolution (one simulated, two timed), ending at 700 ms + 2 us.
         * Split: at 50 ms a 1 GB flow g0 -> g3 joins (active from 50 ms + 2 us), when
         * g0 -> g1 has 0.75 GB left and g0 -> g2 1.75 GB: three flows at 10/3 GB/s;
         * g0 -> g1 ends 225 ms later (275 ms + 2 us), leaving 1 GB and 0.25 GB; at 5 GB/s
         * each g0 -> g3 ends at 325 ms + 2 us, and g0 -> g2's last 0.75 GB at 10 GB/s end
         * at 400 ms + 2 us (to rounding, a few ps). Each case matches the flow path (rounds
         * off) to the picosecond and the byte. */
        for (int split = 0; split < 2; split++) {
            static sim_time last[2][2], busy[2][2];
            static double bytes[2][2];
            for (int rounds = 1; rounds >= 0; rounds--) {
                bench x;
                bench_init(&x, s);
                hw_net_set_rounds(x.net, rounds);
                const hw_route *r01 = hw_topo_route_gpus(x.topo, 0, 1);
                const hw_route *r02 = hw_topo_route_gpus(x.topo, 0, 2);
                for (int rep = 0; rep < (split ? 1 : 2); rep++) {
                    sim_time t = rep * 400 * SIM_PS_PER_MS;
                    run_until(&x, t);
                    hw_net_round_begin(x.net);
                    hw_net_round_add(x.net, t + r01->latency_ps, 1 * GB, r01);
                    hw_net_round_add(x.net, t + r02->latency_ps, 2 * GB, r02);
                    hw_net_round_end(x.net, 9);
                    if (split) {
                        run_until(&x, 50 * SIM_PS_PER_MS);
                        hw_net_start_flow(x.net, 50 * SIM_PS_PER_MS, 0, 3, 1 * GB, 10);
                    }
                    run_until(&x, SIM_TIME_NEVER - 1);
                }
                last[split][rounds] = x.log.t[x.log.n - 1];
                bytes[split][rounds] = hw_net_link(x.net, r01->links[0])->bytes;
                busy[split][rounds] = hw_net_link(x.net, r01->links[0])->busy_ps;
                if (!split) {
                    CHECK_INT_EQ(x.log.n, 4);
                    CHECK_INT_EQ(hw_net_rounds_closed(x.net), rounds ? 2 : 0);
                    CHECK_INT_EQ(hw_net_rounds_evolved(x.net), rounds ? 1 : 0);
                    CHECK_INT_EQ(x.log.t[1], 2 * SIM_PS_PER_US + 300 * SIM_PS_PER_MS);
                    CHECK_INT_EQ(last[0][rounds], 2 * SIM_PS_PER_US + 700 * SIM_PS_PER_MS);
                    CHECK_NEAR(bytes[0][rounds], 6 * GB, 0, 1e-6 * GB);
                    CHECK_INT_EQ(busy[0][rounds], 600 * SIM_PS_PER_MS);
                } else {
                    CHECK_INT_EQ(x.log.n, 3);
                    CHECK_INT_EQ(hw_net_rounds_split(x.net), rounds ? 1 : 0);
                    CHECK_INT_EQ(find_done(&x, 10) >= 0, 1);
                    CHECK_NEAR((double)find_done(&x, 10),
                               (double)(325 * SIM_PS_PER_MS + 2 * SIM_PS_PER_US), 0, 4);
                    CHECK_NEAR((double)last[1][rounds],
                               (double)(400 * SIM_PS_PER_MS + 2 * SIM_PS_PER_US), 0, 4);
                    CHECK_NEAR(bytes[1][rounds], 4 * GB, 0, 1e-6 * GB);
                    /* busy from 2 us (the round's activation) to the last completion */
                    CHECK_NEAR((double)busy[1][rounds], (double)(400 * SIM_PS_PER_MS), 0, 4);
                }
                CHECK(hw_net__check(x.net) == 0);
                if (rounds == 0) {
                    CHECK_INT_EQ(last[split][1], last[split][0]);
                    CHECK(bytes[split][1] == bytes[split][0]);
                    CHECK_INT_EQ(busy[split][1], busy[split][0]);
                }
                bench_clear(&x);
            }
        }
        /* The memo dropped while its records are in use (a 1-byte limit: every new record
         * empties it first): round A (g0 -> g1 1 GB, g0 -> g2 2 GB, sharing g0's egress)
         * and round B (g1 -> g3 1 GB, g2 -> g3 2 GB, sharing g3's ingress) are both closed
         * and run at once on disjoint links. Each ends as the case above, at 2 us + 300 ms:
         * A's record, dropped from the memo when B's is made, lives on for its round. */
        {
            bench x;
            bench_init(&x, s);
            hw_net__set_memo_limit(x.net, 1);
            const hw_route *r01 = hw_topo_route_gpus(x.topo, 0, 1);
            const hw_route *r02 = hw_topo_route_gpus(x.topo, 0, 2);
            const hw_route *r13 = hw_topo_route_gpus(x.topo, 1, 3);
            const hw_route *r23 = hw_topo_route_gpus(x.topo, 2, 3);
            hw_net_round_begin(x.net);
            hw_net_round_add(x.net, r01->latency_ps, 1 * GB, r01);
            hw_net_round_add(x.net, r02->latency_ps, 2 * GB, r02);
            hw_net_round_end(x.net, 11);
            hw_net_round_begin(x.net);
            hw_net_round_add(x.net, r13->latency_ps, 1 * GB, r13);
            hw_net_round_add(x.net, r23->latency_ps, 2 * GB, r23);
            hw_net_round_end(x.net, 12);
            run_until(&x, SIM_TIME_NEVER - 1);
            CHECK_INT_EQ(hw_net_rounds_closed(x.net), 2);
            CHECK_INT_EQ(hw_net_rounds_evolved(x.net), 2);
            CHECK_INT_EQ(find_done(&x, 11), 2 * SIM_PS_PER_US + 300 * SIM_PS_PER_MS);
            CHECK_INT_EQ(find_done(&x, 12), 2 * SIM_PS_PER_US + 300 * SIM_PS_PER_MS);
            CHECK_INT_EQ(x.log.n, 4);
            bench_clear(&x);
        }
    }
    sim_free(s);
    return test_finish();
}
