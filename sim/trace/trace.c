/* The per-rank op DAG (see trace.h). */
#include "core/sim.h"

#include <stdio.h>
#include <string.h>

#include "trace/trace.h"

const char *trace_phase_name(trace_phase p)
{
    static const char *const names[TRACE_PHASE_COUNT] = {"fwd", "bwd", "opt", "comm"};
    SIM_ASSERT(p >= 0 && p < TRACE_PHASE_COUNT, "phase %d", (int)p);
    return names[p];
}

trace *trace_create(int n_ranks)
{
    SIM_ASSERT(n_ranks >= 1, "n_ranks=%d", n_ranks);
    trace *t = sim_calloc(1, sizeof *t);
    t->n_ranks = n_ranks;
    t->ranks = sim_calloc((size_t)n_ranks, sizeof *t->ranks);
    for (int r = 0; r < n_ranks; r++)
        t->ranks[r].tmpl = -1;
    return t;
}

void trace_destroy(trace *t)
{
    if (!t)
        return;
    for (int r = 0; r < t->n_ranks; r++)
        trace_release_rank(t, r);
    sim_free(t->ranks);
    for (size_t g = 0; g < t->n_groups; g++)
        sim_free(t->groups[g].ranks);
    sim_free(t->groups);
    sim_free(t->colls);
    for (size_t i = 0; i < t->n_names; i++)
        sim_free(t->names[i]);
    sim_free(t->names);
    sim_free(t->name_hash);
    sim_free(t);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

static void rehash(trace *t)
{
    size_t cap = t->hash_cap ? t->hash_cap * 2 : 256;
    uint32_t *h = sim_calloc(cap, sizeof *h);
    for (size_t i = 0; i < t->n_names; i++) {
        size_t k = hash_str(t->names[i]) & (cap - 1);
        while (h[k])
            k = (k + 1) & (cap - 1);
        h[k] = (uint32_t)i + 1;
    }
    sim_free(t->name_hash);
    t->name_hash = h;
    t->hash_cap = cap;
}

uint32_t trace_intern(trace *t, const char *name)
{
    if (2 * (t->n_names + 1) > t->hash_cap)
        rehash(t);
    size_t k = hash_str(name) & (t->hash_cap - 1);
    while (t->name_hash[k]) {
        uint32_t id = t->name_hash[k] - 1;
        if (strcmp(t->names[id], name) == 0)
            return id;
        k = (k + 1) & (t->hash_cap - 1);
    }
    SIM_GROW(t->names, t->cap_names, t->n_names + 1);
    uint32_t id = (uint32_t)t->n_names;
    t->names[t->n_names++] = sim_strdup(name);
    t->name_hash[k] = id + 1;
    return id;
}

const char *trace_name(const trace *t, uint32_t id)
{
    SIM_ASSERT(id < t->n_names, "name %u of %zu", id, t->n_names);
    return t->names[id];
}

uint32_t trace_add_group(trace *t, int cls, int n, const int32_t *ranks)
{
    SIM_ASSERT(cls >= 0 && cls < TRACE_GROUP_CLASSES && n >= 1, "group class %d of %d", cls, n);
    SIM_GROW(t->groups, t->cap_groups, t->n_groups + 1);
    trace_group *g = &t->groups[t->n_groups];
    g->cls = (uint8_t)cls;
    g->n = n;
    g->ranks = sim_calloc((size_t)n, sizeof *g->ranks);
    memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
    return (uint32_t)t->n_groups++;
}

uint32_t trace_add_coll(trace *t, coll_op op, int algo, uint32_t group, double bytes, int root)
{
    SIM_ASSERT(group < t->n_groups && bytes >= 0, "group %u bytes %g", group, bytes);
    SIM_GROW(t->colls, t->cap_colls, t->n_colls + 1);
    t->colls[t->n_colls] = (trace_coll){
        .op = (uint8_t)op, .algo = (uint8_t)algo, .group = group, .bytes = bytes, .root = root};
    return (uint32_t)t->n_colls++;
}

uint32_t trace_add_op(trace *t, int rank, const trace_op *op, const uint32_t *deps,
                      size_t n_deps)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks, "rank %d", rank);
    trace_rank *r = &t->ranks[rank];
    SIM_ASSERT(r->tmpl < 0, "adding an op to rank %d, which borrows rank %d's", rank, r->tmpl);
    r->finished = false;
    SIM_GROW(r->ops, r->cap_ops, r->n_ops + 1);
    SIM_GROW(r->deps, r->cap_deps, r->n_deps + n_deps);
    uint32_t idx = (uint32_t)r->n_ops;
    trace_op *o = &r->ops[r->n_ops++];
    *o = *op;
    o->dep_first = (uint32_t)r->n_deps;
    o->n_deps = (uint32_t)n_deps;
    o->mem_first = 0;
    o->n_mem = 0;
    if (o->kind == TRACE_OP_COLL) {
        trace_add_rank_coll(t, rank, op->coll);
        o->coll = (uint32_t)(r->n_colls - 1);
    }
    for (size_t i = 0; i < n_deps; i++) {
        SIM_ASSERT(deps[i] < idx, "rank %d op %u depends on later op %u", rank, idx, deps[i]);
        r->deps[r->n_deps++] = deps[i];
    }
    return idx;
}

