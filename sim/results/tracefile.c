/* Trace files (see tracefile.h; layout in docs/trace-format.md). Written with the table
 * primitives of h5table.c (big tables appended in bounded pieces), read back with h5read.c
 * in slices of rows, so neither side holds more than the trace itself. */
#include "core/sim.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results/h5-internal.h"
#include "results/h5read.h"
#include "results/tracefile.h"

#define SLICE 65536

static const char *const kind_names[] = {"compute", "coll", "copy", "host"};
static const char *stream_name(int s)
{
    if (s == TRACE_STREAM_COMPUTE)
        return "compute";
    if (s >= TRACE_STREAM_COMM(0) && s < TRACE_STREAM_COMM(TRACE_GROUP_CLASSES))
        return plan_group_name((plan_group_class)(s - TRACE_STREAM_COMM(0)));
    return s == TRACE_STREAM_OFFLOAD ? "offload" : s == TRACE_STREAM_HOST ? "host" : "p2p";
}

/* ---- rows ------------------------------------------------------------------------------ */

typedef struct rank_row {
    int32_t rank;
    int64_t mem[TRACE_MEM_CATS];
} rank_row;

typedef struct group_row {
    int32_t group;
    const char *cls;
    int32_t size;
} group_row;

typedef struct member_row {
    int32_t group, index, rank;
} member_row;

typedef struct coll_row {
    int32_t coll;
    const char *op, *algo;
    int32_t group;
    double bytes;
    int32_t root;
} coll_row;

typedef struct op_row {
    int32_t rank, op;
    const char *kind, *stream, *phase, *cls, *dtype;
    int32_t recompute, to_host, layer, microbatch;
    const char *name;
    int32_t coll;
    double flops, model_flops, bytes, duration_s;
    double inner; /* files written before it have none (read as 0) */
    int32_t launches, sync; /* the last columns (trace_host): files written before them
                               have none (each op one launch, no syncs) */
} op_row;

typedef struct dep_row {
    int32_t rank, op, on;
} dep_row;

typedef struct mem_row {
    int32_t rank, op;
    const char *category;
    int64_t bytes;
    int32_t at_end;
} mem_row;

#define MEM_COL(cat, name) {name, COL_I64, offsetof(rank_row, mem) + (cat) * sizeof(int64_t), "B"}
static const h5_col rank_cols[] = {
    {"rank", COL_I32, offsetof(rank_row, rank), NULL},
    MEM_COL(0, "params"), MEM_COL(1, "grads"), MEM_COL(2, "optimizer"),
    MEM_COL(3, "activations"), MEM_COL(4, "buffers"), MEM_COL(5, "other"),
};
static const h5_col group_cols[] = {
    {"group", COL_I32, offsetof(group_row, group), NULL},
    {"class", COL_STR, offsetof(group_row, cls), NULL},
    {"size", COL_I32, offsetof(group_row, size), NULL},
};
static const h5_col member_cols[] = {
    {"group", COL_I32, offsetof(member_row, group), NULL},
    {"index", COL_I32, offsetof(member_row, index), NULL},
    {"rank", COL_I32, offsetof(member_row, rank), NULL},
};
static const h5_col coll_cols[] = {
    {"coll", COL_I32, offsetof(coll_row, coll), NULL},
    {"op", COL_STR, offsetof(coll_row, op), NULL},
    {"algo", COL_STR, offsetof(coll_row, algo), NULL},
    {"group", COL_I32, offsetof(coll_row, group), NULL},
    {"bytes", COL_F64, offsetof(coll_row, bytes), "B"},
    {"root", COL_I32, offsetof(coll_row, root), NULL},
};
static const h5_col op_cols[] = {
    {"rank", COL_I32, offsetof(op_row, rank), NULL},
    {"op", COL_I32, offsetof(op_row, op), NULL},
    {"kind", COL_STR, offsetof(op_row, kind), NULL},
    {"stream", COL_STR, offsetof(op_row, stream), NULL},
    {"phase", COL_STR, offsetof(op_row, phase), NULL},
    {"class", COL_STR, offsetof(op_row, cls), NULL},
    {"dtype", COL_STR, offsetof(op_row, dtype), NULL},
    {"recompute", COL_I32, offsetof(op_row, recompute), NULL},
    {"to_host", COL_I32, offsetof(op_row, to_host), NULL},
    {"layer", COL_I32, offsetof(op_row, layer), NULL},
    {"microbatch", COL_I32, offsetof(op_row, microbatch), NULL},
    {"name", COL_STR, offsetof(op_row, name), NULL},
    {"coll", COL_I32, offsetof(op_row, coll), NULL},
    {"flops", COL_F64, offsetof(op_row, flops), "FLOP"},
    {"model_flops", COL_F64, offsetof(op_row, model_flops), "FLOP"},
    {"bytes", COL_F64, offsetof(op_row, bytes), "B"},
    {"duration_s", COL_F64, offsetof(op_row, duration_s), "s"},
    {"inner", COL_F64, offsetof(op_row, inner), NULL},
    {"launches", COL_I32, offsetof(op_row, launches), NULL},
    {"sync", COL_I32, offsetof(op_row, sync), NULL},
};
static const h5_col dep_cols[] = {
    {"rank", COL_I32, offsetof(dep_row, rank), NULL},
    {"op", COL_I32, offsetof(dep_row, op), NULL},
    {"on", COL_I32, offsetof(dep_row, on), NULL},
};
static const h5_col mem_cols[] = {
    {"rank", COL_I32, offsetof(mem_row, rank), NULL},
    {"op", COL_I32, offsetof(mem_row, op), NULL},
    {"category", COL_STR, offsetof(mem_row, category), NULL},
    {"bytes", COL_I64, offsetof(mem_row, bytes), "B"},
    {"at_end", COL_I32, offsetof(mem_row, at_end), NULL},
};

