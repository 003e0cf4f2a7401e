#!/usr/bin/python3
"""Peak memory per rank of a stepsim run, split by category, against the GPU's capacity.

One stacked bar per rank (the `ranks` table: params, grads, optimizer, activations,
buffers, other at the rank's peak), a dashed line at the usable GPU memory (the summary's
`capacity_bytes`, else topology.gpu.memory of the run's scenario), the status in the title
(an OOM run is marked in red) and, for OOM runs, the binding constraint underneath.
"""

import argparse
import textwrap

import numpy as np
from matplotlib.patches import Patch
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

import stepsim_h5 as sh

LEFT_PX, RIGHT_PX, BOTTOM_PX = 80, 150, 55


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Draw the peak memory of every rank of a stepsim run as stacked bars\n"
                    "(params, grads, optimizer, activations, buffers, other) with the GPU\n"
                    "memory capacity as a line; OOM runs are marked with their binding\n"
                    "constraint.",
        epilog="example: memory.py out.h5 --run qwen3-4b-2x4090-ddp-bf16 -o memory.svg",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("h5", metavar="OUT.h5", help="stepsim results file")
    p.add_argument("--run", metavar="NAME", help="run to draw (default: the first run)")
    sh.add_output_args(p)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = sh.output_path(args, args.h5, "memory")
    with sh.open_results(args.h5) as f:
        run = sh.select_run(f, args.h5, args.run)
        ranks = run.table("ranks").sort_values("rank").reset_index(drop=True)
        if ranks.empty:
            raise sh.InputError(f"run {run.name!r} has no ranks")
        fig = draw(run, ranks, args)
        sh.save_figure(fig, out)


def draw(run, ranks, args):
    capacity = run.capacity_bytes()
    binding = str(run.summary.get("binding_constraint", "") or "")
    oom = run.status == "oom"

    # Title block: run and status, then facts, then (OOM) the binding constraint, wrapped.
    width_chars = max(40, int((args.width - LEFT_PX - 20) / 6.5))
    binding_lines = textwrap.wrap("binding constraint: " + binding, width_chars, max_lines=3,
                                  placeholder=" …") if binding else []
    top_px = 62 + 15 * len(binding_lines)

    fig = sh.new_figure(args.width, args.height)
    ax = sh.axes_px(fig, LEFT_PX, BOTTOM_PX, RIGHT_PX, top_px)

    n = len(ranks)
    x = np.arange(n)
    bar_w = 0.8 if n <= 64 else 1.0         # many ranks: touching bars, no gaps
    bottom = np.zeros(n)
    segments = []                            # (category, bottoms, heights) for labels
    for cat in sh.MEMORY_CATEGORIES:
        values = ranks[cat].to_numpy(float) / sh.GIB
        ax.bar(x, values, bottom=bottom, width=bar_w, color=sh.MEMORY_COLORS[cat],
               linewidth=0, label=cat)
        segments.append((cat, bottom.copy(), values))
        bottom += values
    peak = ranks["peak_mem_bytes"].to_numpy(float) / sh.GIB

    # Capacity line, and a y range covering it and the tallest bar; when the bars would
    # use less than a third of that height, the range fits the bars and a note points up
    # to the capacity instead, so that the split stays readable.
    top = max(peak.max(), bottom.max())
    capacity_off_scale = bool(capacity) and top < capacity / sh.GIB / 3
    if capacity and not capacity_off_scale:
        ax.axhline(capacity / sh.GIB, color="black", linestyle="--", linewidth=1.2)
        top = max(top, capacity / sh.GIB)
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    if capacity_off_scale:
        ax.text(0.99, 0.985, f"capacity {capacity / sh.GIB:.2f} GiB: above the plot \u2191",
                transform=ax.transAxes, ha="right", va="top", fontsize=9)
    ax.set_xlim(-0.6 if n > 1 else -1, n - 0.4 if n > 1 else 1)

    # Wide bars: each category's size (GiB) inside its segment when it is tall enough.
    bar_px = (args.width - LEFT_PX - RIGHT_PX) / max(n, 1)
    px_per_gib = (args.height - top_px - BOTTOM_PX) / ax.get_ylim()[1]
    if bar_px * bar_w >= 40:
        renderer = fig.canvas.get_renderer()
        for cat, b, h in segments:
            for i in np.flatnonzero(h * px_per_gib >= 14):
                # "activations 38.04" if it fits in the bar, else "38.04", else nothing
                for text in (f"{cat} {h[i]:.2f}", f"{h[i]:.2f}"):
                    t = ax.text(x[i], b[i] + h[i] / 2, text, ha="center", va="center",
                                fontsize=8, color="white")
                    if t.get_window_extent(renderer).width <= bar_px * bar_w - 6:
                        break
                    t.remove()

    # Peak value on top of each bar when there is room, else on the highest one only.
    label_idx = range(n) if bar_px >= 45 else [int(np.argmax(peak))]
    for i in label_idx:
        align = "center" if len(label_idx) > 1 or 0.05 < i / max(n - 1, 1) < 0.95 else \
            ("left" if i < n / 2 else "right")
        text = f"{peak[i]:.2f}" if peak[i] < 100 else f"{peak[i]:.1f}"
        if len(label_idx) == 1 and n > 1:
            text = f"peak {text}"
        ax.text(x[i], peak[i], text, ha=align, va="bottom", fontsize=8.5,
                color=sh.STATUS_COLORS["oom"] if capacity and peak[i] * sh.GIB > capacity
                else "black")

    ax.set_ylabel("peak memory (GiB)")
    ax.set_xlabel("rank")
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if n <= 32:
        ax.set_xticks(x)
        ax.set_xticklabels(ranks["rank"].astype(int).astype(str))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=16, integer=True))

    # Legend outside on the right: categories top to bottom as stacked, then capacity.
    handles = [Patch(facecolor=sh.MEMORY_COLORS[c], label=c)
               for c in reversed(sh.MEMORY_CATEGORIES)]
    if capacity and not capacity_off_scale:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label=f"capacity\n{capacity / sh.GIB:.2f} GiB"))
    fig.legend(handles=handles, loc="upper left", frameon=False, fontsize=9,
               bbox_to_anchor=(1 - (RIGHT_PX - 12) / args.width, 1 - top_px / args.height),
               borderaxespad=0)

    status = {"ok": "fits", "oom": "OUT OF MEMORY"}.get(run.status, run.status)
    sh.fig_text(fig, LEFT_PX, 12, f"{run.name}  —  {status}", 13, fontweight="bold",
                color=sh.STATUS_COLORS["oom"] if oom else "black")
    i_max = int(np.argmax(peak))
    facts = [f"peak {peak[i_max]:.2f} GiB on rank {int(ranks['rank'][i_max])}"]
    if capacity:
        facts[0] += f" of {capacity / sh.GIB:.2f} GiB ({peak[i_max] * sh.GIB / capacity:.0%})"
    else:
        facts.append("GPU capacity unknown (not in the summary or scenario)")
    facts.append(f"{n} rank{'s' if n != 1 else ''}")
    sh.fig_text(fig, LEFT_PX, 35, "   ·   ".join(facts), 10)
    for k, line in enumerate(binding_lines):
        sh.fig_text(fig, LEFT_PX, 55 + 15 * k, line, 9,
                    color=sh.STATUS_COLORS["oom"] if oom else "#444444")
    return fig


if __name__ == "__main__":
    sh.run_main(main)
