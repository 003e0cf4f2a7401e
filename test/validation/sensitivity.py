#!/usr/bin/python3
"""Sensitivity of the simulated step time to each hardware parameter, for two validation rows:

    sensitivity.py STEPSIM SOURCE_ROOT

Each parameter is raised by 10% (a latency or overhead likewise) with --set, one at a time;
the table gives the step-time change per +10%, i.e. about ten times the elasticity. Prints a
Markdown table (docs/calibration.md, "Sensitivity")."""
import json, os, re, subprocess, sys

stepsim, root = sys.argv[1:3]
scen = os.path.join(root, "test", "validation", "scenarios")
sys.path.insert(0, os.path.join(root, "scripts", "gpu"))
import attention  # noqa: E402  (reads the catalog's attention tables)
ROWS = [("a100-7p5b", "Megatron A100, GPT 7.5B, TP 4, mb 16, 128 GPUs", "fp16", 312, 2039, 300, 200),
        ("h100-7p1b", "Megatron-Core H100, GPT 7.1B, TP 2, 96 GPUs", "bf16", 989, 3350, 450, 400)]


def step(path, *sets):
    args = [stepsim, "run", path, "--json"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("stepsim failed: " + p.stderr)
    return json.loads(p.stdout)["step_time_s"]


def attention_tables(row, scale):
    """--set value: the row's GPU attention tables (its catalog file) with every rate x scale."""
    gpu = re.search(r"^  gpu: (\S+)", open(os.path.join(scen, row + ".yaml")).read(), re.M).group(1)
    cat = open(os.path.join(root, "topologies", "gpus", gpu + ".yaml")).read()
    parts = []
    for name in attention.TABLES:
        pts = attention.catalog_table(cat, name)
        parts.append("%s: [%s]" % (name, ", ".join("[%d, %.5f]" % (k, e * scale) for k, e in pts)))
    return "{%s}" % ", ".join(parts)


print("| parameter (+10%) | " + " | ".join(r[1] for r in ROWS) + " |")
print("|---|" + "---:|" * len(ROWS))
params = [
    ("GPU tensor-core peak (every GEMM and attention kernel)", lambda r: ["topology.gpu.peak.%s=%g TFLOP/s" % (r[2], r[3] * 1.1)]),
    ("HBM bandwidth", lambda r: ["topology.gpu.memory_bandwidth=%g GB/s" % (r[4] * 1.1)]),
    ("GEMM per-tile overhead k0 (125)", lambda r: ["topology.gpu.matmul_k_overhead=137.5"]),
    ("fused-attention rate (the A100 row runs unfused attention)",
     lambda r: ["topology.gpu.attention_efficiency=" + attention_tables(r[0], 1.1)] if r[2] == "bf16" else None),
    ("kernel launch overhead (4 us)", lambda r: ["topology.gpu.launch_overhead=4.4 us"]),
    ("compute slowdown under NCCL (0.10)", lambda r: ["topology.gpu.comm_interference=0.11"]),
    ("NVLink/NVSwitch bandwidth", lambda r: ["topology.node.intra.bandwidth=%g GB/s" % (r[5] * 1.1)]),
    ("NIC bandwidth", lambda r: ["topology.node.nics.bandwidth=%g Gb/s" % (r[6] * 1.1)]),
    ("NVSwitch latency (1 us)", lambda r: ["topology.node.intra.latency=1.1 us"]),
    ("switch hop latency (1 us)", lambda r: ["topology.fabric.latency=1.1 us"]),
]
base = {r[0]: step(os.path.join(scen, r[0] + ".yaml")) for r in ROWS}
for name, sets in params:
    cells = []
    for r in ROWS:
        if sets(r) is None:
            cells.append("—")
            continue
        t = step(os.path.join(scen, r[0] + ".yaml"), *sets(r))
        cells.append("%+.2f%%" % (100 * (t - base[r[0]]) / base[r[0]]))
    print("| %s | %s |" % (name, " | ".join(cells)))
print("\nBase step times: " + ", ".join("%s %.4f s" % (r[0], base[r[0]]) for r in ROWS) + ".")
