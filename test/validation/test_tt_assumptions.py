#!/usr/bin/python3
"""tt_assumptions.py on two configurations (quick; keeps the script from rotting):

    test_tt_assumptions.py STEPSIM SOURCE_ROOT

Runs `tt_assumptions.py --only tt-gt-llama3p1-8b-8g,tt-a100-llama2-13b-64g-mb2-noac` and
checks its table:
- a row per published run of those configurations (the 8B's eager and compiled runs, each its
  own scenario, the 13B's run without checkpointing), a cell per variant;
- "as mapped" is the scenario's own error: its global batch's tokens over the simulated step
  and the GPUs, against the published tokens/s per GPU;
- the directions the variants must move a row: recomputing nothing does less work than the
  mapped per-op policy, recomputing every layer in full more, Megatron's selective (attention
  core only) less; cuDNN's faster attention and a higher peak speed the step, a lower peak
  slows it; the A100 row has no cuDNN or peak variant ("-"), and its "recompute none" is its
  mapping;
- "other norm kernel": the eager 8B row's composite norms as the fused kernel speed it, the
  compiled row has none ("-"), the A100 13B row's fused_rmsnorm as composite ops slows it."""
import json, os, subprocess, sys

stepsim, root = sys.argv[1:3]
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL: " + what)


out = subprocess.run([sys.executable, os.path.join(root, "test", "validation", "tt_assumptions.py"), stepsim,
                      root, "--only", "tt-gt-llama3p1-8b-8g,tt-a100-llama2-13b-64g-mb2-noac"],
                     capture_output=True, text=True)
check(out.returncode == 0, "tt_assumptions.py runs: " + out.stderr[-300:])
lines = [l for l in out.stdout.splitlines() if l.startswith("|")]
head = [c.strip() for c in lines[0].strip("|").split("|")] if lines else []
check(head == ["row", "published", "as mapped", "recompute none", "recompute full", "recompute selective",
               "cuDNN attention", "peak 835", "peak 989", "other norm kernel"], "header: %s" % head)
body = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:]]
check(len(body) == 3, "three published runs: %s" % body)


def pct(c):
    return float(c.rstrip("%"))


if len(body) == 3:
    eager, compiled, a100 = body
    check(eager[1] == "5762" and compiled[1] == "6667" and a100[1] == "2162", "published: %s" % body)
    d = json.loads(subprocess.run([stepsim, "run", os.path.join(root, "test", "validation", "scenarios",
                                                                "tt-gt-llama3p1-8b-8g-mb2-sac-op-eager.yaml"), "--json"],
                                  capture_output=True, text=True).stdout)
    sim = 16 * 8192 / (d["step_time_s"] * 8)
    check(eager[2] == "%+.1f%%" % (100 * (sim / 5762 - 1)), "as mapped is the scenario's error: %s, %.1f" % (eager[2], sim))
    for row in (eager, compiled):
        mapped, none, full, sel, cudnn, p835, p989 = (pct(c) for c in row[2:9])
        check(none > sel > mapped > full, "recompute none > selective > op > full: %s" % row)
        check(cudnn > mapped, "cuDNN's attention speeds the step: %s" % row)
        check(p835 < mapped < p989, "the peak moves the rate its way: %s" % row)
    check(a100[6:9] == ["-", "-", "-"] and a100[3] == a100[2] and pct(a100[4]) < pct(a100[2]),
          "the A100 row: no H100 variants, none is its mapping, full slower: %s" % a100)
    check(pct(eager[9]) > pct(eager[2]) and compiled[9] == "-" and pct(a100[9]) < pct(a100[2]),
          "the other norm kernel: fused faster, composite slower, none for a compiled row: %s"
          % [eager[9], compiled[9], a100[9]])
sys.exit(1 if fails else 0)
