#!/usr/bin/python3
"""End-to-end tests of the analysis scripts (analysis/timeline.py, memory.py, sweep.py).

    test_analysis.py STEPSIM SOURCE_ROOT

Runs the flagship scenario (qwen3-4b-2x4090-fsdp-bf16, fits) and qwen3-4b-2x4090-ddp-bf16
(out of memory) with STEPSIM into a temporary directory, then runs the three scripts on
them with /usr/bin/python3 and checks that each image exists, is not empty and has exactly
the requested size (PNG: the IHDR header; SVG: the root element), and that bad input exits 2
with one `error:` line. Prints "N checks passed", or FAIL lines and exits 1.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

stepsim, root = sys.argv[1], sys.argv[2]
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
scripts = os.path.join(root, "analysis")
scenarios = os.path.join(root, "scenarios")
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def png_size(path):
    """(width, height) from a PNG's IHDR chunk, or None if it is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def script(name, *args):
    """Run an analysis script; returns (rc, stdout, stderr)."""
    p = subprocess.run([python, os.path.join(scripts, name)] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check_image(result, path, width, height, what):
    rc, out, err = result
    check(rc == 0, f"{what}: exits 0 (got {rc}: {err.strip()[-300:]})")
    check(out.strip() == path, f"{what}: prints the output path (got {out.strip()!r})")
    ok = os.path.isfile(path) and os.path.getsize(path) > 0
    check(ok, f"{what}: {path} exists and is not empty")
    if not ok:
        return
    if path.endswith(".png"):
        size = png_size(path)
        check(size == (width, height), f"{what}: PNG is {width}x{height} (got {size})")
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # 1 px = 0.72 pt at the scripts' 100 dpi
        check("<svg" in text and f'width="{width * 0.72:g}pt"' in text
              and f'height="{height * 0.72:g}pt"' in text,
              f"{what}: SVG of {width}x{height} px")


def check_error(result, what):
    rc, out, err = result
    lines = err.strip().splitlines()
    check(rc == 2, f"{what}: exits 2 (got {rc})")
    check(len(lines) == 1 and lines[0].startswith("error:"),
          f"{what}: one 'error:' line on stderr (got {err.strip()!r})")
    check(out.strip() == "", f"{what}: prints nothing on stdout (got {out.strip()!r})")


def make_sweep_file(path):
    """A 2x3 sweep over parallel.tp x parallel.pp written with h5py after the schema
    (docs/hdf5-schema.md): runs with a summary only, and a /sweep table with two axis
    columns; one OOM and one skipped cell. stepsim cannot write multi-run files yet."""
    import h5py
    import numpy as np
    s = h5py.string_dtype()
    rows = []
    for i, (tp, pp) in enumerate([(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)]):
        status = {0: "oom", 5: "skipped"}.get(i, "ok")
        tps = np.nan if status == "skipped" else 1000.0 * tp / pp ** 0.5
        rows.append((i, f"grid-{i}", status, "pp 4 > layers" if status == "skipped" else "",
                     1e4 / tps, tps, tps / 4000, 2 ** 34 // (tp * pp), 0.1, str(tp), str(pp)))
    with h5py.File(path, "w") as f:
        runs = f.create_group("runs")
        summary = np.dtype([("name", s), ("status", s), ("error", s), ("step_time_s", "f8"),
                            ("tokens_per_s", "f8"), ("mfu", "f8")])
        for r in rows:
            g = runs.create_group(r[1])
            g.attrs["status"], g.attrs["error"], g.attrs["scenario"] = r[2], r[3], ""
            g.create_dataset("summary", data=np.array([r[1:7]], dtype=summary))
        sweep = np.dtype([("index", "i4"), ("name", s), ("status", s), ("error", s),
                          ("step_time_s", "f8"), ("tokens_per_s", "f8"), ("mfu", "f8"),
                          ("peak_mem_bytes", "i8"), ("bubble_fraction", "f8"),
                          ("parallel.tp", s), ("parallel.pp", s)])
        f.create_dataset("sweep", data=np.array(rows, dtype=sweep))


def main():
    tmp = tempfile.mkdtemp(prefix="stepsim-analysis-")
    try:
        fsdp, ddp, nt = (os.path.join(tmp, n) for n in ("fsdp.h5", "ddp.h5", "notl.h5"))
        for scenario, out, extra in (("qwen3-4b-2x4090-fsdp-bf16.yaml", fsdp, []),
                                     ("qwen3-4b-2x4090-ddp-bf16.yaml", ddp, []),
                                     ("qwen3-4b-2x4090-fsdp-bf16.yaml", nt, ["--no-timeline"])):
            p = subprocess.run([stepsim, "run", os.path.join(scenarios, scenario), "-o", out]
                               + extra, capture_output=True, text=True, timeout=120)
            check(p.returncode == 0 and os.path.isfile(out),
                  f"stepsim run {scenario} {' '.join(extra)} writes {out} ({p.stderr[-300:]})")
        if failures:
            return
        grid = os.path.join(tmp, "grid.h5")
        make_sweep_file(grid)

        def t(n):
            return os.path.join(tmp, n)

        # (what, script arguments, expected output, width, height); run in parallel.
        images = [
            ("timeline png", ["timeline.py", fsdp, "-o", t("tl.png"), "--width", 900,
                              "--height", 500], t("tl.png"), 900, 500),
            ("timeline default name and size", ["timeline.py", fsdp], t("fsdp-timeline.png"),
             1600, 900),
            ("timeline --step 1 --ranks 1 svg", ["timeline.py", fsdp, "--step", 1, "--ranks",
                                                 "1", "-o", t("tl.svg")], t("tl.svg"), 1600, 900),
            ("timeline without timeline (bubbles only)",
             ["timeline.py", nt, "-o", t("tl-nt.png"), "--width", 640, "--height", 360],
             t("tl-nt.png"), 640, 360),
            ("timeline of the OOM run", ["timeline.py", ddp, "-o", t("tl-oom.png"), "--width",
                                         801, "--height", 451], t("tl-oom.png"), 801, 451),
            ("memory png", ["memory.py", fsdp, "-o", t("mem.png"), "--width", 1000,
                            "--height", 600], t("mem.png"), 1000, 600),
            ("memory of the OOM run", ["memory.py", ddp, "-o", t("mem-oom.png"), "--width",
                                       1201, "--height", 333], t("mem-oom.png"), 1201, 333),
            ("memory svg", ["memory.py", ddp, "-o", t("mem.svg")], t("mem.svg"), 1600, 900),
            ("sweep png", ["sweep.py", fsdp, ddp, "-o", t("sweep.png"), "--width", 1200,
                           "--height", 700], t("sweep.png"), 1200, 700),
            ("sweep svg by step time", ["sweep.py", fsdp, ddp, "--metric", "step_time_s",
                                        "-o", t("sweep.svg")], t("sweep.svg"), 1600, 900),
            ("sweep heatmap", ["sweep.py", grid, "--x", "parallel.tp", "--y", "parallel.pp",
                               "--metric", "mfu", "-o", t("heat.png"), "--width", 700,
                               "--height", 500], t("heat.png"), 700, 500),
            ("sweep bars over a /sweep file and a run file",
             ["sweep.py", grid, fsdp, "-o", t("mixed.png"), "--width", 700, "--height", 500],
             t("mixed.png"), 700, 500),
        ]
        errors = [
            ("timeline: bad run name", ["timeline.py", fsdp, "--run", "no-such-run"]),
            ("memory: bad run name", ["memory.py", ddp, "--run", "no-such-run"]),
            ("timeline: bad step", ["timeline.py", fsdp, "--step", 99]),
            ("memory: missing file", ["memory.py", t("missing.h5")]),
            ("sweep: missing file", ["sweep.py", fsdp, t("missing.h5")]),
            ("sweep: unknown axis", ["sweep.py", grid, "--x", "parallel.tp", "--y", "nope"]),
            ("memory: a run without ranks", ["memory.py", grid, "--run", "grid-5"]),
            ("timeline: bad output extension", ["timeline.py", fsdp, "-o", t("x.jpg")]),
        ]
        with ThreadPoolExecutor(max_workers=4) as pool:
            image_results = list(pool.map(lambda c: script(*c[1]), images))
            error_results = list(pool.map(lambda c: script(*c[1]), errors))
        for (what, _, path, w, h), result in zip(images, image_results):
            check_image(result, path, w, h, what)
        for (what, _), result in zip(errors, error_results):
            check_error(result, what)
        rc, out, _ = script("sweep.py", "--help")
        check(rc == 0 and "example" in out, "sweep --help shows an example")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def labels():
    # sweep.py names runs and ticks as `stepsim report` does: a mapping's pairs, a file's stem,
    # key=value with the key's last part; scalar parts joined by spaces, the others by " / "
    code = ("import sys; sys.path.insert(0, %r); import sweep as s\n"
            "print(s.axis_value('parallel', '{dp: 2, zero: 3}'))\n"
            "print(s.axis_value('topology', '../topologies/2x-rtx4090-pcie.yaml'))\n"
            "print(s.axis_value('training.micro_batch', '2'))\n"
            "print(s.tick_value('training.micro_batch', '2'))\n"
            "print(s.run_label({'parallel': '{tp: 2, sp: true}', 'topology': 'x/2x-rtx4090-pcie.yaml',"
            " 'parallel.zero': '1', 'training.micro_batch': '4'},"
            " ['parallel', 'topology', 'parallel.zero', 'training.micro_batch']))\n" % scripts)
    p = subprocess.run([python, "-c", code], capture_output=True, text=True)
    check(p.stdout.splitlines() == ["dp=2 zero=3", "2x-rtx4090-pcie", "micro_batch=2", "2",
                                    "tp=2 sp=true / 2x-rtx4090-pcie / zero=1 micro_batch=4"],
          "sweep.py labels: %s %s" % (p.stdout, p.stderr[-300:]))


main()
labels()
if failures:
    print(f"{failures} of {checks} checks failed", file=sys.stderr)
    sys.exit(1)
print(f"{checks} checks passed")
