#!/usr/bin/env bash
# export_errors.sh - what `tempo export` refuses, each with one "tempo: ..."
# line and exit 1 (2 for bad usage), leaving nothing at the output path: a
# config with no llama.cpp architecture (ReLU^2, a logit soft-cap), a
# truncated checkpoint, NaN weights, an output in a missing folder, an
# existing HF folder.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
tr() {  # NAME SETS... : a 2-step run
    local name=$1; shift
    "$TEMPO" train --data "$D" --out "$E2E_TMP/$name" --preset tiny-test --steps 2 --threads 1 --no-eval "$@" \
        >/dev/null 2>"$E2E_TMP/train.log" || { cat "$E2E_TMP/train.log"; fail "train $name failed"; }
}
tr relu2 --set mlp=relu2
tr capped --set mlp=swiglu --set logit_softcap=30
tr good --set mlp=swiglu
O="$E2E_TMP/out"
ex() { "$TEMPO" export "$@"; }
expect_error 1 "^tempo: export: mlp=relu2 has no llama.cpp architecture; train with --set mlp=swiglu$" \
    ex --model "$E2E_TMP/relu2" --format gguf --out "$O.gguf"
expect_error 1 "^tempo: export: logit_softcap=30 has no llama.cpp architecture \(llama, qwen3\); train with --set logit_softcap=0$" \
    ex --model "$E2E_TMP/capped" --format hf --out "$O.hf"
# a truncated checkpoint
mkdir -p "$E2E_TMP/trunc"
head -c 20000 "$E2E_TMP/good/model.safetensors" > "$E2E_TMP/trunc/model.safetensors"
expect_error 1 "trunc/model.safetensors: truncated" ex --model "$E2E_TMP/trunc" --format gguf --out "$O.gguf"
# NaN weights: the first float of the first tensor's data (resealed: the edit is meant, not damage)
mkdir -p "$E2E_TMP/nan"
python3 - "$E2E_TMP/good/model.safetensors" "$E2E_TMP/nan/model.safetensors" <<'PY' || fail "cannot write the NaN copy"
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack_from('<Q', b, 0)[0]
b[8 + n:8 + n + 4] = struct.pack('<f', float('nan'))
open(sys.argv[2], 'wb').write(b)
PY
expect_error 1 "nan/model.safetensors: checksum mismatch" ex --model "$E2E_TMP/nan" --format gguf --out "$O.gguf"
python3 tests/e2e/py/safetensors_seal.py "$E2E_TMP/nan/model.safetensors" || fail "cannot reseal the NaN copy"
expect_error 1 "nan/model.safetensors: weights hold non-finite values" ex --model "$E2E_TMP/nan" --format gguf --out "$O.gguf"
expect_error 1 "nan/model.safetensors: weights hold non-finite values" ex --model "$E2E_TMP/nan" --format hf --out "$O.hf"
# an output in a missing folder
expect_error 1 "no/such/folder/m.gguf" ex --model "$E2E_TMP/good" --format gguf --out "$E2E_TMP/no/such/folder/m.gguf"
expect_error 1 "no/such/folder/hf" ex --model "$E2E_TMP/good" --format hf --out "$E2E_TMP/no/such/folder/hf"
# an existing HF folder is not overwritten; Q8_0 is GGUF only
mkdir -p "$O.exists"
expect_error 1 "out.exists: already exists" ex --model "$E2E_TMP/good" --format hf --out "$O.exists"
expect_error 2 "q8_0 is for GGUF only" ex --model "$E2E_TMP/good" --format hf --dtype q8_0 --out "$O.hf"
# bad usage
expect_error 2 "^tempo: --format onnx: expected gguf or hf$" ex --model "$E2E_TMP/good" --format onnx --out "$O"
expect_error 2 "^tempo: --dtype bf16: expected f32, f16 or q8_0$" ex --model "$E2E_TMP/good" --format gguf --dtype bf16 --out "$O"
expect_error 2 "are required" ex --model "$E2E_TMP/good" --format gguf
[ ! -e "$O.gguf" ] && [ ! -e "$O.hf" ] && [ ! -e "$E2E_TMP/no" ] || fail "a refused export left output behind"
ls "$E2E_TMP" | grep -q '\.tmp\.' && fail "a temporary was left: $(ls "$E2E_TMP")"
# and the same model exports when nothing is wrong
"$TEMPO" export --model "$E2E_TMP/good" --format gguf --out "$O.gguf" >/dev/null 2>&1 || fail "good export failed"
[ -s "$O.gguf" ] || fail "no GGUF written"
echo "export errors: ok"
# a hybrid run: only its transformer leaves, and the output says so
tr hybrid --set mlp=swiglu --set memory_order=3 --set cache_order=3 --set mixer_holdout=4096
[ -e "$E2E_TMP/hybrid/memory.bin" ] || fail "the hybrid run has no memory.bin"
"$TEMPO" export --model "$E2E_TMP/hybrid" --format gguf --out "$O.hybrid.gguf" > "$E2E_TMP/hy.json" 2> "$E2E_TMP/hy.err" \
    || { cat "$E2E_TMP/hy.err"; fail "export of the hybrid run failed"; }
grep -q '"contents":"transformer","memory_left_out":true' "$E2E_TMP/hy.json" || fail "hybrid export: $(cat "$E2E_TMP/hy.json")"
grep -q "the transformer only: the run's count memory and mixer are not exported" "$E2E_TMP/hy.err" \
    || fail "hybrid export does not say what it left out: $(cat "$E2E_TMP/hy.err")"
grep -q '"memory_left_out":false' < <("$TEMPO" export --model "$E2E_TMP/good" --format gguf --out "$O.g2.gguf" 2>/dev/null) \
    || fail "a plain run reported a memory left out"
# the export records where the model came from: the data's id (meta.json's content_id) and a commit
python3 - "$O.gguf" "$D/meta.json" <<'PY' || fail "provenance missing from the GGUF"
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
def value(key):
    i = b.index(key.encode()) + len(key)
    assert struct.unpack_from('<I', b, i)[0] == 8  # a string
    n = struct.unpack_from('<Q', b, i + 4)[0]
    return b[i + 12:i + 12 + n].decode()
want = 'sha256:' + json.load(open(sys.argv[2]))['content_id']
assert value('tempo.data_id') == want, (value('tempo.data_id'), want)
assert value('tempo.commit'), 'empty commit'  # "unknown" outside a git checkout
assert '"mlp":"swiglu"' in value('tempo.config').replace(' ', ''), value('tempo.config')[:200]
print('provenance: data_id', value('tempo.data_id')[:20] + '...', 'commit', value('tempo.commit'))
PY
