/* Unit test of sim/results/h5: writes the synthetic sample of sample.h, reads it back with the
 * HDF5 C API (attributes, row counts, values, storage properties), and checks the file
 * guarantees of results_h5_write: byte-identical output for identical input, no temporary file
 * left behind, nothing written on failure, previous file kept on failure. */
#include "core/sim.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "../test.h"
#include "results/h5.h"
#include "sample.h"

static char dir[64];

static const char *scenario_text = "name: tiny\nparallel: {dp: 2}\n";

static void path_in_dir(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

/* Names in the test directory other than . and .. */
static int dir_entries(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int write_sample(const char *path, size_t n_runs, int write_timeline, sim_diag *diag)
{
    static const replay_status status[] = {REPLAY_STATUS_OK, REPLAY_STATUS_OOM,
                                           REPLAY_STATUS_SKIPPED};
    replay_results *res[3] = {0};
    results_h5_run runs[3];
    for (size_t i = 0; i < n_runs; i++) {
        char name[32];
        snprintf(name, sizeof name, "tiny-%zu", i);
        res[i] = sample_results(n_runs == 1 ? "tiny" : name, status[i]);
        runs[i] = (results_h5_run){res[i], scenario_text};
    }
    results_h5_input inputs[2] = {{"scenarios/tiny.yaml", "sha256:00ff"},
                             {"topologies/2x-rtx4090-pcie.yaml", "sha256:abcd"}};
    int rc = results_h5_write(path, "stepsim run scenarios/tiny.yaml -o out.h5", inputs, 2, runs,
                         n_runs, write_timeline, diag);
    for (size_t i = 0; i < n_runs; i++)
        replay_results_destroy(res[i]);
    return rc;
}

/* ---- reading helpers ----------------------------------------------------------------- */

static void read_str_attr(hid_t obj, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    CHECK(a >= 0);
    if (a < 0)
        return;
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char *s = NULL;
    CHECK(H5Aread(a, t, &s) >= 0);
    snprintf(out, n, "%s", s ? s : "");
    H5free_memory(s);
    H5Tclose(t);
    H5Aclose(a);
}

static long read_int_attr(hid_t obj, const char *name)
{
    int32_t v = -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    CHECK(a >= 0);
    if (a < 0)
        return -1;
    CHECK(H5Aread(a, H5T_NATIVE_INT32, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* Rows of a table, -1 when it does not exist (the parent groups must exist). */
static long rows_of(hid_t file, const char *path)
{
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0)
        return -1;
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0)
        return -1;
    hid_t s = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, NULL);
    H5Sclose(s);
    H5Dclose(d);
    return (long)n;
}

/* Reads one numeric column (converted to double) of a table into `out` (n rows at most). */
static void read_col_f64(hid_t file, const char *path, const char *col, double *out, size_t n)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    CHECK(d >= 0);
    if (d < 0)
        return;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(t, col, 0, H5T_NATIVE_DOUBLE);
    CHECK((size_t)rows_of(file, path) <= n);
    CHECK(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
    H5Tclose(t);
    H5Dclose(d);
}

/* Reads one string column; the strings are copied into out[i] (64 bytes each). */
static void read_col_str(hid_t file, const char *path, const char *col, char (*out)[64], size_t n)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    CHECK(d >= 0);
    if (d < 0)
        return;
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, H5T_VARIABLE);
    H5Tset_cset(st, H5T_CSET_UTF8);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(char *));
    H5Tinsert(t, col, 0, st);
    size_t rows = (size_t)rows_of(file, path);
    CHECK(rows <= n);
    char **s = sim_calloc(rows ? rows : 1, sizeof *s);
    CHECK(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0);
    for (size_t i = 0; i < rows && i < n; i++)
        snprintf(out[i], 64, "%s", s[i] ? s[i] : "");
    hid_t space = H5Dget_space(d);
    H5Dvlen_reclaim(t, space, H5P_DEFAULT, s);
    H5Sclose(space);
    sim_free(s);
    H5Tclose(t);
    H5Tclose(st);
    H5Dclose(d);
}

