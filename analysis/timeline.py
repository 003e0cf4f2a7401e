#!/usr/bin/python3
"""Gantt chart of one simulated step: what every rank's streams did, and why it idled.

One horizontal band per rank, top to bottom; inside a band, one lane per stream:
  compute   compute-stream ops, grey by phase (forward dark, backward light, optimizer cyan)
  idle      the compute stream's bubbles, coloured by cause
  dp, tp, pp/p2p, ep, cp, offload, host
            communication streams, coloured by process group
Colours are the fixed palettes of stepsim_h5.py (also listed in analysis/README.md).

Drawing 10^5+ ops stays fast: ops of one colour in one lane are merged before drawing
(vectorised with numpy) and each kind of lane is one PolyCollection. Compute and idle lanes
are true to scale (a half-busy pixel looks half as dark); in communication lanes, ops
shorter than a pixel are widened to one pixel so that short collectives stay visible.
"""

import argparse

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

import stepsim_h5 as sh

STREAM_ORDER = ["compute", "idle", "dp", "tp", "pp", "p2p", "ep", "cp", "offload", "host"]
DEFAULT_MAX_RANKS = 64    # without --ranks
MAX_RANKS = 512           # with --ranks: beyond this a rank's band is below a pixel
RIGHT_PX, BOTTOM_PX, TOP_PX = 170, 55, 80  # margins around the plot (left: see draw)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Draw a per-rank Gantt chart of one step of a stepsim run: compute ops,\n"
                    "communication per stream (coloured by process group dp/tp/pp/ep/cp)\n"
                    "and compute-stream bubbles (coloured by cause).",
        epilog="example: timeline.py out.h5 --step 2 --ranks 0-7 -o timeline.png",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("h5", metavar="OUT.h5", help="stepsim results file")
    p.add_argument("--run", metavar="NAME", help="run to draw (default: the first run)")
    p.add_argument("--step", type=int, metavar="K", help="1-based step (default: the last)")
    p.add_argument("--ranks", metavar="SPEC",
                   help="ranks to draw, e.g. 0-7 or 0,3,5 "
                        f"(default: all, at most the first {DEFAULT_MAX_RANKS})")
    sh.add_output_args(p)
    return p.parse_args(argv)


def merge_segments(key, start, end, eps):
    """Merge intervals with the same key that overlap or lie less than eps apart.

    Vectorised: keys are spread apart on the time axis by an offset larger than the data's
    span, so one global sort and running maximum handle all keys at once.
    Returns (key, start, end) of the merged segments.
    """
    if len(start) == 0:
        return key, start, end
    span = max(end.max() - start.min(), eps) * 4 + 1.0
    offset = key.astype(np.float64) * span
    order = np.lexsort((start, key))
    k, s, e = key[order], start[order] + offset[order], end[order] + offset[order]
    run_max = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_max[:-1] + eps
    first = np.flatnonzero(new)
    seg_start = s[first]
    seg_end = np.maximum.reduceat(e, first)
    seg_key = k[first]
    back = seg_key.astype(np.float64) * span
    return seg_key, seg_start - back, seg_end - back


def load_ops(run, step, ranks):
    """Timeline rows of `step` on `ranks`, only the columns drawn.

    Reads the numeric columns first and the string columns only over the row range that
    holds the step, so large timelines stay cheap.
    """
    ds = run.group["timeline"]
    if len(ds) == 0:
        return pd.DataFrame(columns=["rank", "stream", "phase", "group", "start_s", "end_s"])
    num = ds.fields(["rank", "step"])[:]
    mask = (num["step"] == step) & np.isin(num["rank"], ranks)
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return pd.DataFrame(columns=["rank", "stream", "phase", "group", "start_s", "end_s"])
    lo, hi = idx[0], idx[-1] + 1
    cols = ["rank", "stream", "phase", "group", "start_s", "end_s"]
    df = sh.decode_strings(pd.DataFrame(ds.fields(cols)[lo:hi]))
    return df[mask[lo:hi]].reset_index(drop=True)


