#!/usr/bin/env bash
# main_job.sh [BUDGET] - the README's first command: prepare the bundled corpus
# (cached after the first run), train the default preset under BUDGET (default
# 5m); tempo train prints the scorecard itself (val bpb, train seconds, overrun,
# tokens/s, MFU) before its JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-5m}
DATA=${TEMPO_DATA:-$(cd .. && pwd)/shared/data}
VOCAB=${TEMPO_VOCAB:-4096}
RUN=${TEMPO_RUN:-runs/main}
build/tempo prepare --out data/corpus --vocab "$VOCAB" "$DATA"/corpus/train-*.txt.xz --val "$DATA/corpus/val.txt.xz" \
    | tail -n 1 > /dev/null
build/tempo train --data data/corpus --budget "$BUDGET" --out "$RUN"   # its last stderr line is the scorecard
