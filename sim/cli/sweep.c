/* `stepsim sweep SWEEP.yaml -o OUT.h5 [--resume] [--json] [--progress] [--no-timeline]`
 * (docs/sweeps.md), serial or under mpirun.
 *
 * Every run executes in a child process (fork): a run that crashes (an internal assert, the
 * OOM killer) becomes a run with status `error` and the sweep goes on, and no run's memory
 * outlives it. Each finished run is durable at once: the child writes OUT.h5.runs/NNNNNNN.h5
 * (a results file holding that run) and then NNNNNNN.json, the completion marker, each under
 * a temporary name, synced and renamed. When every run has its files, rank 0 merges them in
 * index order into OUT.h5 (groups copied as they are, /sweep with one column per axis) and
 * removes the directory. Nothing in a run's files depends on which rank ran it or when, so
 * the file is the same for any number of ranks, and `--resume` after a kill (of anything,
 * with any signal) runs only the runs without a marker and merges the same file.
 *
 * Under mpirun, rank 0 hands out run indices as workers ask for them (dynamic balancing:
 * runs differ in cost by orders of magnitude) and runs some itself. Nobody spins: rank 0
 * polls for requests with MPI_Iprobe and sleeps 1 ms between polls, workers wait for an
 * answer the same way, and a rank whose child is running blocks in waitpid (or polls it,
 * for rank 0). MPI is initialised only when the process was started by mpirun (Open MPI's
 * OMPI_COMM_WORLD_SIZE), so a serial sweep needs none. */
#include "core/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <mpi.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/runs.h"
#include "results/h5.h"
#include "results/h5read.h"
#include "results/json.h"
#include "input/load.h"
#include "input/sweep.h"
#include "plan/plan.h"
#include "replay/replay.h"

#define TAG_REQ 1
#define TAG_WORK 2
/* What a worker that received a signal sends instead of a finished run index. */
#define WORKER_STOPPED (-2LL)
/* Floor of the elapsed time a progress rate divides by (s): no division by zero at the start. */
#define MIN_ELAPSED_S 1e-9

static const cli_opt options[] = {
    CLI_RUNS_OPTS(true),
    {.name = "--timeline", .kind = CLI_OPT_FLAG, .offset = offsetof(sweep_args, timeline)},
    {.name = "--no-timeline", .kind = CLI_OPT_FLAG, .offset = offsetof(sweep_args, no_timeline)},
};
static const cli_arg args[] = {{.name = "SWEEP.yaml", .offset = offsetof(sweep_args, file)}};
static const cli_spec sweep_spec = {.opts = options, .n_opts = SIM_ARRAY_LEN(options),
                                    .args = args, .n_args = SIM_ARRAY_LEN(args)};

static void nap_us(long us)
{
    struct timespec t = {.tv_sec = 0, .tv_nsec = us * 1000};
    nanosleep(&t, NULL);
}

static void run_path(const sweep_ctx *c, size_t i, const char *ext, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%07zu.%s", c->dir, i, ext);
}

static bool run_done(const sweep_ctx *c, size_t i)
{
    char p[4200];
    run_path(c, i, "json", p, sizeof p);
    return access(p, F_OK) == 0;
}

