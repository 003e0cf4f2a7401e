/* `stepsim bench-coll`: one collective at a time on an idle cluster, for doubling sizes,
 * printed in nccl-tests' layout (size, count, type, redop, root, time, algbw, busbw) or as
 * JSON rows (docs/json.md). algbw = size / time; busbw = algbw x nccl-tests' factor. */
#include "core/sim.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "coll/select.h"
#include "input/load.h"
#include "input/units.h"

typedef struct bench_args {
    const char *topology, *op_name, *algo_name, *proto_name, *min_text, *max_text;
    int op, algo, proto, gpus, factor;
    int64_t min_bytes, max_bytes;
    bool json;
    cli_list sets;
} bench_args;

static const cli_opt options[] = {
    {.name = "--topology", .kind = CLI_OPT_STRING, .metavar = "T.yaml", .required = true,
     .offset = offsetof(bench_args, topology)},
    {.name = "--op", .kind = CLI_OPT_STRING, .metavar = "OP", .required = true,
     .offset = offsetof(bench_args, op_name)},
    {.name = "--gpus", .alias = "-g", .kind = CLI_OPT_INT, .metavar = "N", .min = 1,
     .max = 1 << 20, .required = true, .offset = offsetof(bench_args, gpus)},
    {.name = "--algo", .kind = CLI_OPT_STRING, .metavar = "A",
     .offset = offsetof(bench_args, algo_name)},
    {.name = "--proto", .kind = CLI_OPT_STRING, .metavar = "P",
     .offset = offsetof(bench_args, proto_name)},
    {.name = "--min-bytes", .alias = "-b", .kind = CLI_OPT_STRING, .metavar = "B",
     .offset = offsetof(bench_args, min_text)},
    {.name = "--max-bytes", .alias = "-e", .kind = CLI_OPT_STRING, .metavar = "B",
     .offset = offsetof(bench_args, max_text)},
    {.name = "--step-factor", .alias = "-f", .kind = CLI_OPT_INT, .metavar = "F", .min = 2,
     .max = 1 << 20, .offset = offsetof(bench_args, factor)},
    {.name = "--set", .kind = CLI_OPT_LIST, .metavar = "KEY=VALUE",
     .offset = offsetof(bench_args, sets)},
    {.name = "--json", .kind = CLI_OPT_FLAG, .offset = offsetof(bench_args, json)},
};
static const cli_spec bench_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options)};

static void on_done(void *ctx, uint64_t tag, sim_time now)
{
    (void)tag;
    (void)now;
    ++*(int *)ctx;
}

/* A size as nccl-tests writes it (8, 64K, 1M, 1G: K, M, G and T 1024-based) or with
 * stepsim's units (1MiB, 8GB); 0 and false when it is neither. */
static bool size_of(const char *v, int64_t *out)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    static const char suffix[] = "KMGT";
    const char *k = *end && !end[1] ? strchr(suffix, *end) : NULL;
    if (end != v && isdigit((unsigned char)v[0]) && (!*end || k)) {
        int shift = k ? 10 * (int)(k - suffix + 1) : 0;
        if (x > (unsigned long long)(INT64_MAX >> shift))
            return false;
        *out = (int64_t)(x << shift);
        return *out > 0;
    }
    return input_parse_bytes(v, out) == 0 && *out > 0;
}

/* Reads the options, then the names of the operation, algorithm and protocol. */
static int parse(const cli_command *cmd, int argc, char **argv, bench_args *a)
{
    int rc = cli_opts_parse(cmd, &bench_spec, argc, argv, a);
    if (rc)
        return rc;
    const char *sizes[2] = {a->min_text, a->max_text};
    int64_t *dst[2] = {&a->min_bytes, &a->max_bytes};
    for (int i = 0; i < 2; i++)
        if (sizes[i] && !size_of(sizes[i], dst[i]))
            return cli_invalid(i ? "--max-bytes" : "--min-bytes", "expects a positive size "
                               "such as 8, 64K, 1M, 1G (nccl-tests, 1024-based) or 1MiB, got",
                               sizes[i], "see `stepsim bench-coll --help`");
    if ((a->op = coll_op_parse(a->op_name)) < 0)
        return cli_invalid("--op", "unknown operation", a->op_name,
                           "one of: all_reduce, all_gather, reduce_scatter, broadcast, "
                           "reduce, all_to_all, send_recv, ring_shift");
    if (a->algo_name && strcmp(a->algo_name, "auto") != 0 &&
        (a->algo = coll_algo_parse(a->algo_name)) < 0)
        return cli_invalid("--algo", "unknown algorithm", a->algo_name,
                           "one of: auto, ring, tree, hd, direct, pairwise, hierarchical, nvls");
    if (a->proto_name && strcmp(a->proto_name, "auto") != 0) {
        for (int p = 0; p < HW_PROTO_COUNT; p++)
            if (strcmp(a->proto_name, hw_proto_name((hw_proto)p)) == 0)
                a->proto = p;
        if (a->proto < 0)
            return cli_invalid("--proto", "unknown protocol", a->proto_name,
                               "one of: auto, ll, ll128, simple");
    }
    if (a->min_bytes > a->max_bytes)
        return cli_invalid("--min-bytes", "is larger than --max-bytes", NULL,
                           "see `stepsim bench-coll --help`");
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

int cli_bench_coll(const cli_command *cmd, int argc, char **argv)
{
    bench_args a = {.op = -1, .algo = -1, .proto = -1, .min_bytes = 8, .factor = 2,
                    .max_bytes = INT64_C(8) << 30};
    int rc = parse(cmd, argc, argv, &a);
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    hw_topo *topo = NULL;
    int32_t *gpu = NULL, *node = NULL;
    if (rc == 0) {
        sim_diag diag = {0};
        if (input_topology_load_budget(a.topology, a.sets.v, a.sets.n, cli_memory_budget(0),
                                       spec, &diag) != 0 ||
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
        for (int64_t bytes = a.min_bytes; rc == 0 && bytes <= a.max_bytes; bytes *= a.factor) {
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
            bool reduces =
                a.op == COLL_ALL_REDUCE || a.op == COLL_REDUCE_SCATTER || a.op == COLL_REDUCE;
            bool rooted = a.op == COLL_BROADCAST || a.op == COLL_REDUCE;
            if (a.json)
                printf("{\"op\": \"%s\", \"algo\": \"%s\", \"proto\": \"%s\", \"gpus\": %d, "
                       "\"bytes\": %lld, \"time_s\": %.9g, \"algbw_GBps\": %.6g, "
                       "\"busbw_GBps\": %.6g}\n",
                       coll_op_name((coll_op)a.op), coll_algo_name(ch.algo),
                       hw_proto_name(ch.proto), a.gpus, (long long)bytes, time_s, algbw, busbw);
            else
                printf("  %10lld %12lld %6s %6s %6d %12.2f %9.2f %9.2f  %-12s %s\n",
                       (long long)bytes, (long long)(bytes / 4), "float",
                       reduces ? "sum" : "none", rooted ? 0 : -1, time_s * 1e6, algbw, busbw,
                       coll_algo_name(ch.algo), hw_proto_name(ch.proto));
            if (bytes > INT64_MAX / a.factor)
                break;
        }
        coll_schedule_clear(&s);
    }
    hw_topo_destroy(topo);
    sim_free(spec);
    sim_free(gpu);
    sim_free(node);
    cli_opts_free(&bench_spec, &a);
    return rc == CLI_OPTS_HELP ? 0 : rc;
}
