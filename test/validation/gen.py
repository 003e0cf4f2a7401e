#!/usr/bin/python3
"""Writes the validation scenarios, one per row of the published tables:

    gen.py OUT_DIR

From this folder's data/ (data/README.md): megatron2021_weak_scaling.csv (Narayanan et al.
2021, Table 1: GPT on DGX A100), megatron_h100_weak_scaling.csv (Megatron-Core README, GPT on
H100), Korthikanti et al. 2022 (Table 4: one layer of a 22B model, the A100 calibration
set of docs/calibration.md; Table 5: end-to-end iterations on A100), torchtitan_llama.csv
(torchtitan FSDP2 runs of Llama on A100, H100 and B200), nemo_llama31_h100.csv (NeMo
Llama 3.1 on H100, bf16 rows) and deepspeed_zero3_2021.csv (Narayanan et al. 2021, Table 2:
DeepSpeed ZeRO-3 on DGX A100). What the tables state is
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
  qkv_fused: true
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

# The same paper as the A100 table (Narayanan et al. 2021, Table 2): DeepSpeed's ZeRO-3 on the
# same cluster, no model parallelism, one micro-batch per GPU. Pure data parallelism: one
# replica simulated (simulation.symmetry: dp; the full runs give the same step to 1e-9).
Z3_NOTE = """# Assumed (not published; docs/validation.md): DeepSpeed ZeRO-3 as its code and defaults of
# the time (spring 2021): each sub-module's fetch ends in a device synchronization, each
# parameter tensor gathered on its own after another, each by PyTorch's list all-gather (N
# partition views, N copies) and its gradient by a list reduce-scatter (sync_fetch,
# list_collectives; Megatron's fused query_key_value is one tensor); parameters gathered
# ahead up to 5e7 elements, gradients reduce-scattered in buckets of 5e8 elements, in fp16;
# tensors of at most 1e5 elements kept whole; a gathered tensor kept for its next use
# within 1e9 elements (stage3_max_reuse_distance); eager PyTorch (compile: false: the host's
# 10 us an op) running Megatron's model code, whose LayerNorm is Apex's fused kernel
# (norm_kernel: fused; its jit-fused bias-GeLU and bias-dropout-add run as eager PyTorch's
# native kernels in the model); fp16 mixed precision with fp32 master weights and Adam; full recompute
# (Megatron's activation checkpointing; the paper's FLOP count includes it); dropout 0.1; no
# flash attention (2021)."""