/* Writes `text` to `path` durably: temporary name, fsync, rename. */
static int write_durable(const char *path, const char *text, size_t len)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(fd, text + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)k;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Writes run i's results file and then its JSON marker. */
static int save_run(const sweep_ctx *c, size_t i, const replay_results *res, const char *yaml,
                    const input_scenario_info *info)
{
    char h5[4200], js[4200];
    run_path(c, i, "h5", h5, sizeof h5);
    run_path(c, i, "json", js, sizeof js);
    size_t n_in = info ? info->n_inputs : 0;
    results_h5_input *inputs = sim_calloc(n_in + 1, sizeof *inputs);
    char (*hashes)[32] = sim_calloc(n_in + 1, sizeof *hashes);
    for (size_t k = 0; k < n_in; k++) {
        snprintf(hashes[k], sizeof hashes[k], "fnv1a64:%s", info->inputs[k].hash);
        inputs[k] = (results_h5_input){info->inputs[k].path, hashes[k]};
    }
    results_h5_run run = {.results = res, .scenario_yaml = yaml};
    sim_diag diag = {0};
    int rc = results_h5_write(h5, c->a->command, inputs, n_in, &run, 1,
                         !c->a->no_timeline, &diag);
    sim_free(inputs);
    sim_free(hashes);
    if (rc) {
        sim_diag_print(&diag, stderr);
        return rc;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    results_json_write_run(m, res);
    fclose(m);
    rc = write_durable(js, buf, len);
    free(buf);
    return rc;
}

/* A run without a replay: skipped (an invalid combination) or error (it crashed). */
static int save_status(const sweep_ctx *c, size_t i, replay_status st, const char *msg,
                       int gpus)
{
    replay_results *res = replay_results_create();
    snprintf(res->summary.name, sizeof res->summary.name, "%s-%zu", c->L.name, i);
    res->summary.status = st;
    res->summary.gpus = gpus;
    snprintf(res->summary.error, sizeof res->summary.error, "%s", msg);
    replay_summary_untimed(&res->summary); /* nothing was timed: null in JSON, NaN in HDF5 */
    int rc = save_run(c, i, res, "", NULL);
    replay_results_destroy(res);
    return rc;
}

/* `bytes` for a message: MiB below a GiB (a headroom of a few MB), else GiB. */
static void fmt_gib(char *buf, size_t n, double bytes)
{
    if (fabs(bytes) < 1073741824.0)
        snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
    else
        snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
}

/* A plan's run that fits, but closer to the capacity than the headroom asked, becomes
 * `tight`, the headroom left and the one asked as its binding constraint (docs/plan.md). */
static void apply_headroom(const run_list *L, replay_results *res)
{
    replay_summary *s = &res->summary;
    double cap = (double)s->capacity_bytes, left = cap - (double)s->peak_mem_bytes;
    double asked = L->headroom_bytes > 0 ? (double)L->headroom_bytes : L->headroom_fraction * cap;
    if (s->status != REPLAY_STATUS_OK || !(left < asked))
        return;
    char l[32], a[32], why[256];
    fmt_gib(l, sizeof l, left);
    fmt_gib(a, sizeof a, asked);
    snprintf(why, sizeof why, "headroom %s (%.2f%% of %.1f GiB) < %s asked (plan --headroom): "
             "the allocator's fragmentation may not fit in it", l, 100 * left / cap,
             cap / 1073741824.0, a);
    s->status = REPLAY_STATUS_TIGHT;
    s->binding_constraint = replay_results_intern(res, why);
}

/* Executes run i (in the child). */
static int execute(const sweep_ctx *c, size_t i)
{
    size_t n_sets = c->L.n_sets[i];
    const char **sets = c->L.sets[i];
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    input_scenario_info *info = NULL;
    sim_diag diag = {0};
    input_load_stage stage;
    const char *base = c->L.bases ? c->L.bases[i] : c->L.base;
    input_load_options lo = {.steps = c->a->steps, .no_op_sharing = c->a->no_op_sharing,
                             .max_memory_bytes = cli_memory_budget(c->a->max_memory)};
    int rc = input_scenario_load_opts(base, sets, n_sets, &lo, sc, &info, &diag, &stage);
    if (rc) {
        /* the values were each checked when the sweep was read: this is a combination */
        rc = save_status(c, i, REPLAY_STATUS_SKIPPED, diag.msg, 0);
        sim_free(sc);
        return rc;
    }
    snprintf(sc->name, sizeof sc->name, "%s-%zu", c->L.name, i);
    if (c->a->steps > 0)
        sc->simulation.steps = c->a->steps;
    if (c->a->no_timeline)
        sc->simulation.timeline = false;
    plan *p = NULL;
    plan_options po = {.with_trace = true, .no_op_sharing = c->a->no_op_sharing};
    rc = plan_create(sc, &po, &p, &diag);
    if (rc) {
        rc = save_status(c, i, REPLAY_STATUS_SKIPPED, diag.msg,
                         sc->parallel.tp * sc->parallel.cp * sc->parallel.pp * sc->parallel.dp);
    } else {
        replay_results *res = replay_results_create();
        /* a plan without -o keeps its runs in a temporary file it reads the summaries of:
         * no bubble rows (about 200,000 a run on 64 GPUs, most of the merge's bytes) */
        replay_options opt = {.timeline = sc->simulation.timeline,
                              .no_bubble_rows = c->scratch,
                              .no_isolated_rounds = c->a->no_isolated_rounds,
                              .cancel = cli_signal_flag()};
        if (c->L.prune_oom && p->oom)
            replay_memory_only(p, res); /* a plan does not time what cannot run */
        else
            replay_run(p, &opt, res);
        if (c->L.prune_oom && !res->cancelled)
            apply_headroom(&c->L, res);
        /* a stopped replay saves nothing: --resume runs it again */
        rc = res->cancelled ? -1 : save_run(c, i, res, info->resolved_yaml, info);
        replay_results_destroy(res);
        plan_destroy(p);
    }
    input_scenario_info_destroy(info);
    sim_free(sc);
    return rc;
}

/* The last non-empty line of a child's log (its assert message), for an error run. */
static void last_line(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        if (len > 0)
            snprintf(buf, n, "%s", line);
    }
    fclose(f);
}