/* Column names of a table, joined with ','. */
static void col_names(hid_t file, const char *path, char *out, size_t n)
{
    out[0] = '\0';
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    CHECK(d >= 0);
    if (d < 0)
        return;
    hid_t t = H5Dget_type(d);
    int m = H5Tget_nmembers(t);
    size_t at = 0;
    for (int i = 0; i < m; i++) {
        char *name = H5Tget_member_name(t, (unsigned)i);
        at += (size_t)snprintf(out + at, n - at, "%s%s", i ? "," : "", name);
        H5free_memory(name);
        if (at >= n)
            break;
    }
    H5Tclose(t);
    H5Dclose(d);
}

static int n_filters(hid_t file, const char *path, H5D_layout_t *layout)
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0)
        return -1;
    hid_t p = H5Dget_create_plist(d);
    int n = H5Pget_nfilters(p);
    *layout = H5Pget_layout(p);
    H5Pclose(p);
    H5Dclose(d);
    return n;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_contents(void)
{
    char path[128], buf[4096];
    path_in_dir(path, sizeof path, "one.h5");
    sim_diag diag = {0};
    CHECK_INT_EQ(write_sample(path, 1, 1, &diag), 0);
    CHECK_INT_EQ(diag.set, 0);
    CHECK_INT_EQ(dir_entries(), 1); /* the file, no temporary left */

    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0);
    if (f < 0)
        return;
    CHECK_INT_EQ(read_int_attr(f, "schema_version"), 1);
    read_str_attr(f, "stepsim_version", buf, sizeof buf);
    CHECK_STR_EQ(buf, STEPSIM_VERSION);
    read_str_attr(f, "command", buf, sizeof buf);
    CHECK_STR_EQ(buf, "stepsim run scenarios/tiny.yaml -o out.h5");
    read_str_attr(f, "input_hashes", buf, sizeof buf);
    CHECK_STR_EQ(buf, "sha256:00ff  scenarios/tiny.yaml\n"
                      "sha256:abcd  topologies/2x-rtx4090-pcie.yaml\n");
    CHECK_INT_EQ(rows_of(f, "/inputs"), 2);
    char strs[8][64];
    read_col_str(f, "/inputs", "hash", strs, 8);
    CHECK_STR_EQ(strs[1], "sha256:abcd");

    hid_t g = H5Gopen2(f, "/runs/tiny", H5P_DEFAULT);
    CHECK(g >= 0);
    read_str_attr(g, "scenario", buf, sizeof buf);
    CHECK_STR_EQ(buf, scenario_text);
    read_str_attr(g, "status", buf, sizeof buf);
    CHECK_STR_EQ(buf, "ok");
    read_str_attr(g, "error", buf, sizeof buf);
    CHECK_STR_EQ(buf, "");
    CHECK_INT_EQ(read_int_attr(g, "timeline_written"), 1);
    H5Gclose(g);

    CHECK_INT_EQ(rows_of(f, "/runs/tiny/summary"), 1);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/ranks"), 2);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/steps"), 2);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/timeline"), SAMPLE_TIMELINE_ROWS);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/bubbles"), SAMPLE_BUBBLE_ROWS);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/memory"), SAMPLE_MEMORY_ROWS);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny/links"), SAMPLE_LINK_ROWS);
    CHECK_INT_EQ(rows_of(f, "/sweep"), -1); /* one run: no sweep table */

    /* Columns exactly in docs/hdf5-schema.md order (plus step). */
    col_names(f, "/runs/tiny/timeline", buf, sizeof buf);
    CHECK_STR_EQ(buf, "rank,stream,kind,name,layer,microbatch,phase,group,step,start_s,end_s,"
                      "bytes,flops");
    col_names(f, "/runs/tiny/ranks", buf, sizeof buf);
    CHECK_STR_EQ(buf, "rank,node,dp,tp,pp,ep,cp,compute_s,comm_s,idle_s,bubble_s,peak_mem_bytes,"
                      "params,grads,optimizer,activations,buffers,other");
    col_names(f, "/runs/tiny/links", buf, sizeof buf);
    CHECK_STR_EQ(buf, "link,src,dst,class,bytes,busy_s,utilization");
    col_names(f, "/runs/tiny/summary", buf, sizeof buf);
    CHECK_STR_HAS(buf, "name,status,error,gpus,steps,step_time_s,tokens_per_s,");
    CHECK_STR_HAS(buf, ",bubble_by_cause.pipeline,bubble_by_cause.dp,");
    CHECK_STR_HAS(buf, ",comm_bytes_per_gpu.offload,moe.dropped_fraction,moe.load_max_over_mean,"
                       "slowest_rank.rank,slowest_rank.compute_s,slowest_rank.wait_s,"
                       "budget.tokens,budget.steps,budget.time_to_train_s,budget.gpu_hours,"
                       "budget.cost,peak_mem_bytes,mem_bytes.params,");
    CHECK_STR_HAS(buf, ",capacity_bytes,binding_constraint");

    /* Values: timeline row i starts at 0.125 i (sample.h); row 5 is the dp all-reduce. */
    double v[16];
    read_col_f64(f, "/runs/tiny/timeline", "start_s", v, 16);
    CHECK_NEAR(v[3], 0.375, 0, 0);
    read_col_f64(f, "/runs/tiny/timeline", "bytes", v, 16);
    CHECK_NEAR(v[5], 8e9, 0, 0);
    read_col_str(f, "/runs/tiny/timeline", "name", strs, 8);
    CHECK_STR_EQ(strs[2], "layer1.fwd");
    CHECK_STR_EQ(strs[5], "grad_allreduce");
    read_col_str(f, "/runs/tiny/timeline", "group", strs, 8);
    CHECK_STR_EQ(strs[5], "dp");
    read_col_str(f, "/runs/tiny/bubbles", "cause", strs, 8);
    CHECK_STR_EQ(strs[1], "dp");
    read_col_f64(f, "/runs/tiny/summary", "mem_bytes.other", v, 16);
    CHECK_NEAR(v[0], 123456789, 0, 0);
    read_col_f64(f, "/runs/tiny/summary", "bubble_by_cause.pipeline", v, 16);
    CHECK_NEAR(v[0], 0.125, 0, 0);
    read_col_f64(f, "/runs/tiny/ranks", "activations", v, 16);
    CHECK_NEAR(v[1], 2999999999.0, 0, 0);
    read_col_str(f, "/runs/tiny/summary", "binding_constraint", strs, 8);
    CHECK_STR_EQ(strs[0], "");

    /* Storage: large tables chunked and deflated, small ones contiguous. */
    H5D_layout_t layout;
    CHECK_INT_EQ(n_filters(f, "/runs/tiny/timeline", &layout), 1);
    CHECK_INT_EQ(layout, H5D_CHUNKED);
    CHECK_INT_EQ(n_filters(f, "/runs/tiny/memory", &layout), 1);
    CHECK_INT_EQ(n_filters(f, "/runs/tiny/ranks", &layout), 0);
    CHECK_INT_EQ(layout, H5D_CONTIGUOUS);

    hid_t d = H5Dopen2(f, "/runs/tiny/timeline", H5P_DEFAULT);
    read_str_attr(d, "units", buf, sizeof buf);
    CHECK_STR_EQ(buf, "start_s: s, end_s: s, bytes: B, flops: FLOP");
    H5Dclose(d);
    CHECK_INT_EQ(H5Fclose(f), 0);
}

