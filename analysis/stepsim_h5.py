"""Shared helpers for the stepsim analysis scripts (timeline.py, memory.py, sweep.py).

Reading results files (docs/hdf5-schema.md): opening a file, listing and selecting runs,
reading tables as pandas DataFrames with decoded strings, the GPU memory capacity; the
fixed colour palettes every figure uses; figure creation at an exact pixel size and saving
as PNG or SVG; the common command-line options and the one-line `error:` exit.

Only the Python standard library, numpy, pandas, h5py and matplotlib are used, so the
scripts run with Debian's /usr/bin/python3.
"""

import os
import re
import sys

import matplotlib

matplotlib.use("Agg")  # no display; must happen before anything imports pyplot

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# --------------------------------------------------------------------------------------
# Palettes. Fixed, so that the same thing has the same colour in every figure.
# --------------------------------------------------------------------------------------

#: Communication, by process group (timeline `group` column; `offload`/`host` streams).
GROUP_COLORS = {
    "dp": "#1f77b4",       # blue
    "tp": "#ff7f0e",       # orange
    "pp": "#2ca02c",       # green
    "ep": "#d62728",       # red
    "cp": "#9467bd",       # purple
    "offload": "#8c564b",  # brown
    "host": "#e377c2",     # pink
    "none": "#7f7f7f",     # grey (communication without a group)
}

#: Compute-stream ops, by phase: greys, so that coloured communication stands out.
PHASE_COLORS = {
    "fwd": "#4a4a4a",  # dark grey
    "bwd": "#9a9a9a",  # light grey
    "opt": "#17becf",  # cyan (optimizer update)
    "comm": "#7f7f7f",
}

#: Bubbles (compute-stream idle time), by cause. A bubble caused by an exposed collective
#: has a light tint of that group's communication colour.
BUBBLE_COLORS = {
    "pipeline": "#ffd500",  # yellow: fill, drain, waiting for another stage
    "dp": "#9ecae9",
    "tp": "#ffbf80",
    "pp": "#98df8a",
    "ep": "#ff9896",
    "cp": "#c5b0d5",
    "offload": "#c49c94",
    "host": "#c7c7c7",      # a ready kernel the host thread had not issued yet
    "other": "#f7b6d2",     # e.g. waiting for slower ranks
}

#: Memory categories of the `ranks` table, bottom to top in stacked bars.
MEMORY_CATEGORIES = ["params", "grads", "optimizer", "activations", "buffers", "other"]
MEMORY_COLORS = {
    "params": "#4c72b0",
    "grads": "#55a868",
    "optimizer": "#8172b2",
    "activations": "#dd8452",
    "buffers": "#ccb974",
    "other": "#8c8c8c",
}

#: Run status (group attribute `status`).
STATUS_COLORS = {"ok": "#4c72b0", "oom": "#c44e52", "skipped": "#999999", "error": "#999999"}

GIB = 2.0 ** 30
DPI = 100  # figures are w/DPI x h/DPI inches, saved at DPI: PNGs are exactly w x h pixels


# --------------------------------------------------------------------------------------
# Errors and the command line.
# --------------------------------------------------------------------------------------

class InputError(Exception):
    """Bad input (missing file, unknown run, ...): reported as one `error:` line, exit 2."""


def run_main(main):
    """Call main(); report an InputError as one `error: ...` line and exit with status 2."""
    try:
        main()
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def add_output_args(parser, default_width=1600, default_height=900):
    """The -o/--width/--height options every script has."""
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="output image; the extension chooses the format: .png or .svg "
                             "(default: derived from the first input, next to it)")
    parser.add_argument("--width", type=int, default=default_width, metavar="PX",
                        help=f"image width in pixels (default {default_width})")
    parser.add_argument("--height", type=int, default=default_height, metavar="PX",
                        help=f"image height in pixels (default {default_height})")


def output_path(args, first_input, suffix):
    """The output file: -o as given, else `<input stem>-<suffix>.png` next to the input."""
    if args.output:
        path = args.output
    else:
        stem, _ = os.path.splitext(first_input)
        path = f"{stem}-{suffix}.png"
    if os.path.splitext(path)[1].lower() not in (".png", ".svg"):
        raise InputError(f"output {path!r} must end in .png or .svg")
    if args.width < 100 or args.height < 100:
        raise InputError("--width and --height must be at least 100 pixels")
    return path


# --------------------------------------------------------------------------------------
# Files, runs and tables.
# --------------------------------------------------------------------------------------

