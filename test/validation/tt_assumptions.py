#!/usr/bin/python3
"""How much what the torchtitan table leaves open, or stepsim does not model, moves its rows:

    tt_assumptions.py STEPSIM SOURCE_ROOT [--only PREFIX[,PREFIX...]]

The torchtitan rows (test/validation/data/torchtitan_llama.csv, scenarios tt-*.yaml from
gen.py) map torchtitan's activation checkpointing onto stepsim's recompute settings (per op:
`recompute: op`; per layer: `full` on every second layer), run attention at FlashAttention-2's
rates on H100 (`attention_kernel: fa2`, what PyTorch's SDPA runs there), and estimate the peak
of the 96 GB HBM2e H100 at 500 W (docs/validation.md). This script reruns each distinct
configuration with one of these changed at a time (`stepsim run --set`) and prints a Markdown
table of each row's throughput error (simulated tokens/s per GPU over the published, - 1)
against its eager and, where published, its compiled run:

- recompute none and full (every layer, stopping early as torchtitan's non-reentrant
  checkpoint_wrapper does: `recompute_early_stop`) instead of the mapped setting, and Megatron's
  selective (the attention core only, on every layer: the mapping before recompute: op);
- cuDNN's attention on H100 (`attention_kernel: cudnn`, the catalog's default table), H100 rows
  only;
- the 96 GB part's peak at either end of the interval its source gives, the H100 NVL's 835 and
  the SXM5's 989 TFLOP/s (the matmul curve recomputed for each; Grand Teton rows only);
- the other RMSNorm kernel (`training.norm_kernel`) than the run's config chose, eager rows
  only: fused where it ran the composite ops, composite where it ran torchtitan's
  fused_rmsnorm.

Seconds on 2 cores (every row is small)."""
import csv, json, os, re, subprocess, sys

stepsim, root = sys.argv[1:3]
args = sys.argv[3:]
only = args[args.index("--only") + 1].split(",") if "--only" in args else None
scen = os.path.join(root, "test", "validation", "scenarios")
gpus_dir = os.path.join(root, "topologies", "gpus")
T0, E_MAX = 1.4e-6, 0.6408  # h100-96gb-500w.yaml's matmul curve: t0 and plateau
GPU = {"h100-sxm (96 GB HBM2e 500 W)": "gt", "a100-sxm-80gb": "a100", "h100-sxm": "h100", "b200 (power limited)": "b200"}
LABEL = {"gt": "H100 96GB 500W", "a100": "A100 80GB", "h100": "H100 SXM", "b200": "B200"}
AC = {"none": "noac", "selective (layer)": "sac-layer", "selective (per-op SAC)": "sac-op", "full": "fullac"}


def peak(p):
    """--set values: the 96 GB part at a peak of p TFLOP/s, its matmul curve recomputed."""
    curve = ", ".join("[%g GFLOP, %.4f]" % (f / 1e9, 1 / (p * 1e12 * T0 / f + 1 / E_MAX))
                      for f in (1e7, 1e8, 1e9, 1e10, 1e11, 1e12))
    return ["topology.gpu.peak={bf16: %d TFLOP/s, fp16: %d TFLOP/s}" % (p, p),
            "topology.gpu.matmul_efficiency=[%s]" % curve]


EVERY = "training.recompute_every=1"
def other_norm(name):
    """--set values: an eager row's norms as the other kernel; None for a compiled row."""
    if not name.endswith("-eager"):
        return None
    text = open(os.path.join(scen, name + ".yaml")).read()
    fused = re.search(r"^  norm_kernel: fused", text, re.M) is not None  # the key, not a comment
    return ["training.norm_kernel=" + ("composite" if fused else "fused")]


VARIANTS = [("as mapped", lambda g, n: []),
            ("recompute none", lambda g, n: ["training.recompute=none", EVERY]),
            ("recompute full", lambda g, n: ["training.recompute=full", EVERY,
                                             "training.recompute_early_stop=true"]),
            ("recompute selective", lambda g, n: ["training.recompute=selective", EVERY]),
            ("cuDNN attention", lambda g, n: ["training.attention_kernel=cudnn"] if g in ("gt", "h100") else None),
            ("peak 835", lambda g, n: peak(835) if g == "gt" else None),
            ("peak 989", lambda g, n: peak(989) if g == "gt" else None),
            ("other norm kernel", lambda g, n: other_norm(n))]

with open(os.path.join(root, "test", "validation", "data", "torchtitan_llama.csv")) as f:
    rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
configs = {}  # scenario -> (gpu, rows)
for r in rows:
    tp = int(r["tp"])
    g = GPU[r["gpu"]]
    name = "tt-%s-%s-%sg%s-mb%s-%s%s%s" % (g, r["model"].replace(".", "p"), r["gpus"], "-tp%d" % tp if tp > 1 else "",
                                           r["local_batch"], AC[r["activation_checkpointing"]],
                                           "-async" if "async TP" in r["techniques"] else "",
                                           "" if "compile" in r["techniques"] else "-eager")
    if only is None or any(name.startswith(o) for o in only):
        configs.setdefault(name, (g, []))[1].append(r)

print("| row | published | " + " | ".join(v[0] for v in VARIANTS) + " |")
print("|---|---:|" + "---:|" * len(VARIANTS))
for name, (g, rs) in configs.items():
    tokens = int(rs[0]["global_batch"]) * int(rs[0]["seq_len"])
    n = int(rs[0]["gpus"])
    sim = []
    for label, sets in VARIANTS:
        s = sets(g, name)
        if s is None:
            sim.append(None)
            continue
        cmd = [stepsim, "run", os.path.join(scen, name + ".yaml"), "--json"]
        for x in s:
            cmd += ["--set", x]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("%s: %s" % (" ".join(cmd), p.stderr.strip().splitlines()[-1]))
        d = json.loads(p.stdout)
        sim.append(tokens / (d["step_time_s"] * n))
        print("%s %-16s %.1f tokens/s per GPU" % (name, label, sim[-1]), file=sys.stderr)
    for r in rs:
        pub = float(r["tokens_per_s_per_gpu"])
        cells = ["%+.1f%%" % (100 * (x / pub - 1)) if x else "-" for x in sim]
        print("| %s: %s, %s, %s, AC %s | %.0f | %s |" % (r["table"], r["model"], LABEL[g], r["techniques"],
                                                       r["activation_checkpointing"], pub, " | ".join(cells)))
