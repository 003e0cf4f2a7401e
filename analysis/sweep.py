#!/usr/bin/python3
"""Compare stepsim runs: a bar chart of one metric per run, or a heatmap over two sweep axes.

Inputs are one or more results files, each with one or more runs. A file's /sweep table is
used when it has one (it also holds the sweep's axis columns); otherwise each run's summary
gives its row.

Bar chart (default): one horizontal bar per run, best first. Runs that did not produce a
usable result come last as hatched grey placeholders labelled with their status: an OOM
run's bar still shows what it would reach if it fitted; skipped and failed runs have no
value.

Heatmap (--x AXIS --y AXIS): the metric over two /sweep axis columns; OOM, skipped and
failed cells are grey, hatched and labelled. When other axes vary too, a cell shows the best
run with those two axis values.
"""

import argparse
import os

import numpy as np
import pandas as pd
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, PercentFormatter
from matplotlib.transforms import ScaledTranslation

import stepsim_h5 as sh

METRICS = {
    # name: (axis label, higher is better, value formatter, title word)
    "tokens_per_s": ("throughput (tokens/s)", True, lambda v: f"{v:,.0f} tokens/s",
                     "Throughput"),
    "step_time_s": ("step time (s)", False, lambda v: sh.fmt_time(v), "Step time"),
    "mfu": ("MFU", True, lambda v: f"{v:.1%}", "MFU"),
}
SWEEP_COLUMNS = {"index", "name", "status", "error", "step_time_s", "tokens_per_s", "mfu",
                 "peak_mem_bytes", "bubble_fraction"}


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Compare the runs of one or more stepsim results files: a bar chart of\n"
                    "a metric per run, best first, with OOM/skipped/failed runs as hatched\n"
                    "placeholders; or, with --x and --y, a heatmap over two sweep axes\n"
                    "(string columns of the files' /sweep tables).",
        epilog="examples:\n"
               "  sweep.py a.h5 b.h5 c.h5 -o compare.png\n"
               "  sweep.py sweep.h5 --metric mfu --x parallel.tp --y parallel.pp -o heat.svg",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE.h5", help="stepsim results files")
    p.add_argument("--metric", choices=list(METRICS), default="tokens_per_s",
                   help="what to compare (default tokens_per_s)")
    p.add_argument("--x", metavar="AXIS", help="sweep axis (a /sweep column) for heatmap columns")
    p.add_argument("--y", metavar="AXIS", help="sweep axis (a /sweep column) for heatmap rows")
    sh.add_output_args(p)
    return p.parse_args(argv)


def load_rows(paths):
    """One row per run over all files: name, status, error, metrics, axis columns, file.

    Returns (DataFrame, list of axis column names).
    """
    frames, axes = [], []
    for path in paths:
        with sh.open_results(path) as f:
            if "sweep" in f:
                df = sh.read_table(f, "/sweep")
            else:
                rows = []
                for name in sh.run_names(f):
                    run = sh.Run(f, name, path)
                    row = {"name": name, "status": run.status, "error": run.error}
                    for m in ("step_time_s", "tokens_per_s", "mfu", "peak_mem_bytes",
                              "bubble_fraction"):
                        row[m] = run.metric(m)
                    rows.append(row)
                df = pd.DataFrame(rows)
        for c in df.columns:  # axes: the /sweep string columns beyond the standard ones
            if c not in SWEEP_COLUMNS and c not in axes and df[c].dtype == object:
                axes.append(c)
        df["file"] = os.path.basename(path)
        frames.append(df)
    rows = pd.concat(frames, ignore_index=True)
    for c in axes:
        rows[c] = rows[c].fillna("").astype(str)
    for c in ("name", "status", "error"):
        rows[c] = rows[c].fillna("").astype(str) if c in rows else ""
    for m in ("step_time_s", "tokens_per_s", "mfu", "peak_mem_bytes", "bubble_fraction"):
        rows[m] = pd.to_numeric(rows[m], errors="coerce") if m in rows else np.nan
    # Labels: the axes whose values vary (as `stepsim report` names the runs), else the run
    # name; the file added where labels repeat across files.
    varying = [a for a in axes if rows[a].nunique() > 1]
    if varying:
        rows["label"] = [run_label(r, varying) or n for (_, r), n in zip(rows.iterrows(), rows["name"])]
    else:
        rows["label"] = rows["name"]
    dup = rows["label"].duplicated(keep=False)
    rows["label"] = np.where(dup, rows["label"] + "  (" + rows["file"] + ")", rows["label"])
    return rows, axes