static void test_several_runs_no_timeline(void)
{
    char path[128], buf[256];
    path_in_dir(path, sizeof path, "three.h5");
    sim_diag diag = {0};
    CHECK_INT_EQ(write_sample(path, 3, 0, &diag), 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0);
    if (f < 0)
        return;
    CHECK_INT_EQ(rows_of(f, "/sweep"), 3);
    char strs[8][64];
    read_col_str(f, "/sweep", "status", strs, 8);
    CHECK_STR_EQ(strs[0], "ok");
    CHECK_STR_EQ(strs[1], "oom");
    CHECK_STR_EQ(strs[2], "skipped");
    read_col_str(f, "/sweep", "error", strs, 8);
    CHECK_STR_EQ(strs[2], "dp=3 does not divide the 2 GPUs");
    double v[4];
    read_col_f64(f, "/sweep", "index", v, 4);
    CHECK_NEAR(v[2], 2, 0, 0);
    col_names(f, "/sweep", buf, sizeof buf);
    CHECK_STR_EQ(buf, "index,name,status,error,step_time_s,tokens_per_s,mfu,peak_mem_bytes,"
                      "bubble_fraction");

    /* No timeline requested: the table exists, empty (and chunked, so extendable later). */
    CHECK_INT_EQ(rows_of(f, "/runs/tiny-0/timeline"), 0);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny-1/timeline"), 0);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny-1/bubbles"), SAMPLE_BUBBLE_ROWS);
    hid_t g = H5Gopen2(f, "/runs/tiny-1", H5P_DEFAULT);
    CHECK_INT_EQ(read_int_attr(g, "timeline_written"), 0);
    H5Gclose(g);

    /* A skipped run: attributes and summary only. */
    g = H5Gopen2(f, "/runs/tiny-2", H5P_DEFAULT);
    read_str_attr(g, "status", buf, sizeof buf);
    CHECK_STR_EQ(buf, "skipped");
    read_str_attr(g, "error", buf, sizeof buf);
    CHECK_STR_EQ(buf, "dp=3 does not divide the 2 GPUs");
    H5Gclose(g);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny-2/summary"), 1);
    CHECK_INT_EQ(rows_of(f, "/runs/tiny-2/ranks"), -1);
    CHECK_INT_EQ(H5Fclose(f), 0);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    char *buf = sim_calloc(*n + 1, 1);
    CHECK_INT_EQ(fread(buf, 1, *n, f), *n);
    fclose(f);
    return buf;
}

