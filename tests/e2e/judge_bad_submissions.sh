#!/usr/bin/env bash
# judge_bad_submissions.sh - every kind of bad submission is recorded as a
# failed attempt with a one-line reason, the judge exits 0 each time and the
# leaderboard stays intact: missing/malformed manifest, a symlink, a command
# that does not exist, crashes, a hang past the budget (and a model written
# after the deadline, which must not count), no model, truncated / foreign /
# metadata-less models, NaN weights, output flooding. Also the good case, in
# which the submission checks that it cannot see the validation text. Uses a
# fake `tempo eval` (--tempo) and a fake training folder (--data-dir), so it
# needs neither the trainer nor real data; budgets of a few seconds.
source "$(dirname "$0")/judge_common.bash"
S=$J_TMP/subs
fake_data_dir "$J_TMP/data"
fake_tempo "$J_TMP/faketempo"
write_model_py "$J_TMP/write_model.py"
J_ARGS=(--budget 3s --grace 0.5s --data-dir "$J_TMP/data" --val "$DATA/tiny/val.txt" --tempo "$J_TMP/faketempo"
        --db "$J_TMP/lb.sqlite" --work "$J_TMP/work" --memory 4G --threads 1)
WM=$WM_IN

mkdir -p "$S/no-manifest" && echo "print(1)" > "$S/no-manifest/train.py"
judge_expect "$S/no-manifest" failed '^manifest.json: missing'

mkdir -p "$S/bad-json" && printf '{"name": "x", "authors": [' > "$S/bad-json/manifest.json"
judge_expect "$S/bad-json" failed '^manifest.json: malformed JSON'

mkdir -p "$S/typo" && printf '{"name":"typo","authors":["a"],"description":"","phase":1,"comand":["x"]}' \
    > "$S/typo/manifest.json"
judge_expect "$S/typo" failed 'unknown key "comand"'

new_submission "$S/symlink" symlink '["true"]'
ln -s "$(cd "$DATA/tiny" && pwd)/val.txt" "$S/symlink/val.txt"
judge_expect "$S/symlink" failed 'val.txt: symlinks are not allowed'

new_submission "$S/no-command" no-command '["./does-not-exist", "--fast"]'
judge_expect "$S/no-command" failed 'command could not start: ./does-not-exist: (No such file or directory|not found)'

new_submission "$S/segfault" segfault '["sh", "-c", "echo training; kill -SEGV $$"]'
judge_expect "$S/segfault" failed 'killed by signal 11'

new_submission "$S/exit1" exit1 '["sh", "-c", "echo starting; echo \"tempo: data: broken batch\" >&2; exit 1"]'
judge_expect "$S/exit1" failed '^exited with status 1: tempo: data: broken batch$'

new_submission "$S/gave-up" gave-up '["sh", "-c", "echo \"tempo: training diverged: non-finite loss or gradient at step 9 after 3 restores\" >&2; exit 1"]'
judge_expect "$S/gave-up" diverged '^exited with status 1: tempo: training diverged: non-finite loss'

new_submission "$S/hang" hang '["sh", "-c", "trap \"\" TERM; sleep 60"]'
judge_expect "$S/hang" over_budget 'still running at the 3.0 s deadline; killed with SIGKILL.*no model by then'
wall=$(json_get "$J_TMP/last.json" 'j["runs"][0]["wall_seconds"]')
python3 -c "import sys; w=float(sys.argv[1]); assert 3.0 <= w < 30, w" "$wall" || fail "hang: wall $wall"

# trains until SIGTERM, then writes its model: too late, it must not be scored
new_submission "$S/late-model" late-model "[\"sh\", \"-c\", \"trap '$WM ok 0.1; exit 0' TERM; while :; do sleep 0.1; done\"]"
judge_expect "$S/late-model" over_budget 'stopped with SIGTERM and no model by then' --grace 5s
[ "$(json_get "$J_TMP/last.json" 'j["runs"][0]["bpb"]')" = None ] || fail "late model was scored"
run_dir=$(json_get "$J_TMP/last.json" 'j["runs"][0]["run_dir"]')
[ -f "$run_dir/out/model.safetensors" ] || fail "late-model: the test itself is wrong (no late model written)"
[ ! -e "$run_dir/scored/model.safetensors" ] || fail "late model was taken"

