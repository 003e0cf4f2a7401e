/* Declarative schema: tables of keys that say how a YAML mapping fills a C struct.
 *
 * Each key names its type, where it goes (offsetof into the struct the mapping fills) and its
 * range. input_schema_apply walks a mapping in file order and, for each pair, finds the key
 * (unknown keys are errors with a did-you-mean), converts the scalar by the typing rules of
 * docs/scenario-format.md, checks the range, and stores the value; then it checks that
 * required keys are there. (Combinations not built yet are refused by the checks that span
 * keys, input/options.c and validate.c, with SIM_ENOTSUP.)
 * It stops at the first error, recorded in ctx->diag at the offending key or value.
 *
 * Nested mappings fill either a member struct (offset = offsetof the member) or, for anonymous
 * member structs, the same struct (offset 0, child offsets relative to the parent's base).
 * Custom keys (lists with structure) get a function; a mapping whose rules involve several
 * of its keys gets a check function, run after its keys are read. Tables use designated
 * initializers and functions of exactly the input_key_fn / input_map_check_fn types (no casts). */
#ifndef SIM_INPUT_SCHEMA_H
#define SIM_INPUT_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "input/units.h"
#include "input/ytree.h"

#define INPUT_SCHEMA_PATH_MAX 256

/* State of one apply: where errors go and the dotted path of the key being read (e.g.
 * "topology.node.intra.bandwidth"), used in messages so users can copy it into --set. */
typedef struct input_schema_ctx {
    sim_diag *diag;
    char path[INPUT_SCHEMA_PATH_MAX];
} input_schema_ctx;

typedef enum input_ktype {
    INPUT_K_INT,      /* int; plain decimal integer */
    INPUT_K_INT64,    /* int64_t */
    INPUT_K_UINT64,   /* uint64_t; non-negative */
    INPUT_K_FLOAT,    /* double; plain decimal number */
    INPUT_K_BOOL,     /* bool; true | false */
    INPUT_K_ENUM,     /* int-sized enum; one of key.enums */
    INPUT_K_STRING,   /* char[key.size]; any non-null scalar */
    INPUT_K_BYTES,    /* int64_t bytes; a size with a unit */
    INPUT_K_QUANTITY, /* double in SI base units of key.unit */
    INPUT_K_TIME,     /* sim_time picoseconds; a time with a unit */
    INPUT_K_MAP,      /* nested mapping, filled by key.map at base + offset */
    INPUT_K_CUSTOM    /* key.fn does the work */
} input_ktype;

typedef struct input_enum_name {
    const char *name;
    int value;
} input_enum_name;

/* Range flags (compared as doubles). */
#define INPUT_KEY_REQUIRED 1u
#define INPUT_KEY_MIN 2u      /* value >= min */
#define INPUT_KEY_MIN_EXCL 4u /* value > min */
#define INPUT_KEY_MAX 8u      /* value <= max */
#define INPUT_KEY_MAX_EXCL 16u /* value < max */

typedef struct input_key input_key;
typedef struct input_map input_map;

/* Custom conversion: reads `value` (never null) and stores into the struct at `base` (the
 * base of the mapping being filled; the key's own field is at base + key->offset). Returns 0
 * or a negative SIM_E* with ctx->diag filled. */
typedef int (*input_key_fn)(const input_key *key, const input_ynode *value, void *base,
                            input_schema_ctx *ctx);

struct input_key {
    const char *name;
    input_ktype type;
    size_t offset;
    size_t size;                /* INPUT_K_STRING: buffer size (NUL included) */
    const input_enum_name *enums;  /* INPUT_K_ENUM: terminated by {NULL} */
    input_unit_kind unit;          /* INPUT_K_QUANTITY; custom keys may use it */
    const input_map *map;          /* INPUT_K_MAP */
    input_key_fn fn;               /* INPUT_K_CUSTOM */
    unsigned flags;             /* INPUT_KEY_* */
    double min, max;
};

/* A check of a whole mapping, run by input_schema_apply after every key of `node` was read
 * into `base` (for rules that involve several keys of one mapping, such as the topology's
 * two forms). Same contract as input_schema_apply: returns 0 or a negative SIM_E* with
 * ctx->diag filled; ctx->path is the mapping's path. */
typedef int (*input_map_check_fn)(const input_ynode *node, const input_ynode *parent_key,
                                  void *base, input_schema_ctx *ctx);

struct input_map {
    const char *what;           /* used when the path is empty: "the scenario" */
    const input_key *keys;
    size_t n_keys;
    input_map_check_fn check;      /* NULL = none */
};

/* Fills `base` from mapping `node` by `map` (see the top of this file). `node` must be a
 * mapping; `parent_key` is the key node naming it (NULL at the root), where a missing required
 * key is reported (or at the mapping itself when it was read from another file). ctx->path is the
 * dotted path of `node` ("" at the root) and is restored on return. Returns 0, SIM_EINVAL or
 * SIM_ENOTSUP (ctx->diag filled). */
int input_schema_apply(const input_map *map, const input_ynode *node, const input_ynode *parent_key,
                    void *base, input_schema_ctx *ctx);

/* Reports that the mapping `node` (named by `parent_key`, NULL for a list item or the root)
 * lacks the required key `name`, where input_schema_apply reports it: at the key naming the
 * mapping when both come from the same file, else at the mapping. The message names the
 * mapping by ctx->path, or by `what` when the path is empty. Returns SIM_EINVAL. */
int input_schema_missing(input_schema_ctx *ctx, const char *what, const input_ynode *node,
                      const input_ynode *parent_key, const char *name);

/* Typed scalar readers for custom keys and cross-field checks; `what` names the value in the
 * message (usually ctx->path). Each returns 0 or SIM_EINVAL with the error at `n`. */
int input_schema_int(input_schema_ctx *ctx, const char *what, const input_ynode *n, int64_t *out);
int input_schema_float(input_schema_ctx *ctx, const char *what, const input_ynode *n, double *out);
int input_schema_enum(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                   const input_enum_name *enums, int *out);
int input_schema_quantity(input_schema_ctx *ctx, const char *what, const input_ynode *n,
                       input_unit_kind kind, double *out);

/* Records an error at node n (its origin, line and column). Returns `code`. */
int input_schema_error(input_schema_ctx *ctx, int code, const input_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "a, b, c" of an enum table into buf. */
void input_schema_enum_list(const input_enum_name *enums, char *buf, size_t size);

#endif
