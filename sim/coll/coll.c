/* Collective operations: names, nccl-tests factors, schedule containers and the registry of
 * algorithms (see coll.h). */
#include "core/sim.h"

#include <stdlib.h>
#include <string.h>

#include "coll/coll-internal.h"

const char *coll_op_name(coll_op op)
{
    static const char *const names[COLL_OP_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "broadcast",
        "reduce",     "all_to_all", "send_recv", "ring_shift"};
    SIM_ASSERT(op >= 0 && op < COLL_OP_COUNT, "op %d", (int)op);
    return names[op];
}

int coll_op_parse(const char *name)
{
    static const struct {
        const char *name;
        coll_op op;
    } alias[] = {{"allreduce", COLL_ALL_REDUCE},      {"allgather", COLL_ALL_GATHER},
                 {"reducescatter", COLL_REDUCE_SCATTER}, {"alltoall", COLL_ALL_TO_ALL},
                 {"sendrecv", COLL_SEND_RECV}};
    for (int op = 0; op < COLL_OP_COUNT; op++)
        if (strcmp(name, coll_op_name((coll_op)op)) == 0)
            return op;
    for (size_t i = 0; i < SIM_ARRAY_LEN(alias); i++)
        if (strcmp(name, alias[i].name) == 0)
            return (int)alias[i].op;
    return -1;
}

double coll_busbw_factor(coll_op op, int n)
{
    switch (op) {
    case COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_ALL_TO_ALL:
        return (double)(n - 1) / n;
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_SEND_RECV:
    case COLL_RING_SHIFT:
    case COLL_OP_COUNT:
        break;
    }
    return 1.0;
}

static const coll_algo_ops *const registry[COLL_ALGO_COUNT] = {
    [COLL_ALGO_RING] = &coll__ring_ops,
    [COLL_ALGO_TREE] = &coll__tree_ops,
    [COLL_ALGO_HD] = &coll__hd_ops,
    [COLL_ALGO_DIRECT] = &coll__direct_ops,
    [COLL_ALGO_PAIRWISE] = &coll__pairwise_ops,
    [COLL_ALGO_HIERARCHICAL] = &coll__hierarchical_ops,
    [COLL_ALGO_NVLS] = &coll__nvls_ops,
};

const coll_algo_ops *coll_algo_get(coll_algo a)
{
    SIM_ASSERT(a >= 0 && a < COLL_ALGO_COUNT, "algorithm %d", (int)a);
    return registry[a];
}

const char *coll_algo_name(coll_algo a)
{
    return coll_algo_get(a)->name;
}

int coll_algo_parse(const char *name)
{
    for (int a = 0; a < COLL_ALGO_COUNT; a++)
        if (strcmp(name, registry[a]->name) == 0)
            return a;
    return -1;
}

void coll_schedule_init(coll_schedule *s)
{
    *s = (coll_schedule){0};
}

void coll_schedule_clear(coll_schedule *s)
{
    sim_free(s->round_first);
    sim_free(s->round_end);
    sim_free(s->xfers);
    sim_free(s->front);
    *s = (coll_schedule){0};
}

void coll_schedule_reset(coll_schedule *s)
{
    sim_free(s->round_end);
    s->round_end = NULL;
    s->n_rounds = 0;
    s->n_xfers = 0;
    s->p2p = false;
    s->dataflow = 0;
    s->chunked = false;
    sim_free(s->front);
    s->front = NULL;
    SIM_GROW(s->round_first, s->cap_rounds, 1);
    s->round_first[0] = 0;
}

void coll_schedule_round(coll_schedule *s)
{
    SIM_ASSERT(!s->round_end, "a round added to a compacted schedule");
    SIM_GROW(s->round_first, s->cap_rounds, (size_t)s->n_rounds + 2);
    s->round_first[s->n_rounds] = s->n_xfers;
    s->n_rounds++;
    s->round_first[s->n_rounds] = s->n_xfers;
}

void coll_schedule_add(coll_schedule *s, int src, int dst, double bytes)
{
    SIM_ASSERT(s->n_rounds > 0 && !s->round_end, "transfer outside a round");
    if (bytes <= 0 || src == dst)
        return;
    SIM_ASSERT(!s->chunked, "a whole transfer added to a chunked schedule");
    SIM_GROW(s->xfers, s->cap_xfers, s->n_xfers + 1);
    s->xfers[s->n_xfers++] = (coll_xfer){.src = src, .dst = dst, .bytes = bytes};
    s->round_first[s->n_rounds] = s->n_xfers;
}