def open_results(path):
    """Open a stepsim results file read-only; InputError when missing or not one."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not an HDF5 file ({e})") from None
    if "runs" not in f or len(f["runs"]) == 0:
        f.close()
        raise InputError(f"{path}: no runs in this file (no /runs group or it is empty)")
    return f


def decode_strings(df):
    """Decode the bytes columns h5py returns for variable-length strings (in place).

    Decodes each distinct value once (columns such as `stream` hold a handful of values
    over 10^5+ rows), which is much faster than decoding row by row.
    """
    for c in df.columns:
        if df[c].dtype == object:
            codes, uniques = pd.factorize(df[c])
            decoded = np.array([u.decode("utf-8") if isinstance(u, bytes) else str(u)
                                for u in uniques], dtype=object)
            df[c] = decoded[codes] if len(df) else df[c].astype(object)
    return df


def read_table(f, path, columns=None):
    """A table as a DataFrame with string columns decoded; optionally only some columns."""
    ds = f[path]
    if columns is not None:
        names = [c for c in columns if c in ds.dtype.names]
        data = ds.fields(names)[:] if len(ds) else np.zeros(0, ds.dtype[names])
        # h5py gives a structured array, or a plain one for a single field
        df = pd.DataFrame(data) if data.dtype.names else pd.DataFrame({names[0]: data})
    else:
        df = pd.DataFrame(ds[:])
    return decode_strings(df)


def _attr_str(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def run_names(f):
    """Run names in run order (/sweep order when the file has one, else the group's)."""
    names = list(f["runs"].keys())
    if "sweep" in f:
        order = [n for n in read_table(f, "/sweep", ["name"])["name"] if n in f["runs"]]
        names = order + [n for n in names if n not in order]
    return names


class Run:
    """One run group: attributes, the summary as a dict, and access to its tables."""

    def __init__(self, f, name, path):
        g = f["runs"][name]
        self.file, self.path, self.name, self.group = f, path, name, g
        self.status = _attr_str(g.attrs.get("status", "ok"))
        self.error = _attr_str(g.attrs.get("error", ""))
        self.scenario = _attr_str(g.attrs.get("scenario", ""))
        self.timeline_written = int(g.attrs.get("timeline_written", 0))
        self.summary = {}
        if "summary" in g and len(g["summary"]):
            self.summary = read_table(f, f"/runs/{name}/summary").iloc[0].to_dict()

    def has(self, table):
        return table in self.group

    def table(self, table, columns=None):
        """A table of this run (see read_table); InputError when the run lacks it."""
        if table not in self.group:
            why = f": {self.error}" if self.error else ""
            raise InputError(f"run {self.name!r} has status {self.status!r} and no "
                             f"{table!r} table{why}")
        return read_table(self.file, f"/runs/{self.name}/{table}", columns)

    def metric(self, key, default=float("nan")):
        """A summary scalar as a float (NaN when absent)."""
        try:
            return float(self.summary.get(key, default))
        except (TypeError, ValueError):
            return default

    def capacity_bytes(self):
        """GPU memory capacity, or None when neither the summary nor the scenario gives it."""
        cap = self.metric("capacity_bytes")
        if np.isfinite(cap) and cap > 0:
            return cap
        return scenario_gpu_memory(self.scenario)


def select_run(f, path, name=None):
    """The run called `name` (InputError if unknown), or the first run when name is None."""
    names = run_names(f)
    if name is None:
        if len(names) > 1:
            print(f"note: {path} holds {len(names)} runs; showing {names[0]!r} "
                  f"(choose with --run NAME)", file=sys.stderr)
        name = names[0]
    elif name not in f["runs"]:
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise InputError(f"{path}: no run named {name!r} (runs: {shown})")
    return Run(f, name, path)


# --------------------------------------------------------------------------------------
# GPU memory capacity from the scenario YAML (fallback when the summary lacks it).
# --------------------------------------------------------------------------------------

_SIZE_UNITS = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
               "KIB": 2 ** 10, "MIB": 2 ** 20, "GIB": 2 ** 30, "TIB": 2 ** 40}


def parse_size(text):
    """'23.69 GiB', '80GB', '"40 GiB"', '1e9' -> bytes (float), or None."""
    m = re.fullmatch(r"""\s*["']?\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([KMGT]i?B|B)?\s*["']?\s*""",
                     text or "", re.IGNORECASE)
    if not m:
        return None
    unit = (m.group(2) or "").upper()
    try:
        return float(m.group(1)) * _SIZE_UNITS[unit]
    except (ValueError, KeyError):
        return None


def yaml_value(text, path):
    """The scalar at a dotted key path of simple block YAML, as text, or None.

    Not a YAML parser (python3-yaml may be missing): it follows `key:` lines by indentation
    and, for a flow mapping such as `gpu: {name: x, memory: 80 GiB}`, looks the last key up
    in it. Good enough for the resolved scenarios stepsim writes.
    """
    keys = path.split(".")
    depth, parent_indent, child_indent = 0, -1, None
    for raw in (text or "").splitlines():
        line = re.sub(r"\s+#.*$", "", raw.rstrip())
        if not line.strip() or line.lstrip().startswith(("#", "-")):
            continue
        indent = len(line) - len(line.lstrip())
        if depth > 0 and indent <= parent_indent:
            return None  # left the block of the key we descended into
        if child_indent is None:
            child_indent = indent
        if indent != child_indent:
            continue  # deeper than the direct children we look at
        m = re.match(r"\s*([\w.-]+)\s*:\s*(.*)$", line)
        if not m or m.group(1) != keys[depth]:
            continue
        value = m.group(2).strip()
        if depth == len(keys) - 1:
            return value
        if value.startswith("{"):  # flow mapping: look the remaining last key up in it
            fm = re.search(r"[{,]\s*" + re.escape(keys[-1]) + r"\s*:\s*([^,}]+)", value)
            return fm.group(1).strip() if fm and depth == len(keys) - 2 else None
        if value:
            return None  # a scalar where we expected a mapping
        depth, parent_indent, child_indent = depth + 1, indent, None
    return None


