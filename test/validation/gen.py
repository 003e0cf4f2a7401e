#!/usr/bin/python3
"""Writes the validation scenarios, one per row of the published tables:

    gen.py OUT_DIR

From this folder's data/ (data/README.md): megatron2021_weak_scaling.csv (Narayanan et al.
2021, Table 1: GPT on DGX A100), megatron_h100_weak_scaling.csv (Megatron-Core README, GPT on
H100) and Korthikanti et al. 2022 (Table 4: one layer of a 22B model, the A100 calibration
set of docs/calibration.md; Table 5: end-to-end iterations on A100). What the tables state is
copied; what they leave unstated is an assumption, the same for every row of a table and
written into each scenario's header and docs/validation.md. Nothing here depends on the
published throughput."""
import csv, os, sys

src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def rows(name):
    with open(os.path.join(src, name)) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def vstages(layers, pp, A):
    """Interleaved 1F1B with 2 model chunks per stage where the layers split evenly and the
    micro-batches per pipeline are a multiple of pp (Megatron's condition); else 1F1B.
    Not every interleaving Megatron allows: the rows with an odd number of layers per stage
    (119B: 23, 462B: 7) would need one-layer chunks, and their published rates read as plain
    1F1B: between bubbles (x (m + p - 1) / m) they come to 499 and 568 TFLOP/s, rising with
    the hidden size like the interleaved rows around them (70B 446, 177B 478, 314B 526),
    where one-layer chunks would give 424 and 475, out of line (docs/validation.md)."""
    if pp > 1 and layers % (2 * pp) == 0 and A % pp == 0:
        return "{schedule: interleaved, virtual_stages: 2}"
    return "{schedule: 1f1b}"


# The A100 table's runs as the paper's artifact launches them (Megatron-LM,
# examples/sc21/run_table_1.sh): micro-batch size (MBS), layers per virtual pipeline stage
# (--num-layers-per-virtual-pipeline-stage; absent = plain 1F1B) and the data-parallel
# implementation (DDP=torch: PyTorch DDP, whose bucketed all-reduce overlaps the last
# micro-batch's backward; DDP=local: Megatron's own, which all-reduces after the flush).
# Keyed by the table's params_B; every run uses --recompute-method uniform (full recompute).
A100_RUNS = {
    "1.7": (16, None, "torch"), "3.6": (16, None, "torch"), "7.5": (16, None, "torch"),
    "18.4": (8, None, "torch"), "39.1": (4, None, "local"), "76.1": (2, 5, "local"),
    "145.6": (2, 5, "local"), "310.1": (1, 3, "local"), "529.6": (1, 1, "local"),
    "1008.0": (1, None, "local"),
}


def a100_sched(layers, pp, per_virtual):
    if per_virtual is None:
        return "{schedule: 1f1b}"
    chunks = layers // (pp * per_virtual)
    assert chunks * pp * per_virtual == layers
    return "{schedule: interleaved, virtual_stages: %d}" % chunks


A100_TOPO = """topology:
  name: dgx-a100-x{nodes}
  gpu: a100-sxm-80gb
  nodes: {nodes}
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: 300 GB/s, latency: 1 us, sharp: false}}
    pcie: {{gen: 4, lanes: 16, switches: 4, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 204.8 GB/s, socket_link: 144 GB/s}}
    nics: {{count: 8, bandwidth: 200 Gb/s, latency: 2 us}}
  fabric: {{kind: fat-tree, oversubscription: 1, latency: 1 us, radix: 40}}
"""

H100_TOPO = """topology:
  name: dgx-h100-x{nodes}
  gpu: h100-sxm
  nodes: {nodes}
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: 450 GB/s, latency: 1 us, sharp: true}}
    pcie: {{gen: 5, lanes: 16, switches: 8, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 307.2 GB/s, socket_link: 128 GB/s}}
    nics: {{count: 8, bandwidth: 400 Gb/s, latency: 2 us}}
  fabric: {{kind: rail-optimized, oversubscription: 1, latency: 1 us, radix: 64}}
"""

