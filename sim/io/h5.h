/* HDF5 results files (DESIGN.md §8, schema version 1; the layout is in docs/hdf5-schema.md).
 *
 * One file per `run`, `sweep` or `plan` command: root attributes (stepsim_version,
 * schema_version, command, input_hashes), an /inputs table, one group /runs/<name> per run
 * with its compound tables, and a /sweep table when the file holds more than one run.
 * The same arguments always give a byte-identical file: no timestamps, no wall-clock
 * figures, objects written in a fixed order. */
#ifndef SIM_IO_H5_H
#define SIM_IO_H5_H

#include <stddef.h>

#include "core/error.h"
#include "replay/results.h"

/* One input file of the command and the content hash the caller computed for it (written
 * as given, e.g. "sha256:<hex>"). */
typedef struct io_h5_input {
    const char *path;
    const char *hash;
} io_h5_input;

/* One run to write. The group is /runs/<results->summary.name>. */
typedef struct io_h5_run {
    const replay_results *results;
    const char *scenario_yaml; /* resolved scenario text (attribute `scenario`); NULL = "" */
} io_h5_run;

/* Writes one results file holding `runs` (in the given order) to `path`.
 *
 * The file is written to "<path>.tmp-<pid>", fsync'ed and renamed over `path`, so `path`
 * either keeps its previous contents or holds the complete new file; on failure the
 * temporary file is removed. `command` is the command line as text (root attribute
 * `command`); `inputs` are the input files and their hashes (root attribute `input_hashes`
 * and table /inputs). Runs with status ok or oom get every table; skipped and error runs
 * get their attributes and the summary table only. With `write_timeline` 0 every timeline
 * table is written empty and the run group's attribute `timeline_written` is 0.
 *
 * The file is assembled in memory (HDF5 core driver) and written with write(2): a full
 * disk is then an ordinary error (HDF5 1.10.8 crashes at exit after a failed close). Memory
 * use peaks at twice the file size (about 155 bytes per timeline row).
 *
 * Nothing is retained: all pointers stay owned by the caller. HDF5's automatic error
 * printing is switched off during the call (and restored after).
 *
 * Returns 0, or
 *  - SIM_EIO when the file cannot be created, written, synced or renamed; diag holds
 *    "<path>: error: cannot create file: <reason>" (or "cannot write file: <reason>",
 *    "cannot write <object>: <reason>"), line 0;
 *  - SIM_EINVAL when a run name cannot be an HDF5 group name (empty, ".", containing '/')
 *    or two runs have the same name; diag is set likewise. */
int io_h5_write(const char *path, const char *command, const io_h5_input *inputs,
                size_t n_inputs, const io_h5_run *runs, size_t n_runs, int write_timeline,
                sim_diag *diag);

#endif
