#!/usr/bin/python3
"""The validation suite: runs the scenarios of test/validation/scenarios (one per published
row, written by gen.py), compares with the published tables and writes or checks
docs/validation.md.

    validate.py STEPSIM SOURCE_ROOT [--write] [--jobs N] [--ranks N] [--only PREFIX[,PREFIX...]]

--only runs the rows whose scenario names start with one of the prefixes and fails when one
of them does not run (the committed tables are not compared).

Where Open MPI's mpirun is on PATH the rows run distributed, as `stepsim sweep` runs over
lists of scenario files under `mpirun -n N` (N: --ranks, default the number of cores;
--ranks 0: no MPI): the rows below 1,024 GPUs as one sweep, the large ones (up to ~17 GiB
each) as a second with as many ranks as the machine's memory holds at 18 GiB a run; where
that is one rank, they run one at a time as plain `stepsim run`s, which write no results
file. Without mpirun, a pool of --jobs processes (default 2) runs the small rows and the
large ones run one at a time; so do the rows of a sweep when mpirun fails to start. The
results are the same either way.

--write rewrites docs/validation.md from this run. Without it the run is checked against the
committed table: it fails when a table's mean absolute error grows by more than 1 point, or a
row that ran before no longer runs (the regression guard).

Simulated throughput is computed with each table's own FLOP convention from the simulated
step time: A100 (Narayanan et al. 2021, Eq. 3, recompute included)
    F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),   TFLOP/s per GPU = F / (step time x GPUs);
the same for the ZeRO-3 rows (the same paper's Table 2);
H100 (Megatron-Core): model FLOPs without recompute, which is stepsim's tflops_per_gpu for
these GELU MHA models (docs/models.md). torchtitan: tokens/s per GPU, the global batch's
tokens over the simulated step time and the GPUs, and the peak memory beside the logged one.
The A100 2022 and NeMo tables publish step times: the error is in throughput, published time
over simulated time - 1."""
import concurrent.futures, csv, json, os, re, resource, shutil, subprocess, sys, tempfile, time

stepsim, root = sys.argv[1:3]
args = sys.argv[3:]
write = "--write" in args
jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 2
only = args[args.index("--only") + 1] if "--only" in args else ""
ranks = int(args[args.index("--ranks") + 1]) if "--ranks" in args else (os.cpu_count() or 1)
mpirun = shutil.which("mpirun") if ranks >= 1 else None
if write and only:
    sys.exit("validate.py: --write rewrites the whole table: it cannot take --only")
TIMEOUT = 1800
MEM_LIMIT = 18 << 30  # address space per run: a trace that does not fit fails cleanly
scen_dir = os.path.join(root, "test", "validation", "scenarios")
doc = os.path.join(root, "docs", "validation.md")
data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def rows(name):
    with open(os.path.join(data, name)) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


cases = []
for r in rows("megatron2021_weak_scaling.csv"):
    h, L, gb = int(r["hidden"]), int(r["layers"]), int(r["global_batch"])
    s, V = 2048, 51200
    F = 96 * gb * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    cases.append(dict(table="A100", row="%sB" % r["params_B"], file="a100-%sb" % r["params_B"].replace(".", "p"),
                      gpus=int(r["gpus"]), layout="TP %s PP %s DP %s" % (r["tp"], r["pp"], r["dp"]),
                      published=float(r["tflops_per_gpu"]), flops=F))
for r in rows("megatron_h100_weak_scaling.csv"):
    cases.append(dict(table="H100", row=r["model"], file="h100-%s" % r["model"].lower().replace(".", "p"),
                      gpus=int(r["gpus"]), layout="TP %s PP %s DP %s" % (r["tp"], r["pp"], r["dp"]),
                      published=float(r["tflops_per_gpu"]), flops=None))
with open(os.path.join(data, "korthikanti2022_iteration.csv")) as f:
    for r in csv.DictReader(l for l in f if not l.startswith("#")):
        for mode, col, what in (("full", "full_recompute_s", "full recompute"),
                                ("present", "present_work_s", "SP + selective")):
            cases.append(dict(table="A100-2022", row="%s, %s" % (r["model"], what),
                              file="k2022-%s-%s" % (r["model"].lower(), mode), gpus=int(r["gpus"]),
                              layout="TP %s PP %s" % (r["tp"], r["pp"]), published=float(r[col]),
                              flops=None, time=True))
