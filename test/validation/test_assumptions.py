#!/usr/bin/python3
"""assumptions.py on one row (quick; the default suite keeps the slow script from rotting):

    test_assumptions.py STEPSIM SOURCE_ROOT

Runs `assumptions.py --only 1.7B` and checks its table:
- one row and a mean/max line with a cell for each of the six variants, the mean and max of
  one row being that row's absolute error;
- "as assumed" is the scenario's own error: stepsim's model TFLOP/s over the published 408.8
  (the published step is those FLOPs at the published rate, so pub/step - 1 = tflops/408.8 - 1);
- the directions the variants must move it: without recompute a step does less work, and at
  the attention rates alone (above the catalog's in-training ones: 0.801 < 1) its attention
  runs faster, so both give a shorter step and a larger (more optimistic) error."""
import json, os, re, subprocess, sys

stepsim, root = sys.argv[1:3]
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL: " + what)


out = subprocess.run([sys.executable, os.path.join(root, "test", "validation", "assumptions.py"),
                      stepsim, root, "--only", "1.7B"], capture_output=True, text=True)
check(out.returncode == 0, "assumptions.py runs: " + out.stderr[-300:])
lines = [l for l in out.stdout.splitlines() if l.startswith("|")]
head = [c.strip() for c in lines[0].strip("|").split("|")] if lines else []
check(head[1:] == ["as assumed", "no recompute", "dropout 0.1", "learned positions", "micro-batch 2",
                   "attention rates alone"], "header: %s" % head)
row = next((l for l in lines if l.startswith("| 1.7B |")), None)
check(row is not None, "a 1.7B row: " + out.stdout)
if row:
    cells = [float(c.strip().rstrip("%")) for c in row.strip("|").split("|")[1:]]
    check(len(cells) == 6, "six cells: %s" % cells)
    d = json.loads(subprocess.run([stepsim, "run", os.path.join(root, "test", "validation", "scenarios",
                                                               "h100-1p7b.yaml"), "--json"],
                                  capture_output=True, text=True, check=True).stdout)
    own = 100 * (d["tflops_per_gpu"] / 408.8 - 1)
    check(abs(cells[0] - own) <= 0.051, "as assumed %+.1f%% vs the scenario's own %+.2f%%" % (cells[0], own))
    check(cells[1] > cells[0], "no recompute more optimistic: %s" % cells)
    check(cells[5] > cells[0], "attention alone more optimistic: %s" % cells)
    mean = re.search(r"\*\*mean / max\*\* \| ([0-9.]+)% / ([0-9.]+)%", out.stdout)
    check(mean is not None and float(mean.group(1)) == float(mean.group(2)) == abs(cells[0]),
          "one row: mean = max = |as assumed|: " + out.stdout[-200:])
sys.exit(1 if fails else 0)