void coll_schedule_add_piece(coll_schedule *s, int src, int dst, double bytes, int kind)
{
    SIM_ASSERT(s->n_rounds > 0 && !s->round_end, "transfer outside a round");
    SIM_ASSERT(s->chunked || s->n_xfers == 0, "a piece added to a schedule of whole transfers");
    s->chunked = true;
    if (bytes <= 0 || src == dst)
        return;
    size_t cap = s->cap_xfers;
    SIM_GROW(s->xfers, s->cap_xfers, s->n_xfers + 1);
    if (!s->front || cap != s->cap_xfers) /* (the flags follow the transfers' room) */
        s->front = sim_realloc_array(s->front, s->cap_xfers, sizeof *s->front);
    SIM_ASSERT(kind >= COLL_PIECE_QUEUED && kind <= COLL_PIECE_FIRST, "piece kind %d", kind);
    s->front[s->n_xfers] = (uint8_t)kind;
    s->xfers[s->n_xfers++] = (coll_xfer){.src = src, .dst = dst, .bytes = bytes};
    s->round_first[s->n_rounds] = s->n_xfers;
}

/* (round by round: a compacted schedule's repeats are summed again, in the same order) */
double coll_schedule_bytes_sent(const coll_schedule *s, int m)
{
    double sum = 0;
    for (int r = 0; r < s->n_rounds; r++)
        for (size_t i = coll_round_first(s, r); i < coll_round_end(s, r); i++)
            if (s->xfers[i].src == m)
                sum += s->xfers[i].bytes;
    return sum;
}

void coll_schedule_bytes_sent_all(const coll_schedule *s, double *out)
{
    for (int r = 0; r < s->n_rounds; r++)
        for (size_t i = coll_round_first(s, r); i < coll_round_end(s, r); i++)
            if (s->xfers[i].src >= 0)
                out[s->xfers[i].src] += s->xfers[i].bytes;
}

size_t coll_schedule_xfer_count(const coll_schedule *s)
{
    size_t n = 0;
    for (int r = 0; r < s->n_rounds; r++)
        n += coll_round_end(s, r) - coll_round_first(s, r);
    return n;
}

_Static_assert(sizeof(coll_xfer) == 2 * sizeof(int32_t) + sizeof(double),
               "coll_xfer compared with memcmp: no padding");

bool coll_schedule_round_repeats(const coll_schedule *s, int r)
{
    SIM_ASSERT(r > 0 && r < s->n_rounds, "round %d of %d", r, s->n_rounds);
    size_t a = coll_round_first(s, r - 1), b = coll_round_first(s, r);
    size_t n = coll_round_end(s, r) - b;
    if (n != coll_round_end(s, r - 1) - a)
        return false;
    /* two empty rounds (a zero-byte collective) repeat; xfers may then be NULL, which
     * memcmp must not be given even for 0 bytes */
    return n == 0 || a == b ||
           (memcmp(&s->xfers[b], &s->xfers[a], n * sizeof *s->xfers) == 0 &&
            (!s->chunked || memcmp(&s->front[b], &s->front[a], n) == 0));
}

void coll_schedule_compact(coll_schedule *s)
{
    if (s->round_end || s->n_rounds == 0)
        return;
    size_t *end = sim_calloc((size_t)s->n_rounds, sizeof *end);
    size_t w = 0; /* transfers kept so far */
    for (int r = 0; r < s->n_rounds; r++) {
        size_t a = s->round_first[r], n = s->round_first[r + 1] - a;
        /* (round r - 1 is already compacted: round_first[r - 1] and end[r - 1]) */
        size_t p = r > 0 ? s->round_first[r - 1] : 0;
        if (r > 0 && n == end[r - 1] - p &&
            (n == 0 || (memcmp(&s->xfers[a], &s->xfers[p], n * sizeof *s->xfers) == 0 &&
                        (!s->chunked || memcmp(&s->front[a], &s->front[p], n) == 0)))) {
            s->round_first[r] = s->round_first[r - 1];
            end[r] = end[r - 1];
            continue;
        }
        if (n > 0 && w != a) {
            memmove(&s->xfers[w], &s->xfers[a], n * sizeof *s->xfers);
            if (s->chunked)
                memmove(&s->front[w], &s->front[a], n);
        }
        s->round_first[r] = w;
        w += n;
        end[r] = w;
    }
    s->round_end = end;
    s->n_xfers = w;
    if (w < s->cap_xfers && w > 0) {
        s->xfers = sim_realloc_array(s->xfers, w, sizeof *s->xfers);
        if (s->front)
            s->front = sim_realloc_array(s->front, w, sizeof *s->front);
        s->cap_xfers = w;
    }
}

