/* Shared by the framework readers (import.c) and translators (import_map.c). */
#ifndef SIM_INPUT_IMPORT_INTERNAL_H
#define SIM_INPUT_IMPORT_INTERNAL_H

#include <stdbool.h>

#include "input/import.h"
#include "input/ytree.h"

typedef struct import_ctx {
    input_import *im;
    sim_diag *diag;
    input_yarena *a;
    const input_yorigin *origin;
    input_ynode *root;   /* the config as a tree of mappings */
    char **used;         /* dotted paths the translator read */
    size_t n_used, cap_used;
} import_ctx;

/* Adds (or replaces) stepsim key `key` = printf(fmt, ...), from framework field `source` at
 * node `at` (NULL: no position). */
void import__set(import_ctx *c, const char *key, const char *source, const input_ynode *at,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Notes a field with no stepsim equivalent, and why (NULL: no reason). */
void import__unmapped(import_ctx *c, const char *field, const char *why);
/* An error at `at` (SIM_ENOTSUP): a value stepsim cannot represent. */
int import__error(import_ctx *c, const input_ynode *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The value at a dotted path, marking it read; NULL when absent, null or "auto". */
const input_ynode *import__get(import_ctx *c, const char *dotted);
bool import__text(const input_ynode *v, const char *text); /* case-insensitive */
bool import__bool(const input_ynode *v);
int import__int(import_ctx *c, const input_ynode *v, const char *what, long long *out);
/* Lists every field not read as unmapped; `why`: pairs of (path or last name, reason), NULL
 * at the end. */
void import__list_unused(import_ctx *c, const char *const *why);

int import__parse_toml(import_ctx *c, const char *text);
int import__parse_args(import_ctx *c, const char *line);

/* import_map.c: the framework's fields as settings into c->im. */
int import__translate(input_framework fw, import_ctx *c);

#endif
