#!/usr/bin/env bash
# plan_basic.sh - `tempo plan` end to end: a plan from the committed chip and
# scaling files (the base preset kept or beaten, --any-shape), its --out preset trained for 2 steps on the tiny fixture, a
# bigger chip planning a bigger model, --check on tiny-test, the --plot SVG
# (every chip file, a chip list, an unwritable path), and the bad-input
# errors (a chip file with a missing or non-positive field, a budget too small
# for one step, a memory limit no config fits, flags).
source "$(dirname "$0")/train_common.bash"
P="$E2E_TMP/plan.conf"
"$TEMPO" plan --budget 10m --out "$P" --explain >"$E2E_TMP/plan.txt" 2>"$E2E_TMP/err.log" ||
    { cat "$E2E_TMP/err.log"; fail "plan failed"; }
[ -s "$P" ] || fail "no --out file"
grep -q '^d_model = [0-9]' "$P" || fail "the preset has no d_model: $(cat "$P")"
grep -q '^limit: ' "$E2E_TMP/plan.txt" || fail "--explain says no limit"
[ "$(grep -Ec '^# [0-9]+ +[0-9]+ +[0-9]+ ' "$E2E_TMP/plan.txt")" -eq 11 ] || fail "expected the plan and ten runners-up"
# what was printed as the preset is what --out wrote (after the runners-up start)
sed '/^$/,$d' "$E2E_TMP/plan.txt" | cmp -s - "$P" || fail "printed preset differs from the --out file"

# the base preset's shape: kept or beaten by more than the margin, said in the JSON line (and
# under the table when kept); --any-shape ranks by the point prediction alone
tail -1 "$E2E_TMP/plan.txt" | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
assert j["base"] in ("kept", "beaten") and j["base_margin"] > 0, j
assert (j["base"] == "kept") == (j["base_gain"] <= j["base_margin"]), j
if j["base"] == "kept":
    assert (j["d_model"], j["n_layers"], j["batch_size"]) == (128, 4, 16) and j["val_bpb"] == j["base_val_bpb"], j
' || fail "the JSON line's base fields are wrong: $(tail -1 "$E2E_TMP/plan.txt")"
if grep -q '"base":"kept"' "$E2E_TMP/plan.txt"; then
    grep -q "^# rank 0 is the base preset's shape" "$E2E_TMP/plan.txt" || fail "no note that the base was kept"
fi
"$TEMPO" plan --budget 10m --any-shape | tail -1 | grep -q '"base":"not tried"' || fail "--any-shape still weighed the base"

# the planned preset trains (2 steps on the tiny fixture; vocab comes from the data)
D=$(tiny_data 512)
"$TEMPO" train --data "$D" --out "$E2E_TMP/run" --steps 2 --preset "$P" --no-eval --threads 1 \
    >"$E2E_TMP/train.json" 2>"$E2E_TMP/train.log" || { tail -5 "$E2E_TMP/train.log"; fail "the planned preset does not train"; }
[ "$(json_field "$E2E_TMP/run/result.json" steps)" = 2 ] || fail "not 2 steps"

# a chip with 5000 x the FLOP/s plans a model with more parameters than this CPU's
params() { grep -o '[0-9.e+]* parameters' "$1" | head -1 | cut -d' ' -f1; }
"$TEMPO" plan --budget 10m --chip configs/chips/nvidia-h200.conf >"$E2E_TMP/h200.txt" || fail "plan on the H200 failed"
"$TEMPO" plan --budget 10m --chip configs/chips/aws-trainium2.conf --ranks 4 >"$E2E_TMP/trn2.txt" ||
    fail "plan on 4 Trainium2 failed"
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert b > a, (a, b)' "$(params "$E2E_TMP/plan.txt")" \
    "$(params "$E2E_TMP/h200.txt")" || fail "the H200 plan is not bigger than the CPU's"

# --check: bench train on a preset beside its prediction
"$TEMPO" plan --check tiny-test --steps 1 --threads 1 >"$E2E_TMP/check.txt" 2>/dev/null || fail "--check failed"
grep -Eq '^tiny-test +[0-9]+ +[0-9]+ ' "$E2E_TMP/check.txt" || fail "no tiny-test row: $(cat "$E2E_TMP/check.txt")"