def op_colors(ops):
    """Colour key per op: compute by phase, communication by group (or by stream)."""
    compute = ops["stream"] == "compute"
    comm_key = ops["group"].where(ops["group"] != "none", ops["stream"])
    key = np.where(compute, "phase:" + ops["phase"], "group:" + comm_key)
    return pd.Series(key, index=ops.index)


def color_of(key):
    kind, value = key.split(":", 1)
    if kind == "phase":
        return sh.PHASE_COLORS.get(value, "#7f7f7f")
    if kind == "bubble":
        return sh.BUBBLE_COLORS.get(value, sh.BUBBLE_COLORS["other"])
    return sh.GROUP_COLORS.get(value, sh.GROUP_COLORS["none"])


def rank_label(row, dims):
    """'rank 5' plus the coordinates of the parallel dimensions larger than one."""
    coords = " ".join(f"{d}{int(row[d])}" for d in dims)
    return f"rank {int(row['rank'])}" + (f"\n{coords}" if coords else "")


def main(argv=None):
    args = parse_args(argv)
    out = sh.output_path(args, args.h5, "timeline")
    with sh.open_results(args.h5) as f:
        run = sh.select_run(f, args.h5, args.run)
        if not run.has("timeline"):
            raise sh.InputError(f"run {run.name!r} has status {run.status!r} and no "
                                f"timeline or bubbles" + (f": {run.error}" if run.error else ""))
        steps = run.table("steps")
        if steps.empty:
            raise sh.InputError(f"run {run.name!r} has no steps")
        step = int(steps["step"].max()) if args.step is None else args.step
        if step not in set(steps["step"]):
            raise sh.InputError(f"--step {step}: run {run.name!r} has steps "
                                f"1-{int(steps['step'].max())}")
        ranks_df = run.table("ranks").sort_values("rank")
        all_ranks = ranks_df["rank"].tolist()
        notes = []
        ranks = sh.parse_ranks(args.ranks, all_ranks) if args.ranks else all_ranks
        cap = MAX_RANKS if args.ranks else DEFAULT_MAX_RANKS
        if len(ranks) > cap:
            notes.append(f"showing the first {cap} of {len(ranks)} ranks "
                         f"(choose with --ranks)")
            ranks = ranks[:cap]
        ops = load_ops(run, step, ranks)  # empty when the timeline was not recorded
        bubbles = run.table("bubbles")
        bubbles = bubbles[(bubbles["step"] == step) & bubbles["rank"].isin(ranks)]
        fig = draw(run, steps, step, ranks_df, ranks, ops, bubbles, notes, args)
        sh.save_figure(fig, out)


