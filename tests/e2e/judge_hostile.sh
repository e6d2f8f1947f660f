#!/usr/bin/env bash
# judge_hostile.sh - the judge holds against a hostile submission (issue 31).
# Each probe of tests/e2e/py/judge_hostile_probe.py is judged in the sandbox,
# and the assertion is then shown to fail with --no-sandbox (or, for the
# limits, with the limit raised): no assertion here is vacuous.
#  1. the validation text is unreadable by every route (a known absolute path,
#     a path relative to $TEMPO_BIN, /proc/$PPID/cmdline and cwd, find /), and
#     so is the judge's environment;
#  2. $TEMPO_BIN cannot be replaced: it is unchanged and the judge scores with
#     its own binary;
#  3. the leaderboard and the other attempts' folders are byte-identical;
#  4. the model scored is the deadline's, though a setsid child writes another
#     over it (and over the judge's copy) from the deadline on;
#  5. no process of the submission is alive after the run (its command's
#     end, or the deadline), nor after kill -9 of the judge, setsid children
#     included;
#  6. the process, disk and memory limits give their verdicts;
#  7. no connection reaches a listener the test opens on the host's loopback
#     (the sandbox's own loopback works);
#  8. the training folder and its sha256 record cannot be rewritten.
# Uses the fake `tempo eval` of judge_common.bash (scores come from the fake
# models' metadata) and the tiny corpus; needs bubblewrap and user namespaces.
source "$(dirname "$0")/judge_common.bash"
abs_data=$(cd "$DATA" && pwd)
MARK="hostile-val-marker-$$-$RANDOM"
ENV_MARK="hostile-env-marker-$$-$RANDOM"
PROC_MARK="hostile-proc-marker-$$-$RANDOM"
cleanup_procs() { pkill -KILL -f "$PROC_MARK" 2>/dev/null; true; }
trap 'cleanup_procs; [ -n "${J_KEEP:-}" ] || rm -rf "$J_TMP"' EXIT

mkdir -p "$J_TMP/secret" "$J_TMP/bin"
{ cat "$abs_data/tiny/val.txt"; echo "$MARK"; } > "$J_TMP/secret/val_marker.txt"
TEMPO_ABS=$(pwd)/$TEMPO
# the fake `tempo eval` of judge_common.bash, with the real `tempo prepare` for the training folder
hostile_tempo() { fake_tempo "$1"; sed -i "2i [ \"\$1\" = prepare ] && exec '$TEMPO_ABS' \"\$@\"" "$1"; }
hostile_tempo "$J_TMP/bin/tempo"
write_model_py "$J_TMP/write_model.py"
VAL=$J_TMP/secret/val_marker.txt
WORK=$J_TMP/work
DB=$J_TMP/lb.sqlite
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# a listener on the host's loopback that records every connection
python3 - "$PORT" "$J_TMP/listener.log" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("connection: %r\n" % c.recv(100))
    c.close()
PY
LISTENER=$!
trap 'kill $LISTENER 2>/dev/null; cleanup_procs; [ -n "${J_KEEP:-}" ] || rm -rf "$J_TMP"' EXIT
touch "$J_TMP/listener.log"

J_ARGS=(--budget 10s --grace 0.5s --corpus "$abs_data/tiny" --val "$VAL" --vocab 256 --tempo "$J_TMP/bin/tempo"
        --db "$DB" --work "$WORK" --threads 1)
# the judge runs from the folder that holds the validation text (the /proc/$PPID/cwd route)
judge() { (cd "$J_TMP/secret" && exec env HOSTILE_ENV="$ENV_MARK" "$TEMPO_ABS" judge "$@"); }

# the sandbox must be able to start here, else this test cannot run
if ! bwrap --unshare-all --unshare-user --ro-bind / / true 2>/dev/null; then
    echo "SKIP: no sandbox here (bubblewrap missing or user namespaces disabled)"; exit 0
fi

# probe SUBDIR MODE [ARGS...]: a submission folder running the probe
probe() {
    local dir=$J_TMP/subs/$1 mode=$2; shift 2
    local args; args=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' python3 probe.py "$mode" "$@")
    new_submission "$dir" "$mode" "$args"
    cp tests/e2e/py/judge_hostile_probe.py "$dir/probe.py"
    python3 - "$dir/probe.json" <<PY
import json, os, sys
json.dump({"marker": "$MARK", "env_marker": "$ENV_MARK", "proc_marker": "$PROC_MARK", "val": "$VAL",
           "val_rel_to_bin": os.path.relpath("$VAL", "$J_TMP/bin"), "db": "$DB", "work": "$WORK",
           "port": $PORT}, open(sys.argv[1], "w"))
PY
}