/* Forks the child that executes run i; returns its pid (or -1). */
static pid_t start_run(const sweep_ctx *c, size_t i)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char log[4200];
    run_path(c, i, "log", log, sizeof log);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    /* the handlers stay (the flag is 0 here): a signal stops the replay, nothing is saved */
    sim_alloc_keep_freed(); /* (one run, then _exit) */
    int rc = execute(c, i);
    const volatile sig_atomic_t *sig = cli_signal_flag();
    _exit(*sig ? 128 + *sig : rc ? 3 : 0);
}

/* After the child of run i has ended: an error run if it left no marker. */
static int finish_run(const sweep_ctx *c, size_t i, int status)
{
    char log[4200];
    run_path(c, i, "log", log, sizeof log);
    int rc = 0;
    if (!run_done(c, i)) {
        char why[1024], msg[1200];
        last_line(log, why, sizeof why);
        if (WIFSIGNALED(status))
            snprintf(msg, sizeof msg, "internal error: the run was killed by signal %d (%s)%s%s",
                     WTERMSIG(status), strsignal(WTERMSIG(status)), why[0] ? ": " : "", why);
        else
            snprintf(msg, sizeof msg, "internal error: the run exited with status %d%s%s",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, why[0] ? ": " : "", why);
        rc = save_status(c, i, REPLAY_STATUS_ERROR, msg, 0);
    }
    unlink(log);
    return rc;
}

/* After the child of run i has ended (its pid reaped): finish_run, unless a signal stopped
 * the sweep, when the run is left without a marker for --resume (its log removed). */
static int child_ended(const sweep_ctx *c, size_t i, int status)
{
    if (!*cli_signal_flag())
        return finish_run(c, i, status);
    char log[4200];
    run_path(c, i, "log", log, sizeof log);
    unlink(log);
    return -1;
}

/* Waits for run i's child, polling (every 10 ms) so that a signal to this process alone
 * (kill PID, not the terminal's whole group) is passed on to the child. */
static int run_blocking(const sweep_ctx *c, size_t i)
{
    pid_t pid = start_run(c, i);
    if (pid < 0)
        return -1;
    int status = 0;
    bool passed = false;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            break;
        int sig = *cli_signal_flag();
        if (sig && !passed) {
            kill(pid, sig);
            passed = true;
        }
        nap_us(10000);
    }
    return child_ended(c, i, status);
}

