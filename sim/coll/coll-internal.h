/* The algorithm implementations registered in coll.c (one file each). */
#ifndef SIM_COLL_COLL_INTERNAL_H
#define SIM_COLL_COLL_INTERNAL_H

#include "coll/coll.h"

extern const coll_algo_ops coll__ring_ops;
extern const coll_algo_ops coll__tree_ops;
extern const coll_algo_ops coll__hd_ops;
extern const coll_algo_ops coll__direct_ops;
extern const coll_algo_ops coll__pairwise_ops;
extern const coll_algo_ops coll__hierarchical_ops;
extern const coll_algo_ops coll__nvls_ops;

/* A `pipelined` for algorithms whose every operation uses the chunk count. */
bool coll__always(coll_op op);

/* A group spread evenly over nodes: nodes in order of their first member, members of a node
 * in group order (local index l). */
typedef struct coll_layout {
    int nodes, per_node;
    int32_t *at; /* at[a·per_node + l]: member l of node a */
} coll_layout;

/* The members grouped by node (coll_group.node): nodes in order of their first member, each
 * node's members in group order; order[] (g->n entries) lists them node by node and start[a]
 * (nodes + 1 entries, at most g->n + 1) is where node a's run begins. Returns the number of
 * nodes; 0, filling nothing, when nodes are not known. */
int coll__group_by_node(const coll_group *g, int32_t *order, int32_t *start);

/* Groups the members by node (coll_group.node). Returns false (and leaves `lay` empty) unless
 * there are at least two nodes with the same number of members each; on success the caller
 * frees lay->at. */
bool coll__layout_init(coll_layout *lay, const coll_group *g);

/* floor(log2(n)) and whether n is a power of two. */
int coll__log2(int n);
bool coll__pow2(int n);

#endif
