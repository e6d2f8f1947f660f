#!/usr/bin/env bash
# run.sh [SECONDS] - build every libFuzzer harness in tests/fuzz/ (clang,
# ASan+UBSan; clang is installed with apt-get when missing and we are root)
# and run each for SECONDS (default 10; one per core at a time) from its seed corpus
# tests/fuzz/corpus/<name>/ (new inputs go to build/fuzz/corpus/<name>/, the
# seeds are never written). Exit 1 when a harness finds a crash, a leak or a
# hang (its input is in build/fuzz/crash-*: keep it as a regression seed).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "fuzz: installing clang (libFuzzer, libomp)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libomp-dev) >/dev/null
    else
        echo "fuzz: clang is not installed (apt-get install clang libomp-dev)" >&2
        exit 1
    fi
fi
harnesses=()
for src in tests/fuzz/fuzz_*.c; do harnesses+=("$(basename "$src" .c)"); done
make -s -j"$(nproc 2>/dev/null || echo 1)" "${harnesses[@]/#/build/fuzz/}"
# One harness per core at a time (each is single-threaded); results in order.
jobs=$(nproc 2>/dev/null || echo 1)
run_harness() {
    local h=$1 name=${1#fuzz_} start=$SECONDS
    mkdir -p "build/fuzz/corpus/$name" "build/fuzz/artifacts/$name"
    if "build/fuzz/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="build/fuzz/artifacts/$name/" "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name" \
        >"build/fuzz/$name.log" 2>&1; then
        echo "fuzz $name: ok ($(grep -o 'Done [0-9]* runs' "build/fuzz/$name.log" | tail -1), $((SECONDS - start)) s)" \
            >"build/fuzz/$name.result"
    else
        { echo "fuzz $name: FAILED (build/fuzz/$name.log; input in build/fuzz/artifacts/$name/)"
          tail -30 "build/fuzz/$name.log"; } >"build/fuzz/$name.result"
        return 1
    fi
}
status=0
pids=()
for h in "${harnesses[@]}"; do
    rm -f "build/fuzz/${h#fuzz_}.result"
    if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}" || status=1
        pids=("${pids[@]:1}")
    fi
    run_harness "$h" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
for h in "${harnesses[@]}"; do
    cat "build/fuzz/${h#fuzz_}.result" 2>/dev/null || { echo "fuzz ${h#fuzz_}: no result"; status=1; }
done
exit $status