#define TABLE(name, cols, row) \
    (h5_table) { name, cols, SIM_ARRAY_LEN(cols), sizeof(row), NULL, 0, true, NULL }

/* ---- writing --------------------------------------------------------------------------- */

static void write_tables(h5_writer *w, const plan *p)
{
    const trace *t = p->trace;
    hid_t root = w->file;
    rank_row *ranks = sim_calloc((size_t)t->n_ranks + 1, sizeof *ranks);
    for (int r = 0; r < t->n_ranks; r++) {
        ranks[r].rank = r;
        memcpy(ranks[r].mem, t->ranks[r].base_mem, sizeof ranks[r].mem);
    }
    h5_table rt = {"ranks", rank_cols, SIM_ARRAY_LEN(rank_cols), sizeof *ranks, ranks,
                   (size_t)t->n_ranks, false, NULL};
    results__h5_write_table(w, root, "/", &rt);
    sim_free(ranks);

    h5_appender a;
    h5_table gt = TABLE("groups", group_cols, group_row);
    results__h5_append_begin(&a, w, root, "/", &gt);
    for (size_t g = 0; g < t->n_groups && !w->rc; g++) {
        group_row row = {(int32_t)g, plan_group_name((plan_group_class)t->groups[g].cls),
                         t->groups[g].n};
        results__h5_append(&a, &row, 1);
    }
    results__h5_append_end(&a);
    h5_table mt = TABLE("group_members", member_cols, member_row);
    results__h5_append_begin(&a, w, root, "/", &mt);
    for (size_t g = 0; g < t->n_groups && !w->rc; g++)
        for (int m = 0; m < t->groups[g].n; m++) {
            member_row row = {(int32_t)g, m, t->groups[g].ranks[m]};
            results__h5_append(&a, &row, 1);
        }
    results__h5_append_end(&a);
    h5_table ct = TABLE("colls", coll_cols, coll_row);
    results__h5_append_begin(&a, w, root, "/", &ct);
    for (size_t c = 0; c < t->n_colls && !w->rc; c++) {
        const trace_coll *tc = &t->colls[c];
        coll_row row = {(int32_t)c, coll_op_name((coll_op)tc->op),
                        plan_coll_algo_name((plan_coll_algo)tc->algo), (int32_t)tc->group,
                        tc->bytes, tc->root};
        results__h5_append(&a, &row, 1);
    }
    results__h5_append_end(&a);

    h5_appender ops, deps, mem;
    h5_table ot = TABLE("ops", op_cols, op_row), dt = TABLE("deps", dep_cols, dep_row),
             et = TABLE("mem", mem_cols, mem_row);
    results__h5_append_begin(&ops, w, root, "/", &ot);
    results__h5_append_begin(&deps, w, root, "/", &dt);
    results__h5_append_begin(&mem, w, root, "/", &et);
    for (int r = 0; r < t->n_ranks && !w->rc; r++) {
        const trace_rank *tr = &t->ranks[r];
        for (size_t i = 0; i < tr->n_ops && !w->rc; i++) {
            const trace_op *o = &tr->ops[i];
            trace_op_var v = trace_op_values(tr, (uint32_t)i); /* the rank's own values */
            trace_host h = trace_host_of(tr, (uint32_t)i);
            op_row row = {
                .rank = r,
                .op = (int32_t)i,
                .kind = kind_names[o->kind],
                .stream = stream_name(o->stream),
                .phase = trace_phase_name((trace_phase)o->phase),
                .cls = hw_op_class_name((hw_op_class)o->cls),
                .dtype = hw_dtype_name((hw_dtype)o->dtype),
                .recompute = o->recompute,
                .to_host = o->copy,
                .layer = o->layer,
                .microbatch = o->microbatch,
                .name = trace_name(t, o->name),
                .coll = o->kind == TRACE_OP_COLL ? (int32_t)trace_op_coll(tr, o) : -1,
                .flops = v.flops,
                .model_flops = v.model_flops,
                .bytes = v.bytes,
                .duration_s = o->duration_ps == TRACE_MEASURED_NONE
                                  ? -1
                                  : sim_time_to_s(o->duration_ps),
                .inner = o->kind == TRACE_OP_COMPUTE ? v.inner : 0,
                .launches = (int32_t)h.launches,
                .sync = h.sync,
            };
            results__h5_append(&ops, &row, 1);
            for (uint32_t d = 0; d < o->n_deps; d++) {
                dep_row dr = {r, (int32_t)i, (int32_t)tr->deps[o->dep_first + d]};
                results__h5_append(&deps, &dr, 1);
            }
            for (uint32_t k = 0; k < o->n_mem; k++) {
                const trace_mem *e = &tr->mem[o->mem_first + k];
                mem_row er = {r, (int32_t)i, plan_mem_cat_name((plan_mem_cat)e->cat), e->bytes,
                              e->at_end};
                results__h5_append(&mem, &er, 1);
            }
        }
    }
    results__h5_append_end(&ops);
    results__h5_append_end(&deps);
    results__h5_append_end(&mem);
}