static void test_byte_identical(void)
{
    char a[128], b[128];
    path_in_dir(a, sizeof a, "a.h5");
    path_in_dir(b, sizeof b, "b.h5");
    CHECK_INT_EQ(write_sample(a, 3, 1, NULL), 0);
    /* Object times have one-second resolution: wait so that any leaking timestamp differs. */
    struct timespec pause = {1, 100000000};
    nanosleep(&pause, NULL);
    CHECK_INT_EQ(write_sample(b, 3, 1, NULL), 0);
    size_t na = 0, nb = 0;
    char *da = slurp(a, &na), *db = slurp(b, &nb);
    CHECK_INT_EQ(na, nb);
    CHECK(na > 0 && da && db && na == nb && memcmp(da, db, na) == 0);
    sim_free(da);
    sim_free(db);
    remove(a);
    remove(b);
}

static void test_failures(void)
{
    /* Unwritable location: SIM_EIO, one diagnostic naming the path, nothing created. */
    sim_diag diag = {0};
    const char *bad = "/nonexistent-dir/x.h5";
    CHECK_INT_EQ(write_sample(bad, 1, 1, &diag), SIM_EIO);
    CHECK_INT_EQ(diag.set, 1);
    CHECK_STR_EQ(diag.file, bad);
    CHECK_INT_EQ(diag.line, 0);
    CHECK_STR_EQ(diag.msg, "cannot create file: No such file or directory");
    CHECK(access(bad, F_OK) != 0);

    /* A failure after the file was started (duplicate run names) keeps the previous file at
     * the path and removes the temporary one. */
    char path[128];
    path_in_dir(path, sizeof path, "keep.h5");
    FILE *f = fopen(path, "w");
    fputs("previous", f);
    fclose(f);
    int before = dir_entries();
    replay_results *r0 = sample_results("same", REPLAY_STATUS_OK);
    replay_results *r1 = sample_results("same", REPLAY_STATUS_OK);
    results_h5_run runs[2] = {{r0, ""}, {r1, ""}};
    memset(&diag, 0, sizeof diag);
    CHECK_INT_EQ(results_h5_write(path, "cmd", NULL, 0, runs, 2, 1, &diag), SIM_EINVAL);
    CHECK_STR_EQ(diag.file, path);
    CHECK_STR_HAS(diag.msg, "two runs are named \"same\"");
    CHECK_INT_EQ(dir_entries(), before);
    size_t n = 0;
    char *kept = slurp(path, &n);
    CHECK_STR_EQ(kept, "previous");
    sim_free(kept);

    /* A name that cannot be a group: refused before anything is created. */
    snprintf(r0->summary.name, sizeof r0->summary.name, "a/b");
    memset(&diag, 0, sizeof diag);
    CHECK_INT_EQ(results_h5_write(path, "cmd", NULL, 0, runs, 1, 1, &diag), SIM_EINVAL);
    CHECK_STR_HAS(diag.msg, "run name \"a/b\" cannot name an HDF5 group");
    CHECK_INT_EQ(dir_entries(), before);

    /* The same name reaching a streamed timeline: the failed group creation is returned (it
     * crashed in the append once), and the abort removes the temporary. */
    results_h5_file *sf = NULL;
    memset(&diag, 0, sizeof diag);
    CHECK_INT_EQ(results_h5_open(path, "cmd", NULL, 0, &sf, &diag), 0);
    replay_timeline_row row = {0};
    CHECK_INT_EQ(results_h5_stream_timeline(sf, "a/b", &row, 1), SIM_EINVAL);
    CHECK_STR_HAS(diag.msg, "run name \"a/b\" cannot name an HDF5 group");
    results_h5_abort(sf);
    CHECK_INT_EQ(dir_entries(), before);
    remove(path);
    replay_results_destroy(r0);
    replay_results_destroy(r1);

    /* Writing over an existing file replaces it (rename); no runs is a valid file. */
    path_in_dir(path, sizeof path, "empty.h5");
    f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    CHECK_INT_EQ(results_h5_write(path, "cmd", NULL, 0, NULL, 0, 1, NULL), 0);
    hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(h >= 0);
    CHECK_INT_EQ(rows_of(h, "/inputs"), 0);
    hid_t g = H5Gopen2(h, "/runs", H5P_DEFAULT);
    CHECK(g >= 0);
    H5Gclose(g);
    H5Fclose(h);
    remove(path);
}

