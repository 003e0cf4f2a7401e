#!/usr/bin/python3
"""stepsim sweep and stepsim plan, serial and under mpirun: the same file for any rank count,
kill -9 and --resume, skipped combinations, bad sweep files, and the plan's winner against an
exhaustive sweep.

    test_sweep.py STEPSIM SOURCE_ROOT CONTRACT_CHECK"""
import json, os, signal, subprocess, sys, tempfile, time

import h5py

stepsim, root, contract_check = sys.argv[1:4]
stepsim = os.path.abspath(stepsim)
data = os.path.abspath(os.path.join(root, "test", "cli", "data"))
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def sweep(cwd, spec, ranks, *extra):
    cmd = [stepsim, "sweep", spec, "-o", "out.h5"] + list(extra)
    if ranks:
        cmd = ["mpirun", "-n", str(ranks)] + cmd
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)


with tempfile.TemporaryDirectory() as tmp:
    # 4 parallel layouts x 2 micro-batch sizes on the ideal pair (2 GPUs): tp = 3 needs 3
    # GPUs, so its 2 runs are skipped with that reason; 8 runs named ddp-0 .. ddp-7, the
    # last axis fastest (run 1 = {dp: 2} with micro_batch 2)
    spec = os.path.join(tmp, "sweep.yaml")
    open(spec, "w").write(
        "base: %s/ddp.yaml\n"
        "axes:\n"
        "  parallel: [{dp: 2}, {dp: 1, tp: 2}, {dp: 2, zero: 3}, {dp: 1, tp: 3}]\n"
        "  training.micro_batch: [1, 2]\n" % data)
    outs = {}
    for ranks in (0, 1, 2, 4):
        d = os.path.join(tmp, "n%d" % ranks)
        os.mkdir(d)
        p = sweep(d, spec, ranks, "--json")
        check(p.returncode == 0, "sweep with %d rank(s): %s" % (ranks, p.stderr))
        outs[ranks] = (d, p.stdout)
    # the same bytes whatever the rank count (the command line is the same: mpirun is not in it)
    ref = open(os.path.join(outs[0][0], "out.h5"), "rb").read()
    for ranks in (1, 2, 4):
        got = open(os.path.join(outs[ranks][0], "out.h5"), "rb").read()
        check(got == ref, "-n %d gives the serial file byte for byte" % ranks)
        check(outs[ranks][1] == outs[0][1], "-n %d prints the same JSON" % ranks)
    check(not os.path.exists(os.path.join(outs[2][0], "out.h5.runs")), "runs directory removed")
    # by default a sweep keeps the summaries, ranks and memory, no timelines; --timeline keeps
    # them (the same summaries either way)
    with h5py.File(os.path.join(outs[0][0], "out.h5"), "r") as f:
        check(all(f["runs"][r]["timeline"].shape[0] == 0 for r in f["runs"] if "timeline" in f["runs"][r]),
              "no timeline rows by default")
    d = os.path.join(tmp, "with-timeline")
    os.mkdir(d)
    p = sweep(d, spec, 0, "--json", "--timeline")
    with h5py.File(os.path.join(d, "out.h5"), "r") as f:
        done = [r for r in f["runs"] if "summary" in f["runs"][r]]
        check(p.returncode == 0 and p.stdout == outs[0][1] and done and
              all(f["runs"][r]["timeline"].shape[0] > 0 for r in done if r in ("ddp-0", "ddp-1")),
              "--timeline keeps them: %s" % p.stderr)
    # report names the runs by the axes that vary: run 1 is {dp: 2} with micro_batch 2,
    # run 5 {dp: 2, zero: 3} with micro_batch 2; the CSV keeps both name and label
    q = subprocess.run([stepsim, "report", os.path.join(outs[0][0], "out.h5"), "--csv"],
                       capture_output=True, text=True, env=env)
    import csv
    label = {r["name"]: r["label"] for r in csv.DictReader(q.stdout.splitlines())}
    check(label.get("ddp-1") == "dp=2 / micro_batch=2" and label.get("ddp-5") == "dp=2 zero=3 / micro_batch=2",
          "runs named by their axes: %s" % label)
    q = subprocess.run([stepsim, "report", os.path.join(outs[0][0], "out.h5")],
                       capture_output=True, text=True, env=env)
    check(any(l.startswith("dp=2 / micro_batch=2 ") for l in q.stdout.splitlines()),
          "the table shows the labels: %s" % q.stdout[:400])
    p = sweep(d, spec, 0, "--timeline", "--no-timeline")
    check(p.returncode == 2 and "contradicts --no-timeline" in p.stderr, "both: " + p.stderr)
    objs = [json.loads(l) for l in outs[0][1].splitlines()]
    check([o["name"] for o in objs] == ["ddp-%d" % i for i in range(8)], "JSON in run order")
    c = subprocess.run(["/usr/bin/python3", contract_check, "json", "-"], input=outs[0][1],
                       capture_output=True, text=True)
    check(c.returncode == 0, "JSON contract: " + c.stdout)
    h5 = os.path.join(outs[0][0], "out.h5")
    c = subprocess.run(["/usr/bin/python3", contract_check, "h5", h5], capture_output=True, text=True)
    check(c.returncode == 0, "HDF5 contract: " + c.stdout)
    f = h5py.File(h5, "r")
    sw = f["sweep"][:]
    check(list(sw["index"]) == list(range(8)), "/sweep index")
    par = [x.decode() for x in sw["parallel"]]
    mb = [x.decode() for x in sw["training.micro_batch"]]
    check(par[:2] == ["{dp: 2}", "{dp: 2}"] and mb[:2] == ["1", "2"], "axis columns, last fastest: %s %s" % (par, mb))
    status = [x.decode() for x in sw["status"]]
    check(status[6:] == ["skipped", "skipped"] and "skipped" not in status[:6], "tp = 3 skipped: %s" % status)
    err = sw["error"][6].decode()
    check("3 GPUs" in err or "needs 3" in err, "skip reason names the GPU count: " + err)
    check(set(f["runs"].keys()) == {"ddp-%d" % i for i in range(8)}, "every run has its group")
    check("timeline" in f["runs"]["ddp-0"] and "timeline" not in f["runs"]["ddp-6"],
          "ok runs have all tables, skipped ones the summary only")
    # {dp: 1, tp: 2} deep-merges into the base: zero, ddp settings, etc. stay
    check(json.loads(outs[0][1].splitlines()[2])["comm_bytes_per_gpu"]["tp"] > 0, "tp run has tp traffic")

    # kill -9 of the whole mpirun mid-way, then --resume: the same file, no run re-run
    spec2 = os.path.join(tmp, "sweep2.yaml")
    open(spec2, "w").write(
        "base: %s/ddp.yaml\n"
        "name: big\n"
        "axes:\n"
        "  training.micro_batch: [1, 2]\n"
        "  training.seq_len: [128, 256, 512, 1024, 2048]\n"
        "  parallel.ddp.bucket: [1 MiB, 4 MiB, 16 MiB, 64 MiB]\n"
        "  simulation.steps: [2, 3, 4, 5, 6]\n" % data)
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    os.mkdir(a)
    os.mkdir(b)
    proc = subprocess.Popen(["mpirun", "-n", "2", stepsim, "sweep", spec2, "-o", "out.h5"], cwd=a,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = os.path.join(a, "out.h5.runs")
    t0 = time.time()
    while time.time() - t0 < 60:
        done = [x for x in os.listdir(runs)] if os.path.isdir(runs) else []
        if sum(x.endswith(".json") for x in done) >= 4:
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    # the ranks can outlive mpirun for a moment (docs/platform.md), long enough to finish
    # the whole sweep (about 1.5 s of runs): kill them too, found by their command line
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if spec2.encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    proc.wait()
    time.sleep(2)
    before = sorted(x for x in os.listdir(runs) if x.endswith(".json"))
    check(4 <= len(before) < 200, "killed mid-way: %d of 200 runs done" % len(before))
    p = sweep(a, spec2, 0)
    check(p.returncode == 2 and "--resume" in p.stderr, "an interrupted sweep needs --resume: " + p.stderr)
    p = sweep(a, spec2, 2, "--resume")
    check(p.returncode == 0, "resume: " + p.stderr)
    # ranks and their children can outlive a killed mpirun by a moment and finish a run or
    # two more (docs/platform.md): at least the runs seen done are not run again
    import re
    line = [l for l in p.stderr.splitlines() if "done before" in l]
    m = re.search(r"200 runs: (\d+) done before, (\d+) run now", line[0] if line else "")
    check(m and int(m.group(1)) >= len(before) and int(m.group(1)) + int(m.group(2)) == 200,
          "resume runs only what was missing: %s (%d were done)" % (line, len(before)))
    p = sweep(b, spec2, 0)
    check(p.returncode == 0, "uninterrupted: " + p.stderr)
    check(open(os.path.join(a, "out.h5"), "rb").read() == open(os.path.join(b, "out.h5"), "rb").read(),
          "resumed file = uninterrupted file")

    # base as a list of scenario files: the outermost axis, named "base"; without axes, one
    # run per file. Each run is its scenario as `stepsim run` runs it (same step time, bit
    # for bit), named <sweep file's stem>-<index>, and 2 ranks give the serial file.
    lst = os.path.join(tmp, "files.yaml")
    open(lst, "w").write("base:\n  - %s/ddp.yaml\n  - %s/single.yaml\naxes:\n"
                         "  training.micro_batch: [1, 2]\n" % (data, data))
    files = {}
    for ranks in (0, 2):
        d = os.path.join(tmp, "files%d" % ranks)
        os.mkdir(d)
        p = sweep(d, lst, ranks, "--json", "--no-timeline")
        check(p.returncode == 0, "base list, %d rank(s): %s" % (ranks, p.stderr))
        files[ranks] = (open(os.path.join(d, "out.h5"), "rb").read() if p.returncode == 0 else b"",
                        p.stdout)
    check(files[0] == files[2], "base list: -n 2 gives the serial file and JSON")
    objs = [json.loads(l) for l in files[0][1].splitlines()]
    check([o["name"] for o in objs] == ["files-%d" % i for i in range(4)], "base list run names")
    for i, (scen, mb) in enumerate((("ddp", 1), ("ddp", 2), ("single", 1), ("single", 2))):
        q = subprocess.run([stepsim, "run", os.path.join(data, scen + ".yaml"), "--json",
                            "--no-timeline", "--set", "training.micro_batch=%d" % mb],
                           capture_output=True, text=True, env=env)
        one = json.loads(q.stdout) if q.returncode == 0 else {}
        check(i < len(objs) and objs[i]["step_time_s"] == one.get("step_time_s"),
              "base list run %d = %s.yaml with micro_batch %d" % (i, scen, mb))
    with h5py.File(os.path.join(tmp, "files0", "out.h5"), "r") as f:
        col = [x.decode() for x in f["sweep"]["base"]]
    check(col == ["%s/ddp.yaml" % data] * 2 + ["%s/single.yaml" % data] * 2,
          "/sweep base column: %s" % col)
    # report names each run's scenario file, since files-N does not
    q = subprocess.run([stepsim, "report", os.path.join(tmp, "files0", "out.h5")],
                       capture_output=True, text=True, env=env)
    legend = q.stdout.split("scenario files (the sweep's base list):\n")[-1].splitlines()[:4]
    check(q.returncode == 0 and [l.split() for l in legend] ==
          [["files-%d" % i, "%s/%s.yaml" % (data, "ddp" if i < 2 else "single")] for i in range(4)],
          "report lists each run's scenario file: %s" % legend)
    open(lst, "w").write("base: [%s/ddp.yaml, %s/single.yaml]\n" % (data, data))
    d = os.path.join(tmp, "files-noaxes")
    os.mkdir(d)
    p = sweep(d, lst, 0, "--json", "--no-timeline")
    check(p.returncode == 0 and len(p.stdout.splitlines()) == 2, "base list without axes: 2 runs")
    open(lst, "w").write("base:\n  - %s/ddp.yaml\n  - nothere.yaml\n" % data)
    p = sweep(d, lst, 0)
    lines = [l for l in p.stderr.splitlines() if not l.startswith("  ")]
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith(lst + ":3:5: error: cannot open"),
          "a missing file in base is reported at its entry: " + p.stderr)

    # bad sweep files: one error line at the offending value ("  parallel.tpp: [1, 2]": the
    # first value, 1, at 3:18) or key, exit 2, no output
    bad = os.path.join(tmp, "bad.yaml")
    open(bad, "w").write("base: %s/ddp.yaml\naxes:\n  parallel.tpp: [1, 2]\n" % data)
    p = sweep(tmp, bad, 0)
    lines = [l for l in p.stderr.splitlines() if not l.startswith("  ")]
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith(bad + ":3:18: error:"),
          "unknown axis key at its value: " + p.stderr)
    open(bad, "w").write("base: %s/ddp.yaml\naxis:\n  parallel.tp: [1, 2]\n" % data)
    p = sweep(tmp, bad, 0)
    check(p.returncode == 2 and ":2:1: error: unknown key 'axis'" in p.stderr and "did you mean 'axes'" in p.stderr,
          "unknown sweep key: " + p.stderr)
    check(not os.path.exists(os.path.join(tmp, "out.h5")) and not os.path.exists(os.path.join(tmp, "out.h5.runs")),
          "no output on bad input")
    # stepsim plan on Qwen3-4B / 2x RTX 4090 ranks the same winner as an exhaustive sweep of a
    # sampled subspace of its candidates (every layout x ZeRO stage x schedule x micro-batch
    # 1, 2, 4 x recompute x offload, invalid combinations skipped): same throughput, to the
    # last bit. The plan screens its whole space and replays the screen's best 32; the
    # winner has to be among them. Its space (docs/plan.md; 36 layers, batch 16, PCIe, so no
    # TP overlap): tp1 pp1 dp2: ZeRO 0 with mb 1, 2, 4, 8 x 3 recomputes (12) and ZeRO 1-3
    # each x 2 offloads (72); tp1 pp2 dp1: 1F1B with mb 1..16 (15) and interleaved with 2, 3,
    # 6, 9 or 18 virtual stages, mb 1..8 (an even count of micro-batches: 5 x 12 = 60);
    # tp2 pp1 dp1: mb 1..16 x 3 recomputes x SP or not (30). 84 + 75 + 30 = 189.
    scen = os.path.abspath(os.path.join(root, "scenarios", "qwen3-4b-2x4090-fsdp-bf16.yaml"))
    space = os.path.join(tmp, "space.yaml")
    open(space, "w").write(
        "base: %s\nname: space\naxes:\n"
        "  parallel:\n"
        "    - {tp: 1, pp: 1, dp: 2, sp: false}\n"
        "    - {tp: 2, pp: 1, dp: 1, sp: true}\n"
        "    - {tp: 1, pp: 2, dp: 1, sp: false}\n"
        "  parallel.zero: [0, 1, 2, 3]\n"
        "  parallel.pipeline: [{schedule: 1f1b, virtual_stages: 1}, {schedule: interleaved, virtual_stages: 2}]\n"
        "  training.micro_batch: [1, 2, 4]\n"
        "  training.recompute: [none, selective, full]\n"
        "  parallel.offload.optimizer: [none, cpu]\n" % os.path.abspath(scen))
    d = os.path.join(tmp, "space")
    os.mkdir(d)
    p = sweep(d, space, 2, "--json", "--no-timeline")
    check(p.returncode == 0, "exhaustive sweep: " + p.stderr)
    runs = [json.loads(l) for l in p.stdout.splitlines()]
    best = max((r for r in runs if r["status"] == "ok"), key=lambda r: r["tokens_per_s"])
    plans = {}
    for ranks in (0, 2):
        # --full-replays: every GPU replayed, as the sweep does (by default a plan replays
        # one data-parallel replica; below)
        cmd = [stepsim, "plan", scen, "--json", "--full-replays"]
        if ranks:
            cmd = ["mpirun", "-n", str(ranks)] + cmd
        q = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=env)
        check(q.returncode == 0, "plan on %d rank(s): %s" % (ranks, q.stderr))
        plans[ranks] = q.stdout
    # the runs' objects byte for byte; the search's final object too, but for its timings
    timing = ("screen_per_cpu_s", "wall_s")
    finals = {k: json.loads(v.splitlines()[-1]) for k, v in plans.items()}
    check(plans[0].splitlines()[:-1] == plans[2].splitlines()[:-1] and
          {k: v for k, v in finals[0].items() if k not in timing} ==
          {k: v for k, v in finals[2].items() if k not in timing},
          "plan: the same candidates and results on 1 and 2 ranks")
    cands = [json.loads(l) for l in plans[0].splitlines()[:-1]]
    fin = finals[0]
    # the search's object (docs/json.md): every candidate screened, the 32 best replayed
    # (--replay-top's default) with the 3 rejects closest to fitting, the screen's error over
    # the timed ones within the 5% mean target, the timings positive
    check(set(fin) == {"candidates", "screened", "pruned_by_memory", "simulated",
                       "screen_mean_error", "screen_max_error", "screen_rank_correlation",
                       "screen_per_cpu_s", "wall_s"} and
          fin["candidates"] == fin["screened"] == 189 and fin["simulated"] == len(cands) == 35
          and 0 < fin["pruned_by_memory"] < 189 and fin["screen_mean_error"] < 0.05 and
          fin["screen_max_error"] >= fin["screen_mean_error"] and fin["wall_s"] > 0 and
          fin["screen_per_cpu_s"] > 0, "the plan's final object: %s" % fin)
    pbest = max((r for r in cands if r["status"] == "ok"), key=lambda r: r["tokens_per_s"])
    check(pbest["tokens_per_s"] == best["tokens_per_s"] and pbest["step_time_s"] == best["step_time_s"],
          "plan's best %s (%.6g tokens/s) = the sweep's %s (%.6g)" % (pbest["name"], pbest["tokens_per_s"],
                                                                    best["name"], best["tokens_per_s"]))
    check(len(cands) < len(runs), "the plan prunes: %d candidates vs %d combinations" % (len(cands), len(runs)))
    # the default replays one data-parallel replica where dp > 1 (symmetry: dp, docs/plan.md):
    # the same candidates replayed (the screen chose them), the same winner
    q = subprocess.run([stepsim, "plan", scen, "--json"], cwd=tmp, capture_output=True, text=True, env=env)
    sym = [json.loads(l) for l in q.stdout.splitlines()[:-1]]
    sbest = max((r for r in sym if r["status"] == "ok"), key=lambda r: r["tokens_per_s"]) if sym else {}
    check(q.returncode == 0 and [r["name"] for r in sym] == [r["name"] for r in cands] and
          sbest.get("name") == pbest["name"] and sbest.get("symmetry") == "dp",
          "symmetric replays: the same winner %s: %s" % (pbest["name"], sbest.get("name")))
    # an OOM candidate is not replayed: it reports memory, no step time (null, docs/json.md)
    check(all(r["step_time_s"] is None and r["tokens_per_s"] is None
              for r in cands if r["status"] == "oom"), "OOM candidates not replayed")
    q = subprocess.run([stepsim, "plan", scen, "--top", "3"], cwd=tmp, capture_output=True, text=True, env=env)
    lines = q.stdout.splitlines()
    first = [l for l in lines if l.strip().startswith("1  ")]
    check(q.returncode == 0 and first and ("%.6g" % best["tokens_per_s"]) in first[0],
          "the table's first row is the winner: %s" % first)
    check(any("closest that do not fit" in l for l in lines) and any("needs" in l and "GiB >" in l for l in lines),
          "the best rejected strategies with their binding constraint")

    # jitter (and a straggler) over two seeds: each rank's draws depend on the seed and the
    # rank alone, so 2 MPI ranks give the serial file byte for byte, and the seeds differ
    spec = os.path.join(tmp, "jitter.yaml")
    open(spec, "w").write(
        "base: %s/ddp.yaml\n"
        "axes:\n"
        "  simulation: [{jitter: 0.05, seed: 1}, {jitter: 0.05, seed: 2},\n"
        "               {jitter: 0.05, seed: 1, stragglers: [{ranks: [1], slowdown: 1.25}]}]\n" % data)
    outs = {}
    for ranks in (0, 2):
        d = os.path.join(tmp, "jit%d" % ranks)
        os.mkdir(d)
        p = sweep(d, spec, ranks, "--json")
        check(p.returncode == 0, "jitter sweep with %d rank(s): %s" % (ranks, p.stderr))
        outs[ranks] = (open(os.path.join(d, "out.h5"), "rb").read() if p.returncode == 0 else b"", p.stdout)
    check(outs[0] == outs[2] and outs[0][0], "jitter: -n 2 gives the serial file and JSON byte for byte")
    objs = [json.loads(l) for l in outs[0][1].splitlines()]
    if len(objs) == 3:
        check(objs[0]["step_time_s"] != objs[1]["step_time_s"], "another seed, other draws")
        check(objs[2]["slowest_rank"]["rank"] == 1, "the straggler is the slowest rank: %s" % objs[2].get("slowest_rank"))
    c = subprocess.run(["/usr/bin/python3", contract_check, "json", "-"], input=outs[0][1],
                       capture_output=True, text=True)
    check(c.returncode == 0, "jitter JSON contract: " + c.stdout)
if failures:
    print("%d of %d checks failed" % (failures, checks), file=sys.stderr)
    sys.exit(1)
print("%d checks passed" % checks)
