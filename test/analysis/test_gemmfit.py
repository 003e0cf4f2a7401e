#!/usr/bin/python3
"""The GEMM fit behind the catalog's matmul keys (scripts/gpu/gemmfit.py):

    test_gemmfit.py STEPSIM SOURCE_ROOT

1. It recovers the parameters of data made by its own model: GEMMs of measure.py's shapes
   timed as (t0 + F / (P e)) (1 + k0 / k) with t0 = 1.4 us, e = 0.8, k0 = 100 and no launch
   come back as those values (to 1e-4 relative), and as k0 = 0 when made without it.
2. The H100 catalog entry holds the fit on the shipped XLA table: fit_gemm.py's t0 and k0
   round to the catalog's (docs/calibration.md: 1.36 us -> 1.4, 124.5 -> 125), so a change to
   the table, the model or the catalog that leaves them apart fails here. The same on XLA's
   sm_100 table (B200, at its 2250 TFLOP/s peak and 8 TB/s): 1.38 us -> 1.4 and 127.8, within
   3 of the b200 and gb200 entries' 125 (one Blackwell die; docs/calibration.md).
3. measure.py's post-processing (what a lent GPU's run ends with) turns timings made by the
   model into catalog keys that give the model back (k0 100, the curve at 1 TFLOP), and a GPU
   file built from them loads and runs in stepsim; with an in-training ratio the plateau and
   the attention tables scale by it, t0 and k0 stay.
4. The Hopper attention tables (h100-sxm, h200-sxm, h800-sxm, and h100-96gb-500w, the same
   fractions of its own estimated peak) are the FlashAttention-3
   paper's cuDNN figures (test/validation/data/fa3_cudnn_h100_attention.csv) over the 989
   TFLOP/s peak times the in-training ratio, the A100 plateau over its MAMF efficiency
   (0.697 / 0.87 = 0.8011, docs/calibration.md), the causal backward being the unmasked one
   times the forward's causal / unmasked ratio: e.g. the forward at 4k keys,
   518 / 989 x 0.8011 = 0.420, to the catalog's three digits.
6. The A100 attention tables (a100-sxm-80gb, a100-sxm-40gb) are the FlashAttention-2 paper's
   A100 figure (test/validation/data/fa2_a100_attention.csv: forward + backward only) over
   the 312 TFLOP/s peak at the kernels' rate alone, both passes at the pair's rate:
   FlashAttention-2 causal at 4k keys, 173 / 312 = 0.554; its unmasked tables start at 1k
   (the 512 label is hidden); the head-dim factor is the causal rate at 64 over 128 averaged
   over 4k-16k, FlashAttention-2's (156/173 + 165/182 + 171/189) / 3 = 0.904; FlashAttention
   and its Triton implementation the same way under attention_kernels, and the default
   kernel is named fa2."""
import os, re, subprocess, sys, tempfile

stepsim, root = sys.argv[1:3]
sys.path.insert(0, os.path.join(root, "scripts", "gpu"))
import gemmfit  # noqa: E402
import measure  # noqa: E402  (its shape list; torch is imported only in its main())
import attention  # noqa: E402

fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL: " + what)


P = 989e12
shapes = measure.gemm_shapes(False)
F = [2.0 * m * n * k for _, m, n, k in shapes]
K = [float(k) for _, m, n, k in shapes]
sel = [i for i, f in enumerate(F) if f >= 1e9]
for k0 in (100.0, 0.0):
    t = [(1.4e-6 + F[i] / (P * 0.8)) * (1 + k0 / K[i]) for i in sel]
    p = gemmfit.fit([F[i] for i in sel], [K[i] for i in sel], t, [0.0] * len(sel), P, 0.0, free_k=k0 > 0)
    check(abs(p[0] - 1.4) < 1.4e-4 and abs(p[1] - 0.8) < 0.8e-4 and abs(p[2] - k0) < max(k0, 1) * 1e-4,
          "recovers t0 1.4 us, e 0.8, k0 %g: got %s" % (k0, p))
    # the catalog curve of the fit: 1 / (P t0 / F + 1 / e) at 1 TFLOP = 1 / (1.3846 + 1.25)
    c = gemmfit.curve(p, P)
    check(abs(c[-1][1] - 1 / (P * 1.4e-6 / 1e12 + 1 / 0.8)) < 1e-4, "curve at 1 TFLOP: %s" % c[-1][1])

