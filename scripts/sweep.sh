#!/usr/bin/env bash
# sweep.sh OUT.tsv DATA_DIR LIMIT NAME "SETS" [NAME "SETS"]... - train each named configuration
# (cpu-default plus its --set overrides) under LIMIT (a budget like 2m, or steps:N),
# then append one row per run: name, limit, val bpb, steps, tokens, tokens/s, mfu,
# train seconds, and the machine load seen (1-minute load average before/after).
# Used to choose configs/cpu-default.conf; the figures go to docs/lab-notebook.md.
set -euo pipefail
out=$1 data=$2 limit=$3; shift 3
[ -s "$out" ] || printf 'name\tlimit\tval_bpb\tsteps\ttokens\ttokens_per_s\tmfu\ttrain_s\tload_before\tload_after\tsets\n' > "$out"
while [ $# -ge 2 ]; do
    name=$1 sets=$2; shift 2
    args=()
    for s in $sets; do args+=(--set "$s"); done
    if [[ $limit == steps:* ]]; then lim=(--steps "${limit#steps:}"); else lim=(--budget "$limit"); fi
    load0=$(cut -d' ' -f1 /proc/loadavg)
    run="build/sweep/$name-$limit"
    ${TEMPO:-build/tempo} train --data "$data" --out "$run" "${lim[@]}" --eval-stride 256 --val-limit ${VAL_LIMIT:-200000} "${args[@]}" > /dev/null 2> "$run.log" || { echo "$name failed" >&2; continue; }
    load1=$(cut -d' ' -f1 /proc/loadavg)
    python3 - "$run/result.json" "$name" "$limit" "$load0" "$load1" "$sets" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
name, limit, l0, l1, sets = sys.argv[2:]
print("\t".join(str(x) for x in [name, limit, "%.4f" % r["val_bpb"], r["steps"], r["tokens"],
      "%.0f" % r["tokens_per_second"], "%.3f" % (r["mfu"] or 0), "%.1f" % r["train_seconds"], l0, l1, sets]))
PY
    tail -n 1 "$out"
done