/* ---- progress ------------------------------------------------------------------------- */

typedef struct progress {
    bool on;
    size_t total, done, start_done;
    double t0, last;
} progress;

static void progress_tick(progress *pr, bool final)
{
    if (!pr->on)
        return;
    double t = cli_wall_s();
    if (!final && t - pr->last < 2.0)
        return;
    pr->last = t;
    double rate = (double)(pr->done - pr->start_done) / SIM_MAX(t - pr->t0, MIN_ELAPSED_S);
    double eta = rate > 0 ? (double)(pr->total - pr->done) / rate : 0;
    fprintf(stderr, "stepsim: %zu/%zu runs done, %.3g runs/s, ETA %.0f s\n", pr->done,
            pr->total, rate, eta);
}

/* ---- scheduling ----------------------------------------------------------------------- */

/* The indices still to run (no marker), in order. */
static size_t *pending_runs(const sweep_ctx *c, size_t *n)
{
    size_t *todo = sim_calloc(c->L.n_runs + 1, sizeof *todo);
    *n = 0;
    for (size_t i = 0; i < c->L.n_runs; i++)
        if (!run_done(c, i))
            todo[(*n)++] = i;
    return todo;
}

static int serial(const sweep_ctx *c, progress *pr)
{
    size_t n;
    size_t *todo = pending_runs(c, &n);
    pr->done = pr->start_done = c->L.n_runs - n;
    int rc = 0;
    for (size_t k = 0; k < n && !rc && !*cli_signal_flag(); k++) {
        rc = run_blocking(c, todo[k]);
        pr->done += !*cli_signal_flag(); /* a stopped run is not done */
        progress_tick(pr, false);
    }
    sim_free(todo);
    return rc;
}

/* Rank 0 under MPI: hands out indices, runs some itself, never blocks long. */
static int coordinate(const sweep_ctx *c, progress *pr)
{
    size_t n;
    size_t *todo = pending_runs(c, &n);
    pr->done = pr->start_done = c->L.n_runs - n;
    size_t next = 0;
    int stopped = 0, rc = 0;
    pid_t child = -1;
    size_t child_run = 0;
    bool passed = false;
    const volatile sig_atomic_t *sig = cli_signal_flag();
    while (stopped < c->size - 1 || child > 0 || (next < n && !rc && !*sig)) {
        bool busy = false;
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            long long done_run;
            MPI_Recv(&done_run, 1, MPI_LONG_LONG, st.MPI_SOURCE, TAG_REQ, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (done_run >= 0)
                pr->done++;
            if (done_run == WORKER_STOPPED) { /* a signalled worker, gone without an answer */
                stopped++;
            } else {
                long long give = next < n && !rc && !*sig ? (long long)todo[next++] : -1;
                MPI_Send(&give, 1, MPI_LONG_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
                stopped += give < 0;
            }
            busy = true;
        }
        if (child > 0) {
            int status;
            pid_t w = waitpid(child, &status, WNOHANG);
            if (w == child) {
                int crc = child_ended(c, child_run, status);
                rc = rc ? rc : crc;
                child = -1;
                pr->done += !*sig;
                busy = true;
            } else if (*sig && !passed) {
                kill(child, *sig);
                passed = true;
            }
        } else if (next < n && !rc && !*sig) {
            child_run = todo[next++];
            child = start_run(c, child_run);
            if (child < 0)
                rc = -1;
            busy = true;
        }
        progress_tick(pr, false);
        if (!busy)
            nap_us(1000);
    }
    sim_free(todo);
    return rc;
}

/* A worker rank: asks for runs until told to stop. */
static int work(const sweep_ctx *c)
{
    long long done_run = -1, run;
    int rc = 0;
    for (;;) {
        MPI_Send(&done_run, 1, MPI_LONG_LONG, 0, TAG_REQ, MPI_COMM_WORLD);
        MPI_Request req;
        MPI_Irecv(&run, 1, MPI_LONG_LONG, 0, TAG_WORK, MPI_COMM_WORLD, &req);
        int flag = 0;
        while (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag)
            nap_us(200);
        if (run < 0)
            break;
        if (!rc && !*cli_signal_flag())
            rc = run_blocking(c, (size_t)run);
        done_run = run;
        if (*cli_signal_flag()) {
            done_run = WORKER_STOPPED;
            MPI_Send(&done_run, 1, MPI_LONG_LONG, 0, TAG_REQ, MPI_COMM_WORLD);
            break;
        }
    }
    return rc;
}

/* ---- set-up and merge ----------------------------------------------------------------- */

/* What a resumed sweep must agree on: the sweep file, the expanded runs' overrides and the
 * flags that change results. */
static char *fingerprint(const sweep_ctx *c)
{
    uint64_t h = SIM_FNV64_OFFSET;
    h = sim_fnv1a64(h, c->L.text, strlen(c->L.text));
    for (size_t i = 0; i < c->L.n_runs; i++)
        for (size_t k = 0; k < c->L.n_sets[i]; k++)
            h = sim_fnv1a64(h, c->L.sets[i][k], strlen(c->L.sets[i][k]) + 1);
    char flags[64];
    snprintf(flags, sizeof flags, "steps=%d timeline=%d", c->a->steps, !c->a->no_timeline);
    h = sim_fnv1a64(h, flags, strlen(flags));
    char *out = sim_calloc(96, 1);
    snprintf(out, 96, "stepsim sweep %" PRIx64 " runs=%zu\n", h, c->L.n_runs);
    return out;
}

/* The NNNNNNN.*.tmp-PID files of runs killed outright (SIGKILL, a crash) in a resumed
 * sweep's directory: the runs without a marker run again and write their own. */
static void remove_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4300];
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
}