out = subprocess.run([sys.executable, os.path.join(root, "test", "validation", "fit_gemm.py")],
                     capture_output=True, text=True, check=True).stdout
m = re.search(r"with k0\s+t0 = ([0-9.]+) us, e = ([0-9.]+), k0 = ([0-9.]+)", out)
check(m is not None, "fit_gemm.py prints the fit: " + out[:200])
cat = open(os.path.join(root, "topologies", "gpus", "h100-sxm.yaml")).read()
k0_cat = float(re.search(r"^matmul_k_overhead: ([0-9.]+)", cat, re.M).group(1))
if m:
    t0, k0 = float(m.group(1)), float(m.group(3))
    check(round(t0, 1) == 1.4, "fitted t0 %.2f us rounds to the catalog's 1.4" % t0)
    check(abs(k0 - k0_cat) <= 2.5, "fitted k0 %.1f vs the catalog's %g" % (k0, k0_cat))
out = subprocess.run([sys.executable, os.path.join(root, "test", "validation", "fit_gemm.py"),
                      os.path.join(root, "test", "validation", "data", "xla_sm100_gemm.csv"),
                      "--peak", "2250", "--bandwidth", "8000", "--sms", "148", "--memory-curve",
                      os.path.join(root, "topologies", "gpus", "b200.yaml")],
                     capture_output=True, text=True, check=True).stdout
m = re.search(r"with k0\s+t0 = ([0-9.]+) us, e = ([0-9.]+), k0 = ([0-9.]+)", out)
check(m is not None, "fit_gemm.py prints the sm_100 fit: " + out[:200])
for gpu in ("b200", "gb200"):
    cat = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
    k0_cat = float(re.search(r"^matmul_k_overhead: ([0-9.]+)", cat, re.M).group(1))
    if m:
        t0, k0 = float(m.group(1)), float(m.group(3))
        check(round(t0, 1) == 1.4, "sm_100 fitted t0 %.2f us rounds to 1.4 (%s)" % (t0, gpu))
        check(abs(k0 - k0_cat) <= 3, "sm_100 fitted k0 %.1f vs %s's %g" % (k0, gpu, k0_cat))

# 3. measure.py's catalog lines from synthetic timings: GEMMs as above (k0 = 100), copies at
# 0.9 of 3350 GB/s after a 1 us fixed cost, attention at 0.5 of peak, a 5 us launch gap.
BW = 3350e9
rows = []
for (_, m, n, k), f in zip(shapes, F):
    rows.append(dict(kind="matmul", k=k, flops=f, bytes=2.0 * (m * k + k * n + m * n),
                     seconds=(1.4e-6 + f / (P * 0.8)) * (1 + 100 / k)))
for b in (1e5, 1e6, 1e7, 1e8, 1e9):
    rows.append(dict(kind="memory", flops=0.0, bytes=b, eff=1 / (BW * 1e-6 / b + 1 / 0.9)))
for name in ("forward", "backward", "forward_unmasked", "backward_unmasked"):
    for s in (512, 4096):
        rows.append(dict(kind="attention", name=name, seq=s, eff=0.5))
# the composite RMSNorm timed as stepsim times it at plateau 0.6 with the 5 us launch below:
# 36 bytes an element in 8 kernels forward, 76 in 12 backward, 2,048 x H elements
for H in (1024, 4096, 16384):
    for per, n in ((36, 8), (76, 12)):
        B = per * 2048.0 * H
        rows.append(dict(kind="eager", name="rms_norm", bytes=B, kernels=n,
                         seconds=float(gemmfit.eager_model(0.6, BW, B, n, 5e-6))))
