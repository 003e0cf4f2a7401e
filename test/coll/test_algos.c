/* Collective algorithms as schedules (sim/coll/{tree,hd,alltoall,hierarchical,nvls,ring}.c):
 * round counts, bytes per member and round, who hears from whom, supports(), and the closed
 * forms of coll.h evaluated on an ideal star (derivations above each check).
 *
 * Generic checks stand in for tracking data pieces, which a schedule does not name:
 *   - reach(): a transfer in round r carries everything its source had heard of when round r
 *     started (the switch accumulates what it is sent). For all_reduce, all_gather,
 *     reduce_scatter and all_to_all every member must have heard from all n members at the
 *     end; for broadcast everyone from the root; for reduce the root from everyone. A round
 *     that sent data before it could have arrived breaks this.
 *   - copies_causal(): for copy-only schedules (all_gather, broadcast, and reduce_scatter /
 *     reduce run backwards, and each half of an all_reduce that splits into the two), no
 *     transfer carries more than its source can hold by then.
 *   - exact bytes sent and received by each member, in total and per round, and for small
 *     cases the exact transfers of every round. */
#include "core/sim.h"

#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "test.h"

#define MAXN 64

static const double S = 1048576.0; /* 1 MiB: every piece below is a dyadic fraction or close */
static const double ALPHA = 1e-6;  /* s per round */
static const double BW = 1e11;     /* B/s per port and direction */

/* ---- helpers ------------------------------------------------------------------------------ */

static coll_group group(int n)
{
    return (coll_group){.n = n, .node = NULL, .nvls = false};
}

/* Builds and asserts success. */
static void build(coll_schedule *s, coll_algo a, coll_op op, const coll_group *g, double bytes,
                  int root, int chunks)
{
    int rc = coll_build(s, a, op, g, bytes, root, chunks);
    if (rc != 0)
        fprintf(stderr, "coll_build(%s, %s, n=%d) = %d\n", coll_algo_name(a), coll_op_name(op),
                g->n, rc);
    CHECK_INT_EQ(rc, 0);
}

static size_t round_len(const coll_schedule *s, int r)
{
    return s->round_first[r + 1] - s->round_first[r];
}

/* Bytes member m sends (dir 0) or receives (dir 1) in round r, or in all rounds (r < 0);
 * transfers with the switch count on the member's side. */
static double port_bytes(const coll_schedule *s, int r, int m, int dir)
{
    double sum = 0;
    for (int q = 0; q < s->n_rounds; q++) {
        if (r >= 0 && q != r)
            continue;
        for (size_t i = s->round_first[q]; i < s->round_first[q + 1]; i++) {
            const coll_xfer *x = &s->xfers[i];
            if ((dir == 0 ? x->src : x->dst) == m)
                sum += x->bytes;
        }
    }
    return sum;
}

static double sent(const coll_schedule *s, int m)
{
    return port_bytes(s, -1, m, 0);
}

static double received(const coll_schedule *s, int m)
{
    return port_bytes(s, -1, m, 1);
}

static double total_bytes(const coll_schedule *s)
{
    double sum = 0;
    for (size_t i = 0; i < s->n_xfers; i++)
        sum += s->xfers[i].bytes;
    return sum;
}

/* Ideal time on a uniform full-duplex star: every member has one port of `bw` bytes/s in each
 * direction and nothing else is shared; a round lasts α plus its busiest port direction's bytes
 * over bw (max over members of max(sent, received) that round). Switch transfers count on the
 * member's side only (the switch is never the bottleneck). */
static double ideal_star(const coll_schedule *s, int n, double alpha, double bw)
{
    double t = 0;
    for (int r = 0; r < s->n_rounds; r++) {
        double busiest = 0;
        for (int m = 0; m < n; m++) {
            busiest = SIM_MAX(busiest, port_bytes(s, r, m, 0));
            busiest = SIM_MAX(busiest, port_bytes(s, r, m, 1));
        }
        t += alpha + busiest / bw;
    }
    return t;
}

/* Largest bytes any member moves in one direction in one round. */
static double max_round_port(const coll_schedule *s, int n)
{
    double busiest = 0;
    for (int r = 0; r < s->n_rounds; r++)
        for (int m = 0; m < n; m++)
            for (int dir = 0; dir < 2; dir++)
                busiest = SIM_MAX(busiest, port_bytes(s, r, m, dir));
    return busiest;
}

/* heard[m]: bit j set when member j's input can have reached member m (see the top). */
static void reach(const coll_schedule *s, int n, uint64_t *heard)
{
    uint64_t now[MAXN], next[MAXN], sw = 0, sw_next;
    for (int m = 0; m < n; m++)
        now[m] = 1ull << m;
    for (int r = 0; r < s->n_rounds; r++) {
        memcpy(next, now, sizeof(uint64_t) * (size_t)n);
        sw_next = sw;
        for (size_t i = s->round_first[r]; i < s->round_first[r + 1]; i++) {
            const coll_xfer *x = &s->xfers[i];
            uint64_t carried = x->src == COLL_SWITCH ? sw : now[x->src];
            if (x->dst == COLL_SWITCH)
                sw_next |= carried;
            else
                next[x->dst] |= carried;
        }
        memcpy(now, next, sizeof(uint64_t) * (size_t)n);
        sw = sw_next;
    }
    memcpy(heard, now, sizeof(uint64_t) * (size_t)n);
}

static uint64_t all_of(int n)
{
    return n == 64 ? ~0ull : (1ull << n) - 1;
}

/* Every member heard from every member. */
static bool everyone_hears_everyone(const coll_schedule *s, int n)
{
    uint64_t heard[MAXN];
    reach(s, n, heard);
    for (int m = 0; m < n; m++)
        if (heard[m] != all_of(n))
            return false;
    return true;
}

/* A byte-level check for copy-only schedules: held[m] counts the bytes of the output member m
 * holds (optimistically: everything it receives is new, capped at S). Every transfer must
 * carry no more than its source held when the round started, and at the end every member
 * must hold S. `held` starts as given. With `reversed`, rounds run last to first with every
 * transfer turned around: a reduce reversed is a broadcast from the root, a reduce_scatter
 * reversed an all_gather (whose pieces start at S/n). Sending data before it can have
 * arrived, or forwarding big pieces before the small ones are gathered, fails it. */
static bool copies_causal(const coll_schedule *s, int n, const double *start, bool reversed,
                          double bytes)
{
    double held[MAXN], next[MAXN];
    memcpy(held, start, sizeof(double) * (size_t)n);
    for (int q = 0; q < s->n_rounds; q++) {
        int r = reversed ? s->n_rounds - 1 - q : q;
        memcpy(next, held, sizeof(double) * (size_t)n);
        for (size_t i = s->round_first[r]; i < s->round_first[r + 1]; i++) {
            const coll_xfer *x = &s->xfers[i];
            int src = reversed ? x->dst : x->src, dst = reversed ? x->src : x->dst;
            if (x->bytes > held[src] * (1 + 1e-12))
                return false;
            next[dst] = SIM_MIN(bytes, next[dst] + x->bytes);
        }
        memcpy(held, next, sizeof(double) * (size_t)n);
    }
    for (int m = 0; m < n; m++)
        if (held[m] < bytes * (1 - 1e-12))
            return false;
    return true;
}

/* copies_causal() for an all_gather (reversed: a reduce_scatter) of S over n members. */
static bool gather_causal(const coll_schedule *s, int n, bool reversed)
{
    double start[MAXN] = {0}; /* members n.. are never read (GCC cannot see that) */
    for (int m = 0; m < n; m++)
        start[m] = S / n;
    return copies_causal(s, n, start, reversed, S);
}

/* copies_causal() for a broadcast (reversed: a reduce) of S from `root`. */
static bool bcast_causal(const coll_schedule *s, int n, int root, bool reversed)
{
    double start[MAXN] = {0};
    start[root] = S;
    return copies_causal(s, n, start, reversed, S);
}

/* Structure every schedule must have: endpoints in range (the switch only where allowed), no
 * self transfers, positive bytes, no empty round. */
