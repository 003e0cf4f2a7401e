/* Training-framework configs read as stepsim settings (docs/import.md): a DeepSpeed JSON, an
 * Accelerate config (FSDP), a torchtitan TOML, a Megatron-LM argument line. Each becomes a list
 * of stepsim keys with values, every one naming the framework field it came from and where
 * that field is, plus the fields that have no stepsim equivalent. `stepsim import` writes the
 * list as a commented scenario; a scenario's `parallel.from` applies it while loading. */
#ifndef SIM_INPUT_IMPORT_H
#define SIM_INPUT_IMPORT_H

#include <stddef.h>

#include "core/error.h"

typedef enum input_framework {
    INPUT_FW_DEEPSPEED,
    INPUT_FW_ACCELERATE,
    INPUT_FW_TORCHTITAN,
    INPUT_FW_MEGATRON,
    INPUT_FW_COUNT
} input_framework;

typedef struct input_import_item {
    char key[64];     /* stepsim's dotted key: "parallel.zero" */
    char value[160];  /* a YAML flow value: "3", "cpu", "[0, 1]" */
    char source[96];  /* the framework's field: "zero_optimization.stage", "--tensor-model-..." */
    int line, col;    /* where the field is in the file (the argument line: line 1) */
} input_import_item;

typedef struct input_import {
    char file[4096];          /* the file as named (Megatron: "megatron arguments") */
    input_import_item *items; /* in the order a reader expects them (training, parallel) */
    size_t n, cap;
    char unmapped[4096];      /* "field (why); field (why)", empty when every field mapped */
    char model[160];          /* a workload the config names (torchtitan's model.name and
                                 flavor), else empty; Megatron's model is among the items */
} input_import;

/* The framework of a name (deepspeed, accelerate, torchtitan, megatron), or -1. */
int input_framework_of(const char *name);
const char *input_framework_name(input_framework fw);

/* Reads `source` (a file path; Megatron: the argument line itself) into *out (which the caller
 * frees with input_import_clear). Returns 0, or an error with `diag` set at the field:
 * unreadable or malformed input, a value stepsim cannot represent (SIM_ENOTSUP). */
int input_import_read(input_framework fw, const char *source, input_import *out, sim_diag *diag);
void input_import_clear(input_import *im);

#endif
