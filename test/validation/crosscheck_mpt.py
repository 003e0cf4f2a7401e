#!/usr/bin/python3
"""Cross-check: MosaicML's MPT throughput benchmarks (test/validation/data/llmfoundry_mpt.csv),
PyTorch FSDP1 runs of 125M-70B GPT-style models on 8-512 A100s and H100s at 512-65,536 tokens,
rerun with stepsim. Not a calibration input: nothing in the GPU catalog is fitted to these
rows, and this script prints how far the model is from them.

    /usr/bin/python3 test/validation/crosscheck_mpt.py build/sim/cli/stepsim . [--only GPU,...]
                                                                            [--summary]

Each row becomes a scenario in a temporary directory (deleted afterwards), run with
`stepsim run --json`; the tables go to stdout (markdown: each row, then by GPU the mean
error and the signed mean by sequence length), progress to stderr. A few seconds for the 209
rows. --summary prints instead one JSON object: for the A100 rows (40GB and 80GB) and the
H100 rows, at most 8,192 tokens ("short") and 16,384-65,536 ("long"), the mean absolute
error, the signed mean, the largest error and the row count (validate.py --write puts the
long ones in sim/cli/validated.h, which `stepsim run` quotes for long-sequence FSDP runs).

The mapping (docs/validation.md, "Cross-checks outside the tables", says the same):
- the model: llm-foundry's mpt-*.yaml at the tables' commit: learned positions (the logged
  parameter count grows by d_model per position), LayerNorm, a GELU MLP of 4 d_model, biases,
  tied embeddings, vocabulary 50368, no dropout; the script checks each row's logged
  parameter count against stepsim's to the parameter;
- Composer's FSDP1: `zero: 3` (FULL_SHARD) or `reshard_after_forward: false` (SHARD_GRAD_OP),
  `limit_all_gathers` as the mpt-*.yaml fsdp_config sets it; DEFAULT mixed precision reduces in
  fp32 (`grad_dtype: fp32`), PURE in bf16; AdamW with fp32 states; activation checkpointing
  of every block (`recompute: full`) or none, non-reentrant (the yamls'
  activation_checkpointing_reentrant: false): from PyTorch 2.1 (the rows logged as
  `amp_bf16`) that checkpoint stops re-running a block once its last saved tensor, fc2's
  input, is rebuilt (`recompute_early_stop: true`); PyTorch 1.13 (the rows logged as `bf16`:
  the A100 40GB table and two A100 80GB rows of the same era) re-ran the whole block;
- eager PyTorch (`compile: false`): the A100 40GB table dates from May 2023 or earlier
  (submit_benchmarks.py's PyTorch 1.13 image), 59 of the A100 80GB table's 61 rows and the
  small-scale H100 table from October 2023 (sweep.sh's PyTorch 2.1 image, llm-foundry
  b2a43a147), the large-scale H100 table from January 2024;
  the loss is llm-foundry's default `fused_crossentropy`, flash-attn's fused cross-entropy
  kernel (one kernel each way over the 16-bit logits, no fp32 copy of them: stepsim's
  `cross_entropy: compiled`);
- attention: the benchmarks ran llm-foundry's Triton flash attention (attn_impl: triton),
  FlashAttention's Triton implementation: on the A100 the catalog's `fa_triton` table (the
  FlashAttention-2 paper's A100 figure); the H100 has no table for it, and FlashAttention-2's
  stands in (`attention_kernel: fa2`);
- the cluster: DGX-like nodes of 8 GPUs, 8 x 200 Gb/s RoCE per A100 node (the tables' 1600
  Gbps) and 8 x 400 Gb/s per H100 node (not stated), a non-blocking fabric; runs of 64 GPUs
  or more simulate one data-parallel replica (`simulation.symmetry: dp`).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

MPT = {  # d_model, n_heads, n_layers (scripts/train/yamls/pretrain/mpt-*.yaml)
    "125m": (768, 12, 12), "350m": (1024, 16, 24), "760m": (1536, 12, 24), "1b": (2048, 16, 24),
    "3b": (2560, 20, 32), "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 56, 48),
    "70b": (8192, 64, 80),
}
VOCAB = 50368

GPU = {"a100-80gb": ("a100-sxm-80gb", 200, 40, "  attention_kernel: fa_triton\n", 300, 4, "false"),
       "a100-40gb": ("a100-sxm-40gb", 200, 40, "  attention_kernel: fa_triton\n", 300, 4, "false"),
       "h100-80gb": ("h100-sxm", 400, 64, "  attention_kernel: fa2\n", 450, 5, "true")}

TEMPLATE = """name: {name}
topology:
  name: {gpu}-x{nodes}
  gpu: {catalog}
  nodes: {nodes}
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: {nvl} GB/s, latency: 1 us, sharp: {sharp}}}
    pcie: {{gen: {pcie}, lanes: 16, switches: 4, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 204.8 GB/s, socket_link: 144 GB/s}}
    nics: {{count: 8, bandwidth: {nic} Gb/s, latency: 2 us}}
  fabric: {{kind: fat-tree, oversubscription: 1, latency: 1 us, radix: {radix}}}