int results_trace_write(const char *path, const char *command, const char *scenario_yaml,
                   const plan *p, sim_diag *diag)
{
    SIM_ASSERT(p->trace, "plan without a trace");
    h5_writer w;
    if (results__h5_create(&w, path, diag, 0) == 0) {
        hid_t root = w.file;
        results__h5_attr_str(&w, root, "/", "stepsim_version", STEPSIM_VERSION);
        if (!w.rc)
            results__h5_attr_int(&w, root, "/", "trace_format_version",
                                 RESULTS_TRACE_FORMAT_VERSION);
        if (!w.rc)
            results__h5_attr_str(&w, root, "/", "command", command);
        if (!w.rc)
            results__h5_attr_str(&w, root, "/", "scenario", scenario_yaml);
        if (!w.rc)
            results__h5_attr_f64(&w, root, "/", "global_batch", (double)p->global_batch);
        if (!w.rc)
            results__h5_attr_f64(&w, root, "/", "model_flops_per_step", p->model_flops_per_step);
        if (!w.rc)
            results__h5_attr_f64(&w, root, "/", "hardware_flops_per_step",
                            p->hardware_flops_per_step);
        if (!w.rc)
            results__h5_attr_int(&w, root, "/", "moe", p->moe);
        if (!w.rc)
            results__h5_attr_f64(&w, root, "/", "moe_dropped_fraction", p->moe_dropped_fraction);
        if (!w.rc)
            results__h5_attr_f64(&w, root, "/", "moe_load_max_over_mean",
                                 p->moe_load_max_over_mean);
        if (!w.rc)
            write_tables(&w, p);
    }
    return results__h5_finish(&w);
}

/* ---- reading --------------------------------------------------------------------------- */

typedef struct reader {
    results_h5r_file *f;
    const char *path;
    sim_diag *diag;
    trace *t;
} reader;

