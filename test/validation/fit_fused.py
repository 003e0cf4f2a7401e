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
bandwidth bw. The benchmark calls the op from Python back to back, so its fixed cost is the
host's (the autograd function, Triton's launcher), which is not the GPU's and not stepsim's
launch + t0 (its host thread is modelled apart, docs/calibration.md "Host launch"). So this
script fits both: the plateau s and a fixed cost c per call, minimising
sum(log((c + b / (s bw)) / t_measured))^2 over a GPU's rows (a grid of s in steps of 0.001
and c in steps of 0.25 us), and the catalog takes s (its t0 stays 1 us). The bytes of each
kernel (per element X of the M x N input, w the element's bytes; the per-row statistics and
the weight, read once, are counted too):

- rms_norm / liger (LigerRMSNorm, bf16 input, fp32 weight): reads x, writes y (2 + 2), the
  fp32 rstd per row and the weight once: 4 M N + 4 M + 4 N.
- layer_norm / liger (LigerLayerNorm, fp32): reads x, writes y (4 + 4), the fp32 mean and rstd
  per row, the weight and bias once: 8 M N + 8 M + 8 N.
- fused_add_rms_norm / liger_fused_add_rms_norm (fp32): reads x and the residual, writes the
  new residual and y (4 x 4), rstd per row, the weight once: 16 M N + 4 M + 4 N.

It prints each GPU's fit, the per-row errors, those of the catalog's curve now, and the
memory_efficiency line for topologies/gpus/*.yaml. --check (the default suite,
test/analysis/meson.build) fails when the catalog's a100-sxm-80gb or h100-sxm
memory_efficiency is not the fit (its 1 GB point within 0.005 of the fitted curve's).
numpy only."""
import csv, json, os, re, sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
args = sys.argv[1:]
path = args[0] if args and not args[0].startswith("--") else os.path.join(here, "data", "liger_fused_kernels.csv")
GPUS = {"NVIDIA A100-SXM4-80GB": "a100-sxm-80gb", "NVIDIA H100 80GB HBM3": "h100-sxm"}
# (kernel, provider, mode) -> bytes of an M x N call: (per element, per row, per column)
OPS = {("rms_norm", "liger", "forward"): (4, 4, 4),
       ("layer_norm", "liger", "forward"): (8, 8, 8),
       ("fused_add_rms_norm", "liger_fused_add_rms_norm", "forward"): (16, 4, 4)}
T0 = 1e-6  # the catalog's memory-curve t0
POINTS = ((1e5, "0.1 MB"), (1e6, "1 MB"), (1e7, "10 MB"), (1e8, "100 MB"), (1e9, "1 GB"))


def catalog(gpu):
    return open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()


def bandwidth(text):
    v, u = re.search(r"^memory_bandwidth: ([0-9.]+) (GB|TB)/s", text, re.M).groups()
    return float(v) * (1e9 if u == "GB" else 1e12)


def curve(s, bw):
    """The catalog's memory_efficiency samples at plateau s."""
    return [(b, label, 1 / (bw * T0 / b + 1 / s)) for b, label in POINTS]


def catalog_eff(text, bw, b):
    """The catalog's memory_efficiency at b bytes (log-log interpolation, as sim/hw/gpu.c)."""
    line = re.search(r"^memory_efficiency: (.*)$", text, re.M).group(1)
    pts = [(float(v) * (1e9 if u == "GB" else 1e6), float(e))
           for v, u, e in re.findall(r"\[([0-9.]+) (MB|GB), ([0-9.]+)\]", line)]
    xs, ys = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.exp(np.interp(np.log(b), xs, ys)))


def fit(B, t, bw):
    """(s, c) minimising sum(log((c + B / (s bw)) / t))^2 on the grid."""
    S = np.arange(0.5, 1.0005, 0.001)[:, None, None]
    C = np.arange(0, 40.0001, 0.25)[None, :, None] * 1e-6
    score = np.sum(np.log((C + B[None, None, :] / (S * bw)) / t[None, None, :]) ** 2, axis=2)
    i, j = np.unravel_index(np.argmin(score), score.shape)
    return round(float(S[i, 0, 0]), 3), float(C[0, j, 0])


with open(path) as f:
    rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
data = {}
for r in rows:
    key = (r["kernel_name"], r["kernel_provider"], r["kernel_operation_mode"])
    if key not in OPS or r["gpu_name"] not in GPUS:
        continue
    per, row, col = OPS[key]
    M, N = json.loads(r["config"])["M"], int(r["x_value"])
    data.setdefault(GPUS[r["gpu_name"]], []).append(
        ("%s %s" % (key[0], key[2]), N, float(per * M * N + row * M + col * N), float(r["median_ms"]) * 1e-3))

fails = []
for gpu, R in sorted(data.items()):
    text = catalog(gpu)
    bw = bandwidth(text)
    B, t = np.array([x[2] for x in R]), np.array([x[3] for x in R])
    s, c = fit(B, t, bw)
    err = (c + B / (s * bw)) / t - 1
    # the catalog's curve now, with the same fixed cost c for the call
    now = np.array([c + b / (bw * catalog_eff(text, bw, b)) for b in B]) / t - 1
    print("%s (%.0f GB/s): s = %.3f, a fixed %.2f us a call; mean |error| %.1f%%, max %.1f%% over %d "
          "calls (the catalog's curve now: mean %+.1f%%)" % (gpu, bw / 1e9, s, c * 1e6, 100 * np.mean(np.abs(err)),
                                                          100 * np.max(np.abs(err)), len(R), 100 * np.mean(now)))
    print("memory_efficiency: [" + ", ".join("[%s, %.4g]" % (label, e) for _, label, e in curve(s, bw)) + "]")
    print("| op | hidden size | MB | measured (us) | fit (us) | error | bandwidth reached |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for x, e in zip(R, err):
        print("| %s | %d | %.0f | %.1f | %.1f | %+.1f%% | %.3f |" % (x[0], x[1], x[2] / 1e6, x[3] * 1e6,
                                                                   (c + x[2] / (s * bw)) * 1e6, 100 * e,
                                                                   x[2] / x[3] / bw))
    print()
    if "--check" in args:
        have = catalog_eff(text, bw, 1e9)
        want = curve(s, bw)[-1][2]
        if abs(have - want) > 0.005:
            fails.append("%s: memory_efficiency at 1 GB %.4f, the fit %.4f" % (gpu, have, want))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