model:
  name: mpt-{model}
  layers: {L}
  hidden: {h}
  heads: {a}
  ffn: {f}
  vocab: {V}
  activation: gelu
  norm: layernorm
  position: learned
  max_seq_len: {s}
  bias: true
  tied_embeddings: true
  qkv_fused: true
  dropout: 0.0
training:
  seq_len: {s}
  global_batch: {gb}
  micro_batch: {mb}
  precision: bf16
  grad_dtype: {gd}
  recompute: {rc}
{es}  flash_attention: true
  compile: false
  cross_entropy: compiled
{kernel}parallel:
  dp: {g}
  zero: 3
  fsdp: {{implementation: fsdp1, limit_all_gathers: true{raf}}}
simulation:
  steps: 1
  timeline: false
{sym}"""


def params(h, L, s):
    """The logged parameter count: tied embedding, position table, L blocks (QKV, output, two
    MLP matrices, biases, two LayerNorms), the final LayerNorm."""
    return VOCAB * h + s * h + L * (12 * h * h + 13 * h) + 2 * h


def die(msg):
    """Bad arguments or data: one line on stderr, exit status 2."""
    print("crosscheck_mpt.py: " + msg, file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) < 3:
        die("usage: crosscheck_mpt.py STEPSIM ROOT [--only GPU,...] [--summary]")
    stepsim, root = sys.argv[1], sys.argv[2]
    only = None
    rest = sys.argv[3:]
    for k, a in enumerate(rest):
        if a not in ("--only", "--summary") and not (k > 0 and rest[k - 1] == "--only"):
            die("unknown argument '%s' (--only GPU,... or --summary)" % a)
    if "--only" in sys.argv:
        i = sys.argv.index("--only")
        if i + 1 >= len(sys.argv):
            die("--only needs a list of GPUs (%s)" % ",".join(GPU))
        only = sys.argv[i + 1].split(",")
        bad = [g for g in only if g not in GPU]
        if bad:
            die("--only %s: unknown GPU (the file's: %s)" % (",".join(bad), ",".join(GPU)))
    path = os.path.join(root, "test", "validation", "data", "llmfoundry_mpt.csv")
    with open(path) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    need = {"gpu", "model", "seq_len", "gpus", "micro_batch", "grad_accum", "global_batch", "precision", "mp_mode",
            "sharding", "activation_checkpointing", "tokens_per_s_per_gpu", "num_params"}
    if not rows or need - set(rows[0]):
        die("%s: missing columns: %s" % (path, ", ".join(sorted(need - set(rows[0] if rows else {})))))
    for i, r in enumerate(rows):
        if r["gpu"] not in GPU or r["model"] not in MPT:
            die("%s: row %d: unknown gpu '%s' or model '%s'" % (path, i + 1, r["gpu"], r["model"]))
    summary = "--summary" in sys.argv
    out = open(os.devnull, "w") if summary else sys.stdout
    print("| GPU | model | seq | GPUs | mb x accum | AC | published | simulated | error | exposed comm (s) | peak (GiB) |",
          file=out)
    print("|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|", file=out)
    errs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(rows):
            if only and r["gpu"] not in only:
                continue
            h, a, L = MPT[r["model"]]
            s, g = int(r["seq_len"]), int(r["gpus"])
            if params(h, L, s) != int(r["num_params"]):
                die("row %d: %s at %d tokens: %d parameters by the formula, %s logged"
                         % (i, r["model"], s, params(h, L, s), r["num_params"]))
            catalog, nic, radix, kernel, nvl, pcie, sharp = GPU[r["gpu"]]
            name = "mpt-%s-%s-s%d-g%d-%d" % (r["gpu"], r["model"], s, g, i)
            text = TEMPLATE.format(
                name=name, gpu=r["gpu"], catalog=catalog, nodes=max(1, g // 8), nvl=nvl, pcie=pcie, sharp=sharp,
                nic=nic, radix=radix, model=r["model"], L=L, h=h, a=a, f=4 * h, V=VOCAB, s=s,
                gb=int(r["global_batch"]), mb=int(r["micro_batch"]),
                gd="fp32" if r["mp_mode"] == "DEFAULT" else "bf16",
                rc="full" if r["activation_checkpointing"] == "true" else "none", kernel=kernel,
                es="  recompute_early_stop: true\n" if r["activation_checkpointing"] == "true"
                and r["precision"] == "amp_bf16" else "",
                g=g, raf=", reshard_after_forward: false" if r["sharding"] == "SHARD_GRAD_OP" else "",
                sym="  symmetry: dp\n" if g >= 64 else "")
            path = os.path.join(tmp, name + ".yaml")
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run([stepsim, "run", path, "--json"], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("%s: %s\n%s" % (name, p.stderr.strip(), text))
            d = json.loads(p.stdout)
            tps = d["tokens_per_s"] / g
            pub = float(r["tokens_per_s_per_gpu"])
            err = 100 * (tps / pub - 1)
            errs.setdefault(r["gpu"], []).append((err, r))
            cell = "%+.1f%%%s" % (err, "" if d["status"] == "ok" else " (" + d["status"] + ")")
            if not summary:  # progress (--summary: a failing row's message comes first)
                print("%s %s s%d g%d: %.0f vs %.0f %s" % (r["gpu"], r["model"], s, g, tps, pub, cell),
                      file=sys.stderr)
            print("| %s | %s | %s | %d | %s x %s | %s | %.0f | %.0f | %s | %.2f | %.1f |" % (
                r["gpu"], r["model"], format(s, ","), g, r["micro_batch"], r["grad_accum"],
                "full" if r["activation_checkpointing"] == "true" else "none", pub, tps, cell,
                sum(d["exposed_comm_s"].values()), d["peak_mem_bytes"] / 2**30), file=out)
            out.flush()
    if summary:
        res = {}
        for fam in ("a100", "h100"):
            # "long": the range `stepsim run` quotes these rows for (report.c)
            for part, lo, hi in (("short", 0, 8192), ("long", 16384, 65536)):
                sel = [x for gpu, e in errs.items() if gpu.startswith(fam)
                       for x, r in e if lo <= int(r["seq_len"]) <= hi]
                if sel:
                    res.setdefault(fam, {})[part] = {
                        "mape": sum(abs(x) for x in sel) / len(sel), "signed": sum(sel) / len(sel),
                        "max": max(abs(x) for x in sel), "rows": len(sel)}
        print(json.dumps(res, sort_keys=True))
        return
    print()
    print("| GPU | rows | mean abs error | signed mean | max | seq <= 2,048 | 4,096-8,192 | >= 16,384 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for gpu, e in errs.items():
        ab = [abs(x) for x, _ in e]

        def mean(lo, hi):
            sel = [x for x, r in e if lo <= int(r["seq_len"]) <= hi]
            return "%+.1f%% (%d)" % (sum(sel) / len(sel), len(sel)) if sel else "-"
        print("| %s | %d | %.1f%% | %+.1f%% | %.1f%% | %s | %s | %s |" % (
            gpu, len(e), sum(ab) / len(ab), sum(x for x, _ in e) / len(e), max(ab),
            mean(0, 2048), mean(4096, 8192), mean(16384, 1 << 30)))

if __name__ == "__main__":
    main()
