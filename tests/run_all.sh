#!/usr/bin/env bash
# run_all.sh - runs every unit test (normal and ASan+UBSan builds) and every
# end-to-end test (tests/e2e/*.sh), then prints one closing line
# "N passed, N passed in part, N failed, N skipped" counting test
# programs/scripts; one that printed "SKIP: reason" and exited 0 (it could
# not run on this machine: the GPU tests without a GPU) counts as skipped, not
# passed; one that passed but printed "PART SKIPPED: reason" lines (tests/test.h's
# TEST_SKIP: a unit test's AVX-512 cases on a CPU without it) counts as passed
# in part. Both are listed with their reasons above that line. Exit 1 on any
# failure.
set -u
cd "$(dirname "$0")/.."
export TEMPO_DATA="${TEMPO_DATA:-$(cd .. && pwd)/shared/data}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# The hardware profile that MFU reads: the suite's own, never the user's (~/.cache/tempo/hardware.json).
# A test that needs a peak measures it into this file under the suite's load and its kernel caps
# (TEMPO_KERNELS=portable); written to the user's cache, that peak stood for the machine afterwards.
suite_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tempo-suite.XXXXXX") || { echo "run_all.sh: cannot make a temporary folder" >&2; exit 1; }
trap 'rm -rf "$suite_tmp"' EXIT
export TEMPO_HW_PROFILE="${TEMPO_HW_PROFILE:-$suite_tmp/hardware.json}"
passed=0; failed=0; failures=(); skipped=(); partly=()
run_one() {  # label, command...
    local label=$1; shift
    local start=$SECONDS
    if "$@" >"build/log.$$" 2>&1; then
        local why; why=$(grep -m1 '^SKIP: ' "build/log.$$")
        local parts; parts=$(grep '^PART SKIPPED: ' "build/log.$$" | sed 's/^PART SKIPPED: //' | paste -sd ';' - | sed 's/;/; /g')
        if [ -n "$why" ]; then   # it could not run here and says why
            skipped+=("$label: ${why#SKIP: }"); echo "skip $label ($((SECONDS - start))s): ${why#SKIP: }"
        elif [ -n "$parts" ]; then   # it ran, but parts of it could not
            partly+=("$label: $parts"); echo "part $label ($((SECONDS - start))s): not run here: $parts"
        else
            passed=$((passed + 1)); echo "ok   $label ($((SECONDS - start))s)"
        fi
    else
        failed=$((failed + 1)); failures+=("$label"); echo "FAIL $label ($((SECONDS - start))s)"
        sed 's/^/     | /' "build/log.$$" | tail -40
    fi
}
# only the programs whose source is still there (a renamed test leaves its old binary in build/)
unit_source() { [ -f "tests/unit/$1.c" ] || [ -f "tests/unit/$1.cpp" ]; }
for t in build/tests/test_*; do unit_source "$(basename "$t")" && run_one "unit $(basename "$t")" "$t"; done
for t in build/asan/tests/test_*; do unit_source "$(basename "$t")" && run_one "asan $(basename "$t")" "$t"; done
for t in tests/e2e/*.sh; do
    [ -e "$t" ] || continue
    run_one "e2e $(basename "$t" .sh)" bash "$t"
done
rm -f "build/log.$$"
[ ${#partly[@]} -eq 0 ] || printf 'passed in part: %s\n' "${partly[@]}"
[ ${#skipped[@]} -eq 0 ] || printf 'skipped: %s\n' "${skipped[@]}"
[ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
echo "$passed passed, ${#partly[@]} passed in part, $failed failed, ${#skipped[@]} skipped in $((SECONDS / 60))m$((SECONDS % 60))s"
[ "$failed" -eq 0 ]
