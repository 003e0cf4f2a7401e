#!/usr/bin/python3
"""How much the unstated choices of the H100 table move its rows:

    assumptions.py STEPSIM SOURCE_ROOT [--jobs N] [--only ROW[,ROW...]]

The Megatron-LM README's H100 table (test/validation/data/megatron_h100_weak_scaling.csv) states
the layout, batch, sequence and overlaps but not the micro-batch, the recomputation, the
dropout or the position embedding; test/validation/scenarios/h100-*.yaml take one choice for
each (docs/validation.md). This script reruns every row with one choice changed at a time
(`stepsim run --set`) and prints a Markdown table of each row's throughput error against
the published rate (docs/validation.md, "Unstated choices"):

- no recompute (training.recompute=none) instead of selective;
- dropout 0.1 (model.dropout=0.1), Megatron's default when a script does not set it;
- learned absolute positions (model.position=learned), Megatron's GPT default, instead of RoPE;
- micro-batch 2 instead of 1 (half as many micro-batches per step);
- the Hopper attention tables at the cuDNN kernel's rates alone, before their scaling to the
  rate in training (docs/calibration.md; test/validation/data/fa3_cudnn_h100_attention.csv).

The error is published step / simulated step - 1, the published step being the row's model
FLOPs (stepsim's, as validate.py counts them for this table) at the published rate, so that
every variant is judged against the same published run. --only takes row names (1.7B,...).
Rows of 1,024 GPUs or more run one at a time (each needs up to ~17 GiB), the others in a
pool of --jobs processes (default 2). The full table takes about 25 minutes on 2 cores."""
import concurrent.futures, csv, json, os, subprocess, sys

stepsim, root = sys.argv[1:3]
args = sys.argv[3:]
jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 2
only = args[args.index("--only") + 1].split(",") if "--only" in args else None
scen = os.path.join(root, "test", "validation", "scenarios")
sys.path.insert(0, os.path.join(root, "scripts", "gpu"))
import attention  # noqa: E402  (the published attention rates)


def alone_tables():
    """--set value: the attention tables at the FlashAttention-3 paper's cuDNN rates alone."""
    keys, t = attention.rates(os.path.join(root, "test", "validation", "data", "fa3_cudnn_h100_attention.csv"))
    return "{%s}" % ", ".join("%s: [%s]" % (n, ", ".join("[%d, %.4f]" % (k, v / 989.0) for k, v in zip(keys, t[n])))
                              for n in attention.TABLES)


VARIANTS = [("as assumed", []),
            ("no recompute", ["training.recompute=none"]),
            ("dropout 0.1", ["model.dropout=0.1"]),
            ("learned positions", ["model.position=learned"]),
            ("micro-batch 2", ["training.micro_batch=2"]),
            ("attention rates alone", ["topology.gpu.attention_efficiency=" + alone_tables()])]

with open(os.path.join(root, "test", "validation", "data", "megatron_h100_weak_scaling.csv")) as f:
    rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))
            if only is None or r["model"] in only]


def run(row, vi):
    path = os.path.join(scen, "h100-%s.yaml" % row["model"].lower().replace(".", "p"))
    cmd = [stepsim, "run", path, "--json"]
    for s in VARIANTS[vi][1]:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if "step(s) done" not in l]
        return row["model"], vi, None, (lines[-1] if lines else "exit %d" % p.returncode)[:120]
    return row["model"], vi, json.loads(p.stdout), None


tasks = [(r, vi) for r in rows for vi in range(len(VARIANTS))]
res = {}
small = [t for t in tasks if int(t[0]["gpus"]) < 1024]
large = [t for t in tasks if int(t[0]["gpus"]) >= 1024]
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    for name, vi, d, why in pool.map(lambda t: run(*t), small):
        res[name, vi] = (d, why)
        print("%-6s %-22s %s" % (name, VARIANTS[vi][0], "%.4f s" % d["step_time_s"] if d else why), file=sys.stderr)
for t in large:
    name, vi, d, why = run(*t)
    res[name, vi] = (d, why)
    print("%-6s %-22s %s" % (name, VARIANTS[vi][0], "%.4f s" % d["step_time_s"] if d else why), file=sys.stderr)

print("| row | " + " | ".join(v[0] for v in VARIANTS) + " |")
print("|---|" + "---:|" * len(VARIANTS))
errs = {vi: [] for vi in range(len(VARIANTS))}
for r in rows:
    base, why = res[r["model"], 0]
    if base is None:
        print("| %s | not run: %s |" % (r["model"], why))
        continue
    # the published step: the row's model FLOPs (stepsim's count) at the published rate
    pub = base["step_time_s"] * base["tflops_per_gpu"] / float(r["tflops_per_gpu"])
    cells = []
    for vi in range(len(VARIANTS)):
        d, why = res[r["model"], vi]
        if d is None or d["status"] != "ok":
            cells.append("does not fit" if d else "fails")
            continue
        e = 100 * (pub / d["step_time_s"] - 1)
        errs[vi].append(abs(e))
        cells.append("%+.1f%%" % e)
    print("| %s | %s |" % (r["model"], " | ".join(cells)))
print("| **mean / max** | %s |" % " | ".join(
    "%.1f%% / %.1f%%" % (sum(errs[vi]) / len(errs[vi]), max(errs[vi])) if errs[vi] else "-"
    for vi in range(len(VARIANTS))))
