#!/usr/bin/env bash
# plan_validate.sh - `tempo plan --validate` end to end on the tiny fixture
# with a 3 s budget: the plan and its four neighbours are trained (one seed),
# the report and validate.json say predicted against measured; run again with
# two seeds, the first seed's runs are reused and only the second's trained
# (also when a preset lacks a key whose default the plan keeps);
# bulky files are removed unless --keep-runs; bad input is one line. The
# figures themselves mean nothing here (a 3 s budget on a tiny corpus): the
# real validation is in docs/planner.md.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
W="$E2E_TMP/validate"
"$TEMPO" plan --validate --budget 3s --data "$D" --seeds 1 --threads 1 --work "$W" \
    >"$E2E_TMP/v1.txt" 2>"$E2E_TMP/v1.log" || { tail -20 "$E2E_TMP/v1.log"; fail "--validate failed"; }
[ "$(ls -d "$W"/b3-*-s1 | wc -l)" -eq 5 ] || fail "expected 5 run folders: $(ls "$W")"
for r in plan width- width+ depth; do
    grep -Eq "^$r" "$E2E_TMP/v1.txt" || fail "no $r row in the report: $(cat "$E2E_TMP/v1.txt")"
done
grep -q '^target 1 ' "$E2E_TMP/v1.txt" && grep -q '^target 2 ' "$E2E_TMP/v1.txt" || fail "no targets"
cmp -s "$E2E_TMP/v1.txt" "$W/report.txt" || fail "report.txt differs from what was printed"
python3 - "$W/validate.json" <<'PY' || fail "validate.json is wrong"
import json, sys, glob, os
v = json.load(open(sys.argv[1]))
assert v["budget_seconds"] == 3 and v["seeds"] == 1, v
assert len(v["configs"]) == 5 and v["configs"][0]["label"] == "plan"
for c in v["configs"]:
    assert len(c["runs"]) == 1 and c["runs"][0]["val_bpb"] > 0, c
    assert c["measured_bpb_mean"] == c["runs"][0]["val_bpb"]
# the measured figure is the run's own result.json
d = os.path.dirname(sys.argv[1])
p = v["configs"][0]
run = glob.glob(f"{d}/b3-d{p['d_model']}-l{p['n_layers']}-*-s1")[0]
assert json.load(open(run + "/result.json"))["val_bpb"] == p["runs"][0]["val_bpb"]
PY
ls "$W"/b3-*/memory.bin "$W"/b3-*/model.safetensors 2>/dev/null && fail "bulky files left without --keep-runs"
[ "$(ls "$W"/b3-*/preset.conf | wc -l)" -eq 5 ] || fail "a run folder lacks its preset"

# again with two seeds: seed 1 is reused (5 lines say so), seed 2 is trained
"$TEMPO" plan --validate --budget 3s --data "$D" --seeds 2 --threads 1 --work "$W" --keep-runs \
    >"$E2E_TMP/v2.txt" 2>"$E2E_TMP/v2.log" || { tail -20 "$E2E_TMP/v2.log"; fail "--validate --seeds 2 failed"; }
[ "$(grep -c 'seed 1: .*done before: reused' "$E2E_TMP/v2.log")" -eq 5 ] || fail "seed 1 not reused: $(cat "$E2E_TMP/v2.log")"
[ "$(grep -c 'seed 2: .*reused' "$E2E_TMP/v2.log")" -eq 0 ] || fail "seed 2 reused"
[ "$(ls -d "$W"/b3-*-s2 | wc -l)" -eq 5 ] || fail "expected 5 seed-2 folders"
[ "$(ls "$W"/b3-*-s2/model.safetensors | wc -l)" -eq 5 ] || fail "--keep-runs removed the models"
grep -Eq '^plan .* 2/2 ' "$E2E_TMP/v2.txt" || fail "the plan row does not say 2/2 seeds: $(cat "$E2E_TMP/v2.txt")"

# a finished folder whose preset lacks a key (written by a tempo that had no such key) took that key's
# default: with the planned value equal to it, the run is still reused
P2=$(ls -d "$W"/b3-*-s2 | head -1)
grep -q '^overlap_comm = true' "$P2/preset.conf" || fail "the preset lacks overlap_comm: $(cat "$P2/preset.conf")"
sed -i '/^overlap_comm = /d' "$P2/preset.conf"
"$TEMPO" plan --validate --budget 3s --data "$D" --seeds 2 --threads 1 --work "$W" --keep-runs \
    >/dev/null 2>"$E2E_TMP/v2b.log" || fail "--validate after removing a default key failed"
[ "$(grep -c 'reused' "$E2E_TMP/v2b.log")" -eq 10 ] || fail "a preset without a default key was retrained: $(cat "$E2E_TMP/v2b.log")"

# an edited preset in a finished folder is not taken as done: that run is trained again
P1=$(ls -d "$W"/b3-*-s1 | head -1)
sed -i 's/^lr = .*/lr = 0.001/' "$P1/preset.conf"
"$TEMPO" plan --validate --budget 3s --data "$D" --seeds 1 --threads 1 --work "$W" \
    >/dev/null 2>"$E2E_TMP/v3.log" || fail "third --validate failed"
[ "$(grep -c 'reused' "$E2E_TMP/v3.log")" -eq 4 ] || fail "the edited run was reused: $(cat "$E2E_TMP/v3.log")"
grep -q '^lr = 0.001' "$P1/preset.conf" && fail "the edited preset was not rewritten"

# bad input: one line, non-zero
expect_error 2 "no --ranks" "$TEMPO" plan --validate --budget 3s --data "$D" --ranks 2
expect_error 1 "nonexistent/train.tok" "$TEMPO" plan --validate --budget 3s --data "$E2E_TMP/nonexistent"
expect_error 2 "--seeds" "$TEMPO" plan --validate --budget 3s --data "$D" --seeds 0
expect_error 2 "--budget is required" "$TEMPO" plan --validate --data "$D"
echo "plan_validate: ok"