/* The index of `s` in names[0..n), or -1. */
static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* "PATH: /TABLE row N: error: MSG" (arg, when given, fills MSG's one %s). */
static int bad_row(reader *rd, const char *table, size_t row, const char *fmt, const char *arg)
{
    char msg[256], where[SIM_DIAG_FILE_MAX];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    snprintf(where, sizeof where, "%s: /%s row %zu", rd->path, table, row);
    return sim_diag_error(rd->diag, where, 0, 0, "%s", msg);
}

/* "PATH: / attribute NAME: error: MSG" */
static int bad_attr(reader *rd, const char *name, const char *msg)
{
    char where[SIM_DIAG_FILE_MAX];
    snprintf(where, sizeof where, "%s: / attribute %s", rd->path, name);
    return sim_diag_error(rd->diag, where, 0, 0, "%s", msg);
}

/* Whether a size read from the file is finite and within [0, TRACE_BYTES_MAX]. */
static bool size_ok(double bytes)
{
    return bytes >= 0 && bytes <= TRACE_BYTES_MAX;
}

/* Reads table `name` slice by slice, calling fn(rd, rows, first, n, ud) on each. */
typedef int (*slice_fn)(reader *rd, void *rows, size_t first, size_t n, void *ud);
typedef struct slice_call {
    reader *rd;
    slice_fn fn;
    void *ud;
} slice_call;

static int call_slice(void *ud, void *rows, size_t first, size_t n)
{
    slice_call *c = ud;
    return c->fn(c->rd, rows, first, n, c->ud);
}

static int each_slice(reader *rd, const char *name, const h5_col *cols, size_t n_cols,
                      size_t row_size, slice_fn fn, void *ud)
{
    results_h5r_field fields[24];
    SIM_ASSERT(n_cols <= SIM_ARRAY_LEN(fields), "%zu columns", n_cols);
    for (size_t i = 0; i < n_cols; i++)
        fields[i] = (results_h5r_field){cols[i].name,
                                   cols[i].type == COL_I32   ? RESULTS_H5R_I32
                                   : cols[i].type == COL_I64 ? RESULTS_H5R_I64
                                   : cols[i].type == COL_F64 ? RESULTS_H5R_F64
                                                             : RESULTS_H5R_STR,
                                   cols[i].offset};
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    slice_call c = {rd, fn, ud};
    return results_h5r_for_each(rd->f, path, fields, n_cols, row_size, SLICE, call_slice, &c);
}

typedef struct group_state {
    group_row *groups; /* copied, class as an index in cls */
    int *cls;
    size_t n;
    int32_t **members;
    int *filled;
    size_t member_rows, sizes; /* rows of /group_members; the groups' sizes so far */
    size_t *seen;              /* per rank: 1 + the last group that listed it */
} group_state;

static int read_groups(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    group_state *gs = ud;
    const group_row *r = rows;
    const char *names[TRACE_GROUP_CLASSES];
    for (int c = 0; c < TRACE_GROUP_CLASSES; c++)
        names[c] = plan_group_name((plan_group_class)c);
    for (size_t i = 0; i < n; i++) {
        size_t row = first + i;
        int cls = lookup(r[i].cls, names, TRACE_GROUP_CLASSES);
        if (r[i].group != (int32_t)row)
            return bad_row(rd, "groups", row, "groups must be numbered 0, 1, 2... in order%s",
                           NULL);
        if (cls < 0)
            return bad_row(rd, "groups", row, "unknown class '%s' (dp, tp, pp, ep or cp)",
                           r[i].cls);
        if (r[i].size < 1 || r[i].size > rd->t->n_ranks)
            return bad_row(rd, "groups", row, "size out of range%s", NULL);
        gs->sizes += (size_t)r[i].size;
        if (gs->sizes > gs->member_rows)
            return bad_row(rd, "groups", row, "the groups' sizes add up to more than the rows "
                                              "of /group_members%s", NULL);
        gs->groups = sim_realloc_array(gs->groups, gs->n + 1, sizeof *gs->groups);
        gs->cls = sim_realloc_array(gs->cls, gs->n + 1, sizeof *gs->cls);
        gs->members = sim_realloc_array(gs->members, gs->n + 1, sizeof *gs->members);
        gs->filled = sim_realloc_array(gs->filled, gs->n + 1, sizeof *gs->filled);
        gs->groups[gs->n] = (group_row){r[i].group, NULL, r[i].size};
        gs->cls[gs->n] = cls;
        gs->members[gs->n] = sim_calloc((size_t)r[i].size, sizeof **gs->members);
        gs->filled[gs->n] = 0;
        gs->n++;
    }
    return 0;
}

static int read_members(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    group_state *gs = ud;
    const member_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        size_t row = first + i;
        if (r[i].group < 0 || (size_t)r[i].group >= gs->n)
            return bad_row(rd, "group_members", row, "no such group%s", NULL);
        int g = r[i].group;
        if (r[i].index != gs->filled[g] || r[i].index >= gs->groups[g].size)
            return bad_row(rd, "group_members", row,
                           "members must be listed in index order 0..size-1%s", NULL);
        if (r[i].rank < 0 || r[i].rank >= rd->t->n_ranks)
            return bad_row(rd, "group_members", row, "rank out of range%s", NULL);
        if (gs->seen[r[i].rank] == (size_t)g + 1)
            return bad_row(rd, "group_members", row, "a rank is listed twice in its group%s",
                           NULL);
        gs->seen[r[i].rank] = (size_t)g + 1;
        gs->members[g][gs->filled[g]++] = r[i].rank;
    }
    return 0;
}

static int read_colls(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    (void)ud;
    const coll_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        size_t row = first + i;
        int op = r[i].op ? coll_op_parse(r[i].op) : -1;
        int algo = -1;
        for (int a = 0; a < PLAN_COLL_ALGO_COUNT; a++)
            if (r[i].algo && strcmp(r[i].algo, plan_coll_algo_name((plan_coll_algo)a)) == 0)
                algo = a;
        if (r[i].coll != (int32_t)row)
            return bad_row(rd, "colls", row, "collectives must be numbered 0, 1, 2... in order%s",
                           NULL);
        if (op < 0)
            return bad_row(rd, "colls", row, "unknown operation '%s'", r[i].op);
        if (algo < 0)
            return bad_row(rd, "colls", row, "unknown algorithm '%s'", r[i].algo);
        if (r[i].group < 0 || (size_t)r[i].group >= rd->t->n_groups)
            return bad_row(rd, "colls", row, "no such group%s", NULL);
        if (!size_ok(r[i].bytes))
            return bad_row(rd, "colls", row, "bytes must be a number from 0 to 2^53%s", NULL);
        int size = rd->t->groups[r[i].group].n;
        if (r[i].root < 0 || r[i].root >= size)
            return bad_row(rd, "colls", row, "root must be a member index of the group%s", NULL);
        if (op == COLL_SEND_RECV && size != 2)
            return bad_row(rd, "colls", row, "send_recv needs a group of 2%s", NULL);
        trace_add_coll(rd->t, (coll_op)op, algo, (uint32_t)r[i].group, r[i].bytes, r[i].root);
    }
    return 0;
}