# DeepSpeed ZeRO-3 (data/deepspeed_zero3_2021.csv): TFLOP/s per GPU by the same Eq. 3
for r in rows("deepspeed_zero3_2021.csv"):
    h, L, gb = int(r["hidden"]), int(r["layers"]), int(r["global_batch"])
    s, V = 2048, 51200
    F = 96 * gb * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    cases.append(dict(table="ZeRO-3", row="%sB" % r["params_B"], file="ds-z3-%sb-%sg" % (r["params_B"], r["gpus"]),
                      gpus=int(r["gpus"]), layout="ZeRO-3 DP %s" % r["gpus"],
                      published=float(r["tflops_per_gpu"]), flops=F))
# torchtitan (data/torchtitan_llama.csv): tokens/s per GPU, the global batch's tokens over the
# simulated step and the GPUs; eager and torch.compile rows run their own scenarios
# (gen.py's tt_file: training.compile false and true).
TT_GPU = {"h100-sxm (96 GB HBM2e 500 W)": "gt", "a100-sxm-80gb": "a100", "h100-sxm": "h100",
          "b200 (power limited)": "b200"}
TT_AC = {"none": "noac", "selective (layer)": "sac-layer", "selective (per-op SAC)": "sac-op",
         "full": "fullac"}
TT_GPU_LABEL = {"gt": "H100 96GB 500W", "a100": "A100 80GB", "h100": "H100 SXM", "b200": "B200"}
for r in rows("torchtitan_llama.csv"):
    tp, gpus = int(r["tp"]), int(r["gpus"])
    gpu = TT_GPU[r["gpu"]]
    f = "tt-%s-%s-%sg%s-mb%s-%s%s%s" % (
        gpu, r["model"].replace(".", "p"), r["gpus"], "-tp%d" % tp if tp > 1 else "",
        r["local_batch"], TT_AC[r["activation_checkpointing"]], "-async" if "async TP" in r["techniques"] else "",
        "" if "compile" in r["techniques"] else "-eager")
    cases.append(dict(table="torchtitan", row="%s: %s, %s, %s" % (r["table"], r["model"], TT_GPU_LABEL[gpu], r["techniques"]),
                      file=f, gpus=gpus, gpu=gpu,
                      layout="FSDP %s%s, AC %s" % (r["fsdp"], " TP %d" % tp if tp > 1 else "", r["activation_checkpointing"]),
                      published=float(r["tokens_per_s_per_gpu"]), flops=None, tokens=int(r["global_batch"]) * int(r["seq_len"]),
                      pub_mem=float(r["peak_mem_gib"]) if r["peak_mem_gib"] else None, pub_mem_text=r["peak_mem_gib"]))
