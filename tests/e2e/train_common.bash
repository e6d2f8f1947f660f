# train_common.bash - shared helpers for the end-to-end test scripts (sourced, not run).
# Every script runs from the repo root with build/tempo built and TEMPO_DATA
# pointing at the shared data folder.
set -u
TEMPO=${TEMPO:-build/tempo}
DATA=${TEMPO_DATA:-../shared/data}
E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tempo-e2e.XXXXXX")
trap 'rm -rf "$E2E_TMP"' EXIT
# the hardware profile MFU reads: run_all.sh's for the suite, else this script's own; never the
# user's ~/.cache/tempo/hardware.json, which a peak measured beside the tests would replace
export TEMPO_HW_PROFILE="${TEMPO_HW_PROFILE:-$E2E_TMP/hardware.json}"

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error CODE PATTERN cmd... : the command exits with CODE and its stderr
# is one line matching PATTERN (grep -E).
expect_error() {
    local code=$1 pattern=$2; shift 2
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    [ "$rc" -eq "$code" ] || fail "expected exit $code, got $rc: $* -> $out"
    echo "$out" | grep -Eq -- "$pattern" || fail "expected /$pattern/ in: $out ($*)"
    [ "$(echo "$out" | grep -c 'tempo:')" -ge 1 ] || fail "no 'tempo:' error line: $out"
}

# json_field FILE KEY : a top-level number/string of a one-line JSON object.
json_field() {
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v)' "$1" "$2"
}

# tiny_data VOCAB : prepares the tiny fixture once per build (cached by prepare) and prints its folder.
tiny_data() {
    local dir="build/e2e/tiny-v$1"
    "$TEMPO" prepare --out "$dir" --vocab "$1" "$DATA/tiny/train.txt" --val "$DATA/tiny/val.txt" \
        >/dev/null 2>"$E2E_TMP/prepare.log" || { cat "$E2E_TMP/prepare.log" >&2; fail "prepare of tiny failed"; }
    echo "$dir"
}

# same_memory A B : two memory.bin files hold the same memory, byte for byte but for the build's
# seconds (bytes 744-751 of versions 3 and 4, src/memory/memory_file.h: a timing, not the memory).
same_memory() {
    python3 - "$1" "$2" <<'PY'
import sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
sys.exit(0 if len(a) == len(b) and a[:744] == b[:744] and a[752:] == b[752:] else 1)
PY
}