/* ops and deps are read side by side: deps sorted by (rank, op) like ops */
typedef struct op_state {
    results_h5r_table *deps;
    size_t n_deps, dep_at;  /* rows in the table, next row to look at */
    dep_row *buf;           /* slice of deps rows */
    size_t buf_first, buf_n;
    uint32_t *on;
    size_t cap_on;
    int32_t last_rank, next_op;
    bool host; /* the file has the launches and sync columns */
} op_state;

/* The next dep row, or NULL at the end; 0/NULL on error with *rc set. */
static const dep_row *peek_dep(reader *rd, op_state *os, int *rc)
{
    if (os->dep_at >= os->n_deps)
        return NULL;
    if (os->dep_at >= os->buf_first + os->buf_n) {
        results_h5r_release(os->deps, os->buf, os->buf_n);
        os->buf_first = os->dep_at;
        os->buf_n = SIM_MIN((size_t)SLICE, os->n_deps - os->dep_at);
        *rc = results_h5r_table_read(os->deps, os->buf_first, os->buf_n, os->buf);
        if (*rc) {
            os->buf_n = 0;
            return NULL;
        }
    }
    (void)rd;
    return &os->buf[os->dep_at - os->buf_first];
}

static int read_ops(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    op_state *os = ud;
    const op_row *r = rows;
    const char *streams[TRACE_STREAMS], *phases[TRACE_PHASE_COUNT], *dtypes[HW_DTYPE_COUNT];
    const char *classes[HW_OP_CLASS_COUNT];
    for (int s = 0; s < TRACE_STREAMS; s++)
        streams[s] = stream_name(s);
    for (int p = 0; p < TRACE_PHASE_COUNT; p++)
        phases[p] = trace_phase_name((trace_phase)p);
    for (int d = 0; d < HW_DTYPE_COUNT; d++)
        dtypes[d] = hw_dtype_name((hw_dtype)d);
    for (int k = 0; k < HW_OP_CLASS_COUNT; k++)
        classes[k] = hw_op_class_name((hw_op_class)k);
    for (size_t i = 0; i < n; i++) {
        size_t row = first + i;
        const op_row *o = &r[i];
        if (o->rank != os->last_rank) {
            if (o->rank < os->last_rank || o->rank >= rd->t->n_ranks)
                return bad_row(rd, "ops", row, "ops must be sorted by rank (0..ranks-1)%s", NULL);
            os->last_rank = o->rank;
            os->next_op = 0;
        }
        if (o->op != os->next_op)
            return bad_row(rd, "ops", row, "a rank's ops must be numbered 0, 1, 2... in order%s",
                           NULL);
        int kind = lookup(o->kind, kind_names, 4),
            stream = lookup(o->stream, streams, TRACE_STREAMS);
        int phase = lookup(o->phase, phases, TRACE_PHASE_COUNT);
        int cls = lookup(o->cls, classes, HW_OP_CLASS_COUNT);
        int dtype = lookup(o->dtype, dtypes, HW_DTYPE_COUNT);
        if (kind < 0)
            return bad_row(rd, "ops", row, "unknown kind '%s' (compute, coll, copy or host)",
                           o->kind);
        if (stream < 0)
            return bad_row(rd, "ops", row, "unknown stream '%s'", o->stream);
        if (phase < 0)
            return bad_row(rd, "ops", row, "unknown phase '%s' (fwd, bwd, opt or comm)", o->phase);
        if (cls < 0)
            return bad_row(rd, "ops", row,
                           "unknown class '%s' (matmul, vector, attn_fwd, attn_bwd, "
                           "attn_fwd_full or attn_bwd_full)",
                           o->cls);
        if (dtype < 0)
            return bad_row(rd, "ops", row, "unknown dtype '%s'", o->dtype);
        if (kind == TRACE_OP_COLL && (o->coll < 0 || (size_t)o->coll >= rd->t->n_colls))
            return bad_row(rd, "ops", row, "a coll op must name a collective of /colls%s", NULL);
        if (!(o->flops >= 0 && o->flops <= TRACE_FLOPS_MAX) ||
            !(o->model_flops >= 0 && o->model_flops <= TRACE_FLOPS_MAX))
            return bad_row(rd, "ops", row, "flops and model_flops must be numbers from 0 to "
                                           "1e21%s", NULL);
        if (!size_ok(o->bytes))
            return bad_row(rd, "ops", row, "bytes must be a number from 0 to 2^53%s", NULL);
        if (!(o->inner >= 0) || !(o->inner <= FLT_MAX))
            return bad_row(rd, "ops", row, "inner is a matmul's inner dimension or an attention "
                                           "kernel's head dimension, >= 0 (0: not known), or a "
                                           "vector op's 0 or 1 (eager PyTorch's own kernel)%s",
                           NULL);
        if (o->duration_s != -1 && !(o->duration_s >= 0 && o->duration_s <= TRACE_DURATION_MAX_S))
            return bad_row(rd, "ops", row, "duration_s is -1 (modelled) or a duration from 0 "
                                           "to 1e6 s%s", NULL);
        int32_t launches = os->host ? o->launches : 1, sync = os->host ? o->sync : 0;
        if (launches < 0 || (uint32_t)launches > TRACE_LAUNCHES_MAX)
            return bad_row(rd, "ops", row, "launches is the kernel launches the op stands for, "
                                           "from 0 to 2^24%s", NULL);
        if (sync != 0 && sync != 1)
            return bad_row(rd, "ops", row, "sync is 0 or 1 (1: the host waits for every op up "
                                           "to this one to end before issuing the next)%s",
                           NULL);
        if (kind == TRACE_OP_HOST && o->duration_s < 0)
            return bad_row(rd, "ops", row, "a host op needs its duration_s%s", NULL);
        if (kind == TRACE_OP_COMPUTE && cls == HW_OP_VECTOR && o->inner != 0 &&
            o->inner != HW_VECTOR_EAGER)
            return bad_row(rd, "ops", row, "a vector op's inner is 0, or 1 for one of eager "
                                           "PyTorch's own kernels (timed by the GPU's "
                                           "memory_efficiency_eager)%s", NULL);
        if (kind == TRACE_OP_COPY && (o->to_host < 0 || o->to_host >= TRACE_COPY_COUNT))
            return bad_row(rd, "ops", row, "a copy's to_host is 0 (host to device), 1 (device to "
                                           "host), 2 (drive to host) or 3 (host to drive)%s",
                           NULL);
        /* its dependencies */
        size_t n_on = 0;
        int rc = 0;
        const dep_row *d;
        while ((d = peek_dep(rd, os, &rc)) && d->rank == o->rank && d->op == o->op) {
            if (d->on < 0 || d->on >= o->op)
                return bad_row(rd, "deps", os->dep_at,
                               "an op may only wait for an earlier op of its rank%s", NULL);
            SIM_GROW(os->on, os->cap_on, n_on + 1);
            os->on[n_on++] = (uint32_t)d->on;
            os->dep_at++;
        }
        if (rc)
            return rc;
        if (d && (d->rank < o->rank || (d->rank == o->rank && d->op < o->op)))
            return bad_row(rd, "deps", os->dep_at,
                           "dependencies must be sorted by rank and op, and name existing "
                           "ops%s", NULL);
        trace_op op = {
            .kind = (uint8_t)kind,
            .stream = (uint8_t)stream,
            .phase = (uint8_t)phase,
            .cls = (uint8_t)cls,
            .dtype = (uint8_t)dtype,
            .recompute = o->recompute != 0,
            .copy = kind == TRACE_OP_COPY ? (uint8_t)o->to_host : 0,
            .layer = o->layer,
            .microbatch = o->microbatch,
            .name = trace_intern(rd->t, o->name ? o->name : ""),
            .coll = kind == TRACE_OP_COLL ? (uint32_t)o->coll : 0,
            .flops = o->flops,
            .model_flops = o->model_flops,
            .bytes = o->bytes,
            .duration_ps = o->duration_s < 0 ? TRACE_MEASURED_NONE : sim_time_from_s(o->duration_s),
        };
        if (kind == TRACE_OP_COMPUTE) /* k, attention's head dim, or a vector op's eager mark */
            op.inner = (float)o->inner;
        uint32_t at = trace_add_op(rd->t, o->rank, &op, os->on, n_on);
        trace_set_host(rd->t, o->rank, at, (uint32_t)launches, sync != 0);
        os->next_op++;
    }
    return 0;
}

