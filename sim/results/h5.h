/* HDF5 results files (schema version 1; the layout is in docs/hdf5-schema.md).
 *
 * One file per `run`, `sweep` or `plan` command: root attributes (stepsim_version,
 * schema_version, command, input_hashes), an /inputs table, one group /runs/<name> per run
 * with its compound tables, and a /sweep table when the file holds more than one run.
 * The same calls always give a byte-identical file: no timestamps, no wall-clock figures,
 * objects written in a fixed order, streamed timelines written in fixed-size batches. The
 * file is written through HDF5 as it goes (no in-memory image); errors are one diagnostic
 * line, HDF5's own error printing is off during each call. */
#ifndef SIM_RESULTS_H5_H
#define SIM_RESULTS_H5_H

#include <stddef.h>

#include "core/error.h"
#include "replay/results.h"

/* One input file of the command and the content hash the caller computed for it (written
 * as given, e.g. "sha256:<hex>"). */
typedef struct results_h5_input {
    const char *path;
    const char *hash;
} results_h5_input;

/* One run to write. The group is /runs/<results->summary.name>. */
typedef struct results_h5_run {
    const replay_results *results;
    const char *scenario_yaml; /* resolved scenario text (attribute `scenario`); NULL = "" */
} results_h5_run;

/* A results file being written (results_h5_open ... results_h5_close). */
typedef struct results_h5_file results_h5_file;

/* Starts results file `path`: it is written as "<path>.tmp-<pid>" and renamed over `path`
 * by results_h5_close, so `path` keeps its previous contents until the new file is complete; on
 * failure (here or later) the temporary file is removed. Writes the root attributes
 * (stepsim_version, schema_version, `command`, input_hashes) and /inputs. `diag` must
 * outlive the file. *out is set even on failure (pass it to results_h5_abort). Returns 0 or
 *  - SIM_EIO: "<path>: error: cannot create file: <reason>", "cannot write file: <reason>"
 *    (no space, file-size limit: see below) or "cannot write <object>: <reason>", line 0.
 *
 * Space: HDF5 1.10.8 cannot fail a write gracefully (a failed flush crashes the process
 * at exit), so before each batch of writes the writer checks that the file, the batch
 * (uncompressed) and 64 MiB for HDF5's caches fit in the free space and under
 * RLIMIT_FSIZE, and fails with ENOSPC's or EFBIG's message instead of writing. */
int results_h5_open(const char *path, const char *command, const results_h5_input *inputs,
               size_t n_inputs, results_h5_file **out, sim_diag *diag);

/* Appends timeline rows of run `name`, which gets its group now (the first call) and its
 * other tables from results_h5_add_run: memory stays bounded by a few chunks of rows, however
 * long the timeline. One run streams at a time, and must be added before another starts.
 * The rows' strings must stay valid until results_h5_add_run of the run. Returns 0, the first
 * error (sticky), or SIM_EINVAL for a run name that cannot name a group or is taken. */
int results_h5_stream_timeline(results_h5_file *f, const char *name,
                               const replay_timeline_row *rows, size_t n);

/* Adds one run: attributes (scenario, status, error, timeline_written) and tables. Runs
 * with status ok or oom get every table, skipped and error runs the summary only. The
 * timeline is the streamed one if this run streamed, else results->timeline (empty with
 * `write_timeline` 0, and then timeline_written is 0). Returns 0 or the first error
 * (SIM_EINVAL: the name cannot be a group, or two runs have the same name). */
int results_h5_add_run(results_h5_file *f, const results_h5_run *run, int write_timeline);

/* Sweeps: the axes (one string column each in /sweep, after `error`), before any run is
 * added; then, after adding each run, its value of every axis (YAML text). */
void results_h5_sweep_axes(results_h5_file *f, const char *const *names, size_t n);
void results_h5_run_axes(results_h5_file *f, const char *const *values);

/* Adds run /runs/NAME of results file `src_path` (as results_h5_write wrote it) by copying its
 * group — attributes and tables as they are — and reading its summary back for /sweep.
 * Returns 0 or the first error. */
int results_h5_copy_run(results_h5_file *f, const char *src_path, const char *name);

/* Writes /sweep when the file holds more than one run (or has sweep axes), closes, fsyncs and
 * renames the file over its path. Frees f. Returns 0 or the first error of the file's life (then
 * nothing is left at the temporary name and `path` is untouched). */
int results_h5_close(results_h5_file *f);

/* Gives up the file: closes it and removes the temporary name. Frees f (NULL is fine). */
void results_h5_abort(results_h5_file *f);

/* results_h5_open, results_h5_add_run for each run (in order), results_h5_close: one results file
 * holding `runs`. Run names are checked before anything is created. */
int results_h5_write(const char *path, const char *command, const results_h5_input *inputs,
                size_t n_inputs, const results_h5_run *runs, size_t n_runs, int write_timeline,
                sim_diag *diag);

#endif