# NeMo (data/nemo_llama31_h100.csv): the measured train_step_timing, bf16 and fp8 rows in
# tables of their own
for r in rows("nemo_llama31_h100.csv"):
    fp8 = r["precision"] == "fp8"
    tp, pp, cp, gpus = (int(r[k]) for k in ("tp", "pp", "cp", "gpus"))
    size = r["model"].replace("llama3.1-", "")
    cases.append(dict(table="NeMo-fp8" if fp8 else "NeMo",
                      row="Llama 3.1 %s%s" % (size.upper(), ", %s layers" % r["layers"] if r["proxy"] == "True" else ""),
                      file="nemo-%s-%sg%s" % (size, r["gpus"], "-fp8" if fp8 else ""), gpus=gpus,
                      layout="TP %d PP %d CP %d DP %d" % (tp, pp, cp, gpus // (tp * pp * cp)),
                      published=float(r["step_time_s"]), flops=None, time=True))
cases = [c for c in cases if any(c["file"].startswith(o) for o in only.split(","))]
TABLES = ("A100", "H100", "A100-2022", "torchtitan", "NeMo", "NeMo-fp8", "ZeRO-3")


def schedule(c):
    """The micro-batch and pipeline schedule the row's scenario runs, for the layout column."""
    text = open(os.path.join(scen_dir, c["file"] + ".yaml")).read()
    mb = re.search(r"^  micro_batch: (\d+)", text, re.M).group(1)
    v = re.search(r"virtual_stages: (\d+)", text)
    return ", mb %s" % mb + (", v %s" % v.group(1) if v else "")


for c in cases:
    c["layout"] += schedule(c)


# An AddressSanitizer build (the `asan` test setup) reserves terabytes of address space for
# its shadow memory and cannot start under an address-space limit: it runs without one.
SANITIZED = b"__asan_init" in open(stepsim, "rb").read()


def limit():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def run(c):
    t0 = time.time()
    try:
        p = subprocess.run([stepsim, "run", os.path.join(scen_dir, c["file"] + ".yaml"), "--json"],
                           capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return c, None, "timed out after %d s" % TIMEOUT, time.time() - t0
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if "step(s) done on every GPU" not in l]
        why = lines[-1] if lines else "exit %d" % p.returncode
        if "out of memory" in why or "alloc" in why or p.returncode < 0:
            why = "needs more than %d GiB of memory" % (MEM_LIMIT >> 30)
        return c, None, why[:200], time.time() - t0
    return c, json.loads(p.stdout), None, time.time() - t0


results = {}
# rows that share a scenario (torchtitan's eager and compiled runs) run once: the first of
# them runs, the others take its result
twins, runs = {}, []
for c in cases:
    if c["file"] in twins:
        twins[c["file"]].append(c)
    else:
        twins[c["file"]] = []
        c["rep"] = True
        runs.append(c)
small = [c for c in runs if c["gpus"] < 1024]
large = [c for c in runs if c["gpus"] >= 1024]  # one at a time: each may need most of the memory


def record(c, d, err, wall):
        why = err
        if d:
            if c.get("tokens"):  # tokens/s per GPU
                sim = c["tokens"] / (d["step_time_s"] * c["gpus"])
                err = 100 * (sim / c["published"] - 1)
                pub_step = c["tokens"] / (c["published"] * c["gpus"])
            elif c.get("time"):  # published iteration time: the error is in throughput, as above
                sim, err = d["step_time_s"], 100 * (c["published"] / d["step_time_s"] - 1)
                pub_step = c["published"]
            else:
                sim = c["flops"] / (d["step_time_s"] * c["gpus"]) / 1e12 if c["flops"] else d["tflops_per_gpu"]
                err = 100 * (sim - c["published"]) / c["published"]
                pub_step = d["step_time_s"] * sim / c["published"]  # the same FLOPs at the published rate
            # the mean time a GPU computes: the step less its idle share (bubbles of every cause)
            c.update(sim=sim, err=err, step=d["step_time_s"], pub_step=pub_step,
                     compute=d["step_time_s"] * (1 - d["bubble_fraction"]),
                     mem=d["peak_mem_bytes"] / 2**30, status=d["status"], wall=wall)
        else:
            c.update(sim=None, err=None, why=err, wall=wall)
        results.setdefault(c["file"], c)
        unit = "s" if c.get("time") else "tokens/s" if c.get("tokens") else "TFLOP/s"
        print("%-14s %s" % (c["file"], ("%.2f vs %.2f %s (%+.1f%%), %.0f s wall" % (c["sim"], c["published"], unit, c["err"], wall))
                                     if c["sim"] else "not run: " + err), file=sys.stderr)
        if c.get("rep"):
            for t in twins[c["file"]]:
                record(t, d, why, wall)


def mem_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) << 10
    return MEM_LIMIT