def draw(run, steps, step, ranks_df, ranks, ops, bubbles, notes, args):
    # Times are drawn relative to the step's start (the end of the previous step). Some
    # ranks may begin a step before the slowest rank finished the previous one, so the
    # axis extends to cover every drawn op; dashed lines then mark the step's bounds.
    row = steps[steps["step"] == step].iloc[0]
    step_start, step_end = float(row["start_s"]), float(row["end_s"])
    t0, t1 = step_start, step_end
    for frame in (ops, bubbles):
        if len(frame):
            t0, t1 = min(t0, frame["start_s"].min()), max(t1, frame["end_s"].max())
    span = max(t1 - t0, 1e-12)
    scale, unit = sh.time_unit(span)

    if not run.timeline_written:
        notes.append("timeline not recorded (timeline_written = 0): bubbles only")
    if bubbles.empty:
        notes.append(f"no bubbles recorded for step {step}")

    # Lanes: the streams that appear on the drawn ranks, in a fixed order; same on all ranks.
    present = set(ops["stream"]) if len(ops) else set()
    if len(bubbles) or not run.timeline_written:
        present.add("idle")
    lanes = [s for s in STREAM_ORDER if s in present]
    lanes += sorted(present - set(lanes))
    if not run.timeline_written:
        lanes = ["idle"]
    lane_index = {s: i for i, s in enumerate(lanes)}
    n_lanes = len(lanes)
    rank_pos = {r: i for i, r in enumerate(ranks)}

    # One table of everything to draw: ops and bubbles, with lane and colour key.
    parts = []
    if len(ops):
        parts.append(pd.DataFrame({"rank": ops["rank"], "lane": ops["stream"],
                                   "key": op_colors(ops),
                                   "start": ops["start_s"], "end": ops["end_s"]}))
    if len(bubbles):
        parts.append(pd.DataFrame({"rank": bubbles["rank"], "lane": "idle",
                                   "key": "bubble:" + bubbles["cause"],
                                   "start": bubbles["start_s"], "end": bubbles["end_s"]}))
    bars = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["rank", "lane", "key", "start", "end"])

    # Lane names get their own labels when there is room: n <= 8 ranks, lanes >= 11 px.
    n = len(ranks)
    band_fill = 0.86                       # fraction of a rank's band used by its lanes
    lane_h = band_fill / n_lanes
    band_px = (args.height - TOP_PX - BOTTOM_PX) / n
    label_lanes = n <= 8 and band_px * lane_h >= 11 and n_lanes > 1
    left_px = 150 if label_lanes else 80

    fig = sh.new_figure(args.width, args.height)
    ax = sh.axes_px(fig, left_px, BOTTOM_PX, RIGHT_PX, TOP_PX)
    plot_px = max(args.width - left_px - RIGHT_PX, 10)
    px = span / plot_px  # seconds per pixel

    # Two ways of drawing, one PolyCollection each:
    # - compute and idle lanes are drawn true to scale (antialiased, so that a pixel that
    #   is half busy looks half as dark); only ops that touch are merged;
    # - communication lanes widen ops to at least one pixel and merge those less than half
    #   a pixel apart, so that short collectives stay visible.
    used_keys = set()
    exact = bars["lane"].isin(["compute", "idle"]).to_numpy(bool)
    for sel, eps, min_w, aa in ((exact, 0.02 * px, 0.0, True), (~exact, 0.5 * px, px, False)):
        part = bars[sel]
        if part.empty:
            continue
        keys = sorted(set(part["key"]))
        key_id = {k: i for i, k in enumerate(keys)}
        # Merge per (rank, lane, colour): one integer group id combines the three.
        gid = (part["rank"].map(rank_pos).to_numpy() * n_lanes
               + part["lane"].map(lane_index).to_numpy()) * len(keys) \
            + part["key"].map(key_id).to_numpy()
        g, s, e = merge_segments(gid.astype(np.int64),
                                 part["start"].to_numpy(float) - step_start,
                                 part["end"].to_numpy(float) - step_start, eps)
        e = np.maximum(e, s + min_w)
        key_of = np.array(keys, dtype=object)[g % len(keys)]
        lane_of = (g // len(keys)) % n_lanes
        band_of = g // len(keys) // n_lanes
        y0 = band_of + (1 - band_fill) / 2 + lane_of * lane_h + 0.08 * lane_h
        y1 = y0 + 0.84 * lane_h
        xs0, xs1 = s * scale, e * scale
        verts = np.stack([np.column_stack([xs0, y0]), np.column_stack([xs0, y1]),
                          np.column_stack([xs1, y1]), np.column_stack([xs1, y0])], axis=1)
        colors = [color_of(k) for k in key_of]
        ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="none",
                                         linewidths=0, antialiased=aa))
        used_keys |= set(key_of)

    # Axes: rank 0 at the top, time since the step's start.
    ax.set_xlim((t0 - step_start) * scale, (t1 - step_start) * scale)
    if t0 < step_start or t1 > step_end:
        for t in (0.0, step_end - step_start):
            ax.axvline(t * scale, color="black", linestyle="--", linewidth=0.8)
    ax.set_ylim(n, 0)
    ax.set_xlabel(f"time since the start of step {step} ({unit})")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if n <= 40:
        for i in range(1, n):
            ax.axhline(i, color="#cccccc", linewidth=0.6)
    dims = [d for d in ("pp", "dp", "tp", "ep", "cp") if ranks_df[d].nunique() > 1]
    by_rank = ranks_df.set_index("rank", drop=False)
    if label_lanes:
        # Room for a label per lane: rank on the band, stream name per lane.
        ax.set_yticks([i + 0.5 for i in range(n)])
        ax.set_yticklabels([rank_label(by_rank.loc[r], dims) for r in ranks])
        ax.tick_params(axis="y", length=0, pad=50)
        for i in range(n):
            for lane, j in lane_index.items():
                ax.text(-0.004, i + (1 - band_fill) / 2 + (j + 0.5) * lane_h, lane,
                        transform=ax.get_yaxis_transform(), ha="right", va="center",
                        fontsize=8, color="#555555")
    else:
        every = max(1, int(np.ceil(14 / band_px)))      # a label at least every 14 px
        shown = list(range(0, n, every))
        ax.set_yticks([i + 0.5 for i in shown])
        ax.set_yticklabels([f"rank {ranks[i]}" for i in shown],
                           fontsize=9 if band_px >= 12 else 8)
        ax.tick_params(axis="y", length=0)
        if n_lanes > 1:
            notes.append("lanes per rank, top to bottom: " + ", ".join(lanes))

    # Title: run, step, speed; notes underneath.
    mfu = run.metric("mfu")
    bubble = run.metric("bubble_fraction")
    status = "   [OUT OF MEMORY]" if run.status == "oom" else ""
    sh.fig_text(fig, left_px, 12, run.name + status, 13, fontweight="bold",
                color=sh.STATUS_COLORS["oom"] if run.status == "oom" else "black")
    facts = [f"step {step} of {int(steps['step'].max())}: {sh.fmt_time(step_end - step_start)}",
             f"median step time {sh.fmt_time(run.metric('step_time_s'))}"]
    if np.isfinite(mfu):
        facts.append(f"MFU {mfu:.1%}")
    if np.isfinite(bubble):
        facts.append(f"bubbles {bubble:.1%} of the last step")
    sh.fig_text(fig, left_px, 34, "   ·   ".join(facts), 10)
    if notes:
        sh.fig_text(fig, left_px, 54, ";  ".join(notes), 8.5, color="#666666",
                    style="italic")

    legend(fig, used_keys, args)
    return fig