static int read_mem(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    (void)ud;
    const mem_row *r = rows;
    const char *cats[TRACE_MEM_CATS];
    for (int c = 0; c < TRACE_MEM_CATS; c++)
        cats[c] = plan_mem_cat_name((plan_mem_cat)c);
    for (size_t i = 0; i < n; i++) {
        size_t row = first + i;
        int cat = lookup(r[i].category, cats, TRACE_MEM_CATS);
        if (r[i].rank < 0 || r[i].rank >= rd->t->n_ranks || r[i].op < 0 ||
            (size_t)r[i].op >= rd->t->ranks[r[i].rank].n_ops)
            return bad_row(rd, "mem", row, "no such rank and op%s", NULL);
        if (cat < 0)
            return bad_row(rd, "mem", row, "unknown category '%s'", r[i].category);
        if (!(r[i].bytes >= -(int64_t)TRACE_BYTES_MAX && r[i].bytes <= (int64_t)TRACE_BYTES_MAX))
            return bad_row(rd, "mem", row, "bytes must be from -2^53 to 2^53%s", NULL);
        trace_add_mem(rd->t, r[i].rank, (uint32_t)r[i].op, cat, r[i].bytes, r[i].at_end != 0);
    }
    return 0;
}

static int read_ranks(reader *rd, void *rows, size_t first, size_t n, void *ud)
{
    (void)ud;
    const rank_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        if (r[i].rank != (int32_t)(first + i))
            return bad_row(rd, "ranks", first + i, "ranks must be numbered 0, 1, 2... in "
                                                   "order%s", NULL);
        for (int c = 0; c < TRACE_MEM_CATS; c++)
            if (r[i].mem[c] < 0 || r[i].mem[c] > (int64_t)TRACE_BYTES_MAX)
                return bad_row(rd, "ranks", first + i, "persistent bytes must be from 0 to "
                                                       "2^53%s", NULL);
        memcpy(rd->t->ranks[first + i].base_mem, r[i].mem, sizeof r[i].mem);
    }
    return 0;
}

