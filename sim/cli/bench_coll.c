/* `stepsim bench-coll`: one collective at a time on an idle cluster, for doubling sizes,
 * printed in nccl-tests' layout (size, count, type, redop, root, time, algbw, busbw) or as
 * JSON rows (docs/json.md). algbw = size / time; busbw = algbw x nccl-tests' factor. */
#include "core/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "coll/select.h"
#include "input/load.h"
#include "input/units.h"

static const char usage_bench[] =
    "usage: stepsim bench-coll --topology T.yaml --op OP --gpus N [--algo A] [--proto P]\n"
    "                          [--min-bytes B] [--max-bytes B] [--set KEY=VALUE]... [--json]\n"
    "\n"
    "Times one collective on the first N GPUs of the topology, alone on the network, for\n"
    "sizes from --min-bytes to --max-bytes (doubling; default 8 B to 8 GiB), like\n"
    "nccl-tests. Sizes follow nccl-tests: the buffer of all_reduce/broadcast/reduce, the\n"
    "gathered output of all_gather, the input of reduce_scatter, the send buffer of\n"
    "all_to_all.\n"
    "\n"
    "  --op OP          all_reduce, all_gather, reduce_scatter, broadcast, reduce,\n"
    "                   all_to_all, send_recv (nccl-tests spellings like allreduce work)\n"
    "  --algo A         ring, tree, hd, direct, pairwise, hierarchical, nvls (default: auto,\n"
    "                   the fastest by the model, as NCCL's tuner picks)\n"
    "  --proto P        ll, ll128, simple (default: auto)\n"
    "  --set KEY=VALUE  override a topology key (nodes=2, protocols.simple.efficiency.nvlink=0.9)\n"
    "  --json           one JSON object per size instead of the table\n";

typedef struct bench_args {
    const char *topology;
    int op, algo, proto, gpus;
    int64_t min_bytes, max_bytes;
    bool json;
    const char **sets;
    size_t n_sets;
} bench_args;

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    (void)tag;
    (void)now;
    ++*(int *)ctx;
}

static int parse(int argc, char **argv, bench_args *a)
{
    const char *hint = "see `stepsim bench-coll --help`";
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (strcmp(k, "-h") == 0 || strcmp(k, "--help") == 0) {
            fputs(usage_bench, stdout);
            return -1;
        }
        if (strcmp(k, "--json") == 0) {
            a->json = true;
            continue;
        }
        if (i + 1 >= argc)
            return cli_invalid(k, "expects a value", NULL, hint);
        const char *v = argv[++i];
        if (strcmp(k, "--topology") == 0) {
            a->topology = v;
        } else if (strcmp(k, "--set") == 0) {
            a->sets[a->n_sets++] = v;
        } else if (strcmp(k, "--op") == 0) {
            if ((a->op = coll_op_parse(v)) < 0)
                return cli_invalid("--op", "unknown operation", v,
                                   "one of: all_reduce, all_gather, reduce_scatter, broadcast, "
                                   "reduce, all_to_all, send_recv");
        } else if (strcmp(k, "--algo") == 0) {
            if (strcmp(v, "auto") != 0 && (a->algo = coll_algo_parse(v)) < 0)
                return cli_invalid("--algo", "unknown algorithm", v,
                                   "one of: auto, ring, tree, hd, direct, pairwise, "
                                   "hierarchical, nvls");
        } else if (strcmp(k, "--proto") == 0) {
            a->proto = -1;
            for (int p = 0; p < HW_PROTO_COUNT; p++)
                if (strcmp(v, hw_proto_name((hw_proto)p)) == 0)
                    a->proto = p;
            if (a->proto < 0 && strcmp(v, "auto") != 0)
                return cli_invalid("--proto", "unknown protocol", v, "one of: auto, ll, ll128, simple");
        } else if (strcmp(k, "--gpus") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1 << 20)
                return cli_invalid("--gpus", "expects a positive integer, got", v, hint);
            a->gpus = (int)n;
        } else if (strcmp(k, "--min-bytes") == 0 || strcmp(k, "--max-bytes") == 0) {
            int64_t b;
            if (input_parse_bytes(v, &b) != 0 || b < 1)
                return cli_invalid(k, "expects a positive size such as 8, 1MiB or 8GiB, got", v,
                                   hint);
            *(k[2] == 'm' && k[3] == 'i' ? &a->min_bytes : &a->max_bytes) = b;
        } else {
            return cli_invalid("stepsim", "unknown option for `stepsim bench-coll`", k, hint);
        }
    }
    if (!a->topology)
        return cli_invalid("stepsim", "bench-coll needs --topology T.yaml", NULL, hint);
    if (a->op < 0)
        return cli_invalid("stepsim", "bench-coll needs --op OP", NULL, hint);
    if (a->gpus < 1)
        return cli_invalid("stepsim", "bench-coll needs --gpus N", NULL, hint);
    if (a->min_bytes > a->max_bytes)
        return cli_invalid("--min-bytes", "is larger than --max-bytes", NULL, hint);
    return 0;
}

/* Runs one collective alone; returns its duration in seconds. */
static double run_one(hw_topo *topo, const coll_target *t, const coll_schedule *s,
                      const coll_choice *ch)
{
    sim_eventq *q = sim_eventq_create();
    int flows = 0;
    hw_net *net = hw_net_create(topo, q, 1, on_done, &flows);
    coll_exec x = {.sched = s, .gpu = t->gpu, .switch_dev = t->switch_dev, .proto = ch->proto,
                   .nvls = ch->algo == COLL_ALGO_NVLS, .protocols = t->protocols};
    sim_time end = 0;
    bool done = coll_exec_start(&x, topo, net, 0, 0);
    int seen = 0;
    sim_event *ev;
    while (!done && (ev = sim_eventq_pop(q)) != NULL) {
        end = ev->time;
        hw_net_handle(net, ev);
        while (seen < flows && !done) {
            seen++;
            done = coll_exec_flow_done(&x, topo, net, end, 0);
        }
    }
    hw_net_destroy(net);
    sim_eventq_destroy(q);
    return sim_time_to_s(end);
}

