/* Writes the synthetic sample of sample.h for the Python checks (check_outputs.py):
 *
 *     write_sample OUT.h5 OUT.json [N_RUNS] [--no-timeline]
 *
 * OUT.h5 holds N_RUNS runs (default 1; up to 3: ok, oom, skipped), OUT.json one
 * results_json_write_run object per run followed by one results_json_write_mem object. Exits 0 on
 * success, 1 with the diagnostic on stderr otherwise. */
#include "core/sim.h"

#include <stdlib.h>
#include <string.h>

#include "results/h5.h"
#include "results/json.h"
#include "sample.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT.h5 OUT.json [N_RUNS] [--no-timeline]\n", argv[0]);
        return 2;
    }
    size_t n_runs = 1;
    int timeline = 1;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--no-timeline") == 0)
            timeline = 0;
        else
            n_runs = (size_t)strtoul(argv[i], NULL, 10);
    }
    if (n_runs < 1 || n_runs > 3) {
        fprintf(stderr, "%s: N_RUNS must be 1, 2 or 3\n", argv[0]);
        return 2;
    }
    static const replay_status status[] = {REPLAY_STATUS_OK, REPLAY_STATUS_OOM,
                                           REPLAY_STATUS_SKIPPED};
    replay_results *res[3] = {0};
    results_h5_run runs[3];
    for (size_t i = 0; i < n_runs; i++) {
        char name[32];
        snprintf(name, sizeof name, "tiny-%zu", i);
        res[i] = sample_results(n_runs == 1 ? "tiny" : name, status[i]);
        runs[i] = (results_h5_run){res[i], "name: tiny\nparallel: {dp: 2}\n"};
    }
    results_h5_input inputs[] = {{"scenarios/tiny.yaml", "sha256:00ff"}};
    sim_diag diag = {0};
    int rc = results_h5_write(argv[1], "write_sample", inputs, 1, runs, n_runs, timeline, &diag);
    if (rc)
        sim_diag_print(&diag, stderr);

    FILE *j = fopen(argv[2], "w");
    if (!j) {
        perror(argv[2]);
        rc = 1;
    } else {
        for (size_t i = 0; i < n_runs; i++)
            results_json_write_run(j, res[i]);
        results_json_write_mem(j, &res[0]->summary, NULL);
        if (fclose(j) != 0)
            rc = 1;
    }
    for (size_t i = 0; i < n_runs; i++)
        replay_results_destroy(res[i]);
    return rc ? 1 : 0;
}