def legend(fig, used_keys, args):
    """One legend at the right: compute phases, communication groups, bubble causes."""
    handles = []

    def section(title, prefix, palette):
        """A bold title, then the entries drawn, in palette order (unknown ones last)."""
        drawn = {k.split(":", 1)[1] for k in used_keys if k.startswith(prefix + ":")}
        entries = [n for n in palette if n in drawn] + sorted(drawn - set(palette))
        if entries:
            handles.append(Patch(facecolor="none", edgecolor="none", label=title))
            for n in entries:
                handles.append(Patch(facecolor=color_of(f"{prefix}:{n}"), label="  " + n))

    section("compute", "phase", sh.PHASE_COLORS)
    section("communication", "group", sh.GROUP_COLORS)
    section("bubbles (idle)", "bubble", sh.BUBBLE_COLORS)
    if not handles:
        handles.append(Patch(facecolor="none", edgecolor="none", label="nothing to draw"))
    leg = fig.legend(handles=handles, loc="upper left", fontsize=9, frameon=False,
                     bbox_to_anchor=(1 - (RIGHT_PX - 12) / args.width, 1 - TOP_PX / args.height),
                     handlelength=1.4, borderaxespad=0)
    for text in leg.get_texts():
        if not text.get_text().startswith("  "):  # section titles
            text.set_fontweight("bold")


if __name__ == "__main__":
    sh.run_main(main)
