/* Results container: ownership of row arrays and interned strings (see results.h). */
#include "core/sim.h"

#include "replay/results.h"

const char *replay_status_name(replay_status s)
{
    switch (s) {
    case REPLAY_STATUS_OK: return "ok";
    case REPLAY_STATUS_OOM: return "oom";
    case REPLAY_STATUS_SKIPPED: return "skipped";
    case REPLAY_STATUS_ERROR: return "error";
    }
    SIM_ASSERT(0, "status %d", (int)s);
}

const char *replay_cause_name(replay_cause c)
{
    static const char *const names[REPLAY_CAUSE_COUNT] = {"pipeline", "dp", "tp", "pp",
                                                          "ep", "cp", "offload", "other"};
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