lines = measure.catalog_lines(rows, P, BW, "CUDNN_ATTENTION", 5e-6)
text = "\n".join(lines) + "\n"
k0 = re.search(r"^matmul_k_overhead: ([0-9.]+)", text, re.M)
check(k0 is not None and abs(float(k0.group(1)) - 100) <= 0.5, "measure.py k0: " + text)
top = re.search(r"\[1000 GFLOP, ([0-9.]+)\]", text)
check(top is not None and abs(float(top.group(1)) - 1 / (P * 1.4e-6 / 1e12 + 1 / 0.8)) < 1e-3,
      "measure.py curve at 1 TFLOP: " + text)
check("launch_overhead: 5.0 us" in text, "launch line: " + text)
# the eager curve: its fit gives the plateau back, sampled as 1 / (bw t0 / b + 1 / 0.6):
# at 1 GB 1 / (3350e9 x 1e-6 / 1e9 + 1 / 0.6) = 1 / (0.00335 + 1.6667) = 0.5988
eg = re.search(r"^memory_efficiency_eager: .*\[1000 MB, ([0-9.]+)\]\]  # s ([0-9.]+)", text, re.M)
check(eg is not None and float(eg.group(2)) == 0.6 and abs(float(eg.group(1)) - 0.5988) < 1e-4,
      "measure.py eager curve: " + text)
# --in-training 0.5 halves the plateau (t0, k0 kept) and the attention tables: at 1 TFLOP
# 1 / (P 1.4e-6 / 1e12 + 1 / (0.8 x 0.5)) = 1 / (1.3846 + 2.5) = 0.2574; attention 0.5 x 0.5
half = "\n".join(measure.catalog_lines(rows, P, BW, "CUDNN_ATTENTION", 5e-6, 0.5))
top = re.search(r"\[1000 GFLOP, ([0-9.]+)\]", half)
check(top is not None and abs(float(top.group(1)) - 1 / (P * 1.4e-6 / 1e12 + 1 / 0.4)) < 1e-3,
      "measure.py --in-training 0.5 curve at 1 TFLOP: " + half)
check(re.search(r"^matmul_k_overhead: 100\b", half, re.M) is not None, "k0 kept: " + half)
check(half.count("[512, 0.250]") == 4 and half.count("[4096, 0.250]") == 4, "attention x 0.5: " + half)
with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(root, "test", "cli", "data")
    open(os.path.join(tmp, "gpu.yaml"), "w").write(
        "name: measured\nmemory: 80 GiB\nmemory_bandwidth: 3350 GB/s\n"
        "peak: {bf16: 989 TFLOP/s, fp32: 67 TFLOP/s}\n" + text)
    open(os.path.join(tmp, "pair.yaml"), "w").write(
        open(os.path.join(data, "ideal-pair.yaml")).read().replace("gpu: ideal-gpu.yaml", "gpu: gpu.yaml"))
    open(os.path.join(tmp, "run.yaml"), "w").write(
        open(os.path.join(data, "single.yaml")).read()
        .replace("model: tiny-gpt.yaml", "model: %s" % os.path.join(data, "tiny-gpt.yaml"))
        .replace("topology: ideal-pair.yaml", "topology: pair.yaml"))
    r = subprocess.run([stepsim, "run", os.path.join(tmp, "run.yaml"), "--json"], capture_output=True, text=True)
    check(r.returncode == 0 and '"step_time_s"' in r.stdout, "a GPU file from measure.py runs: " + r.stderr)

