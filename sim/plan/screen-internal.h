/* The screen's shared pieces (screen.c: a candidate; screen-pipe.c: memo tables and the
 * pipeline's schedules evaluated as a DAG). */
#ifndef SIM_PLAN_SCREEN_INTERNAL_H
#define SIM_PLAN_SCREEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/gpu.h"
#include "hw/topo.h"
#include "coll/coll.h"
#include "model/model.h"
#include "plan/screen.h"

typedef struct coll_memo {
    uint64_t hash;
    int n, op, algo;
    double bytes;
    int32_t *gpus;
    double s;
} coll_memo;

typedef struct memo {
    uint64_t hash;
    double *key; /* the inputs, compared in full */
    size_t n_key;
    double v[2];
} memo;

typedef struct memo_table {
    memo *e;
    size_t n, cap; /* open addressing, power of two, at most half full */
} memo_table;

/* One compute action of a stage's schedule: forward or backward of micro-batch mb on chunk
 * `chunk`, and whether its input comes from another stage. */
typedef struct run_act {
    int32_t mb;
    int16_t chunk;
    bool fwd, remote;
} run_act;


/* Pipelines of at most this many chunks have their activations walked chunk by chunk (the
 * candidates plan searches stay below: 2 x layers / 2). */
#define PLAN_SCREEN_CHUNKS_MAX 512

struct plan_screen {
    const plan_scenario *base;
    hw_topo *topo;
    hw_gpu *gpus[HW_NODE_GROUPS_MAX]; /* the GPU models, one per node group (or the one) */
    int n_gpus;
    int64_t capacity;                 /* the least memory of them */
    bool host;                        /* every GPU reaches host memory (offload possible) */
    double *scratch;
    coll_memo *colls;
    size_t n_colls, cap_colls; /* open addressing, power of two, at most half full */
    memo_table pipes, chunks, inflight;
    model_op_list *list;
    run_act *runs; /* stage_runs' last schedules */
    int *run_n, run_key[4];
    size_t run_per;
};

/* Folds v into h (splitmix64's finalizer on v: doubles holding whole numbers have their low
 * bits all zero, and the tables index by the low bits), and a double's bits. */
uint64_t plan__screen_mix(uint64_t h, uint64_t v);
uint64_t plan__screen_dbits(double d);

/* The entry for key[0..nk) in `t`: found (true, its values in v) or not (false: then
 * plan__memo_put stores it there, before any other lookup in `t`). */
memo *plan__memo_slot(memo_table *t, const double *key, size_t nk, bool *found);
void plan__memo_put(memo_table *t, memo *m, const double *key, size_t nk, double v0, double v1);

/* The time stage schedules take with per-chunk forward f[c] and backward b[c], a transfer
 * across the boundary between chunks c and c+1 taking p2p[c] when they are on different
 * stages (memoized). */
double plan__screen_pipeline(plan_screen *S, const plan_scenario *sc, int pp, int v, int m,
                             const double *f, const double *b, const double *p2p);
/* The most chunk micro-batches stage s's schedule holds at once. */
int plan__screen_inflight(plan_screen *S, const plan_scenario *sc, int pp, int v, int m, int s);
/* The most activation bytes stage s holds along its schedule: each forward of chunk c leaves
 * act[c], each backward frees it, and while a backward runs it briefly holds tr[c] more
 * (memoized; at most PLAN_SCREEN_CHUNKS_MAX chunks). */
double plan__screen_activation_peak(plan_screen *S, const plan_scenario *sc, int pp, int v,
                                    int m, int s, const double *act, const double *tr);
/* What the replay's selector estimates for `op` on `bytes` over GPUs gpus[0..n) alone (the
 * scenario's fixed algorithm `algo`, or -1 for auto), memoized; groups of more than 64
 * members at sizes on a geometric grid, interpolated (screen-coll.c). */
double plan__screen_coll(plan_screen *S, const int32_t *gpus, int n, coll_op op, double bytes,
                         int algo);

/* The ranks (= GPUs) of rank r's group of the classes in `mask` (bits of plan_group_class:
 * the members differ from r only there), in rank order; returns the count. EP in the mask:
 * r's expert-parallel group, the data-parallel coordinates of r's block of ep;
 * PLAN_SCREEN_EDP: r's expert-data-parallel group, the data-parallel coordinates at r's
 * place in every block, and every context-parallel one. */
#define PLAN_SCREEN_EDP (1u << PLAN_GROUP_COUNT)
int plan__screen_members(const plan_parallel *par, int r, unsigned mask, int32_t *out);

/* The rank at pipeline stage s whose other coordinates are 0. */
int plan__screen_stage_rank(const plan_parallel *par, int s);

/* Releases the tables and kept schedules. */
void plan__screen_pipe_clear(plan_screen *S);

#endif
