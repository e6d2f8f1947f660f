#!/usr/bin/env bash
# train_errors.sh - bad input to train/eval: one clear "tempo: ..." line,
# exit 1 or 2, no result left behind as if complete.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
O="$E2E_TMP/o"
expect_error 2 "budget '-5m'" "$TEMPO" train --data "$D" --out "$O" --budget -5m
expect_error 2 "budget '0s'" "$TEMPO" train --data "$D" --out "$O" --budget 0s
expect_error 2 "budget 'soon'" "$TEMPO" train --data "$D" --out "$O" --budget soon
# numbers out of range: one line, exit 2, nothing run (issue 9: a 3.6e26 s budget was taken and
# printed "ETA -153722867280912930:-8"; --threads 4294967297 ran on 1 thread; a huge --steps became LLONG_MAX)
tr() { "$TEMPO" train --data "$D" --out "$O" "$@"; }
expect_error 2 "^tempo: --budget '99999999999999999999999h': out of range \(at most 720h, 30 days\)$" tr --budget 99999999999999999999999h --steps 2
expect_error 2 "^tempo: --budget '721h': out of range" tr --budget 721h
expect_error 2 "^tempo: --budget '1e400s': out of range" tr --budget 1e400s
expect_error 2 "^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$" tr --steps 2 --threads 4294967297
expect_error 2 "^tempo: --threads: 0 is out of range" tr --steps 2 --threads 0
expect_error 2 "^tempo: --threads: '2.5' is not an integer" tr --steps 2 --threads 2.5
expect_error 2 "^tempo: --steps: 99999999999999999999 is out of range \(1 to 1099511627776\)$" tr --steps 99999999999999999999
expect_error 2 "^tempo: --steps: 1099511627777 is out of range" tr --steps 1099511627777
expect_error 2 "^tempo: --steps: 0 is out of range" tr --steps 0
expect_error 2 "^tempo: --steps: 'many' is not a number" tr --steps many
expect_error 2 "^tempo: --seed: -1 is out of range \(0 to 9007199254740992\)$" tr --steps 2 --seed -1
expect_error 2 "^tempo: --seed: 18446744073709551616 is out of range" tr --steps 2 --seed 18446744073709551616
expect_error 2 "^tempo: --eval-stride: 4294967297 is out of range" tr --steps 2 --eval-stride 4294967297
expect_error 2 "^tempo: --val-limit: 1 is out of range" tr --steps 2 --val-limit 1
expect_error 2 "^tempo: --val-limit: 99999999999999999999 is out of range" tr --steps 2 --val-limit 99999999999999999999
expect_error 2 "^tempo: --stop-at-step: 99999999999999999999 is out of range" tr --steps 2 --stop-at-step 99999999999999999999
expect_error 2 "^tempo: --inject-nan-at-step: -1 is out of range" tr --steps 2 --inject-nan-at-step -1
# bf16 products where the CPU (here, the kernel path) cannot: refused before anything is made
TEMPO_KERNELS=avx2 expect_error 2 "^tempo: train: bf16_products=1 \(--precision bf16\) needs a CPU with AVX-512 BF16" \
    tr --steps 2 --precision bf16
