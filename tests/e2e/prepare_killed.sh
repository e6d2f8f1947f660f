#!/usr/bin/env bash
# prepare_killed.sh - `tempo prepare` killed with -9 while it writes leaves
# DATA_DIR/NAME.tmp.<pid> behind (nothing can remove them then); the next
# run in the same folder removes those of dead processes and says so, and
# leaves a live process's alone (issue 9: seven kills left seven
# train.tok.tmp.<pid> and seven val.tok.tmp.<pid>). Run from the repo root
# with build/tempo built; a few seconds on the tiny fixture.
set -u
TEMPO=${TEMPO:-build/tempo}
DATA=${TEMPO_DATA:-../shared/data}
tmp=$(mktemp -d /tmp/tempo_e2e_prepare_killed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=$tmp/d
ARGS=(--out "$D" --vocab 512 --val "$DATA/tiny/val.txt" "$DATA/tiny/train.txt")
prep() { "$TEMPO" prepare "${ARGS[@]}" "$@"; }
temps() { ls "$D" | grep '\.tmp\.' | sort; }

prep >/dev/null 2>"$tmp/err" || fail "first prepare: $(cat "$tmp/err")"
# kill runs while their temporaries exist (retry the ones that finish first)
kills=0 tries=0 pids=()
while [ $kills -lt 3 ] && [ $tries -lt 40 ]; do
    tries=$((tries + 1))
    "$TEMPO" prepare "${ARGS[@]}" --force >/dev/null 2>&1 &  # not through prep: $! must be tempo's pid
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        if ls "$D" 2>/dev/null | grep -q "\.tmp\.$pid\$"; then
            kill -9 $pid 2>/dev/null
            break
        fi
    done
    wait $pid 2>/dev/null; status=$?
    # a kill counts only if it landed (killed by SIGKILL) while a temporary of the run was there: on a
    # busy machine the run can finish, or rename its file, between the look and the kill
    if [ $status -eq 137 ] && ls "$D" 2>/dev/null | grep -q "\.tmp\.$pid\$"; then
        kills=$((kills + 1))
        pids+=("$pid")
    fi
done
[ $kills -eq 3 ] || fail "caught only $kills runs mid-write in $tries tries"
left=$(temps)
[ -n "$left" ] || fail "a killed run left no temporary (nothing to test)"
echo "$left" | grep -qv "\.tmp\.${pids[2]}\$" && fail "temporaries of earlier killed runs were left: $left"
echo "ok: 3 runs killed mid-write; only the last one's temporaries are left: $(echo $left)"

# a live process's temporary stays; a dead one's goes, whether the next run rebuilds or reuses
touch "$D/train.tok.tmp.$$"
prep >"$tmp/out" 2>"$tmp/err" || fail "prepare after the kills: $(cat "$tmp/err")"
grep -q 'removed [0-9]* temporary files\? left in .* by killed runs' "$tmp/err" || fail "no word of the removal: $(cat "$tmp/err")"
[ "$(temps)" = "train.tok.tmp.$$" ] || fail "temporaries after a run: $(temps)"
sh -c 'exit 0' &
dead=$!
wait $dead
touch "$D/val.tok.tmp.$dead"
prep >"$tmp/out" 2>"$tmp/err" || fail "reusing prepare: $(cat "$tmp/err")"
grep -q '"reused":true' "$tmp/out" || fail "the folder was not reused: $(tail -n 1 "$tmp/out")"
[ "$(temps)" = "train.tok.tmp.$$" ] || fail "temporaries after a reusing run: $(temps)"
echo "ok: the next run removes dead processes' temporaries (rebuilding or reusing), not a live one's"
exit 0
