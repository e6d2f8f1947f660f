#!/usr/bin/env bash
# bench_train.sh - `tempo bench train` and `tempo bench kernels` print well-formed
# JSON lines whose figures are consistent with each other (op shares add up to
# the step, tokens/s = tokens per step / step time), and bad options get one
# clear error line. Speed itself is never checked here.
source "$(dirname "$0")/train_common.bash"
OUT="$E2E_TMP/bench.jsonl"
"$TEMPO" bench train --preset tiny-test --threads 1,2 --steps 2 --vs-torch >"$OUT" 2>"$E2E_TMP/err" \
    || { cat "$E2E_TMP/err" >&2; fail "bench train failed"; }
python3 - "$OUT" <<'PY' || fail "bench train output is wrong: $(cat "$OUT")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
runs = [d for d in lines if d.get("bench") == "train" and not d.get("summary")]
summ = [d for d in lines if d.get("summary")]
assert [d["threads"] for d in runs] == [1, 2], runs
for d in runs:
    assert d["preset"] == "tiny-test" and d["steps"] == 2 and d["tokens_per_s"] > 0
    tokens = d["batch"] * d["context"]
    assert abs(tokens / d["step_s"] - d["tokens_per_s"]) <= 0.01 * d["tokens_per_s"] + 0.1, d
    shares = sum(v["share"] for v in d["ops"].values())
    assert abs(shares - 1) < 0.01, shares
    for op in ("gemm_fwd", "gemm_bwd", "attention_fwd", "head_xent", "optimizer"):
        assert d["ops"][op]["calls_per_step"] >= 1, op
    assert d["peak_rss_mib"] > 0 and d["model_mib"] > 0 and d["minor_faults_per_step"] >= 0
    assert 0 <= d["serial_share"] <= 1 and d["cpu_utilisation"] > 0
assert len(summ) == 1 and set(summ[0]["tokens_per_s"]) == {"1", "2"}
assert "second_thread_speedup" in summ[0], summ
# --vs-torch: a ratio of the two speeds when PyTorch runs here; null only when it is not installed
s = summ[0]
# asked of the interpreter tempo runs the reference with (/usr/bin/python3 where it exists, as
# src/bench/torch_reference.c chooses), not of whichever python3 runs this check
import os, subprocess
py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
have_torch = subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0
if have_torch:
    assert s["torch_tokens_per_s"] > 0 and s["ratio_vs_torch"] > 0, s
    assert abs(s["ratio_vs_torch"] - s["tokens_per_s"]["2"] / s["torch_tokens_per_s"]) <= 0.001 + 0.001 * s["ratio_vs_torch"], s
else:
    assert s["torch_tokens_per_s"] is None and s["ratio_vs_torch"] is None, s
PY
PY3=python3; [ -x /usr/bin/python3 ] && PY3=/usr/bin/python3
grep -q "python3-torch is not installed" "$E2E_TMP/err" || "$PY3" -c 'import torch' 2>/dev/null \
    || fail "bench train --vs-torch without PyTorch says nothing about it: $(cat "$E2E_TMP/err")"
"$TEMPO" bench kernels --kernel gemm --presets tiny-test --threads 1 --seconds 0.01 --no-openblas >"$OUT" 2>/dev/null \
    || fail "bench kernels failed"
python3 - "$OUT" <<'PY' || fail "bench kernels output is wrong: $(head -3 "$OUT")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[-1]["summary"] and len(lines) == lines[-1]["shapes"] + 1
assert all(l["op"].startswith("tiny-test ") and l["gflops"] > 0 for l in lines[:-1])
PY
# at two threads each line also says how the product runs in training (a product a thread)
"$TEMPO" bench kernels --kernel gemm --presets tiny-test --threads 1,2 --seconds 0.01 --no-openblas >"$OUT" 2>/dev/null \
    || fail "bench kernels --threads 1,2 failed"
