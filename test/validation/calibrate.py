#!/usr/bin/python3
"""Calibrates a GPU's matmul plateau against timed transformer layers (by default the A100
against a published layer benchmark):

    calibrate.py STEPSIM SOURCE_ROOT [--gpu NAME] [--data CSV] [--scenarios PREFIX] [--check]

--gpu: the catalog entry whose curve is fitted (topologies/gpus/NAME.yaml; default
a100-sxm-80gb). --data: a CSV with columns experiment, forward_ms, backward_ms, one row per
timed layer configuration (default test/validation/data/korthikanti2022_layer.csv).
--scenarios: the path prefix of the scenarios that run those configurations, PREFIX1.yaml,
PREFIX2.yaml, ... in the CSV's row order (default test/validation/scenarios/k2022-layer-).
To calibrate your own GPU: time one layer's forward and backward in a few configurations
(CUDA events around one layer of your model), write one scenario per configuration with
that GPU and the CSV, and run this. --check (the validation suite) fails when the fit moves
more than 0.005 from the e_max the catalog's curve has, i.e. when a model change has left
the shipped calibration stale.

Korthikanti et al. 2022 (arXiv:2205.05198) Table 4 times the forward and the backward pass
of one transformer layer of a 22B GPT (TP 8 on one DGX A100 80GB, micro-batch 4) in five
configurations: with and without sequence parallelism, with no, selective and full
recomputation (test/validation/data/korthikanti2022_layer.csv; the scenarios are
test/validation/scenarios/k2022-layer-N.yaml, written by gen.py). The layer's time is mostly
its GEMMs, and the five experiments vary what else runs (norms, dropouts, softmax, TP
collectives, recomputation) around them, so they pin down the one parameter they depend on
most: the efficiency e_max that Megatron's GEMMs sustain during training.

The catalog's matmul curve has the form docs/calibration.md gives for every GPU,

    e(F) = 1 / (P t0 / F + 1 / e_max)      (F: FLOPs of the GEMM, P: dense fp16 peak)

with t0 = 1.4 us (fitted with the per-tile overhead on XLA's sm_90 table; the GPU's
matmul_k_overhead k0 stays as the catalog has it: a GEMM over inner dimension k runs at
k / (k + k0) of e(F)). For each candidate e_max this script writes that curve into the scenario
(--set topology.gpu.matmul_efficiency=...), simulates the five layers with a timeline, reads
the middle layer's forward and backward spans on rank 0 (first kernel start to last kernel
end, the TP collectives between them included) and scores sum(log(simulated / published))^2
over the ten times. A golden-section search finds the minimum; the script prints the fitted
curve for topologies/gpus/a100-sxm-*.yaml and the per-experiment table for
docs/calibration.md. It needs h5py (Debian's /usr/bin/python3)."""
import csv, math, os, re, subprocess, sys, tempfile

import h5py

stepsim, root = sys.argv[1:3]
opts = sys.argv[3:]
here = os.path.dirname(os.path.abspath(__file__))


def opt(name, default):
    return opts[opts.index(name) + 1] if name in opts else default


gpu = opt("--gpu", "a100-sxm-80gb")
data = opt("--data", os.path.join(here, "data", "korthikanti2022_layer.csv"))
prefix = opt("--scenarios", os.path.join(here, "scenarios", "k2022-layer-"))
T0 = 1.4e-6                                              # s, the small-GEMM latency term
POINTS = (0.01e9, 0.1e9, 1e9, 10e9, 100e9, 1000e9)       # FLOPs, the catalog's sample points

catalog = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
with open(data) as f:
    rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
if not rows:
    sys.exit("%s: no rows" % data)
scenarios = ["%s%d.yaml" % (prefix, i + 1) for i in range(len(rows))]
for sc in scenarios:
    if not os.path.exists(sc):
        sys.exit("%s: missing (one scenario per row of %s)" % (sc, data))
    if not re.search(r"^  gpu: %s\s*$" % re.escape(gpu), open(sc).read(), re.M):
        sys.exit("%s: its topology does not use gpu %s" % (sc, gpu))
