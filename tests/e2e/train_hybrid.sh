#!/usr/bin/env bash
# train_hybrid.sh - the hybrid model end to end on the tiny fixture: train
# with a count memory, a cache, training inside the mixture and a
# transformer that learns as it reads (adapt_lr); the run
# folder holds memory.bin and mixer.json; result.json reports the parts;
# tempo eval of the folder gives the trainer's val bpb again, and with
# --no-memory --no-cache the transformer's alone; icl and generate use the
# mixture; a stopped run resumes from its memory.bin bit-identically; a
# memory with a hashed top order is built, saved and read back; a run whose
# memory.bin cannot be written stops at once; bad memory files and orders
# are one-line errors.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
HYB=(--set memory_order=4 --set cache_order=3 --set match_length=4 --set mixer_holdout=4096 --set memory_train_weight=0.5
     --set adapt_lr=0.2)
COMMON=(--data "$D" --preset tiny-test --steps 30 --threads 2 --seed 5 "${HYB[@]}")
R="$E2E_TMP/run"
"$TEMPO" train "${COMMON[@]}" --out "$R" > "$E2E_TMP/train.out" 2> "$E2E_TMP/train.err" \
    || { cat "$E2E_TMP/train.err" >&2; fail "hybrid training failed"; }
for f in model.safetensors memory.bin mixer.json result.json; do [ -s "$R/$f" ] || fail "no $f in the run folder"; done
python3 - "$R/result.json" <<'PY' || fail "result.json lacks the hybrid model's figures"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert r["memory_order"] == 4 and r["cache_order"] == 3 and r["match_length"] == 4, r
assert r["adapt_lr"] == 0.2, r
assert r["memory_seconds"] > 0 and r["mixer_seconds"] > 0 and r["memory_bytes"] > 0 and r["memory_entries"] > 0
assert r["memory_tokens"] > 0
for k in ("transformer", "memory", "cache", "match"):
    assert math.isfinite(r["val_bpb_" + k]) and 0 < r["val_weight_" + k] < 1, k
# the mixture beats every component alone on the tiny val text
assert r["val_bpb"] < min(r["val_bpb_" + k] for k in ("transformer", "memory", "cache", "match")), r
PY
# tempo eval of the folder: the same mixture, the same figure
"$TEMPO" eval --model "$R" --data "$D" --batch 8 > "$E2E_TMP/eval.json" 2>/dev/null || fail "eval of the hybrid run failed"
python3 - "$R/result.json" "$E2E_TMP/eval.json" <<'PY' || fail "eval does not reproduce the trainer's val bpb"
import json, sys
r, e = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert e["mixer"] == "fitted" and e["memory_order"] == 4 and e["cache_order"] == 3 and e["match_length"] == 4, e
assert abs(e["bpb"] - r["val_bpb"]) <= 1e-6 * r["val_bpb"], (e["bpb"], r["val_bpb"])
for k in ("transformer", "memory", "cache", "match"):
    assert abs(e["components"][k]["bpb"] - r["val_bpb_" + k]) <= 1e-6 * r["val_bpb_" + k], k
PY
"$TEMPO" eval --model "$R" --data "$D" --batch 8 --no-memory --no-cache > "$E2E_TMP/plain.json" 2>/dev/null \
    || fail "eval --no-memory --no-cache failed"
python3 - "$R/result.json" "$E2E_TMP/plain.json" <<'PY' || fail "--no-memory --no-cache is not the transformer alone"
import json, sys
r, e = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert e["memory_order"] == 0 and e["cache_order"] == 0 and e["match_length"] == 0
assert abs(e["bpb"] - r["val_bpb_transformer"]) <= 1e-6 * r["val_bpb_transformer"], (e["bpb"], r["val_bpb_transformer"])
PY
# the transformer read frozen (--adapt-lr 0, and --no-adapt, which freezes everything) scores otherwise
"$TEMPO" eval --model "$R" --data "$D" --batch 8 --no-memory --no-cache --adapt-lr 0 > "$E2E_TMP/frozen.json" \
    2>/dev/null || fail "eval --adapt-lr 0 failed"
"$TEMPO" eval --model "$R" --data "$D" --batch 8 --no-adapt > "$E2E_TMP/noadapt.json" 2>/dev/null \
    || fail "eval --no-adapt failed"
python3 - "$E2E_TMP/plain.json" "$E2E_TMP/frozen.json" "$E2E_TMP/noadapt.json" <<'PY' || fail "--adapt-lr 0 / --no-adapt did not read frozen"
import json, sys
p, f, n = (json.loads(open(a).read().strip().splitlines()[-1]) for a in sys.argv[1:4])
assert p["adapt_lr"] == 0.2 and f["adapt_lr"] == 0 and n["adapt_lr"] == 0 and not n["adapt"], (p, f, n)
assert f["bpb"] != p["bpb"], (f["bpb"], p["bpb"])
assert n["components"]["transformer"]["bpb"] == f["bpb"], (n["components"]["transformer"]["bpb"], f["bpb"])
PY
# components that need no training can be asked for at evaluation: a cache and a match model of other sizes
"$TEMPO" eval --model "$R" --data "$D" --batch 8 --cache-order 5 --match-length 6 > "$E2E_TMP/other.json" 2>/dev/null \
    || fail "eval --cache-order --match-length failed"