/* A write that fails half-way (the file-size limit stands in for a full disk): SIM_EIO with
 * the system's reason, and neither the file nor the temporary one is left. */
static void test_write_failure(void)
{
    struct rlimit old, small;
    CHECK_INT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 4096; /* the 3-run sample file is about 50 KB */
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    char path[128];
    path_in_dir(path, sizeof path, "big.h5");
    sim_diag diag = {0};
    int before = dir_entries();
    int rc = write_sample(path, 3, 1, &diag);
    CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_sig);
    CHECK_INT_EQ(rc, SIM_EIO);
    CHECK_STR_EQ(diag.file, path);
    CHECK_STR_HAS(diag.msg, "cannot write ");
    CHECK_STR_HAS(diag.msg, ": File too large");
    CHECK_INT_EQ(dir_entries(), before);
}

static void test_error_handler_restored(void)
{
    H5E_auto2_t func = NULL;
    void *data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    CHECK(func != NULL); /* HDF5's default printer, which results_h5_write must put back */
    sim_diag diag = {0};
    write_sample("/nonexistent-dir/y.h5", 1, 1, &diag);
    H5E_auto2_t after = NULL;
    void *after_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
    CHECK(after == func && after_data == data);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/stepsim-test-h5-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_contents();
    char p[128];
    path_in_dir(p, sizeof p, "one.h5");
    remove(p);
    test_several_runs_no_timeline();
    path_in_dir(p, sizeof p, "three.h5");
    remove(p);
    test_byte_identical();
    test_failures();
    test_write_failure();
    test_error_handler_restored();
    CHECK_INT_EQ(dir_entries(), 0);
    rmdir(dir);
    return test_finish();
}
