#!/usr/bin/env bash
# train_cuda.sh - `--device cuda` end to end, on the CPU emulator of the GPU
# kernels (TEMPO_GPU_EMULATOR=1: the same kernels and host code as on a GPU,
# the CUDA driver replaced): a run trains and says where (result.json
# "device", "precision"); a checkpoint the GPU path wrote in fp32 evaluates
# on the CPU to the GPU path's bpb (and the reverse: a CPU-trained model on
# the GPU path), the learning reader included; a stopped GPU run resumed
# gives weights bit-identical to an uninterrupted one; bf16 mode learns;
# `bench infer --device cuda` runs prefill and decode there, and the phase-2
# scorecard, icl and greedy generation give there what they give on the CPU;
# and without a driver `--device cuda` is one clear line, exit 1, no run folder.
# The real GPU runs the same path in scripts/device_check.sh.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 256)
head -c 6000 "$DATA/tiny/val.txt" > "$E2E_TMP/small.txt"
COMMON=(--data "$D" --preset tiny-test --steps 12 --seed 5 --no-eval --set checkpoint_every=0.2)
export TEMPO_GPU_EMULATOR=1
"$TEMPO" train "${COMMON[@]}" --device cuda --precision fp32 --out "$E2E_TMP/gpu" >"$E2E_TMP/gpu.json" \
    2>"$E2E_TMP/gpu.log" || { cat "$E2E_TMP/gpu.log"; fail "train --device cuda failed"; }
[ "$(json_field "$E2E_TMP/gpu/result.json" device)" = "CPU emulator" ] || fail "result.json device is not the GPU's"
[ "$(json_field "$E2E_TMP/gpu/result.json" precision)" = fp32 ] || fail "result.json precision"
[ "$(json_field "$E2E_TMP/gpu/result.json" steps)" = 12 ] || fail "did not run 12 steps"
# the GPU-written checkpoint on the CPU and on the GPU path: the same bpb (fp32), frozen and learning reader
for mode in "--no-adapt" "--adapt-lr 0.1"; do
    g=$("$TEMPO" eval --model "$E2E_TMP/gpu" --text "$E2E_TMP/small.txt" $mode --device cuda 2>/dev/null | tail -1)
    c=$(unset TEMPO_GPU_EMULATOR; "$TEMPO" eval --model "$E2E_TMP/gpu" --text "$E2E_TMP/small.txt" $mode 2>/dev/null | tail -1)
    python3 - "$g" "$c" "$mode" <<'PY' || fail "GPU-path and CPU evaluations differ ($mode)"
import json, sys
g, c = json.loads(sys.argv[1])["bpb"], json.loads(sys.argv[2])["bpb"]
assert abs(g - c) <= 1e-5 * c, (sys.argv[3], g, c)
print("eval", sys.argv[3], "gpu path", g, "cpu", c)
PY
done
# the reverse: a model trained on the CPU evaluates the same on the GPU path
(unset TEMPO_GPU_EMULATOR; "$TEMPO" train "${COMMON[@]}" --out "$E2E_TMP/cpu" >/dev/null 2>&1) || fail "cpu train failed"
g=$("$TEMPO" eval --model "$E2E_TMP/cpu" --text "$E2E_TMP/small.txt" --device cuda 2>/dev/null | tail -1)
c=$(unset TEMPO_GPU_EMULATOR; "$TEMPO" eval --model "$E2E_TMP/cpu" --text "$E2E_TMP/small.txt" 2>/dev/null | tail -1)
python3 -c 'import json,sys; g=json.loads(sys.argv[1])["bpb"]; c=json.loads(sys.argv[2])["bpb"]; assert abs(g-c) <= 1e-5*c, (g, c)' \
    "$g" "$c" || fail "a CPU-trained model evaluates differently on the GPU path"
# stopped and resumed on the GPU path: bit-identical weights
"$TEMPO" train "${COMMON[@]}" --device cuda --precision fp32 --out "$E2E_TMP/part" --stop-at-step 5 >/dev/null 2>&1 \
    || fail "partial GPU run failed"
"$TEMPO" train "${COMMON[@]}" --device cuda --precision fp32 --out "$E2E_TMP/part" --resume >/dev/null 2>&1 \
    || fail "GPU resume failed"
cmp "$E2E_TMP/gpu/model.safetensors" "$E2E_TMP/part/model.safetensors" || fail "resumed GPU weights differ"
# bf16 mode learns
"$TEMPO" train --data "$D" --preset tiny-test --steps 20 --no-eval --device cuda --out "$E2E_TMP/bf16" \
    >/dev/null 2>&1 || fail "bf16 GPU run failed"
