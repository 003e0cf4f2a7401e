/* `stepsim report OUT.h5 --html REPORT.html`: a results file as one self-contained page
 * (docs/cli.md, "report"): no script, no fetch, inline CSS and SVG, so it opens anywhere and
 * prints as it shows. Sections (each with an id a test can find):
 *   summary       the runs as `report` lists them (labels, status, step, tokens/s, MFU,
 *                 memory, bubbles), with a bar per run of its throughput (the sweep figure)
 *   verdict-N     per run: its status, binding constraint and remedies as the file has them,
 *                 and where its step went (compute, idle by cause) as a stacked bar
 *   timeline-N    the last step of the first ranks (at most 16): compute, communication and
 *                 copies as coloured spans
 *   memory-N      the highest-peak rank's memory over the run, by category, as stacked steps
 *   inputs        the files read with their hashes, and each run's scenario as simulated
 * The figures are drawn from the run's tables; a table the file does not have (a sweep keeps
 * no timeline without --timeline) is said to be absent. */
#include "core/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/report-internal.h"

#define TL_RANKS 16      /* ranks drawn in a timeline */
#define TL_SPANS 40000   /* spans drawn in a timeline, at most */
#define MEM_POINTS 20000 /* changes drawn in a memory figure, at most */

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

/* one per bubble cause, in replay_cause order (host: a dark grey, other: the light one) */
static const char *const cause_colors[] = {"#e15759", "#f28e2b", "#edc948", "#b07aa1",
                                           "#ff9da7", "#9c755f", "#76b7b2", "#79706e",
                                           "#bab0ac"};
_Static_assert(sizeof cause_colors / sizeof cause_colors[0] == REPLAY_CAUSE_COUNT,
               "a colour per bubble cause");

static void head(FILE *f, const char *in)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>stepsim "
          "report: ", f);
    esc(f, in);
    fputs("</title>\n<style>\n"
          "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}\n"
          "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}\n"
          "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;text-align:right;"
          "border-bottom:1px solid #eee}td:first-child,th:first-child{text-align:left}\n"
          ".ok{color:#2a7d2a}.oom,.error,.skipped{color:#b22}.tight{color:#a60}\n"
          "pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}\n"
          ".legend span{display:inline-block;margin-right:12px}.sw{display:inline-block;"
          "width:10px;height:10px;margin-right:4px}\n"
          "</style></head><body>\n", f);
}

static const char *status_class(const char *s)
{
    return strcmp(s, "ok") == 0 || strcmp(s, "tight") == 0 || strcmp(s, "oom") == 0 ||
                   strcmp(s, "skipped") == 0
               ? s
               : "error";
}

/* The runs' table and the throughput bars. */
static void summary(FILE *f, const run_row *runs, size_t n)
{
    double best = 0;
    for (size_t i = 0; i < n; i++)
        if (cli__report_completed(&runs[i]) && runs[i].tokens_per_s > best)
            best = runs[i].tokens_per_s;
    fputs("<h2 id=\"summary\">Runs</h2>\n<table><tr><th>run</th><th>status</th><th>GPUs</th>"
          "<th>step (s)</th><th>tokens/s</th><th>MFU</th><th>peak / capacity (GiB)</th>"
          "<th>bubbles</th><th>throughput</th></tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        const run_row *r = &runs[i];
        fputs("<tr><td>", f);
        esc(f, r->label);
        fprintf(f, "</td><td class=\"%s\">", status_class(r->status));
        esc(f, r->status);
        fprintf(f, "</td><td>%d</td>", (int)r->gpus);
        if (cli__report_completed(r)) {
            double w = best > 0 ? 200 * r->tokens_per_s / best : 0;
            fprintf(f, "<td>%.4g</td><td>%.6g</td><td>%.1f%%</td><td>%.2f / %.2f</td>"
                       "<td>%.1f%%</td><td><svg width=\"210\" height=\"12\"><rect width=\"%.1f\" "
                       "height=\"12\" fill=\"#4e79a7\"/></svg></td></tr>\n",
                    r->step_time_s, r->tokens_per_s, 100 * r->mfu,
                    (double)r->peak_mem_bytes / 1073741824.0,
                    (double)r->capacity_bytes / 1073741824.0, 100 * r->bubble_fraction, w);
        } else {
            fputs("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td></td></tr>\n", f);
        }
    }
    fputs("</table>\n", f);
}