/* Rank 0: creates OUT.h5.runs (or checks it for --resume). Returns 0, or an exit code. */
static int prepare_dir(const sweep_ctx *c)
{
    char fp_path[4200];
    snprintf(fp_path, sizeof fp_path, "%s/fingerprint", c->dir);
    char *fp = fingerprint(c);
    int rc = 0;
    if (mkdir(c->dir, 0777) == 0) {
        if (write_durable(fp_path, fp, strlen(fp)) != 0) {
            fprintf(stderr, "%s: error: cannot write: %s\n", fp_path, strerror(errno));
            rc = CLI_EXIT_INVALID; /* an unwritable place or a full disk */
        }
    } else if (errno != EEXIST) {
        fprintf(stderr, "%s: error: cannot create the runs directory: %s\n", c->dir,
                strerror(errno));
        rc = CLI_EXIT_INVALID;
    } else if (!c->a->resume) {
        rc = cli_invalid(c->dir, "exists: an interrupted sweep left its runs here", NULL,
                         "finish it with --resume, or remove the directory to start over");
    } else {
        char have[128] = "";
        FILE *f = fopen(fp_path, "r");
        if (f) {
            if (!fgets(have, sizeof have, f))
                have[0] = '\0';
            fclose(f);
        }
        if (strcmp(have, fp) != 0)
            rc = cli_invalid(c->dir, "holds runs of a different sweep (the sweep file, its "
                                     "runs or --steps/--no-timeline changed)",
                             NULL, "remove the directory to start over");
        else
            remove_temporaries(c->dir);
    }
    sim_free(fp);
    return rc;
}

/* The inputs of every run, each path once, in run order. */
typedef struct input_row {
    char *path, *hash;
} input_row;

