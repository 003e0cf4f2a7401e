/* Scenario loader (sim/input/load.h): a full load of the data files in test/input/data/load, and
 * each error with its exact FILE:LINE:COL and return code, including --set overrides.
 *
 * The test runs in test/input/data/load (meson workdir). Error cases write small YAML files into
 * a private temporary directory (a "kit": topo.yaml, gpus/tg.yaml, model.yaml) and run there,
 * so that file names in messages are short and relative. */
#include "core/sim.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/load.h"
#include "test.h"

static char data_dir[4096];
static char tmp_dir[] = "/tmp/stepsim-test-load-XXXXXX";
static char written[64][128];
static int n_written;

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(name, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    for (int i = 0; i < n_written; i++)
        if (strcmp(written[i], name) == 0)
            return;
    if (n_written < 64)
        snprintf(written[n_written++], sizeof written[0], "%s", name);
}

/* The kit: an 8-GPU node of GPU "tg" (bf16 only) and a small model. */
static void write_kit(void)
{
    mkdir("gpus", 0700);
    write_file("topo.yaml", "name: kit\n"
                            "gpu: tg\n"
                            "node:\n"
                            "  gpus: 8\n"
                            "  intra: {kind: nvswitch, bandwidth: 450 GB/s}\n");
    write_file("gpus/tg.yaml", "name: tg\n"
                               "memory: 80 GiB\n"
                               "memory_bandwidth: 2 TB/s\n"
                               "peak: {bf16: 1000 TFLOP/s}\n");
    write_file("model.yaml", "layers: 2\n"
                             "hidden: 256\n"
                             "heads: 4\n"
                             "ffn: 1024\n"
                             "vocab: 1000\n");
}

/* Lines 1-2 of most error scenarios. */
#define REFS "topology: topo.yaml\nmodel: model.yaml\n"

static int load_sets(const char *text, const char *const *sets, size_t n_sets, plan_scenario *sc,
                     sim_diag *d)
{
    memset(d, 0, sizeof *d);
    write_file("s.yaml", text);
    return input_scenario_load("s.yaml", sets, n_sets, sc, NULL, d);
}

static int load(const char *text, plan_scenario *sc, sim_diag *d)
{
    return load_sets(text, NULL, 0, sc, d);
}

#define CHECK_DIAG(d, file_, line_, col_)     \
    do {                                      \
        CHECK_STR_EQ((d).file, file_);        \
        CHECK_INT_EQ((d).line, line_);        \
        CHECK_INT_EQ((d).col, col_);          \
    } while (0)

static uint64_t fnv1a(const char *path)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    FILE *f = fopen(path, "rb");
    int c;
    while (f && (c = fgetc(f)) != EOF) {
        h ^= (unsigned char)c;
        h *= UINT64_C(0x100000001b3);
    }
    if (f)
        fclose(f);
    return h;
}

/* ---------------------------------------------------------------------------------------- */

static void check_full(const plan_scenario *sc)
{
    CHECK_STR_EQ(sc->name, "full-test");
    const hw_topology_spec *t = &sc->topology;
    CHECK_STR_EQ(t->name, "test-cluster");
    CHECK_INT_EQ(t->nodes, 2);
    CHECK_INT_EQ(t->gpus_per_node, 8);
    CHECK_INT_EQ(t->intra.kind, HW_INTRA_NVSWITCH);
    CHECK_NEAR(t->intra.bw_Bps, 4.5e11, 0, 0);         /* 450 GB/s = 450e9 B/s */
    CHECK_INT_EQ(t->intra.latency_ps, 500000);          /* 500 ns = 5e5 ps */
    CHECK(t->intra.sharp);
    CHECK_INT_EQ(t->pcie.gen, 5);
    CHECK_INT_EQ(t->pcie.lanes, 16);
    CHECK_INT_EQ(t->nics.count, 8);
    CHECK_NEAR(t->nics.bw_Bps, 5e10, 0, 0);             /* 400 Gb/s / 8 = 50 GB/s */
    CHECK_INT_EQ(t->nics.latency_ps, 2000000);          /* default 2 us */
    CHECK_INT_EQ(t->fabric.kind, HW_FABRIC_RAIL_OPTIMIZED);
    CHECK_NEAR(t->fabric.oversubscription, 2, 0, 0);
    CHECK_INT_EQ(t->fabric.latency_ps, 1500000);        /* 1.5 us */

    const hw_gpu_spec *g = &t->gpu;
    CHECK_STR_EQ(g->name, "test-gpu");
    CHECK_INT_EQ(g->memory_bytes, INT64_C(84932978278)); /* 79.1 x 2^30 = 84932978278.4 */
    CHECK_NEAR(g->memory_bw_Bps, 3.35e12, 0, 0);
    CHECK_NEAR(g->peak_flops[HW_DTYPE_BF16], 9.89e14, 0, 0);
    CHECK_NEAR(g->peak_flops[HW_DTYPE_FP8], 1.979e15, 0, 0);
    CHECK_NEAR(g->peak_flops[HW_DTYPE_TF32], 4.94e14, 0, 0);
    CHECK_NEAR(g->peak_flops[HW_DTYPE_FP32], 6.7e13, 0, 0);
    CHECK_INT_EQ(g->matmul_eff.n, 3);
    CHECK_NEAR(g->matmul_eff.x[0], 1e8, 0, 0);          /* 0.1 GFLOP */
    CHECK_NEAR(g->matmul_eff.x[2], 1e12, 0, 0);         /* 1000 GFLOP */
    CHECK_NEAR(g->matmul_eff.y[1], 0.7, 0, 0);
    CHECK_INT_EQ(g->memory_eff.n, 2);
    CHECK_NEAR(g->memory_eff.x[1], 1e8, 0, 0);          /* 100 MB */
    CHECK_INT_EQ(g->memory_eff_eager.n, 2);
    CHECK_NEAR(g->memory_eff_eager.y[1], 0.6, 0, 0);
    CHECK_INT_EQ(g->launch_overhead_ps, 4000000);       /* 4 us */

    const model_spec *m = &sc->model;
    CHECK_STR_EQ(m->name, "test-model");
    CHECK_INT_EQ(m->layers, 4);
    CHECK_INT_EQ(m->heads, 16);
    CHECK_INT_EQ(m->kv_heads, 4);
    CHECK_INT_EQ(m->head_dim, 64); /* default hidden / heads = 1024 / 16 */
    CHECK_INT_EQ(m->ffn, 4096);
    CHECK_INT_EQ(m->vocab, 32000);
    CHECK(m->tied_embeddings);

    const plan_training *tr = &sc->training;
    CHECK_INT_EQ(tr->seq_len, 4096);
    CHECK_INT_EQ(tr->global_batch, 64);
    CHECK_INT_EQ(tr->micro_batch, 2);
    CHECK_INT_EQ(tr->grad_dtype, HW_DTYPE_FP32);
    CHECK_INT_EQ(tr->optimizer_state, PLAN_STATE_BF16);
    CHECK_INT_EQ(tr->recompute, MODEL_RECOMPUTE_SELECTIVE);
    CHECK(!tr->flash_attention);
    CHECK_INT_EQ(tr->finetune.n_targets, 7); /* default: all seven projections */

    const plan_parallel *p = &sc->parallel;
    CHECK_INT_EQ(p->dp, 16);
    CHECK(!p->fsdp.reshard_after_forward);
    CHECK_INT_EQ(p->fsdp.prefetch, 2);
    CHECK(p->fsdp.hybrid_shard);
    CHECK_INT_EQ(p->ddp.bucket_bytes, 52428800); /* 50 MiB = 50 x 2^20 */
    CHECK(!p->ddp.overlap);
    CHECK_INT_EQ(p->pipeline.schedule, PLAN_SCHED_GPIPE);
    CHECK_INT_EQ(p->pipeline.n_stage_layers, 1);
    CHECK_INT_EQ(p->pipeline.stage_layers[0], 4);
    CHECK_INT_EQ(p->order[3], PLAN_GROUP_PP);
    CHECK_INT_EQ(p->order[4], PLAN_GROUP_DP);

    CHECK_INT_EQ(sc->simulation.steps, 3);
    CHECK_INT_EQ(sc->simulation.seed, 42);
    CHECK(!sc->simulation.timeline);
    CHECK_INT_EQ(sc->collectives[PLAN_GROUP_DP], PLAN_COLL_RING);
    CHECK_INT_EQ(sc->collectives[PLAN_GROUP_TP], PLAN_COLL_AUTO);
}

static void test_full_load(void)
{
    plan_scenario sc;
    sim_diag d = {0};
    input_scenario_info *info = NULL;
    int rc = input_scenario_load("scenarios/full.yaml", NULL, 0, &sc, &info, &d);
    CHECK_INT_EQ(rc, 0);
    if (rc) {
        sim_diag_print(&d, stderr);
        return;
    }
    check_full(&sc);

    /* Every file read, in order, named relative to how the scenario was named. */
    CHECK_INT_EQ(info->n_inputs, 4);
    static const char *const files[] = {"scenarios/full.yaml", "topologies/test-cluster.yaml",
                                        "topologies/gpus/test-gpu.yaml",
                                        "workloads/test-model.yaml"};
    for (size_t i = 0; i < 4 && i < info->n_inputs; i++) {
        CHECK_STR_EQ(info->inputs[i].path, files[i]);
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, fnv1a(files[i]));
        CHECK_STR_EQ(info->inputs[i].hash, hex);
    }
    /* The resolved text inlines the references, in file order. */
    CHECK_STR_HAS(info->resolved_yaml, "name: full-test\ntopology:\n  name: test-cluster\n  gpu:\n"
                                       "    name: test-gpu\n    memory: 79.1 GiB\n");
    CHECK_STR_HAS(info->resolved_yaml, "model:\n  name: test-model\n");

    /* Loading the resolved text gives the same scenario and the same text again. */
    char path[4200];
    snprintf(path, sizeof path, "%s/resolved.yaml", tmp_dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(info->resolved_yaml, f);
        fclose(f);
        plan_scenario again;
        input_scenario_info *info2 = NULL;
        memset(&d, 0, sizeof d);
        CHECK_INT_EQ(input_scenario_load(path, NULL, 0, &again, &info2, &d), 0);
        check_full(&again);
        if (info2) {
            CHECK_STR_EQ(info2->resolved_yaml, info->resolved_yaml);
            CHECK_INT_EQ(info2->n_inputs, 1);
        }
        input_scenario_info_destroy(info2);
        remove(path);
    }
    input_scenario_info_destroy(info);
}

