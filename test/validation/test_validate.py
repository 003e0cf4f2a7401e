#!/usr/bin/python3
"""validate.py's two ways of running rows give the same results: as a `stepsim sweep` over
the rows' scenario files under mpirun (2 ranks, 3 rows: the sweep's base list) and as plain
processes (--ranks 0), and the fallback to plain processes when mpirun cannot start. Three
quick rows (H100 1.7B, the two 22B rows of the 2022 table), so
it runs in the default suite; the full tables are the slow `validation` suite's.

    test_validate.py STEPSIM SOURCE_ROOT"""
import os, re, shutil, subprocess, sys, tempfile

stepsim, root = sys.argv[1:3]
script = os.path.join(root, "test", "validation", "validate.py")
rows = "h100-1p,k2022-22b"
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def results(ranks, env=None):
    p = subprocess.run(["/usr/bin/python3", script, stepsim, root, "--only", rows,
                        "--ranks", str(ranks)], capture_output=True, text=True, timeout=600,
                       env=env)
    check(p.returncode == 0, "--ranks %d: exit %d: %s" % (ranks, p.returncode, p.stderr[-2000:]))
    # "h100-1p7b      458.42 vs 408.80 TFLOP/s (+12.1%), 0 s wall": all but the wall time
    got = {}
    for line in p.stderr.splitlines():
        m = re.match(r"^(\S+)\s+(.* vs .*\)), .* wall$", line)
        if m:
            got[m.group(1)] = m.group(2)
    return got, p.stderr


plain, _ = results(0)
check(sorted(plain) == ["h100-1p7b", "k2022-22b-full", "k2022-22b-present"],
      "three rows ran as plain processes: %s" % sorted(plain))
if shutil.which("mpirun"):
    swept, err = results(2)
    check("3 rows: stepsim sweep under mpirun -n 2" in err, "the rows ran as an MPI sweep: " + err[-500:])
    check(swept == plain, "the MPI sweep gives the plain runs' results: %s vs %s" % (swept, plain))
# an mpirun that cannot start (here a stand-in that fails at once) leaves the rows to plain
# processes, with the same results
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "mpirun")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'mpirun: cannot start' >&2\nexit 1\n")
    os.chmod(fake, 0o755)
    fell, err = results(2, dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", "")))
    check("running the rows as plain processes" in err, "fallback announced: " + err[-500:])
    check(fell == plain, "fallback gives the plain runs' results: %s vs %s" % (fell, plain))
# a prefix that matches nothing fails rather than passing empty
p = subprocess.run(["/usr/bin/python3", script, stepsim, root, "--only", "nothing-"],
                   capture_output=True, text=True, timeout=60)
check(p.returncode == 1, "--only matching no row fails: exit %d" % p.returncode)
sys.exit(1 if failures else 0)