bool coll_algo_pipelined(coll_algo a, coll_op op)
{
    const coll_algo_ops *ops = coll_algo_get(a);
    return ops->pipelined && ops->pipelined(op);
}

int coll_build(coll_schedule *s, coll_algo a, coll_op op, const coll_group *g, double bytes,
               int root, double chunks)
{
    SIM_ASSERT(g->n >= 1 && bytes >= 0, "n=%d bytes=%g", g->n, bytes);
    coll_schedule_reset(s);
    s->p2p = op == COLL_ALL_TO_ALL || op == COLL_SEND_RECV || op == COLL_RING_SHIFT;
    if (g->n == 1)
        return 0;
    const coll_algo_ops *ops = coll_algo_get(a);
    if (!ops->supports(op, g))
        return SIM_ENOTSUP;
    ops->build(s, op, g, bytes, root, chunks < 1 ? 1 : chunks);
    return 0;
}

bool coll__always(coll_op op)
{
    (void)op;
    return true;
}

int coll__log2(int n)
{
    int k = 0;
    while ((2 << k) <= n)
        k++;
    return k;
}

bool coll__pow2(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/* A member and its node; for the per-node table, `node` is instead the index in the sorted
 * array where that node's members start and `member` its first member. */
typedef struct member_node {
    int32_t node, member;
} member_node;

static int by_member(const void *pa, const void *pb)
{
    const member_node *a = pa, *b = pb;
    return (a->member > b->member) - (a->member < b->member);
}

static int by_node_then_member(const void *pa, const void *pb)
{
    const member_node *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return by_member(pa, pb);
}

int coll__group_by_node(const coll_group *g, int32_t *order, int32_t *start)
{
    int n = g->n;
    if (!g->node || n < 1)
        return 0;
    member_node *mn = sim_calloc((size_t)n, sizeof(*mn));
    for (int m = 0; m < n; m++)
        mn[m] = (member_node){.node = g->node[m], .member = m};
    qsort(mn, (size_t)n, sizeof(*mn), by_node_then_member);
    /* one entry per node: its first member and where its run starts in mn */
    member_node *first = sim_calloc((size_t)n, sizeof(*first));
    int nodes = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || mn[i].node != mn[i - 1].node)
            first[nodes++] = (member_node){.node = i, .member = mn[i].member};
    /* nodes in order of their first member (members are distinct, so no ties) */
    qsort(first, (size_t)nodes, sizeof(*first), by_member);
    int k = 0;
    for (int a = 0; a < nodes; a++) {
        start[a] = k;
        for (int i = first[a].node; i < n && mn[i].node == mn[first[a].node].node; i++)
            order[k++] = mn[i].member;
    }
    start[nodes] = k;
    SIM_ASSERT(k == n, "grouped %d of %d members", k, n);
    sim_free(first);
    sim_free(mn);
    return nodes;
}

bool coll__layout_init(coll_layout *lay, const coll_group *g)
{
    *lay = (coll_layout){0};
    int n = g->n;
    if (!g->node || n < 2)
        return false;
    int32_t *order = sim_calloc((size_t)n, sizeof(*order));
    int32_t *start = sim_calloc((size_t)n + 1, sizeof(*start));
    int nodes = coll__group_by_node(g, order, start);
    int per_node = n / nodes;
    bool ok = nodes >= 2 && per_node * nodes == n;
    for (int a = 0; ok && a < nodes; a++)
        ok = start[a + 1] - start[a] == per_node;
    if (ok) {
        lay->nodes = nodes;
        lay->per_node = per_node;
        lay->at = order; /* node by node, in order of their first member */
        order = NULL;
    }
    sim_free(order);
    sim_free(start);
    return ok;
}
