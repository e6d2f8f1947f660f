#!/usr/bin/env bash
# export_roundtrip.sh - export, import, same answers: for a llama and a qwen3
# model, `tempo eval` of the exported F32 GGUF gives exactly the run folder's
# bpb (F16: within 1e-3 relative), greedy `generate` the same text, `icl` the
# same accuracies, and `bench infer` runs on it; then `bench infer
# --vs-llama-cpp` prints both engines and the ratios, and a damaged GGUF
# (truncated, another architecture) is one line, exit 1.
source "$(dirname "$0")/train_common.bash"
source "$(dirname "$0")/export_common.bash"
D=$(tiny_data 1024)
last() { tail -n 1 "$1"; }
for arch in llama qwen3; do
    RUN=$(export_train $arch)
    for dt in f32 f16; do
        "$TEMPO" export --model "$RUN" --format gguf --dtype $dt --out "$E2E_TMP/$arch.$dt.gguf" >/dev/null 2>&1 \
            || fail "export $arch $dt failed"
    done
    G="$E2E_TMP/$arch.f32.gguf"
    "$TEMPO" eval --model "$RUN" --data "$D" --stride 160 > "$E2E_TMP/e.run" 2>/dev/null || fail "eval of the run failed"
    "$TEMPO" eval --model "$G" --data "$D" --stride 160 > "$E2E_TMP/e.f32" 2>/dev/null || fail "eval of the GGUF failed"
    "$TEMPO" eval --model "$E2E_TMP/$arch.f16.gguf" --data "$D" --stride 160 > "$E2E_TMP/e.f16" 2>/dev/null \
        || fail "eval of the F16 GGUF failed"
    python3 - "$E2E_TMP/e.run" "$E2E_TMP/e.f32" "$E2E_TMP/e.f16" "$arch" <<'PY' || fail "$arch: bpb differs after the round trip"
import json, sys
a, b, c = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:4])
print('%s round trip: bpb run %.12f, F32 GGUF %.12f, F16 GGUF %.12f' % (sys.argv[4], a['bpb'], b['bpb'], c['bpb']))
assert a['bpb'] == b['bpb'], (a['bpb'], b['bpb'])
assert abs(a['bpb'] - c['bpb']) <= 1e-3 * a['bpb'], (a['bpb'], c['bpb'])
assert a['tokens'] == b['tokens'] and a['bytes'] == b['bytes']
PY
    for m in "$RUN" "$G"; do
        "$TEMPO" generate --model "$m" --prompt "The old man" --tokens 40 --temperature 0 --no-stop \
            > "$E2E_TMP/gen.$(basename "$m")" 2>/dev/null || fail "generate on $m failed"
    done
    python3 - "$E2E_TMP/gen.$(basename "$RUN")" "$E2E_TMP/gen.$(basename "$G")" <<'PY' || fail "$arch: greedy text differs"
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
assert a['text'] == b['text'] and a['new_tokens'] == b['new_tokens'] == 40, (a['text'], b['text'])
PY
    for m in "$RUN" "$G"; do
        "$TEMPO" icl --model "$m" --tasks "$DATA/icl" --task copa --limit 20 > "$E2E_TMP/icl.$(basename "$m")" 2>/dev/null \
            || fail "icl on $m failed"
    done
    python3 - "$E2E_TMP/icl.$(basename "$RUN")" "$E2E_TMP/icl.$(basename "$G")" <<'PY' || fail "$arch: icl differs"
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
keys = ('label', 'accuracy', 'correct', 'evaluated', 'tokens')
assert a['core'] == b['core'] and [[t[k] for k in keys] for t in a['tasks']] == [[t[k] for k in keys] for t in b['tasks']], (a, b)
PY
    "$TEMPO" bench infer --model "$G" --threads 1 --runs 1 --max-batch 1 --steps 4 --prompt 32 > "$E2E_TMP/b" 2>/dev/null \
        || fail "bench infer on the GGUF failed"
    grep -q '"what":"summary"' "$E2E_TMP/b" || fail "no bench summary"
done
# tempo and llama.cpp side by side
"$TEMPO" bench infer --model "$E2E_TMP/run-llama" --threads 1 --runs 2 --max-batch 1 --steps 8 --prompt 64 \
    --vs-llama-cpp > "$E2E_TMP/vs" 2>"$E2E_TMP/vs.log" || { cat "$E2E_TMP/vs.log"; fail "bench infer --vs-llama-cpp failed"; }
python3 - "$E2E_TMP/vs" <<'PY' || fail "no vs_llama_cpp figures"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
vs = [l for l in lines if l.get('what') == 'vs_llama_cpp']
assert len(vs) == 1 and vs[0]['threads'] == 1 and vs[0]['prompt_tokens'] == 64, vs
for k in ('tempo_prefill_tokens_per_s', 'llama_cpp_prefill_tokens_per_s', 'tempo_decode_tokens_per_s',
          'llama_cpp_decode_tokens_per_s', 'prefill_ratio', 'decode_ratio'):
    assert vs[0][k] > 0, k
assert lines[-1]['what'] == 'summary' and lines[-1]['vs_llama_cpp']['decode_ratio'] == vs[0]['decode_ratio']
print('vs llama.cpp (tiny model, 1 thread): prefill x%.2f, decode x%.2f' % (vs[0]['prefill_ratio'], vs[0]['decode_ratio']))
PY
# damaged GGUFs: one line, exit 1
G="$E2E_TMP/llama.f32.gguf"
head -c $(( $(stat -c %s "$G") - 1000 )) "$G" > "$E2E_TMP/cut.gguf"
expect_error 1 "cut.gguf: truncated \(tensor output.weight ends at byte" "$TEMPO" eval --model "$E2E_TMP/cut.gguf" --data "$D"
python3 - "$G" "$E2E_TMP/gemma.gguf" <<'PY' || fail "cannot write the renamed copy"
import sys
b = open(sys.argv[1], 'rb').read()
i = b.index(b'general.architecture') + len('general.architecture') + 12
assert b[i:i + 5] == b'llama'
open(sys.argv[2], 'wb').write(b[:i] + b'gemma' + b[i + 5:])
PY
expect_error 1 "gemma.gguf: architecture 'gemma' is not one tempo reads \(llama, qwen3\)" \
    "$TEMPO" generate --model "$E2E_TMP/gemma.gguf" --prompt x
echo "round trip: ok"