static int merge(const sweep_ctx *c)
{
    const run_list *L = &c->L;
    input_row *inputs = NULL;
    size_t n_inputs = 0;
    sim_diag diag = {0};
    int rc = 0;
    static const results_h5r_field fields[] = {
        {"path", RESULTS_H5R_STR, offsetof(input_row, path)},
        {"hash", RESULTS_H5R_STR, offsetof(input_row, hash)},
    };
    for (size_t i = 0; i < L->n_runs && !rc; i++) {
        char p[4200];
        run_path(c, i, "h5", p, sizeof p);
        results_h5r_file *f = NULL;
        rc = results_h5r_open(p, &f, &diag);
        results_h5r_table *t = NULL;
        if (!rc)
            rc = results_h5r_table_open(f, "/inputs", fields, 2, sizeof(input_row), &t);
        if (!rc) {
            size_t n = results_h5r_table_rows(t);
            input_row *rows = sim_calloc(n + 1, sizeof *rows);
            rc = results_h5r_table_read(t, 0, n, rows);
            for (size_t k = 0; !rc && k < n; k++) {
                bool seen = false;
                for (size_t m = 0; m < n_inputs && !seen; m++)
                    seen = strcmp(inputs[m].path, rows[k].path) == 0;
                if (!seen) {
                    inputs = sim_realloc_array(inputs, n_inputs + 1, sizeof *inputs);
                    inputs[n_inputs++] = (input_row){sim_strdup(rows[k].path),
                                                     sim_strdup(rows[k].hash)};
                }
            }
            results_h5r_release(t, rows, n);
            sim_free(rows);
        }
        results_h5r_table_close(t);
        results_h5r_close(f);
    }
    results_h5_input *in = sim_calloc(n_inputs + 2, sizeof *in);
    char sweep_hash[40];
    snprintf(sweep_hash, sizeof sweep_hash, "fnv1a64:%016" PRIx64,
             sim_fnv1a64(SIM_FNV64_OFFSET, L->text, strlen(L->text)));
    in[0] = (results_h5_input){L->source, sweep_hash};
    for (size_t k = 0; k < n_inputs; k++)
        in[k + 1] = (results_h5_input){inputs[k].path, inputs[k].hash};
    results_h5_file *f = NULL;
    if (!rc)
        rc = results_h5_open(c->a->out, c->a->command, in, n_inputs + 1, &f, &diag);
    if (!rc)
        results_h5_sweep_axes(f, L->axis_names, L->n_axes);
    bool stopped = false;
    for (size_t i = 0; i < L->n_runs && !rc && !(stopped = *cli_signal_flag()); i++) {
        char p[4200], name[300];
        run_path(c, i, "h5", p, sizeof p);
        snprintf(name, sizeof name, "%s-%zu", L->name, i);
        rc = results_h5_copy_run(f, p, name);
        if (!rc)
            results_h5_run_axes(f, L->values[i]);
    }
    if (rc || stopped)
        results_h5_abort(f); /* removes OUT.h5.tmp-PID */
    else
        rc = results_h5_close(f);
    if (rc)
        sim_diag_print(&diag, stderr);
    for (size_t k = 0; k < n_inputs; k++) {
        sim_free(inputs[k].path);
        sim_free(inputs[k].hash);
    }
    sim_free(inputs);
    sim_free(in);
    /* a failed write of OUT.h5 (a full disk) is the environment's: exit 2 */
    return rc ? (rc < 0 ? cli_exit_of(rc) : 1) : stopped ? -1 : 0;
}

void cli__runs_print_json(const sweep_ctx *c)
{
    for (size_t i = 0; i < c->L.n_runs; i++) {
        char p[4200];
        run_path(c, i, "json", p, sizeof p);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        char buf[65536];
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, f)) > 0)
            fwrite(buf, 1, k, stdout);
        fclose(f);
    }
}

void cli__runs_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4300];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Rank 0, before any run: refuses an unsafe -o (output.h) — the inputs are the runs' source
 * file, their base scenarios and the files those reference — then takes OUT.h5's lock, which
 * also covers OUT.h5.runs, and removes the temporaries of a merge killed outright. */
