#!/usr/bin/env bash
# device_check_rehearsal.sh - scripts/device_check.sh run whole on the CPU
# emulator of the GPU (TEMPO_GPU_EMULATOR=1) with tiny stages: a 3-second
# tiny-test run on the tiny fixture, the benchmarks on tiny-test, a 64-wide
# peak, the planner's 8-second plan for a CPU chip (stage 6, asked for). A GPU is lent to a session rarely and for minutes, so the check must
# work on its first call there: every row of its table must hold what the
# stage measured (a renamed flag or JSON field, a stage that fails, shows
# here as an empty, "None" or non-zero-rc row). The GPU tests themselves
# need a real GPU: their row must say SKIPPED here, never pass.
source "$(dirname "$0")/train_common.bash"
[ -x build/tests/test_cuda_device ] || fail "build/tests/test_cuda_device is not built"
head -c 2000 "$DATA/tiny/val.txt" >"$E2E_TMP/val2k.txt"
head -c 1500 "$DATA/tiny/val.txt" >"$E2E_TMP/val_small.txt"
"$TEMPO" prepare --out "$E2E_TMP/corpus1" --vocab 256 "$DATA/tiny/train.txt" --val "$E2E_TMP/val2k.txt" \
    >/dev/null 2>"$E2E_TMP/prepare.log" || { cat "$E2E_TMP/prepare.log"; fail "prepare failed"; }
TEMPO_GPU_EMULATOR=1 DATA="$E2E_TMP/corpus1" TEXT="$E2E_TMP/val_small.txt" \
    DC_TRAIN="--preset tiny-test --budget 3s" DC_BENCH="--preset tiny-test --vocab 256" \
    DC_PEAK="--n 64 --copy-mb 1 --reps 1" DC_PLAN="--budget 8s --chip configs/chips/cpu-avx2-2core.conf" \
    STAGES="2 3 4 5 6" \
    bash scripts/device_check.sh "$E2E_TMP/dc" >"$E2E_TMP/dc.log" 2>&1 ||
    { tail -30 "$E2E_TMP/dc.log"; fail "device_check.sh exited non-zero"; }
cat "$E2E_TMP/dc/table.txt"
python3 - "$E2E_TMP/dc/table.txt" <<'PY' || fail "a row of the device check's table is not what its stage should give"
import re, sys
rows = open(sys.argv[1]).read().splitlines()
def row(prefix):
    hits = [r for r in rows if r.startswith(prefix)]
    assert len(hits) == 1, "%d rows start with %r" % (len(hits), prefix)
    return hits[0][len(prefix):].strip()
N = r"[0-9][0-9.e+-]*"
want = [
    ("binary", r"carried \(built on the project's machine\); PTX sm_80"),
    ("GPU tests (clang PTX sm_80)", r"SKIPPED: no usable GPU"),   # no GPU here: a skip, never a pass
    ("GPU run --preset tiny-test --budget 3s (bf16)", r"rc 0: val bpb %s, %s steps, %s tok/s, MFU %s$" % (N, N, N, N)),
    ("  eval GPU vs CPU no-adapt", r"pass cpu %s gpu-fp32 %s \(%s\) gpu-bf16 %s \(%s\)$" % (N, N, N, N, N)),
    ("  eval GPU vs CPU adapt-lr 0.1", r"pass cpu %s gpu-fp32 %s \(%s\) gpu-bf16 %s \(%s\)$" % (N, N, N, N, N)),
    ("decode GPU (prefill/b1/best tok/s)", r"rc 0: %s %s %s; CPU: %s %s %s$" % (N, N, N, N, N, N)),
    ("tiny-test bf16 tempo tokens/s", r"%s \(rc 0; MFU %s of %s TFLOP/s\)$" % (N, N, N)),
    ("  fwd/bwd/norm/opt ms", r"%s/%s/%s/%s$" % (N, N, N, N)),
    ("tiny-test bf16 AdamW tokens/s", r"%s \(rc 0; MFU %s\)" % (N, N)),
    ("  top kernels (ms/step)", r"\w+ %s(, \w+ %s)+$" % (N, N)),
    ("tiny-test fp32 (batch 8) tokens/s", r"%s \(rc 0, MFU %s\)$" % (N, N)),
    ("GEMM peak TFLOP/s", r"bf16 %s tf32 %s fp32 %s \(rc 0\)$" % (N, N, N)),
    ("copy bandwidth GB/s", r"%s$" % N),
    ("planned run (plan rc 0)", r"d%s x %s, ctx %s, batch %s, 8s$" % (N, N, N, N)),
    ("  predicted val bpb, tok/s", r"%s \(%s-%s\), %s$" % (N, N, N, N)),
    ("  measured val bpb, tok/s", r"rc 0: %s, %s \(%s steps\)$" % (N, N, N)),
]
bad = [(p, row(p)) for p, rx in want if not re.match(rx, row(p))]
nv = [r for r in rows if r.startswith("nvcc sm_90 PTX")]   # only where nvcc is installed
bad += [(r, "") for r in nv if "FAILED" in r]
for p, v in bad:
    print("row %r: %r" % (p, v))
sys.exit(1 if bad else 0)
PY
echo "device_check.sh rehearsal: every stage's row filled on the emulator"
