#!/usr/bin/env bash
# prepare_errors.sh - `tempo prepare` on bad input: one line "tempo: <thing>:
# <problem>" on stderr, exit 1 (2 for bad usage), and nothing written.
# Run from the repo root with build/tempo built.
set -u
TEMPO=${TEMPO:-build/tempo}
tmp=$(mktemp -d /tmp/tempo_e2e_prepare_errors.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect CODE PATTERN ARGS...: exit code, a line of stderr matching PATTERN, no output folder
expect() {
    local code=$1 pattern=$2; shift 2
    rm -rf "$tmp/out"
    "$TEMPO" prepare "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    local rc=$?
    local problem=""
    [ "$rc" -eq "$code" ] || problem="exit $rc, want $code"
    grep -q -- "$pattern" "$tmp/stderr" || problem="$problem; stderr lacks '$pattern'"
    [ "$(grep -c '^tempo: ' "$tmp/stderr")" -eq 1 ] || problem="$problem; want one 'tempo: ' line"
    [ ! -e "$tmp/out" ] || problem="$problem; $tmp/out was created"
    [ ! -s "$tmp/stdout" ] || problem="$problem; stdout not empty"
    if [ -n "$problem" ]; then
        echo "FAIL prepare $*: $problem"
        sed 's/^/    stderr: /' "$tmp/stderr"
        fails=$((fails + 1))
    fi
}

mkdir "$tmp/emptydir"
printf '\x1e\n\x1e\n' >"$tmp/empty.txt"
printf '{"text": "fine"}\n{"text": nope}\n' >"$tmp/bad.jsonl"
printf '{"body": "no text field"}\n' >"$tmp/notext.jsonl"
printf 'not xz at all' >"$tmp/fake.txt.xz"
printf 'one document only\n' >"$tmp/one.txt"
printf 'doc one\n\x1e\ndoc two\n\x1e\n' >"$tmp/two.txt"

expect 2 "^tempo: prepare: --out DATA_DIR is required"
expect 2 "^tempo: prepare: no INPUT given" --out "$tmp/out"
expect 2 "^tempo: prepare: --out DATA_DIR is required" "$tmp/two.txt"
expect 2 "^tempo: --bogus: unknown option (see tempo prepare --help)$" --out "$tmp/out" --bogus "$tmp/two.txt"
expect 2 "^tempo: --vocab: 'abc' is not a number (use 256 to 65536)" --out "$tmp/out" --vocab abc "$tmp/two.txt"
expect 2 "^tempo: --vocab: 100 is out of range (256 to 65536)" --out "$tmp/out" --vocab 100 "$tmp/two.txt"
expect 2 "^tempo: --vocab: 70000 is out of range" --out "$tmp/out" --vocab 70000 "$tmp/two.txt"
expect 2 "^tempo: --vocab: missing value (see tempo prepare --help)$" --out "$tmp/out" "$tmp/two.txt" --vocab
expect 2 "^tempo: --val-share: 0.9 is out of range" --out "$tmp/out" --val-share 0.9 "$tmp/two.txt"
expect 2 "^tempo: --threads: 'x' is not a number" --out "$tmp/out" --threads x "$tmp/two.txt"
expect 2 "^tempo: --tok-sample-mb: 0 is out of range" --out "$tmp/out" --tok-sample-mb 0 "$tmp/two.txt"
# numbers beyond their type (issue 9): out of range, never wrapped or saturated
expect 2 "^tempo: --vocab: 99999999999999999999 is out of range (256 to 65536)" --out "$tmp/out" --vocab 99999999999999999999 "$tmp/two.txt"
expect 2 "^tempo: --vocab: 4294967552 is out of range" --out "$tmp/out" --vocab 4294967552 "$tmp/two.txt"
expect 2 "^tempo: --vocab: '512.5' is not an integer" --out "$tmp/out" --vocab 512.5 "$tmp/two.txt"
expect 2 "^tempo: --threads: 4294967297 is out of range (1 to 1024)" --out "$tmp/out" --threads 4294967297 "$tmp/two.txt"
expect 2 "^tempo: --threads: 0 is out of range" --out "$tmp/out" --threads=0 "$tmp/two.txt"
expect 2 "^tempo: --val-share: 1e999 is out of range" --out "$tmp/out" --val-share 1e999 "$tmp/two.txt"
expect 2 "^tempo: --val-share: 'nan' is not a number" --out "$tmp/out" --val-share nan "$tmp/two.txt"
expect 2 "^tempo: --tok-sample-mb: inf is out of range" --out "$tmp/out" --tok-sample-mb inf "$tmp/two.txt"
expect 1 "^tempo: $tmp/missing.txt: cannot open: No such file or directory" --out "$tmp/out" "$tmp/missing.txt"
expect 1 "^tempo: $tmp/emptydir: no .txt, .jsonl, .txt.xz or .jsonl.xz files" --out "$tmp/out" "$tmp/emptydir"
expect 1 "^tempo: $tmp/empty.txt: no documents" --out "$tmp/out" "$tmp/empty.txt"
expect 1 "^tempo: inputs: no documents in 2 files" --out "$tmp/out" "$tmp/empty.txt" "$tmp/empty.txt"
expect 1 "^tempo: $tmp/bad.jsonl:2: malformed JSON: column 10: unexpected character" --out "$tmp/out" "$tmp/bad.jsonl"
expect 1 "^tempo: $tmp/notext.jsonl:1: no string field \"text\"" --out "$tmp/out" "$tmp/notext.jsonl"
expect 1 "^tempo: $tmp/fake.txt.xz: corrupt xz data" --out "$tmp/out" "$tmp/fake.txt.xz"
expect 1 "^tempo: $tmp/one.txt: only 1 document" --out "$tmp/out" "$tmp/one.txt"
expect 1 "^tempo: $tmp/missing.txt: cannot open" --out "$tmp/out" --val "$tmp/missing.txt" "$tmp/two.txt"
expect 1 "^tempo: $tmp/empty.txt: no documents" --out "$tmp/out" --val "$tmp/empty.txt" "$tmp/two.txt"
expect 2 "is both an input and the --val file" --out "$tmp/out" --val "$tmp/two.txt" "$tmp/two.txt"

# --out naming a file: refused, the file untouched
"$TEMPO" prepare --out "$tmp/one.txt" "$tmp/two.txt" >/dev/null 2>"$tmp/stderr"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "one.txt: exists and is not a folder" "$tmp/stderr" ||
   [ "$(cat "$tmp/one.txt")" != "one document only" ]; then
    echo "FAIL prepare --out FILE: exit $rc: $(cat "$tmp/stderr")"
    fails=$((fails + 1))
fi

# a failed run over a finished folder leaves the old, complete outputs alone
"$TEMPO" prepare --out "$tmp/done" --vocab 260 --val-share 0.5 "$tmp/two.txt" >/dev/null 2>&1 || {
    echo "FAIL: small prepare did not succeed"; fails=$((fails + 1)); }
"$TEMPO" prepare --out "$tmp/done" --vocab 260 "$tmp/missing.txt" >/dev/null 2>&1
[ -f "$tmp/done/meta.json" ] || { echo "FAIL: a failed run removed a finished folder's meta.json"; fails=$((fails + 1)); }

# --help works and states the sample rule
"$TEMPO" prepare --help >"$tmp/help" 2>&1 && grep -q "tok-sample-mb" "$tmp/help" && grep -q "smallest hash" "$tmp/help" ||
    { echo "FAIL: prepare --help"; fails=$((fails + 1)); }

if [ $fails -ne 0 ]; then
    echo "prepare_errors: $fails failed"
    exit 1
fi
echo "prepare_errors: ok"