static void test_by_name(void)
{
    /* Bare names are looked up as <data dir>/topologies/NAME.yaml and <data dir>/workloads/
     * NAME.yaml; the GPU name next to the topology file first (topologies/gpus/). */
    setenv("STEPSIM_DATA_DIR", ".", 1);
    plan_scenario sc;
    sim_diag d = {0};
    input_scenario_info *info = NULL;
    CHECK_INT_EQ(input_scenario_load("scenarios/by-name.yaml", NULL, 0, &sc, &info, &d), 0);
    if (info) {
        CHECK_STR_EQ(sc.name, "by-name"); /* default: the file's stem */
        CHECK_STR_EQ(sc.topology.gpu.name, "test-gpu");
        CHECK_INT_EQ(sc.model.layers, 4);
        CHECK_INT_EQ(info->n_inputs, 4);
        if (info->n_inputs == 4) {
            CHECK_STR_EQ(info->inputs[1].path, "topologies/test-cluster.yaml");
            CHECK_STR_EQ(info->inputs[2].path, "topologies/gpus/test-gpu.yaml");
            CHECK_STR_EQ(info->inputs[3].path, "workloads/test-model.yaml");
        }
    }
    input_scenario_info_destroy(info);

    /* an unknown name: error at the value, with a suggestion from the catalog folder */
    const char *sets[] = {"model=test-modle"};
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_scenario_load("scenarios/by-name.yaml", sets, 1, &sc, NULL, &d), SIM_ENOENT);
    CHECK_DIAG(d, "--set model=test-modle", 0, 0);
    CHECK_STR_HAS(d.msg, "unknown model 'test-modle': no workloads/test-modle.yaml");
    CHECK_STR_HAS(d.hints, "did you mean 'test-model'?");
    unsetenv("STEPSIM_DATA_DIR");
}


/* ---------------------------------------------------------------------------------------- */
/* Topology: the node template's PCIe tree, host and fabric keys; the explicit form          */

static void test_topology_keys(void)
{
    plan_scenario sc;
    sim_diag d = {0};
    CHECK_INT_EQ(input_scenario_load("scenarios/pcie-tree.yaml", NULL, 0, &sc, NULL, &d), 0);
    const hw_topology_spec *t = &sc.topology;
    CHECK_INT_EQ(t->intra.kind, HW_INTRA_NVLINK);
    CHECK_INT_EQ(t->intra.shape, HW_NVLINK_RING);
    CHECK_INT_EQ(t->intra.latency_ps, 1000000);          /* nvlink default: 1 us */
    CHECK_INT_EQ(t->pcie.gen, 5);
    CHECK_INT_EQ(t->pcie.lanes, 8);
    CHECK_INT_EQ(t->pcie.switches, 2);
    CHECK_INT_EQ(t->pcie.sockets, 2);
    CHECK_INT_EQ(t->pcie.switch_lanes, 32);
    CHECK_INT_EQ(t->pcie.latency_ps, 250000);            /* 250 ns = 2.5e5 ps */
    CHECK_NEAR(t->host.memory_bw_Bps, 3.072e11, 0, 0);   /* 307.2 GB/s */
    CHECK_NEAR(t->host.socket_link_bw_Bps, 6.2e10, 0, 0); /* 62 GB/s */
    CHECK_INT_EQ(t->host.socket_link_latency_ps, 300000); /* 0.3 us = 3e5 ps */
    CHECK_INT_EQ(t->fabric.kind, HW_FABRIC_FAT_TREE);
    CHECK_NEAR(t->fabric.oversubscription, 2, 0, 0);
    CHECK_INT_EQ(t->fabric.radix, 32);
    CHECK_INT_EQ(t->fabric.levels, 3);
    CHECK_INT_EQ(t->n_devices, 0); /* parametric form */
}

static void check_explicit(const plan_scenario *sc)
{
    const hw_topology_spec *t = &sc->topology;
    CHECK_STR_EQ(t->name, "test-explicit");
    CHECK_INT_EQ(t->n_devices, 12);
    CHECK_INT_EQ(t->n_links, 13);
    if (t->n_devices != 12 || t->n_links != 13)
        return;
    /* devices in list order, with kinds and defaults (node 0, p2p true) */
    static const hw_dev_kind kinds[12] = {
        HW_DEV_CPU, HW_DEV_HOST_MEMORY, HW_DEV_NVSWITCH, HW_DEV_GPU, HW_DEV_GPU,
        HW_DEV_PCIE_SWITCH, HW_DEV_NIC, HW_DEV_SWITCH, HW_DEV_CPU, HW_DEV_GPU, HW_DEV_NIC,
        HW_DEV_SWITCH};
    for (int i = 0; i < 12; i++)
        CHECK_INT_EQ(t->devices[i].kind, kinds[i]);
    CHECK_STR_EQ(t->devices[3].name, "gpu0");
    CHECK_NEAR(t->devices[1].bw_Bps, 1e11, 0, 0); /* mem0: 100 GB/s */
    CHECK(t->devices[3].p2p);                     /* default true */
    CHECK(!t->devices[4].p2p);
    CHECK_INT_EQ(t->devices[3].node, 0);          /* default 0 */
    CHECK_INT_EQ(t->devices[9].node, 1);
    /* three GPUs: gpu0, gpu1 on node 0 and gpu2 on node 1, so nodes = 1 + 1 = 2 and the
     * fullest node has 2 */
    CHECK_INT_EQ(t->nodes, 2);
    CHECK_INT_EQ(t->gpus_per_node, 2);

    const hw_link_spec *l = t->links;
    /* 0: between [gpu0, nvs] = devices 3 and 2, both directions; an nvswitch end makes it
     * nvlink, whose default latency is 0.5 us */
    CHECK_INT_EQ(l[0].src, 3);
    CHECK_INT_EQ(l[0].dst, 2);
    CHECK(l[0].bidirectional);
    CHECK_INT_EQ(l[0].cls, HW_LINK_NVLINK);
    CHECK_INT_EQ(l[0].latency_ps, 500000);
    CHECK_NEAR(l[0].bw_Bps, 4.5e11, 0, 0);
    CHECK_INT_EQ(l[1].latency_ps, 1000000);       /* given: 1 us */
    /* 2: from cpu0 (0) to mem0 (1), one direction; cpu-host_memory is class cpu, 0.2 us */
    CHECK_INT_EQ(l[2].src, 0);
    CHECK_INT_EQ(l[2].dst, 1);
    CHECK(!l[2].bidirectional);
    CHECK_INT_EQ(l[2].cls, HW_LINK_CPU);
    CHECK_INT_EQ(l[2].latency_ps, 200000);
    CHECK_INT_EQ(l[3].src, 1);                    /* the way back: mem0 -> cpu0 */
    CHECK_INT_EQ(l[3].dst, 0);
    /* 4: gpu-pcie_switch is none of the special pairs: pcie, 0.5 us */
    CHECK_INT_EQ(l[4].cls, HW_LINK_PCIE);
    CHECK_INT_EQ(l[4].latency_ps, 500000);
    CHECK_INT_EQ(l[5].cls, HW_LINK_PCIE);         /* pcie_switch-cpu */
    /* 6: nic-switch is ib, 1 us; 400 Gb/s = 5e10 B/s */
    CHECK_INT_EQ(l[6].cls, HW_LINK_IB);
    CHECK_INT_EQ(l[6].latency_ps, 1000000);
    CHECK_NEAR(l[6].bw_Bps, 5e10, 0, 0);
    CHECK_INT_EQ(l[7].cls, HW_LINK_IB);           /* switch-switch */
    /* 8: class given: ethernet, whose default latency is 2 us */
    CHECK_INT_EQ(l[8].cls, HW_LINK_ETHERNET);
    CHECK_INT_EQ(l[8].latency_ps, 2000000);
    CHECK_INT_EQ(l[9].cls, HW_LINK_CPU);          /* cpu-cpu */
    CHECK_INT_EQ(l[10].cls, HW_LINK_PCIE);        /* gpu-cpu */
    CHECK_INT_EQ(l[11].cls, HW_LINK_NVLINK);      /* gpu-gpu */
    CHECK_INT_EQ(l[11].src, 9);                   /* gpu2 */
    CHECK_INT_EQ(l[11].dst, 4);                   /* gpu1 */
    CHECK_INT_EQ(l[12].cls, HW_LINK_PCIE);        /* nic-pcie_switch */

    /* the parametric fields keep their defaults */
    CHECK_INT_EQ(t->fabric.kind, HW_FABRIC_NONE);
    CHECK_INT_EQ(t->nics.count, 0);
    CHECK_INT_EQ(t->pcie.sockets, 1);
    CHECK_INT_EQ(sc->parallel.dp, 3);
}

