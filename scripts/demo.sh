#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the flagship scenario.
#   scripts/demo.sh [SCENARIO.yaml]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
stepsim_install_packages
stepsim_build
build="${STEPSIM_BUILD_DIR:-build}"
scenario="${1:-scenarios/qwen3-0.6b-2x4090-ddp.yaml}"
echo
echo "== stepsim run $scenario"
"$build/sim/cli/stepsim" run "$scenario" -o "$build/demo.h5"
echo
echo "== stepsim mem scenarios/qwen3-4b-2x4090-ddp.yaml   (does full fine-tuning of Qwen3-4B fit?)"
"$build/sim/cli/stepsim" mem scenarios/qwen3-4b-2x4090-ddp.yaml
echo
echo "Results written to $build/demo.h5 (schema: docs/hdf5-schema.md)."
