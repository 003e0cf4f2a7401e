/* Results container: ownership of row arrays and interned strings (see results.h). */
#include "core/sim.h"

#include <math.h>

#include "replay/results.h"

const char *replay_status_name(replay_status s)
{
    switch (s) {
    case REPLAY_STATUS_OK: return "ok";
    case REPLAY_STATUS_OOM: return "oom";
    case REPLAY_STATUS_SKIPPED: return "skipped";
    case REPLAY_STATUS_ERROR: return "error";
    case REPLAY_STATUS_TIGHT: return "tight";
    case REPLAY_STATUS_COUNT: break;
    }
    SIM_ASSERT(0, "status %d", (int)s);
}

void replay_summary_untimed(replay_summary *s)
{
    s->step_time_s = s->tokens_per_s = s->samples_per_s = s->tflops_per_gpu = NAN;
    s->mfu = s->hfu = s->bubble_fraction = NAN;
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++)
        s->bubble_by_cause[c] = NAN;
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        s->exposed_comm_s[g] = NAN;
    for (int g = 0; g < REPLAY_COMM_COUNT; g++)
        s->comm_bytes_per_gpu[g] = NAN;
    s->moe = false;
    s->moe_dropped_fraction = s->moe_load_max_over_mean = NAN;
    s->variable = false;
    s->slowest_rank = -1;
    s->slowest_compute_s = s->slowest_wait_s = NAN;
    s->budget_tokens = s->budget_steps = s->time_to_train_s = s->gpu_hours = s->cost = NAN;
}

const char *replay_cause_name(replay_cause c)
{
    static const char *const names[REPLAY_CAUSE_COUNT] = {"pipeline", "dp", "tp", "pp",
                                                          "ep", "cp", "offload", "host",
                                                          "other"};
    SIM_ASSERT(c >= 0 && c < REPLAY_CAUSE_COUNT, "cause %d", (int)c);
    return names[c];
}

replay_results *replay_results_create(void)
{
    return sim_calloc(1, sizeof(replay_results));
}

void replay_results_destroy(replay_results *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_strings; i++)
        sim_free(r->strings[i]);
    sim_free(r->strings);
    sim_free(r->ranks);
    sim_free(r->steps);
    sim_free(r->timeline);
    sim_free(r->bubbles);
    sim_free(r->memory);
    sim_free(r->links);
    sim_free(r);
}

const char *replay_results_intern(replay_results *r, const char *s)
{
    SIM_GROW(r->strings, r->cap_strings, r->n_strings + 1);
    char *copy = sim_strdup(s);
    r->strings[r->n_strings++] = copy;
    return copy;
}