precision = re.search(r"^  precision: (\w+)", open(scenarios[0]).read(), re.M)
dtype = precision.group(1) if precision and precision.group(1) in ("fp16", "bf16") else "bf16"
PEAK = float(re.search(r"%s: ([0-9.]+) TFLOP/s" % dtype, catalog).group(1)) * 1e12
CURRENT = re.search(r"^matmul_efficiency: (.*)$", catalog, re.M).group(1)


def curve(e_max):
    pts = ["[%g GFLOP, %.4g]" % (F / 1e9, 1 / (PEAK * T0 / F + 1 / e_max)) for F in POINTS]
    return "[" + ", ".join(pts) + "]"


def layer_times(scenario, matmul):
    """(forward, backward) of the middle layer on rank 0, in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.h5")
        subprocess.run([stepsim, "run", scenario, "--set", "simulation.timeline=true",
                        "--set", "topology.gpu.matmul_efficiency=" + matmul, "-o", out],
                       check=True, capture_output=True)
        with h5py.File(out, "r") as f:
            run = list(f["runs"])[0]
            t = f["runs/%s/timeline" % run][:]
    layers = int(re.search(r"^  layers: (\d+)", open(scenario).read(), re.M).group(1))
    t = t[(t["rank"] == 0) & (t["layer"] == layers // 2) & (t["kind"] == b"compute")]
    span = []
    for ph in (b"fwd", b"bwd"):
        x = t[t["phase"] == ph]
        span.append((x["end_s"].max() - x["start_s"].min()) * 1e3)
    return span


def simulate(e_max):
    m = curve(e_max) if e_max else CURRENT
    return [layer_times(sc, m) for sc in scenarios]


def score(sims):
    s = 0.0
    for r, (fw, bw) in zip(rows, sims):
        s += math.log(fw / float(r["forward_ms"])) ** 2 + math.log(bw / float(r["backward_ms"])) ** 2
    return s


lo, hi = 0.40, 0.95
g = (math.sqrt(5) - 1) / 2
a, b = hi - g * (hi - lo), lo + g * (hi - lo)
fa, fb = score(simulate(a)), score(simulate(b))
while hi - lo > 0.001:
    if fa < fb:
        hi, b, fb = b, a, fa
        a = hi - g * (hi - lo)
        fa = score(simulate(a))
    else:
        lo, a, fa = a, b, fb
        b = lo + g * (hi - lo)
        fb = score(simulate(b))
best = round((lo + hi) / 2, 3)
before, after = simulate(None), simulate(best)

print("e_max = %.3f (%.0f TFLOP/s on the largest GEMMs)" % (best, best * PEAK / 1e12))
print("matmul_efficiency: " + curve(best))
print()
print("| experiment | published fwd / bwd (ms) | catalog now | fitted | error fwd / bwd |")
print("|---|---|---|---|---|")
errs = []
for r, (f0, b0), (f1, b1) in zip(rows, before, after):
    pf, pb = float(r["forward_ms"]), float(r["backward_ms"])
    ef, eb = 100 * (f1 - pf) / pf, 100 * (b1 - pb) / pb
    errs += [abs(ef), abs(eb)]
    print("| %s | %.1f / %.1f | %.2f / %.2f | %.2f / %.2f | %+.1f%% / %+.1f%% |" % (
        r["experiment"], pf, pb, f0, b0, f1, b1, ef, eb))
print()
print("mean absolute error %.1f%% (max %.1f%%) over %d times; the catalog's curve now: "
      "%s" % (sum(errs) / len(errs), max(errs), len(errs), CURRENT))
if "--check" in opts:
    # the catalog's e_max, from its largest sample: e(F) = 1 / (P t0 / F + 1 / e_max)
    F, e_F = POINTS[-1], float(re.findall(r"([0-9.]+)\]", CURRENT)[-1])
    shipped = 1 / (1 / e_F - PEAK * T0 / F)
    print("catalog e_max %.3f, fit %.3f" % (shipped, best))
    sys.exit(0 if abs(shipped - best) <= 0.005 else 1)