static bool well_formed(const coll_schedule *s, int n, bool switch_ok)
{
    if (s->n_rounds > 0 && s->round_first[0] != 0)
        return false;
    for (int r = 0; r < s->n_rounds; r++)
        if (round_len(s, r) == 0)
            return false;
    for (size_t i = 0; i < s->n_xfers; i++) {
        const coll_xfer *x = &s->xfers[i];
        bool src_ok = (x->src >= 0 && x->src < n) || (switch_ok && x->src == COLL_SWITCH);
        bool dst_ok = (x->dst >= 0 && x->dst < n) || (switch_ok && x->dst == COLL_SWITCH);
        if (!src_ok || !dst_ok || x->src == x->dst || !(x->bytes > 0))
            return false;
    }
    return true;
}

/* Number of transfers src -> dst of `bytes` (relative 1e-12) in round r. */
static int count_xfer(const coll_schedule *s, int r, int src, int dst, double bytes)
{
    int c = 0;
    for (size_t i = s->round_first[r]; i < s->round_first[r + 1]; i++) {
        const coll_xfer *x = &s->xfers[i];
        if (x->src == src && x->dst == dst && fabs(x->bytes - bytes) <= 1e-12 * bytes)
            c++;
    }
    return c;
}

/* Rounds [first, first + count) of s as a schedule of their own (shares s's arrays). */
static coll_schedule rounds_of(const coll_schedule *s, int first, int count)
{
    coll_schedule v = *s;
    v.n_rounds = count;
    v.round_first = s->round_first + first;
    return v;
}

/* An all_reduce whose first `rs` rounds are a reduce_scatter and the rest an all_gather. */
static bool rs_then_ag_causal(const coll_schedule *s, int n, int rs)
{
    coll_schedule a = rounds_of(s, 0, rs), b = rounds_of(s, rs, s->n_rounds - rs);
    return gather_causal(&a, n, true) && gather_causal(&b, n, false);
}

/* ceil(log2 n) */
static int clog2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* ---- supports() --------------------------------------------------------------------------- */

static void test_supports(void)
{
    coll_group g8 = group(8), g6 = group(6), g3 = group(3);

    /* tree: all_reduce, broadcast, reduce on any n */
    CHECK(coll_algo_get(COLL_ALGO_TREE)->supports(COLL_ALL_REDUCE, &g6));
    CHECK(coll_algo_get(COLL_ALGO_TREE)->supports(COLL_BROADCAST, &g3));
    CHECK(coll_algo_get(COLL_ALGO_TREE)->supports(COLL_REDUCE, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_TREE)->supports(COLL_ALL_GATHER, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_TREE)->supports(COLL_REDUCE_SCATTER, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_TREE)->supports(COLL_ALL_TO_ALL, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_TREE)->supports(COLL_SEND_RECV, &g8));
    /* ring_shift is a ring operation only */
    CHECK(coll_algo_get(COLL_ALGO_RING)->supports(COLL_RING_SHIFT, &g6));
    CHECK(!coll_algo_get(COLL_ALGO_TREE)->supports(COLL_RING_SHIFT, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_HD)->supports(COLL_RING_SHIFT, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_DIRECT)->supports(COLL_RING_SHIFT, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_HIERARCHICAL)->supports(COLL_RING_SHIFT, &g8));

    /* hd: all_reduce on any n; all_gather / reduce_scatter on powers of two only */
    CHECK(coll_algo_get(COLL_ALGO_HD)->supports(COLL_ALL_REDUCE, &g6));
    CHECK(coll_algo_get(COLL_ALGO_HD)->supports(COLL_ALL_REDUCE, &g3));
    CHECK(coll_algo_get(COLL_ALGO_HD)->supports(COLL_ALL_GATHER, &g8));
    CHECK(coll_algo_get(COLL_ALGO_HD)->supports(COLL_REDUCE_SCATTER, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_HD)->supports(COLL_ALL_GATHER, &g6));
    CHECK(!coll_algo_get(COLL_ALGO_HD)->supports(COLL_REDUCE_SCATTER, &g3));
    CHECK(!coll_algo_get(COLL_ALGO_HD)->supports(COLL_BROADCAST, &g8));
    CHECK(!coll_algo_get(COLL_ALGO_HD)->supports(COLL_ALL_TO_ALL, &g8));

    /* direct / pairwise: all_to_all only */
    for (int a = COLL_ALGO_DIRECT; a <= COLL_ALGO_PAIRWISE; a++) {
        CHECK(coll_algo_get((coll_algo)a)->supports(COLL_ALL_TO_ALL, &g6));
        CHECK(!coll_algo_get((coll_algo)a)->supports(COLL_ALL_REDUCE, &g6));
        CHECK(!coll_algo_get((coll_algo)a)->supports(COLL_ALL_GATHER, &g6));
    }

    /* hierarchical: >= 2 nodes with equal member counts, node ids in any order */
    const coll_algo_ops *h = coll_algo_get(COLL_ALGO_HIERARCHICAL);
    int32_t two_by_four[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    int32_t interleaved[8] = {7, 3, 7, 3, 7, 3, 7, 3};
    int32_t uneven[8] = {0, 0, 0, 1, 1, 1, 1, 1};
    int32_t one_node[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    coll_group hg = {.n = 8, .node = two_by_four};
    CHECK(h->supports(COLL_ALL_REDUCE, &hg));
    CHECK(h->supports(COLL_ALL_GATHER, &hg));
    CHECK(h->supports(COLL_REDUCE_SCATTER, &hg));
    CHECK(!h->supports(COLL_BROADCAST, &hg));
    CHECK(!h->supports(COLL_ALL_TO_ALL, &hg));
    hg.node = interleaved;
    CHECK(h->supports(COLL_ALL_REDUCE, &hg));
    hg.node = uneven;
    CHECK(!h->supports(COLL_ALL_REDUCE, &hg));
    hg.node = one_node;
    CHECK(!h->supports(COLL_ALL_REDUCE, &hg));
    hg.node = NULL;
    CHECK(!h->supports(COLL_ALL_REDUCE, &hg));

    /* nvls: all_reduce on an NVLS-capable group only */
    const coll_algo_ops *v = coll_algo_get(COLL_ALGO_NVLS);
    coll_group ng = {.n = 8, .nvls = true};
    CHECK(v->supports(COLL_ALL_REDUCE, &ng));
    CHECK(!v->supports(COLL_ALL_GATHER, &ng));
    CHECK(!v->supports(COLL_REDUCE_SCATTER, &ng));
    CHECK(!v->supports(COLL_ALL_REDUCE, &g8));

    /* coll_build reports the unsupported case and leaves an empty schedule */
    coll_schedule s;
    coll_schedule_init(&s);
    CHECK_INT_EQ(coll_build(&s, COLL_ALGO_HD, COLL_ALL_GATHER, &g6, S, 0, 1), SIM_ENOTSUP);
    CHECK_INT_EQ(coll_build(&s, COLL_ALGO_NVLS, COLL_ALL_REDUCE, &g8, S, 0, 1), SIM_ENOTSUP);
    CHECK_INT_EQ(s.n_rounds, 0);
    coll_schedule_clear(&s);

    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_TREE), "tree");
    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_HD), "hd");
    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_DIRECT), "direct");
    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_PAIRWISE), "pairwise");
    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_HIERARCHICAL), "hierarchical");
    CHECK_STR_EQ(coll_algo_name(COLL_ALGO_NVLS), "nvls");
}

/* ---- ring (the lead's file; the closed forms) -------------------------------------- */

