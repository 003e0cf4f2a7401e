#!/usr/bin/env python3
"""Measures, on the GPU at hand, the curves of a GPU catalog entry (topologies/gpus/*.yaml):

    python3 scripts/gpu/measure.py --peak-tflops 989 --bandwidth-gbs 3350 --out DIR [--quick]
                                   [--in-training R]

Needs PyTorch with CUDA (not this project's build). Writes DIR/gpu-measured.yaml, the
catalog keys ready to paste (matmul_efficiency, memory_efficiency, memory_efficiency_eager,
attention_efficiency, launch_overhead) with the device and library versions in its header, and
DIR/gpu-measured.csv, every timing behind them (kind, shape, FLOPs or bytes, seconds,
efficiency), and DIR/gpu-gemms.csv, the GEMMs alone in the columns test/validation/fit_gemm.py
reads (b, m, n, k, bf16_flops) to refit them another way. --peak-tflops and --bandwidth-gbs
are the catalog's dense bf16 peak and memory bandwidth for this GPU: efficiencies are against
them, as the simulator reads them. The rates written are the kernels' alone; --in-training R
scales the GEMM plateau and the attention tables to a training step's (R = 0.801, the A100's
calibrated ratio, docs/calibration.md), the CSVs keeping the timings as measured.

Method (docs/calibration.md, "How to recalibrate"): each kernel is timed with CUDA events
over back-to-back iterations after a warm-up (kernel time, launch hidden), the median of
five such batches kept.
- matmul: bf16 GEMMs of transformer-layer shapes (QKV, output projection and the two MLP
  GEMMs of hidden sizes 512 to 16,384 split 1 to 8 ways, as forward, input-gradient and
  weight-gradient products), tokens 128 to 32,768; eff = 2mnk / (peak t). The catalog times
  a GEMM as (t0 + F / (peak e)) (1 + k0 / k) or its memory roofline, whichever is longer
  (k: inner dimension; docs/calibration.md): t0, e and k0 are fitted by least squares on the
  shapes of >= 1 GFLOP (gemmfit.py, as test/validation/fit_gemm.py does on XLA's table),
  with the memory curve measured below; matmul_efficiency samples 1 / (peak t0 / F + 1 / e)
  by decade of F, matmul_k_overhead is k0.
- memory: device-to-device copies; bytes moved = 2 x the tensor; eff = bytes / (bw t).
  Small copies run from L2 when repeated, as small kernels of a training step often do.
- eager composite ops: an RMSNorm written as eager PyTorch runs it (x.float(), pow, mean,
  rsqrt, scale, cast back, times a bf16 weight; 2,048 rows of 1,024 to 16,384), forward and
  forward + backward (the backward's time the difference); stepsim counts it as 36 bytes per
  element in 8 kernels forward, 76 in 12 backward (docs/models.md), and the plateau s of
  memory_efficiency_eager is fitted to the times with each kernel paying the launch overhead
  measured below (gemmfit.eager_fit, as test/validation/fit_eager.py does on Liger-Kernel's
  published timings).
- attention: torch's scaled_dot_product_attention on the cuDNN backend (what Transformer
  Engine prefers on Hopper), else flash; head dim 128, 16 heads, 16,384 tokens per batch
  (the FlashAttention-3 paper's setting); forward FLOPs 4 s^2 d per head and sequence,
  half with the causal mask; backward 2.5 x the forward's (docs/models.md).
- launch overhead: 10,000 in-place adds on a one-element tensor, wall time per op with the
  CPU unable to run ahead (what the catalog's launch_overhead stands for)."""
import argparse, csv, datetime, math, os, statistics, sys, time

torch = F = None  # imported in main(), after the arguments: --help works anywhere


def load_torch():
    global torch, F
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        sys.exit("measure.py: needs PyTorch with CUDA (run it on the GPU machine)")


