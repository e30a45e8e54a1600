#!/usr/bin/env bash
# `make test`: every stage CI runs, in order, each counted; ends with "total: N passed, N failed".
# Stages: generated-code drift, builds, spec lint, the TypeScript SDK check, codegen tests,
# unit + HTTP tests on a response-checking build, then unit + HTTP tests again under
# ASan+UBSan, and a few seconds of each libFuzzer target (clang, ASan+UBSan) after replaying
# its kept crash inputs. Each HTTP suite runs twice: on SQLite (the default engine) and on
# PostgreSQL (http-pg, http-san-pg: TREASURY_TEST_ENGINE=postgresql, the suite starting and
# removing a throwaway cluster of its own, tests/pg/cluster.py).
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
MAKE="make --no-print-directory"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0; failed=0; failures=()
log=build/test-logs; mkdir -p "$log"

stage() { # name, command...
    local name=$1; shift
    echo "=== $name"
    if "$@" > "$log/$name.log" 2>&1; then
        tail -3 "$log/$name.log"
    else
        tail -40 "$log/$name.log"; echo "--- stage $name FAILED (log: $log/$name.log)"
        return 1
    fi
}
count_check() { # name, command...: a stage that is one check
    if stage "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}
count_suite() { # name, command...: a stage whose log ends with "N passed[, N failed]"
    local name=$1
    stage "$@"; local rc=$?
    local line p=0 f=0
    line=$(grep -E '[0-9]+ (passed|failed)' "$log/$name.log" | tail -1)
    p=$(echo "$line" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END{print s+0}')
    f=$(echo "$line" | grep -oE '[0-9]+ (failed|errors?)' | awk '{s+=$1} END{print s+0}')
    p=${p:-0}; f=${f:-0}
    if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    [ "$f" = 0 ] || failures+=("$name")
    # The suites by kind (tests/http/test_by_kind_*.py): operations each covered, and skipped why.
    grep -E '^by kind: ' "$log/$name.log" || true
}

# Drift first: the builds below regenerate generated/ from the spec, which would hide a commit
# whose generated/ does not match its openapi/ and codegen/.
count_check check-generated $MAKE check-generated
count_check build $MAKE all CHECK=1
count_check build-release $MAKE all build/bench/ratelimit_bench build/bench/bare_mhd
count_check lint-spec $MAKE lint-spec
count_check sdk-check $MAKE sdk-check
count_suite codegen $PY -m pytest -q -p no:cacheprovider tests/codegen
count_suite unit $MAKE unit CHECK=1
count_suite http env TREASURY_SERVER_BIN=build/check/treasury-server $PY -m pytest -q -p no:cacheprovider tests/http
count_suite http-pg env TREASURY_SERVER_BIN=build/check/treasury-server TREASURY_TEST_ENGINE=postgresql $PY -m pytest -q -p no:cacheprovider tests/http
count_check build-san $MAKE all SAN=1
count_suite unit-san $MAKE unit SAN=1
count_suite fuzz $MAKE fuzz FUZZ_SECONDS=${FUZZ_SECONDS:-5}
count_suite http-san env TREASURY_SERVER_BIN=build/san/treasury-server TREASURY_TEST_SANITIZED=1 $PY -m pytest -q -p no:cacheprovider tests/http
count_suite http-san-pg env TREASURY_SERVER_BIN=build/san/treasury-server TREASURY_TEST_SANITIZED=1 TREASURY_TEST_ENGINE=postgresql $PY -m pytest -q -p no:cacheprovider tests/http

echo
# Screenshots the browser tests keep for people to look at (the docs page, the OAuth pages).
if [ -d build/test-artifacts ]; then
    echo "test artifacts (screenshots): build/test-artifacts/"
    find build/test-artifacts -name '*.png' | sort | sed 's/^/  /'
fi
[ ${#failures[@]} -eq 0 ] || echo "failed stages: ${failures[*]}"
echo "total: $passed passed, $failed failed"
[ $failed -eq 0 ]