static int read_all(reader *rd, results_trace_info *info)
{
    results_h5r_file *f = rd->f;
    info->scenario_yaml = results_h5r_attr_str(f, "/", "scenario");
    double gb = 0;
    int moe = 0;
    if (!info->scenario_yaml || results_h5r_attr_f64(f, "/", "global_batch", &gb) ||
        results_h5r_attr_f64(f, "/", "model_flops_per_step", &info->model_flops_per_step) ||
        results_h5r_attr_f64(f, "/", "hardware_flops_per_step", &info->hardware_flops_per_step) ||
        results_h5r_attr_int(f, "/", "moe", &moe) ||
        results_h5r_attr_f64(f, "/", "moe_dropped_fraction", &info->moe_dropped_fraction) ||
        results_h5r_attr_f64(f, "/", "moe_load_max_over_mean", &info->moe_load_max_over_mean))
        return SIM_EINVAL;
    /* every number before its use: NaN fails every comparison below */
    if (!(gb >= 1 && gb <= TRACE_BYTES_MAX) || gb != floor(gb))
        return bad_attr(rd, "global_batch", "must be a whole number from 1 to 2^53");
    if (!(info->model_flops_per_step >= 0 && info->model_flops_per_step <= DBL_MAX))
        return bad_attr(rd, "model_flops_per_step", "must be a finite number >= 0");
    if (!(info->hardware_flops_per_step >= info->model_flops_per_step &&
          info->hardware_flops_per_step <= DBL_MAX))
        return bad_attr(rd, "hardware_flops_per_step",
                        "must be a finite number >= model_flops_per_step");
    if (moe != 0 && moe != 1)
        return bad_attr(rd, "moe", "must be 0 or 1");
    if (!(info->moe_dropped_fraction >= 0 && info->moe_dropped_fraction <= 1))
        return bad_attr(rd, "moe_dropped_fraction", "must be a number from 0 to 1");
    if (!(info->moe_load_max_over_mean >= 0 && info->moe_load_max_over_mean <= DBL_MAX))
        return bad_attr(rd, "moe_load_max_over_mean", "must be a finite number >= 0");
    info->global_batch = (int64_t)gb;
    info->moe = moe != 0;
    size_t n_ranks = 0;
    {
        static const results_h5r_field rf[] = {{"rank", RESULTS_H5R_I32, 0}};
        results_h5r_table *t = NULL;
        int rc = results_h5r_table_open(f, "/ranks", rf, 1, sizeof(int32_t), &t);
        if (rc)
            return rc;
        n_ranks = results_h5r_table_rows(t);
        results_h5r_table_close(t);
    }
    if (n_ranks == 0 || n_ranks > (1u << 24)) {
        char where[SIM_DIAG_FILE_MAX];
        snprintf(where, sizeof where, "%s: /ranks", rd->path);
        return sim_diag_error(rd->diag, where, 0, 0, "%zu ranks (a trace has 1 to 2^24)",
                              n_ranks);
    }
    rd->t = trace_create((int)n_ranks);
    int rc = each_slice(rd, "ranks", rank_cols, SIM_ARRAY_LEN(rank_cols), sizeof(rank_row),
                        read_ranks, NULL);
    group_state gs = {0};
    if (!rc) { /* the groups' sizes are bounded by the member rows, before any allocation */
        static const results_h5r_field mf[] = {{"group", RESULTS_H5R_I32, 0}};
        results_h5r_table *t = NULL;
        rc = results_h5r_table_open(f, "/group_members", mf, 1, sizeof(int32_t), &t);
        if (!rc)
            gs.member_rows = results_h5r_table_rows(t);
        results_h5r_table_close(t);
        gs.seen = sim_calloc(n_ranks, sizeof *gs.seen);
    }
    if (!rc)
        rc = each_slice(rd, "groups", group_cols, SIM_ARRAY_LEN(group_cols), sizeof(group_row),
                        read_groups, &gs);
    if (!rc)
        rc = each_slice(rd, "group_members", member_cols, SIM_ARRAY_LEN(member_cols),
                        sizeof(member_row), read_members, &gs);
    for (size_t g = 0; !rc && g < gs.n; g++) {
        if (gs.filled[g] != gs.groups[g].size) {
            char where[SIM_DIAG_FILE_MAX];
            snprintf(where, sizeof where, "%s: /group_members", rd->path);
            rc = sim_diag_error(rd->diag, where, 0, 0, "group %zu lists %d of its %d members",
                                g, gs.filled[g], gs.groups[g].size);
            break;
        }
        trace_add_group(rd->t, gs.cls[g], gs.groups[g].size, gs.members[g]);
    }
    for (size_t g = 0; g < gs.n; g++)
        sim_free(gs.members[g]);
    sim_free(gs.members);
    sim_free(gs.groups);
    sim_free(gs.cls);
    sim_free(gs.filled);
    sim_free(gs.seen);
    if (!rc)
        rc = each_slice(rd, "colls", coll_cols, SIM_ARRAY_LEN(coll_cols), sizeof(coll_row),
                        read_colls, NULL);
    if (!rc) {
        results_h5r_field df[3];
        for (int i = 0; i < 3; i++)
            df[i] = (results_h5r_field){dep_cols[i].name, RESULTS_H5R_I32, dep_cols[i].offset};
        op_state os = {.last_rank = 0, .next_op = 0};
        rc = results_h5r_table_open(f, "/deps", df, 3, sizeof(dep_row), &os.deps);
        if (!rc) {
            os.n_deps = results_h5r_table_rows(os.deps);
            os.buf = sim_calloc(SLICE, sizeof *os.buf);
            /* the last columns, inner then launches and sync, are optional: a file from
             * before them has none (inner read as 0, each op one launch without a sync) */
            h5_col cols[SIM_ARRAY_LEN(op_cols)];
            size_t n_cols = 0;
            bool has_l = results_h5r_has_column(f, "/ops", "launches"),
                 has_s = results_h5r_has_column(f, "/ops", "sync");
            os.host = has_l && has_s;
            if (has_l != has_s) {
                char where[SIM_DIAG_FILE_MAX];
                snprintf(where, sizeof where, "%s: /ops", rd->path);
                rc = sim_diag_error(rd->diag, where, 0, 0, "column %s without column %s (the "
                                    "host's issue: both or neither)",
                                    has_l ? "launches" : "sync", has_l ? "sync" : "launches");
            }
            for (size_t i = 0; i < SIM_ARRAY_LEN(op_cols); i++) {
                bool host = strcmp(op_cols[i].name, "launches") == 0 ||
                            strcmp(op_cols[i].name, "sync") == 0;
                if ((host && !os.host) ||
                    (strcmp(op_cols[i].name, "inner") == 0 &&
                     !results_h5r_has_column(f, "/ops", "inner")))
                    continue;
                cols[n_cols++] = op_cols[i];
            }
            if (!rc)
                rc = each_slice(rd, "ops", cols, n_cols, sizeof(op_row), read_ops, &os);
            if (!rc && os.dep_at < os.n_deps)
                rc = bad_row(rd, "deps", os.dep_at, "no such op (rows must be sorted by rank "
                                                    "and op)%s", NULL);
            results_h5r_release(os.deps, os.buf, os.buf_n);
            sim_free(os.buf);
            sim_free(os.on);
            results_h5r_table_close(os.deps);
        }
    }
    if (!rc)
        rc = each_slice(rd, "mem", mem_cols, SIM_ARRAY_LEN(mem_cols), sizeof(mem_row), read_mem,
                        NULL);
    if (!rc) {
        trace_finish(rd->t);
        char why[256];
        if (trace_validate(rd->t, why, sizeof why))
            rc = sim_diag_error(rd->diag, rd->path, 0, 0, "the trace is inconsistent: %s", why);
    }
    return rc;
}

