/* trace_validate: what it accepts and the first problem it reports, for ranks that own their
 * ops and for ranks that borrow a template's (trace.h). */
#include "core/sim.h"

#include <string.h>

#include "plan/plan.h"
#include "trace/trace.h"
#include "test.h"

static trace_op dp_op(trace *t, uint32_t coll)
{
    return (trace_op){.kind = TRACE_OP_COLL, .stream = TRACE_STREAM_COMM(PLAN_GROUP_DP),
                      .phase = TRACE_PHASE_COMM, .layer = TRACE_NO_LAYER,
                      .microbatch = TRACE_NO_MICROBATCH, .name = trace_intern(t, "bucket"),
                      .coll = coll, .bytes = 1e6, .duration_ps = TRACE_MEASURED_NONE};
}

/* Four ranks in two data-parallel pairs {0, 1} and {2, 3}, one all-reduce per pair. Rank 0
 * and rank 2 own their op; ranks 1 and 3 borrow rank 0's and join collective `c1` and `c3`. */
static trace *pairs(uint32_t *c_of_pair, bool share)
{
    trace *t = trace_create(4);
    int32_t a[2] = {0, 1}, b[2] = {2, 3};
    uint32_t ga = trace_add_group(t, PLAN_GROUP_DP, 2, a);
    uint32_t gb = trace_add_group(t, PLAN_GROUP_DP, 2, b);
    c_of_pair[0] = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, ga, 1e6, 0);
    c_of_pair[1] = trace_add_coll(t, COLL_ALL_REDUCE, PLAN_COLL_RING, gb, 1e6, 0);
    for (int r = 0; r < 4; r += 2) {
        trace_op op = dp_op(t, c_of_pair[r / 2]);
        trace_add_op(t, r, &op, NULL, 0);
        trace_finish_rank(t, r);
    }
    if (!share) {
        for (int r = 1; r < 4; r += 2) {
            trace_op op = dp_op(t, c_of_pair[r / 2]);
            trace_add_op(t, r, &op, NULL, 0);
            trace_finish_rank(t, r);
        }
    }
    return t;
}

int main(void)
{
    char why[256];
    uint32_t c[2];

    /* 1. Every rank owns its op: valid. */
    {
        trace *t = pairs(c, false);
        CHECK_INT_EQ(trace_validate(t, why, sizeof why), 0);
        CHECK_INT_EQ(why[0], 0);
        trace_destroy(t);
    }

    /* 2. Borrowers joining their own pair's collective: valid, and each collective has its
     *    two member ops. */
    {
        trace *t = pairs(c, true);
        trace_share_rank(t, 1, 0);
        trace_add_rank_coll(t, 1, c[0]);
        trace_share_rank(t, 3, 0);
        trace_add_rank_coll(t, 3, c[1]);
        CHECK_INT_EQ(trace_validate(t, why, sizeof why), 0);
        trace_destroy(t);
    }

    /* 3. A borrower that joins the other pair's collective is not a member of it. */
    {
        trace *t = pairs(c, true);
        trace_share_rank(t, 1, 0);
        trace_add_rank_coll(t, 1, c[1]);
        trace_share_rank(t, 3, 0);
        trace_add_rank_coll(t, 3, c[1]);
        CHECK_INT_EQ(trace_validate(t, why, sizeof why), -1);
        CHECK(strstr(why, "rank 1 op 0 joins collective 1 of a group it is not in") != NULL);
        trace_destroy(t);
    }

    /* 4. A borrower with no collective for its template's collective op. */
    {
        trace *t = pairs(c, true);
        trace_share_rank(t, 1, 0);
        trace_share_rank(t, 3, 0);
        trace_add_rank_coll(t, 3, c[1]);
        CHECK_INT_EQ(trace_validate(t, why, sizeof why), -1);
        CHECK(strstr(why, "rank 1 has 0 collectives, its template rank 0 1") != NULL);
        trace_destroy(t);
    }

    /* 5. A collective that one member never joins: pair {2, 3}'s has one member op. */
    {
        trace *t = pairs(c, true);
        trace_share_rank(t, 1, 0);
        trace_add_rank_coll(t, 1, c[0]);
        CHECK_INT_EQ(trace_validate(t, why, sizeof why), -1);
        CHECK(strstr(why, "collective 1 has 1 member ops for a group of 2") != NULL);
        trace_destroy(t);
    }
    return test_finish();
}