/* Status, constraint and where the step went. */
static void verdict(FILE *f, const run_row *r, size_t k)
{
    fprintf(f, "<h3 id=\"verdict-%zu\">", k);
    esc(f, r->label);
    fprintf(f, ": <span class=\"%s\">", status_class(r->status));
    esc(f, r->status);
    fputs("</span></h3>\n", f);
    if (r->binding[0]) {
        fputs("<p>", f);
        esc(f, r->binding);
        fputs("</p>\n", f);
    }
    if (r->error[0]) {
        fputs("<p>", f);
        esc(f, r->error);
        fputs("</p>\n", f);
    }
    if (!cli__report_completed(r))
        return;
    /* the step: computing, then idle by cause */
    double x = 0, w = 800;
    fputs("<svg width=\"820\" height=\"26\" role=\"img\"><title>where the step went</title>", f);
    double busy = 1 - r->bubble_fraction;
    fprintf(f, "<rect x=\"0\" y=\"2\" width=\"%.2f\" height=\"20\" fill=\"#59a14f\"/>", busy * w);
    x = busy * w;
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++) {
        double v = r->bubble[c] * w;
        if (v <= 0)
            continue;
        fprintf(f, "<rect x=\"%.2f\" y=\"2\" width=\"%.2f\" height=\"20\" fill=\"%s\"/>", x, v,
                cause_colors[c]);
        x += v;
    }
    fputs("</svg>\n<div class=\"legend\"><span><i class=\"sw\" style=\"background:#59a14f\">"
          "</i>compute ", f);
    fprintf(f, "%.1f%%</span>", 100 * busy);
    for (int c = 0; c < REPLAY_CAUSE_COUNT; c++)
        if (r->bubble[c] > 0)
            fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s %.1f%%</span>",
                    cause_colors[c], replay_cause_name((replay_cause)c), 100 * r->bubble[c]);
    fputs("</div>\n", f);
}

typedef struct tl_row {
    int32_t rank, step;
    char *kind;
    double start, end;
} tl_row;

typedef struct tl_ctx {
    FILE *f;
    int last_step;
    double t0, t1, w;
    size_t drawn;
    bool pass_find; /* first pass: the last step's bounds */
    /* per rank and lane (compute, the rest): the span being drawn, which the next one of its
     * colour extends when they touch to half a pixel (thousands of kernels become one bar) */
    bool open[TL_RANKS][2];
    double x0[TL_RANKS][2], x1[TL_RANKS][2];
    const char *color[TL_RANKS][2];
} tl_ctx;

static void tl_flush(tl_ctx *c, int rank, int lane)
{
    if (!c->open[rank][lane] || c->drawn >= TL_SPANS)
        return;
    fprintf(c->f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
            c->x0[rank][lane], 20 + rank * 22 + (lane ? 11 : 0),
            SIM_MAX(c->x1[rank][lane] - c->x0[rank][lane], 0.3), lane ? 8 : 10,
            c->color[rank][lane]);
    c->drawn++;
    c->open[rank][lane] = false;
}

static const char *kind_color(const char *k)
{
    if (strcmp(k, "compute") == 0)
        return "#4e79a7";
    if (strncmp(k, "copy", 4) == 0 || strcmp(k, "host") == 0)
        return "#76b7b2";
    return "#f28e2b"; /* collectives and transfers */
}

static int tl_slice(void *ud, void *rows, size_t first, size_t n)
{
    (void)first;
    tl_ctx *c = ud;
    const tl_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        if (c->pass_find) {
            if (r[i].step > c->last_step) {
                c->last_step = r[i].step;
                c->t0 = r[i].start;
                c->t1 = r[i].end;
            } else if (r[i].step == c->last_step) {
                c->t0 = fmin(c->t0, r[i].start);
                c->t1 = fmax(c->t1, r[i].end);
            }
            continue;
        }
        if (r[i].step != c->last_step || r[i].rank < 0 || r[i].rank >= TL_RANKS)
            continue;
        double span = c->t1 > c->t0 ? c->t1 - c->t0 : 1;
        double x = (r[i].start - c->t0) / span * c->w, x1 = (r[i].end - c->t0) / span * c->w;
        int lane = r[i].kind && strcmp(r[i].kind, "compute") == 0 ? 0 : 1, rk = r[i].rank;
        const char *col = kind_color(r[i].kind ? r[i].kind : "");
        if (c->open[rk][lane] && c->color[rk][lane] == col && x <= c->x1[rk][lane] + 0.5 &&
            x >= c->x0[rk][lane] - 0.5) {
            c->x1[rk][lane] = fmax(c->x1[rk][lane], x1);
            continue;
        }
        tl_flush(c, rk, lane);
        c->open[rk][lane] = true;
        c->x0[rk][lane] = x;
        c->x1[rk][lane] = x1;
        c->color[rk][lane] = col;
    }
    return 0;
}

