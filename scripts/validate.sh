#!/usr/bin/env bash
# The validation suite: every published row of the Megatron, NeMo, torchtitan and ZeRO-3 tables in
# test/validation/data as a scenario (test/validation/scenarios, from test/validation/gen.py),
# run and compared with the published throughput, distributed as an MPI sweep where mpirun is
# found (--ranks N; 0: no MPI). Slow (about 12 minutes on 2 cores): not part of scripts/test.sh.
#   scripts/validate.sh            check against the committed docs/validation.md (fails when a
#                                  table's mean error grows by more than 1 point)
#   scripts/validate.sh --write    rewrite docs/validation.md and sim/cli/validated.h (with the
#                                  long-sequence rows of test/validation/crosscheck_mpt.py and
#                                  the summary of test/validation/crosscheck_bigscience.py)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
stepsim_install_packages
stepsim_build
build="${STEPSIM_BUILD_DIR:-build}"
/usr/bin/python3 test/validation/gen.py test/validation/scenarios
/usr/bin/python3 test/validation/validate.py "$build/sim/cli/stepsim" . "$@"
