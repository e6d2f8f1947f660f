#!/usr/bin/env bash
# train_full_disk.sh - a disk that fills up (issue 31):
# - at the end of a run: model.safetensors is written before the final
#   checkpoint, so on a tmpfs with room for the model but not the checkpoint
#   the model is there and evaluates, and the run fails in one line naming
#   the checkpoint, leaving no temporary and no result.json;
# - under metrics.jsonl (/dev/full, and a tmpfs too small for the log): the
#   run stops with one line naming it instead of training on with a log
#   that ends on a torn line.
# The tmpfs parts need root (mount); without it they print PART SKIPPED.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
ARGS=(--data "$D" --preset tiny-test --threads 2 --no-eval --set checkpoint_every=100000 --set eval_every=0)

# metrics.jsonl on a disk with no space left: the first line fails, the run stops
mkdir -p "$E2E_TMP/full"
ln -s /dev/full "$E2E_TMP/full/metrics.jsonl"
expect_error 1 "^tempo: $E2E_TMP/full/metrics.jsonl: write failed: No space left on device$" \
    "$TEMPO" train "${ARGS[@]}" --steps 30 --out "$E2E_TMP/full"
[ ! -e "$E2E_TMP/full/model.safetensors" ] && [ ! -e "$E2E_TMP/full/result.json" ] \
    || fail "a run whose metrics could not be written went on to write its files"
echo "ok: metrics.jsonl on /dev/full stops the run in one line"

# the sizes of a run's files, from one on an ordinary disk
"$TEMPO" train "${ARGS[@]}" --steps 30 --out "$E2E_TMP/ref" >/dev/null 2>&1 || fail "reference run failed"
pages() { echo $(( ($(stat -c %s "$1") + 4095) / 4096 )); }
M=$(pages "$E2E_TMP/ref/model.safetensors")
C=$(pages "$E2E_TMP/ref/checkpoint.safetensors")
S=$(pages "$E2E_TMP/ref/metrics.jsonl")

mnt="$E2E_TMP/disk"
mkdir -p "$mnt"
# room for the log, the step-0 checkpoint and the model with half a checkpoint to spare: the final
# checkpoint's temporary (beside the step-0 one it replaces) does not fit
if ! mount -t tmpfs -o size=$(( (S + 1 + M + C + C / 2) * 4 ))k tmpfs "$mnt" 2>"$E2E_TMP/mount.err"; then
    echo "PART SKIPPED: cannot mount a tmpfs to fill ($(cat "$E2E_TMP/mount.err")): only the /dev/full check ran"
    exit 0
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$E2E_TMP"' EXIT
expect_error 1 "^tempo: $mnt/run/checkpoint.safetensors: write failed: No space left on device$" \
    "$TEMPO" train "${ARGS[@]}" --steps 30 --out "$mnt/run"
[ -s "$mnt/run/model.safetensors" ] || fail "the model was not kept on a disk with room for it"
[ ! -e "$mnt/run/result.json" ] || fail "result.json came out of a run that failed to write its checkpoint"
python3 - "$mnt/run/checkpoint.safetensors" <<'PY' || fail "the checkpoint left is not the step-0 one the final one failed to replace"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
assert json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["step"] == "0"
PY
ls "$mnt/run" | grep -q '\.tmp\.' && fail "a temporary was left: $(ls "$mnt/run")"
"$TEMPO" eval --model "$mnt/run" --text "$DATA/tiny/val.txt" >"$E2E_TMP/eval.json" 2>"$E2E_TMP/eval.err" \
    || fail "the kept model does not evaluate: $(cat "$E2E_TMP/eval.err")"
grep -q '"bpb":[0-9]' "$E2E_TMP/eval.json" || fail "no bpb from the kept model: $(cat "$E2E_TMP/eval.json")"
umount "$mnt"
echo "ok: a disk full at the end keeps model.safetensors (it evaluates) and fails on the checkpoint"

# a log that fills the disk mid-run (two pages beside the step-0 checkpoint): one line naming it,
# and the log ends on a whole line
mount -t tmpfs -o size=$(( (C + 2) * 4 ))k tmpfs "$mnt" || fail "second tmpfs mount failed"
expect_error 1 "^tempo: $mnt/run/metrics.jsonl: write failed: No space left on device$" \
    "$TEMPO" train "${ARGS[@]}" --steps 200 --out "$mnt/run"
[ "$(tail -c 1 "$mnt/run/metrics.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || fail "metrics.jsonl ends on a torn line"
python3 - "$mnt/run/metrics.jsonl" <<'PY' || fail "metrics.jsonl holds a line that is not whole JSON"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1])]
assert steps == list(range(1, len(steps) + 1)) and len(steps) > 5, steps
PY
echo "ok: metrics.jsonl filling a tmpfs stops the run; the log ends on its last whole line"
exit 0
