#!/usr/bin/env bash
# train_errors.sh - bad input to train/eval: one clear "tempo: ..." line,
# exit 1 or 2, no result left behind as if complete.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
O="$E2E_TMP/o"
expect_error 2 "budget '-5m'" "$TEMPO" train --data "$D" --out "$O" --budget -5m
expect_error 2 "budget '0s'" "$TEMPO" train --data "$D" --out "$O" --budget 0s
expect_error 2 "budget 'soon'" "$TEMPO" train --data "$D" --out "$O" --budget soon
expect_error 2 "preset nope" "$TEMPO" train --data "$D" --out "$O" --budget 5s --preset nope
expect_error 2 "--set wat" "$TEMPO" train --data "$D" --out "$O" --budget 5s --set wat=1
expect_error 2 "d_model=x" "$TEMPO" train --data "$D" --out "$O" --budget 5s --set d_model=x
expect_error 2 "unknown option" "$TEMPO" train --data "$D" --out "$O" --budget 5s --frobnicate
expect_error 2 "--data" "$TEMPO" train --out "$O" --budget 5s
expect_error 1 "missing/train.tok" "$TEMPO" train --data "$E2E_TMP/missing" --out "$O" --budget 5s
# truncated and foreign token files
mkdir -p "$E2E_TMP/bad"
cp "$D"/* "$E2E_TMP/bad/"
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
exit 0
