/* Collectives executed as flows on the network: the closed forms, in picoseconds. */
#include "core/sim.h"

#include <string.h>

#include "coll/select.h"
#include "test.h"

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    (void)tag;
    (void)now;
    ++*(int *)ctx;
}

/* One node of n GPUs on an NVSwitch at 100 GB/s per direction, 0.5 us per hop (1 us GPU to
 * GPU); ideal protocols: efficiency 1, no base or step latency. So α = 1 us per round. */
static void ideal(hw_topology_spec *s, int n, bool sharp)
{
    memset(s, 0, sizeof *s);
    s->nodes = 1;
    s->gpus_per_node = n;
    s->intra.kind = HW_INTRA_NVSWITCH;
    s->intra.bw_Bps = 100e9;
    s->intra.latency_ps = SIM_PS_PER_US;
    s->intra.sharp = sharp;
    s->pcie.gen = 5;
    s->pcie.lanes = 16;
    hw_protocols_defaults(&s->protocols);
    for (int p = 0; p < HW_PROTO_COUNT; p++) {
        s->protocols.proto[p].base_ps = 0;
        for (int c = 0; c < HW_LINK_CLASS_COUNT; c++) {
            s->protocols.proto[p].step_ps[c] = 0;
            s->protocols.proto[p].efficiency[c] = 1;
        }
    }
    s->protocols.nvls_efficiency = 1;
    s->protocols.nvls_step_ps = 0;
}

typedef struct rig {
    hw_topology_spec spec;
    hw_topo *topo;
    int32_t gpu[64], node[64];
    coll_group g;
    coll_target t;
} rig;

static void rig_init(rig *r, int n, bool sharp)
{
    ideal(&r->spec, n, sharp);
    SIM_ASSERT(hw_topo_create(&r->spec, &r->topo, NULL) == 0, "topology");
    for (int i = 0; i < n; i++) {
        r->gpu[i] = i;
        r->node[i] = 0;
    }
    int sw = sharp ? hw_topo_common_nvswitch(r->topo, r->gpu, n) : -1;
    r->g = (coll_group){.n = n, .node = r->node, .nvls = sw >= 0};
    r->t = (coll_target){.topo = r->topo, .protocols = &r->spec.protocols, .group = &r->g,
                         .gpu = r->gpu, .switch_dev = sw};
}

/* Starts collective x at `start` and runs the net's events until it completes; returns the
 * time of its last event. *flows counts completions (on_done), *seen those handed to x. */
static sim_time run_exec(rig *r, sim_eventq *q, hw_net *net, coll_exec *x, sim_time start,
                         int *flows, int *seen)
{
    bool done = coll_exec_start(x, r->topo, net, start, 0);
    sim_time end = start;
    sim_event *ev;
    while (!done && (ev = sim_eventq_pop(q)) != NULL) {
        end = ev->time;
        hw_net_handle(net, ev);
        while (*seen < *flows && !done) {
            ++*seen;
            done = coll_exec_flow_done(x, r->topo, net, end, 0);
        }
    }
    return end;
}

/* Runs `algo` (with `chunks`) under Simple and returns the time in ps. */
static sim_time run(rig *r, coll_algo algo, coll_op op, double bytes, int chunks)
{
    coll_schedule s;
    coll_schedule_init(&s);
    SIM_ASSERT(coll_build(&s, algo, op, &r->g, bytes, 0, chunks) == 0, "build");
    sim_eventq *q = sim_eventq_create();
    int flows = 0, seen = 0;
    hw_net *net = hw_net_create(r->topo, q, 1, on_done, &flows);
    coll_exec x = {.sched = &s, .gpu = r->gpu, .switch_dev = r->t.switch_dev,
                   .proto = HW_PROTO_SIMPLE, .nvls = algo == COLL_ALGO_NVLS,
                   .protocols = &r->spec.protocols};
    sim_time end = run_exec(r, q, net, &x, 0, &flows, &seen);
    /* the isolated estimate of the selector agrees with the replay on these uniform rounds */
    double est = coll_estimate(&r->t, &x, &s);
    CHECK_NEAR(est, sim_time_to_s(end), 1e-9, 2e-12 * s.n_rounds);
    hw_net_destroy(net);
    sim_eventq_destroy(q);
    coll_schedule_clear(&s);
    return end;
}

/* Runs schedule `s` twice on one net, one instance after the other, with its transfer costs
 * computed as each round starts (mode 0), cached per transfer (1: coll_exec_costs) or per
 * distinct round (2: coll_exec_round_costs, whose rounds pass a key to the net). Returns the
 * second instance's end; *closed and *evolved get the net's closed-round counters. */
static sim_time run_costed(rig *r, const coll_schedule *s, int mode, uint64_t *closed,
                           uint64_t *evolved)
{
    sim_eventq *q = sim_eventq_create();
    int flows = 0, seen = 0;
    hw_net *net = hw_net_create(r->topo, q, 1, on_done, &flows);
    coll_exec x = {.sched = s, .gpu = r->gpu, .switch_dev = r->t.switch_dev,
                   .proto = HW_PROTO_SIMPLE, .protocols = &r->spec.protocols};
    coll_xfer_cost *costs = NULL;
    uint32_t *at = NULL;
    if (mode == 1)
        costs = coll_exec_costs(&x, r->topo);
    else if (mode == 2)
        costs = coll_exec_round_costs(&x, r->topo, (size_t)1 << 20, &at);
    SIM_ASSERT(mode == 0 || costs, "costs");
    x.costs = costs;
    x.cost_at = at;
    sim_time end = 0;
    for (int rep = 0; rep < 2; rep++)
        end = run_exec(r, q, net, &x, end, &flows, &seen);
    *closed = hw_net_rounds_closed(net);
    *evolved = hw_net_rounds_evolved(net);
    hw_net_destroy(net);
    sim_eventq_destroy(q);
    sim_free(costs);
    sim_free(at);
    return end;
}