def timed(fn, iters):
    """Median seconds per call of fn over five batches of `iters` back-to-back calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        runs.append(s.elapsed_time(e) / 1e3 / iters)
    return statistics.median(runs)


def iters_for(seconds_guess):
    """Enough iterations for about 20 ms per batch."""
    return max(3, min(200, int(0.02 / max(seconds_guess, 1e-7))))


def gemm_shapes(quick):
    hidden = [512, 2048, 8192] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    tokens = [128, 2048, 32768] if quick else [128, 512, 2048, 8192, 32768]
    shapes = set()
    for h in hidden:
        for t in (1, 2, 4, 8):
            for name, n, k in (("qkv", 3 * h // t, h), ("proj", h, h // t),
                               ("fc1", 4 * h // t, h), ("fc2", h, 4 * h // t)):
                for m in tokens:
                    shapes.add(("%s.fwd" % name, m, n, k))     # X[m,k] W[k,n]
                    shapes.add(("%s.dgrad" % name, m, k, n))   # dY[m,n] W^T[n,k]
                    shapes.add(("%s.wgrad" % name, k, n, m))   # X^T[k,m] dY[m,n]
    return sorted(shapes, key=lambda s: (2 * s[1] * s[2] * s[3], s))


def measure_gemm(rows, peak, quick):
    for name, m, n, k in gemm_shapes(quick):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * m * n * k
        t = timed(lambda: a @ b, iters_for(flops / (0.5 * peak)))
        rows.append(dict(kind="matmul", name=name, shape="%dx%dx%d" % (m, n, k), k=k, flops=flops,
                         bytes=2.0 * (m * k + k * n + m * n), seconds=t, eff=flops / (peak * t)))
        del a, b


def measure_copy(rows, bw):
    for moved in (1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9):
        n = int(moved / 2 / 2)  # bf16 elements in a tensor of moved/2 bytes
        x = torch.empty(n, device="cuda", dtype=torch.bfloat16).normal_()
        y = torch.empty_like(x)
        t = timed(lambda: y.copy_(x), iters_for(moved / (0.5 * bw)))
        rows.append(dict(kind="memory", name="copy", shape="%d" % n, flops=0.0, bytes=4.0 * n,
                         seconds=t, eff=4.0 * n / (bw * t)))
        del x, y


def measure_eager(rows, bw):
    """The composite RMSNorm's forward and backward times (kind "eager": bytes and kernels as
    stepsim counts them)."""
    def norm(x, w):
        xf = x.float()
        return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x)

    M = 2048
    for H in (1024, 2048, 4096, 8192, 16384):
        X = M * H
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w = torch.ones(H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            fwd = timed(lambda: norm(x, w), iters_for(36 * X / 1e12))

        def both():
            norm(x, w).backward(g)

        full = timed(both, iters_for(112 * X / 1e12))
        for name, per, n, t in (("rms_norm forward", 36, 8, fwd), ("rms_norm backward", 76, 12, full - fwd)):
            rows.append(dict(kind="eager", name=name, shape="%dx%d" % (M, H), flops=0.0,
                             bytes=float(per * X), kernels=n, seconds=t, eff=per * X / (bw * t)))
        del x, w, g


def measure_attention(rows, peak):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    heads, d, total = 16, 128, 16384
    backend = None
    for cand in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        try:
            q = torch.randn(1, heads, 512, d, device="cuda", dtype=torch.bfloat16)
            with sdpa_kernel(cand):
                F.scaled_dot_product_attention(q, q, q, is_causal=True)
            backend = cand
            break
        except RuntimeError:
            continue
    if backend is None:
        print("measure.py: no fused attention backend; attention not measured", file=sys.stderr)
        return None
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        b = max(1, total // s)
        q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        for causal in (True, False):
            full = 4.0 * b * heads * s * s * d
            fwd = full / 2 if causal else full
            with sdpa_kernel(backend):
                t = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                          iters_for(fwd / (0.3 * peak)))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                g = torch.randn_like(o)
                tb = timed(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True),
                           iters_for(2.5 * fwd / (0.3 * peak)))
            tag = "" if causal else "_unmasked"
            rows.append(dict(kind="attention", name="forward" + tag, shape="b%d s%d" % (b, s),
                             flops=fwd, bytes=0.0, seconds=t, eff=fwd / (peak * t), seq=s))
            rows.append(dict(kind="attention", name="backward" + tag, shape="b%d s%d" % (b, s),
                             flops=2.5 * fwd, bytes=0.0, seconds=tb, eff=2.5 * fwd / (peak * tb),
                             seq=s))
            del o, g
        del q, k, v
    return str(backend).split(".")[-1]


def measure_launch():
    x = torch.zeros(1, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    n = 10000
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def decade_curve(rows, kind, points, key, eff="eff"):
    """For each point, the median efficiency of the rows within a factor sqrt(10) of it."""
    out = []
    for p in points:
        near = [r[eff] for r in rows if r["kind"] == kind and r[key] > 0
                and abs(math.log10(r[key] / p)) <= 0.5]
        if near:
            out.append((p, statistics.median(near)))
    return out


def catalog_lines(rows, peak, bw, backend, launch, in_training=1.0):
    """The catalog keys (YAML lines) from the timings: the memory curve by decade of bytes,
    the GEMM model fitted on the shapes of >= 1 GFLOP (gemmfit.py, kernel times: no launch
    term) and sampled by decade of FLOPs, the attention tables as measured, the launch gap.
    in_training scales the tensor-core rates (the GEMM plateau, t0 and k0 kept, and the
    attention tables) from the kernels' rates alone to the rate a training step sustains
    (docs/calibration.md: 0.801, the A100's calibrated ratio); 1 keeps them as measured."""
    import gemmfit  # beside this script (numpy): the catalog's GEMM model and its fit
    mem = decade_curve(rows, "memory", [1e5, 1e6, 1e7, 1e8, 1e9], "bytes")
    big = [r for r in rows if r["kind"] == "matmul" and r["flops"] >= 1e9]
    fit = gemmfit.fit([r["flops"] for r in big], [r["k"] for r in big], [r["seconds"] for r in big],
                      [r["bytes"] / (bw * gemmfit.curve_at(mem, r["bytes"])) for r in big], peak, 0.0)
    alone = ("kernels alone" if in_training == 1.0
             else "alone %.3f x %g in training" % (fit[1], in_training))
    fit = (fit[0], fit[1] * in_training, fit[2])
    lines = ["matmul_efficiency: [%s]" % ", ".join("[%g GFLOP, %.4g]" % (f / 1e9, e)
                                                   for f, e in gemmfit.curve(fit, peak)),
             "matmul_k_overhead: %.0f  # t0 %.2f us, plateau %.3f (%s)" % (fit[2], fit[0], fit[1], alone),
             "memory_efficiency: [%s]" % ", ".join("[%g MB, %.3f]" % (b / 1e6, e) for b, e in mem)]
    eager = [r for r in rows if r["kind"] == "eager"]
    if eager:
        s = gemmfit.eager_fit([r["bytes"] for r in eager], [r["kernels"] for r in eager],
                              [r["seconds"] for r in eager], bw, launch)
        lines.append("memory_efficiency_eager: [%s]  # s %.3f: composite RMSNorm, %d timings" % (
            ", ".join("[%g MB, %.4g]" % (b / 1e6, e) for b, e in gemmfit.eager_curve(s, bw)), s,
            len(eager)))
    if backend:
        lines.append("attention_efficiency:  # %s backend, head dim 128, %s" % (
            backend, "kernels alone" if in_training == 1.0 else "alone x %g in training" % in_training))
        for name in ("forward", "backward", "forward_unmasked", "backward_unmasked"):
            pts = [(r["seq"], r["eff"] * in_training) for r in rows
                   if r["kind"] == "attention" and r["name"] == name]
            lines.append("  %s: [%s]" % (name, ", ".join("[%d, %.3f]" % p for p in pts)))
    lines.append("launch_overhead: %.1f us  # eager in-place add, CPU-bound" % (launch * 1e6))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peak-tflops", type=float, required=True, help="the catalog's bf16 peak")
    ap.add_argument("--bandwidth-gbs", type=float, required=True, help="the catalog's HBM GB/s")
    ap.add_argument("--out", default=".", help="folder for gpu-measured.yaml and .csv")
    ap.add_argument("--quick", action="store_true", help="fewer GEMM shapes (about a minute)")
    ap.add_argument("--in-training", type=float, default=1.0, metavar="R",
                    help="scale the GEMM plateau and the attention tables by R, from the rates "
                         "alone to a training step's (0.801: docs/calibration.md); default 1, "
                         "as measured")
    a = ap.parse_args()
    if not 0 < a.in_training <= 1:
        ap.error("--in-training must be in (0, 1]")
    load_torch()
    if not torch.cuda.is_available():
        sys.exit("measure.py: no CUDA device")
    peak, bw = a.peak_tflops * 1e12, a.bandwidth_gbs * 1e9
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    rows = []
    t0 = time.time()
    measure_gemm(rows, peak, a.quick)
    print("matmul: %d shapes, %.0f s" % (sum(r["kind"] == "matmul" for r in rows),
                                         time.time() - t0), file=sys.stderr)
    measure_copy(rows, bw)
    measure_eager(rows, bw)
    backend = measure_attention(rows, peak)
    launch = measure_launch()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "gpu-measured.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "name", "shape", "flops", "bytes", "seconds", "efficiency"])
        for r in rows:
            w.writerow([r["kind"], r["name"], r["shape"], "%.6g" % r["flops"],
                        "%.6g" % r["bytes"], "%.6g" % r["seconds"], "%.4f" % r["eff"]])
    with open(os.path.join(a.out, "gpu-gemms.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["b", "m", "n", "k", "bf16_flops"])
        for r in rows:
            if r["kind"] == "matmul":
                m, n, k = (int(x) for x in r["shape"].split("x"))
                w.writerow([1, m, n, k, "%.0f" % (r["flops"] / r["seconds"])])
    prop = torch.cuda.get_device_properties(0)
    header = ["# Measured by scripts/gpu/measure.py on %s (%d SMs), %s" % (
                  prop.name, prop.multi_processor_count, datetime.date.today().isoformat()),
              "# torch %s, CUDA %s, cuDNN %s; peak %g TFLOP/s, bandwidth %g GB/s as given" % (
                  torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
                  a.peak_tflops, a.bandwidth_gbs)]
    lines = header + catalog_lines(rows, peak, bw, backend, launch, a.in_training)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "gpu-measured.yaml"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
