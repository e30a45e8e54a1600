#!/usr/bin/env bash
# Runs each unit-test binary given; prints their lines and one "unit: N passed, N failed".
set -u
passed=0; failed=0
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E 'FAIL|passed|failed|ERROR|runtime error|Sanitizer' || true
    line=$(printf '%s\n' "$out" | grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
        f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
        passed=$((passed + p)); failed=$((failed + f))
    fi
    if [ $rc -ne 0 ] && { [ -z "$line" ] || [ "${f:-0}" = 0 ]; }; then
        echo "unit binary $t exited $rc"; failed=$((failed + 1))
    fi
done
echo "unit: $passed passed, $failed failed"
[ $failed -eq 0 ]
