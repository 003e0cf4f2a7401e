#!/usr/bin/python3
"""Fits the memory curve of fused single-kernel ops (a catalog's memory_efficiency) to measured
kernel times:

    fit_fused.py [CSV] [--check]

CSV (default test/validation/data/liger_fused_kernels.csv: LinkedIn's Liger-Kernel benchmark
rows of its own Triton normalizations, forward, one kernel a call) has columns kernel_name,
kernel_provider, kernel_operation_mode, x_value, median_ms, config, gpu_name.

stepsim times a fused memory-bound kernel of b bytes as (sim/hw/gpu.c)

    t = launch + b / (bw eff(b)),   eff(b) = 1 / (bw t0 / b + 1 / s)

i.e. launch + t0 + b / (s bw): a fixed cost and the bytes at the plateau s of the datasheet
bandwidth bw. The benchmark (triton.testing.do_bench) clears a 256 MB buffer before it
records each call's start event, so the host's work (the autograd function, Triton's
launcher) runs while the GPU clears and the measured time is the GPU's: the kernel and what
it costs to start and drain it. This script fits both terms, the plateau s and the fixed
cost c of a call, minimising sum(log((c + b / (s bw)) / t_measured))^2 over a GPU's calls (a
grid of s in steps of 0.001 and c in steps of 0.25 us), and the catalog takes s. Its t0 stays
1 us, so stepsim charges a call launch + t0 = 5 us where these kernels take c = 7.5-9.3 us:
the curve is also the memory-bound side of every GEMM's roofline, and with t0 = c - launch
(3.5 us on the H100) fit_gemm.py's fit of XLA's measured GEMMs goes from 3.4% to 10.7% mean
error, so the extra fixed cost is these row-per-program kernels' own. As a check that s
holds under stepsim's own fixed cost, the script also gives, for the calls of 100 MB or
more, the plateau each reaches at launch + 1 us (the median is within 0.03 of s, or --check
fails). A call whose kernel cannot hold its row in registers is marked: these kernels give
each row to one program, whose fp32 working set (the row of x, of the residual or of the
bias where there is one, and of the weight, 4 N bytes each) above the 256 KB register file of an SM (64K
32-bit registers on the A100 and the H100) spills to local memory, traffic the byte count
does not hold (the H100's add + RMSNorm at 32k: 384 KB, 0.74 of the bandwidth where 16k
reaches 0.87). It stays in the fit (without it the H100's two-term fit gives s = 0.938 with
c = 8.5 us, and its large calls still 0.89 at stepsim's 5 us). The bytes of each kernel (per
element X of the M x N input; the per-row statistics and the weight, read once, are counted
too):

- rms_norm / liger (LigerRMSNorm, bf16 input, fp32 weight): reads x, writes y (2 + 2), the
  fp32 rstd per row and the weight once: 4 M N + 4 M + 4 N.
- layer_norm / liger (LigerLayerNorm, fp32): reads x, writes y (4 + 4), the fp32 mean and rstd
  per row, the weight and bias once: 8 M N + 8 M + 8 N.
- fused_add_rms_norm / liger_fused_add_rms_norm (fp32): reads x and the residual, writes the
  new residual and y (4 x 4), rstd per row, the weight once: 16 M N + 4 M + 4 N.

It prints each GPU's fit, the per-row errors, those of the catalog's curve now (with its
launch overhead), and the memory_efficiency line for topologies/gpus/*.yaml. --check (the
default suite, test/analysis/meson.build) fails unless each GPU has its 11 calls, the large
calls' plateau is within 0.03 of the fit, and the catalog's memory_efficiency is the fit at
every sample point (within 0.002) in the fitted files and in those that carry the fit
(DERIVED: the A100 40GB at its own bandwidth; the H200, H800 and 500 W H100 at theirs).
numpy only."""
import json, os, re, sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu"))
import gemmfit  # noqa: E402  (the catalog readers, shared with fit_eager.py)

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
args = sys.argv[1:]
path = args[0] if args and not args[0].startswith("--") else os.path.join(here, "data", "liger_fused_kernels.csv")
GPUS = gemmfit.LIGER_GPUS
# (kernel, provider, mode) -> (bytes per element, per row, per column; fp32 rows a program holds)
OPS = {("rms_norm", "liger", "forward"): (4, 4, 4, 2),
       ("layer_norm", "liger", "forward"): (8, 8, 8, 3),
       ("fused_add_rms_norm", "liger_fused_add_rms_norm", "forward"): (16, 4, 4, 3)}
REGISTERS = 256 * 1024  # an SM's register file, bytes (A100, H100)
ROWS = 11  # calls per GPU in the shipped CSV
DERIVED = {"a100-sxm-80gb": ("a100-sxm-40gb",), "h100-sxm": ("h200-sxm", "h800-sxm", "h100-96gb-500w")}
T0 = 1e-6  # the catalog's memory-curve t0
POINTS = ((1e5, "0.1 MB"), (1e6, "1 MB"), (1e7, "10 MB"), (1e8, "100 MB"), (1e9, "1 GB"))
LARGE = 100e6  # calls whose fixed cost is a few percent of their time