static void test_ring_closed_forms(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    for (int n = 3; n <= 16; n++) {
        coll_group g = group(n);
        /* all_reduce: 2(n-1) rounds, each member sends and receives S/n per round, so each
         * round lasts α + S/(nB): T = 2(n-1)·α + 2(n-1)/n·S/B */
        build(&s, COLL_ALGO_RING, COLL_ALL_REDUCE, &g, S, 0, 1);
        CHECK_INT_EQ(s.n_rounds, 2 * (n - 1));
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), 2 * (n - 1) * ALPHA + 2.0 * (n - 1) / n * S / BW,
                   1e-12, 0);
        CHECK(everyone_hears_everyone(&s, n));
        CHECK(rs_then_ag_causal(&s, n, n - 1));
        /* all_gather: n-1 rounds of S/n: T = (n-1)·α + (n-1)/n·S/B */
        build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g, S, 0, 1);
        CHECK_INT_EQ(s.n_rounds, n - 1);
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), (n - 1) * ALPHA + (double)(n - 1) / n * S / BW,
                   1e-12, 0);
        CHECK(everyone_hears_everyone(&s, n));
        CHECK(gather_causal(&s, n, false));
        build(&s, COLL_ALGO_RING, COLL_REDUCE_SCATTER, &g, S, 0, 1);
        CHECK(gather_causal(&s, n, true));
        /* ring_shift (one ring-attention step): one round, every member sends S to its
         * successor: T = α + S/B, and each member's payload is S */
        build(&s, COLL_ALGO_RING, COLL_RING_SHIFT, &g, S, 0, 1);
        CHECK_INT_EQ(s.n_rounds, 1);
        CHECK_INT_EQ((long long)s.n_xfers, n);
        for (size_t i = 0; i < s.n_xfers; i++)
            CHECK_INT_EQ(s.xfers[i].dst, (s.xfers[i].src + 1) % n);
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), ALPHA + S / BW, 1e-12, 0);
        CHECK_NEAR(coll_schedule_bytes_sent(&s, n - 1), S, 0, 0);
    }
    coll_schedule_clear(&s);
}

/* ---- tree ----------------------------------------------------------------------------------- */

/* n = 4. Tree A (NCCL btree): 0 -> 2 -> {1, 3}; heights 1,3: 0, 2: 1, 0: 2; depths 0: 0, 2: 1,
 * 1,3: 2. Tree B mirrors A (member i of B sits where 3-i sits in A): 3 -> 1 -> {2, 0}.
 * A member interior in one tree is a leaf in the other (A interior {0, 2}, B {3, 1}). */
static void test_tree_n4(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    coll_group g = group(4);
    double h = S / 2; /* each tree's share at C = 1 */

    /* C = 1, all_reduce: 2H + C - 1 = 4 rounds.
     *   round 0: reduce up from the leaves:  A 1->2, 3->2;  B 2->1, 0->1
     *   round 1: up from height 1:            A 2->0;        B 1->3
     *   round 2: the roots send down:         A 0->2;        B 3->1
     *   round 3: depth 1 sends down:          A 2->1, 2->3;  B 1->2, 1->0 */
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK_INT_EQ(round_len(&s, 0), 4);
    CHECK_INT_EQ(count_xfer(&s, 0, 1, 2, h) + count_xfer(&s, 0, 3, 2, h), 2);
    CHECK_INT_EQ(count_xfer(&s, 0, 2, 1, h) + count_xfer(&s, 0, 0, 1, h), 2);
    CHECK_INT_EQ(round_len(&s, 1), 2);
    CHECK_INT_EQ(count_xfer(&s, 1, 2, 0, h) + count_xfer(&s, 1, 1, 3, h), 2);
    CHECK_INT_EQ(round_len(&s, 2), 2);
    CHECK_INT_EQ(count_xfer(&s, 2, 0, 2, h) + count_xfer(&s, 2, 3, 1, h), 2);
    CHECK_INT_EQ(round_len(&s, 3), 4);
    CHECK_INT_EQ(count_xfer(&s, 3, 2, 1, h) + count_xfer(&s, 3, 2, 3, h), 2);
    CHECK_INT_EQ(count_xfer(&s, 3, 1, 2, h) + count_xfer(&s, 3, 1, 0, h), 2);
    /* members 2 and 1 receive from both children in round 0: S = 2 x S/2 on one ingress */
    CHECK_NEAR(port_bytes(&s, 0, 2, 1), S, 1e-12, 0);
    /* ideal star: rounds' busiest ports S, S/2, S/2, S: T = 4α + 3S/B */
    CHECK_NEAR(ideal_star(&s, 4, ALPHA, BW), 4 * ALPHA + 3 * S / BW, 1e-12, 0);
    /* per member: 0 and 3 touch one edge per tree (S/2 each way per edge): S; 1 and 2 touch
     * three in their interior tree and one in the other: 2S */
    CHECK_NEAR(sent(&s, 0), S, 1e-12, 0);
    CHECK_NEAR(sent(&s, 3), S, 1e-12, 0);
    CHECK_NEAR(sent(&s, 1), 2 * S, 1e-12, 0);
    CHECK_NEAR(received(&s, 2), 2 * S, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 4));

    /* C = 4, all_reduce: 2·2 + 4 - 1 = 7 rounds of chunks u = S/8. Member m sends chunk c up in
     * round height(m) + c; parent p sends chunk c down in round H + depth(p) + c = 2 + depth + c.
     * A: 1->2, 3->2 in rounds 0..3; 2->0 in 1..4; 0->2 in 2..5; 2->1, 2->3 in 3..6; B likewise
     * with 0<->3, 1<->2 swapped. Busiest port per round, in chunks:
     *   r0: 2 and 1 receive 2                                         -> 2
     *   r1: 1 sends 1->2, 1->3; 2 sends 2->0, 2->1; 2 receives from 1, 3 -> 2
     *   r2: 2 receives from 1, 3 (up) and 0 (down)                    -> 3
     *   r3: 2 sends 2->0, 2->1, 2->3 (A) and 2->1 (B); receives 1, 3, 0, 1 -> 4
     *   r4: 2 sends 2->0, 2->1, 2->3                                   -> 3
     *   r5: 2 sends 2->1, 2->3                                         -> 2
     *   r6: 2 sends 2->1, 2->3                                         -> 2
     * 18 chunks of S/8: T = 7α + 2.25·S/B (against 4α + 3S/B unpipelined). */
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, S, 0, 4);
    CHECK_INT_EQ(s.n_rounds, 7);
    for (int r = 0; r < 7; r++) {
        double u = S / 8;
        int up_leaves = r <= 3, up_mid = r >= 1 && r <= 4, down_root = r >= 2 && r <= 5,
            down_mid = r >= 3;
        /* tree A: 1->2, 3->2 up from the leaves; 2->0 up; 0->2 down; 2->1, 2->3 down */
        CHECK_INT_EQ(count_xfer(&s, r, 3, 2, u), up_leaves);
        CHECK_INT_EQ(count_xfer(&s, r, 2, 0, u), up_mid);
        CHECK_INT_EQ(count_xfer(&s, r, 0, 2, u), down_root);
        CHECK_INT_EQ(count_xfer(&s, r, 2, 3, u), down_mid);
        /* tree B (0 <-> 3, 1 <-> 2): 2->1, 0->1 up; 1->3 up; 3->1 down; 1->2, 1->0 down */
        CHECK_INT_EQ(count_xfer(&s, r, 0, 1, u), up_leaves);
        CHECK_INT_EQ(count_xfer(&s, r, 1, 3, u), up_mid);
        CHECK_INT_EQ(count_xfer(&s, r, 3, 1, u), down_root);
        CHECK_INT_EQ(count_xfer(&s, r, 1, 0, u), down_mid);
        /* 1 -> 2 is A's reduce edge and B's broadcast edge, 2 -> 1 the reverse */
        CHECK_INT_EQ(count_xfer(&s, r, 1, 2, u), up_leaves + down_mid);
        CHECK_INT_EQ(count_xfer(&s, r, 2, 1, u), up_leaves + down_mid);
        CHECK_INT_EQ(round_len(&s, r),
                     4 * up_leaves + 2 * up_mid + 2 * down_root + 4 * down_mid);
    }
    CHECK_NEAR(ideal_star(&s, 4, ALPHA, BW), 7 * ALPHA + 2.25 * S / BW, 1e-12, 0);
    CHECK_NEAR(port_bytes(&s, 3, 2, 0), 4 * S / 8, 1e-12, 0);
    CHECK_NEAR(port_bytes(&s, 3, 2, 1), 4 * S / 8, 1e-12, 0);
    /* chunking does not change the totals */
    CHECK_NEAR(sent(&s, 0), S, 1e-12, 0);
    CHECK_NEAR(sent(&s, 2), 2 * S, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 4));
    coll_schedule_clear(&s);
}

