#!/usr/bin/env bash
# icl_copy.sh - ICL on a task a tiny model can learn: after 2000 steps on documents of
# "x = x" lines, the model must copy the letter shown earlier in the prompt, and `tempo icl`
# must score it well above chance on both task types (multiple choice: chance 25 %; greedy
# copy of the continuation: chance about 1/16). Also: the result JSON (every task, the
# baselines, centered accuracies with their 95 % intervals, "CORE over 2 of 3" with the
# absent entry counted), the
# same object in --out DIR/result.json, --task, --limit and --shots.
source "$(dirname "$0")/icl_common.bash"
M=$(copy_model) || exit 1
T="$M/icl"
"$TEMPO" icl --model "$M/run" --tasks "$T" --limit 100 --out "$E2E_TMP/out" \
    > "$E2E_TMP/icl.json" 2> "$E2E_TMP/icl.err" || { cat "$E2E_TMP/icl.err"; fail "tempo icl failed"; }
cat "$E2E_TMP/icl.err"
tail -n 1 "$E2E_TMP/icl.json" | cmp -s - "$E2E_TMP/out/result.json" || fail "stdout last line differs from result.json"
grep -q "copy_mc" "$E2E_TMP/icl.err" || fail "no table on stderr"
python3 - "$E2E_TMP/out/result.json" <<'PY' || fail "copy task not learned or result malformed"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["label"]: x for x in r["tasks"]}
mc, lm, ab = t["copy_mc"], t["copy_lm"], t["absent"]
print("copy_mc %.2f (chance 0.25), copy_lm %.2f, CORE %.3f over %d of %d" %
      (mc["accuracy"], lm["accuracy"], r["core"], r["core_entries"], r["core_of"]))
assert mc["status"] == "ok" and mc["evaluated"] == 100 and mc["shots"] == 3, mc
assert mc["random_baseline"] == 0.25 and abs(mc["centered"] - (mc["accuracy"] - 0.25) / 0.75) < 1e-12
assert mc["accuracy"] >= 0.45, mc["accuracy"]     # chance 0.25; 4.6 sd at n = 100
assert lm["accuracy"] >= 0.2, lm["accuracy"]      # chance ~0.06
assert ab["status"] == "missing"
assert r["core_entries"] == 2 and r["core_of"] == 3 and r["core_label"] == "CORE-2", r
assert abs(r["core"] - (mc["centered"] + lm["centered"]) / 2) < 1e-12
assert "hellaswag_val_subset1000" not in [x["label"] for x in r["tasks"] if x["in_core"]]
# 95 % intervals (bootstrap over items) around each accuracy and CORE; the copy task is above
# chance beyond its interval, the absent one has none
for x in (mc, lm):
    lo, hi = x["accuracy_ci95"]
    assert lo <= x["accuracy"] <= hi and hi - lo < 0.3, x
assert mc["accuracy_ci95"][0] > 0.25, mc
assert ab["accuracy_ci95"] == [None, None], ab
lo, hi = r["core_ci95"]
assert lo <= r["core"] <= hi, r
PY
grep -q "95% interval \[" "$E2E_TMP/icl.err" || fail "no CORE interval in the table"
# --task, --limit, --shots: one task, 10 items, zero-shot (a copy task without examples
# is still a copy: the letter is in the query)
"$TEMPO" icl --model "$M/run" --tasks "$T" --task copy_mc --limit 10 --shots 0 > "$E2E_TMP/one.json" \
    2>/dev/null || fail "icl --task failed"
python3 - "$E2E_TMP/one.json" <<'PY' || fail "--task/--limit/--shots not honoured"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert [x["label"] for x in r["tasks"]] == ["copy_mc"], r["tasks"]
assert r["tasks"][0]["evaluated"] == 10 and r["tasks"][0]["shots"] == 0 and r["limit"] == 10
PY
exit 0