/* Which (algorithm, protocol) pairs `auto` considers: NCCL's (select.h, coll_nccl_algo and
 * coll_ll128_paths; NCCL 2.30 src/graph/tuning.cc). */
static void test_nccl_rules(void)
{
    /* the per-operation table, on a group with two members per node and one per node */
    int32_t two[4] = {0, 0, 1, 1}, own[4] = {0, 1, 2, 3};
    coll_group g2 = {.n = 4, .node = two}, g1 = {.n = 4, .node = own};
    CHECK(!coll_one_per_node(&g2));
    CHECK(coll_one_per_node(&g1));
    for (int a = 0; a < COLL_ALGO_COUNT; a++) {
        bool ring = a == COLL_ALGO_RING;
        CHECK(coll_nccl_algo(&g2, COLL_ALL_REDUCE, (coll_algo)a) ==
              (ring || a == COLL_ALGO_TREE || a == COLL_ALGO_NVLS));
        /* PAT (halving-doubling here) only with one GPU per node */
        CHECK(coll_nccl_algo(&g2, COLL_ALL_GATHER, (coll_algo)a) == ring);
        CHECK(coll_nccl_algo(&g1, COLL_REDUCE_SCATTER, (coll_algo)a) ==
              (ring || a == COLL_ALGO_HD));
        CHECK(coll_nccl_algo(&g1, COLL_BROADCAST, (coll_algo)a) == ring);
        CHECK(coll_nccl_algo(&g1, COLL_REDUCE, (coll_algo)a) == ring);
        CHECK(coll_nccl_algo(&g1, COLL_SEND_RECV, (coll_algo)a) == ring);
        CHECK(coll_nccl_algo(&g1, COLL_RING_SHIFT, (coll_algo)a) == ring);
        CHECK(coll_nccl_algo(&g1, COLL_ALL_TO_ALL, (coll_algo)a) == (a == COLL_ALGO_DIRECT));
        /* hierarchical and pairwise are stepsim's own: never NCCL's */
        CHECK(!coll_nccl_algo(&g2, COLL_ALL_REDUCE, COLL_ALGO_HIERARCHICAL));
    }

    /* 8 GPUs on PCIe gen4 x16 with peer-to-peer, 4 switches on 2 sockets (the 8x L40S
     * layout): no GPU pair is joined by NVLink, so NCCL leaves LL128 off (typeIntra is
     * PIX/PXB/SYS, above PATH_NVB) and auto never picks it, at any size; fixed, it runs. */
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    spec->nodes = 1;
    spec->gpus_per_node = 8;
    spec->intra.kind = HW_INTRA_PCIE;
    spec->intra.p2p = true;
    spec->pcie.gen = 4;
    spec->pcie.lanes = 16;
    spec->pcie.switches = 4;
    spec->pcie.sockets = 2;
    spec->pcie.latency_ps = SIM_PS_PER_US / 2;
    hw_protocols_defaults(&spec->protocols);
    hw_topo *topo = NULL;
    SIM_ASSERT(hw_topo_create(spec, &topo, NULL) == 0, "topology");
    int32_t gpu[64], node[64] = {0};
    for (int i = 0; i < 64; i++)
        gpu[i] = i;
    coll_group g = {.n = 8, .node = node};
    coll_target t = {.topo = topo, .protocols = &spec->protocols, .group = &g, .gpu = gpu,
                     .switch_dev = -1};
    CHECK(!coll_ll128_paths(&t));
    coll_choice ch;
    for (double b = 8; b <= 1 << 30; b *= 4) {
        CHECK_INT_EQ(coll_select(&t, COLL_ALL_REDUCE, b, 0, -1, -1, &ch, NULL), 0);
        CHECK(ch.proto != HW_PROTO_LL128);
        CHECK(ch.algo == COLL_ALGO_RING || ch.algo == COLL_ALGO_TREE);
        CHECK_INT_EQ(coll_select(&t, COLL_ALL_GATHER, b, 0, -1, -1, &ch, NULL), 0);
        CHECK_INT_EQ(ch.algo, COLL_ALGO_RING);
        CHECK_INT_EQ(coll_select(&t, COLL_ALL_TO_ALL, b, 0, -1, -1, &ch, NULL), 0);
        CHECK_INT_EQ(ch.algo, COLL_ALGO_DIRECT);
        CHECK_INT_EQ(coll_select(&t, COLL_BROADCAST, b, 0, -1, -1, &ch, NULL), 0);
        CHECK_INT_EQ(ch.algo, COLL_ALGO_RING);
    }
    CHECK_INT_EQ(coll_select(&t, COLL_ALL_REDUCE, 1 << 20, 0, -1, HW_PROTO_LL128, &ch, NULL), 0);
    CHECK_INT_EQ(ch.proto, HW_PROTO_LL128);
    hw_topo_destroy(topo);
    /* the same on an NVSwitch: every pair is joined by NVLink, LL128 is NCCL's default */
    spec->intra.kind = HW_INTRA_NVSWITCH;
    spec->intra.bw_Bps = 450e9;
    spec->intra.latency_ps = SIM_PS_PER_US;
    SIM_ASSERT(hw_topo_create(spec, &topo, NULL) == 0, "topology");
    t.topo = topo;
    CHECK(coll_ll128_paths(&t));
    hw_topo_destroy(topo);

    /* 64 nodes of one GPU behind one 50 GB/s NIC each (PCIe gen 5, 63 GB/s, so the NIC is
     * the route's narrowest link: class ib) on a single switch: PAT's log-step schedule
     * (halving-doubling, 6 rounds, Simple only) against the ring's 63 rounds. A 64 KiB
     * all_gather is latency-bound: each round pays the route's latency (GPU-CPU-NIC 0.5 +
     * 0.5 us each side, NIC-switch 2 us each side: 6 us) plus the protocol's ib step (LL
     * 1 us, LL128 3 us, Simple 6 us): the ring at best 4 + 63 x 7 = 445 us under LL, PAT
     * 8 + 6 x 12 = 80 us plus its rounds' data, 1, 2, .., 32 KiB = 64,512 B at Simple's ib
     * efficiency 0.92 over 50 GB/s, 1.40243 us: 81.40243 us (none of its steps exceeds a
     * 512 KiB slice: no latency hides). With the members labelled two per node, PAT is off
     * and the ring is left. */
    memset(spec, 0, sizeof *spec);
    spec->nodes = 64;
    spec->gpus_per_node = 1;
    spec->intra.kind = HW_INTRA_PCIE;
    spec->intra.p2p = true;
    spec->pcie.gen = 5;
    spec->pcie.lanes = 16;
    spec->pcie.sockets = 1;
    spec->pcie.latency_ps = SIM_PS_PER_US / 2;
    spec->nics.count = 1;
    spec->nics.bw_Bps = 50e9;
    spec->nics.latency_ps = 2 * SIM_PS_PER_US;
    spec->fabric.kind = HW_FABRIC_SINGLE_SWITCH;
    hw_protocols_defaults(&spec->protocols);
    SIM_ASSERT(hw_topo_create(spec, &topo, NULL) == 0, "topology");
    for (int i = 0; i < 64; i++)
        node[i] = i;
    g = (coll_group){.n = 64, .node = node};
    t.topo = topo;
    CHECK_INT_EQ(coll_select(&t, COLL_ALL_GATHER, 65536, 0, -1, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.algo, COLL_ALGO_HD);
    CHECK_INT_EQ(ch.proto, HW_PROTO_SIMPLE);
    CHECK_NEAR(ch.est_s, 81.40243e-6, 0, 1e-11);
    for (int i = 0; i < 64; i++)
        node[i] = i / 2;
    CHECK_INT_EQ(coll_select(&t, COLL_ALL_GATHER, 65536, 0, -1, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.algo, COLL_ALGO_RING);
    hw_topo_destroy(topo);
    sim_free(spec);
}

/* Copies staged in host memory (p2p: false): two GPUs on PCIe gen4 x16 (16 GT/s x 16 x
 * 128/130 / 8 = 31.5077 GB/s) under one socket with 89.6 GB/s of DRAM, a staging hand-off of
 * 10 us per 1 MB chunk; ideal protocols (efficiency 1, no launch or step latency). The route
 * gpu0 -> cpu0 -> mem0 -> cpu0 -> gpu1 has links of 0.5 + 0.1 + 0.1 + 0.5 = 1.2 us and the
 * first hand-off: 11.2 us of latency. */
static void test_staging(void)
{
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    ideal(spec, 2, false);
    spec->intra.kind = HW_INTRA_PCIE;
    spec->intra.bw_Bps = 0; /* the PCIe link's own: gen 4 x16 */
    spec->intra.latency_ps = 0;
    spec->intra.p2p = false;
    spec->pcie.gen = 4;
    spec->pcie.lanes = 16;
    spec->pcie.sockets = 1;
    spec->pcie.latency_ps = SIM_PS_PER_US / 2;
    spec->host.memory_bw_Bps = 89.6e9;
    spec->gpu.staging_latency_ps = 10 * SIM_PS_PER_US;
    spec->gpu.staging_chunk_bytes = 1000000;
    rig *r = sim_calloc(1, sizeof *r);
    r->spec = *spec;
    SIM_ASSERT(hw_topo_create(&r->spec, &r->topo, NULL) == 0, "topology");
    for (int i = 0; i < 2; i++)
        r->gpu[i] = i, r->node[i] = 0;
    r->g = (coll_group){.n = 2, .node = r->node};
    r->t = (coll_target){.topo = r->topo, .protocols = &r->spec.protocols, .group = &r->g,
                         .gpu = r->gpu, .switch_dev = -1};
    const hw_route *rt = hw_topo_route_gpus(r->topo, 0, 1);
    CHECK_INT_EQ(rt->latency_ps, 11200 * 1000);
    CHECK_INT_EQ(rt->stage_ps, 10 * SIM_PS_PER_US);
    /* hand-offs: one per started chunk, at least one */
    CHECK_INT_EQ(hw_route_staging_ps(rt, 8), 10 * SIM_PS_PER_US);
    CHECK_INT_EQ(hw_route_staging_ps(rt, 1e6), 10 * SIM_PS_PER_US);
    CHECK_INT_EQ(hw_route_staging_ps(rt, 1e6 + 1), 20 * SIM_PS_PER_US);
    CHECK_INT_EQ(hw_route_staging_ps(rt, 10e6), 100 * SIM_PS_PER_US);
    /* the way back is staged alike */
    CHECK_INT_EQ(hw_topo_route_gpus(r->topo, 1, 0)->stage_ps, 10 * SIM_PS_PER_US);

    /* send_recv of 10 MB: ten hand-offs (100 us, the first of them in place of the route's
     * one), the links' 1.2 us, and 10 MB at the PCIe link's 31.5077 GB/s (the DRAM link is
     * crossed twice: 89.6 / 2 = 44.8 GB/s is not the bound): 10e6 / 31.5077e9 = 317.383 us;
     * 418.583 us in all. */
    double pcie = 16e9 * 16 * 128.0 / 130.0 / 8;
    sim_time one = run(r, COLL_ALGO_RING, COLL_SEND_RECV, 10e6, 1);
    CHECK_NEAR(sim_time_to_s(one), 100e-6 + 1.2e-6 + 10e6 / pcie, 0, 2e-12);
    /* both ways at once (ring_shift on 2): the two copies cross the half-duplex DRAM link
     * twice each, 89.6 / 4 = 22.4 GB/s apiece, and each waits its own ten hand-offs:
     * 100 + 1.2 + 446.429 us = 547.629 us. */
    sim_time two = run(r, COLL_ALGO_RING, COLL_RING_SHIFT, 10e6, 1);
    CHECK_NEAR(sim_time_to_s(two), 100e-6 + 1.2e-6 + 10e6 / 22.4e9, 0, 2e-12);
    /* A member pair's transfers in one round are one staged stream: the tree on two members
     * sends each tree's half on the same edge in the same round, and the pair's hand-offs are
     * those of the two halves together. All_reduce of 16 MB at C = 4: round 0 moves two
     * transfers of 2 MB from member 1 to 0, 4 MB in all: four hand-offs each, not two. */
    coll_schedule t;
    coll_schedule_init(&t);
    SIM_ASSERT(coll_build(&t, COLL_ALGO_TREE, COLL_ALL_REDUCE, &r->g, 16e6, 0, 4) == 0, "build");
    CHECK_INT_EQ((int)(t.round_first[1] - t.round_first[0]), 2);
    CHECK_INT_EQ(coll_exec_staging_ps(&t, 0, 0, rt), 40 * SIM_PS_PER_US);
    CHECK_INT_EQ(coll_exec_staging_ps(&t, 0, 1, rt), 40 * SIM_PS_PER_US);
    coll_schedule_clear(&t);
    hw_topo_destroy(r->topo);
    /* with p2p the copy goes gpu0 -> cpu0 -> gpu1 (1 us) and nothing is staged */
    spec->intra.p2p = true;
    SIM_ASSERT(hw_topo_create(spec, &r->topo, NULL) == 0, "topology");
    rt = hw_topo_route_gpus(r->topo, 0, 1);
    CHECK_INT_EQ(rt->latency_ps, SIM_PS_PER_US);
    CHECK_INT_EQ(rt->stage_ps, 0);
    CHECK_INT_EQ(hw_route_staging_ps(rt, 10e6), 0);
    hw_topo_destroy(r->topo);
    sim_free(r);
    sim_free(spec);
}

/* Rings whose rounds wait only for their own inputs (coll_schedule.dataflow). Two nodes of
 * two GPUs on an NVSwitch (1 us GPU to GPU, 100 GB/s per port), one 50 GB/s NIC per GPU
 * (2 us each), one fabric switch, PCIe gen 5 x16 between GPU and NIC (no latency); ideal
 * protocols (efficiency 1, no base or step latency). A route within a node is 1 us, one
 * across nodes 2 + 2 = 4 us (GPU, PCIe, NIC, switch, NIC, PCIe, GPU). */
static void test_dataflow(void)
{
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    ideal(spec, 2, false);
    spec->nodes = 2;
    spec->nics.count = 2;
    spec->nics.bw_Bps = 50e9;
    spec->nics.latency_ps = 2 * SIM_PS_PER_US;
    spec->fabric.kind = HW_FABRIC_SINGLE_SWITCH;
    spec->fabric.latency_ps = SIM_PS_PER_US;
    hw_topo *topo;
    SIM_ASSERT(hw_topo_create(spec, &topo, NULL) == 0, "topology");
    int32_t gpu[4] = {0, 1, 2, 3}, node[4] = {0, 0, 1, 1};
    CHECK_INT_EQ(hw_topo_route(topo, hw_topo_gpu_device(topo, 0), hw_topo_gpu_device(topo, 1))
                     ->latency_ps, SIM_PS_PER_US);
    CHECK_INT_EQ(hw_topo_route(topo, hw_topo_gpu_device(topo, 1), hw_topo_gpu_device(topo, 3))
                     ->latency_ps, 4 * SIM_PS_PER_US);
    /* Ring all_gather over the 4 GPUs, S = 32,768 B gathered: 3 rounds of a 8,192 B piece per
     * member, on NCCL's two channels (ring.c): 4,096 B to the node's next GPU (1 us, 40.96 ns
     * at 100 GB/s) and 4,096 B across (4 us, 81.92 ns at 50 GB/s), each under one 512 KiB
     * slice (no latency hides). Each ring has n = 4 hops, two of each kind: 10 us in all; the
     * last piece's path skips the cheapest, 9 us, so each round pays (4 x 2.5 - 1) / 3 = 3 us
     * (2.5 us: the byte-weighted mean of 1 and 4) and ends with the crossing's data:
     * 3 x 3.08192 us = 9.24576 us. Rounds that each waited for their slowest hop would take
     * 3 x 4.08192 = 12.24576 us. The selector's isolated estimate agrees. */
    coll_group g = {.n = 4, .node = node};
    coll_schedule s;
    coll_schedule_init(&s);
    SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g, 32768, 0, 1) == 0, "build");
    CHECK_INT_EQ(s.dataflow, 4);
    coll_target t = {.topo = topo, .protocols = &spec->protocols, .group = &g, .gpu = gpu,
                     .switch_dev = -1};
    for (int mode = 0; mode < 3; mode++) { /* costed as it runs, per transfer, per round */
        sim_eventq *q = sim_eventq_create();
        int flows = 0, seen = 0;
        hw_net *net = hw_net_create(topo, q, 1, on_done, &flows);
        coll_exec x = {.sched = &s, .gpu = gpu, .switch_dev = -1, .proto = HW_PROTO_SIMPLE,
                       .protocols = &spec->protocols};
        uint32_t *at = NULL;
        coll_xfer_cost *costs = mode == 1   ? coll_exec_costs(&x, topo)
                                : mode == 2 ? coll_exec_round_costs(&x, topo, 1024, &at)
                                            : NULL;
        x.costs = costs;
        x.cost_at = at;
        rig tr = {.topo = topo};
        CHECK_INT_EQ(run_exec(&tr, q, net, &x, 0, &flows, &seen), 9245760);
        CHECK_NEAR(coll_estimate(&t, &x, &s), 9.24576e-6, 0, 1e-12);
        hw_net_destroy(net);
        sim_eventq_destroy(q);
        sim_free(costs);
        sim_free(at);
    }
    /* A one-round ring (ring_shift) is no pipeline: each transfer pays its own route */
    SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_RING_SHIFT, &g, 4096, 0, 1) == 0, "build");
    CHECK_INT_EQ(s.dataflow, 0);
    coll_schedule_clear(&s);
    hw_topo_destroy(topo);
    sim_free(spec);
}