def catalog(gpu):
    return gemmfit.catalog_text(root, gpu)


bandwidth, launch = gemmfit.catalog_bandwidth, gemmfit.catalog_launch


def curve(s, t0, bw):
    """The catalog's memory_efficiency samples at plateau s and fixed cost t0."""
    return [(b, label, 1 / (bw * t0 / b + 1 / s)) for b, label in POINTS]


def line(s, t0, bw):
    return "memory_efficiency: [" + ", ".join("[%s, %.4g]" % (label, e) for _, label, e in curve(s, t0, bw)) + "]"


def catalog_points(text):
    m = re.search(r"^memory_efficiency: (.*)$", text, re.M)
    return [(float(v) * (1e9 if u == "GB" else 1e6), float(e))
            for v, u, e in re.findall(r"\[([0-9.]+) (MB|GB), ([0-9.]+)\]", m.group(1))] if m else []


def catalog_eff(text, b):
    """The catalog's memory_efficiency at b bytes: linear in log10(b), clamped, as sim/hw/gpu.c."""
    pts = catalog_points(text)
    return float(np.interp(np.log10(b), np.log10([p[0] for p in pts]), [p[1] for p in pts]))


def fit(B, t, bw):
    """(s, c) minimising sum(log((c + B / (s bw)) / t))^2 on the grid."""
    S = np.arange(0.5, 1.0005, 0.001)[:, None, None]
    C = np.arange(0, 40.0001, 0.25)[None, :, None] * 1e-6
    score = np.sum(np.log((C + B[None, None, :] / (S * bw)) / t[None, None, :]) ** 2, axis=2)
    i, j = np.unravel_index(np.argmin(score), score.shape)
    return round(float(S[i, 0, 0]), 3), float(C[0, j, 0])


rows = gemmfit.liger_rows(path)
data = {}
for gpu, key, r in gemmfit.liger_select(rows, OPS):
    per, row, col, held = OPS[key]
    M, N = json.loads(r["config"])["M"], int(r["x_value"])
    data.setdefault(gpu, []).append(
        ("%s %s" % (key[0], key[2]), N, float(per * M * N + row * M + col * N), float(r["median_ms"]) * 1e-3,
         4 * N * held <= REGISTERS))

fails = []
unknown = sorted({r["gpu_name"] for r in rows} - set(GPUS))
if unknown:
    print("not fitted (add them to GPUS to fit them): %s" % ", ".join(unknown))
for gpu in sorted(set(GPUS.values())):
    R = data.get(gpu, [])
    if "--check" in args and len(R) != ROWS:
        fails.append("%s: %d calls in %s, expected %d" % (gpu, len(R), path, ROWS))
    if not R:
        continue
    text = catalog(gpu)
    bw, L = bandwidth(text), launch(text)
    B, t = np.array([x[2] for x in R]), np.array([x[3] for x in R])
    s, c = fit(B, t, bw)
    t0 = T0
    err = (c + B / (s * bw)) / t - 1
    now = np.array([L + b / (bw * catalog_eff(text, b)) for b in B]) / t - 1
    large = [x[2] / (bw * (x[3] - L - T0)) for x in R if x[2] >= LARGE and x[4]]
    s_large = float(np.median(large)) if large else float("nan")
    print("%s (%.0f GB/s): s = %.3f, a fixed %.2f us a call; mean |error| %.1f%%, max %.1f%% over %d calls; "
          "the calls of >= 100 MB that do not spill reach %.3f (median of %d) at stepsim's fixed %.0f us; "
          "the catalog's curve now times all %d calls %+.1f%% on average"
          % (gpu, bw / 1e9, s, c * 1e6, 100 * np.mean(np.abs(err)), 100 * np.max(np.abs(err)), len(R),
             s_large, len(large), (L + T0) * 1e6, len(R), 100 * np.mean(now)))
    print(line(s, t0, bw))
    print("| op | hidden size | MB | measured (us) | fit (us) | error | bandwidth reached |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for x in R:
        f = c + x[2] / (s * bw)
        print("| %s%s | %d | %.0f | %.1f | %.1f | %+.1f%% | %.3f |" % (x[0], "" if x[4] else " (spills)",
                                                                     x[1], x[2] / 1e6, x[3] * 1e6, f * 1e6,
                                                                     100 * (f / x[3] - 1), x[2] / x[3] / bw))
    print()
    if "--check" in args:
        if not large or abs(s_large - s) > 0.03:
            fails.append("%s: the large calls reach %.3f at stepsim's fixed cost, the fit %.3f" % (gpu, s_large, s))
        for name in (gpu,) + DERIVED.get(gpu, ()):
            other = catalog(name)
            have = catalog_points(other)
            want = curve(s, t0, bandwidth(other))
            if len(have) != len(want) or any(abs(h[0] - w[0]) > 1 or abs(h[1] - w[2]) > 0.002
                                             for h, w in zip(have, want)):
                fails.append("%s: memory_efficiency is not the fit of %s's calls (s = %.3f, t0 = %.2f us): want %s"
                             % (name, gpu, s, t0 * 1e6, line(s, t0, bandwidth(other))))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
