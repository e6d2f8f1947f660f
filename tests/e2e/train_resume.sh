#!/usr/bin/env bash
# train_resume.sh - a stopped run resumed with --resume ends with weights
# bit-identical to an uninterrupted run of the same number of steps (same seed
# and threads): once stopped at a chosen step, once by SIGTERM at an arbitrary
# moment. Also: --resume without a checkpoint is a clear error.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
COMMON=(--data "$D" --preset tiny-test --steps 40 --threads 2 --seed 7 --no-eval --set checkpoint_every=0.5)
"$TEMPO" train "${COMMON[@]}" --out "$E2E_TMP/full" > /dev/null 2>&1 || fail "full run failed"
"$TEMPO" train "${COMMON[@]}" --out "$E2E_TMP/part" --stop-at-step 13 > /dev/null 2>&1 || fail "partial run failed"
[ "$(json_field "$E2E_TMP/part/result.json" steps)" = 13 ] || fail "stop-at-step did not stop at 13"
"$TEMPO" train "${COMMON[@]}" --out "$E2E_TMP/part" --resume > /dev/null 2>&1 || fail "resume failed"
cmp "$E2E_TMP/full/model.safetensors" "$E2E_TMP/part/model.safetensors" || fail "resumed weights differ from uninterrupted run"
# interrupted by a signal at an arbitrary moment
SLOW=(--data "$D" --preset tiny-test --steps 300 --threads 2 --seed 3 --no-eval --set checkpoint_every=1000)
"$TEMPO" train "${SLOW[@]}" --out "$E2E_TMP/full2" > /dev/null 2>&1 || fail "full run 2 failed"
"$TEMPO" train "${SLOW[@]}" --out "$E2E_TMP/sig" > /dev/null 2>"$E2E_TMP/sig.log" &
pid=$!
# the signal goes as soon as the first step is logged: 299 steps are left to interrupt, whatever one costs
for _ in $(seq 3000); do grep -q '"train_loss"' "$E2E_TMP/sig/metrics.jsonl" 2>/dev/null && break; sleep 0.01; done
grep -q '"train_loss"' "$E2E_TMP/sig/metrics.jsonl" || { kill -9 "$pid"; fail "no step logged within 30 s"; }
kill -TERM "$pid"
wait "$pid"; rc=$?
# 130 only: a run that ended before the signal (exit 0) would resume nothing
[ "$rc" -eq 130 ] || fail "SIGTERM run exited $rc, not 130 (interrupted)"
[ "$(json_field "$E2E_TMP/sig/result.json" interrupted)" = True ] || fail "result.json does not say interrupted"
steps=$(json_field "$E2E_TMP/sig/result.json" steps)
[ "$steps" -ge 1 ] && [ "$steps" -lt 300 ] || fail "SIGTERM run stopped at step $steps, not within 1..299"
[ -f "$E2E_TMP/sig/checkpoint.safetensors" ] || fail "no checkpoint after SIGTERM"
"$TEMPO" train "${SLOW[@]}" --out "$E2E_TMP/sig" --resume > /dev/null 2>&1 || fail "resume after SIGTERM failed"
cmp "$E2E_TMP/full2/model.safetensors" "$E2E_TMP/sig/model.safetensors" || fail "weights after SIGTERM+resume differ"
# the resumed log continues the interrupted one: every step logged exactly once, in order
python3 - "$E2E_TMP/sig/metrics.jsonl" <<'PY' || fail "metrics.jsonl steps not 1..300 once each after resume"
import json, sys
steps = [r["step"] for r in map(json.loads, open(sys.argv[1])) if "train_loss" in r]
assert steps == list(range(1, 301)), steps[:5]
PY
expect_error 1 "no checkpoint" "$TEMPO" train --data "$D" --out "$E2E_TMP/none" --steps 5 --resume
exit 0
