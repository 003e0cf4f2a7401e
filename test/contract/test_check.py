#!/usr/bin/python3
"""The contract checker (check.py) can fail: stepsim's own outputs pass it, and copies of them
with one thing broken are reported, each with the line the checker prints for it.

    test_check.py STEPSIM SOURCE_ROOT

The outputs come from test/cli/data/ddp.yaml (one run, 2 ranks, DDP, 2 steps): `run -o
--json`, `mem --json`, and `bench-coll --json` on the ideal pair. The expectations follow from
docs/json.md and docs/hdf5-schema.md as check.py reads them; a run of the docs themselves
with a key added or a column removed shows that the checker reads them rather than a list of
its own."""
import json, math, os, shutil, subprocess, sys, tempfile

import h5py
import numpy as np

stepsim, root = sys.argv[1:3]
checker = os.path.join(root, "test", "contract", "check.py")
data = os.path.join(root, "test", "cli", "data")
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def contract(kind, path, *extra):
    p = subprocess.run(["/usr/bin/python3", checker, kind, path] + list(extra),
                       capture_output=True, text=True)
    return p.returncode, p.stdout


def expect(kind, path, lines, what, *extra):
    """The checker exits 1 and prints each of lines (substrings of its problem lines)."""
    rc, out = contract(kind, path, *extra)
    check(rc == 1, "%s: exit 1, got %d: %s" % (what, rc, out))
    for line in lines:
        check(line in out, "%s: %r reported: %s" % (what, line, out))