[ "$(json_field "$E2E_TMP/bf16/result.json" precision)" = bf16 ] || fail "bf16 precision not reported"
python3 - "$E2E_TMP/bf16/metrics.jsonl" <<'PY' || fail "bf16 run did not learn"
import json, sys
l = [r["train_loss"] for r in map(json.loads, open(sys.argv[1])) if "train_loss" in r]
assert len(l) == 20 and sum(l[-4:]) / 4 < l[0] - 0.5, (l[0], l[-4:])
PY
# the GPU benchmark's per-kernel profile feeds the planner's efficiencies (plan --calibrate-gpu)
"$TEMPO" bench train --device cuda --preset tiny-test --vocab 64 --steps 1 --warmup 1 >"$E2E_TMP/b.jsonl" 2>/dev/null \
    || fail "bench train --device cuda failed"
grep -q '"kernels_ms":{"' "$E2E_TMP/b.jsonl" || fail "no per-kernel profile in the GPU bench line"
"$TEMPO" plan --calibrate-gpu "$E2E_TMP/b.jsonl" --chip configs/chips/nvidia-h200.conf --out "$E2E_TMP/eff.conf" \
    2>/dev/null || fail "plan --calibrate-gpu failed"
[ "$(grep -c '^eff\.' "$E2E_TMP/eff.conf")" -ge 10 ] || fail "plan --calibrate-gpu wrote no efficiencies"
# inference on the GPU path (decode with a KV cache): prefill, decode at batch 1 and 2, the bound, the summary
"$TEMPO" bench infer --device cuda --model "$E2E_TMP/gpu" --runs 1 --steps 4 --max-batch 2 --prompt 16 \
    >"$E2E_TMP/i.jsonl" 2>"$E2E_TMP/i.log" || { cat "$E2E_TMP/i.log"; fail "bench infer --device cuda failed"; }
python3 - "$E2E_TMP/i.jsonl" <<'PY' || fail "bench infer --device cuda: missing figures"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
what = [r.get("what") for r in rows]
assert what.count("decode") == 2 and "prefill" in what and "bound" in what and what[-1] == "summary", what
assert all(r["tokens_per_s"] > 0 for r in rows if r.get("what") in ("prefill", "decode")), rows
PY
expect_error 2 "belong to the CPU" "$TEMPO" bench infer --device cuda --model "$E2E_TMP/gpu" --vs-llama-cpp
# the phase-2 scorecard on the GPU path: the same ICL score as on the CPU (its decode through the GPU engine)
g=$("$TEMPO" eval --phase 2 --model "$E2E_TMP/gpu" --tasks "$DATA/icl" --limit 1 --device cuda 2>/dev/null | tail -1)
c=$(unset TEMPO_GPU_EMULATOR; "$TEMPO" eval --phase 2 --model "$E2E_TMP/gpu" --tasks "$DATA/icl" --limit 1 \
    --threads 1 2>/dev/null | tail -1)
python3 -c 'import json,sys; g=json.loads(sys.argv[1]); c=json.loads(sys.argv[2]); assert g["core"] == c["core"] and g["decode_tokens_per_s"] > 0, (g["core"], c["core"])' \
    "$g" "$c" || fail "eval --phase 2 --device cuda: a different ICL score than the CPU's"
# greedy generation and icl on the GPU path: the CPU's text and score
gen() { "$TEMPO" generate --model "$E2E_TMP/gpu" --prompt "The" --tokens 16 --temperature 0 "$@" 2>/dev/null | tail -1 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])'; }
a=$(gen --device cuda); b=$(unset TEMPO_GPU_EMULATOR; gen)
[ -n "$b" ] && [ "$a" = "$b" ] || fail "generate --device cuda: '$a', the CPU: '$b'"
icl() { "$TEMPO" icl --model "$E2E_TMP/gpu" --tasks "$DATA/icl" --limit 2 "$@" 2>/dev/null | tail -1 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["core"])'; }
a=$(icl --device cuda); b=$(unset TEMPO_GPU_EMULATOR; icl)
[ -n "$b" ] && [ "$a" = "$b" ] || fail "icl --device cuda: core '$a', the CPU: '$b'"
echo "generate and icl on the GPU path as on the CPU (core $a)"
echo '{"bench":"train","threads":2}' > "$E2E_TMP/cpu.jsonl"
expect_error 1 "cpu.jsonl: no .tempo bench train --device cuda. line" "$TEMPO" plan --calibrate-gpu "$E2E_TMP/cpu.jsonl" \
    --chip configs/chips/nvidia-h200.conf
# no driver: one line, exit 1, nothing written
unset TEMPO_GPU_EMULATOR
expect_error 1 "cuda: no NVIDIA driver|cuda: .*stub|no GPU" env TEMPO_LIBCUDA=/nonexistent/libcuda.so.1 \
    "$TEMPO" train "${COMMON[@]}" --device cuda --out "$E2E_TMP/nodrv"
[ ! -e "$E2E_TMP/nodrv" ] || fail "a failed --device cuda left a run folder"
expect_error 2 "expected cpu or cuda" "$TEMPO" train "${COMMON[@]}" --device tpu --out "$E2E_TMP/x"
exit 0
