#!/usr/bin/env bash
# plan_table.sh - the table of docs/optimal_model.md: `tempo plan` for each
# chip and budget below, one markdown row each (the planned shape, its
# predicted throughput, tokens and bpb, and what limits it). Reads only the
# committed chip and scaling files; runs nothing but the planner.
#   scripts/plan_table.sh [TEMPO]      (default build/tempo)
set -euo pipefail
TEMPO=${1:-build/tempo}
rows=(
    "cpu-avx2-2core 2m 1" "cpu-avx2-2core 10m 1" "cpu-avx2-2core 30m 1" "cpu-avx2-2core 4h 1"
    "cpu-avx512-2core 2m 1" "cpu-avx512-2core 10m 1" "cpu-avx512-2core 30m 1" "cpu-avx512-2core 4h 1"
    "cpu-zen4-2core 2m 1" "cpu-zen4-2core 10m 1" "cpu-zen4-2core 30m 1" "cpu-zen4-2core 4h 1"
    "nvidia-h200-measured 30m 1" "nvidia-h200-measured 4h 1" "nvidia-h200-measured 4h 8"
    "aws-trainium2 30m 1" "aws-trainium2 4h 1" "aws-trainium2 4h 16"
)
echo "| chip | budget | chips | d_model | layers | heads | context | batch (tokens) | count memory | vocabulary | lr x | parameters | tokens/s | tokens seen | predicted bpb [~90 %] | transformer alone | limit |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do
    set -- $r
    out=$("$TEMPO" plan --budget "$2" --chip "configs/chips/$1.conf" --ranks "$3" --explain)
    row=$(echo "$out" | grep -E '^# 0 ')
    key() { echo "$out" | grep -E "^$1 = " | head -1 | sed 's/.* = //'; }
    read -r _ _ d l h ctx batch mem vocab lr params tps tokens bpb interval _ <<<"$row"
    talone=$(echo "$out" | grep -o 'transformer alone [0-9.]*' | head -1 | awk '{print $3}')
    limit=$(echo "$out" | grep -E '^limit: ' | sed 's/^limit: //; s/ (.*//')
    if echo "$out" | grep -q 'data-limited'; then limit="$limit; data"; fi
    memtxt=$([ "$mem" = 0 ] && echo none || echo "order $mem")
    echo "| $1 | $2 | $3 | $d | $l | $h | $ctx | $((batch * ctx)) | $memtxt | $vocab | $lr | $params | $tps | $tokens | $bpb [$interval] | $talone | $limit |"
done
