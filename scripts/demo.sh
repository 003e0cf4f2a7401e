#!/usr/bin/env bash
# Quick start: install what is missing, build, and answer the question stepsim was started
# for: can two RTX 4090s fully fine-tune Qwen3-4B, with DDP or FSDP, and how fast?
#   scripts/demo.sh [SCENARIO.yaml]    (runs that scenario instead)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
stepsim_install_packages
stepsim_build
build="${STEPSIM_BUILD_DIR:-build}"
stepsim="$build/sim/cli/stepsim"
if [ $# -gt 0 ]; then
    "$stepsim" run "$1" -o "$build/demo.h5"
    echo "Results written to $build/demo.h5; \`stepsim report $build/demo.h5\` summarises them."
    exit 0
fi
echo
echo "== Qwen3-4B full fine-tuning on 2x RTX 4090 (PCIe, no P2P): does it fit?"
for s in ddp-mixed fsdp-mixed ddp-bf16; do
    echo
    echo "-- stepsim mem scenarios/qwen3-4b-2x4090-$s.yaml"
    "$stepsim" mem "scenarios/qwen3-4b-2x4090-$s.yaml"
done
echo
echo "== FSDP or TP+SP for Qwen3-4B on the two PCIe RTX 4090s?"
out="$build/demo"
mkdir -p "$out"
for s in fsdp-bf16 tpsp-bf16 ddp-bf16; do
    echo
    echo "-- stepsim run scenarios/qwen3-4b-2x4090-$s.yaml -o $out/$s.h5"
    "$stepsim" run "scenarios/qwen3-4b-2x4090-$s.yaml" -o "$out/$s.h5"
done
echo
echo "-- stepsim report $out/fsdp-bf16.h5"
"$stepsim" report "$out/fsdp-bf16.h5"
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import h5py, matplotlib' 2>/dev/null; then
    echo
    echo "-- figures (analysis/README.md explains them)"
    "$py" analysis/timeline.py "$out/fsdp-bf16.h5" -o "$out/fsdp-bf16-timeline.png"
    "$py" analysis/memory.py "$out/fsdp-bf16.h5" -o "$out/fsdp-bf16-memory.png"
    "$py" analysis/sweep.py "$out/fsdp-bf16.h5" "$out/tpsp-bf16.h5" "$out/ddp-bf16.h5" \
        -o "$out/comparison.png"
    "$stepsim" export-perfetto "$out/fsdp-bf16.h5" -o "$out/fsdp-bf16-perfetto.json"
    echo
    echo "Results in $out/: *.h5 (schema: docs/hdf5-schema.md), the figures"
    echo "fsdp-bf16-timeline.png, fsdp-bf16-memory.png and comparison.png, and"
    echo "fsdp-bf16-perfetto.json (open it at https://ui.perfetto.dev)."
else
    echo
    echo "Results in $out/*.h5 (schema: docs/hdf5-schema.md). The figures need Debian's"
    echo "python3-h5py and python3-matplotlib (scripts/setup.sh installs them)."
fi
