# export_common.bash - shared by the export tests (sourced after
# train_common.bash): two tiny SwiGLU models, one per architecture, trained
# for a few seconds at context 320 so that a sequence of 300 tokens fits.
#   llama: no QK-norm, 4 query heads over 2 key/value heads, untied head
#   qwen3: QK-norm, 4 query heads over 1 key/value head, tied head
export_train() {  # NAME (llama|qwen3) -> prints the run folder
    local name=$1 dir="$E2E_TMP/run-$1" extra
    case $name in
        llama) extra=(--set n_kv_heads=2 --set tied_head=false) ;;
        qwen3) extra=(--set qk_norm=1 --set n_kv_heads=1) ;;
    esac
    "$TEMPO" train --data "$(tiny_data 1024)" --out "$dir" --preset tiny-test --steps 120 --threads 1 \
        --set context=320 --set mlp=swiglu --set n_heads=4 "${extra[@]}" --no-eval \
        >/dev/null 2>"$E2E_TMP/train-$name.log" || { cat "$E2E_TMP/train-$name.log" >&2; fail "train $name failed"; }
    echo "$dir"
}

# val_ids N FILE : the first N token ids of the tiny validation stream (it starts with the separator).
val_ids() {
    python3 - "$(tiny_data 1024)/val.tok" "$1" > "$2" <<'PY' || fail "cannot read val.tok"
import struct, sys
b = open(sys.argv[1], 'rb').read()
n = min(struct.unpack_from('<Q', b, 24)[0], int(sys.argv[2]))
print(' '.join(map(str, struct.unpack_from('<%dH' % n, b, 64))))
PY
}

# max_abs_diff A B : the largest |a - b| over two files of one number per line (same count required).
max_abs_diff() {
    python3 - "$1" "$2" <<'PY'
import sys
a = [float(x) for x in open(sys.argv[1])]
b = [float(x) for x in open(sys.argv[2])]
assert len(a) == len(b) and a, (len(a), len(b))
print('%.3g' % max(abs(x - y) for x, y in zip(a, b)))
PY
}