static int guard_output(const sweep_ctx *c, cli_output_lock *lock)
{
    const run_list *L = &c->L;
    size_t n = 0, cap = 8;
    const char **in = sim_calloc(cap, sizeof *in);
    in[n++] = L->source;
    size_t n_bases = L->bases ? L->n_runs : 1;
    input_scenario_info **infos = sim_calloc(n_bases + 1, sizeof *infos);
    for (size_t b = 0; b < n_bases; b++) {
        const char *base = L->bases ? L->bases[b] : L->base;
        bool seen = false;
        for (size_t k = 0; k < b && !seen; k++)
            seen = strcmp(L->bases[k], base) == 0;
        if (seen)
            continue;
        plan_scenario *sc = sim_calloc(1, sizeof *sc);
        /* a base that does not load alone (valid only with a run's overrides) still counts */
        (void)input_scenario_load(base, NULL, 0, sc, &infos[b], NULL);
        sim_free(sc);
        size_t more = 1 + (infos[b] ? infos[b]->n_inputs : 0);
        if (n + more > cap) {
            cap = 2 * (n + more);
            in = sim_realloc_array(in, cap, sizeof *in);
        }
        in[n++] = base;
        for (size_t k = 0; infos[b] && k < infos[b]->n_inputs; k++)
            in[n++] = infos[b]->inputs[k].path;
    }
    int rc = cli_output_check("--output", c->a->out, in, n);
    for (size_t b = 0; b < n_bases; b++)
        input_scenario_info_destroy(infos[b]);
    sim_free(infos);
    sim_free(in);
    if (rc == 0)
        rc = cli_output_lock_take(lock, c->a->out);
    if (rc == 0)
        cli_output_remove_stale(c->a->out);
    return rc;
}

/* Rank 0 after a signal: says where the finished runs are; the exit code. */
static int stopped_by(const sweep_ctx *c, int sig)
{
    char what[4300];
    snprintf(what, sizeof what, "the finished runs are in %s (--resume goes on from there)",
             c->dir);
    if (c->scratch)
        snprintf(what, sizeof what, "nothing kept");
    return cli_signal_report(sig, what);
}

int cli__runs_execute(sweep_ctx *c, int (*finish)(sweep_ctx *c))
{
    const sweep_args *a = c->a;
    size_t len = strlen(a->out) + 8;
    c->dir = sim_calloc(len, 1);
    snprintf(c->dir, len, "%s.runs", a->out);
    cli_output_lock lock = {.fd = -1};
    int rc = c->rank == 0 ? guard_output(c, &lock) : 0;
    if (c->rank == 0 && rc == 0)
        rc = prepare_dir(c);
    if (c->mpi)
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc) {
        cli_output_lock_release(&lock);
        return rc;
    }
    progress pr = {.on = c->rank == 0 && (a->progress || isatty(2)), .total = c->L.n_runs,
                   .t0 = cli_wall_s()};
    if (!c->mpi || c->size == 1)
        rc = serial(c, &pr);
    else if (c->rank == 0)
        rc = coordinate(c, &pr);
    else
        rc = work(c);
    int sig = *cli_signal_flag();
    if (c->mpi) {
        int mine[2] = {rc != 0, sig}, all[2];
        MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        rc = all[0] ? (rc < 0 ? rc : 1) : 0; /* rank 0 keeps its own failed write's code */
        sig = all[1];
    }
    if (c->rank != 0)
        return sig ? 128 + sig : rc;
    progress_tick(&pr, true);
    fprintf(stderr, "stepsim: %zu runs: %zu done before, %zu run now on %d rank(s) in %.3g s\n",
            c->L.n_runs, pr.start_done, c->L.n_runs - pr.start_done, c->size, cli_wall_s() - pr.t0);
    if (sig) {
        rc = stopped_by(c, sig);
    } else if (rc < 0) {
        /* a failed write of a run's file, printed as its one error line (a full disk, an
         * unwritable directory): the environment's, exit 2 */
        fprintf(stderr, "  the finished runs are in %s (--resume goes on from there)\n",
                c->dir);
        rc = cli_exit_of(rc);
    } else if (rc) {
        fprintf(stderr, "%s: error: could not complete; the finished runs are in %s (--resume "
                        "goes on from there)\n", c->L.source, c->dir);
    } else {
        rc = merge(c);
        if (rc < 0)
            rc = stopped_by(c, *cli_signal_flag());
        if (!rc)
            rc = finish(c);
        if (!rc)
            cli__runs_remove_dir(c->dir);
    }
    cli_output_lock_release(&lock);
    return rc;
}

