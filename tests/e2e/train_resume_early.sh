#!/usr/bin/env bash
# train_resume_early.sh - a run killed before its first periodic checkpoint
# resumes from the start (issue 31: --resume failed with "no checkpoint",
# and a complete memory.bin was built again): a new run writes a checkpoint
# at step 0, before the count memory's build; --resume reuses a memory.bin
# of the same data and settings (the file untouched: same inode and mtime)
# and ends bit-identical to a run never killed, with the build's seconds
# still charged; a memory.bin of other data (DATA_DIR/meta.json differs,
# nothing else) or of another order is built again, not reused.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
ARGS=(--preset tiny-test --set memory_order=5 --set mixer_holdout=4096 --steps 300 --threads 2 --no-eval
      --set checkpoint_every=100000)
"$TEMPO" train --data "$D" "${ARGS[@]}" --out "$E2E_TMP/full" >/dev/null 2>&1 || fail "the uninterrupted run failed"

# kill -9 once memory.bin is complete (it appears by rename), before any periodic checkpoint
K="$E2E_TMP/killed"
caught=0 tries=0
while [ $caught -eq 0 ] && [ $tries -lt 10 ]; do
    tries=$((tries + 1))
    rm -rf "$K"
    "$TEMPO" train --data "$D" "${ARGS[@]}" --out "$K" >/dev/null 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        if [ -e "$K/memory.bin" ]; then
            kill -9 $pid 2>/dev/null
            break
        fi
    done
    wait $pid 2>/dev/null; status=$?
    [ $status -eq 137 ] && [ -e "$K/memory.bin" ] && [ ! -e "$K/model.safetensors" ] && caught=1
done
[ $caught -eq 1 ] || fail "caught no run between its memory.bin and its end in $tries tries"
step=$(python3 - "$K/checkpoint.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
print(json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["step"])
PY
) || fail "the killed run left no readable checkpoint"
[ "$step" = 0 ] || fail "the killed run's checkpoint is at step $step, not 0"
cp -r "$K" "$E2E_TMP/other_data"
cp -r "$K" "$E2E_TMP/other_order"
echo "ok: a run killed after memory.bin, before its first periodic checkpoint, left the step-0 checkpoint"

# --resume: from the start, memory.bin reused untouched, the same weights as the run never killed
before=$(stat -c '%i %y' "$K/memory.bin")
"$TEMPO" train --data "$D" "${ARGS[@]}" --out "$K" --resume >"$E2E_TMP/out" 2>"$E2E_TMP/err" \
    || fail "resume before the first checkpoint failed: $(cat "$E2E_TMP/err")"
grep -q "^count memory: reusing $K/memory.bin (built from this data with these settings" "$E2E_TMP/err" \
    || fail "no word of reusing memory.bin: $(grep -v '^\[' "$E2E_TMP/err")"
grep -q "^count memory: order" "$E2E_TMP/err" && fail "the memory was built again: $(grep -v '^\[' "$E2E_TMP/err")"
grep -q "^count memory: not shared" "$E2E_TMP/err" && fail "a reused memory.bin was reported as not shared: $(grep -v '^\[' "$E2E_TMP/err")"
[ "$(stat -c '%i %y' "$K/memory.bin")" = "$before" ] || fail "memory.bin was rewritten"
[ "$(json_field "$K/result.json" steps)" = 300 ] || fail "the resumed run did not reach step 300"
cmp "$E2E_TMP/full/model.safetensors" "$K/model.safetensors" || fail "the resumed run's weights differ from the run never killed"
python3 - "$K/result.json" <<'PY' || fail "the reused memory's build is not charged to the run"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["memory_seconds"] > 0 and r["phase_seconds"]["memory_build"] == 0, (r["memory_seconds"], r["phase_seconds"])
PY
echo "ok: --resume before the first checkpoint reuses memory.bin untouched and ends bit-identical"

# a memory.bin of other data: the same text and tokenizer, only DATA_DIR/meta.json's content id differs
D2="$E2E_TMP/d2"
cp -r "$D" "$D2"
python3 - "$D2/meta.json" <<'PY' || fail "could not edit the copy's meta.json"
import json, sys
m = json.load(open(sys.argv[1]))
m["content_id"] = "%064x" % (int(m["content_id"], 16) ^ 1)
json.dump(m, open(sys.argv[1], "w"))
PY
"$TEMPO" train --data "$D2" "${ARGS[@]}" --steps 2 --out "$E2E_TMP/on_d2" >/dev/null 2>&1 || fail "the run on the other data failed"
cp "$E2E_TMP/on_d2/memory.bin" "$E2E_TMP/other_data/memory.bin"
before=$(stat -c '%i %y' "$E2E_TMP/other_data/memory.bin")
"$TEMPO" train --data "$D" "${ARGS[@]}" --out "$E2E_TMP/other_data" --resume >/dev/null 2>"$E2E_TMP/err" \
    || fail "resume over another data's memory.bin failed: $(cat "$E2E_TMP/err")"
grep -q "^count memory: $E2E_TMP/other_data/memory.bin was built from other data" "$E2E_TMP/err" \
    || fail "another data's memory.bin: no word of it: $(grep -v '^\[' "$E2E_TMP/err")"
grep -q "^count memory: order 5 over" "$E2E_TMP/err" || fail "another data's memory.bin was not built again"
[ "$(stat -c '%i %y' "$E2E_TMP/other_data/memory.bin")" != "$before" ] || fail "another data's memory.bin is still there"
same_memory "$E2E_TMP/full/memory.bin" "$E2E_TMP/other_data/memory.bin" || fail "the rebuilt memory.bin is not this data's"
# ... and one of another order
"$TEMPO" train --data "$D" "${ARGS[@]}" --set memory_order=4 --steps 2 --out "$E2E_TMP/order4" >/dev/null 2>&1 \
    || fail "the order-4 run failed"
cp "$E2E_TMP/order4/memory.bin" "$E2E_TMP/other_order/memory.bin"
"$TEMPO" train --data "$D" "${ARGS[@]}" --out "$E2E_TMP/other_order" --resume >/dev/null 2>"$E2E_TMP/err" \
    || fail "resume over an order-4 memory.bin failed: $(cat "$E2E_TMP/err")"
grep -q "was of order 4, this run's is 5: building it again" "$E2E_TMP/err" \
    || fail "an order-4 memory.bin: no word of it: $(grep -v '^\[' "$E2E_TMP/err")"
cmp "$E2E_TMP/full/model.safetensors" "$E2E_TMP/other_order/model.safetensors" || fail "after the rebuild the weights differ"
echo "ok: a memory.bin of other data or another order is built again, not reused"

# nothing to resume at all is still an error
expect_error 1 "no checkpoint" "$TEMPO" train --data "$D" "${ARGS[@]}" --out "$E2E_TMP/none" --resume
exit 0
