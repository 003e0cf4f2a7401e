/* Flow-level network: exact max-min cases on the placeholder star topology. */
#include "core/sim.h"

#include "core/eventq.h"
#include "hw/net.h"
#include "test.h"

typedef struct done_log {
    int n;
    uint64_t tag[16];
    sim_time t[16];
} done_log;

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    done_log *d = ctx;
    d->tag[d->n] = tag;
    d->t[d->n] = now;
    d->n++;
}

/* One node of 4 GPUs on a switch: 100 GB/s per direction per GPU, 1 us latency. */
static hw_topology_spec star(void)
{
    hw_topology_spec t = {.nodes = 1, .gpus_per_node = 4};
    t.intra.kind = HW_INTRA_NVSWITCH;
    t.intra.bw_Bps = 100e9;
    t.intra.latency_ps = SIM_PS_PER_US;
    return t;
}

static void run(sim_eventq *q, hw_net *net)
{
    sim_event *ev;
    while ((ev = sim_eventq_pop(q)) != NULL)
        hw_net_handle(net, ev);
}

int main(void)
{
    hw_topology_spec topo = star();

    /* One flow alone: 1 GB at 100 GB/s = 10 ms, after 1 us of latency. */
    {
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&topo, 4, q, 7, on_done, &d);
        hw_net_start_flow(net, 0, 0, 1, 1e9, 42);
        run(q, net);
        CHECK_INT_EQ(d.n, 1);
        CHECK_INT_EQ(d.tag[0], 42);
        CHECK_INT_EQ(d.t[0], 10 * SIM_PS_PER_MS + SIM_PS_PER_US);
        /* the flow crossed up(gpu0) and down(gpu1): 1 GB each, busy 10 ms */
        CHECK_NEAR(hw_net_link(net, 0)->bytes, 1e9, 1e-12, 0);
        CHECK_NEAR(hw_net_link(net, 3)->bytes, 1e9, 1e-12, 0);
        CHECK_INT_EQ(hw_net_link(net, 0)->busy_ps, 10 * SIM_PS_PER_MS);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* Two flows out of GPU 0 share its 100 GB/s up-link: 50 GB/s each, so 1 GB each takes
     * 20 ms; both end at 20 ms + 1 us. */
    {
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&topo, 4, q, 7, on_done, &d);
        hw_net_start_flow(net, 0, 0, 1, 1e9, 1);
        hw_net_start_flow(net, 0, 0, 2, 1e9, 2);
        run(q, net);
        CHECK_INT_EQ(d.n, 2);
        CHECK_INT_EQ(d.t[0], 20 * SIM_PS_PER_MS + SIM_PS_PER_US);
        CHECK_INT_EQ(d.t[1], 20 * SIM_PS_PER_MS + SIM_PS_PER_US);
        /* one re-solve admits both flows (same instant), one more after both finish together:
         * simultaneous changes are batched */
        CHECK_INT_EQ(hw_net_solves(net), 2);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* Unequal sizes: 0.5 GB and 1 GB share the up-link at 50 GB/s each. The small one ends
     * after 0.5/50 = 10 ms; the large one then has 0.5 GB left at 100 GB/s = 5 ms more:
     * 15 ms. Both plus 1 us latency. */
    {
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&topo, 4, q, 7, on_done, &d);
        hw_net_start_flow(net, 0, 0, 1, 0.5e9, 1);
        hw_net_start_flow(net, 0, 0, 2, 1e9, 2);
        run(q, net);
        CHECK_INT_EQ(d.n, 2);
        CHECK_INT_EQ(d.tag[0], 1);
        CHECK_INT_EQ(d.t[0], 10 * SIM_PS_PER_MS + SIM_PS_PER_US);
        CHECK_INT_EQ(d.tag[1], 2);
        CHECK_INT_EQ(d.t[1], 15 * SIM_PS_PER_MS + SIM_PS_PER_US);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* Max-min with a bottleneck elsewhere: flows A 0->1 and B 0->2 share up(0); flow C 3->2
     * shares down(2) with B. Progressive filling: up(0) and down(2) both offer 50 GB/s per
     * flow; the lowest index (up(0), link 0) is fixed first: A = B = 50 GB/s; down(2) has
     * 50 GB/s left for C. All three get 50 GB/s, so 1 GB each takes 20 ms. */
    {
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&topo, 4, q, 7, on_done, &d);
        hw_net_start_flow(net, 0, 0, 1, 1e9, 1);
        hw_net_start_flow(net, 0, 0, 2, 1e9, 2);
        hw_net_start_flow(net, 0, 3, 2, 1e9, 3);
        run(q, net);
        CHECK_INT_EQ(d.n, 3);
        for (int i = 0; i < 3; i++)
            CHECK_INT_EQ(d.t[i], 20 * SIM_PS_PER_MS + SIM_PS_PER_US);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* Latency is paid before bandwidth: a 0-byte flow ends after the latency alone; a flow
     * to itself ends at once. */
    {
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&topo, 4, q, 7, on_done, &d);
        hw_net_start_flow(net, 5, 0, 1, 0, 1);
        hw_net_start_flow(net, 5, 2, 2, 1e9, 2);
        run(q, net);
        CHECK_INT_EQ(d.n, 2);
        CHECK_INT_EQ(d.tag[0], 2);
        CHECK_INT_EQ(d.t[0], 5);
        CHECK_INT_EQ(d.tag[1], 1);
        CHECK_INT_EQ(d.t[1], 5 + SIM_PS_PER_US);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* Two nodes of 4: inter-node bandwidth per GPU = 4 NICs x 50 GB/s / 4 GPUs / (2:1
     * oversubscription) = 25 GB/s; latency 2 x 2 us (NIC to switch, switch to NIC) + 1 us
     * fabric = 5 us. */
    {
        hw_topology_spec t2 = topo;
        t2.nodes = 2;
        t2.nics.count = 4;
        t2.nics.bw_Bps = 50e9;
        t2.nics.latency_ps = 2 * SIM_PS_PER_US;
        t2.fabric.kind = HW_FABRIC_FAT_TREE;
        t2.fabric.oversubscription = 2;
        t2.fabric.latency_ps = SIM_PS_PER_US;
        done_log d = {0};
        sim_eventq *q = sim_eventq_create();
        hw_net *net = hw_net_create(&t2, 8, q, 7, on_done, &d);
        CHECK_NEAR(hw_net_path_bw_Bps(net, 0, 4), 25e9, 1e-12, 0);
        CHECK_INT_EQ(hw_net_path_latency_ps(net, 0, 4), 5 * SIM_PS_PER_US);
        CHECK_NEAR(hw_net_path_bw_Bps(net, 0, 1), 100e9, 1e-12, 0);
        /* 1 GB at 25 GB/s = 40 ms */
        hw_net_start_flow(net, 0, 0, 4, 1e9, 9);
        run(q, net);
        CHECK_INT_EQ(d.t[0], 40 * SIM_PS_PER_MS + 5 * SIM_PS_PER_US);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
    }

    /* PCIe gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5077 GB/s per direction. */
    CHECK_NEAR(hw_pcie_bw_Bps(4, 16), 16e9 * 16 * 128.0 / 130.0 / 8, 1e-12, 0);
    return test_finish();
}
