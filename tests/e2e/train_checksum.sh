#!/usr/bin/env bash
# train_checksum.sh - checkpoints and models carry a sha256 of their tensors
# and metadata (issue 31: a checkpoint with 2,000 flipped bytes was resumed
# and trained on until it diverged). Flipped bytes in a checkpoint's data or
# header: --resume is refused in one line naming the file, nothing trained;
# the same for a model under eval; files written before the checksum
# (format version 1, no checksum) still resume and evaluate, the resume with
# a note.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
ARGS=(--data "$D" --preset tiny-test --steps 20 --threads 2 --no-eval)
R="$E2E_TMP/run"
"$TEMPO" train "${ARGS[@]}" --out "$R" --stop-at-step 5 >/dev/null 2>&1 || fail "the first run failed"

# flip N bytes of FILE from byte FROM on (FROM = data: the tensors' bytes; header: its JSON)
flip() {
    python3 - "$@" <<'PY'
import random, struct, sys
path, where, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = bytearray(open(path, "rb").read())
hl = struct.unpack("<Q", b[:8])[0]
rng = random.Random(31)
if where == "data":
    for i in rng.sample(range(8 + hl, len(b)), n):
        b[i] ^= rng.randrange(1, 256)
else:   # a digit of a metadata value ("step":"5" -> another step)
    at = b.index(b'"step":"5"', 0, 8 + hl) + len('"step":"')
    b[at] = ord("7")
open(path, "wb").write(bytes(b))
PY
}
# refused CMD...: exit 1, one line on stderr naming the file and the mismatch, no step run
refused() {
    local file=$1; shift
    "$@" >"$E2E_TMP/out" 2>"$E2E_TMP/err"; local rc=$?
    [ $rc -eq 1 ] || fail "exit $rc, not 1: $* -> $(cat "$E2E_TMP/err")"
    [ "$(wc -l < "$E2E_TMP/err")" -eq 1 ] || fail "not one line: $(cat "$E2E_TMP/err")"
    grep -q "^tempo: $file: checksum mismatch" "$E2E_TMP/err" || fail "no checksum mismatch naming $file: $(cat "$E2E_TMP/err")"
}

cp -r "$R" "$E2E_TMP/data"
flip "$E2E_TMP/data/checkpoint.safetensors" data 2000
refused "$E2E_TMP/data/checkpoint.safetensors" "$TEMPO" train "${ARGS[@]}" --out "$E2E_TMP/data" --resume
grep -q '"step":6,' "$E2E_TMP/data/metrics.jsonl" && fail "a refused resume trained"
cp -r "$R" "$E2E_TMP/head"
flip "$E2E_TMP/head/checkpoint.safetensors" header 1
refused "$E2E_TMP/head/checkpoint.safetensors" "$TEMPO" train "${ARGS[@]}" --out "$E2E_TMP/head" --resume
echo "ok: a checkpoint with 2,000 flipped data bytes, or one changed header value, is refused in one line"

# any byte of the header: refused, one line naming the file (a checksum mismatch or a broken header)
cp -r "$R" "$E2E_TMP/any"
python3 - "$R/checkpoint.safetensors" "$E2E_TMP/any" <<'PY' > "$E2E_TMP/positions"
import random, struct, sys
b = open(sys.argv[1], "rb").read()
hl = struct.unpack("<Q", b[:8])[0]
for i in sorted(random.Random(7).sample(range(8, 8 + hl), 24)):
    print(i)
PY
while read -r i; do
    python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[int(sys.argv[2])] ^= 0x20; open(sys.argv[3], "wb").write(b)' \
        "$R/checkpoint.safetensors" "$i" "$E2E_TMP/any/checkpoint.safetensors"
    "$TEMPO" train "${ARGS[@]}" --out "$E2E_TMP/any" --resume >/dev/null 2>"$E2E_TMP/err" && fail "header byte $i flipped: resumed"
    [ "$(wc -l < "$E2E_TMP/err")" -eq 1 ] && grep -q "^tempo: $E2E_TMP/any/checkpoint.safetensors: " "$E2E_TMP/err" \
        || fail "header byte $i flipped: not one line naming the file: $(cat "$E2E_TMP/err")"
done < "$E2E_TMP/positions"
echo "ok: 24 single flipped header bytes are each refused in one line naming the file"

# a model: eval refuses a flipped one
"$TEMPO" train "${ARGS[@]}" --out "$R" --resume >/dev/null 2>&1 || fail "resume of the intact checkpoint failed"
cp "$R/model.safetensors" "$E2E_TMP/model.safetensors"
flip "$E2E_TMP/model.safetensors" data 1
refused "$E2E_TMP/model.safetensors" "$TEMPO" eval --model "$E2E_TMP/model.safetensors" --text "$DATA/tiny/val.txt"
echo "ok: eval refuses a model with one flipped byte"

# written before checksums: format version 1, no checksum -> loads; a resume says it is unchecked
unseal() {
    python3 - "$1" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
m = h["__metadata__"]
del m["checksum"]
m["format"] = m["format"].replace("-2", "-1")
hb = json.dumps(h, separators=(",", ":")).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
}
cp "$R/model.safetensors" "$E2E_TMP/old.safetensors"
"$TEMPO" train "${ARGS[@]}" --out "$E2E_TMP/old" --stop-at-step 5 >/dev/null 2>&1 || fail "run for the old checkpoint failed"
unseal "$E2E_TMP/old/checkpoint.safetensors"
unseal "$E2E_TMP/old.safetensors"
"$TEMPO" train "${ARGS[@]}" --out "$E2E_TMP/old" --resume >/dev/null 2>"$E2E_TMP/err" \
    || fail "an old checkpoint did not resume: $(cat "$E2E_TMP/err")"
grep -q "^tempo: note: $E2E_TMP/old/checkpoint.safetensors carries no checksum" "$E2E_TMP/err" \
    || fail "no note that the old checkpoint was unchecked: $(grep -v step "$E2E_TMP/err")"
cmp "$R/model.safetensors" "$E2E_TMP/old/model.safetensors" || fail "the old checkpoint resumed elsewhere"
"$TEMPO" eval --model "$E2E_TMP/old.safetensors" --text "$DATA/tiny/val.txt" >/dev/null 2>&1 || fail "an old model does not evaluate"
echo "ok: a checkpoint and a model from before the checksum load (the resume with a note)"
exit 0
