#!/usr/bin/env bash
# judge_seeds_phase2.sh - --seeds N: every seed a run, mean and sample std
# over seeds, and the one-sided Welch t-test against the leader (beats it /
# does not beat a noisy better mean / not tested with one seed), with t and df
# checked against a direct computation; then phase 2: the combined score and
# its parts from a scorecard (checked against the documented formula), and
# the parts recorded as unavailable when `tempo eval --phase 2` fails. Fake
# `tempo eval` (scores come from the models' metadata) and fake data.
source "$(dirname "$0")/judge_common.bash"
fake_data_dir "$J_TMP/data"
fake_tempo "$J_TMP/faketempo"
write_model_py "$J_TMP/write_model.py"
J_ARGS=(--budget 5s --grace 0.5s --data-dir "$J_TMP/data" --val "$DATA/tiny/val.txt" --tempo "$J_TMP/faketempo"
        --db "$J_TMP/lb.sqlite" --work "$J_TMP/work" --memory 4G --threads 1)

# submission NAME SCORES...: seed s (1-based) scores the s-th value
scored_submission() {
    local name=$1; shift
    mkdir -p "$J_TMP/$name"
    cp "$J_TMP/write_model.py" "$J_TMP/$name/w.py"
    printf 'set -- %s\neval "bpb=\\${$TEMPO_SEED}"\nexec python3 w.py "$TEMPO_OUT_DIR/model.safetensors" ok "$bpb" metrics\n' \
        "$*" > "$J_TMP/$name/run.sh"
    new_submission "$J_TMP/$name" "$name" '["sh", "run.sh"]'
}
scored_submission leader 2.01 2.02 2.03
scored_submission better 1.91 1.92 1.93
scored_submission noisy 1.80 2.02
scored_submission single 1.50

judge_expect "$J_TMP/leader" ok '^$' --seeds 3
python3 - "$J_TMP/last.json" <<'PY' || fail "seeds: mean/std"
import json, sys
j = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert [r["seed"] for r in j["runs"]] == [1, 2, 3], j["runs"]
assert abs(j["score_mean"] - 2.02) < 1e-12 and abs(j["score_std"] - 0.01) < 1e-12, (j["score_mean"], j["score_std"])
assert j["leader"] is None and j["n_scored"] == 3
PY

welch() {  # python check of the judge's t and df: file, expected beats (True/False)
    python3 - "$1" "$2" <<'PY'
import json, math, sys
j = json.loads(open(sys.argv[1]).read().splitlines()[-1])
new = [r["score"] for r in j["runs"]]
old = [2.01, 2.02, 2.03]
def mv(x):
    m = sum(x) / len(x)
    return m, sum((v - m) ** 2 for v in x) / (len(x) - 1)
(mn, vn), (mo, vo) = mv(new), mv(old)
a, b = vn / len(new), vo / len(old)
t = (mo - mn) / math.sqrt(a + b)
df = (a + b) ** 2 / (a * a / (len(new) - 1) + b * b / (len(old) - 1))
L = j["leader"]
assert L["submission"] == "leader", L
assert abs(L["t"] - t) < 1e-9 * max(1, abs(t)) and abs(L["df"] - df) < 1e-9 * df, (L, t, df)
assert str(L["beats_leader"]) == sys.argv[2], L
assert (L["p_value"] < 0.05) == (sys.argv[2] == "True"), L
print("t = %.3f, df = %.2f, p = %.3g" % (t, df, L["p_value"]))
PY
}
judge_expect "$J_TMP/better" ok '^$' --seeds 3
welch "$J_TMP/last.json" True || fail "better should beat the leader"
grep -q 'beats it: one-sided Welch' "$J_TMP/last.err" || fail "the test result is not printed"

# the leader is now 'better'; 'noisy' has a lower mean than 'leader' but is compared with 'better'
judge_expect "$J_TMP/noisy" ok '^$' --seeds 2
[ "$(json_get "$J_TMP/last.json" 'j["leader"]["submission"]')" = better ] || fail "the leader is not the best mean"
[ "$(json_get "$J_TMP/last.json" 'j["leader"]["beats_leader"]')" = False ] || fail "noisy must not beat better"

judge_expect "$J_TMP/single" ok '^$'
[ "$(json_get "$J_TMP/last.json" 'j["leader"]["beats_leader"]')" = None ] || fail "one seed cannot be tested"
grep -q 'not tested' "$J_TMP/last.err" || fail "not-tested is not said"

"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" > "$J_TMP/table.txt" || fail "leaderboard"
cat "$J_TMP/table.txt"
grep -Eq '^  1  single +1\.500000 +- +1 ' "$J_TMP/table.txt" || fail "single not first"
grep -Eq '^  3  better +1\.920000 +0\.010000 +3 ' "$J_TMP/table.txt" || fail "better: mean and spread"
grep -Eq '^  2  noisy +1\.910000 +0\.155563 +2 ' "$J_TMP/table.txt" || fail "noisy: ranked by its mean"

# phase 2 with a scorecard: bpb 2.5, bytes/token 1000/400 = 2.5, decode 500 tokens/s = 1250 B/s
mkdir -p "$J_TMP/p2" && cp "$J_TMP/write_model.py" "$J_TMP/p2/w.py"
new_submission "$J_TMP/p2" p2 '["sh", "-c", "python3 w.py \"$TEMPO_OUT_DIR/model.safetensors\" ok 2.5"]'
FAKE_SCORECARD='{"phase": 2, "core": 0.12, "decode_tokens_per_s": 500, "icl": {"tasks": 19}}' \
    judge_expect "$J_TMP/p2" ok '^$' --phase 2
python3 - "$J_TMP/last.json" <<'PY' || fail "phase 2: combined score"
import json, math, sys
j = json.loads(open(sys.argv[1]).read().splitlines()[-1])
r = j["runs"][0]
speed = max(-0.25, min(0.25, 0.05 * math.log2(500 * 2.5 / 1000)))
want = 2.5 - 1.0 * 0.12 - speed
assert j["phase"] == 2 and abs(r["score"] - want) < 1e-12, (r, want)
assert abs(r["core"] - 0.12) < 1e-15 and abs(r["decode_bytes_per_s"] - 1250) < 1e-9
assert abs(r["icl_term"] - 0.12) < 1e-15 and abs(r["speed_term"] - speed) < 1e-12
assert abs(j["score_mean"] - want) < 1e-12 and "log2" in j["formula"]
print("phase 2 score %.6f = 2.5 - 0.12 - %.6f" % (want, speed))
PY
grep -q 'score 2.363904 = bpb 2.500000 - 1 x CORE 0.1200 - speed 0.0161' "$J_TMP/last.err" ||
    { grep score "$J_TMP/last.err"; fail "phase 2: the formula with its parts is not printed"; }

# without a scorecard (the scorecard command fails): ok, bpb recorded, parts unavailable with the reason, not ranked
judge_expect "$J_TMP/p2" ok 'phase 2 unavailable: .tempo eval --phase 2. failed: eval: --phase: unknown option' --phase 2
[ "$(json_get "$J_TMP/last.json" 'j["runs"][0]["bpb"]')" = 2.5 ] || fail "phase 2: bpb not recorded"
[ "$(json_get "$J_TMP/last.json" 'j["score_mean"]')" = None ] || fail "phase 2: a score without its parts"
"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" --phase 2 > "$J_TMP/p2.txt" || fail "leaderboard --phase 2"
grep -Eq '^  1  p2 +2\.363904' "$J_TMP/p2.txt" || { cat "$J_TMP/p2.txt"; fail "phase 2 ranking"; }
exit 0
