#!/usr/bin/python3
"""Cross-check: BigScience's Megatron-DeepSpeed runs on Jean Zay's A100s
(test/validation/data/bigscience_a100.csv): BLOOM-176B's training (384 and 192 GPUs, TP 4
PP 12), its re-layouts on 24 and 36 nodes, and the February 2022 layout benchmarks BLOOM's
shape was chosen from, rerun with stepsim. Not a calibration input: nothing in the GPU
catalog is fitted to these rows; this script prints how far the model is from them.

    /usr/bin/python3 test/validation/crosscheck_bigscience.py build/sim/cli/stepsim .
                                                                   [--summary]

Each row becomes a scenario in a temporary directory (deleted afterwards), run with
`stepsim run --json` (one data-parallel replica simulated, `simulation.symmetry: dp`); the
table goes to stdout (markdown), progress to stderr; --summary prints one JSON object
instead (mean absolute error, signed mean, largest error and row count over the rows with
a published time). About a minute on 2 cores.

The mapping (docs/validation.md, "Cross-checks outside the tables", says the same):
- the model: BLOOM's architecture at each row's shape (GeLU MLP of 4h, LayerNorm, biases,
  q, k and v one tensor, tied embeddings, ALiBi: `position: alibi`, the embedding's
  LayerNorm: `embed_norm`, --embed-layernorm), vocabulary 250,880, dropout 0.1 (the scripts
  pass no dropout flag: Megatron's default);
- Megatron-LM's kernels of 2022 (no flash attention: the fused scale-mask-softmax; Apex's
  LayerNorm; the jit-fused bias-GeLU and bias-dropout-add), full recompute re-running whole
  layers, TP without sequence parallelism, its input-gradient all-reduce not beside the
  weight-gradient GEMM (`tp_grad_overlap: false`: CUDA_LAUNCH_BLOCKING=1 makes each launch
  wait for the kernel before it);
- DeepSpeed's pipeline engine: 1F1B, the layers split as 'type:transformer|embedding' splits
  them (`pipeline.stage_layers`), the gradients reduced after the pipeline's last backward
  (`ddp.overlap: false`) in buckets of 5e8 elements;
- DeepSpeed's BF16_Optimizer: fp32 gradients reduced (`grad_dtype: fp32`: DeepSpeed of 2022),
  accumulated from each micro-batch's bf16 gradients by a cast and an add per tensor and
  all-reduced whole (`grad_accumulation: cast_add`), the optimizer's fp32 state sharded over
  data parallelism (`zero: 1`);
- the cluster: 8 A100 80GB per node on NVSwitch, 4 x 100 Gb/s Omni-Path per node (the BLOOM
  paper; the repository says "4 OmniPath links"), the fabric taken as non-blocking.
Not modelled: CUDA_LAUNCH_BLOCKING's host waits (the run's README: "a tiny impact or no
impact at all"), --layernorm-tp-auto-sync (the reshaping rows), data loading.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

TEMPLATE = """name: {name}
topology:
  name: jean-zay-a100-x{nodes}
  gpu: a100-sxm-80gb
  nodes: {nodes}
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: 300 GB/s, latency: 1 us, sharp: false}}
    pcie: {{gen: 4, lanes: 16, switches: 4, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 204.8 GB/s, socket_link: 144 GB/s}}
    nics: {{count: 4, bandwidth: 100 Gb/s, latency: 2 us}}
  fabric: {{kind: fat-tree, oversubscription: 1, latency: 1 us, radix: 48}}
model:
  name: bloom-{hidden}x{layers}
  layers: {layers}
  hidden: {hidden}
  heads: {heads}
  ffn: {ffn}
  vocab: 250880
  activation: gelu
  norm: layernorm
  position: alibi
  embed_norm: true
  dropout: 0.1
  tied_embeddings: true
  bias: true
  qkv_fused: true
training:
  seq_len: 2048
  global_batch: {gbs}
  micro_batch: {mbs}
  precision: bf16
  grad_dtype: fp32
  grad_accumulation: cast_add
  recompute: full
  flash_attention: false
parallel:
  tp: {tp}
  pp: {pp}
  dp: {dp}
  zero: 1
  tp_grad_overlap: false
  ddp: {{overlap: false, bucket: 2000000000 B}}
  pipeline: {{schedule: 1f1b, stage_layers: [{stages}]}}