void trace_add_rank_coll(trace *t, int rank, uint32_t coll)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks && coll < t->n_colls, "rank %d coll %u", rank,
               coll);
    trace_rank *r = &t->ranks[rank];
    SIM_GROW(r->colls, r->cap_colls, r->n_colls + 1);
    r->colls[r->n_colls++] = coll;
}

void trace_reserve_rank_colls(trace *t, int rank, size_t n)
{
    trace_rank *r = &t->ranks[rank];
    SIM_GROW(r->colls, r->cap_colls, r->n_colls + n);
}

void trace_share_rank(trace *t, int rank, int tmpl)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks && tmpl >= 0 && tmpl < t->n_ranks && rank != tmpl,
               "rank %d borrowing from %d", rank, tmpl);
    trace_rank *r = &t->ranks[rank];
    const trace_rank *s = &t->ranks[tmpl];
    SIM_ASSERT(r->n_ops == 0 && r->tmpl < 0 && s->tmpl < 0 && s->finished,
               "rank %d cannot borrow from rank %d", rank, tmpl);
    r->ops = s->ops;
    r->n_ops = s->n_ops;
    r->deps = s->deps;
    r->n_deps = s->n_deps;
    r->mem = s->mem;
    r->n_mem = s->n_mem;
    r->host = s->host;
    r->n_host = s->n_host;
    r->cap_ops = r->cap_deps = r->cap_mem = r->cap_host = 0;
    r->tmpl = tmpl;
}

/* Whether two ops are the same but, for compute ops, their FLOPs, model FLOPs, bytes and
 * inner dimension (field by field: an op's padding is not part of it). */
static bool same_op_but_values(const trace_op *a, const trace_op *b)
{
    bool same = a->kind == b->kind && a->stream == b->stream && a->phase == b->phase &&
                a->cls == b->cls && a->dtype == b->dtype && a->recompute == b->recompute &&
                a->copy == b->copy && a->layer == b->layer && a->microbatch == b->microbatch &&
                a->name == b->name && a->dep_first == b->dep_first && a->n_deps == b->n_deps &&
                a->mem_first == b->mem_first && a->n_mem == b->n_mem &&
                a->duration_ps == b->duration_ps;
    if (!same)
        return false;
    if (a->kind == TRACE_OP_COMPUTE)
        return true;
    if (a->kind == TRACE_OP_COLL)
        return a->coll == b->coll;
    return a->flops == b->flops && a->model_flops == b->model_flops && a->bytes == b->bytes;
}

/* Whether ops `a` and `b`, the same but for their values (same_op_but_values), have the
 * same values. */
static bool same_values(const trace_op *a, const trace_op *b)
{
    return a->flops == b->flops && a->model_flops == b->model_flops && a->bytes == b->bytes &&
           (a->kind != TRACE_OP_COMPUTE || a->inner == b->inner);
}

