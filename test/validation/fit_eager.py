#!/usr/bin/python3
"""Fits the memory curve of eager PyTorch's composite ops (a catalog's memory_efficiency_eager)
to measured op times:

    fit_eager.py [CSV] [--check]

CSV (default test/validation/data/liger_eager_kernels.csv: LinkedIn's Liger-Kernel benchmark
rows for the reference providers that run PyTorch's own kernels op by op) has columns
kernel_name, kernel_provider, kernel_operation_mode, x_value, median_ms, config, gpu_name.

stepsim runs an eager composite op as n kernels of B / n bytes each (docs/models.md, "Eager
and compiled pointwise kernels"), each timed as (sim/hw/gpu.c)

    t = launch + b / (bw eff(b)),   eff(b) = 1 / (bw t0 / b + 1 / s)   (b = B / n)

i.e. launch + t0 + b / (s bw), with the GPU catalog entry's launch_overhead (4 us) and t0 = 1 us (the form
of every memory curve in the catalog). For each GPU this script finds the plateau s that
minimises sum(log(t_model / t_measured))^2 over that GPU's rows, prints the fit, the
per-row errors and those of the catalog's memory_efficiency (its plateau s_mem, read from
its 1 GB point), the curve line
for topologies/gpus/*.yaml, and, held out, the fit's error on the file's torch LayerNorm
rows (one native kernel, which stepsim also times on this curve in eager runs). The ops as stepsim counts them (per element X of the swept
tensor; e = the activation's bytes):

- rms_norm / huggingface (LlamaRMSNorm, bf16 input, fp32 weight; X = M x H): forward the
  composite at::rms_norm forward, 20 + 2e + 2(e + 4) = 36 bytes at e = 2, plus 2 because the
  fp32 weight's product writes fp32: 38 bytes in 8 kernels; backward 52 + 6e + 2(e + 4) = 76
  bytes in 12 kernels (sim/model/model.c, rmsnorm_op).
- fused_add_rms_norm / huggingface (residual add then LlamaRMSNorm, all fp32; X = M x H):
  forward the add (two 4-byte reads, one write: 12) and the norm without casts at e = 4
  (20 + 2e = 28): 40 bytes in 7 kernels; backward the norm's 52 + 6e = 76 bytes in 10 (the
  add passes its gradient through).
- megatron_swiglu / torch (F.silu(y1) * y2 over torch.chunk(y, 2, -1), bf16; X = S x B x f):
  the eager SwiGLU forward, 5e = 10 bytes in 2 kernels.

--check (the default suite, test/analysis/meson.build) fails when the catalog's
a100-sxm-80gb or h100-sxm memory_efficiency_eager is not the fit (its 1 GB point within
0.005 of the fitted curve's). numpy only."""
import json, os, re, sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu"))
import gemmfit  # noqa: E402  (the eager model and fit, shared with measure.py)

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
args = sys.argv[1:]
path = args[0] if args and not args[0].startswith("--") else os.path.join(here, "data", "liger_eager_kernels.csv")
GPUS = gemmfit.LIGER_GPUS
# (kernel, provider, mode) -> (bytes per element, kernels, the config keys whose product is
# the rows of the swept dimension)
OPS = {("rms_norm", "huggingface", "forward"): (38, 8, ("M",)),
       ("rms_norm", "huggingface", "backward"): (76, 12, ("M",)),
       ("fused_add_rms_norm", "huggingface", "forward"): (40, 7, ("M",)),
       ("fused_add_rms_norm", "huggingface", "backward"): (76, 10, ("M",)),
       ("megatron_swiglu", "torch", "forward"): (10, 2, ("S", "B"))}


def catalog(gpu):
    return gemmfit.catalog_text(root, gpu)


bandwidth, launch = gemmfit.catalog_bandwidth, gemmfit.catalog_launch


def curve(s, bw):
    return "[" + ", ".join("[%g %s, %.4g]" % (b / (1e9 if b >= 1e9 else 1e6), "GB" if b >= 1e9 else "MB", e)
                           for b, e in gemmfit.eager_curve(s, bw)) + "]"


