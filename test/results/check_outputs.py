#!/usr/bin/python3
"""Checks the files that sim/results writes, from the outside, as users read them.

    check_outputs.py MODE WRITE_SAMPLE CONTRACT_CHECK

WRITE_SAMPLE is the write_sample test executable (test/results/write_sample.c), CONTRACT_CHECK
the path of test/contract/check.py. MODE:
  contract-h5    check.py h5 on 1-run, 3-run and --no-timeline files; two writes of the
                 same input by two processes are h5diff-identical and byte-identical
  contract-json  check.py json on the JSON objects, and json.loads of each line
  pandas         every table of docs/hdf5-schema.md read as pandas.DataFrame(f[path][:])
Exit 0 ok, 1 failure, 77 when an optional tool (pandas, h5diff) is absent."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

mode, write_sample, contract_check = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def sample(tmp, name, *args, env=None):
    h5, js = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".json")
    subprocess.run([write_sample, h5, js] + [str(a) for a in args], check=True, env=env)
    return h5, js


def contract(kind, path):
    p = subprocess.run([sys.executable, contract_check, kind, path], capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    check(p.returncode == 0, "contract-check %s %s" % (kind, path))


def mode_contract_h5(tmp):
    for name, args in (("one", [1]), ("three", [3]), ("notl", [3, "--no-timeline"])):
        contract("h5", sample(tmp, name, *args)[0])
    h5diff = shutil.which("h5diff")
    if not h5diff:
        print("h5diff not found")
        return 77
    # Two processes whose fresh heap memory differs (glibc fills it with MALLOC_PERTURB_'s
    # byte): any uninitialised byte reaching the file would make the files differ.
    env = dict(os.environ)
    env["MALLOC_PERTURB_"] = "85"
    a = sample(tmp, "a", 3, env=env)[0]
    env["MALLOC_PERTURB_"] = "170"
    b = sample(tmp, "b", 3, env=env)[0]
    p = subprocess.run([h5diff, a, b], capture_output=True, text=True)
    check(p.returncode == 0, "h5diff reports differences: %s" % p.stdout[-500:])
    check(open(a, "rb").read() == open(b, "rb").read(), "the two files are not byte-identical")
    return 0


def mode_contract_json(tmp):
    js = sample(tmp, "three", 3)[1]
    contract("json", js)
    lines = open(js, encoding="utf-8").read().splitlines()
    check(len(lines) == 4, "4 JSON lines (3 runs + mem), got %d" % len(lines))
    objs = [json.loads(line) for line in lines]
    ok, oom, skipped, mem = objs
    check(ok["status"] == "ok" and ok["error"] is None and ok["binding_constraint"] is None,
          "ok run: status/error/binding_constraint")
    check(oom["binding_constraint"] == "model states", "oom run names its binding constraint")
    check(ok["peak_mem_bytes"] == sum(ok["mem_bytes"].values()), "mem_bytes sums to the peak")
    check(isinstance(ok["peak_mem_bytes"], int) and isinstance(ok["gpus"], int), "integers")
    check(ok["step_time_s"] == 0.5 and ok["mfu"] == 0.4, "float values")
    check(set(skipped) == set(ok), "skipped run has the same keys as an ok run")
    check(skipped["error"] == "dp=3 does not divide the 2 GPUs", "skipped run's error")
    # not replayed: the replay figures are null (docs/json.md), the memory numbers 0
    check(skipped["step_time_s"] is None and skipped["tokens_per_s"] is None and
          all(v is None for v in skipped["bubble_by_cause"].values()) and
          skipped["peak_mem_bytes"] == 0, "skipped run: null replay figures")
    check("step_time_s" not in mem and mem["peak_mem_bytes"] == ok["peak_mem_bytes"], "mem object")
    return 0


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def mode_pandas(tmp):
    try:
        import h5py
        import pandas as pd
    except ImportError as e:
        print("skipped:", e)
        return 77
    h5 = sample(tmp, "three", 3)[0]
    with h5py.File(h5, "r") as f:
        check(f.attrs["schema_version"] == 1, "schema_version")
        check(text(f.attrs["command"]) == "write_sample", "command attribute")
        check(text(f.attrs["input_hashes"]) == "sha256:00ff  scenarios/tiny.yaml\n", "input_hashes")
        inputs = pd.DataFrame(f["/inputs"][:])
        check(list(inputs.columns) == ["path", "hash"] and len(inputs) == 1, "/inputs table")
        sweep = pd.DataFrame(f["/sweep"][:])
        check(len(sweep) == 3, "3 sweep rows")
        check([text(s) for s in sweep["status"]] == ["ok", "oom", "skipped"], "sweep statuses")
        check(list(sweep["index"]) == [0, 1, 2], "sweep index")

        run = f["/runs/tiny-0"]
        check(text(run.attrs["status"]) == "ok" and text(run.attrs["error"]) == "", "run attributes")
        check(text(run.attrs["scenario"]).startswith("name: tiny\n"), "scenario attribute")
        check(run.attrs["timeline_written"] == 1, "timeline_written")
        rows = {"summary": 1, "ranks": 2, "steps": 2, "timeline": 6, "bubbles": 3, "memory": 4,
                "links": 2}
        frames = {}
        for t, n in rows.items():
            df = pd.DataFrame(run[t][:])
            frames[t] = df
            check(len(df) == n, "%s has %d rows, want %d" % (t, len(df), n))
            check("units" in run[t].attrs or t == "summary", "%s has a units attribute" % t)
        tl = frames["timeline"]
        for c in ("stream", "kind", "name", "phase", "group"):
            tl[c] = tl[c].str.decode("utf-8")
        check(list(tl["name"][:3]) == ["layer0.fwd", "layer0.bwd", "layer1.fwd"], "timeline names")
        check(tl["bytes"].iloc[5] == 8e9 and tl["group"].iloc[5] == "dp", "all-reduce row")
        check(tl["start_s"].dtype.kind == "f" and tl["rank"].dtype.kind == "i", "column dtypes")
        check(abs((tl["end_s"] - tl["start_s"]).sum() - 0.6) < 1e-12, "durations sum to 6 x 0.1 s")
        s = frames["summary"].iloc[0]
        check(s["mem_bytes.params"] == 8000000000 and s["bubble_by_cause.dp"] == 0.0625,
              "flattened summary columns")
        check(text(s["binding_constraint"]) == "", "no binding constraint: empty string")
        check(sum(s["mem_bytes." + c] for c in ("params", "grads", "optimizer", "activations",
                                                 "buffers", "other")) == s["peak_mem_bytes"],
              "summary mem_bytes sums to the peak")
        check(text(run["timeline"].attrs["units"]) == "start_s: s, end_s: s, bytes: B, flops: FLOP",
              "timeline units")
        b = frames["bubbles"]
        check(list(b["cause"].str.decode("utf-8")) == ["pipeline", "dp", "other"], "bubble causes")

        skipped = f["/runs/tiny-2"]
        check(text(skipped.attrs["status"]) == "skipped", "skipped status")
        check(set(skipped) == {"summary"}, "skipped run holds the summary only: %s" % set(skipped))
    return 0


tmp = tempfile.mkdtemp(prefix="stepsim-results-check-")
try:
    rc = {"contract-h5": mode_contract_h5, "contract-json": mode_contract_json,
          "pandas": mode_pandas}[mode](tmp)
finally:
    shutil.rmtree(tmp)
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("ok" if rc == 0 else "skipped")
sys.exit(rc)