static void test_explicit_load(void)
{
    plan_scenario sc;
    sim_diag d = {0};
    input_scenario_info *info = NULL;
    int rc = input_scenario_load("scenarios/explicit.yaml", NULL, 0, &sc, &info, &d);
    CHECK_INT_EQ(rc, 0);
    if (rc) {
        sim_diag_print(&d, stderr);
        return;
    }
    check_explicit(&sc);

    /* the resolved text loads again to the same topology */
    char path[4200];
    snprintf(path, sizeof path, "%s/resolved-explicit.yaml", tmp_dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(info->resolved_yaml, f);
        fclose(f);
        plan_scenario again;
        memset(&d, 0, sizeof d);
        CHECK_INT_EQ(input_scenario_load(path, NULL, 0, &again, NULL, &d), 0);
        check_explicit(&again);
        remove(path);
    }
    input_scenario_info_destroy(info);

    /* the layout check counts the GPUs listed (3), not nodes x gpus_per_node (2 x 2 = 4),
     * and reports at the override that set dp */
    const char *sets[] = {"parallel.dp=4"};
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_scenario_load("scenarios/explicit.yaml", sets, 1, &sc, NULL, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dp=4", 0, 0);
    CHECK_STR_HAS(d.msg, "needs 4 GPUs but topology 'test-explicit' has 3 (listed in "
                         "topology.devices)");
}

/* ---------------------------------------------------------------------------------------- */

static void test_file_errors(void)
{
    plan_scenario sc;
    sim_diag d;

    /* the scenario itself is missing: no position */
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_scenario_load("absent.yaml", NULL, 0, &sc, NULL, &d), SIM_ENOENT);
    CHECK_DIAG(d, "absent.yaml", 0, 0);
    CHECK_STR_EQ(d.msg, "cannot open 'absent.yaml': No such file or directory");

    /* a missing referenced file: at the referencing value, "nope.yaml" at 1:11 */
    CHECK_INT_EQ(load("topology: nope.yaml\nmodel: model.yaml\n", &sc, &d), SIM_ENOENT);
    CHECK_DIAG(d, "s.yaml", 1, 11);
    CHECK_STR_EQ(d.msg, "cannot open 'nope.yaml': No such file or directory");

    /* an unknown GPU catalog name in the topology file: "gpu: tgg" at 1:6 of that file */
    write_file("topo-gpu.yaml", "gpu: tgg\nnode: {gpus: 1}\n");
    CHECK_INT_EQ(load("topology: topo-gpu.yaml\nmodel: model.yaml\n", &sc, &d), SIM_ENOENT);
    CHECK_DIAG(d, "topo-gpu.yaml", 1, 6);
    CHECK_STR_HAS(d.msg, "unknown GPU 'tgg'");
    CHECK_STR_HAS(d.hints, "did you mean 'tg'?");

    /* a YAML error inside a referenced file is reported in that file */
    write_file("topo-dup.yaml", "gpu: tg\nnode: {gpus: 1}\ngpu: tg\n");
    CHECK_INT_EQ(load("topology: topo-dup.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-dup.yaml", 3, 1);
    CHECK_STR_EQ(d.msg, "duplicate key 'gpu' (first at 1:1)");

    /* empty scenario */
    CHECK_INT_EQ(load("", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 1, 1);
    CHECK_STR_EQ(d.msg, "empty document");

    /* duplicate key: the second dp at 5:3 */
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: 1\n  dp: 2\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 5, 3);
    CHECK_STR_EQ(d.msg, "duplicate key 'dp' (first at 4:3)");

    /* a referenced file that is not a mapping */
    write_file("list.yaml", "- 1\n- 2\n");
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel: list.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "list.yaml", 1, 1);
    CHECK_STR_HAS(d.msg, "a model file must be a mapping");
}