tmp = tempfile.mkdtemp(prefix="stepsim-contract-")
try:
    h5 = os.path.join(tmp, "ok.h5")
    p = subprocess.run([stepsim, "run", os.path.join(data, "ddp.yaml"), "-o", h5, "--json"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "stepsim run: " + p.stderr)
    run = json.loads(p.stdout)
    p = subprocess.run([stepsim, "mem", os.path.join(data, "ddp.yaml"), "--json"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "stepsim mem: " + p.stderr)
    mem = json.loads(p.stdout)
    p = subprocess.run([stepsim, "bench-coll", "--topology", os.path.join(data, "ideal-pair.yaml"),
                        "--op", "all_reduce", "--gpus", "2", "--min-bytes", "1MiB",
                        "--max-bytes", "2MiB", "--json"], capture_output=True, text=True)
    coll = [json.loads(line) for line in p.stdout.splitlines()]
    # 1 MiB and 2 MiB: two sizes, doubling
    check(p.returncode == 0 and len(coll) == 2, "bench-coll: %s" % p.stderr)

    def write(objs, name):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            for o in objs:
                f.write(json.dumps(o) + "\n")
        return path

    # --- JSON ---------------------------------------------------------------------------------
    # the real objects pass: 1 run, 1 mem, 2 bench-coll objects
    rc, out = contract("json", write([run, mem] + coll, "all"))
    check(rc == 0 and "4 JSON object(s) (2 bench-coll, 1 mem, 1 run): as documented" in out,
          "stepsim's own JSON passes: " + out)

    def mutated(obj, change):
        o = json.loads(json.dumps(obj))
        change(o)
        return o

    # a required key removed (json.md: `tokens_per_s` | float, no "only ..." condition)
    o = mutated(run, lambda o: o.pop("tokens_per_s"))
    expect("json", write([o], "m1"), ["object 0 (run ddp): missing tokens_per_s"], "key removed")
    # a wrong type: `gpus` is an int; 2.5 is not
    o = mutated(run, lambda o: o.update(gpus=2.5))
    expect("json", write([o], "m2"), ["gpus should be int, is 2.5"], "float for an int")
    # a string where a number is documented
    o = mutated(run, lambda o: o.update(step_time_s="fast"))
    expect("json", write([o], "m3"), ["step_time_s should be float, is 'fast'"], "string")
    # a number that is not finite (Python's json writes NaN; json.md: numbers are finite)
    o = mutated(run, lambda o: o.update(step_time_s=math.nan))
    expect("json", write([o], "m4"), ["step_time_s should be float, is nan"], "NaN")
    # a status outside the enumeration `ok`, `oom`, `skipped`, `error`, `tight`
    o = mutated(run, lambda o: o.update(status="crashed"))
    expect("json", write([o], "m5"),
           ["status 'crashed' not one of ok oom skipped error tight"], "unknown status")
    # a key the docs do not list
    o = mutated(run, lambda o: o.update(wall_s=1.0))
    expect("json", write([o], "m6"), ["key wall_s is not documented"], "undocumented key")
    # a nested key removed and one added: bubble_by_cause lists pipeline, dp, ..., other
    o = mutated(run, lambda o: (o["bubble_by_cause"].pop("dp"),
                                o["bubble_by_cause"].update(nccl=0)))
    expect("json", write([o], "m7"), ["bubble_by_cause lacks dp",
                                      "bubble_by_cause.nccl is not documented"], "nested keys")
    # mem_bytes "sums to `peak_mem_bytes`": one more byte of `other` breaks it, the sum being
    # peak_mem_bytes + 1
    o = mutated(run, lambda o: o["mem_bytes"].update(other=o["mem_bytes"]["other"] + 1))
    expect("json", write([o], "m8"), ["mem_bytes sums to %d, peak_mem_bytes is %d"
                                      % (run["peak_mem_bytes"] + 1, run["peak_mem_bytes"])],
           "mem_bytes sum")
    # mfu is documented 0..1
    o = mutated(run, lambda o: o.update(mfu=1.5))
    expect("json", write([o], "m9"), ["mfu = 1.5 outside [0, 1]"], "mfu range")
    # a skipped run says why ("`error` | string or null | why the run was skipped or failed"),
    # and was not replayed: its replay figures are null, not the ok run's numbers
    o = mutated(run, lambda o: o.update(status="skipped"))
    expect("json", write([o], "m10"), ["status skipped without an error message",
                                       "status skipped with replay figures"],
           "skipped without error")
    # "Keys always appear, in the order below": gpus moved to the end
    o = mutated(run, lambda o: o.update(gpus=o.pop("gpus")))
    expect("json", write([o], "m11"), ["keys not in the documented order"], "key order")
    # an optional key with its condition: symmetry_collectives only with symmetry
    o = mutated(run, lambda o: o.update(symmetry_collectives="flows"))
    expect("json", write([o], "m12"), ["symmetry_collectives without symmetry"],
           "conditional key")
    # "null when not replayed" (json.md): the replay figures of a run that was not replayed are
    # all null, and only such a run (oom, skipped, error) has them null. The run object with
    # every replay figure null passes as an oom run (its binding constraint set) ...
    figures = ["step_time_s", "tokens_per_s", "samples_per_s", "tflops_per_gpu", "mfu", "hfu",
               "bubble_fraction"]
    objs = ["bubble_by_cause", "exposed_comm_s", "comm_bytes_per_gpu"]

    def untimed(o):
        for k in figures:
            o[k] = None
        for k in objs:
            o[k] = {m: None for m in o[k]}
        o["status"], o["binding_constraint"] = "oom", "model states 30.0 GiB > 23.7 GiB"
    o = mutated(run, untimed)
    rc, out = contract("json", write([o], "n0"))
    check(rc == 0, "an oom run not replayed, its figures null, passes: " + out)
    # ... but not as an ok run, which is always replayed
    o = mutated(run, lambda o: (untimed(o), o.update(status="ok", binding_constraint=None)))
    expect("json", write([o], "n1"), ["status ok without its replay figures"], "ok untimed")
    # one figure null and the others numbers: a run is replayed or not
    o = mutated(run, lambda o: o.update(mfu=None))
    expect("json", write([o], "n2"), ["mfu null, step_time_s"], "one figure null")
    # one member of an object null: the object is partly null
    o = mutated(run, lambda o: o["exposed_comm_s"].update(dp=None))
    expect("json", write([o], "n3"), ["exposed_comm_s is partly null"], "member null")
    # a key not marked "null when not replayed" stays non-null: peak_mem_bytes is an int
    o = mutated(run, lambda o: o.update(peak_mem_bytes=None))
    expect("json", write([o], "n4"), ["peak_mem_bytes is null"], "memory null")
    # the verdict's nested tables (docs/json.md, `verdict` and the sections under it): an oom
    # object with remedies (Qwen3-4B FSDP without recompute on 2x RTX 4090) passes, and one
    # thing broken at each level is reported with its path
    p = subprocess.run([stepsim, "mem", os.path.join(root, "scenarios",
                                                     "qwen3-4b-2x4090-fsdp-bf16.yaml"),
                        "--set", "training.recompute=none", "--json"],
                       capture_output=True, text=True)
    oom = json.loads(p.stdout) if p.returncode == 0 else {}
    check(p.returncode == 0 and oom["verdict"]["remedies"], "mem oom: " + p.stderr)
    rc, out = contract("json", write([oom], "v0"))
    check(rc == 0, "an oom mem object with remedies passes: " + out)
    for n, (change, line) in enumerate([
            (lambda o: o["verdict"].update(status="maybe"), "verdict: status 'maybe' not one of"),
            (lambda o: o["verdict"]["binding"].update(item="weights"),
             "verdict.binding: item 'weights' not one of"),
            (lambda o: o["verdict"]["binding"].pop("why"), "verdict.binding: missing why"),
            (lambda o: o["verdict"].update(bottleneck={"kind": "compute", "group": None,
                                                       "share": 1.5}),
             "verdict.bottleneck: share = 1.5 outside"),
            (lambda o: o["verdict"]["remedies"][0]["changes"].update(x=1),
             "verdict.remedies[0]: changes['x'] should be string"),
            (lambda o: o["verdict"]["remedies"][0].update(extra=1),
             "verdict.remedies[0]: key extra is not documented"),
            (lambda o: o["verdict"].update(remedies={}), "verdict: remedies should be list")]):
        expect("json", write([mutated(oom, change)], "v%d" % (n + 1)), [line],
               "verdict mutation %d" % n)
    # the mem object: its keys are the example's in json.md, capacity_bytes among them
    o = mutated(mem, lambda o: o.pop("capacity_bytes"))
    expect("json", write([o], "m13"), ["object 0 (mem ddp): missing capacity_bytes"], "mem key")
    # bench-coll: the key table of docs/json.md, busbw_GBps among its keys
    o = mutated(coll[0], lambda o: o.pop("busbw_GBps"))
    expect("json", write([o], "m14"), ["missing busbw_GBps"], "bench-coll key")
    # advise: one object per rung, the key table of `advise --json` (its binding and
    # bottleneck the verdict's tables)
    p = subprocess.run([stepsim, "advise", os.path.join(data, "ddp.yaml"), "--json"],
                       capture_output=True, text=True)
    adv = [json.loads(line) for line in p.stdout.splitlines()]
    check(p.returncode == 0 and adv, "stepsim advise: " + p.stderr)
    rc, out = contract("json", write(adv, "adv"))
    check(rc == 0 and "(%d advise): as documented" % len(adv) in out,
          "stepsim advise's own JSON passes: " + out)
    ok = [o for o in adv if o["status"] == "ok"]
    check(bool(ok), "advise on ddp.yaml has an ok rung")
    if ok:
        o = mutated(ok[0], lambda o: o.pop("limit"))
        expect("json", write([o], "a1"), ["missing limit"], "advise key")
        o = mutated(ok[0], lambda o: o.__setitem__("binding", {"item": "params", "bytes": 1,
                                                               "why": "x"}))
        expect("json", write([o], "a2"), ["ok with binding"], "advise binding of an ok rung")
        o = mutated(ok[0], lambda o: o.__setitem__("status", "fits"))
        expect("json", write([o], "a3"), ["status 'fits' not one of ok oom invalid"],
               "advise status")
    # not JSON at all
    expect("json", write([], "m15"), ["no JSON object found"], "empty input")

    # the checker reads the docs: a copy of docs/ whose run table gains a key `new_key` makes
    # the real run object fail (documented but not written), and one whose summary table
    # loses its `hfu` row makes the real file fail (written but not documented)
    docs = os.path.join(tmp, "docs")
    shutil.copytree(os.path.join(root, "docs"), docs)
    text = open(os.path.join(docs, "json.md"), encoding="utf-8").read()
    row = "| `steps` | int | optimizer steps simulated |\n"
    check(row in text, "json.md has the steps row")
    open(os.path.join(docs, "json.md"), "w", encoding="utf-8").write(
        text.replace(row, row + "| `new_key` | int | a key the code does not write |\n"))
    expect("json", write([run], "d1"), ["object 0 (run ddp): missing new_key"],
           "key documented, not written", "--docs", docs)
    text = open(os.path.join(docs, "hdf5-schema.md"), encoding="utf-8").read()
    row = ("| `hfu` | float64 | 1 | hardware FLOPs utilisation (recompute included); NaN when "
           "not replayed |\n")
    check(row in text, "hdf5-schema.md has the hfu row")
    open(os.path.join(docs, "hdf5-schema.md"), "w", encoding="utf-8").write(text.replace(row, ""))
    # hfu also leaves the units attribute's documented list: two problem lines
    expect("h5", h5, ["/runs/ddp/summary: column hfu is not documented",
                      "/runs/ddp/summary: units lists hfu: '1', documented None"],
           "column written, not documented", "--docs", docs)

    # --- HDF5 ---------------------------------------------------------------------------------
    rc, out = contract("h5", h5)
    check(rc == 0 and "1 run(s): as documented" in out, "stepsim's own file passes: " + out)

    def h5_mutated(name, change):
        path = os.path.join(tmp, name + ".h5")
        shutil.copy(h5, path)
        with h5py.File(path, "r+") as f:
            change(f)
        return path

    def rewrite(f, path, drop=(), add=None):
        """Writes table path again without the columns in drop, or with a column add =
        (name, numpy dtype) of zeros; its attributes are kept."""
        old = f[path]
        attrs, rows = dict(old.attrs), old[:]
        fields = [(n, old.dtype[n]) for n in old.dtype.names if n not in drop]
        if add:
            fields.append(add)
        new = np.zeros(len(rows), dtype=np.dtype(fields))
        for n in new.dtype.names:
            if n in old.dtype.names:
                new[n] = rows[n]
        del f[path]
        ds = f.create_dataset(path, data=new)
        for k, v in attrs.items():
            ds.attrs[k] = v

    # a column removed: ranks lists idle_s
    path = h5_mutated("h1", lambda f: rewrite(f, "/runs/ddp/ranks", drop=("idle_s",)))
    expect("h5", path, ["/runs/ddp/ranks: column idle_s missing"], "HDF5 column removed")
    # a column added that the docs do not list
    path = h5_mutated("h2", lambda f: rewrite(f, "/runs/ddp/steps", add=("wall_s", "<f8")))
    expect("h5", path, ["/runs/ddp/steps: column wall_s is not documented"], "HDF5 extra column")
    # a table removed: an ok run holds all seven, links among them
    path = h5_mutated("h3", lambda f: f.__delitem__("/runs/ddp/links"))
    expect("h5", path, ["/runs/ddp/links missing"], "HDF5 table removed")
    # an unknown status: the attribute is outside ok/oom/skipped/error/tight, and the summary's
    # status (ok) is no longer the group attribute's
    path = h5_mutated("h4", lambda f: f["/runs/ddp"].attrs.__setitem__("status", "crashed"))
    expect("h5", path, ["/runs/ddp: attribute status = 'crashed' not one of ok oom skipped error tight",
                        "/runs/ddp/summary: status 'ok', the group attribute is 'crashed'"],
           "HDF5 unknown status")
    # schema_version is an int32 `1`: 2 is not, and an int64 1 has the wrong type
    path = h5_mutated("h5", lambda f: f.attrs.__setitem__("schema_version", np.int32(2)))
    expect("h5", path, ["attribute schema_version = 2 not one of 1"], "schema_version value")
    path = h5_mutated("h6", lambda f: f.attrs.__setitem__("schema_version", np.int64(1)))
    expect("h5", path, ["attribute schema_version should be a scalar int32"],
           "schema_version type")

    def stream(f):
        t = f["/runs/ddp/timeline"][:]
        t["stream"][0] = b"gpu"
        f["/runs/ddp/timeline"][:] = t

    # a value outside the stream enumeration (compute dp tp pp ep cp p2p offload host)
    path = h5_mutated("h7", stream)
    expect("h5", path, ["/runs/ddp/timeline: column stream holds 'gpu'"], "HDF5 enumeration")
    # the units attribute lacking flops (documented FLOP)
    path = h5_mutated("h8", lambda f: f["/runs/ddp/timeline"].attrs.__setitem__(
        "units", "start_s: s, end_s: s, bytes: B"))
    expect("h5", path, ["/runs/ddp/timeline: units lists flops: None, documented 'FLOP'"],
           "HDF5 units")

    def nan_step(f):
        s = f["/runs/ddp/summary"][:]
        s["step_time_s"][0] = np.nan
        f["/runs/ddp/summary"][:] = s

    # a NaN where the docs do not allow one (they do for moe.* and budget.*): the summary has
    # one row and one of its cells, step_time_s, is set to NaN, so one non-finite value
    path = h5_mutated("h9", nan_step)
    expect("h5", path, ["/runs/ddp/summary: column step_time_s holds 1 non-finite value(s)"],
           "HDF5 NaN")

    def untimed_oom(f):
        """The run as a plan records an OOM candidate: status oom, steps emptied, every
        column "NaN when not replayed" NaN (the summary's 7 scalars and 8 + 5 + 6 members)."""
        f["/runs/ddp"].attrs["status"] = "oom"
        f["/runs/ddp"].attrs["timeline_written"] = np.int32(0)
        for t in ("ranks", "steps", "timeline", "bubbles", "links"):
            rows = f["/runs/ddp/" + t][:0]
            attrs = dict(f["/runs/ddp/" + t].attrs)
            del f["/runs/ddp/" + t]
            ds = f.create_dataset("/runs/ddp/" + t, data=rows, maxshape=(None,), chunks=True)
            for k, v in attrs.items():
                ds.attrs[k] = v
        s = f["/runs/ddp/summary"][:]
        s["status"][0] = b"oom"
        s["binding_constraint"][0] = b"model states"
        for n in s.dtype.names:
            if n.split(".")[0] in figures + objs:
                s[n][0] = np.nan
        f["/runs/ddp/summary"][:] = s

    # an oom run recorded without a replay, its figures NaN, passes ...
    path = h5_mutated("n5", untimed_oom)
    rc, out = contract("h5", path)
    check(rc == 0, "an oom run not replayed, its figures NaN, passes: " + out)

    def untimed_but_mfu(f):
        untimed_oom(f)
        s = f["/runs/ddp/summary"][:]
        s["mfu"][0] = 0.5
        f["/runs/ddp/summary"][:] = s

    # ... one with a number left in `mfu` does not (NaN when not replayed: exactly NaN) ...
    path = h5_mutated("n6", untimed_but_mfu)
    expect("h5", path, ["/runs/ddp/summary: column mfu holds 1 number(s) for a run not "
                        "replayed"], "a number in a run not replayed")
    # ... and a NaN in a replayed run's replay column is one non-finite value (h9 below does
    # it on step_time_s); here on a member of a range, exposed_comm_s.tp
    def nan_tp(f):
        s = f["/runs/ddp/summary"][:]
        s["exposed_comm_s.tp"][0] = np.nan
        f["/runs/ddp/summary"][:] = s
    path = h5_mutated("n7", nan_tp)
    expect("h5", path, ["/runs/ddp/summary: column exposed_comm_s.tp holds 1 non-finite "
                        "value(s)"], "NaN in a replayed run")
    # timeline_written 0: "the timeline table then exists but is empty"; this one has rows
    path = h5_mutated("h10", lambda f: f["/runs/ddp"].attrs.__setitem__(
        "timeline_written", np.int32(0)))
    expect("h5", path, ["/runs/ddp/timeline:", "row(s) with timeline_written 0"],
           "timeline_written")
    # two runs (the run copied under a second name) and no /sweep table, which a file of more
    # than one run holds (the layout of docs/hdf5-schema.md)
    path = h5_mutated("h11", lambda f: f.copy("/runs/ddp", "/runs/ddp2"))
    expect("h5", path, ["2 runs and no /sweep table"], "HDF5 two runs without /sweep")
finally:
    shutil.rmtree(tmp)
print("%d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)