python3 - "$OUT" <<'PY' || fail "bench kernels' as_trained figures are wrong: $(head -3 "$OUT")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert all(("as_trained" in l) == (l["threads"] == 2) for l in lines[:-1])
for l in lines[:-1]:
    if l["threads"] == 2:
        a = l["as_trained"]
        assert a["gflops"] > 0 and a["split"] in ("a replica's rows a thread", "a product a thread"), a
        M, N, K = map(int, l["shape"].split()[0].split("x"))
        m, n, k = map(int, a["shape"].split()[0].split("x"))
        halved = "fwd" in l["op"] or " dx w" in l["op"] or " dW w" in l["op"]
        assert (m * k * 2 in (M * K, (M + 1) * K, M * (K + 1))) == halved and n == N, (l["op"], l["shape"], a)
s = lines[-1]["threads"]
assert "as_trained" in s["2"] and "as_trained" not in s["1"] and s["2"]["as_trained"]["gflops"] > 0
PY
# --precision: fp32 by default; bf16 where the CPU has AVX-512 BF16 (refused, naming why, where not);
# auto runs everywhere and says which it took
"$TEMPO" bench kernels --kernel gemm --shape 64x64x64 --threads 1 --seconds 0.01 --no-openblas >"$OUT" 2>/dev/null \
    || fail "bench kernels --shape failed"
grep -q '"precision": *"fp32"' "$OUT" || fail "bench kernels' default lines do not say fp32: $(head -1 "$OUT")"
if "$TEMPO" bench kernels --kernel gemm --shape 64x64x64 --threads 1,2 --seconds 0.01 --no-openblas \
    --precision bf16 >"$OUT" 2>"$E2E_TMP/err"; then
    [ "$(grep -c '"precision": *"bf16"' "$OUT")" = 3 ] || fail "bench kernels --precision bf16: $(cat "$OUT")"
    want=bf16
else
    [ $? = 2 ] && grep -q "precision bf16: .*BF16" "$E2E_TMP/err" \
        || fail "bench kernels --precision bf16 without BF16 was not refused clearly: $(cat "$E2E_TMP/err")"
    echo "PART SKIPPED: bench kernels in bf16 (this CPU has no AVX-512 BF16)"
    want=fp32
fi
"$TEMPO" bench kernels --kernel gemm --shape 64x64x64 --threads 1 --seconds 0.01 --no-openblas --precision auto \
    >"$OUT" 2>/dev/null || fail "bench kernels --precision auto failed"
grep -q "\"precision\": *\"$want\"" "$OUT" || fail "bench kernels --precision auto did not take $want: $(head -1 "$OUT")"
expect_error 2 "precision bf16: gemm: bf16 products need AVX-512 BF16" env TEMPO_KERNELS=avx2 "$TEMPO" bench \
    kernels --kernel gemm --shape 64x64x64 --threads 1 --seconds 0.01 --no-openblas --precision bf16
# fewer threads than asked for (OMP_THREAD_LIMIT): an error, not a figure for threads that never ran
expect_error 1 "OpenMP gave 1 of the 2 threads" env OMP_THREAD_LIMIT=1 "$TEMPO" bench kernels --kernel gemm \
    --shape 64x64x64 --threads 2 --seconds 0.01 --no-openblas
"$TEMPO" bench kernels --kernel ops --presets tiny-test --threads 1,2 --seconds 0.01 >"$OUT" 2>/dev/null \
    || fail "bench kernels --kernel ops failed"
python3 - "$OUT" <<'PY' || fail "bench kernels --kernel ops output is wrong: $(head -3 "$OUT")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
kernels = {l["kernel"] for l in lines}
assert {"attention_fwd", "attention_bwd", "rmsnorm_fwd", "head_xent_train", "adamw"} <= kernels, kernels
assert len(lines) == 2 * len(kernels) and all(l["gflops"] > 0 and l["gbps"] > 0 for l in lines)
PY
# ops in bf16 (where the GEMM's bf16 ran above): attention and the head say bf16, the rest fp32
if [ "$want" = bf16 ]; then
    "$TEMPO" bench kernels --kernel ops --presets tiny-test --threads 1 --seconds 0.01 --precision bf16 >"$OUT" \
        2>/dev/null || fail "bench kernels --kernel ops --precision bf16 failed"
    python3 - "$OUT" <<'PY' || fail "bench kernels --kernel ops --precision bf16 is wrong: $(cat "$OUT")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