/* Chunked schedules (coll_schedule.chunked): after the first piece of a stream over a member
 * pair, the next pieces follow it through the connection's FIFO of COLL_FIFO_SLOTS = 8
 * slots without paying α again; the 8th, 16th, ... piece after the first of a source stream
 * waits max(0, 2α - 7d) for a slot (coll_exec_queued_delay). */
static void test_chunked(void)
{
    rig *r = sim_calloc(1, sizeof *r);
    rig_init(r, 8, false);
    /* Chain broadcast from GPU 0 over the 8 GPUs (7 hops), C = 8 chunks: 7 + 8 - 1 = 14
     * rounds; in round t hop k carries chunk t - k, its first piece when t = k. Every
     * transfer crosses the NVSwitch on its own ports (α = 1 us, 100 GB/s). With 8 pieces no
     * piece waits for a slot (pieces 1-7 fill the 7 slots the first left free).
     * - Chunks of 65,536 B (S = 524,288 B): d = 655.36 ns. Rounds 0-6 each hold a hop's
     *   first piece, α + d = 1.65536 us; rounds 7-13 only queued ones, d: 7 x 1.65536 + 7 x
     *   0.65536 = 16.17504 us, where rounds that each paid α took 14 x 1.65536 = 23.17504 us.
     * - Chunks of 1,024 B (S = 8,192 B): d = 10.24 ns: 7 x 1,010.24 + 7 x 10.24 = 7,143.36 ns.
     * The three ways of costing and the selector's estimate agree. */
    const double bytes[2] = {524288, 8192};
    const sim_time want[2] = {16175040, 7143360};
    for (int k = 0; k < 2; k++) {
        coll_schedule s;
        coll_schedule_init(&s);
        SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_BROADCAST, &r->g, bytes[k], 0, 8) == 0,
                   "build");
        CHECK(s.chunked);
        CHECK_INT_EQ(s.n_rounds, 14);
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            /* (two runs back to back) */
            CHECK_INT_EQ(run_costed(r, &s, mode, &closed, &evolved), 2 * want[k]);
        }
        coll_exec x = {.sched = &s, .gpu = r->gpu, .switch_dev = -1, .proto = HW_PROTO_SIMPLE,
                       .protocols = &r->spec.protocols};
        CHECK_NEAR(coll_estimate(&r->t, &x, &s), sim_time_to_s(want[k]), 0, 1e-15);
        /* compacted (as the replay stores it), the same */
        coll_schedule_compact(&s);
        uint64_t closed, evolved;
        CHECK_INT_EQ(run_costed(r, &s, 1, &closed, &evolved), 2 * want[k]);
        coll_schedule_clear(&s);
    }
    /* NCCL cuts a message into slices of a fixed size, the last the remainder, and the 8th
     * piece after a source stream's first waits for the first one's slot:
     * - 4,096 B more than 8 chunks of 65,536 B (chunks = 528,384 / 65,536 = 8.0625) are 9
     *   pieces, not 9 equal ones: 7 + 9 - 1 = 15 rounds, rounds 0-6 as above (1.65536 us
     *   each), rounds 7-13 a full queued piece (0.65536 us) and round 14 the small one alone
     *   (40.96 ns; a partial piece is not taken to wait for a slot): 7 x 1,655.36 + 7 x
     *   655.36 + 40.96 = 16,216.00 ns, more than the 8 pieces' 16,175.04 (9 equal pieces of
     *   58,709 B would take 15,806 ns: less for more bytes).
     * - 9 chunks of 1,024 B: rounds 0-6 first pieces (1,010.24 ns), round 7 queued ones
     *   (10.24), round 8 hop 0's piece 8, which waits 2,000 - 7 x 10.24 = 1,928.32 ns for a
     *   slot (1,938.56 with its d); the other hops' piece 8 arrive spaced by that wait and
     *   wait no more: rounds 9-14 10.24 ns. 7,071.68 + 10.24 + 1,938.56 + 61.44 = 9,081.92 ns,
     *   the pipeline's 7 (α + d) + 8 d + (2α - 7d). */
    const double more[2] = {528384, 9216}, more_chunks[2] = {8.0625, 9};
    const sim_time more_want[2] = {16216000, 9081920};
    for (int k = 0; k < 2; k++) {
        coll_schedule s;
        coll_schedule_init(&s);
        SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_BROADCAST, &r->g, more[k], 0,
                              more_chunks[k]) == 0,
                   "build");
        CHECK_INT_EQ(s.n_rounds, 15);
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(r, &s, mode, &closed, &evolved), 2 * more_want[k]);
        }
        coll_exec x = {.sched = &s, .gpu = r->gpu, .switch_dev = -1, .proto = HW_PROTO_SIMPLE,
                       .protocols = &r->spec.protocols};
        CHECK_NEAR(coll_estimate(&r->t, &x, &s), sim_time_to_s(more_want[k]), 0, 1e-15);
        coll_schedule_compact(&s);
        uint64_t closed, evolved;
        CHECK_INT_EQ(run_costed(r, &s, 1, &closed, &evolved), 2 * more_want[k]);
        coll_schedule_clear(&s);
    }
    hw_topo_destroy(r->topo);
    /* First pieces are per stream, not per member pair. The tree all_reduce on 2 nodes of 2
     * members runs NCCL's two channels, each with its two trees (tree.c): channel k chains
     * each node's members from local k (the head, local k, is joined to the other node's
     * head), so local 1 -> local 0 of node 0 is channel 0's chain edge up (both trees:
     * chunk c in round c, c = 0..C-1) and channel 1's down (its head, local 1, sends chunk c
     * in round 2 + c in tree A, rooted at node 0, and in round 3 + c in tree B, rooted at
     * node 1). The pair's merged transfer carries a first piece in rounds 0, 2 and 3, though
     * it is busy from round 0 on; over all pairs, rounds 0-3 hold first pieces (up from the
     * chains, up across, down from the roots, down the far chains) and rounds 4 to C + 2
     * none. */
    int32_t node[4] = {0, 0, 1, 1};
    coll_group g = {.n = 4, .node = node};
    coll_schedule s;
    coll_schedule_init(&s);
    const int C = 6;
    SIM_ASSERT(coll_build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, 6e6, 0, C) == 0, "build");
    CHECK_INT_EQ(s.n_rounds, C + 3);
    for (int rr = 0; rr < s.n_rounds; rr++) {
        bool pair = false, pair_front = false, any_front = false;
        for (size_t i = coll_round_first(&s, rr); i < coll_round_end(&s, rr); i++) {
            any_front |= s.front[i] == COLL_PIECE_FIRST;
            if (s.xfers[i].src == 1 && s.xfers[i].dst == 0) {
                pair = true;
                pair_front = s.front[i] == COLL_PIECE_FIRST;
            }
        }
        CHECK(pair); /* every round: up from round 0, tree B down to round C + 2 */
        CHECK(pair_front == (rr == 0 || rr == 2 || rr == 3));
        CHECK(any_front == (rr <= 3));
    }
    coll_schedule_clear(&s);
    sim_free(r);
}