static void test_schema_errors(void)
{
    plan_scenario sc;
    sim_diag d;

    /* the kit loads */
    CHECK_INT_EQ(load(REFS, &sc, &d), 0);
    CHECK_STR_EQ(sc.name, "s");
    CHECK_STR_EQ(sc.topology.name, "kit");
    CHECK_INT_EQ(sc.topology.intra.latency_ps, 1000000); /* nvswitch default: 1 us */

    /* unknown key at 3:1 with did-you-mean and the valid keys */
    CHECK_INT_EQ(load(REFS "trainig:\n  seq_len: 8\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 3, 1);
    CHECK_STR_EQ(d.msg, "unknown key 'trainig' in the scenario; did you mean 'training'?");
    CHECK_STR_EQ(d.hints, "valid keys here: name, topology, model, training, parallel, "
                          "simulation, collectives");

    /* nested unknown key at 4:3 */
    CHECK_INT_EQ(load(REFS "parallel:\n  dpp: 2\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 3);
    CHECK_STR_EQ(d.msg, "unknown key 'dpp' in 'parallel'; did you mean 'dp'?");

    /* unknown key inside the topology file: "  intra: {kind: nvswitch, bandwith: ..." puts
     * 'bandwith' at column 27 of line 4 */
    write_file("topo-typo.yaml", "gpu: tg\nnode:\n  gpus: 8\n"
                                 "  intra: {kind: nvswitch, bandwith: 450 GB/s}\n");
    CHECK_INT_EQ(load("topology: topo-typo.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-typo.yaml", 4, 27);
    CHECK_STR_EQ(d.msg, "unknown key 'bandwith' in 'topology.node.intra'; did you mean "
                        "'bandwidth'?");

    /* wrong types: "  dp: \"2\"" puts the value at 4:7 */
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: \"2\"\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 7);
    CHECK_STR_EQ(d.msg, "parallel.dp: expected an integer, got the string \"2\"");
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: 2.5\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 7);
    CHECK_STR_EQ(d.msg, "parallel.dp: expected an integer, got '2.5'");
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: 0x10\n", &sc, &d), SIM_EINVAL);
    CHECK_STR_HAS(d.hints, "decimal");
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: [2]\n", &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "parallel.dp: expected an integer, got a list");
    /* "  flash_attention: yes": the value at column 20 */
    CHECK_INT_EQ(load(REFS "training:\n  flash_attention: yes\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 20);
    CHECK_STR_EQ(d.msg, "training.flash_attention: expected true or false, got 'yes'");
    CHECK_STR_HAS(d.hints, "YAML 1.1");
    /* "  precision: bf61": column 14, a transposition of bf16 */
    CHECK_INT_EQ(load(REFS "training:\n  precision: bf61\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 14);
    CHECK_STR_EQ(d.msg, "training.precision: unknown value 'bf61'; did you mean 'bf16'?");
    CHECK_STR_EQ(d.hints, "one of: bf16, fp16, fp8");
    CHECK_INT_EQ(load(REFS "training: 3\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 3, 11);
    CHECK_STR_EQ(d.msg, "training: expected a mapping, got a scalar '3'");
    /* null where a value is required: "  layers: ~" at 3:11 */
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel:\n  layers: ~\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 3, 11);
    CHECK_STR_EQ(d.msg, "model.layers: a value is required here (got null)");
    /* null for an optional key keeps the default */
    CHECK_INT_EQ(load(REFS "training:\n  seq_len: ~\n", &sc, &d), 0);
    CHECK_INT_EQ(sc.training.seq_len, 2048);

    /* missing unit in the topology file: "  intra: {kind: nvlink, bandwidth: 450}" puts 450 at
     * column 36 of line 4 */
    write_file("topo-unit.yaml", "gpu: tg\nnode:\n  gpus: 2\n"
                                 "  intra: {kind: nvlink, bandwidth: 450}\n");
    CHECK_INT_EQ(load("topology: topo-unit.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-unit.yaml", 4, 36);
    CHECK_STR_EQ(d.msg, "topology.node.intra.bandwidth: missing unit in '450': a bandwidth "
                        "needs a unit");
    CHECK_STR_EQ(d.hints, "write \"450 GB/s\"");

    /* wrong unit kind: "  ddp: {bucket: 25 MB/s}" puts the value at 4:17 */
    CHECK_INT_EQ(load(REFS "parallel:\n  ddp: {bucket: 25 MB/s}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 17);
    CHECK_STR_EQ(d.msg, "parallel.ddp.bucket: '25 MB/s' is a bandwidth, but a size is "
                        "expected here");

    /* negative size at 4:17 */
    CHECK_INT_EQ(load(REFS "parallel:\n  ddp: {bucket: -25 MiB}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 17);
    CHECK_STR_EQ(d.msg, "parallel.ddp.bucket: must be positive (got -25 MiB)");
    /* a negative latency: "must not be negative"; "  intra: {kind: nvswitch, bandwidth: 1 GB/s,
     * latency: -1 us}" puts the value at column 55 */
    write_file("topo-neg.yaml", "gpu: tg\nnode:\n  gpus: 2\n"
                                "  intra: {kind: nvswitch, bandwidth: 1 GB/s, latency: -1 us}\n");
    CHECK_INT_EQ(load("topology: topo-neg.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-neg.yaml", 4, 55);
    CHECK_STR_EQ(d.msg, "topology.node.intra.latency: must not be negative (got -1 us)");

    /* range: "  steps: 0" at 4:10 */
    CHECK_INT_EQ(load(REFS "simulation:\n  steps: 0\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 10);
    CHECK_STR_EQ(d.msg, "simulation.steps: must be at least 1 and at most 1000000 (got 0)");
    CHECK_INT_EQ(load(REFS "simulation:\n  seed: -1\n", &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "simulation.seed: must not be negative (got -1)");

    /* missing required key: at the key naming the mapping, "model:" at 2:1 */
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel:\n  layers: 2\n  hidden: 256\n  heads: 4\n"
                      "  vocab: 1000\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 2, 1);
    CHECK_STR_EQ(d.msg, "missing required key 'ffn' in 'model'");
    /* ... in the referenced file, at its first key (2:1), when that file lacks the key */
    write_file("topo-nogpu.yaml", "# no gpu\nname: x\nnode: {gpus: 1}\n");
    CHECK_INT_EQ(load("topology: topo-nogpu.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-nogpu.yaml", 2, 1);
    CHECK_STR_EQ(d.msg, "missing required key 'gpu' in 'topology'");
    /* ... and at the root's first key when the scenario lacks 'model' */
    CHECK_INT_EQ(load("topology: topo.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 1, 1);
    CHECK_STR_EQ(d.msg, "missing required key 'model' in the scenario");

    /* order must be a permutation: in "  order: [tp, cp, ep, dp, dp]" the list opens at
     * column 10 and item i starts at 11 + 4 i, so the second 'dp' (item 4) is at column 27 */
    CHECK_INT_EQ(load(REFS "parallel:\n  order: [tp, cp, ep, dp, dp]\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 27);
    CHECK_STR_EQ(d.msg, "parallel.order: 'dp' is listed twice");

    /* efficiency curve x not increasing: "matmul_efficiency: [[10 GFLOP, 0.5], [1 GFLOP, 0.7]]"
     * in the GPU file puts "1 GFLOP" at column 39 */
    write_file("gpus/tc.yaml", "memory: 1 GiB\nmemory_bandwidth: 1 TB/s\npeak: {fp16: 1 TFLOP/s}\n"
                               "matmul_efficiency: [[10 GFLOP, 0.5], [1 GFLOP, 0.7]]\n");
    const char *sets_tc[] = {"topology.gpu=tc", "training.precision=fp16"};
    CHECK_INT_EQ(load_sets(REFS, sets_tc, 2, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "gpus/tc.yaml", 4, 39);
    CHECK_STR_HAS(d.msg, "topology.gpu.matmul_efficiency[1]: sizes must be strictly increasing");
}

static void test_not_supported(void)
{
    plan_scenario sc;
    sim_diag d;

    /* a combination not built yet, at its value: "    hybrid_shard: true" at 7:19 */
    CHECK_INT_EQ(load(REFS "parallel:\n  pp: 2\n  zero: 3\n  fsdp:\n    hybrid_shard: true\n",
                      &sc, &d),
                 SIM_ENOTSUP);
    CHECK_DIAG(d, "s.yaml", 7, 19);
    CHECK_STR_EQ(d.msg, "parallel.fsdp.hybrid_shard: hybrid sharding with pipeline parallelism "
                        "is not supported yet");
    /* FSDP with a pipeline loads */
    CHECK_INT_EQ(load(REFS "parallel:\n  pp: 2\n  zero: 3\n", &sc, &d), 0);
    /* jitter and stragglers load; a rank listed twice is refused at its second mention
     * ("  stragglers: [{ranks: [1, 1]": the second 1 at 4:28), one past the 8 ranks of dp 8
     * at the rank ("[{ranks: [8]": 4:25) */
    CHECK_INT_EQ(load(REFS "simulation:\n  jitter: 0.1\n  stragglers: [{ranks: [3, 5], "
                           "slowdown: 1.25}, {ranks: [0], slowdown: 0.5}]\nparallel: {dp: 8}\n",
                      &sc, &d),
                 0);
    CHECK(sc.simulation.jitter == 0.1 && sc.simulation.n_stragglers == 3);
    CHECK(sc.simulation.stragglers[1].rank == 5 && sc.simulation.stragglers[1].slowdown == 1.25);
    CHECK(sc.simulation.stragglers[2].rank == 0 && sc.simulation.stragglers[2].slowdown == 0.5);
    CHECK_INT_EQ(load(REFS "simulation:\n  stragglers: [{ranks: [1, 1], slowdown: 2}]\n", &sc,
                      &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 28);
    CHECK_STR_HAS(d.msg, "rank 1 is listed twice");
    CHECK_INT_EQ(load(REFS "simulation:\n  stragglers: [{ranks: [8], slowdown: 2}]\n"
                           "parallel: {dp: 8}\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 25);
    CHECK_STR_HAS(d.msg, "rank 8 does not exist (the run has 8 ranks, 0 to 7)");
    CHECK_INT_EQ(load(REFS "simulation:\n  stragglers: [{ranks: [1]}]\n", &sc, &d), SIM_EINVAL);
    CHECK_STR_HAS(d.msg, "missing required key 'slowdown'");
    CHECK_INT_EQ(load(REFS "simulation:\n  jitter: 0.1\n  symmetry: dp\nparallel: {dp: 8}\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_STR_HAS(d.msg, "simulation.jitter: every replica must be simulated");
    /* context parallelism loads; it needs 2·cp | seq_len ("  cp: 3" at 4:3, the key: 2048 is
     * not a multiple of 6) and flash attention */
    CHECK_INT_EQ(load(REFS "parallel:\n  cp: 2\n", &sc, &d), 0);
    CHECK_INT_EQ(sc.parallel.cp, 2);
    CHECK_INT_EQ(load(REFS "parallel:\n  cp: 3\n", &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "parallel.cp: 3 needs training.seq_len (2048) to be a multiple of 2 x cp "
                        "= 6");
    CHECK_INT_EQ(load(REFS "training: {flash_attention: false}\nparallel:\n  cp: 2\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_STR_HAS(d.msg, "context parallelism needs training.flash_attention: true");
    /* tensor parallelism loads; sequence parallelism without it is refused at sp's value */
    CHECK_INT_EQ(load(REFS "parallel:\n  tp: 1\n  sp: true\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 5, 7);
    /* the default value is fine */
    CHECK_INT_EQ(load(REFS "parallel:\n  tp: 1\n  zero: 0\n  sp: false\n", &sc, &d), 0);

    /* collectives: every algorithm name loads (the collectives issue built them all);
     * "collectives: {dp: rings}" puts the bad name at 3:19 */
    CHECK_INT_EQ(load(REFS "collectives: {dp: ring, tp: auto}\n", &sc, &d), 0);
    CHECK_INT_EQ(sc.collectives[PLAN_GROUP_DP], PLAN_COLL_RING);
    CHECK_INT_EQ(load(REFS "collectives: {dp: tree, tp: nvls, ep: pairwise}\n", &sc, &d), 0);
    CHECK_INT_EQ(sc.collectives[PLAN_GROUP_DP], PLAN_COLL_TREE);
    CHECK_INT_EQ(sc.collectives[PLAN_GROUP_EP], PLAN_COLL_PAIRWISE);
    CHECK_INT_EQ(load(REFS "collectives: {dp: rings}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 3, 19);
    CHECK_STR_HAS(d.msg, "rings");

    /* protocols: defaults (docs/collectives.md), and an override of one class */
    CHECK_NEAR(sc.topology.protocols.proto[HW_PROTO_SIMPLE].efficiency[HW_LINK_NVLINK], 0.80, 0,
               0);
    {
        const char *sets[] = {"topology.protocols.simple.efficiency.nvlink=0.9",
                              "topology.protocols.ll128.enabled=false"};
        CHECK_INT_EQ(load_sets(REFS, sets, 2, &sc, &d), 0);
        CHECK_NEAR(sc.topology.protocols.proto[HW_PROTO_SIMPLE].efficiency[HW_LINK_NVLINK], 0.9,
                   0, 0);
        CHECK(!sc.topology.protocols.proto[HW_PROTO_LL128].enabled);
        /* other classes keep their defaults: the network's Simple efficiency is 0.92 */
        CHECK_NEAR(sc.topology.protocols.proto[HW_PROTO_SIMPLE].efficiency[HW_LINK_IB], 0.92, 0,
                   0);
        /* an efficiency above 1 is refused */
        const char *bad[] = {"topology.protocols.simple.efficiency.nvlink=1.5"};
        CHECK_INT_EQ(load_sets(REFS, bad, 1, &sc, &d), SIM_EINVAL);
    }

    /* MoE model: "    top_k: 9" names more experts per token than the 8 there are; the
     * error points at the 9 (line 10, column 12) */
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel:\n  layers: 2\n  hidden: 256\n  heads: 4\n"
                      "  ffn: 8\n  vocab: 8\n  moe:\n    experts: 8\n    top_k: 9\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 10, 12);
    CHECK_STR_HAS(d.msg, "must be from 1 to experts (8), got 9");

    /* MLA without head_dim (qk_nope_head_dim is not hidden / heads): reported at the
     * "mla" of "  attention: {kind: mla, kv_lora_rank: 64, v_head_dim: 64}", line 8
     * column 21 */
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel:\n  layers: 2\n  hidden: 256\n  heads: 4\n"
                      "  ffn: 8\n  vocab: 8\n"
                      "  attention: {kind: mla, kv_lora_rank: 64, v_head_dim: 64}\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 8, 21);
    CHECK_STR_HAS(d.msg, "mla needs model.head_dim > 0");
    /* with head_dim it loads */
    CHECK_INT_EQ(load("topology: topo.yaml\nmodel:\n  layers: 2\n  hidden: 256\n  heads: 4\n"
                      "  ffn: 8\n  vocab: 8\n  head_dim: 32\n"
                      "  attention: {kind: mla, kv_lora_rank: 64, v_head_dim: 64}\n",
                      &sc, &d),
                 0);

}

static void test_cross_checks(void)
{
    plan_scenario sc;
    sim_diag d;

    /* more ranks than GPUs: "  dp: 16" at 4:7; kit has 1 node x 8 GPUs */
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: 16\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 7);
    CHECK_STR_HAS(d.msg, "needs 16 GPUs but topology 'kit' has 8");
    /* fewer ranks than GPUs is fine */
    CHECK_INT_EQ(load(REFS "parallel:\n  dp: 4\n", &sc, &d), 0);

    /* heads % kv_heads: "model: {layers: 2, hidden: 256, heads: 4, kv_heads: 3, ..." puts 3 at
     * column 53 of line 2 */
    CHECK_INT_EQ(load("topology: topo.yaml\n"
                      "model: {layers: 2, hidden: 256, heads: 4, kv_heads: 3, ffn: 8, vocab: 8}\n",
                      &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 2, 53);
    CHECK_STR_EQ(d.msg, "model.kv_heads: heads (4) must be a multiple of kv_heads (3)");

    /* global_batch 10 with micro_batch 4 x dp 1: "  global_batch: 10" at 4:17 */
    CHECK_INT_EQ(load(REFS "training:\n  global_batch: 10\n  micro_batch: 4\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 17);
    CHECK_STR_EQ(d.msg, "training.global_batch: 10 is not a multiple of micro_batch x dp = 4 x 1");
    /* 0 (or absent) means micro_batch x dp, resolved by the plan */
    CHECK_INT_EQ(load(REFS "training:\n  global_batch: 0\n", &sc, &d), 0);
    CHECK_INT_EQ(sc.training.global_batch, 0);

    /* precision without a peak in the GPU entry: "  precision: fp8" at 4:14 */
    CHECK_INT_EQ(load(REFS "training:\n  precision: fp8\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "s.yaml", 4, 14);
    CHECK_STR_EQ(d.msg, "training.precision: fp8 needs topology.gpu.peak.fp8, which GPU 'tg' "
                        "does not give");

    /* several nodes without a network: reported at the override that set nodes */
    const char *sets[] = {"topology.nodes=2"};
    CHECK_INT_EQ(load_sets(REFS, sets, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set topology.nodes=2", 0, 0);
    CHECK_STR_HAS(d.msg, "2 nodes need a network, but topology 'kit' has no 'fabric'");

    /* pcie intra: gen or bandwidth needed; p2p only for pcie */
    write_file("topo-pcie.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, p2p: false}\n");
    CHECK_INT_EQ(load("topology: topo-pcie.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "topo-pcie.yaml", 4, 3);
    CHECK_STR_HAS(d.msg, "a pcie link needs 'gen'");
    write_file("topo-pcie.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4, p2p: false}\n");
    CHECK_INT_EQ(load("topology: topo-pcie.yaml\nmodel: model.yaml\n", &sc, &d), 0);
    CHECK_NEAR(sc.topology.intra.bw_Bps, 0, 0, 0); /* left to hw_pcie_bw_Bps(gen, lanes) */
    CHECK_INT_EQ(sc.topology.intra.pcie_lanes, 16);
    /* pcie: intra.latency is unused (0); each PCIe hop takes pcie.latency, default 0.5 us */
    CHECK_INT_EQ(sc.topology.intra.latency_ps, 0);
    CHECK_INT_EQ(sc.topology.pcie.latency_ps, 500000);
    CHECK(!sc.topology.intra.p2p);
    CHECK_INT_EQ(sc.topology.pcie.gen, 4); /* host link follows the intra PCIe generation */
    CHECK_INT_EQ(sc.topology.pcie.lanes, 16); /* ... and its lanes (intra default 16) */
}

/* ---------------------------------------------------------------------------------------- */
/* Topology keys in the kit: defaults, the pcie rules, errors, the explicit form's errors    */

static void test_topology_defaults(void)
{
    plan_scenario sc;
    sim_diag d;
    /* the kit (one nvswitch node) gives none of the newer keys */
    CHECK_INT_EQ(load(REFS, &sc, &d), 0);
    const hw_topology_spec *t = &sc.topology;
    CHECK_INT_EQ(t->intra.shape, HW_NVLINK_MESH);
    CHECK_INT_EQ(t->pcie.switches, 0);                    /* GPUs on the root complexes */
    CHECK_INT_EQ(t->pcie.sockets, 1);
    CHECK_INT_EQ(t->pcie.switch_lanes, 16);
    CHECK_INT_EQ(t->pcie.latency_ps, 500000);             /* 0.5 us per PCIe hop */
    CHECK_NEAR(t->host.memory_bw_Bps, 2.048e11, 0, 0);    /* 8 ch x 3200 MT/s x 8 B */
    CHECK_NEAR(t->host.socket_link_bw_Bps, 6.4e10, 0, 0); /* 64 GB/s per direction */
    CHECK_INT_EQ(t->host.socket_link_latency_ps, 500000); /* 0.5 us */
    CHECK_INT_EQ(t->fabric.radix, 64);
    CHECK_INT_EQ(t->fabric.levels, 0);                    /* as many as needed */
    CHECK_NEAR(t->fabric.oversubscription, 1, 0, 0);
    CHECK_INT_EQ(t->n_devices, 0);
    CHECK_INT_EQ(t->n_links, 0);

    /* the new keys through --set: a scalar, a new mapping, and a deep merge */
    const char *s1[] = {"topology.node.pcie.switches=4", "topology.node.pcie.sockets=2",
                        "topology.node.host={socket_link: 100 GB/s}",
                        "topology.fabric={kind: fat-tree, radix: 48, levels: 2}",
                        "topology.node.host.socket_link_latency=1 us"};
    CHECK_INT_EQ(load_sets(REFS, s1, 5, &sc, &d), 0);
    CHECK_INT_EQ(t->pcie.switches, 4);
    CHECK_INT_EQ(t->pcie.sockets, 2);
    CHECK_NEAR(t->host.socket_link_bw_Bps, 1e11, 0, 0);  /* 100 GB/s */
    CHECK_NEAR(t->host.memory_bw_Bps, 2.048e11, 0, 0);   /* still the default */
    CHECK_INT_EQ(t->host.socket_link_latency_ps, 1000000);
    CHECK_INT_EQ(t->fabric.radix, 48);
    CHECK_INT_EQ(t->fabric.levels, 2);
    const char *s2[] = {"topology.node.intra={kind: nvlink, shape: ring}"};
    CHECK_INT_EQ(load_sets(REFS, s2, 1, &sc, &d), 0);
    CHECK_INT_EQ(t->intra.kind, HW_INTRA_NVLINK);
    CHECK_INT_EQ(t->intra.shape, HW_NVLINK_RING);
    CHECK_NEAR(t->intra.bw_Bps, 4.5e11, 0, 0);           /* kept from the kit */
}

static void test_topology_pcie_rules(void)
{
    plan_scenario sc;
    sim_diag d;
    const hw_topology_spec *t = &sc.topology;
    const char *refs = "topology: tp.yaml\nmodel: model.yaml\n";

    /* node.pcie gives gen and lanes for a pcie intra that gives neither */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, p2p: false}\n"
                          "  pcie: {gen: 5, lanes: 8}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), 0);
    CHECK_INT_EQ(t->intra.pcie_gen, 5);
    CHECK_INT_EQ(t->intra.pcie_lanes, 8);
    CHECK_INT_EQ(t->pcie.gen, 5);

    /* both give gen, and they differ: at node.pcie.gen's value, "  pcie: {gen: 5}" is 9
     * characters up to the brace, "gen: " 5 more, so 5:15 */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4, p2p: false}\n"
                          "  pcie: {gen: 5}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 5, 15);
    CHECK_STR_EQ(d.msg, "topology.node.pcie.gen: 5 differs from topology.node.intra.gen (4); "
                        "for kind pcie they describe the same link");
    /* the same for lanes: "  pcie: {lanes: 8}" puts 8 at 9 + 7 + 1 = column 17 */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4, lanes: 16}\n"
                          "  pcie: {lanes: 8}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 5, 17);
    CHECK_STR_HAS(d.msg, "topology.node.pcie.lanes: 8 differs from topology.node.intra.lanes (16)");
    /* equal values in both places are fine */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4}\n"
                          "  pcie: {gen: 4, switches: 1}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), 0);
    CHECK_INT_EQ(t->pcie.switches, 1);

    /* intra.latency means nothing for kind pcie: at the key; "  intra: {kind: pcie, gen: 4, "
     * is 10 + 12 + 8 = 30 characters, so 'latency' is at 4:31 */
    write_file("tp.yaml",
               "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4, latency: 2 us}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 4, 31);
    CHECK_STR_EQ(d.msg, "topology.node.intra.latency does not apply to kind pcie: a PCIe path "
                        "takes the latency of each hop of the node's PCIe tree");
    CHECK_STR_EQ(d.hints, "set node.pcie.latency (per PCIe hop)");
    /* ... which is where it goes: "  pcie: {latency: 1 us}" */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 2\n  intra: {kind: pcie, gen: 4}\n"
                          "  pcie: {latency: 1 us}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), 0);
    CHECK_INT_EQ(t->pcie.latency_ps, 1000000);

    /* shape only with nvlink: "  intra: {kind: nvswitch, bandwidth: 450 GB/s, " is
     * 10 + 16 + 21 = 47 characters, so 'shape' is at 4:48 */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 8\n"
                          "  intra: {kind: nvswitch, bandwidth: 450 GB/s, shape: ring}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 4, 48);
    CHECK_STR_EQ(d.msg, "topology.node.intra.shape applies only to kind nvlink (this link is "
                        "nvswitch)");
    /* an unknown shape, with did-you-mean: "  intra: {kind: nvlink, bandwidth: 1 GB/s, shape: "
     * is 10 + 14 + 19 + 7 = 50 characters, so 'rign' is at 4:51 */
    write_file("tp.yaml", "gpu: tg\nnode:\n  gpus: 8\n"
                          "  intra: {kind: nvlink, bandwidth: 1 GB/s, shape: rign}\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 4, 51);
    CHECK_STR_EQ(d.msg, "topology.node.intra.shape: unknown value 'rign'; did you mean 'ring'?");

    /* fabric.radix must be even and at least 4; levels at least 0 */
    const char *r1[] = {"topology.fabric={kind: fat-tree, radix: 63}"};
    CHECK_INT_EQ(load_sets(REFS, r1, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set topology.fabric={kind: fat-tree, radix: 63}", 0, 0);
    CHECK_STR_EQ(d.msg, "topology.fabric.radix: must be even (got 63)");
    const char *r2[] = {"topology.fabric={kind: fat-tree, radix: 2}"};
    CHECK_INT_EQ(load_sets(REFS, r2, 1, &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "topology.fabric.radix: must be at least 4 and at most 65536 (got 2)");
    const char *r3[] = {"topology.fabric={kind: fat-tree, levels: -1}"};
    CHECK_INT_EQ(load_sets(REFS, r3, 1, &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "topology.fabric.levels: must be at least 0 and at most 16 (got -1)");
    const char *r4[] = {"topology.node.pcie.sockets=0"};
    CHECK_INT_EQ(load_sets(REFS, r4, 1, &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "topology.node.pcie.sockets: must be at least 1 and at most 64 (got 0)");
    const char *r5[] = {"topology.node.host.memory_bandwidth=0 GB/s"};
    CHECK_INT_EQ(load_sets(REFS, r5, 1, &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "topology.node.host.memory_bandwidth: must be positive (got 0 GB/s)");

    /* the parametric form needs node: reported in the topology file at its first key (1:1) */
    write_file("tp.yaml", "name: nonode\ngpu: tg\n");
    CHECK_INT_EQ(load(refs, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 1, 1);
    CHECK_STR_EQ(d.msg, "missing required key 'node' in 'topology'");
}

/* An explicit topology file "te.yaml": lines 1-2 are "gpu: tg" and "devices:", then
 * DEVICES (one "  - {...}" per line), "links:", LINKS. */
static int load_explicit(const char *devices, const char *links, plan_scenario *sc, sim_diag *d)
{
    char text[8192];
    snprintf(text, sizeof text, "gpu: tg\ndevices:\n%slinks:\n%s", devices, links);
    write_file("te.yaml", text);
    return load("topology: te.yaml\nmodel: model.yaml\n", sc, d);
}

#define DEV2 "  - {name: cpu0, kind: cpu}\n  - {name: gpu0, kind: gpu}\n" /* lines 3-4 */

static void test_explicit_errors(void)
{
    plan_scenario sc;
    sim_diag d;

    /* the smallest explicit machine loads: one GPU on one CPU */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {between: [gpu0, cpu0], bandwidth: 1 GB/s}\n", &sc, &d),
                 0);
    CHECK_INT_EQ(sc.topology.n_devices, 2);
    CHECK_INT_EQ(sc.topology.nodes, 1);
    CHECK_INT_EQ(sc.topology.gpus_per_node, 1);
    CHECK_INT_EQ(sc.topology.links[0].src, 1);
    CHECK_INT_EQ(sc.topology.links[0].cls, HW_LINK_PCIE);

    /* Links are on line 6; "  - {" is 5 characters, so a link's first key is at column 6. */

    /* unknown device name, at the value: "between: " is 9 characters (6-14), "[" at 15,
     * "gpu0, " 16-21, so the second name is at 6:22 */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {between: [gpu0, cpu9], bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 22);
    CHECK_STR_EQ(d.msg, "topology.links[0].between[1]: unknown device 'cpu9'; did you mean "
                        "'cpu0'?");
    CHECK_STR_EQ(d.hints, "devices: cpu0, gpu0");
    /* ... and in from/to: "from: " 6-11, so the name is at 6:12 */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {from: gpu, to: cpu0, bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 12);
    CHECK_STR_EQ(d.msg, "topology.links[0].from: unknown device 'gpu'; did you mean 'gpu0'?");

    /* both between and from/to: at the second of the two, 'from' after "[gpu0, cpu0], "
     * (15-28), so 6:29 */
    CHECK_INT_EQ(load_explicit(DEV2,
                               "  - {between: [gpu0, cpu0], from: gpu0, to: cpu0, "
                               "bandwidth: 1 GB/s}\n",
                               &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 29);
    CHECK_STR_EQ(d.msg, "topology.links[0]: a link has either 'between' (both directions) or "
                        "'from' and 'to' (one direction), not both");

    /* neither: at the link's mapping, whose '{' is at 6:5 */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {bandwidth: 1 GB/s}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 5);
    CHECK_STR_EQ(d.msg, "topology.links[0]: a link needs 'between: [a, b]' (both directions) or "
                        "'from' and 'to' (one direction)");
    /* from without to: at 'from' (6:6) */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {from: gpu0, bandwidth: 1 GB/s}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 6);
    CHECK_STR_EQ(d.msg, "topology.links[0]: 'from' needs 'to'");
    /* between with one name: at the list, 6:15 */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {between: [gpu0], bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 15);
    CHECK_STR_HAS(d.msg, "topology.links[0].between: expected two device names");
    /* a link without bandwidth: at the link's mapping */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {between: [gpu0, cpu0]}\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 5);
    CHECK_STR_EQ(d.msg, "missing required key 'bandwidth' in 'topology.links[0]'");
    /* an unknown class: "between: [gpu0, cpu0], " is 6-28, "bandwidth: 1 GB/s, " 29-47,
     * "class: " 48-54, so the value is at 6:55 */
    CHECK_INT_EQ(load_explicit(DEV2,
                               "  - {between: [gpu0, cpu0], bandwidth: 1 GB/s, class: pcei}\n",
                               &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 55);
    CHECK_STR_EQ(d.msg, "topology.links[0].class: unknown value 'pcei'; did you mean 'pcie'?");

    /* a link from a device to itself: at the second end, "from: gpu0, to: " is 6-21, 6:22 */
    CHECK_INT_EQ(load_explicit(DEV2, "  - {from: gpu0, to: gpu0, bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 22);
    CHECK_STR_EQ(d.msg, "topology.links[0].to: a link from 'gpu0' to itself");

    /* duplicate device name: the second 'cpu0' (line 4), after "  - {name: " at 4:12 */
    CHECK_INT_EQ(load_explicit("  - {name: cpu0, kind: cpu}\n  - {name: cpu0, kind: gpu}\n",
                               "  - {between: [cpu0, cpu0], bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 4, 12);
    CHECK_STR_EQ(d.msg, "topology.devices[1].name: device 'cpu0' is listed twice (first as "
                        "devices[0])");

    /* host_memory without bandwidth: at the device's mapping, 3:5 */
    CHECK_INT_EQ(load_explicit("  - {name: mem0, kind: host_memory}\n", "", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 5);
    CHECK_STR_HAS(d.msg, "topology.devices[0]: host_memory 'mem0' needs 'bandwidth'");
    /* bandwidth on another kind: at the key, after "name: cpu0, kind: cpu, " (6-28), 3:29 */
    CHECK_INT_EQ(load_explicit("  - {name: cpu0, kind: cpu, bandwidth: 1 GB/s}\n", "", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 29);
    CHECK_STR_EQ(d.msg, "topology.devices[0].bandwidth applies only to kind host_memory (this "
                        "device is cpu)");
    /* p2p on a non-GPU: at the key, 3:29 likewise */
    CHECK_INT_EQ(load_explicit("  - {name: cpu0, kind: cpu, p2p: false}\n", "", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 29);
    CHECK_STR_EQ(d.msg, "topology.devices[0].p2p applies only to kind gpu (this device is cpu)");
    /* unknown kind and unknown key, with did-you-mean */
    CHECK_INT_EQ(load_explicit("  - {name: g, kind: gpuu}\n", "", &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "topology.devices[0].kind: unknown value 'gpuu'; did you mean 'gpu'?");
    CHECK_INT_EQ(load_explicit("  - {name: g, kind: gpu, nod: 1}\n", "", &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "unknown key 'nod' in 'topology.devices[0]'; did you mean 'node'?");
    /* a device without a name: at its mapping */
    CHECK_INT_EQ(load_explicit("  - {kind: gpu}\n", "", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 5);
    CHECK_STR_EQ(d.msg, "missing required key 'name' in 'topology.devices[0]'");

    /* a GPU on no link: at its device entry, gpu1 on line 5 */
    CHECK_INT_EQ(load_explicit(DEV2 "  - {name: gpu1, kind: gpu}\n",
                               "  - {between: [gpu0, cpu0], bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 5, 5);
    CHECK_STR_EQ(d.msg, "topology.devices[2]: gpu 'gpu1' is not on any link");
    /* no GPU at all: at the device list, whose first '-' is at 3:3 */
    CHECK_INT_EQ(load_explicit("  - {name: cpu0, kind: cpu}\n", "", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 3);
    CHECK_STR_EQ(d.msg, "topology.devices: the explicit form needs at least one device of kind "
                        "gpu");

    /* p2p: false needs a host memory to stage in: at the value, after "  - {name: gpu0,
     * kind: gpu, p2p: " (5 + 12 + 11 + 5 = 33 characters), 4:34 */
    CHECK_INT_EQ(load_explicit("  - {name: cpu0, kind: cpu}\n"
                               "  - {name: gpu0, kind: gpu, p2p: false}\n",
                               "  - {between: [gpu0, cpu0], bandwidth: 1 GB/s}\n", &sc, &d),
                 SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 4, 34);
    CHECK_STR_HAS(d.msg, "topology.devices[1].p2p: gpu 'gpu0' stages its copies in host memory, "
                         "but the topology lists no host_memory device");

    /* the forms do not mix: at the second of the two, 'devices' after 'nodes' (3:1) */
    write_file("te.yaml", "gpu: tg\nnodes: 2\ndevices:\n" DEV2
                          "links: [{between: [gpu0, cpu0], bandwidth: 1 GB/s}]\n");
    CHECK_INT_EQ(load("topology: te.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 1);
    CHECK_STR_EQ(d.msg, "topology.devices: the explicit form (devices, links) replaces nodes, "
                        "node and fabric, but this topology also gives 'nodes'");
    /* ... 'node' after 'links' (line 6) */
    write_file("te.yaml", "gpu: tg\ndevices:\n" DEV2
                          "links: [{between: [gpu0, cpu0], bandwidth: 1 GB/s}]\nnode: {gpus: 1}\n");
    CHECK_INT_EQ(load("topology: te.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 6, 1);
    CHECK_STR_HAS(d.msg, "topology.node: the explicit form (devices, links) replaces nodes");
    /* ... and an override of nodes on an explicit topology, at the override */
    load_explicit(DEV2, "  - {between: [gpu0, cpu0], bandwidth: 1 GB/s}\n", &sc, &d);
    const char *s1[] = {"topology.nodes=4"};
    CHECK_INT_EQ(load_sets("topology: te.yaml\nmodel: model.yaml\n", s1, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set topology.nodes=4", 0, 0);
    CHECK_STR_HAS(d.msg, "topology.nodes: the explicit form (devices, links) replaces");

    /* --set replaces the link list (a list is replaced, not merged) */
    const char *s2[] = {"topology.links=[{from: gpu0, to: cpu0, bandwidth: 10 GB/s}]"};
    CHECK_INT_EQ(load_sets("topology: te.yaml\nmodel: model.yaml\n", s2, 1, &sc, &d), 0);
    CHECK_INT_EQ(sc.topology.n_links, 1);
    CHECK(!sc.topology.links[0].bidirectional);
    CHECK_NEAR(sc.topology.links[0].bw_Bps, 1e10, 0, 0);

    /* at most HW_EXPLICIT_DEVICES_MAX devices: reported at the list (3:3) */
    size_t cap = (size_t)(HW_EXPLICIT_DEVICES_MAX + 1) * 40 + 64, len = 0;
    char *big = sim_calloc(cap, 1);
    len += (size_t)snprintf(big + len, cap - len, "gpu: tg\ndevices:\n");
    for (int i = 0; i <= HW_EXPLICIT_DEVICES_MAX; i++)
        len += (size_t)snprintf(big + len, cap - len, "  - {name: d%d, kind: gpu}\n", i);
    snprintf(big + len, cap - len, "links: []\n");
    write_file("te.yaml", big);
    sim_free(big);
    CHECK_INT_EQ(load("topology: te.yaml\nmodel: model.yaml\n", &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "te.yaml", 3, 3);
    CHECK_STR_EQ(d.msg, "topology.devices: at most 512 devices (HW_EXPLICIT_DEVICES_MAX), got 513");
}

/* The shipped library (topologies/ in the source tree) loads, with the figures its files
 * cite (docs/topologies.md). */
static void test_library(void)
{
    plan_scenario sc;
    sim_diag d;
    char text[8400];
#define LOAD_LIB(file)                                                                       \
    (snprintf(text, sizeof text, "topology: %s/../../../../topologies/%s\nmodel: model.yaml\n", \
              data_dir, file),                                                               \
     load(text, &sc, &d))
    const hw_topology_spec *t = &sc.topology;

    CHECK_INT_EQ(LOAD_LIB("dgx-a100.yaml"), 0);
    CHECK_STR_EQ(t->gpu.name, "a100-sxm-80gb");
    CHECK_INT_EQ(t->gpus_per_node, 8);
    CHECK_NEAR(t->intra.bw_Bps, 3e11, 0, 0);             /* NVLink3: 12 x 25 GB/s */
    CHECK(!t->intra.sharp);
    CHECK_INT_EQ(t->pcie.switches, 4);
    CHECK_INT_EQ(t->pcie.sockets, 2);
    CHECK_NEAR(t->host.memory_bw_Bps, 2.048e11, 0, 0);   /* 8 x DDR4-3200 x 8 B */
    CHECK_NEAR(t->host.socket_link_bw_Bps, 1.44e11, 0, 0); /* 4 x16 xGMI at 18 GT/s */
    CHECK_NEAR(t->nics.bw_Bps, 2.5e10, 0, 0);            /* HDR 200 Gb/s / 8 */
    CHECK_INT_EQ(t->fabric.kind, HW_FABRIC_FAT_TREE);
    CHECK_INT_EQ(t->fabric.radix, 40);                   /* QM8790: 40 HDR ports */

    CHECK_INT_EQ(LOAD_LIB("dgx-h100.yaml"), 0);
    CHECK_INT_EQ(t->nodes, 4);
    CHECK_NEAR(t->intra.bw_Bps, 4.5e11, 0, 0);           /* NVLink4: 18 x 25 GB/s */
    CHECK(t->intra.sharp);
    CHECK_INT_EQ(t->pcie.gen, 5);
    CHECK_INT_EQ(t->pcie.switches, 8);                   /* one per ConnectX-7 */
    CHECK_NEAR(t->host.memory_bw_Bps, 3.072e11, 0, 0);   /* 8 x DDR5-4800 x 8 B */
    CHECK_NEAR(t->host.socket_link_bw_Bps, 1.28e11, 0, 0); /* 4 UPI x 16 GT/s x 2 B */
    CHECK_NEAR(t->nics.bw_Bps, 5e10, 0, 0);              /* NDR 400 Gb/s / 8 */
    CHECK_INT_EQ(t->fabric.kind, HW_FABRIC_RAIL_OPTIMIZED);
    CHECK_INT_EQ(t->fabric.radix, 64);                   /* QM9700: 64 NDR ports */

    CHECK_INT_EQ(LOAD_LIB("hgx-h200.yaml"), 0);
    CHECK_STR_EQ(t->gpu.name, "h200-sxm");
    CHECK_INT_EQ(t->nodes * t->gpus_per_node, 32);
    CHECK_NEAR(t->intra.bw_Bps, 4.5e11, 0, 0);

    CHECK_INT_EQ(LOAD_LIB("gb200-nvl72.yaml"), 0);
    CHECK_INT_EQ(t->gpus_per_node, 72);
    CHECK_NEAR(t->intra.bw_Bps, 9e11, 0, 0);             /* 1.8 TB/s bidirectional / 2 */
    CHECK_INT_EQ(t->pcie.sockets, 36);                   /* 36 Grace, two GPUs each */
    CHECK_NEAR(t->host.memory_bw_Bps, 5.12e11, 0, 0);

    CHECK_INT_EQ(LOAD_LIB("2x-rtx4090-pcie.yaml"), 0);
    CHECK_INT_EQ(t->intra.kind, HW_INTRA_PCIE);
    CHECK(!t->intra.p2p);
    CHECK_INT_EQ(t->pcie.gen, 4);
    CHECK_INT_EQ(t->pcie.lanes, 16);
    CHECK_INT_EQ(t->pcie.sockets, 1);
    CHECK_NEAR(t->host.memory_bw_Bps, 8.96e10, 0, 0);    /* 2 x DDR5-5600 x 8 B */

    CHECK_INT_EQ(LOAD_LIB("8x-rtx4090-pcie.yaml"), 0);
    CHECK_INT_EQ(t->gpus_per_node, 8);
    CHECK(!t->intra.p2p);
    CHECK_INT_EQ(t->pcie.switches, 0);
    CHECK_INT_EQ(t->pcie.sockets, 2);

    CHECK_INT_EQ(LOAD_LIB("2x-rtx3090-nvlink.yaml"), 0);
    CHECK_INT_EQ(t->intra.kind, HW_INTRA_NVLINK);
    CHECK_NEAR(t->intra.bw_Bps, 5.625e10, 0, 0);         /* 4 x 14.0625 GB/s */
    CHECK_INT_EQ(t->intra.shape, HW_NVLINK_MESH);
    CHECK_NEAR(t->host.memory_bw_Bps, 5.12e10, 0, 0);    /* 2 x DDR4-3200 x 8 B */

    CHECK_INT_EQ(LOAD_LIB("8x-l40s-pcie.yaml"), 0);
    CHECK_STR_EQ(t->gpu.name, "l40s");
    CHECK(t->intra.p2p);
    CHECK_INT_EQ(t->pcie.switches, 4);
    CHECK_INT_EQ(t->pcie.switch_lanes, 32);

    CHECK_INT_EQ(LOAD_LIB("examples/2x-rtx4090-explicit.yaml"), 0);
    CHECK_STR_EQ(t->gpu.name, "rtx-4090");
    CHECK_INT_EQ(t->n_devices, 4);
    CHECK_INT_EQ(t->n_links, 3);
    CHECK_INT_EQ(t->nodes, 1);
    CHECK_INT_EQ(t->gpus_per_node, 2);
    CHECK(!t->devices[2].p2p);
    CHECK_NEAR(t->links[0].bw_Bps, 3.15077e10, 0, 0);    /* hw_pcie_bw_Bps(4, 16), 6 digits */
    CHECK_INT_EQ(t->links[1].latency_ps, 500000);        /* pcie default */
    CHECK_INT_EQ(t->links[2].cls, HW_LINK_CPU);          /* cpu-host_memory, inferred */
    CHECK_INT_EQ(t->links[2].latency_ps, 100000);        /* given: 0.1 us */
    CHECK(t->links[2].bidirectional);                    /* between: half-duplex in the graph */
#undef LOAD_LIB
}

/* A topology file on its own (stepsim topo): overrides relative to the topology. */
static void test_topology_load(void)
{
    hw_topology_spec *t = sim_calloc(1, sizeof *t);
    sim_diag d = {0};
    char path[4200];
    snprintf(path, sizeof path, "%s/../../../../topologies/dgx-h100.yaml", data_dir);
    const char *s1[] = {"nodes=64", "node.nics.count=4", "gpu.memory=40 GiB"};
    CHECK_INT_EQ(input_topology_load(path, s1, 3, t, &d), 0);
    CHECK_STR_EQ(t->name, "dgx-h100");
    CHECK_STR_EQ(t->gpu.name, "h100-sxm"); /* the GPU file's stem, as in a scenario */
    CHECK_INT_EQ(t->nodes, 64);
    CHECK_INT_EQ(t->nics.count, 4);
    CHECK_INT_EQ(t->gpu.memory_bytes, INT64_C(42949672960)); /* 40 x 2^30 */
    CHECK_INT_EQ(t->pcie.switches, 8);

    /* the kit's topology, its GPU by catalog name next to it (gpus/tg.yaml), a name given */
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("topo.yaml", NULL, 0, t, &d), 0);
    CHECK_STR_EQ(t->name, "kit");
    CHECK_INT_EQ(t->gpus_per_node, 8);
    /* an explicit topology; its name defaults to the file's stem */
    write_file("te.yaml", "gpu: tg\ndevices:\n" DEV2
                          "links:\n  - {between: [gpu0, cpu0], bandwidth: 1 GB/s}\n");
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("te.yaml", NULL, 0, t, &d), 0);
    CHECK_STR_EQ(t->name, "te");
    CHECK_INT_EQ(t->n_devices, 2);

    /* errors: in an override (no position), in the file, a missing file */
    const char *b1[] = {"nodes=0"};
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("topo.yaml", b1, 1, t, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set nodes=0", 0, 0);
    CHECK_STR_EQ(d.msg, "topology.nodes: must be at least 1 and at most 1048576 (got 0)");
    const char *b2[] = {"node.intra.bandwith=1 GB/s"};
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("topo.yaml", b2, 1, t, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "unknown key 'bandwith' in 'topology.node.intra'; did you mean "
                        "'bandwidth'?");
    /* a missing required key: in the file, at its first key (1:1) */
    write_file("tp.yaml", "name: nonode\ngpu: tg\n");
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("tp.yaml", NULL, 0, t, &d), SIM_EINVAL);
    CHECK_DIAG(d, "tp.yaml", 1, 1);
    CHECK_STR_EQ(d.msg, "missing required key 'node' in 'topology'");
    memset(&d, 0, sizeof d);
    CHECK_INT_EQ(input_topology_load("nope.yaml", NULL, 0, t, &d), SIM_ENOENT);
    CHECK_DIAG(d, "nope.yaml", 0, 0);
    sim_free(t);
}

static void test_set(void)
{
    plan_scenario sc;
    sim_diag d;

    /* keys of inlined files: the topology's node and its GPU's memory */
    const char *s1[] = {"topology.node.gpus=4", "topology.gpu.memory=40 GiB"};
    CHECK_INT_EQ(load_sets(REFS, s1, 2, &sc, &d), 0);
    CHECK_INT_EQ(sc.topology.gpus_per_node, 4);
    CHECK_INT_EQ(sc.topology.gpu.memory_bytes, INT64_C(42949672960)); /* 40 x 2^30 */

    /* absent optional keys are created, intermediate mappings included */
    const char *s2[] = {"parallel.ddp.bucket=50MiB", "model.max_seq_len=4096"};
    CHECK_INT_EQ(load_sets(REFS, s2, 2, &sc, &d), 0);
    CHECK_INT_EQ(sc.parallel.ddp.bucket_bytes, 52428800); /* 50 x 2^20 */
    CHECK_INT_EQ(sc.model.max_seq_len, 4096);

    /* the last --set of a key wins */
    const char *s3[] = {"parallel.dp=2", "parallel.dp=4"};
    CHECK_INT_EQ(load_sets(REFS, s3, 2, &sc, &d), 0);
    CHECK_INT_EQ(sc.parallel.dp, 4);

    /* a flow mapping is deep-merged into the mapping it overrides */
    const char *s4[] = {"parallel={dp: 2, ddp: {bucket: 1 MiB}}"};
    CHECK_INT_EQ(load_sets(REFS "parallel:\n  dp: 8\n  ddp: {overlap: false}\n", s4, 1, &sc, &d),
                 0);
    CHECK_INT_EQ(sc.parallel.dp, 2);
    CHECK(!sc.parallel.ddp.overlap);                   /* kept from the file */
    CHECK_INT_EQ(sc.parallel.ddp.bucket_bytes, 1048576); /* 1 MiB = 2^20 */
    /* ... also into a referenced file, which is loaded first */
    const char *s4b[] = {"topology={node: {gpus: 2}, gpu: {memory: 1 GiB}}"};
    CHECK_INT_EQ(load_sets(REFS, s4b, 1, &sc, &d), 0);
    CHECK_STR_EQ(sc.topology.name, "kit");
    CHECK_INT_EQ(sc.topology.gpus_per_node, 2);
    CHECK_NEAR(sc.topology.intra.bw_Bps, 4.5e11, 0, 0);
    CHECK_INT_EQ(sc.topology.gpu.memory_bytes, INT64_C(1073741824));
    CHECK_NEAR(sc.topology.gpu.peak_flops[HW_DTYPE_BF16], 1e15, 0, 0); /* 1000 TFLOP/s, kept */
    /* to replace a mapping, empty it first */
    const char *s4c[] = {"parallel=", "parallel={dp: 2}"};
    CHECK_INT_EQ(load_sets(REFS "parallel:\n  dp: 8\n  ddp: {overlap: false}\n", s4c, 2, &sc, &d),
                 0);
    CHECK(sc.parallel.ddp.overlap); /* back to the default */

    /* a path value resolves against the current directory and loads that file, after which
     * its keys can be overridden too */
    write_file("topo2.yaml", "name: kit2\ngpu: tg\nnode: {gpus: 4, intra: {kind: nvlink, "
                             "bandwidth: 100 GB/s}}\n");
    const char *s5[] = {"topology=topo2.yaml", "topology.node.gpus=2"};
    CHECK_INT_EQ(load_sets("topology: nope.yaml\nmodel: model.yaml\n", s5, 2, &sc, &d), 0);
    CHECK_STR_EQ(sc.topology.name, "kit2");
    CHECK_INT_EQ(sc.topology.gpus_per_node, 2);
    const char *s6[] = {"topology=missing.yaml"};
    CHECK_INT_EQ(load_sets(REFS, s6, 1, &sc, &d), SIM_ENOENT);
    CHECK_DIAG(d, "--set topology=missing.yaml", 0, 0);
    CHECK_STR_EQ(d.msg, "cannot open 'missing.yaml': No such file or directory");

    /* bad paths */
    const char *b1[] = {"parallel.dpp=2"};
    CHECK_INT_EQ(load_sets(REFS, b1, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dpp=2", 0, 0);
    CHECK_STR_EQ(d.msg, "unknown key 'dpp' in 'parallel'; did you mean 'dp'?");
    const char *b2[] = {"parallel.dp.x=1"};
    CHECK_INT_EQ(load_sets(REFS "parallel: {dp: 1}\n", b2, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dp.x=1", 0, 0);
    CHECK_STR_EQ(d.msg, "cannot set 'parallel.dp.x': 'parallel.dp' is a scalar, not a mapping");
    const char *b3[] = {"parallel.dp"};
    CHECK_INT_EQ(load_sets(REFS, b3, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dp", 0, 0);
    CHECK_STR_EQ(d.msg, "expected KEY=VALUE");
    const char *b4[] = {"parallel..dp=1"};
    CHECK_INT_EQ(load_sets(REFS, b4, 1, &sc, &d), SIM_EINVAL);
    CHECK_STR_EQ(d.msg, "invalid key path 'parallel..dp'");
    const char *b5[] = {"trainig.seq_len=8"};
    CHECK_INT_EQ(load_sets(REFS, b5, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set trainig.seq_len=8", 0, 0);
    CHECK_STR_HAS(d.msg, "did you mean 'training'?");

    /* schema errors in values that came from --set are reported against the override */
    const char *v1[] = {"parallel.dp=0"};
    CHECK_INT_EQ(load_sets(REFS, v1, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dp=0", 0, 0);
    CHECK_STR_EQ(d.msg, "parallel.dp: must be at least 1 and at most 1048576 (got 0)");
    const char *v2[] = {"topology.gpu.memory=40"};
    CHECK_INT_EQ(load_sets(REFS, v2, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set topology.gpu.memory=40", 0, 0);
    CHECK_STR_HAS(d.msg, "missing unit in '40'");
    const char *v3[] = {"simulation.jitter=11"};
    CHECK_INT_EQ(load_sets(REFS, v3, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set simulation.jitter=11", 0, 0);
    const char *v4[] = {"parallel.dp=[1, 2"};
    CHECK_INT_EQ(load_sets(REFS, v4, 1, &sc, &d), SIM_EINVAL);
    CHECK_DIAG(d, "--set parallel.dp=[1, 2", 0, 0);
    CHECK_STR_HAS(d.msg, "invalid YAML value");

    /* an override that empties an optional key restores its default */
    const char *v5[] = {"training.seq_len="};
    CHECK_INT_EQ(load_sets(REFS "training: {seq_len: 8}\n", v5, 1, &sc, &d), 0);
    CHECK_INT_EQ(sc.training.seq_len, 2048);

    /* resolved YAML records the overrides in place */
    input_scenario_info *info = NULL;
    const char *s7[] = {"parallel.dp=2", "simulation.steps=5"};
    memset(&d, 0, sizeof d);
    write_file("s.yaml", REFS "parallel:\n  dp: 8\n");
    CHECK_INT_EQ(input_scenario_load("s.yaml", s7, 2, &sc, &info, &d), 0);
    if (info) {
        CHECK_STR_HAS(info->resolved_yaml, "parallel:\n  dp: 2\nsimulation:\n  steps: 5\n");
        CHECK_INT_EQ(info->n_inputs, 4); /* s.yaml, topo.yaml, gpus/tg.yaml, model.yaml */
    }
    input_scenario_info_destroy(info);
}

int main(void)
{
    if (!getcwd(data_dir, sizeof data_dir) || !mkdtemp(tmp_dir)) {
        perror("test setup");
        return 1;
    }
    unsetenv("STEPSIM_DATA_DIR");
    test_full_load();
    test_by_name();
    test_topology_keys();
    test_explicit_load();

    if (chdir(tmp_dir) != 0) {
        perror(tmp_dir);
        return 1;
    }
    write_kit();
    test_file_errors();
    test_schema_errors();
    test_not_supported();
    test_cross_checks();
    test_topology_defaults();
    test_topology_pcie_rules();
    test_explicit_errors();
    test_library();
    test_topology_load();
    test_set();

    for (int i = n_written - 1; i >= 0; i--)
        remove(written[i]);
    rmdir("gpus");
    if (chdir(data_dir) == 0)
        rmdir(tmp_dir);
    return test_finish();
}
