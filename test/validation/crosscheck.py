#!/usr/bin/python3
"""Cross-checks outside the validation tables (docs/validation.md): Llama 3 405B on H100, and
PyTorch FSDP on 128 A100s and 96 H100s (IBM's fms-fsdp):

    crosscheck.py STEPSIM SOURCE_ROOT

The Llama 3 paper's Table 4 (test/validation/data/llama3_table4.csv) gives three
configurations of Llama 3 405B pre-training with their TFLOP/s per GPU, but not the number
of virtual pipeline stages, which moves the result most. Each row runs with one data-parallel
replica simulated (`simulation.symmetry: dp`, within 0.2-0.7% of the full run here,
docs/performance.md) in plain 1F1B and interleaved with 2 and 4 virtual stages, from the
shipped scenarios: scenarios/bench/llama3.1-405b-16384xh100.yaml (8,192 tokens; the
8,192-GPU row with 1,024 nodes and DP 64) and scenarios/llama3.1-405b-131k-16384xh100.yaml.
Prints a Markdown table of TFLOP/s per GPU (stepsim's count, attention in full), the error
against the paper, and the memory verdict.

Then IBM's fms-fsdp runs (test/validation/data/ibm_fms_fsdp.csv: Llama 2 7B to 70B with PyTorch
FSDP1 on 128 A100s and 96 H100s, tokens/s per GPU), from gen.py's scenarios ibm-*.yaml: a
second Markdown table of the simulated tokens/s per GPU, the error, the exposed communication
and the peak memory. Last the FlashAttention-2 paper's own training runs (its Table 1: GPT3-2.7B
on 8 A100 80GB at 2k and 8k tokens), from gen.py's fa2-gpt3-2p7b-*.yaml: TFLOP/s per GPU by
the paper's count (Megatron-LM's formula times 3/4, as flash-attn's training README states). About 2 minutes on 2 cores in all."""
import csv, json, os, subprocess, sys

stepsim, root = sys.argv[1:3]
with open(os.path.join(root, "test", "validation", "data", "llama3_table4.csv")) as f:
    rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
SCHEDULES = [("1F1B", ["parallel.pipeline.schedule=1f1b", "parallel.pipeline.virtual_stages=1"]),
             ("v 2", ["parallel.pipeline.schedule=interleaved", "parallel.pipeline.virtual_stages=2"]),
             ("v 4", ["parallel.pipeline.schedule=interleaved", "parallel.pipeline.virtual_stages=4"])]


def setup(r):
    """The scenario file and --set overrides that run a Table 4 row."""
    if int(r["seq_len"]) == 131072:
        return os.path.join(root, "scenarios", "llama3.1-405b-131k-16384xh100.yaml"), []
    gpus, dp = int(r["gpus"]), int(r["dp"])
    return (os.path.join(root, "scenarios", "bench", "llama3.1-405b-16384xh100.yaml"),
            ["topology.nodes=%d" % (gpus // 8), "parallel.dp=%d" % dp,
             "training.global_batch=%d" % (dp * int(r["batch_per_dp"]))])


print("| GPUs | TP CP PP DP | seq | published | " + " | ".join(s[0] for s in SCHEDULES) + " |")
print("|---:|---|---:|---:|" + "---:|" * len(SCHEDULES))
for r in rows:
    path, sets = setup(r)
    cells = []
    for _, sched in SCHEDULES:
        cmd = [stepsim, "run", path, "--json", "--steps", "1", "--set", "simulation.symmetry=dp"]
        for s in sets + sched:
            cmd += ["--set", s]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("%s: %s" % (" ".join(cmd), p.stderr.strip().splitlines()[-1]))
        d = json.loads(p.stdout)
        pub = float(r["tflops_per_gpu"])
        cell = "%.0f (%+.1f%%)" % (d["tflops_per_gpu"], 100 * (d["tflops_per_gpu"] / pub - 1))
        if d["status"] != "ok":
            cell += ", needs %.0f GiB" % (d["peak_mem_bytes"] / 2**30)
        cells.append(cell)
        print("%s %s %s: %s" % (r["gpus"], r["seq_len"], _, cell), file=sys.stderr)
    print("| %s | %s %s %s %s | %s | %s | %s |" % (
        format(int(r["gpus"]), ","), r["tp"], r["cp"], r["pp"], r["dp"],
        format(int(r["seq_len"]), ","), r["tflops_per_gpu"], " | ".join(cells)))
    sys.stdout.flush()


with open(os.path.join(root, "test", "validation", "data", "ibm_fms_fsdp.csv")) as f:
    fms = list(csv.DictReader(l for l in f if not l.startswith("#")))
print()
print("| GPUs | model | sharding | checkpointing | published | simulated | exposed comm (s) | peak (GiB) |")
print("|---|---|---|---|---:|---:|---:|---:|")
for r in fms:
    gpu = "a100" if r["gpu"].startswith("a100") else "h100"
    path = os.path.join(root, "test", "validation", "scenarios", "ibm-%s-%s.yaml" % (gpu, r["model"]))
    p = subprocess.run([stepsim, "run", path, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: %s" % (path, p.stderr.strip().splitlines()[-1]))
    d = json.loads(p.stdout)
    tps = d["tokens_per_s"] / int(r["gpus"])
    pub = float(r["tokens_per_s_per_gpu"])
    cell = "%.0f (%+.1f%%)%s" % (tps, 100 * (tps / pub - 1), "" if d["status"] == "ok" else ", " + d["status"])
    print("%s %s: %s" % (gpu, r["model"], cell), file=sys.stderr)
    print("| %s %s | %s | %s | %s | %.0f | %s | %.2f | %.1f |" % (
        r["gpus"], gpu.upper(), r["model"], r["sharding"], r["activation_checkpointing"], pub, cell,
        sum(d["exposed_comm_s"].values()), d["peak_mem_bytes"] / 2**30))
    sys.stdout.flush()

print()
print("| seq | published (TFLOP/s per GPU) | simulated |")
print("|---:|---:|---:|")
for seq, pub in ((2048, 205.0), (8192, 225.0)):
    path = os.path.join(root, "test", "validation", "scenarios", "fa2-gpt3-2p7b-s%d.yaml" % seq)
    p = subprocess.run([stepsim, "run", path, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: %s" % (path, p.stderr.strip().splitlines()[-1]))
    d = json.loads(p.stdout)
    # the paper's count per token (flash-attn's training/README.md: Megatron-LM's formula,
    # Narayanan et al. 2021 Section 5.1, times 3/4 for no recomputation): 72 l h^2 + 12 l h s
    # + 4.5 h V, with l = 32, h = 2560, V = 50257
    tflops = d["tokens_per_s"] / 8 * (72 * 32 * 2560**2 + 12 * 32 * 2560 * seq + 4.5 * 2560 * 50257) / 1e12
    print("fa2 gpt3-2.7b %d: %.1f (%+.1f%%)" % (seq, tflops, 100 * (tflops / pub - 1)), file=sys.stderr)
    print("| %s | %.0f | %.0f (%+.1f%%) |" % (format(seq, ","), pub, tflops, 100 * (tflops / pub - 1)))