bool trace_adopt_template(trace *t, int rank, int tmpl)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks && tmpl >= 0 && tmpl < t->n_ranks && rank != tmpl,
               "rank %d adopting %d", rank, tmpl);
    trace_rank *r = &t->ranks[rank];
    const trace_rank *s = &t->ranks[tmpl];
    SIM_ASSERT(r->tmpl < 0 && r->finished && s->tmpl < 0 && s->finished,
               "rank %d cannot adopt rank %d", rank, tmpl);
    if (r->n_ops != s->n_ops || r->n_deps != s->n_deps || r->n_mem != s->n_mem ||
        r->n_colls != s->n_colls || r->n_host != s->n_host)
        return false;
    for (size_t i = 0; i < r->n_host; i++)
        if (r->host[i].op != s->host[i].op || r->host[i].launches != s->host[i].launches ||
            r->host[i].sync != s->host[i].sync)
            return false;
    if ((r->n_deps && memcmp(r->deps, s->deps, r->n_deps * sizeof *r->deps) != 0))
        return false;
    for (size_t i = 0; i < r->n_mem; i++) {
        const trace_mem *a = &r->mem[i], *b = &s->mem[i];
        if (a->bytes != b->bytes || a->op != b->op || a->cat != b->cat || a->at_end != b->at_end)
            return false;
    }
    size_t n_var = 0;
    for (size_t i = 0; i < r->n_ops; i++) {
        if (!same_op_but_values(&r->ops[i], &s->ops[i]))
            return false;
        n_var += !same_values(&r->ops[i], &s->ops[i]);
    }
    trace_op_var *var = n_var ? sim_calloc(n_var, sizeof *var) : NULL;
    size_t k = 0;
    for (size_t i = 0; i < r->n_ops; i++)
        if (!same_values(&r->ops[i], &s->ops[i]))
            var[k++] = (trace_op_var){(uint32_t)i,
                                      r->ops[i].kind == TRACE_OP_COMPUTE ? r->ops[i].inner : 0,
                                      r->ops[i].flops, r->ops[i].model_flops, r->ops[i].bytes};
    sim_free(r->ops);
    sim_free(r->deps);
    sim_free(r->mem);
    sim_free(r->host);
    r->ops = s->ops;
    r->deps = s->deps;
    r->mem = s->mem;
    r->host = s->host;
    r->cap_ops = r->cap_deps = r->cap_mem = r->cap_host = 0;
    r->tmpl = tmpl;
    r->var = var;
    r->n_var = n_var;
    return true;
}

void trace_set_host(trace *t, int rank, uint32_t op, uint32_t launches, bool sync)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks, "rank %d", rank);
    trace_rank *r = &t->ranks[rank];
    SIM_ASSERT(op < r->n_ops && r->tmpl < 0 && launches <= TRACE_LAUNCHES_MAX &&
                   (r->n_host == 0 || r->host[r->n_host - 1].op <= op),
               "rank %d: host entry for op %u of %zu", rank, op, r->n_ops);
    if (r->n_host > 0 && r->host[r->n_host - 1].op == op)
        r->n_host--;
    if (launches == 1 && !sync)
        return; /* as every op is issued */
    SIM_GROW(r->host, r->cap_host, r->n_host + 1);
    r->host[r->n_host++] = (trace_host){op, launches, sync};
}

void trace_add_mem(trace *t, int rank, uint32_t op, int cat, int64_t bytes, bool at_end)
{
    SIM_ASSERT(rank >= 0 && rank < t->n_ranks && cat >= 0 && cat < TRACE_MEM_CATS,
               "rank %d category %d", rank, cat);
    trace_rank *r = &t->ranks[rank];
    SIM_ASSERT(op < r->n_ops && r->tmpl < 0, "memory event for op %u of %zu", op, r->n_ops);
    if (bytes == 0)
        return;
    r->finished = false;
    SIM_GROW(r->mem, r->cap_mem, r->n_mem + 1);
    r->mem[r->n_mem++] = (trace_mem){.bytes = bytes, .op = op, .cat = (uint8_t)cat,
                                     .at_end = at_end};
}

void trace_finish(trace *t)
{
    for (int rk = 0; rk < t->n_ranks; rk++)
        trace_finish_rank(t, rk);
}

void trace_release_rank(trace *t, int rank)
{
    trace_rank *r = &t->ranks[rank];
    if (r->tmpl < 0) {
        sim_free(r->ops);
        sim_free(r->deps);
        sim_free(r->mem);
        sim_free(r->host);
    }
    sim_free(r->colls);
    sim_free(r->var);
    r->colls = NULL;
    r->var = NULL;
    r->n_colls = r->cap_colls = r->n_var = 0;
    r->tmpl = -1;
    r->finished = false;
    r->ops = NULL;
    r->deps = NULL;
    r->mem = NULL;
    r->host = NULL;
    r->n_ops = r->cap_ops = r->n_deps = r->cap_deps = r->n_mem = r->cap_mem = 0;
    r->n_host = r->cap_host = 0;
}

