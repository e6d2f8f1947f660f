#!/usr/bin/env bash
# judge_docs_command.sh - the judge's documented first command works as the
# docs write it: `build/tempo judge --submission examples/baseline --phase 1
# --budget ...` from a repository root, with the default --work (runs/judge)
# and --db (leaderboard.sqlite), both relative to where the judge runs. Every
# path the judge hands to the submission must be absolute: the submission runs
# in its own folder, where a relative path means something else (issue 9: the
# training folder was handed over as runs/judge/data/..., and the baseline
# failed with "train.tok: cannot open"). The "repository root" is a scratch
# copy of its layout (build/tempo, configs, examples) so that the default
# runs/judge and leaderboard.sqlite land there, not in the checkout; the data
# is the tiny fixture and the run is capped at 2 steps to keep it short.
source "$(dirname "$0")/judge_common.bash"
abs_data=$(cd "$DATA" && pwd)
root=$J_TMP/root
mkdir -p "$root/build"
ln -s "$(pwd)/$TEMPO" "$root/build/tempo"
cp -r configs examples "$root/"
awk 'BEGIN { RS = "\n\x1e\n"; ORS = "\n\x1e\n" } NR == 2 || NR == 4' "$abs_data/tiny/val.txt" > "$J_TMP/val.txt"
t0=$SECONDS
(cd "$root" && TEMPO_DATA=$abs_data build/tempo judge --submission examples/baseline --phase 1 --budget 20s \
    --corpus "$abs_data/tiny" --val "$J_TMP/val.txt" --vocab 256 --threads 1 --steps 2 \
    >"$J_TMP/out.json" 2>"$J_TMP/err.log") || { cat "$J_TMP/err.log" >&2; fail "judge exited $?"; }
status=$(json_get "$J_TMP/out.json" 'j["status"]')
reason=$(json_get "$J_TMP/out.json" 'j["reason"]')
[ "$status" = ok ] || { tail -n 5 "$J_TMP/err.log" >&2; fail "baseline: status $status ($reason)"; }
[ -f "$root/leaderboard.sqlite" ] || fail "no leaderboard.sqlite where the judge ran"
run_dir=$(json_get "$J_TMP/out.json" 'j["runs"][0]["run_dir"]')
case $run_dir in "$root"/runs/judge/*|/*/runs/judge/*) ;; *) fail "run folder $run_dir is not under runs/judge";; esac
echo "ok: the documented command, from a repository root with the default --work and --db ($((SECONDS - t0))s)"

# every path in the submission's environment is absolute (same relative --work; the data folder is cached)
new_submission "$root/envdump" envdump '["sh", "-c", "env > \"$TEMPO_OUT_DIR/env.txt\""]'
(cd "$root" && TEMPO_DATA=$abs_data build/tempo judge --submission envdump --budget 20s --corpus "$abs_data/tiny" \
    --val "$J_TMP/val.txt" --vocab 256 --threads 1 >"$J_TMP/out.json" 2>"$J_TMP/err.log") ||
    { cat "$J_TMP/err.log" >&2; fail "judge exited $? on envdump"; }
env_txt=$(json_get "$J_TMP/out.json" 'j["runs"][0]["run_dir"]')/out/env.txt
[ -f "$env_txt" ] || fail "the envdump submission left no env.txt"
n=0
for var in TMPDIR TEMPO_DATA_DIR TEMPO_TRAIN_TEXT TEMPO_OUT_DIR TEMPO_SUBMISSION_DIR TEMPO_BIN; do
    val=$(grep "^$var=" "$env_txt" | cut -d= -f2-)
    [ -n "$val" ] || fail "$var missing from the submission's environment"
    case $val in /*) [ -e "$val" ] || fail "$var=$val does not exist";; *) fail "$var=$val is not absolute";; esac
    n=$((n + 1))
done
echo "ok: the $n paths handed to the submission are absolute and exist"