def selene_gpt(name, L, h, a, gb, mbs):
    """The model and batch of a Megatron GPT run on Selene (both A100 tables): ffn 4h, GELU,
    LayerNorm, learned positions, vocabulary 51200, seq 2048, dropout 0.1, fp16; the
    training block is left open for its recompute and attention keys."""
    return """model:
  name: {name}
  layers: {L}
  hidden: {h}
  heads: {a}
  ffn: {f}
  vocab: 51200
  activation: gelu
  norm: layernorm
  position: learned
  max_seq_len: 2048
  dropout: 0.1
  tied_embeddings: true
  bias: true
training:
  seq_len: 2048
  global_batch: {gb}
  micro_batch: {mbs}
  precision: fp16
""".format(name=name, L=L, h=h, a=a, f=4 * h, gb=gb, mbs=mbs)


A100_NOTE = """# Micro-batch, pipeline schedule and DDP from the paper's launch script (Megatron-LM
# examples/sc21/run_table_1.sh). Assumed (the same for every row, docs/validation.md):
# fp16 mixed precision with fp32 master weights and Adam; dropout 0.1, no flash attention
# (2021); vocabulary padded as Megatron pads it; the input-gradient all-reduce after the
# weight-gradient GEMM (Megatron overlapped the two only later in 2021)."""

H100_NOTE = """# Assumptions (the table does not state them; the same for every row, docs/validation.md):
# micro-batch 1; selective recompute; GPT with GELU, ffn 4h, MHA, biases, no dropout;
# flash attention; sequence parallelism with TP communication overlap, and the input-gradient
# collective overlapped with the weight-gradient GEMM (Megatron-Core's default); the distributed
# optimizer (ZeRO-1) with overlapped gradient reduce-scatter and parameter all-gather (the
# README's "DP grad-reduce/param-gather overlap") in Megatron-Core's default buckets of
# max(40M, 1M x DP) parameters (bf16 gradients: 2 bytes each); interleaved 1F1B with 2 chunks
# per stage where layers and micro-batches allow (else 1F1B: docs/validation.md)."""

