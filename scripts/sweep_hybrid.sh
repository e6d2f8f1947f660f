#!/usr/bin/env bash
# sweep_hybrid.sh - the hybrid model's preset sweep (the hybrid-model issue, part 7):
# every point of cpu-default plus its overrides trained for BUDGET (default 10m) with
# SEEDS (default "1 2"), scored on the whole val split, one row per run appended to
# OUT (TSV): the mixture's val bpb and each component's alone, steps, tokens/s, the
# memory's build seconds and bytes, and the 1-minute load average before and after
# (a row whose load is well above the thread count ran on a busy machine: rerun it).
#
#   scripts/sweep_hybrid.sh OUT.tsv [POINT...]      POINT = a name from the list below
#
# Each 10-minute point costs about 13 minutes (training, memory build included, and
# the final evaluation); the full list with two seeds about 6 hours. The vocabulary
# points need their own prepared data (DATA_2048, DATA_8192; `tempo prepare --vocab
# N`, as the README's first command prepares data/corpus). Run on a quiet machine
# and record the table in docs/lab-notebook.md. Nothing here is a test.
#
# Resumable, so the sweep can be run in slices (a session at a time): a point whose
# run folder holds a result.json is not trained again (its row is appended if OUT lacks
# it, with "-" for the loads, which were not seen); a folder without one (a run killed
# part way) is removed and trained from the start.
#
# Disk: every run's memory.bin is 5.5 GB (vocab 4096, order 5), so once a row is
# recorded its memory.bin and checkpoint are deleted (KEEP_RUNS=1 keeps them); a
# build is deterministic for its data, order and threads, so the same data's
# memory.bin from any run (or a rebuild) serves a later `tempo eval` of the folder.
set -euo pipefail
out=${1:?usage: sweep_hybrid.sh OUT.tsv [POINT...]}; shift
TEMPO=${TEMPO:-build/tempo}
BUDGET=${BUDGET:-10m}
SEEDS=${SEEDS:-1 2}
KEEP_RUNS=${KEEP_RUNS:-0}
DATA=${DATA:-data/corpus}
DATA_2048=${DATA_2048:-data/corpus-v2048}
DATA_8192=${DATA_8192:-data/corpus-v8192}

# name | data folder | overrides on cpu-default (d_model 192, 3 heads until 25d6fc0, 128 and 2 since:
# the narrow_* points name the width so that their rows mean the same before and after)
points() {
cat <<EOF
default|$DATA|
order4|$DATA|memory_order=4
prune2|$DATA|memory_prune=2
cache5|$DATA|cache_order=5 match_length=4
wide|$DATA|d_model=256 n_heads=4
narrow|$DATA|d_model=128 n_heads=2
deep|$DATA|n_layers=6
shallow|$DATA|n_layers=3
lr_hi|$DATA|lr_muon=0.03 lr=4.5e-3
lr_lo|$DATA|lr_muon=0.014 lr=2e-3
vocab2048|$DATA_2048|
vocab8192|$DATA_8192|memory_order=4
vocab8192o5|$DATA_8192|
order6|$DATA|memory_order=6
d96|$DATA|d_model=96 n_heads=2
narrow_l3|$DATA|d_model=128 n_heads=2 n_layers=3
narrow_c512|$DATA|d_model=128 n_heads=2 context=512 batch_size=8
narrow_v8192|$DATA_8192|d_model=128 n_heads=2
narrow_lr_hi|$DATA|d_model=128 n_heads=2 lr_muon=0.03 lr=4.5e-3
narrow_lr_lo|$DATA|d_model=128 n_heads=2 lr_muon=0.014 lr=2e-3
narrow_l6|$DATA|d_model=128 n_heads=2 n_layers=6
EOF
}

want=" $* "
[ -s "$out" ] || printf 'name\tseed\tbudget\tval_bpb\ttransformer\tmemory\tcache\tmatch\tsteps\ttokens_per_s\tmemory_s\tmemory_gb\tload_before\tload_after\tsets\n' > "$out"
points | while IFS='|' read -r name data sets; do
    [ $# -eq 0 ] || [[ $want == *" $name "* ]] || continue
    [ -f "$data/train.tok" ] || { echo "sweep: $name: no prepared data in $data (tempo prepare --vocab N)" >&2; continue; }
    args=()
    for s in $sets; do args+=(--set "$s"); done
    for seed in $SEEDS; do
        run="runs/sweep/$name-s$seed-$BUDGET"
        if [ -f "$run/result.json" ]; then
            ! grep -q "^$name	$seed	$BUDGET	" "$out" || continue   # done and recorded
            load0=-; load1=-
        else
            rm -rf "$run"
            mkdir -p runs/sweep
            load0=$(cut -d' ' -f1 /proc/loadavg)
            "$TEMPO" train --data "$data" --budget "$BUDGET" --preset cpu-default --seed "$seed" --out "$run" \
                ${args[@]+"${args[@]}"} > /dev/null 2> "$run.log" || { echo "sweep: $name seed $seed failed (see $run.log)" >&2; continue; }
            load1=$(cut -d' ' -f1 /proc/loadavg)
        fi
        python3 - "$run/result.json" "$name" "$seed" "$BUDGET" "$load0" "$load1" "$sets" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
name, seed, budget, l0, l1, sets = sys.argv[2:]
f = lambda k: "%.4f" % r[k] if isinstance(r.get(k), (int, float)) else "-"
print("\t".join([name, seed, budget, f("val_bpb"), f("val_bpb_transformer"), f("val_bpb_memory"),
                 f("val_bpb_cache"), f("val_bpb_match"), str(r["steps"]), "%.0f" % r["tokens_per_second"],
                 "%.1f" % r.get("memory_seconds", 0), "%.2f" % (r.get("memory_bytes", 0) / 1e9), l0, l1, sets or "-"]))
PY
        tail -n 1 "$out"
        [ "$KEEP_RUNS" = 1 ] || rm -f "$run/memory.bin" "$run/checkpoint.safetensors"
    done
done