static void test_tree_shapes(void)
{
    coll_schedule s;
    coll_schedule_init(&s);

    /* n = 8 (mirror). A: 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}; B: 7 -> 3 -> {5, 1},
     * 5 -> {6, 4}, 1 -> {2, 0}. Edges carry S/2 each way; members 1..6 have three edges in their
     * interior tree and one in the other (2S), the roots 0 and 7 one in each (S). */
    coll_group g8 = group(8);
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g8, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    for (int m = 0; m < 8; m++) {
        double want = (m == 0 || m == 7) ? S : 2 * S;
        CHECK_NEAR(sent(&s, m), want, 1e-12, 0);
        CHECK_NEAR(received(&s, m), want, 1e-12, 0);
    }

    /* n = 5 (shift). A: 0 -> 4 -> 2 -> {1, 3} (4's parent (4^4)|8 = 8 >= 5, so 0).
     * B: member i sits where i-1 sits in A: 1 -> 0 -> 3 -> {2, 4}. Member 0 is interior in both
     * (unavoidable for odd n, see tree.c). Edges per member (A + B): 0: 1+2, 1: 1+1, 2: 3+1,
     * 3: 1+3, 4: 2+1, times S/2: 1.5S, S, 2S, 2S, 1.5S. H = 3: 6 rounds at C = 1, 9 at C = 4. */
    coll_group g5 = group(5);
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g5, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    const double want5[5] = {1.5 * S, S, 2 * S, 2 * S, 1.5 * S};
    for (int m = 0; m < 5; m++) {
        CHECK_NEAR(sent(&s, m), want5[m], 1e-12, 0);
        CHECK_NEAR(received(&s, m), want5[m], 1e-12, 0);
    }
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g5, S, 0, 4);
    CHECK_INT_EQ(s.n_rounds, 9);

    /* Invariants for n in {2, 3, 5, 6, 8, 16, 32} and C in {1, 4}:
     *   rounds = 2·ceil(log2 n) + C - 1 (H = ceil(log2 n) for NCCL's tree);
     *   two trees of n-1 edges, S/2 each way per edge: 2(n-1)·S in all;
     *   each member sends what it receives (an edge carries S/2 each way);
     *   no port moves more than 4 chunks of S/(2C) each way per round (tree.c's bound);
     *   everyone hears from everyone. */
    const int ns[] = {2, 3, 5, 6, 8, 16, 32};
    for (size_t i = 0; i < SIM_ARRAY_LEN(ns); i++) {
        int n = ns[i];
        coll_group g = group(n);
        for (int chunks = 1; chunks <= 4; chunks += 3) {
            build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, S, 0, chunks);
            CHECK(well_formed(&s, n, false));
            CHECK_INT_EQ(s.n_rounds, 2 * clog2(n) + chunks - 1);
            CHECK_NEAR(total_bytes(&s), 2.0 * (n - 1) * S, 1e-12, 0);
            for (int m = 0; m < n; m++)
                CHECK_NEAR(sent(&s, m), received(&s, m), 1e-12, 0);
            CHECK(max_round_port(&s, n) <= 4 * S / (2.0 * chunks) * (1 + 1e-12));
            CHECK(everyone_hears_everyone(&s, n));
        }
    }

    /* Latency grows with log2(n): at C = 1 the rounds for n = 4, 8, 16, 32 are 2·log2(n) =
     * 4, 6, 8, 10 (the ring needs 2(n-1) = 6, 14, 30, 62), and with S tiny the ideal time is
     * that many α. */
    for (int k = 2, want = 4; k <= 5; k++, want += 2) {
        coll_group g = group(1 << k);
        build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, 8, 0, 1);
        CHECK_INT_EQ(s.n_rounds, want);
        CHECK_NEAR(ideal_star(&s, 1 << k, ALPHA, 1e30), want * ALPHA, 1e-12, 0);
    }
    coll_schedule_clear(&s);
}

/* NCCL's all_reduce trees on nodes holding several members (tree.c, "Nodes"): on nodes of L
 * members each, L channels of two trees each; channel k chains every node's members from
 * local k and joins the nodes' local k by the double binary tree over nodes. On uneven nodes
 * one channel, each node's first member the head. */
