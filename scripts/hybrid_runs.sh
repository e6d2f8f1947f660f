#!/usr/bin/env bash
# hybrid_runs.sh - the runs the planner's hybrid relation is fitted to
# (configs/scaling/hybrid.conf, scripts/fit_scaling.py --frozen-t): `tempo train`
# of a preset (default cpu-default: its count memory, cache, match model, mixer
# and learning reader) for a number of steps each, so that the transformer
# spans a range of quality, then the same run's transformer read frozen and
# alone (`tempo eval --no-memory --no-cache --no-adapt`), written beside its
# result.json as eval-frozen.json: the law's own quantity, which the relation
# maps to the mixture as the run read it. `--steps`: the figures do not depend
# on the machine's load, so the runs may share the machine.
#
# usage: scripts/hybrid_runs.sh DATA_DIR OUT_DIR "STEPS [STEPS...]" [PRESET]
# Writes OUT_DIR/s<STEPS>/ per run (a finished run is skipped when re-run);
# the checkpoint is not kept, memory.bin is the data's store entry (a link).
set -eu
TEMPO=${TEMPO:-build/tempo}
data=${1:?usage: hybrid_runs.sh DATA_DIR OUT_DIR STEPS [PRESET]}
out=${2:?usage: hybrid_runs.sh DATA_DIR OUT_DIR STEPS [PRESET]}
steps=${3:?usage: hybrid_runs.sh DATA_DIR OUT_DIR STEPS [PRESET]}
preset=${4:-cpu-default}
threads=${THREADS:-2}
mkdir -p "$out"
for s in $steps; do
    run="$out/s$s"
    if [ ! -f "$run/result.json" ]; then
        "$TEMPO" train --data "$data" --out "$run" --steps "$s" --preset "$preset" --threads "$threads" \
            --set checkpoint_every=0 >"$run.log" 2>&1 || { echo "run $run failed (see $run.log)" >&2; continue; }
        rm -f "$run/checkpoint.safetensors"
    fi
    if [ ! -f "$run/eval-frozen.json" ]; then
        "$TEMPO" eval --model "$run" --data "$data" --threads "$threads" --no-memory --no-cache --no-adapt \
            2>"$run/eval-frozen.log" | tail -1 >"$run/eval-frozen.json.tmp" &&
            mv "$run/eval-frozen.json.tmp" "$run/eval-frozen.json" ||
            { echo "frozen read of $run failed (see $run/eval-frozen.log)" >&2; continue; }
    fi
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1] + "/result.json")); f = json.load(open(sys.argv[1] + "/eval-frozen.json"))
print("%s: %d steps, val %.4f (linear %.4f), transformer as read %.4f, frozen %.4f" % (
    sys.argv[1], r["steps"], r["val_bpb"], r.get("val_bpb_linear") or 0, r["val_bpb_transformer"], f["bpb"]))
' "$run"
done