int cli_bench_coll(int argc, char **argv)
{
    bench_args a = {.op = -1, .algo = -1, .proto = -1, .min_bytes = 8,
                    .max_bytes = INT64_C(8) << 30};
    a.sets = sim_calloc((size_t)argc, sizeof *a.sets);
    int rc = parse(argc, argv, &a);
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    hw_topo *topo = NULL;
    int32_t *gpu = NULL, *node = NULL;
    if (rc == 0) {
        sim_diag diag = {0};
        if (input_topology_load(a.topology, a.sets, a.n_sets, spec, &diag) != 0 ||
            hw_topo_create(spec, &topo, &diag) != 0) {
            if (diag.line == 0 && strcmp(diag.file, "topology") == 0)
                snprintf(diag.file, sizeof diag.file, "%s", a.topology);
            sim_diag_print(&diag, stderr);
            rc = CLI_EXIT_INVALID;
        } else if (a.gpus > hw_topo_gpu_count(topo)) {
            char msg[160];
            snprintf(msg, sizeof msg, "asks for %d GPUs but topology '%s' has %d", a.gpus,
                     spec->name, hw_topo_gpu_count(topo));
            rc = cli_invalid("--gpus", msg, NULL, "add nodes with --set nodes=N");
        }
    }
    if (rc == 0) {
        gpu = sim_calloc((size_t)a.gpus, sizeof *gpu);
        node = sim_calloc((size_t)a.gpus, sizeof *node);
        for (int i = 0; i < a.gpus; i++) {
            gpu[i] = i;
            node[i] = hw_topo_device(topo, hw_topo_gpu_device(topo, i))->node;
        }
        int sw = spec->intra.sharp ? hw_topo_common_nvswitch(topo, gpu, a.gpus) : -1;
        coll_group g = {.n = a.gpus, .node = node, .nvls = sw >= 0};
        coll_target t = {.topo = topo, .protocols = &spec->protocols, .group = &g, .gpu = gpu,
                         .switch_dev = sw};
        if (a.op == COLL_SEND_RECV && a.gpus != 2)
            rc = cli_invalid("--gpus", "send_recv runs between 2 GPUs", NULL, NULL);
        if (rc == 0 && !a.json) {
            printf("# stepsim bench-coll: %s on %d GPU(s) of %s (%s), algorithm %s, protocol %s\n",
                   coll_op_name((coll_op)a.op), a.gpus, spec->name, spec->gpu.name,
                   a.algo < 0 ? "auto" : coll_algo_name((coll_algo)a.algo),
                   a.proto < 0 ? "auto" : hw_proto_name((hw_proto)a.proto));
            printf("#\n# %10s %12s %6s %6s %6s %12s %9s %9s  %-12s %s\n", "size", "count", "type",
                   "redop", "root", "time", "algbw", "busbw", "algo", "proto");
            printf("# %10s %12s %6s %6s %6s %12s %9s %9s\n", "(B)", "(elements)", "", "", "",
                   "(us)", "(GB/s)", "(GB/s)");
        }
        coll_schedule s;
        coll_schedule_init(&s);
        for (int64_t bytes = a.min_bytes; rc == 0 && bytes <= a.max_bytes; bytes *= 2) {
            coll_choice ch;
            if (coll_select(&t, (coll_op)a.op, (double)bytes, 0, a.algo, a.proto, &ch, &s) != 0) {
                char msg[160];
                snprintf(msg, sizeof msg, "%s does not implement %s on this group of %d GPU(s)",
                         coll_algo_name((coll_algo)a.algo), coll_op_name((coll_op)a.op), a.gpus);
                rc = cli_invalid("--algo", msg, NULL, "try --algo auto");
                break;
            }
            double time_s = run_one(topo, &t, &s, &ch);
            double algbw = time_s > 0 ? (double)bytes / time_s / 1e9 : 0;
            double busbw = algbw * coll_busbw_factor((coll_op)a.op, a.gpus);
            bool reduces = a.op == COLL_ALL_REDUCE || a.op == COLL_REDUCE_SCATTER || a.op == COLL_REDUCE;
            bool rooted = a.op == COLL_BROADCAST || a.op == COLL_REDUCE;
            if (a.json)
                printf("{\"op\": \"%s\", \"algo\": \"%s\", \"proto\": \"%s\", \"gpus\": %d, "
                       "\"bytes\": %lld, \"time_s\": %.9g, \"algbw_GBps\": %.6g, "
                       "\"busbw_GBps\": %.6g}\n",
                       coll_op_name((coll_op)a.op), coll_algo_name(ch.algo), hw_proto_name(ch.proto),
                       a.gpus, (long long)bytes, time_s, algbw, busbw);
            else
                printf("  %10lld %12lld %6s %6s %6d %12.2f %9.2f %9.2f  %-12s %s\n",
                       (long long)bytes, (long long)(bytes / 4), "float",
                       reduces ? "sum" : "none", rooted ? 0 : -1, time_s * 1e6, algbw, busbw,
                       coll_algo_name(ch.algo), hw_proto_name(ch.proto));
            if (bytes > INT64_MAX / 2)
                break;
        }
        coll_schedule_clear(&s);
    }
    hw_topo_destroy(topo);
    sim_free(spec);
    sim_free(gpu);
    sim_free(node);
    sim_free(a.sets);
    return rc < 0 ? 0 : rc;
}
