#!/usr/bin/env bash
# train_tiny.sh - the end-to-end proof: prepare the tiny fixture, train for a
# ~30 s budget, and require val bpb far below a uniform byte model (8.0) and
# below 4.0; the budget is respected (overrun within max(1 %, one step));
# eval on a text file works, and a smaller stride never scores worse.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 1024)
RUN="$E2E_TMP/run"
"$TEMPO" train --data "$D" --budget 30s --out "$RUN" --preset tiny-test --set eval_every=10 \
    > "$E2E_TMP/out.json" 2> "$E2E_TMP/err.log" || { cat "$E2E_TMP/err.log"; fail "train failed"; }
tail -n 1 "$E2E_TMP/out.json" | cmp -s - "$RUN/result.json" || fail "stdout last line differs from result.json"
bpb=$(json_field "$RUN/result.json" val_bpb)
train_s=$(json_field "$RUN/result.json" train_seconds)
over=$(json_field "$RUN/result.json" overrun_seconds)
step_s=$(json_field "$RUN/result.json" step_seconds_mean)
echo "tiny: val_bpb=$bpb train_seconds=$train_s overrun=$over step=$step_s"
python3 - "$bpb" "$train_s" "$over" "$step_s" <<'PY' || fail "quality/budget check failed"
import sys
bpb, train_s, over, step = map(float, sys.argv[1:])
assert bpb < 4.0, f"val bpb {bpb} not below 4.0"
assert train_s <= 30 + max(0.3, step) + 1e-9, f"train_seconds {train_s} overran 30 s by more than max(1%, a step)"
assert over <= max(0.3, step) + 1e-9, f"overrun {over}"
assert train_s > 20, f"stopped far too early: {train_s}"
PY
# where the time went: every phase reported, none negative, and they add up to train_seconds
python3 - "$RUN/result.json" <<'PY' || fail "phase_seconds do not account for train_seconds"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["phase_seconds"]
assert set(p) == {"steps", "val_slices", "checkpoints", "snapshots", "memory_build", "mixer_fit", "other"}, p
assert all(v >= 0 for v in p.values()), p
assert abs(sum(p.values()) - r["train_seconds"]) < 1e-6, (sum(p.values()), r["train_seconds"])
assert p["steps"] > 0.5 * r["train_seconds"] and p["val_slices"] > 0, p   # eval_every=10 in 30 s: slices ran
PY
[ -s "$RUN/metrics.jsonl" ] || fail "no metrics.jsonl"
grep -q '"val_bpb_slice"' "$RUN/metrics.jsonl" || fail "no periodic val bpb in metrics"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$RUN/metrics.jsonl" || fail "metrics.jsonl not JSON lines"
# eval on the raw val text equals the prepared val split (same tokenizer, same layout)
"$TEMPO" eval --model "$RUN" --text "$DATA/tiny/val.txt" --stride 32 > "$E2E_TMP/e1.json" || fail "eval --text failed"
"$TEMPO" eval --model "$RUN" --data "$D" --stride 32 > "$E2E_TMP/e2.json" || fail "eval --data failed"
"$TEMPO" eval --model "$RUN" --text "$DATA/tiny/val.txt" --stride 64 > "$E2E_TMP/e3.json" || fail "eval stride 64 failed"
python3 - "$E2E_TMP/e1.json" "$E2E_TMP/e2.json" "$E2E_TMP/e3.json" <<'PY' || fail "eval figures inconsistent"
import json, sys
a, b, c = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:])
assert a["bytes"] == 115485 - 2 * 21, a["bytes"]           # document text bytes, separators excluded
assert abs(a["bpb"] - b["bpb"]) < 1e-9, (a["bpb"], b["bpb"])
# tiny-test has context 64: stride 32 gives every token >= 32 tokens of context, stride 64 (disjoint
# windows) as little as 0, so the smaller stride must score lower (the model uses its context):
assert a["context"] == 64 and a["stride"] == 32 and c["stride"] == 64, (a, c)
assert a["bpb"] < c["bpb"], (a["bpb"], c["bpb"])
print("eval: stride32 %.4f stride64 %.4f" % (a["bpb"], c["bpb"]))
PY
exit 0