bf = {l["kernel"] for l in lines if l["precision"] == "bf16"}
assert bf == {"attention_fwd", "attention_bwd", "head_xent_train"}, bf
assert all(l["gflops"] > 0 for l in lines)
PY
fi
grep -q '"precision": *"fp32"' "$OUT" || fail "bench kernels --kernel ops lines do not say their precision"
expect_error 2 "GEMM shape" "$TEMPO" bench kernels --kernel ops --shape 8x8x8
expect_error 2 "^tempo: --kernel nope: expected gemm, ops or all$" "$TEMPO" bench kernels --kernel nope
# --pin-threads binds each thread to its own core (read back from the OS)
"$TEMPO" bench train --preset tiny-test --threads 1 --steps 1 --pin-threads >"$OUT" 2>/dev/null \
    || fail "bench train --pin-threads failed"
python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["pinned"] is True and len(d["thread_cpus"]) == 1 and d["thread_cpus"][0] >= 0, d' "$OUT" \
    || fail "--pin-threads did not pin: $(head -1 "$OUT")"
# the hardware profile MFU reads and writes is TEMPO_HW_PROFILE's when it is set, never the home
# folder's (tests/run_all.sh and train_common.bash give the tests their own, so a peak measured
# under the suite's load never stands for the machine)
mkdir -p "$E2E_TMP/home"
HOME="$E2E_TMP/home" XDG_CACHE_HOME= TEMPO_HW_PROFILE="$E2E_TMP/own.json" "$TEMPO" bench train --preset tiny-test \
    --threads 1 --steps 1 >"$OUT" 2>/dev/null || fail "bench train with TEMPO_HW_PROFILE failed"
[ -s "$E2E_TMP/own.json" ] && [ ! -e "$E2E_TMP/home/.cache/tempo/hardware.json" ] ||
    fail "TEMPO_HW_PROFILE was not the profile written ($(ls -R "$E2E_TMP/home" | tr '\n' ' '))"
python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["mfu"] > 0, d' "$OUT" ||
    fail "bench train gave no MFU from its own profile: $(head -1 "$OUT")"
expect_error 2 "preset nope" "$TEMPO" bench train --preset nope
expect_error 2 "^tempo: --steps: 0 is out of range" "$TEMPO" bench train --steps 0
# numbers beyond their type (issue 9)
expect_error 2 "^tempo: --steps: 99999999999999999999 is out of range" "$TEMPO" bench train --steps 99999999999999999999
expect_error 2 "^tempo: --vocab: 4294967297 is out of range" "$TEMPO" bench train --vocab 4294967297
expect_error 2 "^tempo: --seed: -1 is out of range" "$TEMPO" bench train --seed -1
expect_error 2 "threads '1,4294967297'" "$TEMPO" bench train --threads 1,4294967297
expect_error 2 "threads '99999999999999999999'" "$TEMPO" bench kernels --threads 99999999999999999999
expect_error 2 "^tempo: --vocab: 99999999999999999999 is out of range" "$TEMPO" bench kernels --vocab 99999999999999999999
expect_error 2 "^tempo: --seconds: 1e999 is out of range" "$TEMPO" bench kernels --seconds 1e999
expect_error 2 "^tempo: --seconds: 'nan' is not a number" "$TEMPO" bench peak --seconds nan
expect_error 2 "shape '4294967297x8x8'" "$TEMPO" bench kernels --kernel gemm --shape 4294967297x8x8
expect_error 2 "threads 'x'" "$TEMPO" bench train --threads x
expect_error 2 "unknown option" "$TEMPO" bench train --frobnicate 1
expect_error 2 "preset nope" "$TEMPO" bench kernels --presets nope
echo ok
