#!/usr/bin/env bash
# Runs the libFuzzer targets of test/fuzz (CONTRIBUTING.md, "Fuzzing").
#
#   scripts/fuzz.sh SECONDS [TARGET...]     TARGET: scenario topology sweep trace results
#                                           (default: all five, one after the other)
#
# Installs clang and libFuzzer when missing, configures build-fuzz (clang, -Dfuzz=true: ASan,
# UBSan and coverage in every library), builds, and runs each target for SECONDS on one core
# on a copy of its seeds and regressions (build-fuzz/corpus/TARGET: what the fuzzer adds stays
# there, out of the repository). Crashes, leaks, timeouts and out-of-memory inputs go to
# build-fuzz/crashes/TARGET/. Prints per target the executions, crashes and time; exits 1 when
# any target crashed. FUZZ_KEEP_GOING=1 runs in libFuzzer's fork mode, which goes on after a
# crash (to count crashes inside a library rather than stop at the first).
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets="scenario topology sweep trace results"
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -eq 0 ]; then
    echo "usage: scripts/fuzz.sh SECONDS [TARGET...]   (targets: $all_targets)" >&2
    exit 2
fi
seconds=$1
shift
targets="${*:-$all_targets}"
for t in $targets; do
    case " $all_targets " in
        *" $t "*) ;;
        *) echo "scripts/fuzz.sh: unknown target '$t' (targets: $all_targets)" >&2; exit 2 ;;
    esac
done

. scripts/setup.sh
STEPSIM_PACKAGES="$STEPSIM_PACKAGES clang libclang-rt-14-dev"
stepsim_install_packages

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" -Dfuzz=true -Db_lundef=false
fi
ninja -C "$build" $(for t in $targets; do echo "test/fuzz/fuzz_$t"; done)

root=$(pwd)
export LSAN_OPTIONS="suppressions=$root/test/fuzz/lsan.supp:print_suppressions=0"
summary=""
failed=0
for t in $targets; do
    corpus="$root/$build/corpus/$t" crashes="$root/$build/crashes/$t" work="$root/$build/run/$t"
    mkdir -p "$corpus" "$crashes" "$work"
    for d in test/fuzz/corpus/$t test/fuzz/regressions/$t; do
        [ -d "$d" ] && cp -n "$d"/* "$corpus"/ 2>/dev/null || true
    done
    case $t in
        trace|results) opts=(-max_len=1048576 -timeout=10) ;;  # libhdf5 hangs on some files
        *) opts=(-max_len=65536 -timeout=25 "-dict=$root/test/fuzz/yaml.dict") ;;
    esac
    if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
        opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    else
        opts+=(-workers=1 -jobs=1)
    fi
    # inputs on which libhdf5 crashed or hung in the pre-walk's child (results_h5r_prewalk):
    # refused with exit 2, so no finding, but worth a place in test/fuzz/regressions/
    hdf5="$root/$build/hdf5-crashes/$t"
    mkdir -p "$hdf5"
    export STEPSIM_FUZZ_HDF5_CRASHES="$hdf5"
    hdf5_before=$(ls "$hdf5" | wc -l)
    before=$(ls "$crashes" | wc -l)
    start=$(date +%s)
    rm -f "$work"/fuzz-*.log
    echo "== fuzz_$t for ${seconds}s (log: $work/fuzz.log)"
    (cd "$work" && "$root/$build/test/fuzz/fuzz_$t" "${opts[@]}" -max_total_time="$seconds" \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
        "$corpus" >fuzz.log 2>&1) || true
    [ -f "$work/fuzz-0.log" ] && cat "$work/fuzz-0.log" >>"$work/fuzz.log"
    elapsed=$(($(date +%s) - start))
    crashed=$(($(ls "$crashes" | wc -l) - before))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$work/fuzz.log" | tail -1)
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz: FINDING)' "$work/fuzz.log" |
        head -5 || true
    hdf5_new=$(($(ls "$hdf5" | wc -l) - hdf5_before))
    line=$(printf '%-9s executions %10s  crashes %3d  time %5ss  libhdf5 crashes refused %d' \
        "$t" "${execs:-?}" "$crashed" "$elapsed" "$hdf5_new")
    echo "$line"
    summary="$summary$line"$'\n'
    [ "$crashed" -eq 0 ] || failed=1
done
echo
printf '%s' "$summary"
[ "$failed" -eq 0 ] || echo "crashing inputs: $build/crashes/ (CONTRIBUTING.md: adding one" \
    "to test/fuzz/regressions/)"
exit $failed
