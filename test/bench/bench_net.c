/* Benchmark (not a test): the flow solver at scale. A 1,024-node DGX-H100-like fat-tree
 * (8 GPUs and 8 x 400 Gb/s NICs per node: 8,192 GPUs), 100,000 flows between random GPU
 * pairs admitted at once, then run to completion. Prints routes/s, the admission solve
 * time, events, re-solves and the solver time per event.
 *
 * Two traffic patterns:
 *   random  uniform random GPU pairs, 1 to 64 MiB each: the worst case for an exact
 *           max-min solver (every flow couples to every other through shared NIC links,
 *           and completions are spread in time, so most events re-solve a giant component);
 *   rings   FLOWS / GPUS concurrent rings (GPU i sends 16 MiB to GPU i + stride), the
 *           shape of collective rounds: equal sizes finish together and re-solve in batches.
 *
 *   bench_net [random|rings] [NODES] [FLOWS]      (defaults random 1024 100000) */
#include "core/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/eventq.h"
#include "hw/net.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    (void)tag;
    (void)now;
    ++*(uint64_t *)ctx;
}

int main(int argc, char **argv)
{
    bool rings = argc > 1 && strcmp(argv[1], "rings") == 0;
    int nodes = argc > 2 ? atoi(argv[2]) : 1024;
    int flows = argc > 3 ? atoi(argv[3]) : 100000;
    hw_topology_spec *s = sim_calloc(1, sizeof *s);
    s->nodes = nodes;
    s->gpus_per_node = 8;
    s->intra.kind = HW_INTRA_NVSWITCH;
    s->intra.bw_Bps = 450e9;
    s->intra.latency_ps = SIM_PS_PER_US;
    s->pcie.gen = 5;
    s->pcie.lanes = 16;
    s->pcie.switches = 4;
    s->pcie.sockets = 2;
    s->nics.count = 8;
    s->nics.bw_Bps = 50e9;
    s->nics.latency_ps = 2 * SIM_PS_PER_US;
    s->fabric.kind = HW_FABRIC_FAT_TREE;
    s->fabric.oversubscription = 1;
    s->fabric.latency_ps = SIM_PS_PER_US;
    s->fabric.radix = 64;

    double t0 = now_s();
    hw_topo *topo;
    sim_diag d = {0};
    if (hw_topo_create(s, &topo, &d) != 0) {
        fprintf(stderr, "topology: %s\n", d.msg);
        return 1;
    }
    double t1 = now_s();
    sim_eventq *q = sim_eventq_create();
    uint64_t done = 0;
    hw_net *net = hw_net_create(topo, q, 1, on_done, &done);
    int gpus = hw_topo_gpu_count(topo);
    uint64_t x = 88172645463325252ULL; /* xorshift64, fixed seed */
    for (int i = 0; i < flows; i++) {
        int a, b;
        double bytes;
        if (rings) {
            /* ring k: stride 8k + 1 (k = 0 stays inside a node for 7 of 8 GPUs) */
            int k = i / gpus;
            a = i % gpus;
            b = (a + 8 * k + 1) % gpus;
            bytes = 16.0 * 1048576.0;
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            a = (int)(x % (uint64_t)gpus);
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b = (int)(x % (uint64_t)gpus);
            bytes = (double)((x >> 20) % 64 + 1) * 1048576.0; /* 1 to 64 MiB */
        }
        hw_net_start_flow(net, 0, a, b, bytes, (uint64_t)i);
    }
    double t2 = now_s();
    /* events before the first completion: activations (after each route's latency) and
     * their batched re-solves */
    uint64_t events = 0;
    double first_done_s = 0;
    sim_event *ev;
    sim_time end = 0;
    while ((ev = sim_eventq_pop(q)) != NULL) {
        end = ev->time;
        hw_net_handle(net, ev);
        events++;
        if (done == 1 && first_done_s == 0)
            first_done_s = now_s() - t2;
    }
    double t3 = now_s();
    hw_net_finish(net, end);
    printf("pattern: %s\n", rings ? "rings" : "random");
    printf("fat-tree: %d nodes, %d GPUs, %d devices, %d links (built in %.3f s)\n", nodes, gpus,
           hw_topo_device_count(topo), hw_topo_link_count(topo), t1 - t0);
    printf("routes: %llu computed in %.3f s (%.0f routes/s)\n",
           (unsigned long long)hw_topo_routes_computed(topo), t2 - t1,
           (double)hw_topo_routes_computed(topo) / (t2 - t1));
    printf("flows: %d admitted, %llu completed; simulated %.6f s\n", flows,
           (unsigned long long)done, sim_time_to_s(end));
    printf("events: %llu in %.3f s (%.0f events/s, %.2f us per event); until the first "
           "completion %.3f s (admission)\n",
           (unsigned long long)events, t3 - t2, (double)events / (t3 - t2),
           1e6 * (t3 - t2) / (double)events, first_done_s);
    printf("solver: %llu re-solves, %llu flow rates recomputed (%.1f per re-solve), "
           "%.0f flows/s completed\n",
           (unsigned long long)hw_net_solves(net), (unsigned long long)hw_net_flows_resolved(net),
           (double)hw_net_flows_resolved(net) / (double)hw_net_solves(net),
           (double)done / (t3 - t2));
    hw_net_destroy(net);
    sim_eventq_destroy(q);
    hw_topo_destroy(topo);
    sim_free(s);
    return done == (uint64_t)flows ? 0 : 1;
}
