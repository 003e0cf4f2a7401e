/* Writes one results file holding several real runs, the way a sweep will (the `sweep`
 * command is a later issue's):
 *
 *     multi_run OUT.h5 SCENARIO.yaml...
 *
 * Each scenario is loaded, planned and replayed with its timeline, and all runs go into
 * OUT.h5 in argument order (their names must differ). Exits 0, or 1 with the error. */
#include "core/sim.h"

#include <stdio.h>

#include "results/h5.h"
#include "input/load.h"
#include "plan/plan.h"
#include "replay/replay.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT.h5 SCENARIO.yaml...\n", argv[0]);
        return 2;
    }
    int n = argc - 2, rc = 0;
    plan_scenario *sc = sim_calloc((size_t)n, sizeof *sc);
    input_scenario_info **info = sim_calloc((size_t)n, sizeof *info);
    plan **p = sim_calloc((size_t)n, sizeof *p);
    replay_results **res = sim_calloc((size_t)n, sizeof *res);
    results_h5_run *runs = sim_calloc((size_t)n, sizeof *runs);
    sim_diag diag = {0};
    for (int i = 0; i < n && !rc; i++) {
        rc = input_scenario_load(argv[i + 2], NULL, 0, &sc[i], &info[i], &diag);
        if (!rc)
            rc = plan_create(&sc[i], &(plan_options){.with_trace = true}, &p[i], &diag);
        if (!rc) {
            res[i] = replay_results_create();
            replay_options opt = {.timeline = true};
            replay_run(p[i], &opt, res[i]);
            runs[i] = (results_h5_run){res[i], info[i]->resolved_yaml};
        }
    }
    if (!rc)
        rc = results_h5_write(argv[1], "multi_run", NULL, 0, runs, (size_t)n, 1, &diag);
    if (rc)
        sim_diag_print(&diag, stderr);
    for (int i = 0; i < n; i++) {
        replay_results_destroy(res[i]);
        plan_destroy(p[i]);
        input_scenario_info_destroy(info[i]);
    }
    sim_free(sc);
    sim_free(info);
    sim_free(p);
    sim_free(res);
    sim_free(runs);
    return rc ? 1 : 0;
}