def axis_value(axis, value):
    """An axis value for people: a mapping's pairs as "k=v k=v", a file as its stem, else
    "key=value" with the key's last part (the labels of `stepsim report`)."""
    v = str(value)
    if v.startswith("{"):
        return v.strip("{}").replace(": ", "=").replace(", ", " ")
    if axis in ("topology", "base", "model") or "/" in v:
        stem = os.path.basename(v)
        return os.path.splitext(stem)[0] if "." in stem[1:] else stem
    return f"{axis.rsplit('.', 1)[-1]}={v}"


def tick_value(axis, value):
    """A heatmap tick: as axis_value, without the key (the axis title names it)."""
    text = axis_value(axis, value)
    if not str(value).startswith("{") and "=" in text and axis not in ("topology", "base"):
        return text.split("=", 1)[1]
    return text


def run_label(row, axes):
    parts, prev_scalar = [], False
    out = ""
    for a in axes:
        if not row[a]:
            continue
        part = axis_value(a, row[a])
        scalar = not str(row[a]).startswith("{") and part.count("=") == 1
        out += ("" if not out else " " if scalar and prev_scalar else " / ") + part
        prev_scalar = scalar
    return out


def usable(rows, metric):
    """Rows with status ok and a finite, positive metric."""
    v = rows[metric]
    return (rows["status"] == "ok") & np.isfinite(v) & (v > 0)


def sort_best_first(rows, metric):
    """ok runs best first, then OOM runs (by their would-be value), then the rest."""
    higher = METRICS[metric][1]
    good = usable(rows, metric)
    rank_status = np.where(good, 0, np.where(rows["status"] == "oom", 1, 2))
    key = rows[metric].fillna(np.inf if not higher else -np.inf)
    key = -key if higher else key
    return rows.assign(_s=rank_status, _k=key).sort_values(["_s", "_k"], kind="stable") \
        .drop(columns=["_s", "_k"]).reset_index(drop=True)


