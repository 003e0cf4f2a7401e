/* `stepsim topo T.yaml`: describes a topology — devices and links by class, per-GPU
 * injection bandwidth, bisection bandwidth, and routes between named GPUs. */
#include "core/sim.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "hw/topo.h"
#include "input/load.h"

typedef struct topo_args {
    const char *path;
    cli_list sets, routes; /* routes: pairs A B */
    int64_t max_memory;    /* --max-memory; 0 = the default budget */
} topo_args;

static const cli_opt options[] = {
    {.name = "--set", .kind = CLI_OPT_LIST, .metavar = "KEY=VALUE",
     .offset = offsetof(topo_args, sets)},
    {.name = "--route", .kind = CLI_OPT_PAIRS, .metavar = "A B",
     .offset = offsetof(topo_args, routes)},
    {.name = "--max-memory", .kind = CLI_OPT_BYTES, .metavar = "SIZE",
     .offset = offsetof(topo_args, max_memory)},
};
static const cli_arg args[] = {{.name = "TOPOLOGY.yaml", .offset = offsetof(topo_args, path)}};
static const cli_spec topo_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                   .args = args, .n_args = SIM_ARRAY_LEN(args)};

static void print_bw(double bps)
{
    printf("%.4g GB/s", bps / 1e9);
}

static int find_gpu(const hw_topo *t, const char *arg)
{
    char *end;
    long g = strtol(arg, &end, 10);
    if (*arg && *end == '\0')
        return g >= 0 && g < hw_topo_gpu_count(t) ? hw_topo_gpu_device(t, (int)g) : -1;
    return hw_topo_find(t, arg);
}

static void print_route(hw_topo *t, int a, int b)
{
    const hw_route *r = hw_topo_route(t, a, b);
    printf("route %s -> %s: %d link(s), latency %.3g us, alone ", hw_topo_device(t, a)->name,
           hw_topo_device(t, b)->name, r->n, sim_time_to_s(r->latency_ps) * 1e6);
    double bw = hw_topo_route_bw_Bps(t, r);
    print_bw(bw);
    printf("\n  %s", hw_topo_device(t, a)->name);
    int u = a;
    for (int i = 0; i < r->n; i++) {
        const hw_link *l = hw_topo_link(t, r->links[i]);
        u = l->src == u ? l->dst : l->src;
        printf(" -[%s ", hw_link_class_name(l->cls));
        print_bw(l->bw_Bps);
        printf("%s]-> %s", l->half_duplex ? " half-duplex" : "", hw_topo_device(t, u)->name);
    }
    printf("\n");
    if (r->stage_ps > 0) {
        printf("  staged in host memory: a hand-off of %.3g us per ", sim_time_to_s(r->stage_ps) * 1e6);
        if (r->stage_chunk > 0)
            printf("%.4g MB chunk", (double)r->stage_chunk / 1e6);
        else
            printf("copy");
        printf(" (the first in the latency)\n");
    }
}

int cli_topo(const cli_command *cmd, int argc, char **argv)
{
    topo_args a = {0};
    int rc = cli_opts_parse(cmd, &topo_spec, argc, argv, &a);
    hw_topology_spec *spec = sim_calloc(1, sizeof *spec);
    hw_topo *t = NULL;
    if (rc == 0) {
        sim_diag diag = {0};
        if (input_topology_load_budget(a.path, a.sets.v, a.sets.n,
                                       cli_memory_budget(a.max_memory), spec, &diag) != 0 ||
            hw_topo_create(spec, &t, &diag) != 0) {
            if (diag.line == 0 && strcmp(diag.file, "topology") == 0)
                snprintf(diag.file, sizeof diag.file, "%s", a.path);
            sim_diag_print(&diag, stderr);
            rc = CLI_EXIT_INVALID;
        }
    }
    for (size_t i = 0; rc == 0 && i < a.routes.n; i++)
        if (find_gpu(t, a.routes.v[i]) < 0)
            rc = cli_invalid("--route", "no such GPU or device", a.routes.v[i],
                             "name a device (gpu0, n1.nic3) or give a GPU index");
    if (rc == 0) {
        int gpus = hw_topo_gpu_count(t);
        printf("topology %s: %d node(s), %d GPU(s) %s", spec->name, hw_topo_node_count(t), gpus,
               spec->n_groups > 0 ? "in groups:" : spec->gpu.name);
        for (int g = 0; g < spec->n_groups; g++)
            printf("%s %d node(s) of %s", g ? "," : "", spec->groups[g].nodes,
                   spec->groups[g].gpu.name);
        printf("\n");
        int kinds[HW_DEV_KIND_COUNT] = {0};
        for (int i = 0; i < hw_topo_device_count(t); i++)
            kinds[hw_topo_device(t, i)->kind]++;
        printf("devices:");
        for (int k = 0; k < HW_DEV_KIND_COUNT; k++)
            if (kinds[k])
                printf(" %d %s", kinds[k], hw_dev_kind_name((hw_dev_kind)k));
        printf("\nlinks (one per direction; half-duplex links count once):\n");
        for (int c = 0; c < HW_LINK_CLASS_COUNT; c++) {
            int n = 0;
            double lo = 0, hi = 0;
            for (int i = 0; i < hw_topo_link_count(t); i++) {
                const hw_link *l = hw_topo_link(t, i);
                if ((int)l->cls != c)
                    continue;
                lo = n ? SIM_MIN(lo, l->bw_Bps) : l->bw_Bps;
                hi = n ? SIM_MAX(hi, l->bw_Bps) : l->bw_Bps;
                n++;
            }
            if (!n)
                continue;
            printf("  %-8s %6d  ", hw_link_class_name((hw_link_class)c), n);
            print_bw(lo);
            if (hi > lo) {
                printf(" .. ");
                print_bw(hi);
            }
            printf("\n");
        }
        /* injection: what GPU 0 gets alone towards a GPU of its node and of the next node */
        int g0 = hw_topo_gpu_device(t, 0);
        printf("per-GPU injection (GPU 0, alone):");
        for (int g = 1; g < gpus; g++) {
            int d = hw_topo_gpu_device(t, g);
            if (hw_topo_device(t, d)->node == hw_topo_device(t, g0)->node) {
                printf(" intra-node ");
                print_bw(hw_topo_route_bw_Bps(t, hw_topo_route(t, g0, d)));
                break;
            }
        }
        for (int g = 1; g < gpus; g++) {
            int d = hw_topo_gpu_device(t, g);
            if (hw_topo_device(t, d)->node != hw_topo_device(t, g0)->node) {
                printf(", network ");
                print_bw(hw_topo_route_bw_Bps(t, hw_topo_route(t, g0, d)));
                break;
            }
        }
        printf("\nbisection (GPUs 0-%d to %d-%d): ", gpus / 2 - 1, gpus / 2, gpus - 1);
        print_bw(hw_topo_bisection_Bps(t));
        printf("\n");
        for (size_t i = 0; i < a.routes.n; i += 2)
            print_route(t, find_gpu(t, a.routes.v[i]), find_gpu(t, a.routes.v[i + 1]));
    }
    hw_topo_destroy(t);
    sim_free(spec);
    cli_opts_free(&topo_spec, &a);
    return rc == CLI_OPTS_HELP ? 0 : rc;
}