# a model at the deadline is scored for information, the attempt is still over budget
new_submission "$S/model-then-hang" model-then-hang "[\"sh\", \"-c\", \"$WM ok 2.25; exec sleep 60\"]"
judge_expect "$S/model-then-hang" over_budget 'the model of the deadline is scored for information'
[ "$(json_get "$J_TMP/last.json" 'j["runs"][0]["bpb"]')" = 2.25 ] || fail "deadline model not scored"
[ "$(json_get "$J_TMP/last.json" 'j["score_mean"]')" = None ] || fail "an over-budget attempt got a mean score"

new_submission "$S/nan-then-hang" nan-then-hang "[\"sh\", \"-c\", \"$WM nan; exec sleep 60\"]"
judge_expect "$S/nan-then-hang" over_budget 'scored for information\); that model is diverged: model.safetensors: weights hold non-finite'

new_submission "$S/no-model" no-model '["true"]'
judge_expect "$S/no-model" no_model '^no model.safetensors in the output folder \(exited 0'

new_submission "$S/truncated" truncated "[\"sh\", \"-c\", \"$WM truncated\"]"
judge_expect "$S/truncated" invalid_model '^model.safetensors: truncated'

new_submission "$S/foreign" foreign "[\"sh\", \"-c\", \"$WM foreign\"]"
judge_expect "$S/foreign" invalid_model '^model.safetensors: not a safetensors file'

new_submission "$S/no-meta" no-meta "[\"sh\", \"-c\", \"$WM nometa\"]"
judge_expect "$S/no-meta" invalid_model 'not a tempo model'

new_submission "$S/nan" nan "[\"sh\", \"-c\", \"$WM nan\"]"
judge_expect "$S/nan" diverged 'weights hold non-finite values'

new_submission "$S/flood" flood '["yes", "all work and no play"]'
judge_expect "$S/flood" failed '^output flooding: more than 8 MiB' --flood-bytes 8M --log-bytes 64K
run_dir=$(json_get "$J_TMP/last.json" 'j["runs"][0]["run_dir"]')
size=$(stat -c %s "$run_dir/stdout.log")
[ "$size" -le $((64 * 1024 + 16 * 1024 + 100)) ] || fail "flood: stdout.log is $size bytes"
grep -q 'bytes dropped' "$run_dir/stdout.log" || fail "flood: no dropped-bytes marker"

# the good case; the submission checks what it can see
cat > "$J_TMP/peek.sh" <<'SH'
#!/bin/sh
set -e
[ -z "${TEMPO_DATA:-}" ] || { echo "TEMPO_DATA leaked: $TEMPO_DATA" >&2; exit 3; }
for v in TEMPO_DATA_DIR TEMPO_OUT_DIR TEMPO_BUDGET_SECONDS TEMPO_THREADS TEMPO_SEED OMP_NUM_THREADS TEMPO_BIN; do
    eval "x=\${$v:-}"; [ -n "$x" ] || { echo "$v missing" >&2; exit 4; }