simulation:
  steps: 1
  timeline: false
  symmetry: dp
"""

VOCAB = 250880
SEQ = 2048


def stage_layers(layers, pp):
    """'type:transformer|embedding': layers + 2 items split evenly, the embeddings one each."""
    items = layers + 2
    if items % pp:
        raise SystemExit(f"{layers} layers + 2 embeddings do not split over {pp} stages")
    k = items // pp
    return [k - 1] + [k] * (pp - 2) + [k - 1]


def hardware_tflops(r, step):
    """Megatron-DeepSpeed's logged TFLOPs (PR #251, recompute factor 4) for a step time."""
    B, L, h = int(r["global_batch"]), int(r["layers"]), int(r["hidden"])
    flops = 24 * 4 * B * SEQ * L * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * L * h))
    return flops / (step * int(r["gpus"]) * 1e12)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    stepsim, root = sys.argv[1], sys.argv[2]
    summary = "--summary" in sys.argv[3:]
    with open(os.path.join(root, "test/validation/data/bigscience_a100.csv")) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(rows):
            L, h, pp = int(r["layers"]), int(r["hidden"]), int(r["pp"])
            if r["step_s"]:
                logged = hardware_tflops(r, float(r["step_s"]))
                if abs(logged / float(r["tflops"]) - 1) > 0.005:
                    raise SystemExit(f"row {r['row']}: the configuration gives {logged:.2f} "
                                     f"TFLOPs for {r['step_s']} s, the log {r['tflops']}")
            path = os.path.join(tmp, f"row{i}.yaml")
            with open(path, "w") as f:
                f.write(TEMPLATE.format(
                    name=f"bigscience-{i}", nodes=int(r["gpus"]) // 8, layers=L, hidden=h,
                    heads=r["heads"], ffn=4 * h, gbs=r["global_batch"], mbs=r["micro_batch"],
                    tp=r["tp"], pp=pp, dp=r["dp"],
                    stages=", ".join(str(x) for x in stage_layers(L, pp))))
            print(f"[{i + 1}/{len(rows)}] {r['kind']} {r['row']}", file=sys.stderr)
            p = subprocess.run([stepsim, "run", path, "--json"], capture_output=True, text=True)
            if p.returncode not in (0, 1):
                raise SystemExit(f"row {r['row']}: stepsim failed: {p.stderr.strip()}")
            res = json.loads(p.stdout)
            out.append((r, res))
    errs = []
    lines = ["| kind | row | GPUs | layout | shape | published (s) | simulated (s) | error | "
             "memory: logged / simulated peak | verdict |",
             "|---|---|---:|---|---|---:|---:|---:|---|---|"]
    for r, res in out:
        step = res.get("step_time_s")
        peak = res["peak_mem_bytes"] / 2**30
        verdict = res["verdict"]["status"] + (" (logged OOM)" if r["oom"] else "")
        err = ""
        if r["step_s"] and step:
            e = float(r["step_s"]) / step - 1
            errs.append(e)
            err = f"{100 * e:+.1f}%"
        lines.append(
            f"| {r['kind']} | {r['row']} | {r['gpus']} | TP {r['tp']} PP {r['pp']} DP {r['dp']},"
            f" mb {r['micro_batch']} | {r['layers']} x {r['hidden']}, {r['heads']} heads | "
            f"{r['step_s'] or '-'} | {step:.2f} | {err} | "
            f"{(r['mem_gb'] + ' GB') if r['mem_gb'] else '-'} / {peak:.1f} GiB | {verdict} |")
    mape = sum(abs(e) for e in errs) / len(errs)
    signed = sum(errs) / len(errs)
    big = max(abs(e) for e in errs)
    if summary:
        print(json.dumps({"mape": round(100 * mape, 1), "signed": round(100 * signed, 1),
                          "max": round(100 * big, 1), "rows": len(errs)}))
        return
    print("\n".join(lines))
    print(f"\nError in throughput (published time / simulated time - 1): mean {100 * mape:.1f}%, "
          f"signed {100 * signed:+.1f}%, max {100 * big:.1f}% over {len(errs)} rows")


if __name__ == "__main__":
    main()