static void test_tree_nodes(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    double q = S / 4; /* each of the 2 x 2 trees' share at C = 1 */

    /* n = 4 on two nodes: members 0, 1 on node 7 and 2, 3 on node 3 (node ids are labels:
     * positions follow the first members, node 7 is position 0). Over N = 2 nodes, A is
     * position 1 -> 0 ((1^1)|2 = 2 >= 2, so 0) and B mirrors it, 0 -> 1. Channel 0 chains
     * 1 -> 0 and 3 -> 2, channel 1 0 -> 1 and 2 -> 3:
     *   A0: 1->0, 2->0, 3->2 (root 0)   B0: 1->0, 0->2, 3->2 (root 2)
     *   A1: 0->1, 3->1, 2->3 (root 1)   B1: 0->1, 1->3, 2->3 (root 3)
     * H = 2 in all four: 2H + C - 1 = 4 rounds at C = 1. Up in round height(m), down from
     * round H + depth(parent); the same member pair's pieces in a round merge:
     *   round 0: 1->0, 3->2, 0->1, 2->3, each two pieces (A and B of one channel): S/2
     *   round 1: A0 2->0, B0 0->2, A1 3->1, B1 1->3
     *   round 2: A0 0->1, 0->2; B0 2->0, 2->3; A1 1->0, 1->3; B1 3->1, 3->2
     *   round 3: A0 2->3, B0 0->1, A1 3->2, B1 1->0
     * Across nodes only 0 <-> 2 (channel 0, local 0) and 1 <-> 3 (channel 1, local 1): each
     * channel keeps to its own GPUs' NICs. Ideal star: busiest ports S/2, S/4, S/2 (0 sends
     * to 1 and 2), S/4: T = 4α + 1.5S/B, half of one channel's 3S/B (both of a node's GPUs
     * now cross). */
    int32_t nodes2[4] = {7, 7, 3, 3};
    coll_group g = {.n = 4, .node = nodes2};
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK_INT_EQ(round_len(&s, 0), 4);
    CHECK_INT_EQ(count_xfer(&s, 0, 1, 0, 2 * q) + count_xfer(&s, 0, 3, 2, 2 * q) +
                 count_xfer(&s, 0, 0, 1, 2 * q) + count_xfer(&s, 0, 2, 3, 2 * q), 4);
    CHECK_INT_EQ(round_len(&s, 1), 4);
    CHECK_INT_EQ(count_xfer(&s, 1, 2, 0, q) + count_xfer(&s, 1, 0, 2, q) +
                 count_xfer(&s, 1, 3, 1, q) + count_xfer(&s, 1, 1, 3, q), 4);
    CHECK_INT_EQ(round_len(&s, 2), 8);
    CHECK_INT_EQ(count_xfer(&s, 2, 0, 1, q) + count_xfer(&s, 2, 0, 2, q) +
                 count_xfer(&s, 2, 2, 0, q) + count_xfer(&s, 2, 2, 3, q) +
                 count_xfer(&s, 2, 1, 0, q) + count_xfer(&s, 2, 1, 3, q) +
                 count_xfer(&s, 2, 3, 1, q) + count_xfer(&s, 2, 3, 2, q), 8);
    CHECK_INT_EQ(round_len(&s, 3), 4);
    CHECK_INT_EQ(count_xfer(&s, 3, 2, 3, q) + count_xfer(&s, 3, 0, 1, q) +
                 count_xfer(&s, 3, 3, 2, q) + count_xfer(&s, 3, 1, 0, q), 4);
    CHECK_NEAR(ideal_star(&s, 4, ALPHA, BW), 4 * ALPHA + 1.5 * S / BW, 1e-12, 0);
    CHECK(well_formed(&s, 4, false));
    CHECK(everyone_hears_everyone(&s, 4));

    /* One node of n members: one channel, both trees the chain 0 <- 1 <- ... <- n-1
     * (H = n-1), so 2(n-1) + C - 1 rounds (NCCL's tuning model counts 2(nRanks/nNodes - 1)
     * intra-node steps); each chain edge carries both trees' S/2 each way: S per edge and
     * direction, (n-1)·S each way in all, the ends moving S and the middle members 2S. At
     * C = 1 on 8 members, 14 rounds, as many as the ring's 2(n-1). */
    int32_t one[8] = {0};
    for (int chunks = 1; chunks <= 4; chunks += 3) {
        coll_group g8 = {.n = 8, .node = one};
        build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g8, S, 0, chunks);
        CHECK_INT_EQ(s.n_rounds, 2 * 7 + chunks - 1);
        CHECK_NEAR(total_bytes(&s), 2.0 * 7 * S, 1e-12, 0);
        for (int m = 0; m < 8; m++) {
            double want = (m == 0 || m == 7) ? S : 2 * S;
            CHECK_NEAR(sent(&s, m), want, 1e-12, 0);
            CHECK_NEAR(received(&s, m), want, 1e-12, 0);
        }
        for (size_t i = 0; i < s.n_xfers; i++) /* only chain edges */
            CHECK(abs(s.xfers[i].src - s.xfers[i].dst) == 1);
        CHECK(everyone_hears_everyone(&s, 8));
    }

    /* 16 members on 4 nodes of 4, interleaved (member m on node m % 4, local index m / 4):
     * 4 channels of two trees. A transfer stays on its node between neighbouring locals, or
     * joins two nodes' members of the same local index (a channel's heads). Heights: a head
     * has its chain of 3 below it, and A's node tree over 4 positions (0 <- 2 <- {1, 3})
     * adds two levels (position 1: 3; 2: max(3, 1 + 3) = 4; 0: 1 + 4 = 5), B's likewise: H =
     * 5, at C = 1 2H = 10 rounds. Each of the 8 trees has n - 1 = 15 edges carrying S/8
     * each way: 2·15·S in all. */
    int32_t inter[16];
    for (int m = 0; m < 16; m++)
        inter[m] = m % 4;
    coll_group g16 = {.n = 16, .node = inter};
    for (int chunks = 1; chunks <= 4; chunks += 3) {
        build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g16, S, 0, chunks);
        CHECK_INT_EQ(s.n_rounds, 10 + chunks - 1);
        CHECK_NEAR(total_bytes(&s), 2.0 * 15 * S, 1e-12, 0);
        for (size_t i = 0; i < s.n_xfers; i++) {
            const coll_xfer *x = &s.xfers[i];
            int ls = x->src / 4, ld = x->dst / 4;
            CHECK((x->src % 4 == x->dst % 4 && (abs(ls - ld) == 1 || abs(ls - ld) == 3)) ||
                  (x->src % 4 != x->dst % 4 && ls == ld));
        }
        CHECK(well_formed(&s, 16, false));
        CHECK(everyone_hears_everyone(&s, 16));
    }

    /* Uneven nodes, 3 + 2 members (0, 1, 2 on node 0; 3, 4 on node 1): one channel, heads
     * 0 and 3. A: 1 -> 0, 2 -> 1, 3 -> 0, 4 -> 3 (root 0, height 2 = max(chain 2, 1 + 1));
     * B: 0 -> 3 (root 3, height max(1, 1 + 2) = 3). Rounds: up until height + C, down from
     * round H + depth(parent): B's deepest parent is 1 (3 -> 0 -> 1, depth 2), whose chunk
     * goes down in round 3 + 2 = 5: 6 rounds at C = 1. */
    int32_t uneven[5] = {0, 0, 0, 1, 1};
    coll_group g5 = {.n = 5, .node = uneven};
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g5, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    CHECK_INT_EQ(count_xfer(&s, 0, 2, 1, S / 2), 2); /* the chain's end, in both trees */
    CHECK(everyone_hears_everyone(&s, 5));

    /* every member on its own node: the member-level trees, transfer for transfer */
    int32_t own[8] = {5, 1, 4, 0, 7, 2, 3, 6};
    coll_group g8own = {.n = 8, .node = own}, g8flat = group(8);
    coll_schedule flat;
    coll_schedule_init(&flat);
    build(&s, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g8own, S, 0, 4);
    build(&flat, COLL_ALGO_TREE, COLL_ALL_REDUCE, &g8flat, S, 0, 4);
    CHECK_INT_EQ(s.n_rounds, flat.n_rounds);
    CHECK_INT_EQ((int)s.n_xfers, (int)flat.n_xfers);
    CHECK(s.n_xfers == flat.n_xfers &&
          memcmp(s.xfers, flat.xfers, s.n_xfers * sizeof *s.xfers) == 0);
    coll_schedule_clear(&flat);
    coll_schedule_clear(&s);
}

/* NCCL's ring channels on a group spread evenly over nodes (ring.c, "Channels across nodes").
 * n = 8 on two nodes of 4 (members 0-3 and 4-7): 4 rings of S/4. Per round each member sends
 * 3/4 of its piece S/n to its node's next member and 1/4 to the same local index of the other
 * node (node 1, the last, to local (l + 2) mod 4 of node 0, where each ring entered): all-
 * reduce of S, round pieces S/8: 3S/32 to the neighbour and S/32 across. The ring's rounds,
 * 2(n-1) = 14, and its bytes per member and round, S/8 each way, are unchanged, so on an
 * ideal star T = 14α + 14/8·S/B as with one ring; only the links differ: 4 transfers cross
 * nodes each way per round, one per member of the node, where one ring had a single one. */
static void test_ring_channels(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    int32_t nodes[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    coll_group g = {.n = 8, .node = nodes};
    build(&s, COLL_ALGO_RING, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 14);
    CHECK_INT_EQ(round_len(&s, 0), 16);
    for (int l = 0; l < 4; l++) {
        CHECK_INT_EQ(count_xfer(&s, 0, l, (l + 1) % 4, 3 * S / 32), 1);
        CHECK_INT_EQ(count_xfer(&s, 0, l, 4 + l, S / 32), 1);
        CHECK_INT_EQ(count_xfer(&s, 0, 4 + l, 4 + (l + 1) % 4, 3 * S / 32), 1);
        CHECK_INT_EQ(count_xfer(&s, 0, 4 + l, (l + 2) % 4, S / 32), 1);
    }
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 14 * ALPHA + 14.0 / 8 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(rs_then_ag_causal(&s, 8, 7));
    for (int m = 0; m < 8; m++) {
        CHECK_NEAR(sent(&s, m), 14 * S / 8, 1e-12, 0);
        CHECK_NEAR(received(&s, m), 14 * S / 8, 1e-12, 0);
    }
    /* all_gather and reduce_scatter: 7 rounds of the same pattern, causal */
    build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 7);
    CHECK(gather_causal(&s, 8, false));
    CHECK(everyone_hears_everyone(&s, 8));
    build(&s, COLL_ALGO_RING, COLL_REDUCE_SCATTER, &g, S, 0, 1);
    CHECK(gather_causal(&s, 8, true));
    /* nodes 0..2 of 2, interleaved (member m on node m % 3): still one transfer across per
     * member and round, to the member of the same local index (m + 1 on the next node; from
     * the last node to local (l + 3) mod 2 of the first) */
    int32_t inter[6] = {0, 1, 2, 0, 1, 2};
    coll_group g6 = {.n = 6, .node = inter};
    build(&s, COLL_ALGO_RING, COLL_ALL_GATHER, &g6, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 5);
    CHECK(gather_causal(&s, 6, false));
    CHECK(everyone_hears_everyone(&s, 6));
    /* ring_shift keeps the group order (ring attention's successor) */
    build(&s, COLL_ALGO_RING, COLL_RING_SHIFT, &g, S, 0, 1);
    for (size_t i = 0; i < s.n_xfers; i++)
        CHECK_INT_EQ(s.xfers[i].dst, (s.xfers[i].src + 1) % 8);
    coll_schedule_clear(&s);
}