done
[ "$OMP_NUM_THREADS" = 1 ] || { echo "threads $OMP_NUM_THREADS" >&2; exit 5; }
needle=$(echo "$VAL_B64" | base64 -d)
if grep -rqF "$needle" "$TEMPO_DATA_DIR" . 2>/dev/null; then echo "validation text visible" >&2; exit 6; fi
python3 writer.py "$TEMPO_OUT_DIR/model.safetensors" ok 2.125
SH
new_submission "$S/good" good '["sh", "peek.sh"]'
cp "$J_TMP/peek.sh" "$S/good/"
cp "$J_TMP/write_model.py" "$S/good/writer.py"
b64=$(awk 'length > 40 { print substr($0, 1, 60); exit }' "$DATA/tiny/val.txt" | tr -d '\n' | base64 -w0)
sed -i "s|\$VAL_B64|$b64|" "$S/good/peek.sh"
judge_expect "$S/good" ok '^$'
[ "$(json_get "$J_TMP/last.json" 'j["score_mean"]')" = 2.125 ] || fail "good: score"
[ "$(json_get "$J_TMP/last.json" 'len(j["submission_hash"])')" = 64 ] || fail "good: no submission hash"

# a training folder that holds the validation text is refused (judge error, nothing recorded)
mkdir -p "$J_TMP/leaky" && cp "$DATA/tiny/val.txt" "$J_TMP/leaky/v.txt"
"$TEMPO" judge --submission "$S/good" "${J_ARGS[@]}" --data-dir "$J_TMP/leaky" >/dev/null 2>"$J_TMP/leak.err" &&
    fail "a data folder with the validation text was accepted"
grep -q 'holds the validation text' "$J_TMP/leak.err" || fail "leak: $(cat "$J_TMP/leak.err")"

# numbers out of range are usage errors (exit 2, one line), nothing judged or recorded (issue 9)
judge_usage() {  # PATTERN ARGS...
    local pattern=$1; shift
    "$TEMPO" judge --submission "$S/good" "${J_ARGS[@]}" "$@" >/dev/null 2>"$J_TMP/usage.err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "judge $*: exit $rc, want 2 ($(cat "$J_TMP/usage.err"))"
    [ "$(wc -l < "$J_TMP/usage.err")" -eq 1 ] && grep -Eq -- "$pattern" "$J_TMP/usage.err" ||
        fail "judge $*: want one line /$pattern/, got: $(cat "$J_TMP/usage.err")"
}
judge_usage '^tempo: --budget .99999999999999999999999h.: out of range' --budget 99999999999999999999999h
judge_usage '^tempo: --grace .721h.: out of range' --grace 721h
judge_usage '^tempo: --eval-timeout .0s.: must be greater than zero' --eval-timeout 0s
judge_usage '^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$' --threads 4294967297
judge_usage '^tempo: --seeds: 4294967297 is out of range' --seeds 4294967297
judge_usage '^tempo: --seed: 99999999999999999999 is out of range' --seed 99999999999999999999
judge_usage '^tempo: --steps: 99999999999999999999 is out of range' --steps 99999999999999999999
judge_usage '^tempo: --vocab: 4294967552 is out of range \(256 to 65536\)$' --vocab 4294967552
judge_usage '^tempo: --phase: 3 is out of range \(1 to 2\)$' --phase 3
judge_usage '^tempo: --icl-limit: 4294967297 is out of range' --icl-limit 4294967297
judge_usage '^tempo: --memory: 1e30G is out of range \(1M to 1024T\)$' --memory 1e30G
judge_usage '^tempo: --memory: .lots. is not a size' --memory lots
judge_usage '^tempo: --log-bytes: 2G is out of range' --log-bytes 2G
judge_usage '^tempo: --flood-bytes: 1e400 is out of range' --flood-bytes 1e400
echo "ok: out-of-range numbers are usage errors"

"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" --check > "$J_TMP/check.json" || fail "leaderboard check failed"
[ "$(json_get "$J_TMP/check.json" 'j["attempts"]')" = 19 ] || fail "expected 19 attempts: $(cat "$J_TMP/check.json")"
"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" --all > "$J_TMP/table.txt" || fail "leaderboard failed"
grep -q '^  1  good ' "$J_TMP/table.txt" || { cat "$J_TMP/table.txt"; fail "good is not ranked first"; }
grep -q 'no-model .*no_model' "$J_TMP/table.txt" || fail "failed attempts not listed"
exit 0
