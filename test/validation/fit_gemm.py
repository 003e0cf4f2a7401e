#!/usr/bin/python3
"""Fits the matmul part of a GPU catalog entry to a table of GEMMs timed alone:

    fit_gemm.py [CSV] [--peak TFLOPS] [--bandwidth GBS] [--launch US] [--memory-curve YAML]

CSV (default test/validation/data/xla_sm90_gemm.csv, XLA's measured sm_90 table) has columns
b, m, n, k, bf16_flops: C (b x m x n) = A (b x m x k) B (b x k x n) ran at bf16_flops FLOP/s.
The defaults are the H100 SXM's: dense bf16 peak 989 TFLOP/s, 3350 GB/s, the catalog's
4 us launch overhead and its memory curve (topologies/gpus/h100-sxm.yaml). XLA's sm_100
table (B200) is test/validation/data/xla_sm100_gemm.csv: run it with --peak 2250 --bandwidth
8000 --sms 148 --memory-curve topologies/gpus/b200.yaml.

stepsim times a GEMM of F FLOPs over inner dimension k that moves B bytes as (sim/hw/gpu.h)

    t = launch + max((t0 + F / (P e)) (1 + k0 / k),  B / (bw eff_mem(B)))

with B = 2 b (mk + kn + mn) here (bf16 in and out). This script fits t0, e and k0 by least
squares on log(t_model / t_measured) (scripts/gpu/gemmfit.py, numpy only), once with k0 = 0 (the curve keyed by FLOPs alone) and
once free, on the shapes a training step has: F >= 1 GFLOP and b m n >= 2^20 outputs
(skinny outputs of a few tiles need split-K and are not transformer GEMMs). It prints both
fits with their errors on that set and on every shape of >= 0.5 GFLOP, and the median rate
by k for large outputs, measured and modelled.

It also tries wave quantization on top (--sms, default 132, the H100 SXM's): a GEMM's output
cut into tiles of tm x tn runs in ceil(tiles / SMs) waves, each as long as a full one, so the
rate term F / (P e) is divided by q = b m n / (waves SMs tm tn); once with one tile shape for
every GEMM and once with the best of four shapes per GEMM (as a tile-choosing library would).
docs/calibration.md ("Wave quantization") reads these lines: they are why the catalog has no
SM count."""
import csv, os, re, sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "gpu"))
import gemmfit  # noqa: E402  (the catalog's GEMM model and the fit, shared with measure.py)
args = sys.argv[1:]


def opt(name, default):
    return args[args.index(name) + 1] if name in args else default


path = args[0] if args and not args[0].startswith("--") else os.path.join(here, "data", "xla_sm90_gemm.csv")
P = float(opt("--peak", 989)) * 1e12
BW = float(opt("--bandwidth", 3350)) * 1e9
LAUNCH = float(opt("--launch", 4)) * 1e-6
catalog = opt("--memory-curve", os.path.join(here, "..", "..", "topologies", "gpus", "h100-sxm.yaml"))

text = open(catalog).read()
line = re.search(r"^memory_efficiency: (.*)$", text, re.M).group(1)
units = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "B": 1.0}
pts = [(float(v) * units[u], float(e)) for v, u, e in re.findall(r"\[([0-9.]+) (KB|MB|GB|B), ([0-9.]+)\]", line)]

with open(path) as f:
    rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
b, m, n, k, rate = (np.array([float(r[c]) for r in rows]) for c in ("b", "m", "n", "k", "bf16_flops"))
F = 2 * b * m * n * k
t = F / rate
B = 2 * b * (m * k + k * n + m * n)
t_mem = B / (BW * gemmfit.curve_at(pts, B))


fit_set = (F >= 1e9) & (b * m * n >= 2 ** 20)
wide = F >= 0.5e9


def model(p):
    return gemmfit.model(p, F, k, t_mem, P, LAUNCH)


def errors(p, sel):
    err = model(p)[sel] / t[sel] - 1
    return "mean |error| %.1f%%, max %.1f%% over %d shapes" % (100 * np.mean(np.abs(err)), 100 * np.max(np.abs(err)), sel.sum())


fits = {"F only (k0 = 0)": gemmfit.fit(F[fit_set], k[fit_set], t[fit_set], t_mem[fit_set], P, LAUNCH, False),
        "with k0": gemmfit.fit(F[fit_set], k[fit_set], t[fit_set], t_mem[fit_set], P, LAUNCH)}
print("%s: %d shapes; peak %.0f TFLOP/s, %.0f GB/s, launch %.1f us" % (path, len(rows), P / 1e12, BW / 1e9, LAUNCH * 1e6))
for name, q in fits.items():
    print("%-16s t0 = %.2f us, e = %.3f, k0 = %.1f | fit set: %s | all >= 0.5 GFLOP: %s" % (
        name, q[0], q[1], q[2], errors(q, fit_set), errors(q, wide)))
SMS = float(opt("--sms", 132))


def quantized(tiles):
    """Per shape, the best wave-quantization efficiency q over the tile shapes given."""
    best = np.zeros_like(F)
    for tm, tn in tiles:
        count = b * np.ceil(m / tm) * np.ceil(n / tn)
        best = np.maximum(best, b * m * n / (np.ceil(count / SMS) * SMS * tm * tn))
    return best


for name, tiles in (("128x128 tiles", [(128, 128)]),
                    ("best of 4 tiles", [(256, 128), (128, 256), (128, 128), (64, 128)])):
    qz = quantized(tiles)
    p = gemmfit.fit((F / qz)[fit_set], k[fit_set], t[fit_set], t_mem[fit_set], P, LAUNCH)
    rel = gemmfit.model(p, F / qz, k, t_mem, P, LAUNCH) / t - 1
    err = {"fit": rel[fit_set], "wide": rel[wide]}
    print("%-16s t0 = %.2f us, e = %.3f, k0 = %.1f | fit set: mean |error| %.1f%%, max %.1f%% | "
          "all >= 0.5 GFLOP: mean %.1f%%, max %.1f%% (waves on %d SMs)" % (
              name, p[0], p[1], p[2], 100 * np.mean(np.abs(err["fit"])),
              100 * np.max(np.abs(err["fit"])), 100 * np.mean(np.abs(err["wide"])),
              100 * np.max(np.abs(err["wide"])), SMS))
q = fits["with k0"]
print()
print("| k | measured TFLOP/s (median) | model with k0 | model, F only |")
print("|---:|---:|---:|---:|")
large = b * m * n >= 2 ** 22
for kk in sorted(set(k)):
    s = large & (k == kk)
    print("| %d | %.0f | %.0f | %.0f |" % (kk, np.median(rate[s]) / 1e12, np.median(F[s] / model(q)[s]) / 1e12,
                                       np.median(F[s] / model(fits["F only (k0 = 0)"])[s]) / 1e12))