def shorten(text, n):
    return text if len(text) <= n else text[: n // 2 - 1] + "…" + text[-(n - n // 2):]


def title_block(fig, args, left_px, title, subtitle):
    """Title and subtitle; the title leaves the right 40% to the bar chart's legend."""
    sh.fig_text(fig, left_px, 12, title, 13, right_px=0.4 * args.width, fontweight="bold")
    sh.fig_text(fig, left_px, 35, subtitle, 10)


def status_counts(rows):
    counts = rows["status"].value_counts()
    return ", ".join(f"{counts[s]} {s}" for s in ("ok", "tight", "oom", "skipped", "error")
                     if s in counts)


def draw_bars(rows, metric, args):
    label, higher, fmt, word = METRICS[metric]
    rows = sort_best_first(rows, metric)
    n = len(rows)
    good = usable(rows, metric).to_numpy()

    top_px, bottom_px, right_px = 70, 55, 30
    row_px = (args.height - top_px - bottom_px) / max(n, 1)
    fs = float(np.clip(row_px * 0.55, 6, 9.5))   # font size for run labels and values

    # Left margin: the widest run label as rendered (labels are shortened to fit 40% of
    # the width).
    fig = sh.new_figure(args.width, args.height)
    renderer = fig.canvas.get_renderer()
    max_chars = max(12, int(0.4 * args.width / (0.6 * fs)))
    labels = [shorten(s, max_chars) for s in rows["label"]]
    widest = max(fig.text(0, 0, s, fontsize=fs).get_window_extent(renderer).width
                 for s in labels)
    fig.texts.clear()
    left_px = int(min(0.4 * args.width, widest + 20))
    ax = sh.axes_px(fig, left_px, bottom_px, right_px, top_px)

    # Step times are drawn in s, ms or µs; the other metrics as they are.
    values = rows[metric].to_numpy(float)
    scale, unit = 1.0, ""
    if metric == "step_time_s":
        scale, unit = sh.time_unit(np.nanmax(values) if np.isfinite(values).any() else 1.0)
        label = f"step time ({unit})"
    finite = values[np.isfinite(values) & (values > 0)]
    vmax = finite.max() if len(finite) else 1.0
    y = np.arange(n)
    oom = (rows["status"] == "oom").to_numpy() & np.isfinite(values) & (values > 0)
    other = ~good & ~oom

    # ok runs: solid bars; OOM runs: hatched outline at their simulated value; skipped,
    # failed (or OOM without a value): a short hatched grey placeholder.
    bar_h = 0.6 if n > 2 else 0.4
    ax.barh(y[good], values[good] * scale, height=bar_h, color=sh.STATUS_COLORS["ok"])
    ax.barh(y[oom], values[oom] * scale, height=bar_h, facecolor="#eeeeee",
            edgecolor=sh.STATUS_COLORS["oom"], hatch="///", linewidth=1.0)
    ax.barh(y[other], np.full(other.sum(), 0.15 * vmax * scale), height=bar_h,
            facecolor="#f2f2f2", edgecolor="#999999", hatch="xx", linewidth=1.0)

    # Labels at the bar ends: the value (and MFU / peak memory) or the status.
    texts = []
    for i, r in rows.iterrows():
        v = values[i]
        peak = sh.fmt_bytes(r["peak_mem_bytes"]) if np.isfinite(r["peak_mem_bytes"]) else ""
        if good[i]:
            extra = [f"MFU {r['mfu']:.1%}"] if metric != "mfu" and np.isfinite(r["mfu"]) else []
            text = "  ".join([fmt(v)] + extra + ([f"peak {peak}"] if peak else []))
            color = "black"
        elif oom[i]:
            text = f"OOM  (would be {fmt(v)}; peak {peak})" if peak else f"OOM  ({fmt(v)})"
            color = sh.STATUS_COLORS["oom"]
        else:
            why = f": {shorten(r['error'], 60)}" if r["error"] else ""
            text = r["status"].upper() + why
            color = "#555555"
        x = v if (good[i] or oom[i]) else 0.15 * vmax
        texts.append((x * scale, i, text, color))

    # x range: wide enough that every bar's label fits right of it (labels measured in
    # pixels; a bar ending at x sits at x / xmax of the plot width).
    plot_px = args.width - left_px - right_px
    xmax = vmax * scale * 1.05
    shift = ax.transData + ScaledTranslation(4 / 72, 0, fig.dpi_scale_trans)  # 4 pt right
    for x, i, text, color in texts:
        t = ax.text(x, i, text, transform=shift, va="center", ha="left", fontsize=fs,
                    color=color)
        room = 1 - (t.get_window_extent(renderer).width + 10) / plot_px
        xmax = max(xmax, x / max(room, 0.3))
    ax.set_xlim(0, xmax)
    ax.set_ylim(n - 0.5, -0.5)   # best at the top
    every = max(1, int(np.ceil(9 / row_px)))
    ax.set_yticks(y[::every])
    ax.set_yticklabels(labels[::every], fontsize=fs)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel(label + ("  — higher is better" if higher else "  — lower is better"))
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if metric == "mfu":
        ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    elif metric == "tokens_per_s":
        ax.xaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")

    files = sorted(set(rows["file"]))
    source = ", ".join(files)
    if len(source) > 70:  # long lists: the count only
        source = f"{len(files)} files" if len(files) > 1 else shorten(source, 70)
    title_block(fig, args, left_px, f"{word} of {n} run{'s' if n != 1 else ''}",
                f"{status_counts(rows)}   ·   from {source}")
    handles = [Patch(facecolor=sh.STATUS_COLORS["ok"], label="ok")]
    if oom.any():
        handles.append(Patch(facecolor="#eeeeee", edgecolor=sh.STATUS_COLORS["oom"],
                             hatch="///", label="OOM (simulated value)"))
    if other.any():
        handles.append(Patch(facecolor="#f2f2f2", edgecolor="#999999", hatch="xx",
                             label="skipped / error (no value)"))
    # Legend in the title block, right-aligned, clear of the bars and their labels.
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=9,
               frameon=False, bbox_to_anchor=(1 - right_px / args.width, 1 - 8 / args.height),
               borderaxespad=0)
    return fig


def axis_order(values):
    """Distinct axis values: numerically sorted when all are numbers, else as they come."""
    distinct = list(dict.fromkeys(values))
    try:
        return sorted(distinct, key=float)
    except ValueError:
        return distinct


