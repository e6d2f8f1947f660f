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
#   RUNS  space-separated d_model:n_layers:n_heads:LENGTH[:LR_MULT], LENGTH a step count
#         (`--steps`: D fixed whatever the load; the default, cheapest first)
#         or a budget such as 30s (`--budget`: D is what the machine reached);
#         LR_MULT (default 1) scales every learning rate of the preset (lr_muon,
#         lr, lr_embed, lr_scalar): the optimizer term of the law
# The vocabulary is DATA_DIR's (prepare --vocab): a data folder per vocabulary
# gives the law's vocabulary term. The grid.tsv line records vocab, lr_mult
# and the data's bytes per training token.
# GRID_SET (optional): more settings for every run, "KEY=VALUE KEY=VALUE" (e.g.
# "mlp=swiglu qk_norm=true": the family term's runs, grid-family.tsv); the runs'
# folders then start with GRID_TAG (default "set-").
# Writes OUT_DIR/d<D>-l<L>-<LENGTH>/result.json per run and appends one line
# per run to OUT_DIR/grid.tsv (a finished run is skipped when re-run).
# Every run trains batch 16 x context 256 = 4,096 tokens per step.
# Val bpb: the first 65,536 val tokens (--val-limit), stride context/2; the
# same for every run, so the law is on that slice, not the official score.
# At another vocabulary the slice is scaled by the val bytes per token against
# vocab 4097's 3.2467, so that it covers about the same text.
set -eu
TEMPO=${TEMPO:-build/tempo}
data=${1:?usage: scaling_grid.sh DATA_DIR OUT_DIR [RUNS]}
out=${2:?usage: scaling_grid.sh DATA_DIR OUT_DIR [RUNS]}
runs=${3:-"64:2:1:100 64:2:1:300 96:3:3:100 128:4:2:50 64:2:1:900 96:3:3:300 128:4:2:150 192:4:3:50
  192:4:3:150 256:4:4:50 128:4:2:400 96:3:3:900 256:4:4:150 192:4:3:400"}
threads=${THREADS:-2}
extra=()
for kv in ${GRID_SET:-}; do extra+=(--set "$kv"); done
tag=${GRID_SET:+${GRID_TAG:-set-}}
mkdir -p "$out"
[ -f "$out/grid.tsv" ] ||
    printf 'length\td_model\tn_layers\tn_heads\tparams\ttokens\tsteps\ttokens_per_s\tval_bpb\tload1\tvocab\tlr_mult\tbytes_per_token\n' \
        >"$out/grid.tsv"
read -r vocab bpt val_limit < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(m["total_vocab"], m["train"]["bytes_per_token"], round(65536 * 3.2467 / m["val"]["bytes_per_token"]))
' "$data/meta.json")
for spec in $runs; do
    IFS=: read -r d l h b m <<<"$spec"
    m=${m:-1}
    case $b in *s) length=(--budget "$b") ;; *) length=(--steps "$b") ;; esac
    run="$out/${tag}v$vocab-d$d-l$l-$b-lr$m"
    [ "$vocab" = 4097 ] && [ "$m" = 1 ] && run="$out/${tag}d$d-l$l-$b"   # the names of the first grid
    [ -f "$run/result.json" ] && continue
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$TEMPO" train --data "$data" --out "$run" "${length[@]}" --preset cpu-transformer \
        --threads "$threads" --val-limit "$val_limit" \
        --set d_model="$d" --set n_layers="$l" --set n_heads="$h" \
        --set lr_muon="$(python3 -c "print(0.02 * $m)")" --set lr="$(python3 -c "print(3e-3 * $m)")" \
        --set lr_embed="$(python3 -c "print(3e-3 * $m)")" --set lr_scalar="$(python3 -c "print(3e-3 * $m)")" \
        --set eval_every=0 --set checkpoint_every=0 ${extra[@]+"${extra[@]}"} >"$run.log" 2>&1 ||
        { echo "run $run failed (see $run.log)" >&2; continue; }
    python3 - "$run/result.json" "$b" "$d" "$l" "$h" "$load" "$vocab" "$m" "$bpt" >>"$out/grid.tsv" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
b, d, l, h, load, vocab, m, bpt = sys.argv[2:]
print("\t".join(map(str, [b, d, l, h, r["params"], r["tokens"], r["steps"],
                      round(r["tokens_per_second"], 1), round(r["val_bpb"], 5), load, vocab, m, bpt])))
EOF
    tail -1 "$out/grid.tsv"
done