# run_judge NAME SUB [judge args...]: judge it, the attempt JSON into $J_TMP/NAME.json, stdout.log of its run echoed
run_judge() {
    local name=$1 sub=$2; shift 2
    judge --submission "$J_TMP/subs/$sub" "${J_ARGS[@]}" "$@" >"$J_TMP/$name.json" 2>"$J_TMP/$name.err" ||
        { cat "$J_TMP/$name.err" >&2; fail "$name: the judge exited $?"; }
    RUN_DIR=$(json_get "$J_TMP/$name.json" 'j["runs"][0]["run_dir"]')
    STATUS=$(json_get "$J_TMP/$name.json" 'j["status"]')
    REASON=$(json_get "$J_TMP/$name.json" 'j["reason"]')
    BPB=$(json_get "$J_TMP/$name.json" 'j["runs"][0]["bpb"]')
}

# fingerprints of what a submission must not change
tree_sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) | sha256sum | cut -c1-16; }
db_rows() { python3 - "$DB" "$1" <<'PY'
import hashlib, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); upto = int(sys.argv[2])
rows = db.execute("SELECT * FROM attempts WHERE id <= ? ORDER BY id", (upto,)).fetchall()
rows += db.execute("SELECT * FROM runs WHERE attempt_id <= ? ORDER BY id", (upto,)).fetchall()
print(hashlib.sha256(repr(rows).encode()).hexdigest()[:16], len(rows))
PY
}
data_sum() { local d; d=$(ls -d "$WORK"/data/v256-*/ | head -1); d=${d%/}; { tree_sum "$d"; sha256sum < "$d.sha256"; } | sha256sum | cut -c1-16; }
alive() { pgrep -f "$PROC_MARK" >/dev/null; }

# an earlier, honest attempt: its rows and folder are what a probe must not touch
new_submission "$J_TMP/subs/honest" honest "[\"sh\", \"-c\", \"$WM_IN ok 2.0\"]"
run_judge honest honest
[ "$STATUS" = ok ] || fail "honest: $STATUS ($REASON)"
HONEST_DIR=$(json_get "$J_TMP/honest.json" 'j["work_dir"]')
HONEST_ID=$(json_get "$J_TMP/honest.json" 'j["id"]')
[ "$(json_get "$J_TMP/honest.json" 'j["sandbox"]')" = bwrap ] || fail "the honest attempt is not recorded as sandboxed"

# ---- 1, 2, 3, 7, 8: everything a run can try from the inside -------------------------------------------------
probe everything everything
bin_sum=$(sha256sum < "$J_TMP/bin/tempo"); rows=$(db_rows "$HONEST_ID"); other=$(tree_sum "$HONEST_DIR"); data=$(data_sum)
run_judge sandboxed everything
log=$RUN_DIR/stdout.log
[ "$STATUS" = ok ] || fail "everything (sandboxed): $STATUS ($REASON)"
! grep -q '^LEAK' "$log" || fail "sandboxed: $(grep '^LEAK' "$log" | tr '\n' ' ')"
grep -q '^LOOPBACK-OK' "$log" || fail "sandboxed: the sandbox's own loopback does not work: $(cat "$log")"
! grep -qE '^(BINWRITE|DBWRITE|OTHERS|POISON)' "$log" || fail "sandboxed: $(grep -E '^(BINWRITE|DBWRITE|OTHERS|POISON)' "$log")"
[ "$(sha256sum < "$J_TMP/bin/tempo")" = "$bin_sum" ] || fail "sandboxed: \$TEMPO_BIN changed"
[ "$BPB" = 3 ] || [ "$BPB" = 3.0 ] || fail "sandboxed: scored $BPB, not the model's 3.0 (not the judge's own binary?)"
[ "$(db_rows "$HONEST_ID")" = "$rows" ] || fail "sandboxed: earlier leaderboard rows changed"
[ "$(tree_sum "$HONEST_DIR")" = "$other" ] || fail "sandboxed: another attempt's folder changed"
[ "$(data_sum)" = "$data" ] || fail "sandboxed: the training folder or its record changed"
[ ! -s "$J_TMP/listener.log" ] || fail "sandboxed: a connection reached the host: $(cat "$J_TMP/listener.log")"
[ "$(json_get "$J_TMP/sandboxed.json" 'j["sandbox"]')" = bwrap ] || fail "attempt not recorded as sandbox: bwrap"
echo "ok: sandboxed: no route to the validation text or the judge's environment, \$TEMPO_BIN, the leaderboard," \
     "the other attempts and the training data unchanged, no connection out, loopback inside works"