static void timeline(FILE *f, results_h5r_file *h, const char *run, int ranks, size_t k)
{
    char path[600];
    snprintf(path, sizeof path, "/runs/%s/timeline", run);
    fprintf(f, "<h3 id=\"timeline-%zu\">Timeline of the last step</h3>\n", k);
    if (results_h5r_dataset_rows(h, path) <= 0) {
        fputs("<p>No timeline in the file (sweeps and plans keep none without "
              "<code>--timeline</code>; <code>simulation.timeline: false</code>).</p>\n", f);
        return;
    }
    const results_h5r_field fields[] = {
        {"rank", RESULTS_H5R_I32, offsetof(tl_row, rank)},
        {"step", RESULTS_H5R_I32, offsetof(tl_row, step)},
        {"kind", RESULTS_H5R_STR, offsetof(tl_row, kind)},
        {"start_s", RESULTS_H5R_F64, offsetof(tl_row, start)},
        {"end_s", RESULTS_H5R_F64, offsetof(tl_row, end)}};
    tl_ctx c = {.f = f, .last_step = -1, .w = 1000, .pass_find = true};
    if (results_h5r_for_each(h, path, fields, 5, sizeof(tl_row), 4096, tl_slice, &c) != 0)
        return;
    int shown = SIM_MIN(ranks, TL_RANKS);
    fprintf(f, "<svg width=\"1080\" height=\"%d\" role=\"img\"><title>timeline</title>",
            30 + shown * 22);
    for (int r = 0; r < shown; r++)
        fprintf(f, "<text x=\"1005\" y=\"%d\" font-size=\"11\">rank %d</text>", 29 + r * 22, r);
    c.pass_find = false;
    results_h5r_for_each(h, path, fields, 5, sizeof(tl_row), 4096, tl_slice, &c);
    for (int r = 0; r < TL_RANKS; r++)
        for (int lane = 0; lane < 2; lane++)
            tl_flush(&c, r, lane);
    fprintf(f, "<text x=\"0\" y=\"12\" font-size=\"11\">step %d: %.4g s, ranks 0-%d of %d"
               "</text></svg>\n",
            c.last_step, c.t1 - c.t0, shown - 1, ranks);
    fputs("<div class=\"legend\"><span><i class=\"sw\" style=\"background:#4e79a7\"></i>compute"
          "</span><span><i class=\"sw\" style=\"background:#f28e2b\"></i>communication</span>"
          "<span><i class=\"sw\" style=\"background:#76b7b2\"></i>copies to and from host"
          "</span></div>\n", f);
}

typedef struct mem_row {
    int32_t rank;
    double t;
    char *cat;
    int64_t bytes;
} mem_row;

typedef struct mem_ctx {
    FILE *f;
    int rank;
    double t_end;
    double level[PLAN_MEM_COUNT];
    double peak;
    size_t n;
    double *t, (*lv)[PLAN_MEM_COUNT];
} mem_ctx;

static int cat_of(const char *s)
{
    for (int c = 0; s && c < PLAN_MEM_COUNT; c++)
        if (strcmp(s, plan_mem_cat_name((plan_mem_cat)c)) == 0)
            return c;
    return -1;
}

static int mem_slice(void *ud, void *rows, size_t first, size_t n)
{
    (void)first;
    mem_ctx *c = ud;
    const mem_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        int k = cat_of(r[i].cat);
        if (r[i].rank != c->rank || k < 0 || c->n >= MEM_POINTS)
            continue;
        c->level[k] = (double)r[i].bytes;
        c->t[c->n] = r[i].t;
        memcpy(c->lv[c->n], c->level, sizeof c->level);
        double tot = 0;
        for (int j = 0; j < PLAN_MEM_COUNT; j++)
            tot += c->level[j];
        c->peak = fmax(c->peak, tot);
        c->t_end = fmax(c->t_end, r[i].t);
        c->n++;
    }
    return 0;
}

typedef struct peak_row {
    int32_t rank;
    int64_t peak;
} peak_row;

static int peak_slice(void *ud, void *rows, size_t first, size_t n)
{
    (void)first;
    peak_row *best = ud;
    const peak_row *r = rows;
    for (size_t i = 0; i < n; i++)
        if (r[i].peak > best->peak || (r[i].peak == best->peak && r[i].rank < best->rank))
            *best = r[i];
    return 0;
}