def sweep(batch, n):
    """Runs `batch` as one `stepsim sweep` over their scenario files under `mpirun -n n`; each
    run is a child process of its rank, under the same memory limit as a lone run."""
    if not batch:
        return
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "validation.yaml")
        with open(spec, "w") as f:
            f.write("base:\n" + "".join("  - %s\n" % os.path.abspath(os.path.join(scen_dir, c["file"] + ".yaml"))
                                         for c in batch))
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [mpirun, "-n", str(n)] + (["--oversubscribe"] if n > (os.cpu_count() or 1) else []) + \
              [stepsim, "sweep", spec, "-o", os.path.join(tmp, "out.h5"), "--json", "--no-timeline"]
        t0 = time.time()
        print("%d rows: stepsim sweep under mpirun -n %d" % (len(batch), n), file=sys.stderr)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=limit,
                               timeout=TIMEOUT * len(batch))
            objs = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
            why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]
        except subprocess.TimeoutExpired:
            objs, why = [], "timed out"
        if not objs and why != "timed out":  # mpirun itself failed: run them without it
            print("mpirun gave no results (%s); running the rows as plain processes" % why,
                  file=sys.stderr)
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(jobs, n)) as ex:
                for got in ex.map(run, batch):
                    record(*got)
            return
        wall = (time.time() - t0) / len(batch)  # per row, on average
        for i, c in enumerate(batch):
            d = objs[i] if i < len(objs) else None
            if d and d.get("status") in ("ok", "oom"):
                record(c, d, None, wall)
            else:
                err = (d or {}).get("error") or why
                if d and d.get("status") == "error" and ("memory" in err or "signal" in err):
                    err = "needs more than %d GiB of memory" % (MEM_LIMIT >> 30)
                record(c, None, err, wall)