run_judge unsandboxed everything --no-sandbox
log=$RUN_DIR/stdout.log
for route in absolute-path relative-to-TEMPO_BIN proc-cmdline proc-cwd find judge-environment network; do
    grep -q "^LEAK $route" "$log" || fail "--no-sandbox: the $route probe did not work, so its sandboxed check proves nothing"
done
for what in BINWRITE DBWRITE OTHERS POISON; do
    grep -q "^$what" "$log" || fail "--no-sandbox: $what did not happen, so its sandboxed check proves nothing"
done
[ "$(sha256sum < "$J_TMP/bin/tempo")" != "$bin_sum" ] || fail "--no-sandbox: \$TEMPO_BIN unchanged"
[ "$BPB" = 0.0042 ] || fail "--no-sandbox: the replaced binary did not score (bpb $BPB)"
[ "$(db_rows "$HONEST_ID")" != "$rows" ] || fail "--no-sandbox: leaderboard rows unchanged"
[ "$(tree_sum "$HONEST_DIR")" != "$other" ] || fail "--no-sandbox: other attempt unchanged"
[ "$(data_sum)" != "$data" ] || fail "--no-sandbox: training data unchanged"
[ -s "$J_TMP/listener.log" ] || fail "--no-sandbox: no connection reached the host listener"
[ "$(json_get "$J_TMP/unsandboxed.json" 'j["sandbox"]')" = none ] || fail "--no-sandbox attempt not recorded as sandbox: none"
"$TEMPO" leaderboard --db "$DB" --all 2>&1 | grep -q "none (unsandboxed)" ||
    fail "the leaderboard does not show the unsandboxed attempt as such: $("$TEMPO" leaderboard --db "$DB" --all 2>&1)"
echo "ok: --no-sandbox: every one of those attacks works (the checks above are not vacuous)"
hostile_tempo "$J_TMP/bin/tempo"   # restore what the unsandboxed probe broke
rm -rf "$WORK/data"             # and the poisoned training folder (rebuilt by the next attempt)
: > "$J_TMP/listener.log"

# ---- 4, 5: the deadline's model, and no process left --------------------------------------------------------
probe deadline deadline
run_judge deadline deadline --budget 3s
[ "$STATUS" = over_budget ] || fail "deadline: $STATUS ($REASON)"
[ "$BPB" = 4.386 ] || fail "deadline (sandboxed): scored $BPB, not the deadline's model 4.386"
! alive || fail "deadline (sandboxed): a setsid child outlived the run"
echo "ok: sandboxed: the deadline's model is scored (4.386), its setsid writer is gone"
run_judge deadline-open deadline --budget 3s --no-sandbox
alive || fail "--no-sandbox: the setsid child did not outlive the run, so the check above proves nothing"
[ "$BPB" != 4.386 ] || fail "--no-sandbox: the swapped model was not scored, so the check above proves nothing"
cleanup_procs
echo "ok: --no-sandbox: the setsid child outlives the run and the judge scores its model ($BPB)"

probe orphan orphan
run_judge orphan orphan
[ "$STATUS" = ok ] || fail "orphan: $STATUS ($REASON)"
! alive || fail "orphan (sandboxed): a setsid child outlived the command's end"
run_judge orphan-open orphan --no-sandbox
alive || fail "--no-sandbox: no setsid child outlived the command, so the check above proves nothing"
cleanup_procs
echo "ok: when the command ends, its setsid child ends with the sandbox; unsandboxed, it survives"

probe linger linger
for mode in sandboxed open; do
    extra=(); [ $mode = open ] && extra=(--no-sandbox)
    (cd "$J_TMP/secret" && exec "$TEMPO_ABS" judge --submission "$J_TMP/subs/linger" "${J_ARGS[@]}" --budget 60s \
        "${extra[@]}" >/dev/null 2>&1) &
    jpid=$!   # the judge itself (the subshell execs it)
    for _ in $(seq 100); do alive && break; sleep 0.1; done
    alive || fail "linger ($mode): the probe never started"
    sleep 0.3
    kill -9 $jpid; wait $jpid 2>/dev/null
    for _ in $(seq 30); do alive || break; sleep 0.1; done
    if [ $mode = sandboxed ]; then
        ! alive || fail "kill -9 of the judge left the sandboxed submission's processes alive"
    else
        alive || fail "--no-sandbox: nothing outlived kill -9 of the judge, so the check above proves nothing"
        cleanup_procs
    fi
