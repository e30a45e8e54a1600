#!/usr/bin/env bash
# Runs each fuzz target: first its kept crash inputs (tests/fuzz/regressions/<target>/, each
# must now pass), then SECONDS of fuzzing from the committed seeds (tests/fuzz/corpus/<target>/)
# plus what earlier runs found (build/fuzz/corpus/<target>/). Prints one line per target and
# "N passed, N failed". A crash leaves its input in build/fuzz/crashes/.
#   usage: tests/fuzz/run.sh SECONDS target...
set -u
cd "$(dirname "$0")/../.."
seconds=$1; shift
passed=0; failed=0
mkdir -p build/fuzz/crashes
for t in "$@"; do
    bin=build/fuzz/fuzz_$t
    work=build/fuzz/corpus/$t
    seeds=tests/fuzz/corpus/$t
    mkdir -p "$work" "$seeds"
    log=build/fuzz/$t.log
    ok=1
    regress=(tests/fuzz/regressions/$t/*)
    if [ -e "${regress[0]}" ]; then
        "$bin" "${regress[@]}" > "$log.regress" 2>&1 || ok=0
    fi
    if [ $ok = 1 ]; then
        "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="build/fuzz/crashes/$t-" "$work" "$seeds" > "$log" 2>&1 || ok=0
    fi
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" 2>/dev/null | grep -oE '[0-9]+$')
    cov=$(grep -oE 'cov: [0-9]+' "$log" 2>/dev/null | tail -1)
    if [ $ok = 1 ]; then
        passed=$((passed + 1))
        echo "fuzz_$t: ${runs:-0} runs in ${seconds}s, ${cov:-cov: ?}, no crash"
    else
        failed=$((failed + 1))
        echo "fuzz_$t: FAILED (log: $log$( [ -e "$log.regress" ] && echo " and $log.regress"))"
        grep -E "ERROR|SUMMARY|Test unit written" "$log" "$log.regress" 2>/dev/null | head -5
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ $failed = 0 ]