tail -n 1 "$E2E_TMP/other.json" | grep -q '"cache_order":5,"match_length":6,"adapt":true,"adapt_lr":0.2,"mixer":"equal"' \
    || fail "eval did not use the asked-for cache and match model with equal starting weights"
"$TEMPO" generate --model "$R" --prompt "The " --tokens 20 --seed 2 > "$E2E_TMP/gen.out" 2>/dev/null || fail "generate failed"
tail -n 1 "$E2E_TMP/gen.out" | grep -q '"memory_order":4,"cache_order":3' || fail "generate did not use the mixture"
"$TEMPO" icl --model "$R" --tasks "$DATA/icl" --task piqa --limit 5 > "$E2E_TMP/icl.out" 2>/dev/null || fail "icl failed"
tail -n 1 "$E2E_TMP/icl.out" | grep -q '"memory_order":4,"cache_order":3' || fail "icl did not use the mixture"
# resume: a stopped hybrid run continues from its memory.bin to the uninterrupted run's weights
P="$E2E_TMP/part"
"$TEMPO" train "${COMMON[@]}" --out "$P" --stop-at-step 11 > /dev/null 2>&1 || fail "partial hybrid run failed"
[ -s "$P/memory.bin" ] || fail "the stopped run left no memory.bin"
"$TEMPO" train "${COMMON[@]}" --out "$P" --resume > /dev/null 2>&1 || fail "hybrid resume failed"
cmp "$R/model.safetensors" "$P/model.safetensors" || fail "resumed hybrid weights differ from the uninterrupted run"
same_memory "$R/memory.bin" "$P/memory.bin" || fail "the memory of the same data and threads differs"
# bad input
expect_error 2 "memory_order" "$TEMPO" train --data "$D" --preset tiny-test --steps 2 --out "$E2E_TMP/x" --set memory_order=9
D1K=$(tiny_data 1024)   # 1,024 ids: exact keys up to order 6, a built memory up to 7
expect_error 2 "memory_order 8 is outside 1..7" "$TEMPO" train --data "$D1K" --preset tiny-test --steps 2 --out "$E2E_TMP/x" \
    --set memory_order=8
# a hashed top order (512 ids: exact keys up to order 7): built, saved as version 4 (2 with the data id), read back by eval to the same figure
H="$E2E_TMP/hashed"
"$TEMPO" train --data "$D" --preset tiny-test --steps 3 --threads 2 --seed 5 --set memory_order=8 --set cache_order=3 \
    --set mixer_holdout=4096 --out "$H" > /dev/null 2> "$E2E_TMP/hashed.err" || { cat "$E2E_TMP/hashed.err" >&2; fail "order-8 training failed"; }
[ "$(od -An -tu4 -j8 -N4 "$H/memory.bin" | tr -d ' ')" = 4 ] || fail "an order-8 memory of 512 ids is not saved as version 4 (hashed)"
"$TEMPO" eval --model "$H" --data "$D" --batch 8 > "$E2E_TMP/hashed.json" 2>/dev/null || fail "eval of the order-8 run failed"
python3 - "$H/result.json" "$E2E_TMP/hashed.json" <<'PY' || fail "eval does not reproduce the order-8 run's val bpb"
import json, sys
r, e = json.load(open(sys.argv[1])), json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert r["memory_order"] == 8 and e["memory_order"] == 8, (r["memory_order"], e["memory_order"])
assert abs(e["bpb"] - r["val_bpb"]) <= 1e-6 * r["val_bpb"], (e["bpb"], r["val_bpb"])
PY
# memory.bin cannot be written (a directory in its place, as a full disk would fail it): the run stops
# with that error at the step after the background save fails, not at the end of its 3,000 steps
F="$E2E_TMP/unwritable"
mkdir -p "$F/memory.bin/x"
expect_error 1 "$F/memory.bin" "$TEMPO" train --data "$D" --preset tiny-test --steps 3000 --threads 2 --set memory_order=3 \
    --set mixer_holdout=4096 --out "$F"
[ ! -e "$F/result.json" ] && [ ! -e "$F/model.safetensors" ] || fail "a run whose memory.bin failed left a result"
python3 - "$F/metrics.jsonl" <<'PY' || fail "the run went on training after memory.bin failed"
import json, sys
steps = [json.loads(l).get("step", 0) for l in open(sys.argv[1])]
assert max(steps) < 3000, max(steps)
PY
B="$E2E_TMP/bad"
mkdir -p "$B"
cp "$R/model.safetensors" "$R/mixer.json" "$B/"
expect_error 1 "$B/memory.bin: missing" "$TEMPO" eval --model "$B" --data "$D"
head -c 5000 "$R/memory.bin" > "$B/memory.bin"
expect_error 1 "$B/memory.bin: (truncated|corrupt)" "$TEMPO" eval --model "$B" --data "$D"
cp "$R/memory.bin" "$B/memory.bin"
printf '\x55' | dd of="$B/memory.bin" bs=1 seek=9000 conv=notrunc 2>/dev/null
expect_error 1 "$B/memory.bin: corrupt" "$TEMPO" eval --model "$B" --data "$D"
echo '{"format":"tempo-mixer"}' > "$B/mixer.json"
cp "$R/memory.bin" "$B/memory.bin"
expect_error 1 "$B/mixer.json" "$TEMPO" eval --model "$B" --data "$D"
echo "ok"