def draw_heatmap(rows, axes, metric, args):
    label, higher, fmt, word = METRICS[metric]
    for a in (args.x, args.y):
        if a not in axes:
            raise sh.InputError(f"no sweep axis {a!r} (axes: {', '.join(axes) or 'none'}; "
                                f"the files need a /sweep table with axis columns)")
    if args.x == args.y:
        raise sh.InputError("--x and --y must be different axes")
    xs, ys = axis_order(rows[args.x]), axis_order(rows[args.y])
    good = usable(rows, metric)

    # One cell per (x, y): the best usable run, else the first run's status.
    grid = np.full((len(ys), len(xs)), np.nan)
    status = np.full((len(ys), len(xs)), "", dtype=object)
    several = False
    for (xv, yv), cell in rows.groupby([args.x, args.y], sort=False):
        i, j = ys.index(yv), xs.index(xv)
        several |= len(cell) > 1
        ok = cell[good[cell.index]]
        if len(ok):
            grid[i, j] = ok[metric].max() if higher else ok[metric].min()
            status[i, j] = "ok"
        else:
            status[i, j] = cell["status"].iloc[0]

    # Step times in s, ms or µs, like the bar chart.
    if metric == "step_time_s" and np.isfinite(grid).any():
        scale, unit = sh.time_unit(np.nanmax(grid))
        grid, label = grid * scale, f"step time ({unit})"
        fmt = sh.sig4  # the unit is on the colour bar

    # room on the left for the widest row label (about 7 px a character at 10 pt)
    ylabels = [tick_value(args.y, v) for v in ys]
    left_px = int(max(110, 60 + 7 * max(len(t) for t in ylabels)))  # and the axis title
    right_px, top_px, bottom_px = 70, 75, 70
    fig = sh.new_figure(args.width, args.height)
    ax = sh.axes_px(fig, left_px, bottom_px, right_px, top_px)
    cmap = "viridis" if higher else "viridis_r"   # brighter is better either way
    mesh = ax.pcolormesh(np.arange(len(xs) + 1) - 0.5, np.arange(len(ys) + 1) - 0.5,
                         np.ma.masked_invalid(grid), cmap=cmap, shading="flat")
    cbar = fig.colorbar(mesh, ax=ax, fraction=0.05, pad=0.02)
    cbar.set_label(label)
    if metric == "mfu":
        cbar.formatter = PercentFormatter(1.0, decimals=0)
        cbar.update_ticks()
    elif metric == "tokens_per_s":
        cbar.formatter = FuncFormatter(lambda v, _: f"{v:,.0f}")
        cbar.update_ticks()

    # Non-ok cells: hatched grey with the status; ok cells: the value when there is room.
    cell_w = (args.width - left_px - right_px) / len(xs)
    cell_h = (args.height - top_px - bottom_px) / len(ys)
    fs = float(np.clip(min(cell_w / 9, cell_h / 2.2), 6, 10))
    finite = grid[np.isfinite(grid)]
    mid = (finite.min() + finite.max()) / 2 if len(finite) else 0
    for i in range(len(ys)):
        for j in range(len(xs)):
            s = status[i, j]
            if s == "":
                continue  # no run with these axis values
            if s != "ok":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#e6e6e6",
                                       edgecolor="#999999", hatch="///", linewidth=0.5))
                ax.text(j, i, s.upper(), ha="center", va="center", fontsize=fs,
                        fontweight="bold",
                        color=sh.STATUS_COLORS["oom"] if s == "oom" else "#555555")
            elif cell_w >= 45 and cell_h >= 16:
                v = grid[i, j]
                text = f"{v:,.0f}" if metric == "tokens_per_s" else fmt(v)
                light = (v < mid) == higher  # dark end of viridis: white text
                ax.text(j, i, text, ha="center", va="center", fontsize=fs,
                        color="white" if light else "black")

    ax.set_xticks(range(len(xs)))
    xlabels = [tick_value(args.x, v) for v in xs]
    long_x = len(xs) > 12 or sum(len(t) for t in xlabels) * 7 > args.width - left_px - right_px
    ax.set_xticklabels(xlabels, rotation=90 if long_x else 0)
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels(ylabels)
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(len(ys) - 0.5, -0.5)
    ax.set_xlabel(args.x)
    ax.set_ylabel(args.y)
    sub = f"{len(rows)} runs: {status_counts(rows)}"
    if several:
        sub += "   ·   each cell: the best run over the other axes"
    title_block(fig, args, left_px, f"{word} over "
                f"{args.x} × {args.y}", sub)
    return fig


def main(argv=None):
    args = parse_args(argv)
    if (args.x is None) != (args.y is None):
        raise sh.InputError("give both --x and --y for a heatmap, or neither")
    out = sh.output_path(args, args.files[0], "sweep")
    rows, axes = load_rows(args.files)
    if args.x:
        fig = draw_heatmap(rows, axes, args.metric, args)
    else:
        fig = draw_bars(rows, args.metric, args)
    sh.save_figure(fig, out)


if __name__ == "__main__":
    sh.run_main(main)