static void test_tree_rooted(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    coll_group g8 = group(8);

    /* broadcast from 3, n = 8, C = 2. A rotated by 3: 3 -> 7 -> {5, 1}, 5 -> {4, 6},
     * 1 -> {0, 2}. B with positions 0 and 7 swapped (0 -> 3 -> {5, 1}, 5 -> {6, 4},
     * 1 -> {2, 7}), rotated by 3: 3 -> 6 -> {0, 4}, 0 -> {1, 7}, 4 -> {5, 2}.
     * H = 3: H + C - 1 = 4 rounds. Each edge carries S/2: the root sends S/2 in each tree (S),
     * 7, 5, 1 send 2·S/2 in A and 6, 0, 4 in B (S each); 2 is a leaf in both (0); every
     * non-root receives S/2 from each tree (S). */
    build(&s, COLL_ALGO_TREE, COLL_BROADCAST, &g8, S, 3, 2);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK(well_formed(&s, 8, false));
    for (int m = 0; m < 8; m++) {
        CHECK_NEAR(sent(&s, m), m == 2 ? 0 : S, 1e-12, 0);
        CHECK_NEAR(received(&s, m), m == 3 ? 0 : S, 1e-12, 0);
    }
    /* round 0: the root sends chunk 0 of each tree, S/4 to 7 and S/4 to 6 */
    CHECK_INT_EQ(round_len(&s, 0), 2);
    CHECK_INT_EQ(count_xfer(&s, 0, 3, 7, S / 4), 1);
    CHECK_INT_EQ(count_xfer(&s, 0, 3, 6, S / 4), 1);
    uint64_t heard[MAXN];
    reach(&s, 8, heard);
    for (int m = 0; m < 8; m++)
        CHECK(heard[m] & (1ull << 3));
    /* a member moves at most two chunks of S/4 each way per round: T <= 4(α + S/(2B)) */
    CHECK(max_round_port(&s, 8) <= S / 2 * (1 + 1e-12));

    /* reduce to 3: the same edges reversed, reduce-up timing: 4 rounds; sent and received swap */
    build(&s, COLL_ALGO_TREE, COLL_REDUCE, &g8, S, 3, 2);
    CHECK_INT_EQ(s.n_rounds, 4);
    for (int m = 0; m < 8; m++) {
        CHECK_NEAR(received(&s, m), m == 2 ? 0 : S, 1e-12, 0);
        CHECK_NEAR(sent(&s, m), m == 3 ? 0 : S, 1e-12, 0);
    }
    reach(&s, 8, heard);
    CHECK(heard[3] == all_of(8));

    /* every root and n in {2, 3, 5, 6, 16}: H + C - 1 rounds, the root sends (receives) S,
     * everyone hears the root (the root hears everyone) */
    const int ns[] = {2, 3, 5, 6, 16};
    for (size_t i = 0; i < SIM_ARRAY_LEN(ns); i++) {
        int n = ns[i];
        coll_group g = group(n);
        for (int root = 0; root < n; root++) {
            for (int chunks = 1; chunks <= 4; chunks += 3) {
                build(&s, COLL_ALGO_TREE, COLL_BROADCAST, &g, S, root, chunks);
                CHECK(well_formed(&s, n, false));
                CHECK_INT_EQ(s.n_rounds, clog2(n) + chunks - 1);
                CHECK_NEAR(sent(&s, root), S, 1e-12, 0);
                CHECK_NEAR(total_bytes(&s), (n - 1) * S, 1e-12, 0);
                reach(&s, n, heard);
                for (int m = 0; m < n; m++)
                    CHECK(heard[m] & (1ull << root));
                CHECK(bcast_causal(&s, n, root, false));
                build(&s, COLL_ALGO_TREE, COLL_REDUCE, &g, S, root, chunks);
                CHECK_INT_EQ(s.n_rounds, clog2(n) + chunks - 1);
                CHECK_NEAR(received(&s, root), S, 1e-12, 0);
                reach(&s, n, heard);
                CHECK(heard[root] == all_of(n));
                CHECK(bcast_causal(&s, n, root, true));
            }
        }
    }
    coll_schedule_clear(&s);
}

/* ---- halving-doubling ----------------------------------------------------------------------- */

static void test_hd(void)
{
    coll_schedule s;
    coll_schedule_init(&s);

    /* n = 8 all_reduce: halving rounds j = 0, 1, 2 exchange S/2, S/4, S/8 with i^1, i^2, i^4;
     * doubling rounds S/8, S/4, S/2 with i^4, i^2, i^1. Each round every member sends and
     * receives one piece: T = 6α + 2(S/2 + S/4 + S/8)/B = 6α + 1.75·S/B = 2·log2(8)·α +
     * 2(8-1)/8·S/B. */
    coll_group g8 = group(8);
    build(&s, COLL_ALGO_HD, COLL_ALL_REDUCE, &g8, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    const int dist[6] = {1, 2, 4, 4, 2, 1};
    const double piece[6] = {S / 2, S / 4, S / 8, S / 8, S / 4, S / 2};
    for (int r = 0; r < 6; r++) {
        CHECK_INT_EQ(round_len(&s, r), 8);
        for (int i = 0; i < 8; i++)
            CHECK_INT_EQ(count_xfer(&s, r, i, i ^ dist[r], piece[r]), 1);
    }
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 6 * ALPHA + 1.75 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));

    /* powers of two 2..32: 2·log2(n)·α + 2(n-1)/n·S/B */
    for (int k = 1; k <= 5; k++) {
        int n = 1 << k;
        coll_group g = group(n);
        build(&s, COLL_ALGO_HD, COLL_ALL_REDUCE, &g, S, 0, 4);
        CHECK(well_formed(&s, n, false));
        CHECK_INT_EQ(s.n_rounds, 2 * k);
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), 2 * k * ALPHA + 2.0 * (n - 1) / n * S / BW,
                   1e-12, 0);
        for (int m = 0; m < n; m++)
            CHECK_NEAR(sent(&s, m), 2.0 * (n - 1) / n * S, 1e-12, 0);
        CHECK(everyone_hears_everyone(&s, n));
        CHECK(rs_then_ag_causal(&s, n, k));
    }

    /* n = 6: p = 4, r = 2. Round 0: 0->1, 2->3 (S). Core members (virtual ranks 0..3) = 1, 3,
     * 4, 5: halving with v^1 = (1,3), (4,5) at S/2, v^2 = (1,4), (3,5) at S/4; doubling back;
     * round 5: 1->0, 3->2 (S). Sent: 0, 2: S; 1, 3: 2(S/2 + S/4) = 1.5S in the core plus S
     * back, 2.5S; 4, 5: 1.5S (received likewise, by symmetry of the exchanges).
     * Busiest port per round: S, S/2, S/4, S/4, S/2, S: T = 6α + 3.5·S/B
     * = 2(1 + log2 4)·α + (2 + 2·3/4)·S/B. */
    coll_group g6 = group(6);
    build(&s, COLL_ALGO_HD, COLL_ALL_REDUCE, &g6, S, 0, 1);
    CHECK(well_formed(&s, 6, false));
    CHECK_INT_EQ(s.n_rounds, 6);
    CHECK_INT_EQ(round_len(&s, 0), 2);
    CHECK_INT_EQ(count_xfer(&s, 0, 0, 1, S) + count_xfer(&s, 0, 2, 3, S), 2);
    CHECK_INT_EQ(count_xfer(&s, 1, 1, 3, S / 2) + count_xfer(&s, 1, 4, 5, S / 2), 2);
    CHECK_INT_EQ(count_xfer(&s, 2, 1, 4, S / 4) + count_xfer(&s, 2, 3, 5, S / 4), 2);
    CHECK_INT_EQ(count_xfer(&s, 5, 1, 0, S) + count_xfer(&s, 5, 3, 2, S), 2);
    const double want6[6] = {S, 2.5 * S, S, 2.5 * S, 1.5 * S, 1.5 * S};
    for (int m = 0; m < 6; m++) {
        CHECK_NEAR(sent(&s, m), want6[m], 1e-12, 0);
        CHECK_NEAR(received(&s, m), want6[m], 1e-12, 0);
    }
    CHECK_NEAR(ideal_star(&s, 6, ALPHA, BW), 6 * ALPHA + 3.5 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 6));

    /* n = 5: p = 4, r = 1: 0 -> 1 folds; core 1, 2, 3, 4; 6 rounds; T = 6α + 3.5·S/B.
     * n = 3: p = 2, r = 1: 0 -> 1; (1, 2) exchange S/2 twice; 1 -> 0: 4 rounds,
     * T = 4α + (1 + 1/2 + 1/2 + 1)·S/B = 4α + 3S/B = 2(1 + 1)·α + (2 + 2·1/2)·S/B. */
    coll_group g5 = group(5), g3 = group(3);
    build(&s, COLL_ALGO_HD, COLL_ALL_REDUCE, &g5, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    CHECK_NEAR(ideal_star(&s, 5, ALPHA, BW), 6 * ALPHA + 3.5 * S / BW, 1e-12, 0);
    CHECK_NEAR(sent(&s, 0), S, 1e-12, 0);
    CHECK_NEAR(sent(&s, 1), 2.5 * S, 1e-12, 0);
    CHECK_NEAR(sent(&s, 4), 1.5 * S, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 5));
    build(&s, COLL_ALGO_HD, COLL_ALL_REDUCE, &g3, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK_NEAR(ideal_star(&s, 3, ALPHA, BW), 4 * ALPHA + 3 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 3));

    /* reduce_scatter n = 8 (S = input): the halving half, 3 rounds of S/2, S/4, S/8:
     * T = 3α + 7/8·S/B. all_gather n = 8 (S = output): the doubling half, first round one
     * block S/8 with i^4, last S/2 with i^1: T = 3α + 7/8·S/B. n = 16: 4α + 15/16·S/B. */
    build(&s, COLL_ALGO_HD, COLL_REDUCE_SCATTER, &g8, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 3);
    CHECK_INT_EQ(count_xfer(&s, 0, 5, 4, S / 2), 1);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 3 * ALPHA + 7.0 / 8 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(gather_causal(&s, 8, true));
    build(&s, COLL_ALGO_HD, COLL_ALL_GATHER, &g8, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 3);
    CHECK_INT_EQ(count_xfer(&s, 0, 5, 1, S / 8), 1);
    CHECK_INT_EQ(count_xfer(&s, 2, 5, 4, S / 2), 1);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 3 * ALPHA + 7.0 / 8 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(gather_causal(&s, 8, false));
    coll_group g16 = group(16);
    build(&s, COLL_ALGO_HD, COLL_ALL_GATHER, &g16, S, 0, 1);
    CHECK_NEAR(ideal_star(&s, 16, ALPHA, BW), 4 * ALPHA + 15.0 / 16 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 16));
    CHECK(gather_causal(&s, 16, false));
    coll_schedule_clear(&s);
}