# --plot: one SVG for every configs/chips/*.conf (and for a comma list), each chip named in it
"$TEMPO" plan --plot "$E2E_TMP/plan.svg" --budget 10m 2>"$E2E_TMP/plot.log" || { cat "$E2E_TMP/plot.log"; fail "--plot failed"; }
[ -s "$E2E_TMP/plan.svg" ] || fail "no --plot file"
n_chips=$(ls configs/chips/*.conf | wc -l)
grep -Eq "^plan: wrote .*plan.svg \($n_chips chips, [0-9]+ points\)$" "$E2E_TMP/plot.log" || fail "--plot said: $(cat "$E2E_TMP/plot.log")"
[ "$(head -c 4 "$E2E_TMP/plan.svg")" = "<svg" ] && grep -q '</svg>' "$E2E_TMP/plan.svg" || fail "not an SVG document"
for c in configs/chips/*.conf; do
    name=$(sed -n 's/^name *= *\([^ #]*\).*/\1/p' "$c")
    grep -q ">$name<" "$E2E_TMP/plan.svg" || fail "the plot does not name $name"
done
python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$E2E_TMP/plan.svg" || fail "the SVG is not well-formed XML"
"$TEMPO" plan --plot "$E2E_TMP/two.svg" --chip configs/chips/nvidia-h200.conf,configs/chips/aws-trainium2.conf \
    2>"$E2E_TMP/plot.log" || fail "--plot with a chip list failed"
grep -q '(2 chips, 20 points)' "$E2E_TMP/plot.log" || fail "--plot of two chips said: $(cat "$E2E_TMP/plot.log")"
expect_error 1 "nonexistent-dir" "$TEMPO" plan --plot "$E2E_TMP/nonexistent-dir/plan.svg"
[ "$("$TEMPO" plan --plot "$E2E_TMP/nonexistent-dir/plan.svg" 2>&1 | wc -l)" -eq 1 ] || fail "more than one error line"

# --calibrate: the per-op efficiencies measured here, written atomically; a bad --out is one line, no file
"$TEMPO" plan --calibrate tiny-test --threads 1 --steps 2 --out "$E2E_TMP/eff.conf" 2>"$E2E_TMP/cal.err" \
    || fail "plan --calibrate failed: $(cat "$E2E_TMP/cal.err")"
grep -q "^# Re-measure" "$E2E_TMP/eff.conf" || fail "--calibrate wrote no header"
awk -F'[ =#]+' '/^eff\.gemm_fwd/ { ok = ($2 > 0 && $2 <= 1) } END { exit !ok }' "$E2E_TMP/eff.conf" \
    || fail "--calibrate: no eff.gemm_fwd in (0, 1]: $(cat "$E2E_TMP/eff.conf")"
expect_error 1 "nonexistent-dir" "$TEMPO" plan --calibrate tiny-test --threads 1 --steps 1 --out "$E2E_TMP/nonexistent-dir/eff.conf"
[ ! -e "$E2E_TMP/nonexistent-dir" ] || fail "--calibrate created a folder"

# bad input: one line naming the file and the problem
chip() { sed "/^$1 /d" configs/chips/nvidia-h200.conf; }
chip bandwidth_gbs >"$E2E_TMP/no_bw.conf"
expect_error 2 "no_bw.conf: missing bandwidth_gbs" "$TEMPO" plan --budget 10m --chip "$E2E_TMP/no_bw.conf"
expect_error 2 "no_bw.conf: missing bandwidth_gbs" "$TEMPO" plan --plot "$E2E_TMP/bad.svg" \
    --chip configs/chips/nvidia-h200.conf,"$E2E_TMP/no_bw.conf"
[ ! -e "$E2E_TMP/bad.svg" ] || fail "--plot left a file behind after a bad chip"
{ chip memory_gb; echo "memory_gb = 0"; } >"$E2E_TMP/zero_mem.conf"
expect_error 2 "zero_mem.conf:[0-9]+: memory_gb: 0 is out of range" "$TEMPO" plan --budget 10m --chip "$E2E_TMP/zero_mem.conf"
{ chip cores; echo "cores = -3"; } >"$E2E_TMP/neg_cores.conf"
expect_error 2 "neg_cores.conf:[0-9]+: cores: -3 is out of range" "$TEMPO" plan --budget 10m --chip "$E2E_TMP/neg_cores.conf"
expect_error 2 "no such file|nonexistent" "$TEMPO" plan --budget 10m --chip "$E2E_TMP/nonexistent.conf"
expect_error 2 "budget .* too small" "$TEMPO" plan --budget 0.5s
expect_error 2 "no config fits in .* memory" "$TEMPO" plan --budget 10m --memory 0.000001
expect_error 2 "--budget is required" "$TEMPO" plan
expect_error 2 "--frobnicate: unknown option" "$TEMPO" plan --budget 10m --frobnicate 1
expect_error 2 "--budget" "$TEMPO" plan --budget soon
echo "plan_basic: ok"
