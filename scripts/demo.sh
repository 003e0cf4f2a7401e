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
echo "-- stepsim run scenarios/qwen3-4b-2x4090-fsdp-bf16.yaml -o $build/demo.h5"
"$stepsim" run scenarios/qwen3-4b-2x4090-fsdp-bf16.yaml -o "$build/demo.h5"
echo
echo "Timelines written to $build/demo.h5 (schema: docs/hdf5-schema.md)."