# 4. the Hopper attention tables from their source and the in-training ratio
a100 = open(os.path.join(root, "topologies", "gpus", "a100-sxm-80gb.yaml")).read()
plateau = float(re.search(r"\[1000 GFLOP, ([0-9.]+)\]", a100).group(1))
ratio = round(plateau, 3) / 0.87  # the A100 MAMF, 271.2 of 312 TFLOP/s (calibration.md)
# cuDNN's tables (attention_efficiency), FlashAttention-2's and -3's (attention_kernels)
for kernel in ("", "fa2", "fa3"):
    keys, src = attention.rates(os.path.join(root, "test", "validation", "data", "fa3_cudnn_h100_attention.csv"), kernel)
    for gpu in ("h100-sxm", "h200-sxm", "h800-sxm", "h100-96gb-500w"):
        cat = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
        for name, tflops in src.items():
            got = attention.catalog_table(cat, name, kernel)
            what = "%s %s" % (gpu, kernel or "cudnn")
            check(got is not None, "%s has an attention %s table" % (what, name))
            if got:
                want = [(k, t / 989.0 * ratio) for k, t in zip(keys, tflops)]
                check(len(got) == len(want) and all(g[0] == w[0] and abs(g[1] - w[1]) <= 6e-4 for g, w in zip(got, want)),
                      "%s attention %s: %s, want %s" % (what, name, got, [(k, round(v, 3)) for k, v in want]))
# 5. the head-dim factors: the kernels' rates at head dim 64 and 256 over 128 in the same
# figures, averaged over 4k-16k keys (attention.head_dim_factors), in each Hopper file
csv_path = os.path.join(root, "test", "validation", "data", "fa3_cudnn_h100_attention.csv")
for kernel in ("", "fa2", "fa3"):
    want = attention.head_dim_factors(csv_path, kernel)
    for gpu in ("h100-sxm", "h200-sxm", "h800-sxm", "h100-96gb-500w"):
        cat = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
        for name, pts in want.items():
            got = attention.catalog_head_dim(cat, name, kernel)
            check(got is not None and len(got) == len(pts) and
                  all(g[0] == w[0] and abs(g[1] - w[1]) <= 6e-4 for g, w in zip(got, pts)),
                  "%s %s head_dim %s: %s, want %s" % (gpu, kernel or "cudnn", name, got,
                                                      [(h, round(f, 3)) for h, f in pts]))
# 6. the A100 tables: the FlashAttention-2 figure's forward + backward rates over the peak,
# read from the CSV here (not through attention.py), both passes at the pair's rate
with open(os.path.join(root, "test", "validation", "data", "fa2_a100_attention.csv")) as f:
    rows = [l.strip().split(",") for l in f if l.strip() and not l.startswith("#")]
cols = [int(x) for x in rows[0][1:]]
fig = {r[0]: [float(x) if x else None for x in r[1:]] for r in rows[1:]}
check(abs(fig["fa2_causal_128"][cols.index(4096)] / 312 - 0.554) < 5e-4, "FA2 causal 4k: 173 / 312")
for gpu in ("a100-sxm-80gb", "a100-sxm-40gb"):
    cat = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
    check(re.search(r"^attention_kernel: fa2$", cat, re.M) is not None, "%s names fa2" % gpu)
    for kernel in ("fa2", "fa1", "fa_triton"):
        for name in attention.TABLES:
            row = fig["%s_%s_128" % (kernel, "unmasked" if "unmasked" in name else "causal")]
            want = [(k, v / 312) for k, v in zip(cols, row) if v is not None]
            got = attention.catalog_table(cat, name, "" if kernel == "fa2" else kernel)
            check(got is not None and len(got) == len(want) and
                  all(g[0] == w[0] and abs(g[1] - w[1]) <= 6e-4 for g, w in zip(got, want)),
                  "%s %s %s: %s, want %s" % (gpu, kernel, name, got, [(k, round(v, 3)) for k, v in want]))
        big = [i for i, k in enumerate(cols) if k >= 4096]
        f64 = sum(fig[kernel + "_causal_64"][i] / fig[kernel + "_causal_128"][i] for i in big) / len(big)
        for name in ("forward", "backward"):
            got = attention.catalog_head_dim(cat, name, "" if kernel == "fa2" else kernel)
            check(got is not None and len(got) == 2 and got[0][0] == 64 and abs(got[0][1] - f64) <= 6e-4
                  and got[1] == (128, 1.0), "%s %s head_dim %s: %s, want 64 -> %.3f" % (gpu, kernel, name, got, f64))
sys.exit(1 if fails else 0)
