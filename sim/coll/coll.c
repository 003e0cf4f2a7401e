/* Ring schedules of collective operations (see coll.h for the algorithm and its cost). */
#include "core/sim.h"

#include "coll/coll.h"

const char *coll_op_name(coll_op op)
{
    static const char *const names[COLL_OP_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "broadcast",
        "reduce",     "all_to_all", "send_recv"};
    SIM_ASSERT(op >= 0 && op < COLL_OP_COUNT, "op %d", (int)op);
    return names[op];
}

void coll_schedule_init(coll_schedule *s)
{
    *s = (coll_schedule){0};
}

void coll_schedule_clear(coll_schedule *s)
{
    sim_free(s->round_first);
    sim_free(s->xfers);
    *s = (coll_schedule){0};
}

static void begin_round(coll_schedule *s)
{
    SIM_GROW(s->round_first, s->cap_rounds, (size_t)s->n_rounds + 2);
    s->round_first[s->n_rounds] = s->n_xfers;
    s->n_rounds++;
    s->round_first[s->n_rounds] = s->n_xfers;
}

static void add_xfer(coll_schedule *s, int src, int dst, double bytes)
{
    SIM_GROW(s->xfers, s->cap_xfers, s->n_xfers + 1);
    s->xfers[s->n_xfers++] = (coll_xfer){.src = src, .dst = dst, .bytes = bytes};
    s->round_first[s->n_rounds] = s->n_xfers;
}

/* `rounds` rounds in which every member sends `bytes` to its ring successor. */
static void ring_rounds(coll_schedule *s, int n, int rounds, double bytes)
{
    for (int r = 0; r < rounds; r++) {
        begin_round(s);
        for (int m = 0; m < n; m++)
            add_xfer(s, m, (m + 1) % n, bytes);
    }
}

int coll_ring_build(coll_schedule *s, coll_op op, int n, double bytes, int root)
{
    SIM_ASSERT(n >= 1 && bytes >= 0, "n=%d bytes=%g", n, bytes);
    s->n_rounds = 0;
    s->n_xfers = 0;
    SIM_GROW(s->round_first, s->cap_rounds, 1);
    s->round_first[0] = 0;
    if (n == 1)
        return 0;
    switch (op) {
    case COLL_ALL_REDUCE:
        ring_rounds(s, n, 2 * (n - 1), bytes / n);
        return 0;
    case COLL_ALL_GATHER:
    case COLL_REDUCE_SCATTER:
        ring_rounds(s, n, n - 1, bytes / n);
        return 0;
    case COLL_BROADCAST:
        SIM_ASSERT(root >= 0 && root < n, "root %d of %d", root, n);
        for (int k = 0; k < n - 1; k++) {
            begin_round(s);
            add_xfer(s, (root + k) % n, (root + k + 1) % n, bytes);
        }
        return 0;
    case COLL_SEND_RECV:
        SIM_ASSERT(n == 2, "send_recv over %d members", n);
        begin_round(s);
        add_xfer(s, 0, 1, bytes);
        return 0;
    case COLL_REDUCE:
    case COLL_ALL_TO_ALL:
    case COLL_OP_COUNT:
        break;
    }
    return SIM_ENOTSUP;
}

double coll_schedule_bytes_sent(const coll_schedule *s, int m)
{
    double sum = 0;
    for (size_t i = 0; i < s->n_xfers; i++)
        if (s->xfers[i].src == m)
            sum += s->xfers[i].bytes;
    return sum;
}
