/* Pipeline schedules (sim/plan/pipeline.c) in unit time, against the papers' forms: each
 * action lasts 1 (a chunk's forward F, input-gradient pass B, weight pass W; a whole
 * backward 2), transfers are free, an action starts when its stage is free and its input is
 * there. That replay is written here from the dependencies alone (a forward of chunk c needs
 * chunk c-1's forward of the micro-batch; a backward, chunk c+1's backward, or the last
 * chunk's own forward; a W its B), independently of the schedules' code. */
#include "core/sim.h"

#include <string.h>

#include "plan/pipeline.h"
#include "test.h"

/* The unit-time replay of every stage's actions: each stage's idle time (the step minus its
 * work) into idle[s], the most chunk micro-batches any stage holds (a forward adds one; a
 * whole backward, or a W, frees it) into *held. Fails the test on an action run twice, a
 * dependency never met (deadlock) or an action missing. chunk_of(s, vchunk) and stage_of(c)
 * give the placement. */
static void replay_units(plan_schedule sched, int p, int v, int m, const plan_pp_action *all,
                         const int *n, int64_t *idle, int *held)
{
    int C = plan_pp_chunks(sched, p, v);
    size_t cap = (size_t)PLAN_PP_ACTIONS(m, v), cm = (size_t)C * (size_t)m;
    int64_t *f = sim_calloc(cm, sizeof *f), *b = sim_calloc(cm, sizeof *b);
    for (size_t i = 0; i < cm; i++)
        f[i] = b[i] = -1;
    int *pos = sim_calloc((size_t)p, sizeof *pos), *hold = sim_calloc((size_t)p, sizeof *hold);
    int64_t *t = sim_calloc((size_t)p, sizeof *t), *work = sim_calloc((size_t)p, sizeof *work);
    *held = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < p; s++)
            while (pos[s] < n[s]) {
                const plan_pp_action *a = &all[(size_t)s * cap + (size_t)pos[s]];
                int c = plan_pp_chunk_of(sched, p, s, a->vchunk);
                size_t at = (size_t)c * (size_t)m + (size_t)a->mb;
                int64_t ready = 0, dur = 1;
                if (a->fwd) {
                    ready = c > 0 ? f[at - (size_t)m] : 0;
                } else if (a->part == PLAN_PP_WEIGHT) {
                    ready = b[at];
                } else {
                    ready = c < C - 1 ? b[at + (size_t)m] : f[at];
                    dur = a->part == PLAN_PP_FULL ? 2 : 1;
                }
                if (ready < 0)
                    break; /* its input is not there yet */
                int64_t end = SIM_MAX(t[s], ready) + dur;
                if (a->fwd) {
                    CHECK(f[at] < 0);
                    f[at] = end;
                    hold[s]++;
                } else if (a->part != PLAN_PP_WEIGHT) {
                    CHECK(b[at] < 0);
                    b[at] = end;
                    if (a->part == PLAN_PP_FULL)
                        hold[s]--;
                } else {
                    hold[s]--;
                }
                *held = SIM_MAX(*held, hold[s]);
                t[s] = end;
                work[s] += dur;
                pos[s]++;
                moved = true;
            }
    }
    int64_t step = 0;
    for (int s = 0; s < p; s++) {
        CHECK_INT_EQ(pos[s], n[s]); /* no deadlock */
        step = SIM_MAX(step, t[s]);
    }
    for (size_t i = 0; i < cm; i++)
        CHECK(f[i] >= 0 && b[i] >= 0); /* every chunk of every micro-batch ran */
    for (int s = 0; s < p; s++)
        idle[s] = step - work[s];
    sim_free(f);
    sim_free(b);
    sim_free(pos);
    sim_free(hold);
    sim_free(t);
    sim_free(work);
}

/* ZB-V: 2p chunks, stage s holding s and 2p-1-s. With T_F = T_B = T_W every stage idles
 * exactly the p-1 chunk forwards of the fill (stage p-1 cannot start before micro-batch 0
 * has crossed chunks 0..p-2, and each stage does the same 6m units of work, so p-1 is the
 * least any schedule can idle), holding at most 2p chunk micro-batches (1F1B's first stage:
 * p micro-batches of a whole stage, 2p chunks), for p = 2..16 and m = 2p..4p. */
static void test_zbv(void)
{
    for (int p = 2; p <= 16; p++)
        for (int m = 2 * p; m <= 4 * p; m++) {
            size_t cap = (size_t)PLAN_PP_ACTIONS(m, 2);
            plan_pp_action *all = sim_calloc((size_t)p * cap, sizeof *all);
            int *n = sim_calloc((size_t)p, sizeof *n);
            int64_t idle[16];
            int held;
            plan_pp_schedule_all(PLAN_SCHED_ZBV, p, 2, m, all, n);
            for (int s = 0; s < p; s++)
                CHECK_INT_EQ(n[s], 6 * m); /* F, B, W of two chunks per micro-batch */
            replay_units(PLAN_SCHED_ZBV, p, 2, m, all, n, idle, &held);
            for (int s = 0; s < p; s++)
                if (idle[s] != p - 1) {
                    fprintf(stderr, "zbv p=%d m=%d: stage %d idles %lld\n", p, m, s,
                            (long long)idle[s]);
                    CHECK_INT_EQ(idle[s], p - 1);
                }
            CHECK(held <= 2 * p);
            /* the single-stage call returns that stage's part of the same schedule */
            plan_pp_action *one = sim_calloc(cap, sizeof *one);
            int k = plan_pp_schedule(PLAN_SCHED_ZBV, p, 2, m, p - 1, one);
            CHECK(k == n[p - 1] &&
                  memcmp(one, &all[(size_t)(p - 1) * cap], (size_t)k * sizeof *one) == 0);
            sim_free(one);
            sim_free(all);
            sim_free(n);
        }
}

/* 1F1B and ZB-H1 on the same replay (p chunks, one a stage): 1F1B idles (p-1)(F + B + W) =
 * 3(p-1) units, ZB-H1 (p-1)(F + B - W) = p-1 (Qi et al. 2024), both holding at most p. */
static void test_one_chunk(void)
{
    for (int p = 2; p <= 8; p++)
        for (int m = p; m <= 3 * p; m++) {
            size_t cap = (size_t)PLAN_PP_ACTIONS(m, 1);
            plan_pp_action *all = sim_calloc((size_t)p * cap, sizeof *all);
            int n[8], held;
            int64_t idle[8];
            plan_pp_schedule_all(PLAN_SCHED_1F1B, p, 1, m, all, n);
            replay_units(PLAN_SCHED_1F1B, p, 1, m, all, n, idle, &held);
            for (int s = 0; s < p; s++)
                CHECK_INT_EQ(idle[s], 3 * (p - 1));
            CHECK_INT_EQ(held, p);
            plan_pp_schedule_all(PLAN_SCHED_ZB_H1, p, 1, m, all, n);
            replay_units(PLAN_SCHED_ZB_H1, p, 1, m, all, n, idle, &held);
            for (int s = 0; s < p; s++)
                CHECK_INT_EQ(idle[s], p - 1);
            CHECK(held <= p);
            sim_free(all);
        }
}

int main(void)
{
    test_zbv();
    test_one_chunk();
    return test_finish();
}