rows = gemmfit.liger_rows(path)
data = {}
for gpu, key, r in gemmfit.liger_select(rows, OPS):
    per, n, dims = OPS[key]
    cfg = json.loads(r["config"])
    X = float(r["x_value"]) * np.prod([cfg[d] for d in dims])
    data.setdefault(gpu, []).append(
        ("%s %s" % (key[0], key[2]), int(r["x_value"]), per * X, n, float(r["median_ms"]) * 1e-3))


fails = []
for gpu, R in sorted(data.items()):
    text = catalog(gpu)
    bw, L = bandwidth(text), launch(text)
    B, n, t = (np.array([x[i] for x in R]) for i in (2, 3, 4))

    def model(s, bw, B, n):
        return gemmfit.eager_model(s, bw, B, n, L)

    s = gemmfit.eager_fit(B, n, t, bw, L)
    # the fused curve's plateau: its 1 GB point is 1 / (bw t0 / 1e9 + 1 / s_mem)
    e1 = float(re.search(r"^memory_efficiency: .*\[1 GB, ([0-9.]+)\]\]", text, re.M).group(1))
    s_mem = 1 / (1 / e1 - bw * gemmfit.EAGER_T0 / 1e9)
    err, cat = model(s, bw, B, n) / t - 1, model(s_mem, bw, B, n) / t - 1
    print("%s (%.0f GB/s): s = %.3f; mean |error| %.1f%%, max %.1f%% over %d ops (the memory curve's "
          "%.3f: mean %+.1f%%)" % (gpu, bw / 1e9, s, 100 * np.mean(np.abs(err)),
                                   100 * np.max(np.abs(err)), len(R), s_mem, 100 * np.mean(cat)))
    print("memory_efficiency_eager: " + curve(s, bw))
    print("| op | size | measured (ms) | fit (ms) | error | at s = %.3f |" % s_mem)
    print("|---|---:|---:|---:|---:|---:|")
    for x, e, c in zip(R, err, cat):
        print("| %s | %d | %.3f | %.3f | %+.1f%% | %+.1f%% |" % (x[0], x[1], x[4] * 1e3,
                                                              model(s, bw, x[2], x[3]) * 1e3,
                                                              100 * e, 100 * c))
    # Held out: PyTorch's LayerNorm forward (one native kernel, fp32; X = M x N): reads x,
    # writes y (8 bytes an element) and reads the fp32 weight and bias (8 N), one kernel,
    # which stepsim times on this curve under training.compile: false.
    held = [(int(r["x_value"]), 8.0 * json.loads(r["config"])["M"] * float(r["x_value"]) + 8.0 * float(r["x_value"]),
             float(r["median_ms"]) * 1e-3) for r in rows
            if r["kernel_name"] == "layer_norm" and r["kernel_provider"] == "huggingface"
            and r["kernel_operation_mode"] == "forward" and GPUS.get(r["gpu_name"]) == gpu]
    if held:
        he = [float(model(s, bw, np.array([b]), np.array([1]))[0]) / tm - 1 for _, b, tm in held]
        hc = [float(model(s_mem, bw, np.array([b]), np.array([1]))[0]) / tm - 1 for _, b, tm in held]
        print("held out, torch LayerNorm forward (%d sizes): mean %+.1f%%, max |%.1f%%| at s = %.3f; "
              "mean %+.1f%% at %.3f" % (len(held), 100 * np.mean(he), 100 * np.max(np.abs(he)), s,
                                         100 * np.mean(hc), s_mem))
    print()
    if "--check" in args:
        have = re.search(r"^memory_efficiency_eager: .*\[1 GB, ([0-9.]+)\]\]", text, re.M)
        want = gemmfit.eager_curve(s, bw)[-1][1]  # at 1 GB
        if not have or abs(float(have.group(1)) - want) > 0.005:
            fails.append("%s: memory_efficiency_eager at 1 GB %s, the fit %.4f" % (
                gpu, have.group(1) if have else "missing", want))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