/* ---- all_to_all ----------------------------------------------------------------------------- */

static void test_alltoall(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    const int ns[] = {3, 5, 6, 8, 16};
    for (size_t i = 0; i < SIM_ARRAY_LEN(ns); i++) {
        int n = ns[i];
        coll_group g = group(n);
        /* direct: one round of n(n-1) transfers of S/n; each member sends and receives
         * (n-1)/n·S: T = α + (n-1)/n·S/B */
        build(&s, COLL_ALGO_DIRECT, COLL_ALL_TO_ALL, &g, S, 0, 1);
        CHECK(well_formed(&s, n, false));
        CHECK_INT_EQ(s.n_rounds, 1);
        CHECK_INT_EQ(s.n_xfers, n * (n - 1));
        CHECK_INT_EQ(count_xfer(&s, 0, n - 1, 0, S / n), 1);
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), ALPHA + (double)(n - 1) / n * S / BW, 1e-12, 0);
        for (int m = 0; m < n; m++) {
            CHECK_NEAR(sent(&s, m), (double)(n - 1) / n * S, 1e-12, 0);
            CHECK_NEAR(received(&s, m), (double)(n - 1) / n * S, 1e-12, 0);
        }
        CHECK(everyone_hears_everyone(&s, n));

        /* pairwise: round k-1 (k = 1..n-1) has i -> i+k mod n, one S/n per port:
         * T = (n-1)·α + (n-1)/n·S/B */
        build(&s, COLL_ALGO_PAIRWISE, COLL_ALL_TO_ALL, &g, S, 0, 1);
        CHECK(well_formed(&s, n, false));
        CHECK_INT_EQ(s.n_rounds, n - 1);
        for (int r = 0; r < n - 1; r++) {
            CHECK_INT_EQ(round_len(&s, r), n);
            for (int m = 0; m < n; m++)
                CHECK_INT_EQ(count_xfer(&s, r, m, (m + r + 1) % n, S / n), 1);
        }
        CHECK_NEAR(ideal_star(&s, n, ALPHA, BW), (n - 1) * ALPHA + (double)(n - 1) / n * S / BW,
                   1e-12, 0);
        CHECK(everyone_hears_everyone(&s, n));
    }
    coll_schedule_clear(&s);
}

/* ---- hierarchical ------------------------------------------------------------------------- */

/* Members of round r whose transfers all stay inside a node (1), all cross nodes (0), or mix. */
static int round_kind(const coll_schedule *s, int r, const int32_t *node)
{
    int intra = 0, inter = 0;
    for (size_t i = s->round_first[r]; i < s->round_first[r + 1]; i++) {
        if (node[s->xfers[i].src] == node[s->xfers[i].dst])
            intra++;
        else
            inter++;
    }
    return inter == 0 ? 1 : intra == 0 ? 0 : -1;
}

static double inter_node_sent(const coll_schedule *s, int m, const int32_t *node)
{
    double sum = 0;
    for (size_t i = 0; i < s->n_xfers; i++)
        if (s->xfers[i].src == m && node[s->xfers[i].dst] != node[m])
            sum += s->xfers[i].bytes;
    return sum;
}

