#!/usr/bin/env bash
# scaling_grid.sh - the grid of short transformer-only runs that the planner's
# quality law bpb(N, D) = E + A/N^alpha + B/D^beta is fitted to
# (scripts/fit_scaling.py; docs/planner.md). Each run is `tempo train` of the
# cpu-transformer preset with one (d_model, n_layers, n_heads) and one budget:
# a complete lr schedule per budget, so D is the tokens a full run of that
# length sees. Load on the machine changes D reached, not the law in N and D,
# so the grid may run on a busy machine; tokens/s from it are not a speed figure.
#
# usage: scripts/scaling_grid.sh DATA_DIR OUT_DIR [RUNS]
#   RUNS  space-separated d_model:n_layers:n_heads:LENGTH, LENGTH a step count
#         (`--steps`: D fixed whatever the load; the default, cheapest first)
#         or a budget such as 30s (`--budget`: D is what the machine reached)
# Writes OUT_DIR/d<D>-l<L>-<LENGTH>/result.json per run and appends one line
# per run to OUT_DIR/grid.tsv (a finished run is skipped when re-run).
# Every run trains batch 16 x context 256 = 4,096 tokens per step.
# Val bpb: the first 65,536 val tokens (--val-limit), stride context/2; the
# same for every run, so the law is on that slice, not the official score.
set -eu
TEMPO=${TEMPO:-build/tempo}
data=${1:?usage: scaling_grid.sh DATA_DIR OUT_DIR [RUNS]}
out=${2:?usage: scaling_grid.sh DATA_DIR OUT_DIR [RUNS]}
runs=${3:-"64:2:1:100 64:2:1:300 96:3:3:100 128:4:2:50 64:2:1:900 96:3:3:300 128:4:2:150 192:4:3:50
  192:4:3:150 256:4:4:50 128:4:2:400 96:3:3:900 256:4:4:150 192:4:3:400"}
threads=${THREADS:-2}
mkdir -p "$out"
[ -f "$out/grid.tsv" ] ||
    printf 'length\td_model\tn_layers\tn_heads\tparams\ttokens\tsteps\ttokens_per_s\tval_bpb\tload1\n' >"$out/grid.tsv"
for spec in $runs; do
    IFS=: read -r d l h b <<<"$spec"
    case $b in *s) length=(--budget "$b") ;; *) length=(--steps "$b") ;; esac
    run="$out/d$d-l$l-$b"
    [ -f "$run/result.json" ] && continue
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$TEMPO" train --data "$data" --out "$run" "${length[@]}" --preset cpu-transformer \
        --threads "$threads" --val-limit 65536 \
        --set d_model="$d" --set n_layers="$l" --set n_heads="$h" \
        --set eval_every=0 --set checkpoint_every=0 >"$run.log" 2>&1 ||
        { echo "run $run failed (see $run.log)" >&2; continue; }
    python3 - "$run/result.json" "$b" "$d" "$l" "$h" "$load" >>"$out/grid.tsv" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
b, d, l, h, load = sys.argv[2:]
print("\t".join(map(str, [b, d, l, h, r["params"], r["tokens"], r["steps"],
                      round(r["tokens_per_second"], 1), round(r["val_bpb"], 5), load])))
EOF
    tail -1 "$out/grid.tsv"
done
