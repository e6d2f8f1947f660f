#!/usr/bin/env bash
# judge_killed.sh - a judge killed with -9 at any moment leaves the
# leaderboard valid (SQLite integrity check, no orphan runs) with the attempt
# either recorded or absent: killed inside the recording transaction (a test
# hook pauses there), and at random moments of short runs; afterwards the
# database still takes new attempts.
source "$(dirname "$0")/judge_common.bash"
fake_data_dir "$J_TMP/data"
fake_tempo "$J_TMP/faketempo"
write_model_py "$J_TMP/write_model.py"
DB=$J_TMP/lb.sqlite
J_ARGS=(--budget 5s --grace 0.5s --data-dir "$J_TMP/data" --val "$DATA/tiny/val.txt" --tempo "$J_TMP/faketempo"
        --db "$DB" --work "$J_TMP/work" --memory 4G --threads 1)
new_submission "$J_TMP/sub" short "[\"sh\", \"-c\", \"sleep 0.1; $WM_IN ok 2.0\"]"

count() {
    "$TEMPO" leaderboard --db "$DB" --check > "$J_TMP/check.json" || { cat "$J_TMP/check.json"; fail "integrity check failed"; }
    json_get "$J_TMP/check.json" 'j["attempts"]'
}

# a first attempt creates the database
judge_expect "$J_TMP/sub" ok '^$'
[ "$(count)" = 1 ] || fail "expected 1 attempt"

# 1. killed inside the transaction: the attempt is absent
"$TEMPO" judge --submission "$J_TMP/sub" "${J_ARGS[@]}" --seeds 2 --test-pause-in-transaction 30s \
    >/dev/null 2>"$J_TMP/paused.err" &
pid=$!
for _ in $(seq 1 300); do
    grep -q 'recording the attempt' "$J_TMP/paused.err" 2>/dev/null && break
    sleep 0.1
done
grep -q 'recording the attempt' "$J_TMP/paused.err" || { kill -9 $pid; fail "the judge never reached the transaction"; }
sleep 0.5
kill -9 $pid
wait $pid 2>/dev/null
[ "$(count)" = 1 ] || fail "an attempt killed inside its transaction was (partly) recorded"
echo "ok: killed inside the transaction: attempt absent, database valid"

# 2. killed at random moments
n=1
for delay in 0.05 0.35 0.6 0.9 1.3 0.2; do
    "$TEMPO" judge --submission "$J_TMP/sub" "${J_ARGS[@]}" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    c=$(count)
    [ "$c" = "$n" ] || [ "$c" = $((n + 1)) ] || fail "after a kill at ${delay}s: $c attempts (had $n)"
    echo "ok: killed after ${delay}s: $c attempt(s), database valid"
    n=$c
done

# 3. still usable, and every recorded attempt is whole
judge_expect "$J_TMP/sub" ok '^$'
[ "$(count)" = $((n + 1)) ] || fail "the database does not take new attempts"
"$TEMPO" leaderboard --db "$DB" --json > "$J_TMP/all.json" || fail "leaderboard --json"
python3 - "$J_TMP/all.json" <<'PY' || fail "a recorded attempt is not whole"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"id\"")]
for a in lines:
    assert a["status"] == "ok" and len(a["runs"]) == a["seeds"], a
PY
exit 0
