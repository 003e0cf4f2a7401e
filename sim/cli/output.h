/* How the commands that write a file keep it safe (docs/cli.md, "How outputs are written"):
 * the target is checked before any work (not empty, a regular file or absent, not one of the
 * command's own inputs), a lock next to it (OUT.lock, flock) keeps a second stepsim from
 * writing it at the same time, and SIGINT, SIGTERM and SIGHUP only set a flag that the long
 * loops read, so the command leaves through its normal cleanup (the temporary OUT.tmp-PID
 * removed, the lock released) and exits 128 + the signal's number. */
#ifndef SIM_CLI_OUTPUT_H
#define SIM_CLI_OUTPUT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* Refuses an output path that is empty, names something other than a regular file (a device,
 * FIFO, socket or directory, also through a symlink), or is the same file (st_dev, st_ino) as
 * one of inputs[0..n_inputs) (paths that cannot be stat'ed are skipped; NULL entries too).
 * `opt` names the option in the empty-path message ("--output"). Returns 0, or
 * CLI_EXIT_INVALID after printing one `PATH: error: ...` line. */
int cli_output_check(const char *opt, const char *path, const char *const *inputs,
                     size_t n_inputs);

/* The lock of one output: PATH.lock, held with flock while the command writes PATH. */
typedef struct cli_output_lock {
    char *path; /* PATH.lock (owned), NULL when not held */
    int fd;
} cli_output_lock;

/* Takes the lock of output `path` without waiting: creates PATH.lock (holding this process's
 * pid, for the message of the next one), flock(LOCK_EX | LOCK_NB). Returns 0; or
 * CLI_EXIT_INVALID after printing "PATH: error: another stepsim is writing it (pid N)" when
 * another process holds it, or why the lock file cannot be created (an unwritable place). */
int cli_output_lock_take(cli_output_lock *l, const char *path);

/* Removes the lock file and releases the lock; a lock not held is a no-op. */
void cli_output_lock_release(cli_output_lock *l);

/* With the lock of `path` held: removes the temporaries PATH.tmp-<pid> that a writer killed
 * outright (SIGKILL, a crash) left next to it. Returns how many were removed. */
int cli_output_remove_stale(const char *path);

/* The fatal hook of a failed SIM_ASSERT (core/assert.h), set by main: unlinks the lock file
 * and the temporary PATH.tmp-<pid> of every output whose lock is held (registered by
 * cli_output_lock_take, forgotten by cli_output_lock_release). Only unlink(): it runs on the
 * way to _exit(1), from wherever the assertion failed. */
void cli_fatal_cleanup(void);

/* Installs the handlers of SIGINT, SIGTERM and SIGHUP, which only record the signal. */
void cli_signals_install(void);

/* The flag the handlers set: 0, or the number of the first signal received. For
 * replay_options.cancel and the commands' loops. */
const volatile sig_atomic_t *cli_signal_flag(void);

/* When a signal was received: prints "stepsim: interrupted by SIGxxx; WHAT" on stderr and
 * returns its exit code (128 + its number: 129 SIGHUP, 130 SIGINT, 143 SIGTERM); else 0. */
int cli_signal_exit(const char *what);

/* cli_signal_exit for signal `sig` (received here or on another MPI rank); 0 when 0. */
int cli_signal_report(int sig, const char *what);

#endif
