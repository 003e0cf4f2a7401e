/* A YAML node tree with provenance, on libyaml's event parser.
 *
 * Every node remembers where it came from (an origin: the file as the user named it, or a
 * `--set KEY=VALUE` override) and its 1-based line and column, so that errors found much
 * later (schema, cross-field checks) still point at the text the user wrote. Scalars keep
 * their text untyped plus whether they were quoted: typing is the schema's job (see
 * docs/scenario-format.md), and a quoted "2" is a string, never an int.
 *
 * Stricter than libyaml, on purpose (PLATFORM.md lists the traps):
 * - duplicate keys are errors ("duplicate key 'x' (first at LINE:COL)");
 * - `<<` merge keys are errors (libyaml does not apply them; silently keeping a key named
 *   "<<" would be worse);
 * - aliases are expanded into copies (so that changing one place never changes another),
 *   and the total number of nodes of a document, copies included, is bounded by
 *   IO_YAML_MAX_NODES (the "billion laughs" guard); nesting is bounded by IO_YAML_MAX_DEPTH;
 * - an empty document (no content, or only a null) and a second document are errors;
 * - keys must be scalars; tags other than !!str are errors (!!str makes a scalar a string).
 *
 * All nodes, strings and origins live in an arena and are freed together. */
#ifndef SIM_IO_YTREE_H
#define SIM_IO_YTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

#define IO_YAML_MAX_NODES 100000
#define IO_YAML_MAX_DEPTH 64
#define IO_YAML_MAX_FILE_BYTES (16u << 20)

typedef struct io_yorigin {
    const char *name; /* path as the user sees it, or "--set KEY=VALUE" */
    const char *dir;  /* directory relative references in this origin resolve against */
    bool is_set;      /* an override: its nodes have no line/column (0) */
} io_yorigin;

typedef enum io_ykind { IO_YSCALAR, IO_YSEQ, IO_YMAP } io_ykind;

typedef struct io_ynode io_ynode;
typedef struct io_ypair {
    io_ynode *key; /* always a scalar */
    io_ynode *value;
} io_ypair;

struct io_ynode {
    io_ykind kind;
    const io_yorigin *origin;
    int line, col;    /* 1-based; 0 for --set values */
    const char *text; /* scalar: the text, NUL-terminated (never contains NUL) */
    bool quoted;      /* scalar: any non-plain style (quoted, literal, folded) or !!str */
    size_t n, cap;    /* sequence items or mapping pairs */
    io_ynode **items; /* IO_YSEQ */
    io_ypair *pairs;  /* IO_YMAP, in file order */
    size_t weight;    /* nodes in this subtree, itself included (alias bound); exact as
                         parsed, not maintained in ancestors by later edits */
};

typedef struct io_yarena io_yarena;

/* An empty arena. Never returns NULL. Destroy frees every node, string and origin made in it;
 * destroy(NULL) is a no-op. */
io_yarena *io_yarena_create(void);
void io_yarena_destroy(io_yarena *a);

/* Zeroed memory / a copy of s, owned by the arena. Never return NULL. */
void *io_yarena_alloc(io_yarena *a, size_t size);
char *io_yarena_strdup(io_yarena *a, const char *s);

/* An origin owned by the arena (name and dir are copied). */
const io_yorigin *io_yorigin_new(io_yarena *a, const char *name, const char *dir, bool is_set);

/* Node constructors and editors (all memory from the arena; cannot fail). A node made with a
 * --set origin gets line and column 0. */
io_ynode *io_ynode_new(io_yarena *a, io_ykind kind, const io_yorigin *origin, int line, int col);
io_ynode *io_yscalar_new(io_yarena *a, const io_yorigin *origin, int line, int col,
                         const char *text, bool quoted);
void io_yseq_append(io_yarena *a, io_ynode *seq, io_ynode *item);
void io_ymap_append(io_yarena *a, io_ynode *map, io_ynode *key, io_ynode *value);

/* The pair whose key is `key` in a mapping, or NULL (also when `map` is not a mapping). */
io_ypair *io_ymap_find(const io_ynode *map, const char *key);

/* The pair at a dotted path of mapping keys ("topology.node.gpus") below `root`, or NULL when
 * a step is missing or not a mapping. Path segments are at most 127 characters. */
io_ypair *io_ypath_find(const io_ynode *root, const char *dotted);

/* True for a plain scalar reading as null: empty, "~", "null", "Null" or "NULL". */
bool io_ynode_is_null(const io_ynode *n);

/* Walks the tree and checks its invariants: every node has an origin, scalars have text,
 * mapping keys are scalars and unique, and (for a tree as parsed, before --set edits) each
 * node's weight is the size of its subtree. Returns true when all hold (for unit tests and
 * debug builds). */
bool io__ytree_check(const io_ynode *root, bool check_weights);

/* "a scalar", "a list", "a mapping" (for messages). Static string. */
const char *io_ykind_name(io_ykind kind);

/* Parsing flags. */
#define IO_YAML_FLOW_VALUE 1u /* `text` is one YAML flow value (--set): scalar, [list], {map} */

/* Parses one YAML document from text[0..len) into nodes of `origin`. On success *root is the
 * document's root node (a non-null node; with IO_YAML_FLOW_VALUE an empty text gives a null
 * scalar). Returns 0, or SIM_EINVAL with `d` filled at the 1-based position of the problem
 * (libyaml's mark + 1 and its problem text for syntax errors; for IO_YAML_FLOW_VALUE the
 * position is omitted, as for any --set origin). */
int io_yaml_parse(io_yarena *a, const char *text, size_t len, const io_yorigin *origin,
                  unsigned flags, io_ynode **root, sim_diag *d);

/* Writes the tree as YAML text (block mappings, flow lists of scalars, keys in tree order,
 * quoted scalars double-quoted, plain ones plain where YAML allows). *text_out is a
 * NUL-terminated string the caller frees with sim_free. Returns 0 or SIM_EINTERNAL if libyaml's
 * emitter fails. */
int io_yaml_emit(const io_ynode *root, char **text_out);

#endif