int results_trace_read(const char *path, trace **out, results_trace_info *info, sim_diag *diag)
{
    memset(info, 0, sizeof *info);
    *out = NULL;
    reader rd = {.path = path, .diag = diag};
    int rc = results_h5r_open_kind(path, "trace_format_version", RESULTS_TRACE_FORMAT_VERSION,
                              "trace file", &rd.f, diag);
    if (rc)
        return rc;
    rc = read_all(&rd, info);
    results_h5r_close(rd.f);
    if (rc) {
        trace_destroy(rd.t);
        sim_free(info->scenario_yaml);
        info->scenario_yaml = NULL;
        return rc;
    }
    *out = rd.t;
    return 0;
}

int results_trace_count(const char *path, results_trace_rows *out, sim_diag *diag)
{
    *out = (results_trace_rows){0};
    results_h5r_file *f = NULL;
    int rc = results_h5r_open_kind(path, "trace_format_version", RESULTS_TRACE_FORMAT_VERSION,
                                   "trace file", &f, diag);
    if (rc)
        return rc;
    out->ops = results_h5r_dataset_rows(f, "/ops");
    out->deps = results_h5r_dataset_rows(f, "/deps");
    out->mem_events = results_h5r_dataset_rows(f, "/mem");
    out->ranks = results_h5r_dataset_rows(f, "/ranks");
    results_h5r_close(f);
    return 0;
}
