#!/usr/bin/env bash
# export_hf.sh - the Hugging Face folder checked by an independent reader
# (tests/e2e/py/check_hf.py, Python standard library only): config.json, the
# architecture's tensor names and shapes (a table in the checker), every value
# against tempo's weights, and tokenizer.json re-encoding the validation text
# to tempo's ids; for a llama and a qwen3 model, in F32 and F16. Then the
# checker is shown to fail on a folder with one weight changed, and
# tokenizer.json runs in Hugging Face's own tokenizers library (the npm
# package `tokenizers`, fetched once by tools/hf_tokenizers/setup.sh), which
# must encode the val text to exactly tempo's ids too.
source "$(dirname "$0")/train_common.bash"
source "$(dirname "$0")/export_common.bash"
D=$(tiny_data 1024)
for arch in llama qwen3; do
    RUN=$(export_train $arch)
    for dt in f32 f16; do
        O="$E2E_TMP/hf-$arch-$dt"
        "$TEMPO" export --model "$RUN" --format hf --dtype $dt --out "$O/" > "$E2E_TMP/export.json" \
            2>"$E2E_TMP/export.log" || { cat "$E2E_TMP/export.log"; fail "export hf $arch $dt failed"; }
        python3 tests/e2e/py/check_hf.py "$O" "$RUN/model.safetensors" "$DATA/tiny/val.txt" "$D/val.tok" $dt \
            || fail "HF folder $arch $dt does not check"
    done
done
# the checker can fail: one weight of the last tensor changed
O="$E2E_TMP/hf-qwen3-f32"
python3 - "$O/model.safetensors" <<'PY' || fail "cannot damage the copy"
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
b[-2] ^= 0x40
open(p, 'wb').write(b)
PY
if python3 tests/e2e/py/check_hf.py "$O" "$E2E_TMP/run-qwen3/model.safetensors" "$DATA/tiny/val.txt" "$D/val.tok" f32 \
    >/dev/null 2>&1; then fail "the checker accepted a changed weight"; fi
echo "a changed weight is caught"
TK=$(bash tools/hf_tokenizers/setup.sh) || fail "tokenizers setup failed"
node tests/e2e/js/check_tokenizer.js "$TK" "$E2E_TMP/hf-llama-f32/tokenizer.json" "$DATA/tiny/val.txt" "$D/val.tok" \
    || fail "Hugging Face tokenizers encodes the val text differently"