void trace_finish_rank(trace *t, int rk)
{
    trace_rank *r = &t->ranks[rk];
    if (r->tmpl >= 0 || r->finished)
        return; /* a borrower's template was finished before it was shared */
    r->finished = true;
    for (size_t i = 0; i < r->n_ops; i++)
        r->ops[i].n_mem = 0;
    for (size_t i = 0; i < r->n_mem; i++)
        r->ops[r->mem[i].op].n_mem++;
    uint32_t pos = 0;
    for (size_t i = 0; i < r->n_ops; i++) {
        r->ops[i].mem_first = pos;
        pos += r->ops[i].n_mem;
    }
    trace_mem *sorted = sim_calloc(r->n_mem + 1, sizeof *sorted);
    uint32_t *fill = sim_calloc(r->n_ops + 1, sizeof *fill);
    for (size_t i = 0; i < r->n_mem; i++) {
        const trace_mem *e = &r->mem[i];
        sorted[r->ops[e->op].mem_first + fill[e->op]++] = *e;
    }
    sim_free(fill);
    sim_free(r->mem);
    r->mem = sorted;
    r->cap_mem = r->n_mem + 1;
}

/* Records the first problem only. */
#define NOTE(buf, n, ...) (void)((buf)[0] ? 0 : snprintf((buf), (n), __VA_ARGS__))

/* Whether rank `rk` is a member of collective `ci`'s group (noted when not). `known[g]` is
 * rk + 1 once rk was found in group g: a rank's thousands of collectives are on a few
 * groups. */
static bool joins(const trace *t, int rk, size_t i, uint32_t ci, int32_t *known, char *why,
                  size_t n)
{
    uint32_t gi = t->colls[ci].group;
    if (known[gi] == rk + 1)
        return true;
    const trace_group *g = &t->groups[gi];
    for (int m = 0; m < g->n; m++)
        if (g->ranks[m] == rk) {
            known[gi] = rk + 1;
            return true;
        }
    NOTE(why, n, "rank %d op %zu joins collective %u of a group it is not in", rk, i, ci);
    return false;
}

/* The checks of one rank that owns its ops: streams, dependencies, collective ordinals
 * (the k-th collective op has ordinal k, as trace_add_op gives them) and membership. */
static int validate_ops(const trace *t, int rk, size_t *seen, int32_t *known, char *why,
                        size_t n)
{
    const trace_rank *r = &t->ranks[rk];
    for (size_t k = 0; k < r->n_host; k++)
        if (r->host[k].op >= r->n_ops || (k > 0 && r->host[k].op <= r->host[k - 1].op) ||
            r->host[k].launches > TRACE_LAUNCHES_MAX) {
            NOTE(why, n, "rank %d: host entry %zu (op %u) out of order or range", rk, k,
                 r->host[k].op);
            return -1;
        }
    uint32_t ordinal = 0;
    for (size_t i = 0; i < r->n_ops; i++) {
        const trace_op *o = &r->ops[i];
        if (o->stream >= TRACE_STREAMS || o->dep_first + o->n_deps > r->n_deps) {
            NOTE(why, n, "rank %d op %zu: bad stream or deps", rk, i);
            return -1;
        }
        for (uint32_t d = 0; d < o->n_deps; d++)
            if (r->deps[o->dep_first + d] >= i) {
                NOTE(why, n, "rank %d op %zu depends forward", rk, i);
                return -1;
            }
        if (o->kind != TRACE_OP_COLL)
            continue;
        if (o->coll != ordinal++ || o->coll >= r->n_colls || r->colls[o->coll] >= t->n_colls) {
            NOTE(why, n, "rank %d op %zu: no collective (ordinal %u)", rk, i, o->coll);
            return -1;
        }
        uint32_t ci = trace_op_coll(r, o);
        if (!joins(t, rk, i, ci, known, why, n))
            return -1;
        seen[ci]++;
    }
    if (ordinal != r->n_colls) {
        NOTE(why, n, "rank %d has %zu collectives for %u collective ops", rk, r->n_colls,
             ordinal);
        return -1;
    }
    return 0;
}

/* A rank's memory: its events balance per category over a step, and its persistent bytes
 * plus the sizes of its events (its owner's, for a borrower) stay within TRACE_MEM_SUM_MAX, so
 * no level the replay computes overflows. Sums are checked for overflow: events from a file
 * can be anything an int64_t holds. */