if mpirun:
    sweep(small, ranks)
    n_large = min(ranks, mem_total() // MEM_LIMIT)
    if n_large >= 2:
        sweep(large, n_large)
    else:  # one at a time: a plain run, without the sweep's results file (~1 GB, 2x the time)
        for c in large:
            record(*run(c))
else:
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for got in ex.map(run, small):
            record(*got)
    for c in large:
        record(*run(c))


def summary(table, keep=lambda c: True):
    errs = [abs(c["err"]) for c in cases if c["table"] == table and c["err"] is not None and keep(c)]
    if not errs:
        return None, None, 0
    return sum(errs) / len(errs), max(errs), len(errs)


if write:
    # MosaicML's MPT FSDP runs at 16,384-65,536 tokens (a cross-check, crosscheck_mpt.py:
    # seconds): what `stepsim run` quotes for FSDP runs longer than these tables' 8,192
    # tokens; run first, so that a failure leaves both files as they were
    p = subprocess.run(["/usr/bin/python3", os.path.join(root, "test", "validation", "crosscheck_mpt.py"),
                        stepsim, root, "--summary"], capture_output=True, text=True)
    if p.returncode != 0:
        # its first line names the row and stepsim's error (the scenario's text follows)
        sys.exit("validate.py: crosscheck_mpt.py --summary failed: " +
                 (p.stderr.strip().splitlines() or ["(no message)"])[0])
    mpt = json.loads(p.stdout)
    for fam in ("a100", "h100"):
        if "long" not in mpt.get(fam, {}):
            sys.exit("validate.py: crosscheck_mpt.py --summary: no %s rows of 16,384 tokens or more" % fam)
    # BigScience's Megatron-DeepSpeed runs (a cross-check, crosscheck_bigscience.py: about
    # a minute): what `stepsim run` quotes for A100 runs of DeepSpeed's BF16_Optimizer
    p = subprocess.run(["/usr/bin/python3", os.path.join(root, "test", "validation",
                                                         "crosscheck_bigscience.py"),
                        stepsim, root, "--summary"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("validate.py: crosscheck_bigscience.py --summary failed: " +
                 (p.stderr.strip().splitlines() or ["(no message)"])[-1])
    bigscience = json.loads(p.stdout)
    out = ["# Validation against published training throughput", "",
           "Generated by `scripts/validate.sh` (test/validation/validate.py) from the scenarios in",
           "`test/validation/scenarios/` (written by `test/validation/gen.py` from",
           "`test/validation/data/`); rerun it after changing the model or the catalog. The",
           "validation suite (`meson test -C build --setup validation --suite validation`) fails when a table's mean",
           "absolute error grows by more than 1 point over the numbers below, or when the A100 matmul",
           "plateau no longer holds its fit to the layer benchmark (`test/validation/calibrate.py --check`).",
           "Step times: the published one (the row's FLOPs, or tokens, at the published rate), the simulated one, and",
           "the simulated compute (the mean time a GPU's compute stream is busy: the step less its",
           "bubbles of every cause), so that published − compute is what the real run spent outside",
           "the modelled kernels.", ""]
    for table, title, note in (
            ("A100", "Megatron-LM on DGX A100 (Narayanan et al. 2021, Table 1)",
             "TFLOP/s per GPU with the paper's Eq. 3 (recompute included) over the simulated step time. "
             "Micro-batch (mb), virtual pipeline stages (v; none: plain 1F1B) and data parallelism "
             "as the paper's launch script runs them (Megatron-LM `examples/sc21/run_table_1.sh`: "
             "PyTorch DDP, overlapped with the last backward, where PP is 1; Megatron's own DDP, "
             "after the flush, elsewhere). Assumed (not published): fp16, dropout 0.1, no flash "
             "attention, no overlap of the input-gradient all-reduce with the weight-gradient GEMM "
             "(Megatron added it after these runs)."),
            ("H100", "Megatron-Core on H100 (Megatron-LM README, r0.8.0)",
             "Model TFLOP/s per GPU (no recompute FLOPs). Assumed (not published): micro-batch 1 (mb), "
             "selective recompute, GELU MHA GPT with biases, flash attention, SP with TP overlap "
             "(and the input-gradient collective beside the weight-gradient GEMM), "
             "distributed optimizer with overlapped gradient reduce-scatter and parameter all-gather "
             "(stated: \"DP grad-reduce/param-gather overlap\") in Megatron-Core's default buckets of "
             "max(40M, 1M x DP) parameters, interleaved 1F1B with 2 chunks (v) where the "
             "layers per stage are even (else 1F1B; below, (12)). Stated: the throughputs "
             "include data loading, optimizer steps and logging, which stepsim does not model "
             "beyond the optimizer."),
            ("A100-2022", "Megatron-LM on DGX A100, 2022 (Korthikanti et al. 2022, Tables 3 and 5)",
             "Iteration time in seconds; the error is in throughput (published time / simulated "
             "time - 1), as in the tables above. No data parallelism; full recompute without SP, "
             "or SP with selective recompute (the paper's \"present work\"). Assumed (not "
             "published): fp16, dropout 0.1, no flash attention; stated: the input-gradient "
             "all-reduce overlapped with the weight-gradient GEMM (`tp_grad_overlap`). The A100 "
             "matmul plateau is calibrated on the same paper's Table 4 (one layer of the 22B model; "
             "docs/calibration.md), which none of these rows is."),
            ("torchtitan", "torchtitan FSDP2 and FSDP2 + TP on A100, H100 and B200 (pytorch/torchtitan, pytorch/ao)",
             "Tokens per second per GPU (torchtitan's tps: the global batch's tokens over the step "
             "time and the GPUs); peak memory against torchtitan's logged peak (the caching "
             "allocator's reserved bytes, its fragmentation included), with 10% as the target. "
             "Eager rows run `training.compile: false` (PyTorch's composite norms, RoPE and SwiGLU, "
             "and what eager autograd keeps for them), except the norms of the 3c Llama 3 8B and "
             "Llama 2 13B rows, whose configs chose torchtitan's Triton `fused_rmsnorm` "
             "(`norm_kernel: fused`); torch.compile rows `true` (fused); the loss is PyTorch's (`cross_entropy: pytorch`), compiled with the model where the run's torchtitan compiled it (`compiled`: the 3b rows and the B200 row). Mapped: FSDP2 as ZeRO-3 resharding after forward with one layer of prefetch; "
             "bf16 compute with fp32 gradient reduction (torchtitan's default), fp32 master weights "
             "and Adam; TP with sequence parallelism as DTensor runs it (`sp_implementation: dtensor`: each SP collective's [b, s, h] tensor copied once, the gathered inputs kept for the weight gradients), its input-gradient reduce-scatter not beside the "
             "weight-gradient GEMM (DTensor's backward), async TP as `tp_comm_overlap`; flash "
             "attention, PyTorch SDPA's FlashAttention-2 on H100 (`attention_kernel: fa2`) and on A100 (its catalog's default); AC none "
             "and full as stepsim's recompute none and full, torchtitan's per-op selective policy as "
             "`recompute: op`, its per-layer one (every second layer in full) as `recompute: full` "
             "with `recompute_every: 2`, both checkpointing blocks as FSDP's non-reentrant "
             "`checkpoint_wrapper` does, which stops re-running a block once its last saved tensor "
             "(the down GEMM's input) is rebuilt (`recompute_early_stop: true`). "
             "Assumed (not published): the A100 cluster (DGX A100 nodes, 8 x 200 Gb/s), the Grand "
             "Teton fabric (non-blocking, 8 x 400 Gb/s per host), the peak of its 96 GB HBM2e H100 "
             "at 500 W (912 TFLOP/s, between the SXM5's 989 and the NVL's 835 that the source "
             "brackets it by: `topologies/gpus/h100-96gb-500w.yaml`). Not modelled: torch.compile's "
             "fusions beyond the pointwise ops; the B200's power limit (the catalog's b200 is at full rating, with no "
             "attention table)."),
            ("NeMo", "NeMo / Megatron-Core Llama 3.1 on H100 (NVIDIA/dgxc-benchmarking, NeMo 24.09)",
             "Step time in seconds (train_step_timing); the error is in throughput (published time / "
             "simulated time - 1), as in the 2022 table. bf16 rows here, the fp8 rows of the same "
             "READMEs in the next table. The 405B rows on 32, 96 and 192 GPUs are "
             "the recipe's proxies, cut to 7, 21 and 42 layers. Stated by the recipe at the same "
             "commit (`llama3.1_{8b,70b,405b}.yaml`, `configure.sh`), not the README: no activation "
             "checkpointing; SP and Transformer Engine userbuffer TP overlap where TP > 1; cuDNN "
             "fused attention (`NVTE_FUSED_ATTN=1`); Apex's distributed optimizer (ZeRO-1 over dp x "
             "cp) with overlapped gradient reduce-scatter and parameter all-gather in 75 MB buckets "
             "(405B: 125), bf16 gradient reduction; NVLink SHARP off (`NCCL_NVLS_ENABLE=0`). Assumed "
             "(not published): DGX H100 nodes on a rail-optimized 8 x 400 Gb/s fabric, Apex's "
             "bucket_cap_mb as MiB of bf16 gradients, the input-gradient collective beside the "
             "weight-gradient GEMM (Megatron-Core's default). Rows of 1,024 GPUs or more simulate one "
             "data-parallel replica (`simulation.symmetry: dp`, within 0.2% of the full run on these "
             "rows). Not modelled: `defer_embedding_wgrad_compute`, data loading (the 405B runs read "
             "mock data, the others a real dataset)."),
            ("NeMo-fp8", "NeMo / Megatron-Core Llama 3.1 on H100 in fp8 (the same READMEs)",
             "The fp8 rows of the same recipes, layouts and batches as the bf16 table (the 405B "
             "proxies likewise), step time in seconds, the error in throughput. Transformer "
             "Engine's fp8 recipe (`training.precision: fp8`; docs/models.md, \"fp8\"): the "
             "linear layers' GEMMs in fp8 at the catalog's fp8 curve (the maximum achievable fp8 "
             "matmul, 0.709 of the H100's 1,979 TFLOP/s, times the in-training ratio (docs/calibration.md) "
             "calibrated on A100: an estimate), their inputs and output gradients cast to fp8 and "
             "transposed by a memory-bound kernel before each GEMM, their weights once per step, "
             "their sequence-parallel all-gathers in fp8; attention, the LM head and every other "
             "kernel in bf16 (the cast of a norm's output fused into the norm, as TE's "
             "LayerNormLinear does; under SP the row-parallel layers' output gradients cast as "
             "shards); in memory TE's cached fp8 weights and transposes (2 bytes per fp8 "
             "weight) and the fp8 casts the linear layers keep for their weight gradients. Not "
             "modelled: the amax reductions and scale updates of delayed scaling (a few small "
             "kernels and one all-reduce per pass)."),
            ("ZeRO-3", "DeepSpeed ZeRO-3 on DGX A100 (Narayanan et al. 2021, Table 2)",
             "TFLOP/s per GPU with the paper's Eq. 3 (recompute included), as in the A100 table: GPT-3 "
             "175B with DeepSpeed's ZeRO-3 (`fsdp.implementation: deepspeed`) and no model "
             "parallelism on the same cluster, global batch 1536, one micro-batch per GPU. Assumed "
             "(not published): DeepSpeed as its code and defaults of spring 2021 ran on PyTorch "
             "before 1.10 (`sync_fetch` and `list_collectives`: a device synchronization at each "
             "fetch and before each tensor's gather, each tensor gathered and reduce-scattered by "
             "a list collective whose N copies the host issues; Megatron's fused query_key_value "
             "one tensor, `model.qkv_fused`; parameters gathered ahead up to 5e7 elements, fp16 "
             "gradients reduce-scattered in buckets of 5e8, tensors of at most 1e5 elements kept "
             "whole, a gathered tensor kept for its next use within 1e9 elements, "
             "`fsdp.max_reuse_distance`), eager PyTorch (`training.compile: false`: 10 us of host time an op) running Megatron's model code (Apex's fused LayerNorm: `norm_kernel: fused`), fp16 "
             "with fp32 master weights and Adam, full recompute, dropout 0.1, no flash attention. "
             "One data-parallel replica simulated (`simulation.symmetry: dp`). Not modelled: the "
             "copies' GPU time and whatever else the runs lost (\"The ZeRO-3 table\" below).")):
        mean, worst, n = summary(table)
        timed = table in ("A100-2022", "NeMo", "NeMo-fp8")
        tokens = table == "torchtitan"
        if tokens:
            out += ["## " + title, "", note, "",
                    "| row | GPUs | layout | published (tokens/s/GPU) | simulated | error | step (s): published / simulated / compute | peak GiB: published / simulated | memory error |",
                    "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
        elif timed:
            out += ["## " + title, "", note, "",
                    "| row | GPUs | layout | published (s) | simulated (s) | error | compute (s) | peak (GiB) |",
                    "|---|---:|---|---:|---:|---:|---:|---:|"]
        else:
            out += ["## " + title, "", note, "",
                    "| row | GPUs | layout | published | simulated | error | step (s): published / simulated / compute | peak (GiB) |",
                    "|---|---:|---|---:|---:|---:|---:|---:|"]
        for c in cases:
            if c["table"] != table:
                continue
            if c["sim"] is None:
                out.append("| %s | %d | %s | %.2f | not run: %s | | | |%s" % (c["row"], c["gpus"], c["layout"],
                                                                            c["published"], c["why"], " |" if tokens else ""))
            elif tokens:
                pub_mem = c["pub_mem"]
                out.append("| %s | %d | %s | %.0f | %.0f | %+.1f%% | %.3f / %.3f / %.3f | %s / %.1f%s | %s |" % (
                    c["row"], c["gpus"], c["layout"], c["published"], c["sim"], c["err"], c["pub_step"],
                    c["step"], c["compute"], c["pub_mem_text"] or "-", c["mem"],
                    " (oom)" if c["status"] == "oom" else "",
                    "%+.1f%%" % (100 * (c["mem"] / pub_mem - 1)) if pub_mem else ""))
            elif timed:
                out.append("| %s | %d | %s | %.2f | %.2f | %+.1f%% | %.2f | %.1f |" % (
                    c["row"], c["gpus"], c["layout"], c["published"], c["sim"], c["err"], c["compute"], c["mem"]))
            else:
                out.append("| %s | %d | %s | %.1f | %.1f | %+.1f%% | %.3f / %.3f / %.3f | %.1f |" % (
                    c["row"], c["gpus"], c["layout"], c["published"], c["sim"], c["err"], c["pub_step"],
                    c["step"], c["compute"], c["mem"]))
        out += ["", "**%s: mean absolute error %.1f%%, max %.1f%% over %d rows.**" % (table, mean or 0, worst or 0, n), ""]
        if tokens:
            merrs = [abs(100 * (c["mem"] / c["pub_mem"] - 1)) for c in cases
                     if c["table"] == table and c["sim"] is not None and c["pub_mem"]]
            if merrs:
                out += ["**%s peak memory: mean absolute error %.1f%%, max %.1f%% over %d rows with a logged "
                        "peak; %d within 10%%.**" % (table, sum(merrs) / len(merrs), max(merrs), len(merrs),
                                                     sum(1 for e in merrs if e <= 10)), ""]
    text = "\n".join(out) + "\n"
    marker = "<!-- end of generated tables -->"
    tail = ""
    if os.path.exists(doc):
        old = open(doc).read()
        if marker in old:
            tail = old[old.index(marker):]
    open(doc, "w").write(text + "\n" + (tail or marker + "\n"))
    print("wrote", doc, file=sys.stderr)
    # the figures `stepsim run` and `report` quote (sim/cli/validated.h)
    hdr = ["/* Generated by test/validation/validate.py --write (scripts/validate.sh --write): the",
           " * validated error of step-time predictions, as docs/validation.md tables it. */",
           "#ifndef SIM_CLI_VALIDATED_H", "#define SIM_CLI_VALIDATED_H", ""]
    for table in TABLES:
        mean, worst, n = summary(table)
        key = table.upper().replace("-", "_")
        hdr += ["#define STEPSIM_VALIDATED_%s_MAPE %.1f" % (key, mean or 0),
                "#define STEPSIM_VALIDATED_%s_MAX %.1f" % (key, worst or 0),
                "#define STEPSIM_VALIDATED_%s_ROWS %d" % (key, n)]
    # the torchtitan table by GPU, for the FSDP runs of each (an A100 run is not told the
    # H100 rows' error, nor either the power-limited B200's)
    for key, gpus in (("TORCHTITAN_A100", ("a100",)), ("TORCHTITAN_H100", ("gt", "h100"))):
        mean, worst, n = summary("torchtitan", lambda c: c.get("gpu") in gpus)
        hdr += ["#define STEPSIM_VALIDATED_%s_MAPE %.1f" % (key, mean or 0),
                "#define STEPSIM_VALIDATED_%s_MAX %.1f" % (key, worst or 0),
                "#define STEPSIM_VALIDATED_%s_ROWS %d" % (key, n)]
    for fam in ("a100", "h100"):
        m = mpt[fam]["long"]
        key = "MPT_%s_LONG" % fam.upper()
        hdr += ["#define STEPSIM_VALIDATED_%s_MAPE %.1f" % (key, m["mape"]),
                "#define STEPSIM_VALIDATED_%s_SIGNED %.1f" % (key, m["signed"]),
                "#define STEPSIM_VALIDATED_%s_MAX %.1f" % (key, m["max"]),
                "#define STEPSIM_VALIDATED_%s_ROWS %d" % (key, m["rows"])]
    hdr += ["#define STEPSIM_VALIDATED_BIGSCIENCE_%s %s" % (k.upper(), bigscience[k])
            for k in ("mape", "signed", "max", "rows")]
    hdr += ["", "#endif", ""]
    open(os.path.join(root, "sim", "cli", "validated.h"), "w").write("\n".join(hdr))
    sys.exit(0)

# the regression guard
old = open(doc).read()
bad = 0
if only:
    missed = [c["file"] for c in cases if c["err"] is None]
    for f in missed:
        print("FAIL: %s did not run" % f, file=sys.stderr)
    sys.exit(1 if missed or not cases else 0)
for table in TABLES:
    m = re.search(r"\*\*%s: mean absolute error ([0-9.]+)%%, max ([0-9.]+)%% over (\d+) rows" % table, old)
    mean, worst, n = summary(table)
    if not m or only:
        continue
    was, was_n = float(m.group(1)), int(m.group(3))
    print("%s: mean absolute error %.1f%% (committed %.1f%%), %d rows (committed %d)" % (table, mean or 0, was, n, was_n))
    if mean is None or mean > was + 1.0 or n < was_n:
        bad += 1
        print("FAIL: %s validation regressed" % table, file=sys.stderr)
sys.exit(1 if bad else 0)
