#!/usr/bin/env bash
# train_precision.sh - bf16_products=auto (the default preset's) on a CPU: it trains in
# bf16 exactly where bf16_products=1 would (the same losses, bit for bit), in fp32
# elsewhere (bit for bit bf16_products=0), says which on stderr and in result.json,
# and is never refused. TEMPO_KERNELS=avx2 stands for a CPU without AVX-512 BF16.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)

# train NAME ARGS... : a short tiny-test run; prints nothing, leaves $E2E_TMP/NAME
train() {
    local name=$1; shift
    "$TEMPO" train --data "$D" --out "$E2E_TMP/$name" --preset tiny-test --steps 6 --threads 1 "$@" \
        > /dev/null 2> "$E2E_TMP/$name.err"
}
losses() { grep -o '"loss":[^,]*' "$E2E_TMP/$1/metrics.jsonl"; }

check_auto() {  # LABEL EXPECTED(bf16|fp32) : auto against the explicit run of EXPECTED (TEMPO_KERNELS as set)
    local label=$1 want=$2
    train "auto-$label" --set bf16_products=auto \
        || { cat "$E2E_TMP/auto-$label.err" >&2; fail "$label: bf16_products=auto was refused"; }
    train "$want-$label" --precision "$want" \
        || { cat "$E2E_TMP/$want-$label.err" >&2; fail "$label: --precision $want failed"; }
    [ "$(json_field "$E2E_TMP/auto-$label/result.json" precision)" = "$want" ] \
        || fail "$label: auto's result.json says $(json_field "$E2E_TMP/auto-$label/result.json" precision), not $want"
    grep -q "^products: $([ "$want" = bf16 ] && echo bf16 || echo fp32)" "$E2E_TMP/auto-$label.err" \
        || fail "$label: auto did not say its products on stderr: $(cat "$E2E_TMP/auto-$label.err")"
    [ "$(losses auto-$label)" = "$(losses $want-$label)" ] || fail "$label: auto's losses differ from $want's"
    [ "$(json_field "$E2E_TMP/auto-$label/result.json" val_bpb)" = \
      "$(json_field "$E2E_TMP/$want-$label/result.json" val_bpb)" ] || fail "$label: auto's val bpb differs from $want's"
    echo "ok: $label: auto trained in $want, the same bits as --precision $want"
}

# a CPU without the bf16 path: auto is fp32, and bf16 itself is refused
TEMPO_KERNELS=avx2 check_auto avx2 fp32
TEMPO_KERNELS=avx2 train refused --precision bf16 && fail "--precision bf16 was taken on the avx2 path"
# this CPU: auto is bf16 where --precision bf16 is taken, --precision auto the same as the key
if train probe --precision bf16; then
    check_auto here bf16
else
    echo "PART SKIPPED: auto in bf16 (this CPU has no AVX-512 BF16)"
    check_auto here fp32
fi
train flag --precision auto || fail "--precision auto failed"
# eval says how it read: the model's products where the CPU has them, fp32 where not
here=$(json_field "$E2E_TMP/auto-here/result.json" precision)
ev() { "$TEMPO" eval --model "$E2E_TMP/$1" --text "$DATA/tiny/val.txt" --threads 1 2>/dev/null | tail -1 |
       python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["precision"])'; }
[ "$(ev auto-here)" = "$here" ] || fail "eval of the auto run read in $(ev auto-here), trained in $here"
[ "$(TEMPO_KERNELS=avx2 ev auto-here)" = fp32 ] || fail "eval on the avx2 path did not say fp32"
[ "$(ev fp32-avx2)" = fp32 ] || fail "eval of an fp32 run did not say fp32"
[ "$(losses flag)" = "$(losses auto-here)" ] || fail "--precision auto differs from --set bf16_products=auto"
# the default preset says auto; tiny-test and the GPU presets say fp32
grep -Eq '^bf16_products *= *auto' configs/cpu-default.conf || fail "cpu-default.conf does not say bf16_products = auto"
for p in tiny-test gpu-small gpu-gpt2s; do
    grep -Eq '^bf16_products *= *false' "configs/$p.conf" || fail "$p.conf does not say bf16_products = false"
done
