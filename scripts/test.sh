#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite except the slow `validation`
# and `benchmark` ones (scripts/validate.sh and `meson test --benchmark` run those).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
STEPSIM_EXTRA_PACKAGES="$STEPSIM_TEST_PACKAGES" stepsim_install_packages
stepsim_build
build="${STEPSIM_BUILD_DIR:-build}"
rc=0
meson test -C "$build" --print-errorlogs --no-suite validation --no-suite benchmark "$@" || rc=$?
# One plain closing line that any CI reader understands.
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY' || true
import json, sys
ok = bad = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result", "")
    if r in ("OK", "EXPECTEDFAIL"): ok += 1
    elif r == "SKIP": skip += 1
    else: bad += 1
print("tests: %d passed, %d failed, %d skipped" % (ok, bad, skip))
PY
exit $rc