done
echo "ok: kill -9 of the judge ends every process of the sandbox (setsid included); unsandboxed, one survives"

# ---- no sandbox here: refused, nothing recorded, unless --no-sandbox -------------------------------------------
before=$(db_rows 1000000); n_dirs=$(ls "$WORK" | wc -l)
for fake in /nonexistent/bwrap /bin/false; do
    out=$(cd "$J_TMP/secret" && TEMPO_BWRAP=$fake "$TEMPO_ABS" judge --submission "$J_TMP/subs/orphan" "${J_ARGS[@]}" 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "no sandbox ($fake): exit $rc, expected 1: $out"
    line=$(echo "$out" | grep '^tempo: ')
    echo "$line" | grep -q "refusing to run orphan without one (--no-sandbox" || fail "no sandbox ($fake): $out"
    [ "$(echo "$line" | wc -l)" -eq 1 ] || fail "no sandbox: not one line: $out"
done
[ "$(db_rows 1000000)" = "$before" ] || fail "a refused attempt was recorded"
[ "$(ls "$WORK" | wc -l)" = "$n_dirs" ] || fail "a refused attempt left a folder"
(cd "$J_TMP/secret" && TEMPO_BWRAP=/bin/false "$TEMPO_ABS" judge --submission "$J_TMP/subs/everything" "${J_ARGS[@]}" \
    --no-sandbox >"$J_TMP/forced.json" 2>/dev/null) || fail "--no-sandbox without a sandbox: the judge failed"
[ "$(json_get "$J_TMP/forced.json" 'j["sandbox"]')" = none ] || fail "--no-sandbox attempt not recorded as none"
hostile_tempo "$J_TMP/bin/tempo"; rm -rf "$WORK/data"; : > "$J_TMP/listener.log"; cleanup_procs
echo "ok: where no sandbox starts, the judge refuses in one line (exit 1, nothing recorded); --no-sandbox runs it, recorded as none"

# ---- files the judge reads after a run: a fifo and symlinks are refused, never followed or waited on ----------
probe traps traps
t0=$SECONDS
run_judge traps traps
[ "$STATUS" = no_model ] && echo "$REASON" | grep -q "not a regular file" || fail "traps: $STATUS ($REASON)"
[ $((SECONDS - t0)) -lt 60 ] || fail "traps: the judge took $((SECONDS - t0)) s (blocked on the fifo?)"
echo "ok: a fifo result.json, a symlinked metrics.jsonl and model: refused as $STATUS, the judge not blocked"

# ---- 6: limits, each with its verdict; raised, the same probe passes --------------------------------------
probe fork fork 200
run_judge fork fork --max-procs 64
[ "$STATUS" = failed ] && echo "$REASON" | grep -q "^process limit" || fail "fork: $STATUS ($REASON)"
run_judge fork-ok fork --max-procs 1000
[ "$STATUS" = ok ] || fail "fork with --max-procs 1000: $STATUS ($REASON), so the check above proves nothing"
probe disk disk
run_judge disk disk --disk 32M
[ "$STATUS" = failed ] && echo "$REASON" | grep -q "^disk limit" || fail "disk: $STATUS ($REASON)"
run_judge disk-ok disk --disk 1G
[ "$STATUS" = ok ] || fail "disk with --disk 1G: $STATUS ($REASON), so the check above proves nothing"
probe memory memory 1.5
# a minute of budget: touching 1.5 GB of fresh pages took over 10 s on a busy machine (the verdict is the memory's)
run_judge memory memory --memory 1G --budget 60s
[ "$STATUS" = failed ] && echo "$REASON" | grep -q "^memory limit" || fail "memory: $STATUS ($REASON)"
run_judge memory-ok memory --memory 8G --budget 60s
[ "$STATUS" = ok ] || fail "memory with --memory 8G: $STATUS ($REASON), so the check above proves nothing"
echo "ok: process, disk and memory limits: failed with 'process limit', 'disk limit', 'memory limit'; raised, ok"