TEMPO_KERNELS=avx2 expect_error 2 "needs a CPU with AVX-512 BF16" tr --steps 2 --set bf16_products=1
expect_error 2 "bf16_products" tr --steps 2 --set bf16_products=2
[ ! -e "$O" ] || fail "a rejected command created $O"
# a config the trainer refuses after it made the run folder: the folder goes again
expect_error 2 "not divisible by n_heads 3" tr --steps 2 --set n_heads=3
[ ! -e "$O" ] || fail "a config refused in the trainer left the run folder $O"
expect_error 2 "preset nope" "$TEMPO" train --data "$D" --out "$O" --budget 5s --preset nope
expect_error 2 "^tempo: preset /nonexistent.conf: no such file$" "$TEMPO" train --data "$D" --out "$O" --budget 5s --preset /nonexistent.conf
expect_error 2 "^tempo: preset configs/nope: no such file$" "$TEMPO" train --data "$D" --out "$O" --budget 5s --preset configs/nope
expect_error 2 "--set wat" "$TEMPO" train --data "$D" --out "$O" --budget 5s --set wat=1
expect_error 2 "d_model=x" "$TEMPO" train --data "$D" --out "$O" --budget 5s --set d_model=x
expect_error 2 "unknown option" "$TEMPO" train --data "$D" --out "$O" --budget 5s --frobnicate
expect_error 2 "--data" "$TEMPO" train --out "$O" --budget 5s
expect_error 1 "missing/train.tok" "$TEMPO" train --data "$E2E_TMP/missing" --out "$O" --budget 5s
# truncated and foreign token files
mkdir -p "$E2E_TMP/bad"
for f in "$D"/*; do [ -f "$f" ] && cp "$f" "$E2E_TMP/bad/"; done   # the files (not the memory store)
head -c 1000 "$D/train.tok" > "$E2E_TMP/bad/train.tok"
expect_error 1 "train.tok.*truncated" "$TEMPO" train --data "$E2E_TMP/bad" --out "$O" --budget 5s
echo "not tokens at all, just text" > "$E2E_TMP/bad/train.tok"
expect_error 1 "train.tok" "$TEMPO" train --data "$E2E_TMP/bad" --out "$O" --budget 5s
[ ! -e "$O/result.json" ] || fail "result.json left behind by a failed run"
# a model, then broken copies of it
"$TEMPO" train --data "$D" --out "$E2E_TMP/run" --preset tiny-test --steps 3 --no-eval >/dev/null 2>&1 || fail "tiny run failed"
M="$E2E_TMP/run/model.safetensors"
head -c 5000 "$M" > "$E2E_TMP/trunc.safetensors"
expect_error 1 "trunc.safetensors: truncated" "$TEMPO" eval --model "$E2E_TMP/trunc.safetensors" --text "$DATA/tiny/val.txt"
expect_error 1 "not a safetensors file" "$TEMPO" eval --model "$DATA/tiny/val.txt" --text "$DATA/tiny/val.txt"
expect_error 1 "nothing.txt" "$TEMPO" eval --model "$E2E_TMP/run" --text "$E2E_TMP/nothing.txt"
expect_error 2 "exactly one" "$TEMPO" eval --model "$E2E_TMP/run"
# a folder as --text is refused (issue 31: it scored every file in it), in both phases
expect_error 2 "^tempo: --text $DATA/tiny: is a directory; expected a file$" "$TEMPO" eval --model "$E2E_TMP/run" --text "$DATA/tiny"
expect_error 2 "^tempo: --text $DATA/tiny/: is a directory; expected a file$" "$TEMPO" eval --model "$E2E_TMP/run" --phase 2 --text "$DATA/tiny/"
ev() { "$TEMPO" eval --model "$E2E_TMP/run" --text "$DATA/tiny/val.txt" "$@"; }
expect_error 2 "^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$" ev --threads 4294967297
expect_error 2 "^tempo: --stride: 0 is out of range" ev --stride 0
expect_error 2 "^tempo: --batch: 99999999999999999999 is out of range" ev --batch 99999999999999999999
expect_error 2 "^tempo: --limit: 4294967297 is out of range" "$TEMPO" eval --model "$E2E_TMP/run" --phase 2 --limit 4294967297
# the longest budget there is runs, and its progress line shows a sane ETA
"$TEMPO" train --data "$D" --out "$E2E_TMP/long" --preset tiny-test --steps 2 --budget 720h --no-eval \
    >/dev/null 2>"$E2E_TMP/long.err" || { cat "$E2E_TMP/long.err" >&2; fail "--budget 720h --steps 2 failed"; }
grep -Eq '^\[[0-9]+:[0-9]{2}/720:00:00\] step 1 .* ETA (720:00:00|719:59:[0-9]{2})$' "$E2E_TMP/long.err" ||
    fail "no sane progress line for --budget 720h: $(grep -m1 step "$E2E_TMP/long.err")"
# a truncated checkpoint on resume
head -c 3000 "$E2E_TMP/run/checkpoint.safetensors" > "$E2E_TMP/run/c.tmp" && mv "$E2E_TMP/run/c.tmp" "$E2E_TMP/run/checkpoint.safetensors"
expect_error 1 "checkpoint.safetensors: truncated" "$TEMPO" train --data "$D" --out "$E2E_TMP/run" --resume --steps 5
# divergence: an absurd learning rate ends with a clear error after the guard's retries
expect_error 1 "diverged" "$TEMPO" train --data "$D" --out "$E2E_TMP/div" --preset tiny-test --steps 200 --no-eval \
    --set lr=1e6 --set lr_embed=1e6 --set lr_scalar=1e6 --set grad_clip=0
grep -q '"diverged"' "$E2E_TMP/div/metrics.jsonl" || fail "divergence not logged"
# a single injected NaN is survived: restore, lower lr, finish
"$TEMPO" train --data "$D" --out "$E2E_TMP/nan" --preset tiny-test --steps 20 --no-eval --inject-nan-at-step 5 \
    >/dev/null 2>&1 || fail "run with one injected NaN failed"
[ "$(json_field "$E2E_TMP/nan/result.json" retries)" = 1 ] || fail "retries not 1"
[ "$(json_field "$E2E_TMP/nan/result.json" steps)" = 20 ] || fail "did not finish 20 steps"
# ... and it restores the right state: with the lr left as it was (retry_lr_factor=1), a run whose step 5
# is thrown away ends bit for bit where an undisturbed run ends (the snapshot holds the weights, the
# optimizer's moments and step, and the batch stream's position; any of them missed would show), while
# the default factor (0.5) lowers the lr from the restore on, so it ends elsewhere
G=(--data "$D" --preset tiny-test --steps 20 --no-eval --threads 2 --seed 9)
# same_weights A B: the two model files hold the same tensors bit for bit (their headers hold the config,
# which differs in retry_lr_factor)
same_weights() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = {k: v for k, v in json.loads(raw[8:8 + n]).items() if k != "__metadata__"}
    return head, raw[8 + n:]
sys.exit(0 if tensors(sys.argv[1]) == tensors(sys.argv[2]) else 1)
PY
}
"$TEMPO" train "${G[@]}" --out "$E2E_TMP/g0" >/dev/null 2>&1 || fail "undisturbed run failed"
"$TEMPO" train "${G[@]}" --out "$E2E_TMP/g1" --inject-nan-at-step 5 --set retry_lr_factor=1 >/dev/null 2>&1 \
    || fail "run with a NaN and factor 1 failed"
[ "$(json_field "$E2E_TMP/g1/result.json" retries)" = 1 ] || fail "factor-1 run: retries not 1"
same_weights "$E2E_TMP/g0/model.safetensors" "$E2E_TMP/g1/model.safetensors" \
    || fail "the divergence guard did not restore the state it saved (weights differ from the undisturbed run)"
"$TEMPO" train "${G[@]}" --out "$E2E_TMP/g2" --inject-nan-at-step 5 >/dev/null 2>&1 || fail "run with a NaN failed"
same_weights "$E2E_TMP/g0/model.safetensors" "$E2E_TMP/g2/model.safetensors" \
    && fail "the lowered lr after a restore changed nothing"
exit 0
