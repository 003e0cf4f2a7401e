/* Sweep files (docs/sweeps.md): a base scenario plus axes; the runs are the cartesian product in
 * axis order, last axis fastest. `base` may also be a list of scenario files: it is then the
 * outermost axis, named "base" (its values the paths as written, with no overrides), and
 * `axes` may be left out (a sweep over a set of scenario files). Each run is the base scenario with
 * its axis values applied as --set overrides: a mapping value is deep-merged (flattened into one
 * override per leaf: `parallel: {dp: 2, zero: 3}` sets parallel.dp and parallel.zero), a scalar or
 * list replaces. Relative paths in the values of reference keys (topology, model, topology.gpu)
 * resolve against the sweep file. Format: docs/sweeps.md. */
#ifndef SIM_INPUT_SWEEP_H
#define SIM_INPUT_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

typedef struct input_sweep_value {
    char *text;    /* the value as YAML flow text, for the /sweep table ("{dp: 2, zero: 3}") */
    char **sets;   /* its overrides, "KEY=VALUE" */
    size_t n_sets;
    int line, col; /* where it is written in the sweep file */
} input_sweep_value;

typedef struct input_sweep_axis {
    char *key;     /* dotted scenario key ("parallel", "training.micro_batch") */
    input_sweep_value *values;
    size_t n_values;
} input_sweep_axis;

typedef struct input_sweep {
    char *path;    /* the sweep file as named */
    char **bases;  /* the base scenarios' paths (resolved against the sweep file) */
    size_t n_bases;
    bool base_axis; /* base is a list: axes[0] is its axis ("base") */
    char *name;    /* run names are <name>-<index>; default: the base scenario's name */
    input_sweep_axis *axes;
    size_t n_axes;
    size_t n_runs; /* product of the axes' sizes */
    char *text;    /* the sweep file's bytes (its fingerprint for --resume) */
} input_sweep;

/* Reads and checks a sweep file: keys base (required: a path, or a non-empty list of paths),
 * name, axes (a mapping of non-empty lists; required with a single base). Checks every axis value
 * on its own against the base scenario (unknown key, wrong type or unit, missing file: the errors
 * of a bad sweep file, reported at the value: "sweep.yaml:7:12: error: ..."); combinations that are
 * invalid together are the runs' business (status skipped). Returns 0, or SIM_EINVAL / SIM_ENOENT
 * with diag set. */
int input_sweep_load(const char *path, input_sweep **out, sim_diag *diag);
void input_sweep_destroy(input_sweep *sw);

/* The base scenario of run `index` (< n_runs), borrowed. */
const char *input_sweep_run_base(const input_sweep *sw, size_t index);

/* The overrides of run `index` (< n_runs), axis by axis, into a new array of borrowed
 * strings (*n of them; free the array with sim_free), and each axis's value index into
 * value_of[0..n_axes) when not NULL. */
const char **input_sweep_run_sets(const input_sweep *sw, size_t index, size_t *n, size_t *value_of);

#endif