def scenario_gpu_memory(scenario_text):
    """topology.gpu.memory of a resolved scenario in bytes, or None."""
    return parse_size(yaml_value(scenario_text, "topology.gpu.memory") or "")


# --------------------------------------------------------------------------------------
# Figures and formatting.
# --------------------------------------------------------------------------------------

def new_figure(width, height):
    """A Figure exactly width x height pixels when saved with save_figure.

    The 0.01 px nudge keeps float rounding (e.g. 201/100*100 = 200.999...) from losing a
    pixel when the Agg canvas truncates the size to an integer.
    """
    fig = Figure(figsize=((width + 0.01) / DPI, (height + 0.01) / DPI), dpi=DPI)
    FigureCanvasAgg(fig)  # attach a canvas, so text can be measured before saving
    fig.size_px = (width, height)
    return fig


def save_figure(fig, path):
    """Save as PNG or SVG (by extension) at the fixed DPI, without 'tight' cropping."""
    fmt = os.path.splitext(path)[1].lower().lstrip(".")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(f"{path}: directory {directory} does not exist")
    if fmt == "svg" and hasattr(fig, "size_px"):
        # SVG sizes are in points: no rounding to pixels, so no nudge is needed
        fig.set_size_inches(fig.size_px[0] / DPI, fig.size_px[1] / DPI)
    try:
        fig.savefig(path, format=fmt, dpi=DPI)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None
    print(path)


def fig_text(fig, x_px, y_px, text, fontsize, right_px=8, min_fontsize=7, **kw):
    """One line of text at x_px from the left, y_px from the top of the figure (its top).

    Shrinks the font (down to min_fontsize), then shortens the text with "…", until it
    fits between x_px and right_px from the right edge: no clipped titles in small images.
    """
    w, h = fig.size_px
    room = w - x_px - right_px
    renderer = fig.canvas.get_renderer()
    t = fig.text(x_px / w, 1 - y_px / h, text, fontsize=fontsize, va="top", **kw)
    while t.get_window_extent(renderer).width > room and t.get_fontsize() > min_fontsize:
        t.set_fontsize(max(min_fontsize, t.get_fontsize() - 0.5))
    while t.get_window_extent(renderer).width > room and len(text) > 4:
        text = text[:-2]
        t.set_text(text.rstrip() + "…")
    return t


def axes_px(fig, left, bottom, right, top):
    """Add axes with margins given in pixels from the figure's edges."""
    w, h = fig.get_size_inches() * DPI
    return fig.add_axes([left / w, bottom / h, 1 - (left + right) / w, 1 - (bottom + top) / h])


def time_unit(span_s):
    """(scale, label) to show a time span in s, ms or µs with readable numbers."""
    if span_s >= 1.0:
        return 1.0, "s"
    if span_s >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def sig4(v):
    """Four significant digits, trailing zeros kept, at most 3 decimals: 5.000, 12.35."""
    decimals = min(3, max(0, 3 - int(np.floor(np.log10(abs(v)))))) if v else 0
    return f"{v:.{decimals}f}"


def fmt_time(seconds):
    """A duration with a sensible unit: '5.756 s', '4.013 ms', '12.35 µs'."""
    if not np.isfinite(seconds):
        return "n/a"
    scale, unit = time_unit(abs(seconds))
    return f"{sig4(seconds * scale)} {unit}"


def fmt_bytes(n):
    """Bytes as GiB (or MiB for small values)."""
    if n is None or not np.isfinite(n):
        return "n/a"
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB / 4 else f"{n / 2 ** 20:.1f} MiB"


def parse_ranks(spec, available):
    """'0-7', '0,3,5', '0-3,8-11' -> sorted list of ranks present in `available`."""
    chosen = set()
    for part in spec.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise InputError(f"bad --ranks {spec!r}: use e.g. 0-7 or 0,3,5")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise InputError(f"bad --ranks range {part!r}")
        chosen.update(range(lo, hi + 1))
    ranks = sorted(chosen & set(available))
    if not ranks:
        raise InputError(f"--ranks {spec!r} selects none of the run's ranks "
                         f"(0-{max(available)})")
    return ranks