static int sweep_finish(sweep_ctx *c)
{
    if (c->a->json) {
        cli__runs_print_json(c);
        return 0;
    }
    return cli_report_file(c->a->out, false);
}

/* The run list of a loaded sweep (strings borrowed from it). */
static void sweep_runs(sweep_ctx *c)
{
    const input_sweep *sw = c->sw;
    run_list *L = &c->L;
    *L = (run_list){.base = sw->bases[0], .name = sw->name, .source = sw->path,
                    .text = sw->text, .n_runs = sw->n_runs, .n_axes = sw->n_axes};
    if (sw->base_axis) {
        L->bases = sim_calloc(sw->n_runs + 1, sizeof *L->bases);
        for (size_t i = 0; i < sw->n_runs; i++)
            L->bases[i] = input_sweep_run_base(sw, i);
    }
    L->axis_names = sim_calloc(sw->n_axes + 1, sizeof *L->axis_names);
    for (size_t k = 0; k < sw->n_axes; k++)
        L->axis_names[k] = sw->axes[k].key;
    L->sets = sim_calloc(sw->n_runs + 1, sizeof *L->sets);
    L->n_sets = sim_calloc(sw->n_runs + 1, sizeof *L->n_sets);
    L->values = sim_calloc(sw->n_runs + 1, sizeof *L->values);
    size_t *which = sim_calloc(sw->n_axes + 1, sizeof *which);
    for (size_t i = 0; i < sw->n_runs; i++) {
        L->sets[i] = input_sweep_run_sets(sw, i, &L->n_sets[i], which);
        L->values[i] = sim_calloc(sw->n_axes + 1, sizeof *L->values[i]);
        for (size_t k = 0; k < sw->n_axes; k++)
            L->values[i][k] = sw->axes[k].values[which[k]].text;
    }
    sim_free(which);
}

static void free_runs(run_list *L)
{
    for (size_t i = 0; i < L->n_runs; i++) {
        sim_free(L->sets[i]);
        sim_free(L->values[i]);
    }
    sim_free(L->sets);
    sim_free(L->n_sets);
    sim_free(L->values);
    sim_free(L->axis_names);
    sim_free(L->bases);
}

static int sweep_body(void *parsed, int argc, char **argv)
{
    sweep_args *a = parsed;
    int rc = 0;
    if (a->timeline && a->no_timeline)
        return cli_invalid("--timeline", "contradicts --no-timeline", NULL,
                           "a sweep keeps no timelines unless --timeline is given");
    a->no_timeline = !a->timeline; /* summaries and memory only, by default */
    cli_command_line(&sweep_spec, argc, argv, a->command, sizeof a->command);
    sweep_ctx c = {.a = a, .size = 1};
    c.mpi = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    if (c.mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    }
    cli_signals_install(); /* after MPI_Init: ours, whatever it installs */
    sim_diag diag = {0};
    rc = input_sweep_load(a->file, &c.sw, &diag);
    if (rc) { /* every rank read the same file and failed alike; one prints */
        if (c.rank == 0)
            sim_diag_print(&diag, stderr);
        rc = CLI_EXIT_INVALID;
    } else {
        sweep_runs(&c);
        rc = cli__runs_execute(&c, sweep_finish);
        free_runs(&c.L);
    }
    input_sweep_destroy(c.sw);
    sim_free(c.dir);
    if (c.mpi)
        MPI_Finalize();
    return rc;
}

int cli_sweep(const cli_command *cmd, int argc, char **argv)
{
    sweep_args a = {0};
    return cli_opts_run(cmd, &sweep_spec, argc, argv, &a, sweep_body);
}
