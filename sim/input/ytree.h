/* A YAML node tree with provenance, on libyaml's event parser.
 *
 * Every node remembers where it came from (an origin: the file as the user named it, or a
 * `--set KEY=VALUE` override) and its 1-based line and column, so that errors found much
 * later (schema, cross-field checks) still point at the text the user wrote. Scalars keep
 * their text untyped plus whether they were quoted: typing is the schema's job (see
 * docs/scenario-format.md), and a quoted "2" is a string, never an int.
 *
 * Stricter than libyaml, on purpose (docs/platform.md lists the traps):
 * - duplicate keys are errors ("duplicate key 'x' (first at LINE:COL)");
 * - `<<` merge keys are errors (libyaml does not apply them; silently keeping a key named
 *   "<<" would be worse);
 * - aliases are expanded into copies (so that changing one place never changes another),
 *   and the total number of nodes of a document, copies included, is bounded by
 *   INPUT_YAML_MAX_NODES (the "billion laughs" guard); nesting is bounded by INPUT_YAML_MAX_DEPTH;
 * - an empty document (no content, or only a null) and a second document are errors;
 * - keys must be scalars; tags other than !!str are errors (!!str makes a scalar a string).
 *
 * All nodes, strings and origins live in an arena and are freed together. */
#ifndef SIM_INPUT_YTREE_H
#define SIM_INPUT_YTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

#define INPUT_YAML_MAX_NODES 100000
#define INPUT_YAML_MAX_DEPTH 64
#define INPUT_YAML_MAX_FILE_BYTES (16u << 20)

typedef struct input_yorigin {
    const char *name; /* path as the user sees it, or "--set KEY=VALUE" */
    const char *dir;  /* directory relative references in this origin resolve against */
    bool is_set;      /* an override: its nodes have no line/column (0) */
} input_yorigin;

typedef enum input_ykind { INPUT_YSCALAR, INPUT_YSEQ, INPUT_YMAP } input_ykind;

typedef struct input_ynode input_ynode;
typedef struct input_ypair {
    input_ynode *key; /* always a scalar */
    input_ynode *value;
} input_ypair;

struct input_ynode {
    input_ykind kind;
    const input_yorigin *origin;
    int line, col;    /* 1-based; 0 for --set values */
    const char *text; /* scalar: the text, NUL-terminated (never contains NUL) */
    bool quoted;      /* scalar: any non-plain style (quoted, literal, folded) or !!str */
    size_t n, cap;    /* sequence items or mapping pairs */
    input_ynode **items; /* INPUT_YSEQ */
    input_ypair *pairs;  /* INPUT_YMAP, in file order */
    size_t weight;    /* nodes in this subtree, itself included (alias bound); exact as
                         parsed, not maintained in ancestors by later edits */
};

typedef struct input_yarena input_yarena;

/* An empty arena. Never returns NULL. Destroy frees every node, string and origin made in it;
 * destroy(NULL) is a no-op. */
input_yarena *input_yarena_create(void);
void input_yarena_destroy(input_yarena *a);

/* Zeroed memory / a copy of s, owned by the arena. Never return NULL. */
void *input_yarena_alloc(input_yarena *a, size_t size);
char *input_yarena_strdup(input_yarena *a, const char *s);

/* An origin owned by the arena (name and dir are copied). */
const input_yorigin *input_yorigin_new(input_yarena *a, const char *name, const char *dir,
                                       bool is_set);

/* Node constructors and editors (all memory from the arena; cannot fail). A node made with a
 * --set origin gets line and column 0. */
input_ynode *input_ynode_new(input_yarena *a, input_ykind kind, const input_yorigin *origin,
                             int line, int col);
input_ynode *input_yscalar_new(input_yarena *a, const input_yorigin *origin, int line, int col,
                         const char *text, bool quoted);
void input_yseq_append(input_yarena *a, input_ynode *seq, input_ynode *item);
void input_ymap_append(input_yarena *a, input_ynode *map, input_ynode *key, input_ynode *value);

/* The pair whose key is `key` in a mapping, or NULL (also when `map` is not a mapping). */
input_ypair *input_ymap_find(const input_ynode *map, const char *key);

/* The pair at a dotted path of mapping keys ("topology.node.gpus") below `root`, or NULL when
 * a step is missing or not a mapping. Path segments are at most 127 characters. */
input_ypair *input_ypath_find(const input_ynode *root, const char *dotted);

/* True for a plain scalar reading as null: empty, "~", "null", "Null" or "NULL". */
bool input_ynode_is_null(const input_ynode *n);

/* Walks the tree and checks its invariants: every node has an origin, scalars have text,
 * mapping keys are scalars and unique, and (for a tree as parsed, before --set edits) each
 * node's weight is the size of its subtree. Returns true when all hold (for unit tests and
 * debug builds). */
bool input__ytree_check(const input_ynode *root, bool check_weights);

/* "a scalar", "a list", "a mapping" (for messages). Static string. */
const char *input_ykind_name(input_ykind kind);

/* Parsing flags. */
#define INPUT_YAML_FLOW_VALUE 1u /* `text` is one YAML flow value (--set): scalar, [list], {map} */

/* Parses one YAML document from text[0..len) into nodes of `origin`. On success *root is the
 * document's root node (a non-null node; with INPUT_YAML_FLOW_VALUE an empty text gives a null
 * scalar). Returns 0, or SIM_EINVAL with `d` filled at the 1-based position of the problem
 * (libyaml's mark + 1 and its problem text for syntax errors; for INPUT_YAML_FLOW_VALUE the
 * position is omitted, as for any --set origin). */
int input_yaml_parse(input_yarena *a, const char *text, size_t len, const input_yorigin *origin,
                  unsigned flags, input_ynode **root, sim_diag *d);

/* Writes the tree as YAML text (block mappings, flow lists of scalars, keys in tree order,
 * quoted scalars double-quoted, plain ones plain where YAML allows). *text_out is a
 * NUL-terminated string the caller frees with sim_free. Returns 0 or SIM_EINTERNAL if libyaml's
 * emitter fails. */
int input_yaml_emit(const input_ynode *root, char **text_out);

#endif