static void test_hierarchical(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    int32_t two_by_four[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    coll_group g = {.n = 8, .node = two_by_four};

    /* 2 nodes x 4 (N = 2, L = 4), all_reduce: 2(L-1) + 2(N-1) = 8 rounds.
     *   rounds 0-2: intra ring reduce-scatter, (a, l) -> (a, l+1 mod 4), S/4
     *   rounds 3-4: inter ring all_reduce of each S/4 shard among the 2 members with the same
     *               local index: reduce-scatter and all-gather of S/8 each, (0,l) <-> (1,l)
     *   rounds 5-7: intra ring all-gather, S/4
     * Per member: 6·S/4 + 2·S/8 = 1.75·S = 2(8-1)/8·S, of which 2·S/8 = S/4 crosses nodes.
     * Ideal star: 8α + 1.75·S/B = 2(L+N-2)·α + 2(n-1)/n·S/B. */
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK(well_formed(&s, 8, false));
    CHECK_INT_EQ(s.n_rounds, 8);
    for (int r = 0; r < 8; r++) {
        bool inter = r == 3 || r == 4;
        CHECK_INT_EQ(round_kind(&s, r, two_by_four), inter ? 0 : 1);
        CHECK_INT_EQ(round_len(&s, r), 8);
        for (int m = 0; m < 8; m++) {
            int dst = inter ? (m + 4) % 8 : (m / 4) * 4 + (m % 4 + 1) % 4;
            CHECK_INT_EQ(count_xfer(&s, r, m, dst, inter ? S / 8 : S / 4), 1);
        }
    }
    for (int m = 0; m < 8; m++) {
        CHECK_NEAR(sent(&s, m), 1.75 * S, 1e-12, 0);
        CHECK_NEAR(received(&s, m), 1.75 * S, 1e-12, 0);
        CHECK_NEAR(inter_node_sent(&s, m, two_by_four), S / 4, 1e-12, 0);
    }
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 8 * ALPHA + 1.75 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(rs_then_ag_causal(&s, 8, 4)); /* 3 intra + 1 inter reduce-scatter rounds */

    /* all_gather (S = output, blocks S/8): inter ring of own blocks, N-1 = 1 round of S/8, then
     * intra ring of the N = 2 blocks each member holds, L-1 = 3 rounds of S/4. Per member
     * S/8 + 3S/4 = 7/8·S; T = 4α + 7/8·S/B = (L+N-2)·α + (n-1)/n·S/B. */
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_GATHER, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK_INT_EQ(round_kind(&s, 0, two_by_four), 0);
    CHECK_INT_EQ(count_xfer(&s, 0, 1, 5, S / 8), 1);
    CHECK_INT_EQ(count_xfer(&s, 1, 1, 2, S / 4), 1);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 4 * ALPHA + 7.0 / 8 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(gather_causal(&s, 8, false));

    /* reduce_scatter, the mirror: 3 intra rounds of S/4, then 1 inter round of S/8 */
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_REDUCE_SCATTER, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 4);
    CHECK_INT_EQ(round_kind(&s, 3, two_by_four), 0);
    CHECK_INT_EQ(count_xfer(&s, 0, 3, 0, S / 4), 1);
    CHECK_INT_EQ(count_xfer(&s, 3, 6, 2, S / 8), 1);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 4 * ALPHA + 7.0 / 8 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(gather_causal(&s, 8, true));

    /* Node ids interleaved and not starting at 0: node 7 = {0, 2, 4, 6} comes first (it holds
     * member 0), node 3 = {1, 3, 5, 7} second. Intra rings 0 -> 2 -> 4 -> 6 -> 0 and
     * 1 -> 3 -> 5 -> 7 -> 1; inter rings pair local index l: (0, 1), (2, 3), (4, 5), (6, 7). */
    int32_t interleaved[8] = {7, 3, 7, 3, 7, 3, 7, 3};
    g.node = interleaved;
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 8);
    CHECK_INT_EQ(round_kind(&s, 0, interleaved), 1);
    CHECK_INT_EQ(count_xfer(&s, 0, 6, 0, S / 4), 1);
    CHECK_INT_EQ(count_xfer(&s, 0, 7, 1, S / 4), 1);
    CHECK_INT_EQ(round_kind(&s, 3, interleaved), 0);
    CHECK_INT_EQ(count_xfer(&s, 3, 2, 3, S / 8), 1);
    CHECK_INT_EQ(count_xfer(&s, 3, 3, 2, S / 8), 1);
    CHECK(everyone_hears_everyone(&s, 8));
    CHECK(rs_then_ag_causal(&s, 8, 4));

    /* 4 nodes x 4 (n = 16): all_reduce 2·3 + 2·3 = 12 rounds; per member 2·15/16·S, of which
     * 2(N-1)/n·S = 6/16·S crosses nodes; T = 12α + 2·15/16·S/B. */
    int32_t four_by_four[16];
    for (int m = 0; m < 16; m++)
        four_by_four[m] = m / 4;
    coll_group g16 = {.n = 16, .node = four_by_four};
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_REDUCE, &g16, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 12);
    for (int m = 0; m < 16; m++)
        CHECK_NEAR(inter_node_sent(&s, m, four_by_four), 6.0 / 16 * S, 1e-12, 0);
    CHECK_NEAR(ideal_star(&s, 16, ALPHA, BW), 12 * ALPHA + 30.0 / 16 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 16));
    CHECK(rs_then_ag_causal(&s, 16, 6)); /* 3 intra + 3 inter reduce-scatter rounds */

    /* 3 nodes x 2 (n = 6): all_reduce 2·1 + 2·2 = 6 rounds; all_gather 2 + 1 = 3 */
    int32_t three_by_two[6] = {0, 0, 1, 1, 2, 2};
    coll_group g6 = {.n = 6, .node = three_by_two};
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_REDUCE, &g6, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 6);
    CHECK_NEAR(ideal_star(&s, 6, ALPHA, BW), 6 * ALPHA + 2.0 * 5 / 6 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 6));
    CHECK(rs_then_ag_causal(&s, 6, 3));
    build(&s, COLL_ALGO_HIERARCHICAL, COLL_ALL_GATHER, &g6, S, 0, 1);
    CHECK_INT_EQ(s.n_rounds, 3);
    CHECK(everyone_hears_everyone(&s, 6));
    CHECK(gather_causal(&s, 6, false));
    coll_schedule_clear(&s);
}

/* ---- NVLS ------------------------------------------------------------------------------------ */

static void test_nvls(void)
{
    coll_schedule s;
    coll_schedule_init(&s);
    coll_group g = {.n = 8, .nvls = true};

    /* C = 1: round 0 (reduce-scatter): m -> switch S, switch -> m S/8; round 1 (all-gather):
     * m -> switch S/8, switch -> m S. Per member and direction S(1 + 1/8) = 1.125·S.
     * Ideal star: each round's busiest port moves S: T = 2α + 2S/B. */
    build(&s, COLL_ALGO_NVLS, COLL_ALL_REDUCE, &g, S, 0, 1);
    CHECK(well_formed(&s, 8, true));
    CHECK_INT_EQ(s.n_rounds, 2);
    for (int m = 0; m < 8; m++) {
        CHECK_INT_EQ(count_xfer(&s, 0, m, COLL_SWITCH, S), 1);
        CHECK_INT_EQ(count_xfer(&s, 0, COLL_SWITCH, m, S / 8), 1);
        CHECK_INT_EQ(count_xfer(&s, 1, m, COLL_SWITCH, S / 8), 1);
        CHECK_INT_EQ(count_xfer(&s, 1, COLL_SWITCH, m, S), 1);
        CHECK_NEAR(sent(&s, m), 1.125 * S, 1e-12, 0);
        CHECK_NEAR(received(&s, m), 1.125 * S, 1e-12, 0);
    }
    CHECK_NEAR(coll_schedule_bytes_sent(&s, 0), 1.125 * S, 1e-12, 0);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 2 * ALPHA + 2 * S / BW, 1e-12, 0);
    CHECK(everyone_hears_everyone(&s, 8));

    /* C = 4: 5 rounds; round 0 moves S/4 up (and S/32 down), rounds 1-3 S/4 + S/32 each way,
     * round 4 S/4 down: T = 5α + (2 + 3·1.125)/4·S/B = 5α + 1.34375·S/B. Per member and
     * direction still 1.125·S. */
    build(&s, COLL_ALGO_NVLS, COLL_ALL_REDUCE, &g, S, 0, 4);
    CHECK_INT_EQ(s.n_rounds, 5);
    CHECK_NEAR(port_bytes(&s, 2, 5, 0), S / 4 + S / 32, 1e-12, 0);
    CHECK_NEAR(ideal_star(&s, 8, ALPHA, BW), 5 * ALPHA + 1.34375 * S / BW, 1e-12, 0);
    for (int m = 0; m < 8; m++) {
        CHECK_NEAR(sent(&s, m), 1.125 * S, 1e-12, 0);
        CHECK_NEAR(received(&s, m), 1.125 * S, 1e-12, 0);
    }
    CHECK(everyone_hears_everyone(&s, 8));

    /* Large C approaches the link bound S(1 + 1/n)/B: with C = 1000 the bandwidth term is
     * (2 + 999·1.125)/1000·S/B = 1.125875·S/B, within 0.1% of 1.125·S/B; the general form
     * (C+1)·α + (2 + (C-1)(1 + 1/n))·S/(C·B) holds for n = 4 and C = 16 too. */
    build(&s, COLL_ALGO_NVLS, COLL_ALL_REDUCE, &g, S, 0, 1000);
    CHECK_INT_EQ(s.n_rounds, 1001);
    CHECK_NEAR(ideal_star(&s, 8, 0, BW), 1.125 * S / BW, 1e-3, 0);
    coll_group g4 = {.n = 4, .nvls = true};
    build(&s, COLL_ALGO_NVLS, COLL_ALL_REDUCE, &g4, S, 0, 16);
    CHECK_NEAR(ideal_star(&s, 4, ALPHA, BW), 17 * ALPHA + (2 + 15 * 1.25) / 16 * S / BW, 1e-12,
               0);
    coll_schedule_clear(&s);
}

int main(void)
{
    test_supports();
    test_ring_closed_forms();
    test_tree_n4();
    test_tree_shapes();
    test_tree_nodes();
    test_ring_channels();
    test_tree_rooted();
    test_hd();
    test_alltoall();
    test_hierarchical();
    test_nvls();
    return test_finish();
}