for r in rows("deepspeed_zero3_2021.csv"):
    h, L, a = int(r["hidden"]), int(r["layers"]), int(r["heads"])
    gpus, gb, mbs = int(r["gpus"]), int(r["global_batch"]), int(r["micro_batch"])
    name = "ds-z3-%sb-%dg" % (r["params_B"].split(".")[0], gpus)
    text = """# Narayanan et al. 2021 (SC21), Table 2: GPT-3 {p}B with DeepSpeed ZeRO-3 and no model
# parallelism on {g} A100s, global batch {gb}, micro-batch {mbs}, seq 2048; published {t} TFLOP/s
# per GPU.
{note}
name: {name}
{topo}{model}  recompute: full
  flash_attention: false
  compile: false
  norm_kernel: fused
parallel:
  dp: {g}
  zero: 3
  fsdp: {{implementation: deepspeed, sync_fetch: true, list_collectives: true}}
simulation:
  steps: 1
  timeline: false
  symmetry: dp
""".format(p=r["params_B"], g=gpus, gb=gb, mbs=mbs, t=r["tflops_per_gpu"], note=Z3_NOTE, name=name,
           topo=A100_TOPO.format(nodes=gpus // 8),
           model=selene_gpt("gpt-%sb" % r["params_B"], L, h, a, gb, mbs))
    open(os.path.join(out, name + ".yaml"), "w").write(text)


# A cross-check, not a table (crosscheck.py): IBM's fms-fsdp runs, PyTorch FSDP1 on 128 A100s
# and 96 H100s (data/ibm_fms_fsdp.csv). The README gives each node's network as 400 Gb/s (A100)
# and 800 Gb/s (H100), not how many links: two each (an assumption; the aggregate is what FSDP's
# rings see), on a non-blocking fabric, the nodes otherwise DGX-like. fms-fsdp's settings:
# FullyShardedDataParallel with bf16 parameters, reduction and buffers (its bfSixteen policy),
# limit_all_gathers, backward prefetch; SDPA (FlashAttention-2); eager; the loss PyTorch's cross
# entropy.
FMS_MODEL = {
    "llama2-7b": "llama2-7b", "llama2-13b": "llama2-13b", "llama2-70b": "llama2-70b",
    # fms-fsdp's 34b variant (fms_fsdp/utils/config_utils.py)
    "llama2-34b": """
  name: llama2-34b-fms
  layers: 48
  hidden: 8192
  heads: 64
  kv_heads: 8
  head_dim: 128
  ffn: 22016
  vocab: 32000
  activation: swiglu
  norm: rmsnorm
  position: rope
  dropout: 0.0
  tied_embeddings: false
  max_seq_len: 4096""",
}
# fms-fsdp checkpoints blocks with FSDP's checkpoint_wrapper, CheckpointImpl.NO_REENTRANT
# (fms_fsdp/policies/ac_handler.py): PyTorch's non-reentrant checkpoint, which stops
# re-running a block once its last saved tensor is rebuilt (recompute_early_stop).
FMS_AC = {"none": "recompute: none",
          "full": "recompute: full\n  recompute_early_stop: true",
          "every 2nd block": "recompute: full\n  recompute_every: 2\n  recompute_early_stop: true"}


def fms_topo(gpu, nodes):
    """A DGX-like node of `gpu` with the README's bandwidth per node on two links."""
    if gpu == "a100-sxm-80gb":
        t, dgx, nics = A100_TOPO, "nics: {count: 8, bandwidth: 200 Gb/s, latency: 2 us}", \
            "nics: {count: 2, bandwidth: 200 Gb/s, latency: 2 us}"
    else:
        t, dgx, nics = H100_TOPO, "nics: {count: 8, bandwidth: 400 Gb/s, latency: 2 us}", \
            "nics: {count: 2, bandwidth: 400 Gb/s, latency: 2 us}"
    t = t.format(nodes=nodes).replace("dgx-", "ibm-").replace(dgx, nics)
    return t.replace("rail-optimized", "fat-tree")


for r in rows("ibm_fms_fsdp.csv"):
    gpus, b, seq = int(r["gpus"]), int(r["batch_per_gpu"]), int(r["seq_len"])
    name = "ibm-%s-%s" % ("a100" if r["gpu"].startswith("a100") else "h100", r["model"])
    text = """# Cross-check (crosscheck.py): foundation-model-stack/fms-fsdp README @5e522b4, {m} on {g}
# {gpu}, {sh}, activation checkpointing {ac}, batch {b} per GPU, seq {seq}; published {t}
# tokens/s per GPU. docs/validation.md, "Cross-checks outside the tables".
name: {name}
{topo}model: {model}
training:
  seq_len: {seq}
  global_batch: {gb}
  micro_batch: {b}
  precision: bf16
  grad_dtype: bf16
  {rc}
  flash_attention: true
  compile: false
  cross_entropy: pytorch
{kernel}parallel:
  dp: {g}
  zero: 3
  fsdp: {{implementation: fsdp1, hybrid_shard: {hybrid}, limit_all_gathers: true}}
simulation:
  steps: 1
  timeline: false
""".format(m=r["model"], g=gpus, gpu=r["gpu"], sh=r["sharding"], ac=r["activation_checkpointing"],
           b=b, seq=seq, t=r["tokens_per_s_per_gpu"], name=name, topo=fms_topo(r["gpu"], gpus // 8),
           model=FMS_MODEL[r["model"]], gb=gpus * b, rc=FMS_AC[r["activation_checkpointing"]],
           kernel="" if r["gpu"].startswith("a100") else "  attention_kernel: fa2\n",
           hybrid="true" if r["sharding"] == "HSDP" else "false")
    open(os.path.join(out, name + ".yaml"), "w").write(text)


# torchtitan (pytorch/torchtitan benchmarks and docs/performance.md, pytorch/ao READMEs): FSDP2
# and FSDP2 + TP runs of Llama models, one scenario per distinct configuration, eager
# (training.compile: false) and torch.compile runs apart.
TT_GPU = {"h100-sxm (96 GB HBM2e 500 W)": "gt", "a100-sxm-80gb": "a100", "h100-sxm": "h100",
          "b200 (power limited)": "b200"}
# activation checkpointing: (file tag, training keys). torchtitan's per-layer option checkpoints
# every second layer in full (its default selective_ac_option "2"); per-op is recompute: op.
# Both wrap blocks in FSDP's checkpoint_wrapper (non-reentrant: PyTorch's checkpoint stops
# re-running a block once its last saved tensor is rebuilt, recompute_early_stop), as
# torch.compile's partitioner does (it recomputes only what the backward needs).
TT_AC = {"none": ("noac", "recompute: none"),
         "selective (layer)": ("sac-layer",
                               "recompute: full\n  recompute_every: 2\n  recompute_early_stop: true"),
         "selective (per-op SAC)": ("sac-op", "recompute: op"),
         "full": ("fullac", "recompute: full\n  recompute_early_stop: true")}


def tt_file(r):
    """The scenario of a torchtitan row (validate.py names it the same way)."""
    tp = int(r["tp"])
    return "tt-%s-%s-%sg%s-mb%s-%s%s%s" % (
        TT_GPU[r["gpu"]], r["model"].replace(".", "p"), r["gpus"], "-tp%d" % tp if tp > 1 else "",
        r["local_batch"], TT_AC[r["activation_checkpointing"]][0],
        "-async" if "async TP" in r["techniques"] else "", "" if "compile" in r["techniques"] else "-eager")


# Meta's Grand Teton hosts (the torchtitan H100 files: 8 H100 per host "fully connected with
# NVLink", 400 Gb/s RDMA per GPU). The NVLink is the HGX H100 board's (NVSwitch, 450 GB/s per
# direction, NVLink SHARP in the switches); the host side (PCIe, DRAM) is the DGX H100's, which
# none of these runs touches; the RoCE fabric is taken as a non-blocking two-level Clos within
# a zone (Gangidi et al., "RDMA over Ethernet for Distributed AI Training at Meta Scale",
# SIGCOMM 2024: the rack and cluster switches of an AI zone are non-blocking), which every run
# here (at most 32 hosts) fits in.
GT_TOPO = """topology:
  name: grand-teton-h100-x{nodes}
  gpu: h100-96gb-500w
  nodes: {nodes}
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: 450 GB/s, latency: 1 us, sharp: true}}
    pcie: {{gen: 5, lanes: 16, switches: 8, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 307.2 GB/s, socket_link: 128 GB/s}}
    nics: {{count: 8, bandwidth: 400 Gb/s, latency: 2 us}}
  fabric: {{kind: fat-tree, oversubscription: 1, latency: 1 us, radix: 64}}
"""

# One HGX/DGX B200 node (DGX B200 datasheet: 8 B200 on NVLink 5, 1.8 TB/s per GPU = 900 GB/s
# per direction through two NVLink 5 switch chips with SHARP; PCIe gen 5; 2 Xeon Platinum 8570
# with 8 channels of DDR5-5600 each, 358.4 GB/s per socket). One node: no fabric is crossed.
B200_TOPO = """topology:
  name: dgx-b200-x1
  gpu: b200
  nodes: 1
  node:
    gpus: 8
    intra: {{kind: nvswitch, bandwidth: 900 GB/s, latency: 1 us, sharp: true}}
    pcie: {{gen: 5, lanes: 16, switches: 8, sockets: 2, switch_lanes: 16}}
    host: {{memory_bandwidth: 358.4 GB/s, socket_link: 128 GB/s}}
"""

TT_NOTE = """# Mapped (docs/validation.md): FSDP2 as ZeRO-3 (parallel.zero 3) resharding after forward,
# prefetching one layer; bf16 parameters and compute with fp32 gradient reduction
# (torchtitan's default mixed_precision_reduce: float32), fp32 master weights and Adam;
# TP with sequence parallelism (torchtitan's SequenceParallel norms) as DTensor runs it
# (sp_implementation: dtensor: a copy of the [b, s, h] tensor at each SP collective, the
# gathered inputs kept for the weight gradients), the
# input-gradient reduce-scatter not beside the weight-gradient GEMM (DTensor's backward runs
# it after both GEMMs: the same serial time), async TP as tp_comm_overlap; flash attention; torchtitan's
# per-op selective checkpointing as recompute: op, its per-layer one (every second layer in
# full) as recompute: full with recompute_every: 2; eager runs as training.compile: false
# (PyTorch's composite RoPE and SwiGLU, and norms unless the run's config chose torchtitan's
# fused_rmsnorm: norm_kernel: fused), torch.compile ones as true (fused); the loss
# is PyTorch's cross entropy on fp32 logits, compiled with the blocks where the run's
# torchtitan did so (from April 2025: the 3b rows and the B200 row, cross_entropy: compiled),
# else as eager PyTorch runs it (cross_entropy: pytorch)."""


# torchtitan compiles the loss with the model since 2025-04-02 (pytorch/torchtitan bbb1b616,
# build_loss_fn: torch.compile(loss_fn) when training.compile is on); before, the loss's
# compile was commented out (e.g. at 9dec370). The runs by their torchtitan: 3a at 9dec370
# (2024-12-26), 3b at 820504e (2025-06-13; its benchmark file's version table), 3e's H100 row
# torchtitan 0.0.2 with torch 2.7.0a0 and torchao 0.10.0+git890e0ac8 (2025-02-28), 3e's B200 row
# at 6fc499f (2025-08-14; the torchao mx_formats README); 3c ran eager.
def loss_compiled(r):
    return "compile" in r["techniques"] and (r["table"] == "3b" or r["gpu"].startswith("b200"))


# The norm an eager run ran: its train config's norm_type at the run's torchtitan. At 0413364
# (table 3c, April 2024) llama3_8b.toml and llama2_13b.toml chose "fused_rmsnorm" (the Triton
# kernel of pytorch/torchtitan#181, one kernel each way), llama3_70b.toml and llama2_70b.toml
# "rmsnorm" (composite PyTorch ops, stepsim's default without compile); at 9dec370 (3a)
# llama3_8b.toml chose "rmsnorm". Compiled rows fuse the norm either way.
def norm_kernel(r):
    fused = r["table"] == "3c" and r["model"] in ("llama3-8b", "llama2-13b")
    return "  norm_kernel: fused\n" if fused and "compile" not in r["techniques"] else ""

TT_GPU_NOTE = {
    "gt": "# The GPU: Grand Teton's 96 GB HBM2e H100 at 500 W (topologies/gpus/h100-96gb-500w.yaml,\n"
          "# its peak estimated between the SXM5 and NVL datasheets). Attention: PyTorch SDPA runs\n"
          "# FlashAttention-2 on H100 (cuDNN attention is opt-in since pytorch/pytorch#138522;\n"
          "# torchtitan selects it on B200 only, pytorch/torchtitan#1196): attention_kernel: fa2.",
    "h100": "# Attention: PyTorch SDPA runs FlashAttention-2 on H100 (cuDNN attention is opt-in since\n"
            "# pytorch/pytorch#138522; torchtitan selects it on B200 only, pytorch/torchtitan#1196):\n"
            "# attention_kernel: fa2.",
    "a100": "# The cluster is not stated: DGX A100 nodes with 8 x 200 Gb/s HDR, as the A100 table's.\n"
            "# Flash attention (FlashAttention-2 on A100) on the calibrated matmul curve.",
    "b200": "# The B200s were power limited (the limit is not stated); the catalog's b200 is rated at\n"
            "# full power and has no attention table (flash kernels on its matmul curve, an estimate).",
}

seen, source = set(), ""
for r in rows("torchtitan_llama.csv"):
    name = tt_file(r)
    source = r["source"] if r["source"] != "same" else source
    if name in seen:
        continue
    seen.add(name)
    gpus, fsdp, tp, lb, gb, seq = (int(r[k]) for k in ("gpus", "fsdp", "tp", "local_batch", "global_batch", "seq_len"))
    assert int(r["pp"]) == 1 and int(r["cp"]) == 1 and fsdp * tp == gpus and lb * fsdp == gb
    nodes = max(1, gpus // 8)
    topo = {"gt": GT_TOPO, "a100": A100_TOPO, "h100": H100_TOPO, "b200": B200_TOPO}[TT_GPU[r["gpu"]]]
    tp_keys = ""
    if tp > 1:
        tp_keys = "  tp: %d\n  sp: true\n  sp_implementation: dtensor\n  tp_comm_overlap: %s\n  tp_grad_overlap: false\n" % (
            tp, "true" if "async TP" in r["techniques"] else "false")
    text = """# torchtitan table {t}, {src}:
# {m} on {g} {gpu}, FSDP {f} TP {tp},
# local batch {lb}, global batch {gb}, seq {seq}, activation checkpointing {ac};
# published tokens/s per GPU and peak memory for each technique: docs/validation.md.
{note}
{gnote}
name: {name}
{topo}model: {m}
training:
  seq_len: {seq}
  global_batch: {gb}
  micro_batch: {lb}
  precision: bf16
  grad_dtype: fp32
  {rc}
  flash_attention: true
  compile: {compile}
{norm}  cross_entropy: {ce}
{kernel}parallel:
  dp: {f}
{tpk}  zero: 3
  fsdp: {{reshard_after_forward: true, prefetch: 1}}
simulation:
  steps: 1
  timeline: false
""".format(src=source, t=r["table"], m=r["model"], g=gpus,
           gpu=r["gpu"], f=fsdp, tp=tp, lb=lb, gb=gb, seq=seq, ac=r["activation_checkpointing"], note=TT_NOTE,
           gnote=TT_GPU_NOTE[TT_GPU[r["gpu"]]],
           name=name, topo=topo.format(nodes=nodes), rc=TT_AC[r["activation_checkpointing"]][1], tpk=tp_keys,
           kernel="  attention_kernel: fa2\n" if TT_GPU[r["gpu"]] in ("gt", "h100") else "",
           compile="true" if "compile" in r["techniques"] else "false", norm=norm_kernel(r),
           ce="compiled" if loss_compiled(r) else "pytorch")
    open(os.path.join(out, name + ".yaml"), "w").write(text)


# NVIDIA NeMo / Megatron-Core Llama 3.1 on DGX H100 (NVIDIA/dgxc-benchmarking v24.11.1 at
# 35a9aecc, llama3.1/: README_{8b,70b,405b}.md give the layouts and step times; the recipe's
# own llama3.1_{8b,70b,405b}.yaml, configure.sh and launch.sh, at the same commit, the rest:
# NeMo 24.09, no activation checkpointing (activations_checkpoint_* null), sequence
# parallelism and Transformer Engine userbuffer TP overlap where TP > 1, cuDNN fused attention
# (NVTE_FUSED_ATTN=1, NVTE_FLASH_ATTN=0), Apex's distributed_fused_adam with overlapped
# gradient reduce-scatter and parameter all-gather, buckets of 75 MB (8B, 70B) or 125 MB
# (405B), bf16 gradient reduction, NCCL_NVLS_ENABLE=0). The fp8 rows run Transformer Engine's
# fp8 linear layers with delayed scaling (NeMo 24.09's recipe; docs/models.md, "fp8"). Rows of
# 1,024 GPUs or more simulate one data-parallel replica (simulation.symmetry: dp; 0.1-0.2%
# from the full runs, which take 40-170 s and up to 8 GB each, against 3-6 s).
def workload(name):
    """The key: value lines of a model in workloads/ (its architecture), comments dropped."""
    path = os.path.join(os.path.dirname(src), "..", "..", "workloads", name + ".yaml")
    keys = []
    for line in open(path):
        line = line.split("#")[0].rstrip()
        if line and not line.startswith("name:"):
            keys.append(line)
    return keys


NEMO_NOTE = """# From the recipe (llama3.1_*.yaml, configure.sh): no activation checkpointing; SP and TE
# userbuffer TP overlap where TP > 1; the input-gradient collective beside the weight-gradient
# GEMM (Megatron-Core's default); cuDNN fused attention; the distributed optimizer (ZeRO-1
# over the dp x cp ranks) with overlapped gradient reduce-scatter and parameter all-gather in
# Apex's buckets (bucket_cap_mb, taken as MiB of bf16 gradients); bf16 gradient reduction;
# NCCL_NVLS_ENABLE=0 (no NVLink SHARP). Assumed: DGX H100 nodes on a rail-optimized
# 8 x 400 Gb/s fabric (the cluster is not described). Not modelled:
# defer_embedding_wgrad_compute, data loading (the 405B runs use mock data, the others real)."""


def nemo_file(r):
    """The scenario of a NeMo row (validate.py names it the same way)."""
    return "nemo-%s-%sg%s" % (r["model"].replace("llama3.1-", ""), r["gpus"],
                              "" if r["precision"] == "bf16" else "-" + r["precision"])


for r in rows("nemo_llama31_h100.csv"):
    assert r["precision"] in ("bf16", "fp8"), r["precision"]
    gpus, tp, pp, cp, v, mb, ga, gb, L = (int(r[k]) for k in (
        "gpus", "tp", "pp", "cp", "virtual_stages", "micro_batch", "grad_accum", "global_batch", "layers"))
    dp = gpus // (tp * pp * cp)
    assert dp * tp * pp * cp == gpus and mb * ga * dp == gb
    model = [l for l in workload(r["model"]) if not l.startswith("layers:")]
    sched = "{schedule: interleaved, virtual_stages: %d}" % v if v > 1 else "{schedule: 1f1b}"
    name = nemo_file(r)
    text = """# NeMo 24.09, NVIDIA/dgxc-benchmarking llama3.1/README_{size}.md @35a9aecc:
# {m}{proxy} on {g} H100, TP {tp} PP {pp} CP {cp} DP {dp}, virtual stages {v},
# micro-batch {mb}, {ga} micro-batches, global batch {gb}, seq 8192, {prec}; published step {t} s.
{note}
name: {name}
{topo}model:
  name: {m}{suffix}
  layers: {L}
{model}
training:
  seq_len: 8192
  global_batch: {gb}
  micro_batch: {mb}
  precision: {prec}{recipe}
  recompute: none
  flash_attention: true
parallel:
  tp: {tp}
  sp: {sp}
  tp_comm_overlap: {sp}
  tp_grad_overlap: true
  pp: {pp}
  cp: {cp}
  dp: {dp}
  zero: 1
  ddp: {{overlap: true, overlap_param_gather: true, bucket: {bucket} MiB}}
  pipeline: {sched}
simulation:
  steps: 1
  timeline: false
{sym}""".format(size=r["model"].replace("llama3.1-", ""), m=r["model"],
           proxy=" proxy (%d of its layers)" % L if r["proxy"] == "True" else "", g=gpus, tp=tp, pp=pp,
           cp=cp, dp=dp, v=v, mb=mb, ga=ga, gb=gb, t=r["step_time_s"], note=NEMO_NOTE, name=name,
           prec=r["precision"],
           recipe="\n  fp8_recipe: delayed" if r["precision"] == "fp8" else "",
           topo=H100_TOPO.format(nodes=max(1, gpus // 8)).replace("sharp: true", "sharp: false"),
           suffix="-%dl" % L if r["proxy"] == "True" else "", L=L,
           model="\n".join("  " + l for l in model), sp="true" if tp > 1 else "false",
           bucket=125 if r["model"] == "llama3.1-405b" else 75, sched=sched,
           sym="  symmetry: dp\n" if gpus >= 1024 else "")
    open(os.path.join(out, name + ".yaml"), "w").write(text)


# A cross-check, not a table (crosscheck.py): the FlashAttention-2 paper's own training runs
# (Dao 2023, Table 1: GPT3-2.7B on 8 A100 80GB, 205 TFLOP/s per GPU at 2k tokens and 225 at
# 8k; its FLOP count Megatron-LM's formula times 3/4, 72 l h^2 + 12 l h s + 4.5 h V per token,
# attention counted in full: flash-attn's training/README.md). Stated: the model (GPT-3's
# 2.7B, 32 layers of 2560), the sequence, bf16, FlashAttention-2, 8 A100 80GB. Taken from the
# same repository's training configs, which the paper does not name: heads of 128 (20 heads:
# the README's "we set head dimension to 128 (instead of 80)", pile/gpt3-2.7B-flash-hdim128*),
# ZeRO-1 (DDPStrategyZero1), fused dropout-add-LayerNorm, MLP and bias kernels (compile:
# true), GPT-2's dropout 0.1 and vocabulary padded to a multiple of 8 (50264), learned
# positions, no recomputation, 1M tokens a step (512 and 128 sequences). Assumed: 16k tokens
# per micro-batch (the configs' per-GPU batch for 80 GB, 4 at 2k and 8 at 8k, would not fit
# the 8k run without recomputation in the model).
for s, mb, gb, pos in ((2048, 8, 512, "learned"), (8192, 2, 128, "learned")):
    name = "fa2-gpt3-2p7b-s%d" % s
    text = """# Cross-check (crosscheck.py): FlashAttention-2 paper Table 1, GPT3-2.7B at {s} tokens on 8
# A100 80GB; published {t} TFLOP/s per GPU (its count). docs/calibration.md, "Fused attention".
name: {name}
{topo}model:
  name: gpt3-2p7b
  layers: 32
  hidden: 2560
  heads: 20
  ffn: 10240
  vocab: 50264
  activation: gelu
  norm: layernorm
  position: {pos}{maxseq}
  bias: true
  tied_embeddings: true
  dropout: 0.1
training:
  seq_len: {s}
  global_batch: {gb}
  micro_batch: {mb}
  precision: bf16
  recompute: none
  flash_attention: true
parallel:
  dp: 8
  zero: 1
simulation:
  steps: 1
  timeline: false
""".format(s=s, t={2048: 205, 8192: 225}[s], name=name, topo=A100_TOPO.format(nodes=1), gb=gb, mb=mb,
           pos=pos, maxseq="\n  max_seq_len: %d" % s if pos == "learned" else "")
    open(os.path.join(out, name + ".yaml"), "w").write(text)