static int validate_mem(const trace *t, int rk, char *why, size_t n)
{
    int64_t sum[TRACE_MEM_CATS] = {0}, total = 0;
    const trace_rank *r = &t->ranks[rk];
    bool overflow = false;
    for (int c = 0; c < TRACE_MEM_CATS; c++)
        overflow |= r->base_mem[c] < 0 || __builtin_add_overflow(total, r->base_mem[c], &total);
    const trace_rank *owner = r->tmpl >= 0 ? &t->ranks[r->tmpl] : r;
    for (size_t i = 0; i < owner->n_mem && !overflow; i++) {
        const trace_mem *e = &owner->mem[i];
        int64_t b = e->bytes;
        overflow |= e->cat >= TRACE_MEM_CATS || b == INT64_MIN ||
                    __builtin_add_overflow(sum[e->cat], b, &sum[e->cat]) ||
                    __builtin_add_overflow(total, b < 0 ? -b : b, &total);
    }
    if (overflow || total > TRACE_MEM_SUM_MAX) {
        NOTE(why, n, "rank %d's persistent bytes and memory events add up to more than 2^60 "
             "bytes", rk);
        return -1;
    }
    if (r->tmpl >= 0)
        return 0; /* its owner's events, checked with the owner */
    for (int c = 0; c < TRACE_MEM_CATS; c++)
        if (sum[c] != 0) {
            NOTE(why, n, "rank %d leaks %lld bytes of memory category %d per step", rk,
                 (long long)sum[c], c);
            return -1;
        }
    return 0;
}

int trace_validate(const trace *t, char *why, size_t n)
{
    why[0] = '\0';
    size_t *seen = sim_calloc(t->n_colls ? t->n_colls : 1, sizeof *seen);
    int32_t *known = sim_calloc(t->n_groups ? t->n_groups : 1, sizeof *known);
    int rc = 0;
    /* ranks that own their ops first: a borrower is then checked against a checked owner */
    for (int rk = 0; rk < t->n_ranks && rc == 0; rk++)
        if (t->ranks[rk].tmpl < 0)
            rc = validate_ops(t, rk, seen, known, why, n);
    for (int rk = 0; rk < t->n_ranks && rc == 0; rk++) {
        const trace_rank *r = &t->ranks[rk];
        if (r->tmpl < 0)
            continue;
        /* a borrower runs its owner's ops (checked above), with its own collective of each
         * ordinal: the same number of them, each one it is a member of */
        if (r->n_colls != t->ranks[r->tmpl].n_colls) {
            NOTE(why, n, "rank %d has %zu collectives, its template rank %d %zu", rk,
                 r->n_colls, r->tmpl, t->ranks[r->tmpl].n_colls);
            rc = -1;
            break;
        }
        /* its own values: of compute and collective ops, each op once, in increasing order */
        for (size_t k = 0; k < r->n_var && rc == 0; k++)
            if (r->var[k].op >= r->n_ops || (k > 0 && r->var[k].op <= r->var[k - 1].op) ||
                (r->ops[r->var[k].op].kind != TRACE_OP_COMPUTE &&
                 r->ops[r->var[k].op].kind != TRACE_OP_COLL)) {
                NOTE(why, n, "rank %d: its own values of op %u, not a compute or collective op "
                     "of its template in increasing order", rk, r->var[k].op);
                rc = -1;
            }
        for (size_t k = 0; k < r->n_colls && rc == 0; k++) {
            if (r->colls[k] >= t->n_colls) {
                NOTE(why, n, "rank %d: no collective (ordinal %zu)", rk, k);
                rc = -1;
            } else if (!joins(t, rk, k, r->colls[k], known, why, n)) {
                rc = -1;
            } else {
                seen[r->colls[k]]++;
            }
        }
    }
    for (int rk = 0; rk < t->n_ranks && rc == 0; rk++)
        rc = validate_mem(t, rk, why, n);
    for (size_t c = 0; c < t->n_colls && rc == 0; c++)
        if (seen[c] != (size_t)t->groups[t->colls[c].group].n) {
            NOTE(why, n, "collective %zu has %zu member ops for a group of %d", c,
                    seen[c], t->groups[t->colls[c].group].n);
            rc = -1;
        }
    sim_free(seen);
    sim_free(known);
    return rc;
}

int trace__check(const trace *t)
{
    char why[256];
    int rc = trace_validate(t, why, sizeof why);
    if (rc)
        fprintf(stderr, "trace: %s\n", why);
    return rc;
}
