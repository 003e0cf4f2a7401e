#!/usr/bin/python3
"""Results people look at: the HDF5 tables' invariants on a multi-run file, the Perfetto
export, trace -> replay, `stepsim report` and the training budget.

    test_results.py STEPSIM MULTI_RUN SOURCE_ROOT CONTRACT_CHECK

MULTI_RUN is the test tool that writes several real runs into one file. Each expected
number is derived in a comment next to it."""
import csv, io, json, os, subprocess, sys, tempfile

import h5py
import numpy as np

stepsim, multi_run, root, contract_check = sys.argv[1:5]
data = os.path.abspath(os.path.join(root, "test", "cli", "data"))
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def near(a, b, rel, what, abs_tol=0.0):
    check(abs(a - b) <= rel * abs(b) + abs_tol, "%s: %.12g vs expected %.12g" % (what, a, b))


def run(*args):
    p = subprocess.run([stepsim] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def one_error(err):
    lines = [l for l in err.splitlines() if not l.startswith("  ")]
    return len(lines) == 1 and ": error: " in lines[0]


def scenario(tmp, name, base, extra):
    """A scenario file `name` that includes `base` (a test data file) with extra YAML keys."""
    text = open(os.path.join(data, base)).read()
    for ref in ("ideal-gpu.yaml", "ideal-pair.yaml", "tiny-gpt.yaml", "tiny-moe.yaml"):
        text = text.replace(" " + ref, " " + os.path.join(data, ref))
    text = "\n".join(l for l in text.splitlines() if not l.startswith("name:"))
    path = os.path.join(tmp, name + ".yaml")
    open(path, "w").write("name: %s\n%s\n%s\n" % (name, text, extra))
    return path


def decode(a):
    return np.array([x.decode() for x in a])


def table_invariants(f, name):
    """The documented relations between a run's tables (docs/hdf5-schema.md, "Invariants")."""
    g = f["runs"][name]
    summ = g["summary"][0]
    ranks, steps, tl, bub = g["ranks"][:], g["steps"][:], g["timeline"][:], g["bubbles"][:]
    n_steps = len(steps)
    check(n_steps == summ["steps"], "%s: one steps row per step" % name)
    # the last step's window: end of step N-1 .. end of step N
    w0 = steps["end_s"][-2] if n_steps > 1 else 0.0
    w1 = steps["end_s"][-1]
    window = w1 - w0
    eps = 1e-12 * max(1.0, w1)
    # timeline: per rank and ordered stream (p2p is unordered by design), intervals do not
    # overlap; every op of step k ends by the end of step k and starts after the rank's
    # last op of step k-1 ended
    stream = decode(tl["stream"])
    ok_overlap, ok_inside = True, True
    for r in np.unique(tl["rank"]):
        mine = tl["rank"] == r
        for s in np.unique(stream[mine]):
            if s == "p2p":
                continue
            sel = tl[mine & (stream == s)]
            order = np.argsort(sel["start_s"], kind="stable")
            st, en = sel["start_s"][order], sel["end_s"][order]
            if np.any(st[1:] < en[:-1] - eps):
                ok_overlap = False
        prev_end = 0.0
        for k in range(1, n_steps + 1):
            sel = tl[mine & (tl["step"] == k)]
            if len(sel) == 0:
                continue
            if sel["end_s"].max() > steps["end_s"][k - 1] + eps or sel["start_s"].min() < prev_end - eps:
                ok_inside = False
            prev_end = sel["end_s"].max()
    check(ok_overlap, "%s: a rank's ops on one stream never overlap" % name)
    check(ok_inside, "%s: every op lies inside its step (for its rank)" % name)
    check(np.all(tl["end_s"] >= tl["start_s"]), "%s: no negative durations" % name)
    # bubbles: the last step only, inside its window
    check(np.all(bub["step"] == n_steps), "%s: bubbles are the last step's" % name)
    check(np.all((bub["start_s"] >= w0 - eps) & (bub["end_s"] <= w1 + eps) & (bub["end_s"] > bub["start_s"])),
          "%s: bubbles lie inside the last step's window" % name)
    # per rank: compute + idle = the window; bubble_s = idle_s = the rank's bubble rows
    for row in ranks:
        mine = bub[bub["rank"] == row["rank"]]
        idle = float(np.sum(mine["end_s"] - mine["start_s"]))
        near(row["compute_s"] + row["idle_s"], window, 1e-9, "%s rank %d: compute + idle = step" % (name, row["rank"]))
        near(row["bubble_s"], idle, 1e-9, "%s rank %d: bubble_s = its bubbles" % (name, row["rank"]), 1e-15)
        near(row["idle_s"], row["bubble_s"], 1e-12, "%s rank %d: every idle interval is classified" % (name, row["rank"]), 1e-15)
        # communication busy time: overlapping ops count once, inside the window
        check(0 <= row["comm_s"] <= window * (1 + 1e-12), "%s rank %d: 0 <= comm_s <= step" % (name, row["rank"]))
    # summary: bubble_fraction and its split, and exposed communication, from the bubbles
    total = float(np.sum(bub["end_s"] - bub["start_s"]))
    n = len(ranks)
    near(summ["bubble_fraction"], total / n / window, 1e-9, "%s: bubble_fraction from bubbles" % name, 1e-15)
    cause = decode(bub["cause"])
    for c in ("pipeline", "dp", "tp", "pp", "ep", "cp", "offload", "host", "other"):
        t = float(np.sum((bub["end_s"] - bub["start_s"])[cause == c]))
        near(summ["bubble_by_cause." + c], t / n / window, 1e-9, "%s: bubble_by_cause.%s" % (name, c), 1e-15)
        if c in ("dp", "tp", "pp", "ep", "cp"):
            near(summ["exposed_comm_s." + c], t / n, 1e-9, "%s: exposed_comm_s.%s" % (name, c), 1e-15)
    return len(tl)


def multi_run_file(tmp):
    # three real runs: DDP on the ideal pair, a 1F1B pipeline of 4 stages, and the pair
    # with context parallelism; plus the contract check and the /sweep table
    paths = [scenario(tmp, "ddp", "ddp.yaml", ""),
             scenario(tmp, "pipe4", "pipe.yaml", ""),
             scenario(tmp, "cp2", "ddp.yaml", "")]
    # pipe.yaml's stage count and cp's keys go in by rewriting their YAML
    t = open(paths[1]).read().replace("pp: 2", "pp: 4")
    open(paths[1], "w").write(t)
    t = open(paths[2]).read().replace("flash_attention: false", "flash_attention: true").replace(
        "  dp: 2\n", "  dp: 1\n  cp: 2\n").replace("global_batch: 4", "global_batch: 2")
    open(paths[2], "w").write(t)
    out = os.path.join(tmp, "multi.h5")
    p = subprocess.run([multi_run, out] + paths, capture_output=True, text=True)
    check(p.returncode == 0, "multi_run: " + p.stderr)
    if p.returncode:
        return None
    c = subprocess.run(["/usr/bin/python3", contract_check, "h5", out], capture_output=True, text=True)
    check(c.returncode == 0, "contract-check multi-run: " + c.stdout)
    f = h5py.File(out, "r")
    check(sorted(f["runs"].keys()) == ["cp2", "ddp", "pipe4"], "three runs: %s" % list(f["runs"].keys()))
    sweep = f["sweep"][:]
    check(list(decode(sweep["name"])) == ["ddp", "pipe4", "cp2"], "/sweep in run order")
    rows = {}
    for name in ("ddp", "pipe4", "cp2"):
        rows[name] = table_invariants(f, name)
        # the values attribute lists each enumeration column's closed set
        vals = f["runs"][name]["timeline"].attrs["values"]
        for col in ("stream", "kind", "phase", "group"):
            allowed = [x for part in vals.split(";") if part.strip().startswith(col + ":")
                       for x in part.split(":")[1].split()]
            used = set(decode(f["runs"][name]["timeline"][col]))
            check(used <= set(allowed), "%s: %s values %s within %s" % (name, col, used, allowed))
    # the 4-stage pipeline idles (p-1)/(m+p-1) = 3/11 of the step in fill and drain (m = 8)
    near(f["runs"]["pipe4"]["summary"][0]["bubble_by_cause.pipeline"], 3 / 11, 2e-3, "pipe4 bubble")
    return out, f, rows


def perfetto(tmp, h5, f, rows):
    js = os.path.join(tmp, "trace.json")
    rc, out, err = run("export-perfetto", h5, "-o", js)
    check(rc == 2 and one_error(err) and "several runs" in err, "several runs need --run: " + err)
    check(not os.path.exists(js), "no output on error")
    rc, out, err = run("export-perfetto", h5, "--run", "pipe4", "-o", js)
    check(rc == 0, "export-perfetto: " + err)
    if rc:
        return
    d = json.load(open(js))
    ev = d.get("traceEvents", [])
    ok = all("ph" in e and "pid" in e and "name" in e for e in ev)
    check(ok, "every event has ph, pid, name")
    xs = [e for e in ev if e["ph"] == "X"]
    check(all("tid" in e and "ts" in e and "dur" in e and e["dur"] >= 0 and e["ts"] >= 0 for e in xs),
          "complete events: tid, ts, dur >= 0")
    ops = [e for e in xs if e.get("cat") != "bubble"]
    check(len(ops) == rows["pipe4"], "one op event per timeline row: %d vs %d" % (len(ops), rows["pipe4"]))
    bubbles = [e for e in xs if e.get("cat") == "bubble"]
    check(len(bubbles) == len(f["runs"]["pipe4"]["bubbles"]), "one bubble event per bubbles row")
    # begin/end events, if any, pair up per thread
    depth = {}
    for e in ev:
        if e["ph"] in ("B", "E"):
            k = (e["pid"], e["tid"])
            depth[k] = depth.get(k, 0) + (1 if e["ph"] == "B" else -1)
            check(depth[k] >= 0, "E without B")
    check(all(v == 0 for v in depth.values()), "B/E events match")
    counters = [e for e in ev if e["ph"] == "C"]
    check(len(counters) == len(f["runs"]["pipe4"]["memory"]), "one counter event per memory row")
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check("GPU 0 compute" in names and "GPU 3 bubbles" in names, "thread names: %s" % sorted(names)[:6])
    # times are microseconds: the last op ends at the last step's end
    near(max(e["ts"] + e["dur"] for e in ops) / 1e6, f["runs"]["pipe4"]["steps"]["end_s"][-1], 1e-6, "us")


def perfetto_absent_strings(tmp):
    """A file whose string cells are absent (test/fuzz/regressions/results/null-strings.h5:
    the run 'pipe' of test/cli/data/pipe.yaml, 2 ranks, with its timeline, bubbles and memory
    tables replaced by two rows each, chunked one row per chunk, of which only row 1 was
    written (rank 1, every string 'x'): row 0 reads as numbers 0 and strings NULL) exports
    them as empty strings instead of crashing."""
    h5 = os.path.join(root, "test", "fuzz", "regressions", "results", "null-strings.h5")
    js = os.path.join(tmp, "absent.json")
    rc, out, err = run("export-perfetto", h5, "-o", js)
    check(rc == 0, "export-perfetto with absent strings: rc %d: %s" % (rc, err))
    if rc:
        return
    ev = json.load(open(js))["traceEvents"]
    # two rows in each table: two op events, row 0's named "" in category "compute" (its
    # group absent), row 1's named "x" in category "x"; two bubble events, "" and "x"; two
    # counter events
    ops = [(e["name"], e["cat"]) for e in ev if e["ph"] == "X" and e["cat"] != "bubble"]
    check(ops == [("", "compute"), ("x", "x")], "op events: %s" % ops)
    bubbles = [e["name"] for e in ev if e["ph"] == "X" and e["cat"] == "bubble"]
    check(bubbles == ["", "x"], "bubble events: %s" % bubbles)
    check(len([e for e in ev if e["ph"] == "C"]) == 2, "two counter events")
    # a ranks table of 2^40 rows that stores none (ranks-2e40-rows.h5, 29 KB): refused as
    # invalid (exit 2, one error) before anything is allocated for its rows
    h5 = os.path.join(root, "test", "fuzz", "regressions", "results", "ranks-2e40-rows.h5")
    rc, out, err = run("export-perfetto", h5, "-o", js + "2")
    check(rc == 2 and one_error(err) and "claims 1099511627776 rows" in err,
          "a table claiming rows it does not store: rc %d: %s" % (rc, err))
    check(not os.path.exists(js + "2"), "no output for it")


def trace_replay(tmp):
    # trace then replay gives the run's JSON summary exactly (same plan, same replay)
    cases = [("ddp.yaml", []), ("pipe.yaml", ["--set", "parallel.pp=4"]),
             ("ddp.yaml", ["--set", "parallel.dp=1", "--set", "parallel.cp=2", "--set", "training.global_batch=2",
                           "--set", "training.flash_attention=true"]),
             ("ddp.yaml", ["--set", "model=%s" % os.path.join(data, "tiny-moe.yaml"), "--set", "parallel.ep=2"]),
             ("ddp.yaml", ["--set", "topology.gpu.matmul_k_overhead=128"]),
             # DeepSpeed's blocking fetch and list collectives: ops standing for several
             # host launches, and syncs (the launches and sync columns)
             ("ddp.yaml", ["--set", "parallel.zero=3", "--set", "parallel.fsdp.implementation=deepspeed",
                           "--set", "parallel.fsdp.persistence_threshold=0",
                           "--set", "parallel.fsdp.sync_fetch=true",
                           "--set", "parallel.fsdp.list_collectives=true"])]
    tr = os.path.join(tmp, "t.h5")
    for base, sets in cases:
        sc = os.path.join(data, base)
        rc, out, err = run("trace", sc, "-o", tr, *sets)
        check(rc == 0, "trace %s %s: %s" % (base, sets, err))
        rc1, a, err1 = run("run", sc, "--json", *sets)
        rc2, b, err2 = run("replay", tr, "--json")
        check(rc1 == 0 and rc2 == 0 and json.loads(a) == json.loads(b),
              "replay %s %s = run: %s / %s" % (base, sets, a[:200], b[:200] + err2))
    # The ops carry each matmul's inner dimension: with a per-tile overhead the step is
    # slower than without, and a file from before the inner column (dropped here) replays
    # its matmuls uncorrected, exactly as the run with no overhead.
    sc = os.path.join(data, "ddp.yaml")
    k0 = ["--set", "topology.gpu.matmul_k_overhead=128"]
    rc, out, err = run("trace", sc, "-o", tr, *k0)
    rc1, plain, err1 = run("run", sc, "--json")
    rc2, slowed, err2 = run("run", sc, "--json", *k0)
    check(rc == 0 and rc1 == 0 and rc2 == 0 and
          json.loads(slowed)["step_time_s"] > json.loads(plain)["step_time_s"],
          "matmul_k_overhead slows the step: %s %s %s" % (err, err1, err2))
    f = h5py.File(tr, "r+")
    ops = f["ops"][:]
    check(ops["inner"].max() > 0 and (ops["inner"][decode(ops["class"]) != ["matmul"] * len(ops)] == 0).all(),
          "inner set on matmuls only")
    bad = ops.copy()
    bad["inner"][0] = -1
    f["ops"][...] = bad
    f.close()
    rc, out, err = run("replay", tr)
    check(rc == 2 and one_error(err) and "/ops row 0" in err and "inner" in err,
          "a negative inner refused: " + err)
    f = h5py.File(tr, "r+")
    old = ops[[n for n in ops.dtype.names if n != "inner"]]
    del f["ops"]
    f.create_dataset("ops", data=np.asarray(old, dtype=[(n, ops.dtype[n]) for n in old.dtype.names]))
    f.close()
    rc, out, err = run("replay", tr, "--json")
    check(rc == 0 and json.loads(out)["step_time_s"] == json.loads(plain)["step_time_s"],
          "a trace without inner replays uncorrected: %s" % err)
    # Eager composite ops (Qwen3-0.6B's RMSNorms, RoPE and SwiGLU with training.compile:
    # false) carry inner 1 on their vector kernels, which the GPU's memory_efficiency_eager
    # times: slower than the run without that curve, and the trace replays to the run's
    # step; a vector op's inner other than 0 or 1 is refused.
    qwen = ["--set", "model=%s" % os.path.join(root, "workloads", "qwen3-0.6b.yaml"),
            "--set", "training.compile=false", "--set", "training.flash_attention=true",
            "--set", "training.seq_len=256"]
    slow = ["--set", "topology.gpu.memory_efficiency_eager=[[1 MB, 0.5]]"]
    rc, out, err = run("trace", sc, "-o", tr, *qwen, *slow)
    rc1, a, err1 = run("run", sc, "--json", *qwen, *slow)
    rc2, b, err2 = run("replay", tr, "--json")
    rc3, c, err3 = run("run", sc, "--json", *qwen)
    check(rc == rc1 == rc2 == rc3 == 0 and json.loads(a) == json.loads(b) and
          json.loads(a)["step_time_s"] > json.loads(c)["step_time_s"],
          "eager kernels: replay = run, slower than without the curve: %s %s %s %s" % (err, err1, err2, err3))
    f = h5py.File(tr, "r+")
    ops = f["ops"][:]
    vec = np.array(decode(ops["class"])) == "vector"
    check(set(ops["inner"][vec].tolist()) == {0.0, 1.0}, "vector ops: inner 0 or 1: %s" % set(ops["inner"][vec].tolist()))
    bad = ops.copy()
    bad["inner"][int(np.nonzero(vec)[0][0])] = 0.5
    f["ops"][...] = bad
    f.close()
    rc, out, err = run("replay", tr)
    check(rc == 2 and one_error(err) and "inner is 0, or 1" in err, "a vector op's inner 0.5 refused: " + err)
    # The host's issue: a list collective's copies are a host op standing for N = 2
    # launches, each fetch ends in a sync. A file without the launches and sync columns
    # replays every op as one launch without syncs: faster than the run it was traced
    # from. A launches count out of range, or one column without the other, is refused.
    # (nothing kept gathered for a later use: max_reuse_distance 0)
    ds = ["--set", "parallel.zero=3", "--set", "parallel.fsdp.implementation=deepspeed",
          "--set", "parallel.fsdp.persistence_threshold=0", "--set", "parallel.fsdp.list_collectives=true",
          "--set", "parallel.fsdp.max_reuse_distance=0"]
    rc, out, err = run("trace", sc, "-o", tr, "--set", "parallel.fsdp.sync_fetch=true", *ds)
    f = h5py.File(tr, "r+")
    ops = f["ops"][:]
    names = decode(ops["name"])
    copies = [i for i, n in enumerate(names) if n.endswith("_copies")]
    check(copies and all(ops["launches"][i] == 2 and decode(ops["kind"][i:i + 1]) == ["host"] for i in copies),
          "list copies: host ops of 2 launches")
    # tiny-gpt with no tensor kept whole: per layer 2 LayerNorms' weights and biases, q, k,
    # v, o, up and down (10 tensors), the embedding (1), the head's final LayerNorm (2) and
    # LM head (1): 24 tensors. One micro-batch per rank (4 sequences, micro-batch 2, dp 2):
    # each tensor gathered for the forward and again for the backward (48), its gradient
    # reduce-scattered (24), each with its copies. Syncs: before every gather, on the
    # kernel zeroing its buffer just issued (48), and one per unit and pass at its fetch (8;
    # the tiny units are all gathered ahead at once, 5e7 parameters of prefetch bucket), each
    # on the last op issued before it, never a zeroing kernel: 48 + 8 = 56
    r0 = [i for i in range(len(ops)) if ops["rank"][i] == 0]
    count = lambda name: sum(1 for i in r0 if names[i] == name)
    check((count("fsdp.gather"), count("fsdp.gather_copies"), count("fsdp.reduce_scatter"),
           count("fsdp.reduce_copies"), int(ops["sync"][r0].sum())) == (48, 48, 24, 24, 56),
          "list collectives and syncs of tiny-gpt: %s" % [count("fsdp.gather"), count("fsdp.reduce_scatter"),
                                                          int(ops["sync"][r0].sum())])
    # with q, k and v one tensor (model.qkv_fused) a layer has 8: 20 in all, 40 gathers
    rc, out, err = run("trace", sc, "-o", tr + "2", "--set", "model.qkv_fused=true", *ds)
    with h5py.File(tr + "2", "r") as f2:
        o2 = f2["ops"][:]
    n2 = list(decode(o2["name"][o2["rank"] == 0]))
    check(rc == 0 and n2.count("fsdp.gather") == 40 and n2.count("fsdp.reduce_scatter") == 20,
          "qkv_fused: %s %s" % (err, n2.count("fsdp.gather")))
    # with the head tied to the embedding the head holds its final LayerNorm's two tensors
    # only: 22 + 1 + 2 = 23 tensors, 46 gathers (no third one for an LM head it has not)
    rc, out, err = run("trace", sc, "-o", tr + "2", "--set", "model.tied_embeddings=true", *ds)
    with h5py.File(tr + "2", "r") as f2:
        o2 = f2["ops"][:]
    n2 = list(decode(o2["name"][o2["rank"] == 0]))
    check(rc == 0 and n2.count("fsdp.gather") == 46 and n2.count("fsdp.reduce_scatter") == 23,
          "tied head: %s %s" % (err, n2.count("fsdp.gather")))
    # a host synchronized after every pipeline send cannot pass it while 1F1B's sends wait
    # for receives the host has not issued: a deadlock, named at the sync
    pipe = os.path.join(data, "pipe.yaml")
    rc, out, err = run("trace", pipe, "-o", tr + "3")
    with h5py.File(tr + "3", "r+") as f3:
        o3 = f3["ops"][:]
        o3["sync"][decode(o3["stream"]) == "p2p"] = 1
        f3["ops"][...] = o3
    rc, out, err = run("replay", tr + "3")
    check(rc != 0 and "deadlock" in err and "its host waits at the sync on op" in err,
          "deadlock at a sync: rc %d: %s" % (rc, err))
    check(ops["sync"].sum() > 0 and set(ops["launches"][[i for i in range(len(ops)) if i not in copies]]) == {1},
          "syncs present, other ops one launch each")
    bad = ops.copy()
    bad["launches"][0] = -1
    f["ops"][...] = bad
    f.close()
    rc, out, err = run("replay", tr)
    check(rc == 2 and one_error(err) and "/ops row 0" in err and "launches" in err,
          "a negative launches refused: " + err)
    f = h5py.File(tr, "r+")
    old = ops[[n for n in ops.dtype.names if n != "sync"]]
    del f["ops"]
    f.create_dataset("ops", data=np.asarray(old, dtype=[(n, ops.dtype[n]) for n in old.dtype.names]))
    f.close()
    rc, out, err = run("replay", tr)
    check(rc == 2 and one_error(err) and "launches without column sync" in err,
          "launches without sync refused: " + err)
    f = h5py.File(tr, "r+")
    old = ops[[n for n in ops.dtype.names if n not in ("sync", "launches")]]
    del f["ops"]
    f.create_dataset("ops", data=np.asarray(old, dtype=[(n, ops.dtype[n]) for n in old.dtype.names]))
    f.close()
    rc, out, err = run("replay", tr, "--json")
    rc1, synced, err1 = run("run", sc, "--json", "--set", "parallel.fsdp.sync_fetch=true", *ds)
    check(rc == 0 and rc1 == 0 and json.loads(out)["step_time_s"] < json.loads(synced)["step_time_s"],
          "a trace without the host columns replays without syncs or extra launches: %s %s" % (err, err1))
    # Measured durations replace the roofline: a single ideal GPU (no communication) whose
    # every op is set to take 1 ms runs a step in (ops per step) ms; with the optimizer's
    # host-free DDP on one GPU every op is compute, so step = n_ops x 1 ms.
    sc = os.path.join(data, "ddp.yaml")
    rc, out, err = run("trace", sc, "-o", tr, "--set", "parallel.dp=1", "--set", "training.global_batch=2")
    f = h5py.File(tr, "r+")
    ops = f["ops"][:]
    check(set(decode(ops["kind"])) == {"compute"}, "one GPU: compute ops only")
    ops["duration_s"] = 1e-3
    f["ops"][...] = ops
    n = len(ops)
    f.close()
    rc, out, err = run("replay", tr, "--json")
    check(rc == 0, "replay with durations: " + err)
    if rc == 0:
        near(json.loads(out)["step_time_s"], n * 1e-3, 1e-9, "step = ops x 1 ms")
    # a dependency on a later op is refused with one error line naming the table row
    f = h5py.File(tr, "r+")
    deps = f["deps"][:]
    deps["on"][0] = deps["op"][0] + 1
    f["deps"][...] = deps
    f.close()
    rc, out, err = run("replay", tr)
    check(rc == 2 and one_error(err) and "/deps row 0" in err, "forward dependency refused: " + err)
    # not a trace file
    rc, out, err = run("replay", os.path.join(data, "ddp.yaml"))
    check(rc == 2 and one_error(err) and "not an HDF5 file" in err, "non-HDF5 refused: " + err)
    # a rank count that no longer matches the layout
    rc, out, err = run("trace", sc, "-o", tr)
    rc, out, err = run("replay", tr, "--set", "parallel.dp=1")
    check(rc == 2 and one_error(err) and "ranks" in err, "layout mismatch refused: " + err)
    # --topology replaces the topology: the 2-GPU pair with 10x the bandwidth cannot be
    # slower
    rc, slow, err = run("replay", tr, "--json")
    fast_topo = os.path.join(tmp, "fast-pair.yaml")
    open(fast_topo, "w").write(open(os.path.join(data, "ideal-pair.yaml")).read()
                               .replace("gpu: ideal-gpu.yaml", "gpu: %s/ideal-gpu.yaml" % data)
                               .replace("bandwidth: 10 GB/s", "bandwidth: 100 GB/s"))
    rc2, fast, err2 = run("replay", tr, "--topology", fast_topo, "--json")
    check(rc == 0 and rc2 == 0 and json.loads(fast)["step_time_s"] <= json.loads(slow)["step_time_s"],
          "--topology: faster links: %s %s" % (err, err2))


def report(tmp, h5):
    rc, out, err = run("report", h5)
    check(rc == 0, "report: " + err)
    f = h5py.File(h5, "r")
    tps = {n: f["runs"][n]["summary"][0]["tokens_per_s"] for n in f["runs"]}
    order = [n for n in sorted(tps, key=lambda n: -tps[n])]
    lines = [l.split()[0] for l in out.splitlines() if l.split() and l.split()[0] in tps]
    check(lines[:3] == order, "sorted by throughput: %s vs %s" % (lines[:3], order))
    rc, out, err = run("report", h5, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    check(rc == 0 and len(rows) == 3, "csv rows: %d" % len(rows))
    for r in rows:
        near(float(r["tokens_per_s"]), tps[r["name"]], 1e-15, "csv tokens/s of " + r["name"])
    # an OOM run is listed with its binding constraint
    oom = os.path.join(tmp, "oom.h5")
    rc, out, err = run("run", os.path.join(data, "ddp.yaml"), "-o", oom, "--set", "topology.gpu.memory=600 MiB")
    rc, out, err = run("report", oom)
    check(rc == 0 and "ddp: oom: " in out and "GiB" in out, "OOM run listed with its reason: " + out[-300:])
    rc, out, err = run("report", os.path.join(tmp, "missing.h5"))
    check(rc == 2 and one_error(err), "missing file: " + err)


def budget(tmp):
    # training.tokens: steps = ceil(tokens / (global_batch x seq_len)) = ceil(1e6 / (4 x 512))
    # = 489 (488.28 rounded up); time = steps x step time; GPU-hours = time / 3600 x 2 GPUs;
    # cost = GPU-hours x price
    sc = os.path.join(data, "ddp.yaml")
    rc, out, err = run("run", sc, "--json", "--set", "training.tokens=1e6",
                       "--set", "topology.price_per_gpu_hour=2.5")
    d = json.loads(out) if rc == 0 else {}
    b = d.get("budget", {})
    check(b.get("steps") == 489, "budget steps: %s" % b)
    near(b.get("time_to_train_s", 0), 489 * d.get("step_time_s", 0), 1e-12, "time to train")
    near(b.get("gpu_hours", 0), b.get("time_to_train_s", 0) / 3600 * 2, 1e-12, "GPU-hours")
    near(b.get("cost", 0), b.get("gpu_hours", 0) * 2.5, 1e-12, "cost")
    rc, out, err = run("run", sc, "--json")
    check("budget" not in json.loads(out), "no budget object without training.tokens")
    h5 = os.path.join(tmp, "budget.h5")
    rc, out, err = run("run", sc, "-o", h5, "--set", "training.tokens=1e6")
    rc, out, err = run("report", h5)
    check(rc == 0 and "training budget" in out and " 489 " in out, "report shows the budget: " + out[-400:])


with tempfile.TemporaryDirectory() as tmp:
    got = multi_run_file(tmp)
    if got:
        h5, f, rows = got
        perfetto(tmp, h5, f, rows)
        report(tmp, h5)
    perfetto_absent_strings(tmp)
    trace_replay(tmp)
    budget(tmp)
if failures:
    print("%d of %d checks failed" % (failures, checks), file=sys.stderr)
    sys.exit(1)
print("%d checks passed" % checks)