for r in rows("megatron2021_weak_scaling.csv"):
    h, L, a = int(r["hidden"]), int(r["layers"]), int(r["heads"])
    tp, pp, dp, gpus, gb = (int(r[k]) for k in ("tp", "pp", "dp", "gpus", "global_batch"))
    mbs, per_virtual, ddp = A100_RUNS[r["params_B"]]
    name = "a100-%sb" % r["params_B"].replace(".", "p")
    text = """# Megatron-LM 2021 (Narayanan et al., SC21, Table 1): GPT {p}B on {g} A100s, TP {tp} PP {pp}
# DP {dp}, global batch {gb}, micro-batch {mbs}, seq 2048, full recompute, DDP={ddp};
# published {t} TFLOP/s per GPU.
{note}
name: {name}
{topo}{model}  recompute: full
  flash_attention: false
parallel:
  tp: {tp}
  tp_grad_overlap: false
  pp: {pp}
  dp: {dp}
  ddp: {{overlap: {overlap}}}
  pipeline: {sched}
simulation:
  steps: 1
  timeline: false
""".format(p=r["params_B"], g=gpus, tp=tp, pp=pp, dp=dp, gb=gb, t=r["tflops_per_gpu"], note=A100_NOTE,
           name=name, topo=A100_TOPO.format(nodes=max(1, gpus // 8)),
           model=selene_gpt("gpt-%sb" % r["params_B"], L, h, a, gb, mbs), mbs=mbs, ddp=ddp, overlap="true" if ddp == "torch" else "false",
           sched=a100_sched(L, pp, per_virtual))
    open(os.path.join(out, name + ".yaml"), "w").write(text)

for r in rows("megatron_h100_weak_scaling.csv"):
    h, L, a = int(r["hidden"]), int(r["layers"]), int(r["heads"])
    tp, pp, dp, gpus, gb = (int(r[k]) for k in ("tp", "pp", "dp", "gpus", "global_batch"))
    A = gb // dp
    name = "h100-%s" % r["model"].lower().replace(".", "p")
    text = """# Megatron-Core (README, r0.8.0): GPT {m} on {g} H100s, TP {tp} PP {pp} DP {dp},
# global batch {gb}, seq 4096; published {t} TFLOP/s per GPU ({mfu}% MFU).
{note}
name: {name}
{topo}model:
  name: gpt-{m}
  layers: {L}
  hidden: {h}
  heads: {a}
  ffn: {f}
  vocab: 131072
  activation: gelu
  norm: layernorm
  position: rope
  tied_embeddings: false
  bias: true
training:
  seq_len: 4096
  global_batch: {gb}
  micro_batch: 1
  precision: bf16
  recompute: selective
  flash_attention: true
parallel:
  tp: {tp}
  sp: {sp}
  tp_comm_overlap: {sp}
  tp_grad_overlap: true
  pp: {pp}
  dp: {dp}
  zero: 1
  ddp: {{overlap: true, overlap_param_gather: true, bucket: {bucket} MB}}
  pipeline: {sched}
simulation:
  steps: 1
  timeline: false
""".format(m=r["model"], g=gpus, tp=tp, pp=pp, dp=dp, gb=gb, t=r["tflops_per_gpu"], mfu=r["mfu_pct"],
           note=H100_NOTE, name=name, topo=H100_TOPO.format(nodes=max(1, gpus // 8)), L=L, h=h, a=a,
           f=4 * h, sp="true" if tp > 1 else "false", sched=vstages(L, pp, A),
           bucket=2 * max(40, dp))
    open(os.path.join(out, name + ".yaml"), "w").write(text)

# Korthikanti et al. 2022 (arXiv:2205.05198): Megatron-LM of 2022 on Selene. Its backward
# launches the all-reduce (SP: reduce-scatter) of a column-parallel GEMM's input gradient
# asynchronously and computes the weight gradient meanwhile (the paper, section 6.2: "we
# overlap all-reduce communication with the linear weight's gradient computation").
K2022_NOTE = """# Assumed (the same for every row, docs/validation.md): fp16 mixed precision with fp32
# master weights and Adam; dropout 0.1; no flash attention (2022); the asynchronous
# input-gradient all-reduce the paper describes (tp_grad_overlap)."""


def k2022(name, what, L, h, a, pp, gpus, gb, mbs, v, recompute, sp):
    sched = "{schedule: interleaved, virtual_stages: %d}" % v if v > 1 else "{schedule: 1f1b}"
    return """# Korthikanti et al. 2022 (arXiv:2205.05198), {what}
{note}
name: {name}
{topo}{model}  recompute: {rc}
  flash_attention: false
parallel:
  tp: 8
  sp: {sp}
  tp_grad_overlap: true
  pp: {pp}
  dp: 1
  pipeline: {sched}
simulation:
  steps: 1
  timeline: false
""".format(what=what, note=K2022_NOTE, name=name, topo=A100_TOPO.format(nodes=max(1, gpus // 8)),
           model=selene_gpt("gpt-%dx%d" % (h, L), L, h, a, gb, mbs), rc=recompute, sp=sp, pp=pp,
           sched=sched)


for i, r in enumerate(rows("korthikanti2022_layer.csv")):
    name = "k2022-layer-%d" % (i + 1)
    what = "Table 4, \"%s\": one layer of the 22B model\n# (TP 8, micro-batch 4), published forward %s ms, backward %s ms." % (
        r["experiment"], r["forward_ms"], r["backward_ms"])
    open(os.path.join(out, name + ".yaml"), "w").write(
        k2022(name, what, 48, 6144, 64, 1, 8, 4, 4, 1, r["recompute"], r["sp"]))

for r in rows("korthikanti2022_iteration.csv"):
    for mode, rc, sp, col in (("full", "full", "false", "full_recompute_s"),
                              ("present", "selective", "true", "present_work_s")):
        name = "k2022-%s-%s" % (r["model"].lower(), mode)
        what = "Tables 3 and 5: GPT %s on %s A100s, TP 8 PP %s,\n# no DP, global batch %s, %s; published iteration %s s." % (
            r["model"], r["gpus"], r["pp"], r["global_batch"],
            "full recompute" if mode == "full" else "SP + selective recompute", r[col])
        open(os.path.join(out, name + ".yaml"), "w").write(
            k2022(name, what, int(r["layers"]), int(r["hidden"]), int(r["heads"]), int(r["pp"]),
                  int(r["gpus"]), int(r["global_batch"]), int(r["micro_batch"]),
                  int(r["virtual_stages"]), rc, sp))
