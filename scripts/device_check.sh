#!/usr/bin/env bash
# device_check.sh [OUT_DIR] - proves tempo's CUDA path on a real NVIDIA GPU
# (the H200 the device tool lends) in one call of a few minutes, and prints a
# short table last. Logs go to OUT_DIR (default device_check_out).
#
# In order:
#   0. the machine: GPU, driver, nvcc, PyTorch, where cuBLASLt is;
#   1. the binary: build/tempo as carried from the project's machines when it
#      runs here (this machine installs nothing and may lack a -dev package),
#      else a build here; and nvcc's sm_90 PTX of the same kernels, where nvcc is;
#   2. the GPU test suite (build/tests/test_cuda_device): every kernel against
#      the CPU's on random inputs with poisoned outputs, one whole training step
#      equal to the CPU's in fp32 mode, 50 steps whose losses track the CPU's;
#      nvcc's PTX is built in the background and, with NVCC_TESTS=1, the
#      suite runs again on it (it passed on 2026-12-04: left out by default);
#   3. a 2-minute run of gpu-small on the GPU (bf16) over DATA (default
#      devdata/corpus1, carried: a prepared slice of the corpus; this machine
#      has no ../shared), then its evaluation of TEXT (default
#      devdata/val_small.txt) on the GPU in fp32 and bf16 and on the CPU, frozen
#      and with the learning reader: fp32 within 1e-5 of the CPU, bf16 within 1e-2;
#      then bench infer of that model on the GPU and on the CPU (prefill, decode);
#   4. bench train --device cuda --vs-torch on gpu-gpt2s (bf16): tempo's step
#      with Muon and with AdamW (PyTorch's optimizer: the like-for-like ratio)
#      against PyTorch eager bf16 on the same shape, batch and GPU, each with a
#      per-kernel profile of one step; and the same step in fp32 mode;
#   5. bench peak --device cuda: the bf16/TF32/fp32 matrix rates and copy bandwidth;
#   6. only when asked (STAGES="6", about 3 minutes: a call of its own): the
#      planner's plan for this chip and budget (DC_PLAN, default 2 minutes on
#      configs/chips/nvidia-h200-measured.conf), the transformer alone, for
#      DATA's size and vocabulary, trained on the GPU (bf16); its val bpb and
#      tokens/s against the plan's prediction and interval.
# Each stage has a time limit; a stage that fails is reported and the rest go on.
# STAGES="2 4" runs only those of stages 2-6 (0 and 1 always run; the default
# is "2 3 4 5"): a short call when little device time is left. DC_TRAIN,
# DC_BENCH, DC_PEAK and DC_PLAN replace the arguments of stage 3's run, stage
# 4's preset, stage 5's sizes and stage 6's plan (their defaults below):
# tests/e2e/device_check_rehearsal.sh runs this script on the CPU emulator
# with tiny ones, so a broken stage fails CI, not a device call.
# scripts/device_prepare.sh builds what a device call carries.
set -u
cd "$(dirname "$0")/.."
out=${1:-device_check_out}
mkdir -p "$out"
start=$SECONDS
declare -a rows
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); printf '%s\n' "${rows[@]}" >"$out/table.txt"; }
stage() { echo; echo "=== $* ($((SECONDS - start)) s)"; }
want() { case " ${STAGES:-2 3 4 5} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
read -ra train_args <<<"${DC_TRAIN:---preset gpu-small --budget 2m}"
read -ra bench_args <<<"${DC_BENCH:---preset gpu-gpt2s --vocab 8192}"
read -ra peak_args <<<"${DC_PEAK:-}"
read -ra plan_args <<<"${DC_PLAN:---budget 2m --chip configs/chips/nvidia-h200-measured.conf}"
bench_name=$(sed -n 's/.*--preset \([^ ]*\).*/\1/p' <<<"${bench_args[*]}")

stage "0. the machine"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv 2>&1
    (command -v nvcc >/dev/null && nvcc --version | tail -2) || echo "nvcc: not found"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())' 2>&1
    uname -r; ldd --version | head -1
} | tee "$out/machine.txt"
row "gpu" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.1[23]' && [ -z "${TEMPO_CUBLASLT:-}" ]; then
    lt=$( (ls /usr/local/cuda*/lib64/libcublasLt.so.1[23] /usr/local/cuda*/targets/*/lib/libcublasLt.so.1[23] 2>/dev/null;
           python3 -c 'import nvidia.cublas, os; d = os.path.join(list(nvidia.cublas.__path__)[0], "lib"); print("\n".join(os.path.join(d, f) for f in os.listdir(d)))' 2>/dev/null |
           grep 'libcublasLt\.so\.1[23]$') | head -1)
    [ -n "$lt" ] && export TEMPO_CUBLASLT=$lt
fi
echo "cuBLASLt: ${TEMPO_CUBLASLT:-by soname}" | tee -a "$out/machine.txt"

stage "1. the binary"
bin=build/tempo
if [ -x "$bin" ] && "$bin" --version >"$out/version.txt" 2>&1; then
    how="carried (built on the project's machine)"
else
    echo "the carried binary does not run here; building" | tee "$out/build.log"
    if timeout 300 make -j16 build/tempo build/tests/test_cuda_device >>"$out/build.log" 2>&1; then
        how="built here"
        "$bin" --version >"$out/version.txt" 2>&1
    else
        how="BUILD FAILED (build.log)"
    fi
fi
cat "$out/version.txt" 2>/dev/null
row "binary" "$how; $(grep '^cuda:' "$out/version.txt" 2>/dev/null | cut -c7-80)"
# nvcc's sm_90 PTX, built in the background while the tests run
nvcc_pids=()
if command -v nvcc >/dev/null; then
    mkdir -p "$out/ptx_sm90"
    for f in src/kernels/cuda/*.cu; do
        b=$(basename "$f" .cu)
        timeout 150 nvcc -arch=sm_90 -ptx -Isrc -x cu "$f" -o "$out/ptx_sm90/$b.ptx" >"$out/nvcc.$b.log" 2>&1 &
        nvcc_pids+=($!)
    done
fi

stage "2. the GPU tests"
verdict() { # rc log: pass, FAIL or SKIPPED, never a skip shown as a pass
    if grep -q '^SKIP' "$2"; then echo "SKIPPED: $(grep -m1 '^SKIP' "$2" | cut -c7-90)"
    elif [ "$1" = 0 ]; then echo pass; else echo "FAIL rc=$1"; fi
}
if ! want 2; then
    row "GPU tests" "not asked (STAGES)"
elif [ -x build/tests/test_cuda_device ]; then
    timeout 240 build/tests/test_cuda_device >"$out/test_cuda_device.log" 2>&1
    rc=$?
    grep -E '^(gpu:|check|SKIP|test_cuda_device)|FAIL' "$out/test_cuda_device.log" | head -150
    fails=$(grep -c 'FAIL' "$out/test_cuda_device.log")
    checks=$(grep -c '^check' "$out/test_cuda_device.log")
    row "GPU tests (clang PTX sm_80)" "$(verdict $rc "$out/test_cuda_device.log") ($checks checks, $fails failed)"
    worst=$(grep '^check' "$out/test_cuda_device.log" | grep -v bitwise | grep 'limit 1e-05' | awk '{for(i=1;i<=NF;i++) if($i=="err") print $(i+1)}' | sort -g | tail -1)
    row "  worst fp32 kernel error" "${worst:-?} (limit 1e-5)"
    st=$(grep 'steps Muon: losses' "$out/test_cuda_device.log" | awk '{for(i=1;i<=NF;i++) if($i=="err") print $(i+1)}')
    row "  50 Muon steps vs CPU" "${st:-?} (max relative loss gap, limit 1e-3)"
    if [ ${#nvcc_pids[@]} -gt 0 ]; then
        ok=1
        for p in "${nvcc_pids[@]}"; do wait "$p" || ok=0; done
        if [ $ok = 1 ] && [ "${NVCC_TESTS:-0}" != 1 ]; then
            row "nvcc sm_90 PTX" "built (NVCC_TESTS=1 runs the suite on it)"
        elif [ $ok = 1 ]; then
            TEMPO_PTX_DIR=$out/ptx_sm90 timeout 150 build/tests/test_cuda_device >"$out/test_cuda_device_nvcc.log" 2>&1
            rc=$?
            row "GPU tests (nvcc PTX sm_90)" "$(verdict $rc "$out/test_cuda_device_nvcc.log") ($(grep -c FAIL "$out/test_cuda_device_nvcc.log") failed)"
        else
            row "nvcc sm_90 PTX" "FAILED (nvcc.*.log)"
        fi
    fi
else
    row "GPU tests" "NOT RUN: build/tests/test_cuda_device missing"
fi

stage "3. a 2-minute GPU run, evaluated on GPU and CPU"
data=${DATA:-devdata/corpus1}
text=${TEXT:-devdata/val_small.txt}
if ! want 3; then
    row "train + eval GPU vs CPU" "not asked (STAGES)"
elif [ -f "$data/train.tok" ] && [ -f "$text" ]; then
    rm -rf "$out/run"
    timeout 260 "$bin" train --device cuda --data "$data" "${train_args[@]}" --out "$out/run" \
        >"$out/train.jsonl" 2>"$out/train.err"
    rc=$?
    tail -3 "$out/train.err"; tail -1 "$out/train.jsonl" | cut -c1-400
    r() { python3 -c "import json;d=json.load(open('$out/run/result.json'));print(d.get('$1'))" 2>/dev/null; }
    row "GPU run ${train_args[*]} (bf16)" "rc $rc: val bpb $(r val_bpb), $(r steps) steps, $(r tokens_per_second) tok/s, MFU $(r mfu)"
    ev() { timeout 150 "$bin" eval --model "$out/run" --text "$text" "$@" 2>>"$out/eval.err" | tail -1 |
           python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["bpb"])' 2>/dev/null; }
    for mode in "--no-adapt" "--adapt-lr 0.1"; do
        c=$(ev $mode); g32=$(ev $mode --device cuda --precision fp32); g16=$(ev $mode --device cuda --precision bf16)
        v=$(python3 -c "
c, a, b = float('$c'), float('$g32'), float('$g16')
ok = abs(a - c) <= 1e-5 * c and abs(b - c) <= 1e-2 * c
print(('pass' if ok else 'FAIL'), 'cpu %.6f gpu-fp32 %.6f (%.1e) gpu-bf16 %.6f (%.1e)' % (c, a, abs(a - c) / c, b, abs(b - c) / c))" 2>&1)
        row "  eval GPU vs CPU ${mode#--}" "$v"
    done
    # decode with a KV cache on the GPU (fp32 engine) against the CPU's, the same model
    timeout 120 "$bin" bench infer --device cuda --model "$out/run" --runs 3 --max-batch 8 >"$out/infer_gpu.jsonl" \
        2>"$out/infer_gpu.err"
    rc=$?
    timeout 120 "$bin" bench infer --model "$out/run" --runs 3 --max-batch 8 >"$out/infer_cpu.jsonl" 2>/dev/null
    s() { python3 -c "import json
d=[json.loads(l) for l in open('$1') if l.startswith('{')][-1]
print(round(d['prefill_tokens_per_s']), round(d['decode_tokens_per_s']), round(d['best_decode_tokens_per_s']))" 2>/dev/null; }
    row "decode GPU (prefill/b1/best tok/s)" "rc $rc: $(s "$out/infer_gpu.jsonl"); CPU: $(s "$out/infer_cpu.jsonl")"
else
    row "train + eval GPU vs CPU" "NOT RUN: no $data/train.tok or $text (carry devdata)"
fi

stage "4. bench train --device cuda"
want 4 && timeout 200 "$bin" bench train --device cuda "${bench_args[@]}" --steps 8 --warmup 2 --vs-torch \
    >"$out/bench_train.jsonl" 2>"$out/bench_train.err"
rc=$?
cat "$out/bench_train.jsonl"; tail -3 "$out/bench_train.err"
want 4 && timeout 120 "$bin" bench train --device cuda "${bench_args[@]}" --steps 8 --warmup 2 --set optimizer=adamw \
    >"$out/bench_train_adamw.jsonl" 2>"$out/bench_train_adamw.err"
rc2=$?
j() { python3 -c "import json,sys
for l in open('$1'):
    try: d=json.loads(l)
    except Exception: continue
    if d.get('bench')=='$2' and '$3' in d: print(d['$3'])" 2>/dev/null | head -1; }
row "$bench_name bf16 tempo tokens/s" "$(j "$out/bench_train.jsonl" train tokens_per_s) (rc $rc; MFU $(j "$out/bench_train.jsonl" train mfu) of $(j "$out/bench_train.jsonl" train peak_tflops) TFLOP/s)"
row "  fwd/bwd/norm/opt ms" "$(j "$out/bench_train.jsonl" train forward_ms)/$(j "$out/bench_train.jsonl" train backward_ms)/$(j "$out/bench_train.jsonl" train norm_ms)/$(j "$out/bench_train.jsonl" train optimizer_ms)"
row "  PyTorch eager bf16 tokens/s" "$(j "$out/bench_train.jsonl" torch_reference_cuda tokens_per_s)"
row "  tempo (Muon) / torch (AdamW)" "$(j "$out/bench_train.jsonl" train_summary tempo_vs_torch)"
ta=$(j "$out/bench_train_adamw.jsonl" train tokens_per_s); tt=$(j "$out/bench_train.jsonl" torch_reference_cuda tokens_per_s)
row "$bench_name bf16 AdamW tokens/s" "$ta (rc $rc2; MFU $(j "$out/bench_train_adamw.jsonl" train mfu)); / torch: $(python3 -c "print(round($ta / $tt, 3))" 2>/dev/null)"
row "  top kernels (ms/step)" "$(python3 -c "import json
for l in open('$out/bench_train_adamw.jsonl'):
    d = json.loads(l)
    if d.get('bench') == 'train': print(', '.join('%s %.1f' % kv for kv in list(d['kernels_ms'].items())[:6]))" 2>/dev/null)"
want 4 && timeout 120 "$bin" bench train --device cuda "${bench_args[@]}" --set batch_size=8 --precision fp32 \
    --steps 4 --warmup 1 >"$out/bench_train_fp32.jsonl" 2>"$out/bench_train_fp32.err"
rc=$?
row "$bench_name fp32 (batch 8) tokens/s" "$(j "$out/bench_train_fp32.jsonl" train tokens_per_s) (rc $rc, MFU $(j "$out/bench_train_fp32.jsonl" train mfu))"

stage "5. bench peak --device cuda"
want 5 && timeout 120 "$bin" bench peak --device cuda "${peak_args[@]}" >"$out/bench_peak.jsonl" 2>"$out/bench_peak.err"
rc=$?
cat "$out/bench_peak.jsonl"
row "GEMM peak TFLOP/s" "$(python3 -c "import json;d=json.loads(open('$out/bench_peak.jsonl').read());print('bf16',d['bf16_tflops'],'tf32',d['tf32_tflops'],'fp32',d['fp32_tflops'])" 2>/dev/null) (rc $rc)"
row "copy bandwidth GB/s" "$(python3 -c "import json;print(json.loads(open('$out/bench_peak.jsonl').read())['copy_gbs'])" 2>/dev/null)"

stage "6. the planner's plan, trained on the GPU"
if ! want 6; then
    row "planned run" "not asked (STAGES=\"6\": about 3 minutes)"
elif [ -f "$data/train.tok" ]; then
    meta() { python3 -c "import json;d=json.load(open('$data/meta.json'));print($1)" 2>/dev/null; }
    timeout 30 "$bin" plan "${plan_args[@]}" --no-memory --corpus-tokens "$(meta "d['train']['tokens']")" \
        --vocab "$(meta "d['total_vocab']")" --out "$out/plan.conf" >"$out/plan.txt" 2>"$out/plan.err"
    rc=$?
    p() { tail -1 "$out/plan.txt" | python3 -c "import json,sys;d=json.loads(sys.stdin.read());print($1)" 2>/dev/null; }
    rm -rf "$out/run6"
    secs=$(p "int(d['budget_seconds'])")
    timeout $((${secs:-0} + 120)) "$bin" train --device cuda --data "$data" --preset "$out/plan.conf" \
        --budget "${secs:-0}s" --out "$out/run6" >"$out/train6.jsonl" 2>"$out/train6.err"
    rc6=$?
    tail -3 "$out/train6.err"
    r6() { python3 -c "import json;d=json.load(open('$out/run6/result.json'));print(d.get('$1'))" 2>/dev/null; }
    row "planned run (plan rc $rc)" "$(p "'d%d x %d, ctx %d, batch %d, %ss' % (d['d_model'], d['n_layers'], d['context'], d['batch_size'], d['budget_seconds'])")"
    row "  predicted val bpb, tok/s" "$(p "'%.4f (%.4f-%.4f), %.0f'% (d['val_bpb_transformer'], d['val_bpb_lo'], d['val_bpb_hi'], d['tokens_per_second'])")"
    row "  measured val bpb, tok/s" "rc $rc6: $(r6 val_bpb), $(r6 tokens_per_second) ($(r6 steps) steps)"
else
    row "planned run" "NOT RUN: no $data/train.tok (carry devdata)"
fi

echo
echo "=== device check table ($((SECONDS - start)) s; logs in $out)"
printf '%s\n' "${rows[@]}" | tee "$out/table.txt"