int main(void)
{
    rig *r = sim_calloc(1, sizeof *r);
    const sim_time us = SIM_PS_PER_US, ms = SIM_PS_PER_MS;
    test_dataflow();
    test_chunked();

    /* Steps move in slices of the protocol's chunk (Simple: 512 KiB = 524,288 B), so from the
     * second round on a transfer waits only for the part of α the rest of its step, beyond
     * one slice, does not cover (coll_exec_piped_delay). Here steps are 100 MB: the rest
     * takes ~995 us on 100 GB/s, α = 1 us hides, and only the first round pays it.
     * Ring all_reduce, n = 8, S = 800 MB: 2(n-1) = 14 rounds of S/n = 100 MB at 100 GB/s
     * (1 ms): 2(n-1)/n · S/B + α = 14 ms + 1 us. */
    rig_init(r, 8, false);
    CHECK_INT_EQ(run(r, COLL_ALGO_RING, COLL_ALL_REDUCE, 800e6, 1), 14 * ms + 1 * us);
    /* Ring all_gather, S = 800 MB (the gathered output): 7 rounds of 100 MB:
     * (n-1)/n · S/B + α = 7 ms + 1 us. */
    CHECK_INT_EQ(run(r, COLL_ALGO_RING, COLL_ALL_GATHER, 800e6, 1), 7 * ms + 1 * us);
    /* Steps of exactly one slice hide nothing: ring all_gather of S = 8 x 524,288 B, 7 rounds
     * of 524,288 B (5.24288 us at 100 GB/s) + α each: 7 x 6.24288 us = 43.70016 us. */
    CHECK_INT_EQ(run(r, COLL_ALGO_RING, COLL_ALL_GATHER, 8 * 524288.0, 1), 43700160);
    /* Steps 50,000 B longer than a slice cover 0.5 us of α, so rounds 2-7 wait 0.5 us:
     * m = 574,288 B (5.74288 us): α + 7 x 5.74288 us + 6 x 0.5 us = 44.20016 us. */
    CHECK_INT_EQ(run(r, COLL_ALGO_RING, COLL_ALL_GATHER, 8 * 574288.0, 1), 44200160);
    /* Halving-doubling all_reduce: exchanges of S/2, S/4, S/8 then back: 2 x 700 MB at
     * 100 GB/s = 14 ms, plus α for the first of its 2·log2(8) = 6 rounds. */
    CHECK_INT_EQ(run(r, COLL_ALGO_HD, COLL_ALL_REDUCE, 800e6, 1), 14 * ms + 1 * us);
    /* Direct all_to_all: one round; each GPU sends 7 x 100 MB at once through its 100 GB/s
     * port: (n-1)/n · S/B + α = 7 ms + 1 us. Pairwise: 7 rounds of 100 MB, the same. */
    CHECK_INT_EQ(run(r, COLL_ALGO_DIRECT, COLL_ALL_TO_ALL, 800e6, 1), 7 * ms + 1 * us);
    CHECK_INT_EQ(run(r, COLL_ALGO_PAIRWISE, COLL_ALL_TO_ALL, 800e6, 1), 7 * ms + 1 * us);
    /* Transfer costs cached per distinct round (coll_exec_round_costs) time a schedule as
     * the per-transfer costs and the costs computed as each round starts do, to the
     * picosecond. Direct all_to_all over 4 GPUs, S = 400 MB: each GPU's 3 transfers of
     * 100 MB share its 100 GB/s port (a closed round): α + 3 ms a run, two runs back to back
     * end at 2 x 3.001 ms. With a key (round costs) the second run is timed from the first's
     * record: 2 closed rounds, 1 evolution; unkeyed, the net compares the transfers and finds
     * the same record. */
    {
        coll_group g4 = {.n = 4, .node = r->node};
        coll_schedule s;
        coll_schedule_init(&s);
        SIM_ASSERT(coll_build(&s, COLL_ALGO_DIRECT, COLL_ALL_TO_ALL, &g4, 400e6, 0, 1) == 0,
                   "build");
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(r, &s, mode, &closed, &evolved), 2 * (3 * ms + 1 * us));
            CHECK_INT_EQ(closed, 2);
            CHECK_INT_EQ(evolved, 1);
        }
        /* rounds that repeat, around an empty one: 0 -> 1 (100 MB), nothing, 1 -> 2 (100 MB)
         * twice. Each is one 1 ms transfer; the first pays α (1 us), the others' steps of
         * 100 MB hide it: 3.001 ms a run, 6.002 ms for two, whichever way costed (the empty
         * round takes no room in the round costs, and the round after it is costed) */
        coll_schedule_reset(&s);
        coll_schedule_round(&s);
        coll_schedule_add(&s, 0, 1, 100e6);
        coll_schedule_round(&s);
        coll_schedule_round(&s);
        coll_schedule_add(&s, 1, 2, 100e6);
        coll_schedule_round(&s);
        coll_schedule_add(&s, 1, 2, 100e6);
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(r, &s, mode, &closed, &evolved), 6 * ms + 2 * us);
            CHECK_INT_EQ(closed, 0); /* one transfer a round: isolated */
        }
        /* compacted: the last round shares the one before it (2 transfers stored of 3; the
         * empty round stays empty), the same 6.002 ms whichever way costed */
        coll_schedule_compact(&s);
        CHECK_INT_EQ((int)s.n_xfers, 2);
        CHECK_INT_EQ((int)coll_schedule_xfer_count(&s), 3);
        CHECK_INT_EQ((int)(coll_round_end(&s, 1) - coll_round_first(&s, 1)), 0);
        CHECK_INT_EQ((int)coll_round_first(&s, 3), (int)coll_round_first(&s, 2));
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(r, &s, mode, &closed, &evolved), 6 * ms + 2 * us);
        }
        coll_schedule_clear(&s);
        /* A keyed round of 64 transfers or more is timed from a record even when isolated:
         * ring all_gather over 64 GPUs of one NVSwitch node, S = 6.4 GB, 63 rounds of 100 MB
         * (1 ms each, α in the first only): 63.001 ms a run, 126.002 ms for two. Keyed (round
         * costs), its 63 x 2 rounds are closed ones from two records (the first round, which
         * pays α, and the rest); with per-transfer costs each round has its own key, so 63
         * records (the second run reuses them); costed as it runs, isolated rounds */
        rig *big = sim_calloc(1, sizeof *big);
        rig_init(big, 64, false);
        coll_group g64 = {.n = 64, .node = big->node};
        coll_schedule_init(&s);
        SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g64, 6.4e9, 0, 1) == 0,
                   "build");
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(big, &s, mode, &closed, &evolved), 2 * (63 * ms + 1 * us));
            CHECK_INT_EQ(closed, mode == 0 ? 0 : 126);
            CHECK_INT_EQ(evolved, mode == 0 ? 0 : mode == 1 ? 63 : 2);
        }
        /* Compacted (coll_schedule_compact, as the replay stores schedules): the ring's 63
         * rounds of the same 64 transfers (member i to i + 1) keep one copy, 64 transfers
         * instead of 63 x 64 = 4,032; the rounds read the same, each member sends the same
         * 63 x 100 MB = 6.3 GB, and every way of costing times it as before: 126.002 ms. Per
         * transfer costs now give the repeated rounds one key, as round costs do, so 2
         * evolutions instead of 63 */
        double sent_before = coll_schedule_bytes_sent(&s, 5);
        CHECK_NEAR(sent_before, 6.3e9, 0, 1e-6);
        coll_schedule_compact(&s);
        CHECK_INT_EQ((int)s.n_xfers, 64);
        CHECK_INT_EQ((int)coll_schedule_xfer_count(&s), 63 * 64);
        CHECK(coll_schedule_bytes_sent(&s, 5) == sent_before);
        for (int rr = 1; rr < s.n_rounds; rr++)
            CHECK(coll_schedule_round_repeats(&s, rr));
        for (int mode = 0; mode < 3; mode++) {
            uint64_t closed, evolved;
            CHECK_INT_EQ(run_costed(big, &s, mode, &closed, &evolved), 2 * (63 * ms + 1 * us));
            CHECK_INT_EQ(closed, mode == 0 ? 0 : 126);
            CHECK_INT_EQ(evolved, mode == 0 ? 0 : 2);
        }
        coll_schedule_clear(&s);
        hw_topo_destroy(big->topo);
        sim_free(big);
    }
    /* Joint estimates (symmetry's collectives that start together). Ring all_gather over 4
     * GPUs, S = 400 MB: 3 rounds of 100 MB on each GPU's switch port at 100 GB/s, 1 ms each,
     * α (1 us) in the first only: 3.001 ms alone. Two such rings on GPUs {0..3} and {4..7}
     * share no port: together still 3.001 ms. Two on the same GPUs put 200 MB per round on
     * every port: 3 x 2 ms + α = 6.001 ms. */
    {
        coll_group g4 = {.n = 4, .node = r->node};
        int32_t lo[4] = {0, 1, 2, 3}, hi[4] = {4, 5, 6, 7};
        coll_schedule s;
        coll_schedule_init(&s);
        SIM_ASSERT(coll_build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g4, 400e6, 0, 1) == 0, "build");
        coll_target t[2] = {r->t, r->t};
        t[0].group = t[1].group = &g4;
        t[0].gpu = lo;
        t[1].gpu = hi;
        coll_exec x[2];
        for (int i = 0; i < 2; i++)
            x[i] = (coll_exec){.sched = &s, .gpu = t[i].gpu, .switch_dev = -1,
                               .proto = HW_PROTO_SIMPLE, .protocols = &r->spec.protocols};
        const coll_schedule *ss[2] = {&s, &s};
        CHECK_NEAR(coll_estimate(&t[0], &x[0], &s), 3.001e-3, 1e-12, 0);
        CHECK_NEAR(coll_estimate_joint(1, t, x, ss), 3.001e-3, 1e-12, 0);
        CHECK_NEAR(coll_estimate_joint(2, t, x, ss), 3.001e-3, 1e-12, 0);
        t[1].gpu = x[1].gpu = lo;
        CHECK_NEAR(coll_estimate_joint(2, t, x, ss), 6.001e-3, 1e-12, 0);
        coll_schedule_clear(&s);
    }
    /* Tree latency grows with log2(n) when each GPU is a node of its own (node unknown: the
     * member-level double binary tree, NCCL's tree with one GPU per node): a 64-byte
     * all_reduce takes 2·ceil(log2 n) rounds of α at one chunk: 4 us on 4 GPUs, 6 us on 8,
     * plus a few ns of bandwidth (each round moves at most 64 B into a port: 0.64 ns at
     * 100 GB/s). */
    r->g.node = NULL;
    sim_time t8 = run(r, COLL_ALGO_TREE, COLL_ALL_REDUCE, 64, 1);
    CHECK_NEAR(t8, 6 * us, 0, 6 * 640);
    /* On one node NCCL's tree is a chain: 2(n-1) = 14 rounds of α on 8 GPUs, each moving
     * both trees' 32 B over one chain edge (64 B: 0.64 ns): 14 us + 14 x 0.64 ns. */
    r->g.node = r->node;
    CHECK_INT_EQ(run(r, COLL_ALGO_TREE, COLL_ALL_REDUCE, 64, 1), 14 * us + 14 * 640);
    hw_topo_destroy(r->topo);
    rig_init(r, 4, false);
    r->g.node = NULL;
    sim_time t4 = run(r, COLL_ALGO_TREE, COLL_ALL_REDUCE, 64, 1);
    CHECK_NEAR(t4, 4 * us, 0, 4 * 640);
    CHECK(t8 > t4);
    hw_topo_destroy(r->topo);

    /* NVLS, n = 8, S = 800 MB, C chunks: each GPU moves S(1 + 1/n) = 900 MB each way, fully
     * overlapped except the pipeline's first and last rounds: (2 + (C-1)(1 + 1/n)) · S/(C·B)
     * + α, where α is one hop GPU-switch, 0.5 us, paid by the first of the C+1 rounds only
     * (the chunks, 100 MB, are far larger than a slice). C = 8: (2 + 7.875) x 1 ms + 0.5 us
     * = 9.875 ms + 0.5 us. */
    rig_init(r, 8, true);
    CHECK(r->g.nvls);
    CHECK_NEAR(run(r, COLL_ALGO_NVLS, COLL_ALL_REDUCE, 800e6, 8), 9875 * us + 500 * 1000, 0, 8);

    /* auto with the default protocols: 1 GB is bandwidth-bound and NVLS (S(1 + 1/n) per
     * direction against the ring's 2(n-1)/n · S) wins on a SHARP switch. */
    hw_protocols_defaults(&r->spec.protocols);
    coll_choice ch;
    CHECK_INT_EQ(coll_select(&r->t, COLL_ALL_REDUCE, 1e9, 0, -1, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.algo, COLL_ALGO_NVLS);
    /* without SHARP, 1 GB goes ring or halving-doubling under Simple */
    CHECK_INT_EQ(coll_select(&r->t, COLL_ALL_REDUCE, 1e9, 0, COLL_ALGO_RING, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.proto, HW_PROTO_SIMPLE);
    /* a fixed algorithm that cannot do the operation is refused */
    CHECK_INT_EQ(coll_select(&r->t, COLL_ALL_GATHER, 1e9, 0, COLL_ALGO_NVLS, -1, &ch, NULL),
                 SIM_ENOTSUP);
    hw_topo_destroy(r->topo);

    /* Without SHARP, a 64-byte all_reduce is latency-bound: LL, whose rounds cost 0.5 us of
     * protocol step against LL128's 1.5 and Simple's 3 us and whose launch costs 4 us against
     * 6 and 8 us, wins. auto chooses among NCCL's algorithms only: on one node NCCL's tree is
     * a chain of 2(n-1) = 14 rounds, as many as the ring's, each moving both trees' 32 B over
     * one edge (64 B into a port) where a ring round moves S/n = 8 B into each: the ring,
     * by a few picoseconds of bandwidth. Its estimate: the 4 us launch, 14 rounds of 1.5 us
     * (1 us route, 0.5 us LL step) and of 8 B at LL's 1/4 efficiency, 32 B at 100 GB/s =
     * 0.32 ns: 25.00448 us. Halving-doubling (2·log2(8) = 6 rounds of 32, 16, 8, 8, 16, 32 B,
     * 448 B of wire: 4 + 6 x 1.5 us + 4.48 ns = 13.00448 us) is faster, but NCCL has none:
     * it is chosen only when fixed. */
    rig_init(r, 8, false);
    hw_protocols_defaults(&r->spec.protocols);
    CHECK_INT_EQ(coll_select(&r->t, COLL_ALL_REDUCE, 64, 0, -1, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.proto, HW_PROTO_LL);
    CHECK_INT_EQ(ch.algo, COLL_ALGO_RING);
    CHECK_NEAR(ch.est_s, 25.00448e-6, 0, 1e-15);
    CHECK_INT_EQ(coll_select(&r->t, COLL_ALL_REDUCE, 64, 0, COLL_ALGO_HD, -1, &ch, NULL), 0);
    CHECK_INT_EQ(ch.algo, COLL_ALGO_HD);
    CHECK_INT_EQ(ch.proto, HW_PROTO_LL);
    CHECK_NEAR(ch.est_s, 13.00448e-6, 0, 1e-15);
    hw_topo_destroy(r->topo);
    sim_free(r);
    test_nccl_rules();
    test_staging();
    return test_finish();
}
