"""The GPU catalog's GEMM model and its least-squares fit to timed GEMMs (numpy only).

stepsim times a GEMM of F FLOPs over inner dimension k moving B bytes as (sim/hw/gpu.h)

    t = launch + max((t0 + F / (P e)) (1 + k0 / k),  t_mem(B))

where t_mem is the memory roofline B / (bandwidth x eff_mem(B)). The catalog stores
matmul_efficiency = 1 / (P t0 / F + 1 / e) sampled by decade of F, and matmul_k_overhead =
k0. Used by scripts/gpu/measure.py (on a GPU) and test/validation/fit_gemm.py (on a
published table); docs/calibration.md."""
import csv, os, re

import numpy as np

# The GPUs of Liger-Kernel's benchmark CSVs (test/validation/data/liger_*_kernels.csv) and
# their catalog entries
LIGER_GPUS = {"NVIDIA A100-SXM4-80GB": "a100-sxm-80gb", "NVIDIA H100 80GB HBM3": "h100-sxm"}


def liger_rows(path):
    """A Liger-Kernel benchmark CSV's rows (dicts), '#' comment lines skipped."""
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def liger_select(rows, ops):
    """(catalog gpu, (kernel, provider, mode), row) for the rows whose key is in `ops` and
    whose GPU is in LIGER_GPUS."""
    for r in rows:
        key = (r["kernel_name"], r["kernel_provider"], r["kernel_operation_mode"])
        if key in ops and r["gpu_name"] in LIGER_GPUS:
            yield LIGER_GPUS[r["gpu_name"]], key, r


def model(p, F, k, t_mem, peak, launch):
    """Seconds for each GEMM under parameters p = (t0 in us, e, k0)."""
    t0, e, k0 = p[0] * 1e-6, p[1], p[2]
    return launch + np.maximum((t0 + F / (peak * e)) * (1 + k0 / k), t_mem)


def curve_at(curve, x):
    """A catalog curve [(size, efficiency), ...] at x: linear in log10(size), clamped to its
    ends, as sim/hw/gpu.c reads it."""
    return np.interp(np.log10(x), np.log10([p for p, _ in curve]), [e for _, e in curve])


def nelder_mead(f, x0, step, iters=4000):
    """Minimises f from x0 (plain Nelder-Mead: reflection, expansion, contraction, shrink)."""
    n = len(x0)
    xs = [np.array(x0, float)] + [np.array(x0, float) + np.eye(n)[i] * step[i] for i in range(n)]
    fs = [f(x) for x in xs]
    for _ in range(iters):
        order = np.argsort(fs)
        xs, fs = [xs[i] for i in order], [fs[i] for i in order]
        if abs(fs[-1] - fs[0]) < 1e-14:
            break
        c = np.mean(xs[:-1], axis=0)
        r = c + (c - xs[-1])
        fr = f(r)
        if fr < fs[0]:
            e = c + 2 * (c - xs[-1])
            fe = f(e)
            xs[-1], fs[-1] = (e, fe) if fe < fr else (r, fr)
        elif fr < fs[-2]:
            xs[-1], fs[-1] = r, fr
        else:
            h = c + 0.5 * (xs[-1] - c)
            fh = f(h)
            if fh < fs[-1]:
                xs[-1], fs[-1] = h, fh
            else:
                xs = [xs[0] + 0.5 * (x - xs[0]) for x in xs]
                fs = [f(x) for x in xs]
    return xs[int(np.argmin(fs))]


def fit(F, k, t, t_mem, peak, launch, free_k=True):
    """(t0 in us, e, k0) minimising sum(log(model / t)^2); k0 = 0 when not free_k."""
    F, k, t, t_mem = (np.asarray(a, float) for a in (F, k, t, t_mem))

    def loss(q):
        p = list(q) if free_k else [q[0], q[1], 0.0]
        if p[0] < 0 or p[1] <= 0 or p[2] < 0:
            return 1e9
        return float(np.sum(np.log(model(p, F, k, t_mem, peak, launch) / t) ** 2))

    if free_k:
        return list(nelder_mead(loss, [2.0, 0.8, 100.0], [0.5, 0.05, 50.0]))
    p = nelder_mead(loss, [2.0, 0.8], [0.5, 0.05])
    return [p[0], p[1], 0.0]


def curve(p, peak, points=(1e7, 1e8, 1e9, 1e10, 1e11, 1e12)):
    """The catalog's matmul_efficiency samples [(F, 1 / (P t0 / F + 1 / e))] of a fit."""
    return [(F, 1 / (peak * p[0] * 1e-6 / F + 1 / p[1])) for F in points]


# Eager composite ops (memory_efficiency_eager): an op of B bytes run as n native kernels of
# B / n bytes each, every kernel t = launch + t0 + b / (s bw) (the memory curve's form,
# eff(b) = 1 / (bw t0 / b + 1 / s), t0 = 1 us, plus the catalog's launch overhead).
EAGER_T0 = 1e-6
EAGER_POINTS = (1e5, 1e6, 1e7, 1e8, 1e9)


def eager_model(s, bw, B, n, launch):
    """Seconds for each op (B bytes in n kernels) at plateau s."""
    B, n = np.asarray(B, float), np.asarray(n, float)
    return n * (launch + EAGER_T0 + B / n / (s * bw))


def eager_fit(B, n, t, bw, launch):
    """The plateau s in (0.2, 1] minimising sum(log(model / t)^2), to 3 digits (golden
    section)."""
    t = np.asarray(t, float)

    def score(s):
        return float(np.sum(np.log(eager_model(s, bw, B, n, launch) / t) ** 2))

    lo, hi, g = 0.2, 1.0, (np.sqrt(5) - 1) / 2
    while hi - lo > 1e-5:
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, b) if score(a) < score(b) else (a, hi)
    return round((lo + hi) / 2, 3)


def eager_curve(s, bw):
    """The catalog's memory_efficiency_eager samples [(bytes, eff)] at plateau s."""
    return [(b, 1 / (bw * EAGER_T0 / b + 1 / s)) for b in EAGER_POINTS]


def catalog_text(root, gpu):
    """The text of topologies/gpus/GPU.yaml under the source root."""
    with open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")) as f:
        return f.read()


def catalog_bandwidth(text):
    """A catalog entry's memory_bandwidth, bytes/s."""
    v, u = re.search(r"^memory_bandwidth: ([0-9.]+) (GB|TB)/s", text, re.M).groups()
    return float(v) * (1e9 if u == "GB" else 1e12)


def catalog_launch(text):
    """A catalog entry's launch_overhead (s), which stepsim adds to every kernel."""
    return float(re.search(r"^launch_overhead: ([0-9.]+) us", text, re.M).group(1)) * 1e-6
