#!/usr/bin/python3
"""The two-tier plan against issue 29's targets (docs/performance.md, "Plan"):

    plan.py STEPSIM SOURCE_ROOT

Runs `mpirun -n 2 stepsim plan scenarios/bench/plan-gpt3-175b-64xa100.yaml --json` (GPT-3
175B on 64 A100 80GB, global batch 1536, sequence 2048) and checks the search's final object
(docs/json.md): at least 100,000 candidates screened, at least 2,000 per CPU-second, the
screen within 5% of the replays on average over those replayed, and the whole plan (screen
and replays) in at most 60 s. Prints each figure with its target and exits 1 when one is
missed. About 90 s on 2 cores."""
import json, os, subprocess, sys

stepsim, root = sys.argv[1:3]
scen = os.path.join(root, "scenarios", "bench", "plan-gpt3-175b-64xa100.yaml")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
p = subprocess.run(["mpirun", "-n", "2", "--oversubscribe", stepsim, "plan", scen, "--json"],
                   capture_output=True, text=True, env=env)
if p.returncode != 0:
    print("plan failed: %s" % p.stderr)
    sys.exit(1)
fin = json.loads(p.stdout.splitlines()[-1])
runs = [json.loads(l) for l in p.stdout.splitlines()[:-1]]
best = max((r for r in runs if r["status"] == "ok"), key=lambda r: r["tokens_per_s"])
print("winner %s: %.4g s per step, %.6g tokens/s, MFU %.1f%%" %
      (best["name"], best["step_time_s"], best["tokens_per_s"], 100 * best["mfu"]))
targets = [
    ("candidates screened", fin["screened"], ">=", 100000),
    ("screened per CPU-second", fin["screen_per_cpu_s"], ">=", 2000),
    ("screen mean error on the replayed", fin["screen_mean_error"], "<=", 0.05),
    ("whole plan, mpirun -n 2 (s)", fin["wall_s"], "<=", 60),
]
missed = 0
print("| figure | measured | target | met |")
print("|---|---|---|---|")
for name, v, op, t in targets:
    ok = v >= t if op == ">=" else v <= t
    missed += not ok
    print("| %s | %.6g | %s %g | %s |" % (name, v, op, t, "yes" if ok else "NO"))
print("(screen max error %.4g, rank correlation %.3g, %d replayed)" %
      (fin["screen_max_error"], fin["screen_rank_correlation"], fin["simulated"]))
sys.exit(1 if missed else 0)
