#!/usr/bin/env bash
# cli_errors.sh - the top-level `tempo` command: an unknown command is one
# error line with a pointer to --help (exit 2), not the whole usage (issue 9);
# --help prints the usage (exit 0); no command at all is bad usage (exit 2).
# Every command reads its flags from a table (cli_parse_flags, issue 32 item 5):
# an unknown flag and a bad value are each one line naming the flag, exit 2.
source "$(dirname "$0")/train_common.bash"
expect_error 2 "^tempo: unknown command 'x'; see tempo --help$" "$TEMPO" x
out=$("$TEMPO" frobnicate --help 2>&1 >/dev/null)
[ "$out" = "tempo: unknown command 'frobnicate'; see tempo --help" ] || fail "unknown command: got '$out'"
"$TEMPO" --help >"$E2E_TMP/help" 2>&1 || fail "tempo --help exited $?"
grep -q '^usage: tempo <command>' "$E2E_TMP/help" && grep -q '^  judge ' "$E2E_TMP/help" || fail "tempo --help: $(cat "$E2E_TMP/help")"
"$TEMPO" >/dev/null 2>&1
[ $? -eq 2 ] || fail "tempo without a command: want exit 2"
echo "ok: unknown command, --help, no command"

# one_line_error PATTERN cmd...: exit 2 and stderr exactly one line matching PATTERN (grep -E)
one_line_error() {
    local pattern=$1 out rc; shift
    out=$("$TEMPO" "$@" 2>&1 >/dev/null); rc=$?
    [ "$rc" -eq 2 ] || fail "tempo $*: exit $rc, want 2: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "tempo $*: want one line, got: $out"
    echo "$out" | grep -Eq -- "$pattern" || fail "tempo $*: want /$pattern/, got: $out"
}
# each command (the words before the flag), a bad value for one of its flags, the error's start
while IFS='|' read -r cmd bad want; do
    read -ra words <<< "$cmd"
    read -ra flags <<< "$bad"
    name=${words[*]}; name=${name% --device cuda}
    one_line_error "^tempo: --frobnicate: unknown option \(see tempo $name --help\)$" "${words[@]}" --frobnicate 1
    one_line_error "^tempo: $want" "${words[@]}" "${flags[@]}"
done <<'EOF2'
train|--steps 0|--steps: 0 is out of range
eval|--phase 3|--phase 3: expected 1 or 2$
plan|--budget soon|--budget 'soon': not a duration
icl|--limit -1|--limit: -1 is out of range
generate|--tokens 0|--tokens: 0 is out of range
bench peak|--seconds 0|--seconds: 0 is out of range
bench kernels|--kernel nope|--kernel nope: expected gemm, ops or all$
bench train|--steps 0|--steps: 0 is out of range
bench infer|--runs 0|--runs: 0 is out of range
bench allreduce|--iters 0|--iters: 0 is out of range
bench scale|--max-ranks 0|--max-ranks: 0 is out of range
bench peak --device cuda|--reps 0|--reps: 0 is out of range
bench train --device cuda|--precision fp8|--precision fp8: expected bf16 or fp32$
judge|--memory 1K|--memory: 1K is out of range
prepare|--vocab=100|--vocab: 100 is out of range
leaderboard|--phase 3|--phase 3: expected 1 or 2$
export|--dtype bf16|--dtype bf16: expected f32, f16 or q8_0$
compress|--threads 0|--threads: 0 is out of range
decompress|--threads 0|--threads: 0 is out of range
EOF2
# a missing value names the flag too
one_line_error "^tempo: --model: missing value \(see tempo icl --help\)$" icl --model
# --version names the CPU's kernel path, and TEMPO_KERNELS caps it
"$TEMPO" --version | grep -Eq '^cpu: (avx512|avx2|portable) kernels \(' || fail "--version: no cpu: line"
TEMPO_KERNELS=portable "$TEMPO" --version | grep -q '^cpu: portable kernels' || fail "--version ignores TEMPO_KERNELS"
if grep -qw avx512f /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    "$TEMPO" --version | grep -q '^cpu: avx512 kernels' || fail "--version: an AVX-512 CPU not on the avx512 path"
    TEMPO_KERNELS=avx2 "$TEMPO" --version | grep -q '^cpu: avx2 kernels' || fail "--version: TEMPO_KERNELS=avx2 not honoured"
fi
echo "ok: every command refuses an unknown flag and a bad value in one line (exit 2); --version names the kernel path"
exit 0
