#!/usr/bin/env bash
# main_job.sh [BUDGET] - the README's first command: prepare the bundled corpus
# (cached after the first run), train the default preset under BUDGET (default
# 5m), and print the scorecard (val bpb, train seconds, overrun, tokens/s, MFU).
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=${1:-5m}
DATA=${TEMPO_DATA:-$(cd .. && pwd)/shared/data}
VOCAB=${TEMPO_VOCAB:-4096}
RUN=${TEMPO_RUN:-runs/main}
build/tempo prepare --out data/corpus --vocab "$VOCAB" "$DATA"/corpus/train-*.txt.xz --val "$DATA/corpus/val.txt.xz" \
    | tail -n 1 > /dev/null
build/tempo train --data data/corpus --budget "$BUDGET" --out "$RUN"
python3 - "$RUN/result.json" <<'PY' 2>/dev/null || true
import json, sys
r = json.load(open(sys.argv[1]))
print("\nscorecard: val_bpb %.4f | train %.1fs of %.0fs budget (overrun %.2fs) | %d steps | %.0f tokens/s | MFU %s"
      % (r["val_bpb"], r["train_seconds"], r["budget_seconds"], r["overrun_seconds"], r["steps"],
         r["tokens_per_second"], "%.1f%%" % (100 * r["mfu"]) if r.get("mfu") is not None else "n/a"))
PY
