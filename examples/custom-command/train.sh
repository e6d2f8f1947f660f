#!/bin/sh
# train.sh - an example of the command form of a submission (docs/submission.md).
# The judge starts it in a fresh copy of this folder with the variables below and
# takes $TEMPO_OUT_DIR/model.safetensors as it is at the deadline; anything
# written later does not count. So this trainer stops a few seconds early.
#   TEMPO_DATA_DIR (train.tok, val.tok = a dev split, tokenizer.tiktoken, text/),
#   TEMPO_OUT_DIR, TEMPO_BUDGET_SECONDS, TEMPO_THREADS, TEMPO_SEED, TEMPO_BIN,
#   TEMPO_STEPS (only when the judge caps steps)
set -eu
budget=$(awk -v b="$TEMPO_BUDGET_SECONDS" 'BEGIN { t = b - (3 + 0.02 * b); if (t < b / 2) t = b / 2; printf "%.3f", t }')
set -- --data "$TEMPO_DATA_DIR" --out "$TEMPO_OUT_DIR" --budget "${budget}s" \
    --preset cpu-default --set d_model=192 --set n_layers=6 --set n_heads=3 \
    --seed "$TEMPO_SEED" --threads "$TEMPO_THREADS" --no-eval
if [ -n "${TEMPO_STEPS:-}" ]; then
    set -- "$@" --steps "$TEMPO_STEPS"
fi
exec "$TEMPO_BIN" train "$@"
