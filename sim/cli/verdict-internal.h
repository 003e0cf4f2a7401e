/* What verdict.c and scale.c share: the remedy candidates and how they are generated,
 * checked and stacked (verdict.c), and the search for more GPUs (scale.c). */
#ifndef SIM_CLI_VERDICT_INTERNAL_H
#define SIM_CLI_VERDICT_INTERNAL_H

#include "cli/verdict.h"

/* At most this many single changes are generated, and pairs are tried among the PAIR_FROM
 * valid ones with the lowest peaks (at most PAIR_FROM·(PAIR_FROM−1)/2 pairs); when no pair
 * fits either, changes are stacked on the closest, up to STACK_MAX (stack). */
#define CANDS_MAX 24
#define PAIR_FROM 5
#define STACK_MAX 4
#define WHAT_MAX 480
typedef struct cand {
    results_remedy r;  /* the changes; peak, headroom, step time and why once checked */
    char what[WHAT_MAX]; /* what the change does, for `why` */
    int ladder;        /* the ladder's order (pairs: 100 × first + second; stacked: 10000 ×
                          changes + the last one's) */
    int depth;         /* changes of the ladder it stacks: 1 single, 2 a pair */
    cli_checked k;     /* what the check found */
} cand;

typedef struct cand_list {
    cand c[2 * CANDS_MAX + PAIR_FROM * (PAIR_FROM - 1) / 2];
    int n;
    cli_check_budget budget; /* estimated ops spent on checking */
} cand_list;

/* vsnprintf of a sentence that may be cut at its buffer's size */
void verdict__sentence(char *dst, size_t size, const char *fmt, ...);
/* A new candidate at the end of `l`, in the ladder's order, doing `what` */
cand *verdict__push(cand_list *l, const char *what);
/* The ladder's single changes for the scenario `sc` not applied yet (docs/memory.md) */
void verdict__generate(const plan_scenario *sc, int64_t global_batch, int topology_gpus,
                       cand_list *l);
/* cli_check of a candidate's changes, its step time kept when it fits */
void verdict__check(const cli_verdict_input *in, int64_t capacity, cand *x,
                    cli_check_budget *b);
/* The scenario as `stepsim run|mem SCENARIO --set ...` loads it, then `changes` */
int verdict__load_with(const cli_verdict_input *in, const results_remedy *changes,
                       plan_scenario *sc, sim_diag *diag);
/* `a` then `b` as --set applies them (b's value wins); false when too many changes */
bool verdict__override(const results_remedy *a, const results_remedy *b, results_remedy *out);
/* Changes stacked greedily on the closest candidate of `l` (docs/memory.md, "Remedies") */
int verdict__stack(const cli_verdict_input *in, int64_t global_batch, int topology_gpus,
                   int64_t capacity, cand_list *l, cli_check_budget *b);
/* The smallest GPU count of the same kind that fits when nothing fits on the job's GPUs
 * (scale.c; docs/memory.md, "More GPUs") */
bool verdict__scale_out(const cli_verdict_input *in, const plan *p, int64_t capacity,
                        cli_check_budget *b, cand *out, int64_t *out_gpus, char *what,
                        size_t what_size, char *note, size_t note_size);

#endif
