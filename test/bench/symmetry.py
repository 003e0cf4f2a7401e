#!/usr/bin/python3
"""How far `simulation.symmetry: dp` is from the full simulation (docs/performance.md):

    symmetry.py STEPSIM SOURCE_ROOT

For each scenario below, one step is simulated in full (`stepsim run S --steps 1`) and with
one data-parallel replica (`--set simulation.symmetry=dp`), its collectives across replicas
run as flows (`symmetry_collectives=flows`) or costed by the estimate (`estimate`). Prints a
Markdown table: the full step time, each mode's step-time difference from it, and each
mode's wall time. About 3 minutes on 2 cores (the 16,384-GPU step dominates); the wall
times are this machine's, the differences are the same anywhere."""
import json, os, subprocess, sys, time

stepsim, root = sys.argv[1:3]
S = lambda *p: os.path.join(root, *p)  # noqa: E731
SCENARIOS = [
    ("qwen3-4b-2x4090-fsdp-bf16", S("scenarios", "qwen3-4b-2x4090-fsdp-bf16.yaml")),
    ("llama3.1-8b-dgx-h100-ddp", S("scenarios", "llama3.1-8b-dgx-h100-ddp.yaml")),
    ("validation a100-1p7b", S("test", "validation", "scenarios", "a100-1p7b.yaml")),
    ("validation h100-1p7b", S("test", "validation", "scenarios", "h100-1p7b.yaml")),
    ("llama3.1-70b-64xh100", S("scenarios", "llama3.1-70b-64xh100.yaml")),
    ("validation a100-7p5b", S("test", "validation", "scenarios", "a100-7p5b.yaml")),
    ("validation h100-16b", S("test", "validation", "scenarios", "h100-16b.yaml")),
    ("validation a100-18p4b", S("test", "validation", "scenarios", "a100-18p4b.yaml")),
    ("bench fsdp-70b-256xh100", S("scenarios", "bench", "fsdp-70b-256xh100.yaml")),
    ("validation h100-32b", S("test", "validation", "scenarios", "h100-32b.yaml")),
    ("validation a100-39p1b", S("test", "validation", "scenarios", "a100-39p1b.yaml")),
    ("validation h100-70b", S("test", "validation", "scenarios", "h100-70b.yaml")),
    ("validation a100-76p1b", S("test", "validation", "scenarios", "a100-76p1b.yaml")),
    ("gpt3-175b-3d-a100", S("scenarios", "gpt3-175b-3d-a100.yaml")),
    ("validation h100-119b", S("test", "validation", "scenarios", "h100-119b.yaml")),
    ("bench llama3.1-405b-16384xh100", S("scenarios", "bench", "llama3.1-405b-16384xh100.yaml")),
]


def run(path, *sets):
    cmd = [stepsim, "run", path, "--steps", "1", "--json"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: %s" % (" ".join(cmd), p.stderr.strip().splitlines()[-1]))
    d = json.loads(p.stdout)
    return d["step_time_s"], d["gpus"], time.time() - t0


print("| scenario | GPUs | full step | `flows` | `estimate` | wall `flows` / `estimate` |")
print("|---|---:|---:|---:|---:|---:|")
for name, path in SCENARIOS:
    full, gpus, _ = run(path)
    fl, _, wf = run(path, "simulation.symmetry=dp", "simulation.symmetry_collectives=flows")
    es, _, we = run(path, "simulation.symmetry=dp", "simulation.symmetry_collectives=estimate")
    print("| %s | %s | %.6f s | %+.4f%% | %+.4f%% | %.2f / %.2f s |" % (
        name, format(gpus, ","), full, 100 * (fl - full) / full, 100 * (es - full) / full, wf, we))
    sys.stdout.flush()