/* The rank with the highest peak in the run's ranks table (the lowest on a tie; 0 when the
 * table is absent). */
static int peak_rank(results_h5r_file *h, const char *run)
{
    char path[600];
    snprintf(path, sizeof path, "/runs/%s/ranks", run);
    peak_row best = {.rank = 0, .peak = -1};
    const results_h5r_field fields[] = {{"rank", RESULTS_H5R_I32, offsetof(peak_row, rank)},
                                        {"peak_mem_bytes", RESULTS_H5R_I64,
                                         offsetof(peak_row, peak)}};
    if (results_h5r_dataset_rows(h, path) > 0)
        results_h5r_for_each(h, path, fields, 2, sizeof(peak_row), 4096, peak_slice, &best);
    return best.peak >= 0 ? best.rank : 0;
}

static void memory(FILE *f, results_h5r_file *h, const run_row *rr, size_t k)
{
    const char *run = rr->name;
    double capacity = (double)rr->capacity_bytes;
    char path[600];
    snprintf(path, sizeof path, "/runs/%s/memory", run);
    int rank = peak_rank(h, run);
    fprintf(f, "<h3 id=\"memory-%zu\">Memory of rank %d (the highest peak) over the run</h3>\n",
            k, rank);
    if (results_h5r_dataset_rows(h, path) <= 0) {
        fputs("<p>No memory timeline in the file.</p>\n", f);
        return;
    }
    const results_h5r_field fields[] = {{"rank", RESULTS_H5R_I32, offsetof(mem_row, rank)},
                                        {"t_s", RESULTS_H5R_F64, offsetof(mem_row, t)},
                                        {"category", RESULTS_H5R_STR, offsetof(mem_row, cat)},
                                        {"bytes", RESULTS_H5R_I64, offsetof(mem_row, bytes)}};
    mem_ctx c = {.f = f, .rank = rank};
    c.t = sim_calloc(MEM_POINTS, sizeof *c.t);
    c.lv = sim_calloc(MEM_POINTS, sizeof *c.lv);
    results_h5r_for_each(h, path, fields, 4, sizeof(mem_row), 4096, mem_slice, &c);
    if (c.t_end <= 0) { /* levels at t = 0 alone: a run judged by its memory plan */
        fprintf(f, "<p>No memory timeline: %s. The file holds the levels at t = 0 alone "
                   "(%.2f GiB on this rank); the run's peak is in the summary table.</p>\n",
                cli__report_completed(rr) ? "the file was written without --timeline"
                                          : "the run was not replayed",
                c.peak / 1073741824.0);
        sim_free(c.t);
        sim_free(c.lv);
        return;
    }
    double top = fmax(c.peak, capacity > 0 ? capacity : 0), W = 1000, H = 200;
    static const char *const colors[] = {"#4e79a7", "#f28e2b", "#e15759",
                                         "#76b7b2", "#59a14f", "#bab0ac"};
    fprintf(f, "<svg width=\"1080\" height=\"%.0f\" role=\"img\"><title>memory</title>", H + 30);
    /* the cumulative level up to each category, as steps between the changes, drawn from
     * the top band down so that each lower band covers its part */
    for (int cat = PLAN_MEM_COUNT - 1; cat >= 0 && c.n > 0 && top > 0; cat--) {
        fprintf(f, "<path fill-opacity=\"0.85\" fill=\"%s\" d=\"M0 %.0f", colors[cat % 6], H);
        double prev_y = H, prev_x = -1;
        for (size_t i = 0; i < c.n; i++) {
            double with = 0;
            for (int j = 0; j <= cat; j++)
                with += c.lv[i][j];
            double x = c.t_end > 0 ? c.t[i] / c.t_end * W : 0, y = H - with / top * H;
            if (x - prev_x < 0.5 && y >= prev_y && i + 1 < c.n)
                continue; /* the same pixel, no higher: nothing to see */
            fprintf(f, " L%.1f %.1f L%.1f %.1f", x, prev_y, x, y);
            prev_y = y;
            prev_x = x;
        }
        fprintf(f, " L%.0f %.1f L%.0f %.0f Z\"/>", W, prev_y, W, H);
    }
    if (capacity > 0)
        fprintf(f, "<line x1=\"0\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#b22\" "
                   "stroke-dasharray=\"4 3\"/><text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" "
                   "fill=\"#b22\">capacity %.2f GiB</text>",
                W, H - capacity / top * H, H - capacity / top * H, W + 5,
                H - capacity / top * H + 4, capacity / 1073741824.0);
    fprintf(f, "<text x=\"0\" y=\"%.0f\" font-size=\"11\">peak %.2f GiB over %.4g s</text>"
               "</svg>\n<div class=\"legend\">",
            H + 20, c.peak / 1073741824.0, c.t_end);
    for (int cat = 0; cat < PLAN_MEM_COUNT; cat++)
        fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>",
                colors[cat % 6], plan_mem_cat_name((plan_mem_cat)cat));
    fputs("</div>\n", f);
    sim_free(c.t);
    sim_free(c.lv);
}

typedef struct in_row {
    char *path, *hash;
} in_row;

static int in_slice(void *ud, void *rows, size_t first, size_t n)
{
    (void)first;
    FILE *f = ud;
    const in_row *r = rows;
    for (size_t i = 0; i < n; i++) {
        fputs("<tr><td>", f);
        esc(f, r[i].path);
        fputs("</td><td><code>", f);
        esc(f, r[i].hash);
        fputs("</code></td></tr>\n", f);
    }
    return 0;
}

static void inputs(FILE *f, results_h5r_file *h, const run_row *runs, size_t n)
{
    fputs("<h2 id=\"inputs\">Inputs</h2>\n<table><tr><th>file</th><th>hash</th></tr>\n", f);
    const results_h5r_field fields[] = {{"path", RESULTS_H5R_STR, offsetof(in_row, path)},
                                        {"hash", RESULTS_H5R_STR, offsetof(in_row, hash)}};
    if (results_h5r_has_column(h, "/inputs", "path"))
        results_h5r_for_each(h, "/inputs", fields, 2, sizeof(in_row), 1024, in_slice, f);
    fputs("</table>\n", f);
    for (size_t i = 0; i < n; i++) {
        char obj[600];
        snprintf(obj, sizeof obj, "/runs/%s", runs[i].name);
        char *yaml = results_h5r_attr_str(h, obj, "scenario");
        if (!yaml)
            continue;
        fputs("<details><summary>scenario of ", f);
        esc(f, runs[i].label);
        fputs("</summary><pre>", f);
        esc(f, yaml);
        fputs("</pre></details>\n", f);
        sim_free(yaml);
    }
}

int cli__report_html(results_h5r_file *h, const char *in, const run_row *runs, size_t n,
                     const char *out)
{
    const char *srcs[] = {in};
    int rc = cli_output_check("--html", out, srcs, 1);
    cli_output_lock lock = {.fd = -1};
    if (rc == 0)
        rc = cli_output_lock_take(&lock, out);
    if (rc)
        return rc;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "%s: error: cannot write it\n", out);
        cli_output_lock_release(&lock);
        return CLI_EXIT_INVALID;
    }
    head(f, in);
    fputs("<h1>stepsim report</h1>\n<p>", f);
    esc(f, in);
    char *ver = results_h5r_attr_str(h, "/", "stepsim_version");
    char *cmd = results_h5r_attr_str(h, "/", "command");
    fprintf(f, ": %zu run(s)", n);
    if (ver) {
        fputs(", stepsim ", f);
        esc(f, ver);
    }
    if (cmd) {
        fputs("<br><code>", f);
        esc(f, cmd);
        fputs("</code>", f);
    }
    fputs("</p>\n", f);
    sim_free(ver);
    sim_free(cmd);
    summary(f, runs, n);
    fputs("<h2 id=\"verdicts\">Verdicts and where the time went</h2>\n", f);
    for (size_t i = 0; i < n; i++)
        verdict(f, &runs[i], i);
    fputs("<h2 id=\"figures\">Timelines and memory</h2>\n", f);
    for (size_t i = 0; i < n; i++) {
        if (!cli__report_completed(&runs[i]))
            continue;
        fputs("<h3>", f);
        esc(f, runs[i].label);
        fputs("</h3>\n", f);
        timeline(f, h, runs[i].name, runs[i].gpus, i);
        memory(f, h, &runs[i], i);
    }
    inputs(f, h, runs, n);
    fputs("</body></html>\n", f);
    bool bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    fclose(f);
    if (bad || rename(tmp, out) != 0) {
        unlink(tmp);
        fprintf(stderr, "%s: error: cannot write it\n", out);
        rc = CLI_EXIT_INVALID;
    }
    cli_output_lock_release(&lock);
    return rc;
}
