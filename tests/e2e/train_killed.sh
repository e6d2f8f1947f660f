#!/usr/bin/env bash
# train_killed.sh - `tempo train` killed with -9 while it writes memory.bin
# leaves RUN_DIR/memory.bin.tmp.<pid> behind (nothing can remove it then: at
# the default scale 5.45 GB); the next train in the folder, and a --resume,
# remove the temporaries of dead processes and say how many, and leave a
# live process's alone (issue 31: 4 of 14 kills left memory.bin.tmp or
# checkpoint.safetensors.tmp files). A few seconds on the tiny fixture.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
R="$E2E_TMP/run"
ARGS=(--data "$D" --preset tiny-test --set memory_order=5 --set mixer_holdout=4096 --threads 2 --no-eval --out "$R")
temps() { ls "$R" | grep '\.tmp\.' | sort; }
dead_pid() { sh -c 'exit 0' & local p=$!; wait $p; echo $p; }

# a run killed while memory.bin's temporary exists (retry the runs that write it before the look)
caught=0 tries=0
while [ $caught -eq 0 ] && [ $tries -lt 30 ]; do
    tries=$((tries + 1))
    "$TEMPO" train "${ARGS[@]}" --steps 30 >/dev/null 2>&1 &   # $! must be tempo's pid
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        if [ -e "$R/memory.bin.tmp.$pid" ]; then
            kill -9 $pid 2>/dev/null
            break
        fi
    done
    wait $pid 2>/dev/null; status=$?
    # it counts only if the kill landed while the temporary was there
    [ $status -eq 137 ] && [ -e "$R/memory.bin.tmp.$pid" ] && caught=1
done
[ $caught -eq 1 ] || fail "caught no run writing memory.bin in $tries tries"
echo "ok: a run killed mid-write left $(temps | tr '\n' ' ')"

# the next train removes it and a planted dead process's checkpoint temporary, not a live one's
touch "$R/checkpoint.safetensors.tmp.$(dead_pid)" "$R/memory.bin.tmp.$$"
n=$(temps | grep -vc "\.tmp\.$$\$")
"$TEMPO" train "${ARGS[@]}" --steps 30 >/dev/null 2>"$E2E_TMP/err" || fail "train after the kill: $(cat "$E2E_TMP/err")"
grep -q "^removed $n temporary files left in $R by killed runs\$" "$E2E_TMP/err" \
    || fail "no word of removing $n temporaries: $(grep -v step "$E2E_TMP/err")"
[ "$(temps)" = "memory.bin.tmp.$$" ] || fail "temporaries after the next train: $(temps)"
[ -s "$R/memory.bin" ] && [ -s "$R/model.safetensors" ] || fail "the next train did not complete the folder"

# --resume removes them too
touch "$R/checkpoint.safetensors.tmp.$(dead_pid)"
"$TEMPO" train "${ARGS[@]}" --steps 40 --resume >/dev/null 2>"$E2E_TMP/err" || fail "resume: $(cat "$E2E_TMP/err")"
grep -q "^removed 1 temporary file left in $R by killed runs\$" "$E2E_TMP/err" \
    || fail "resume: no word of the removal: $(grep -v step "$E2E_TMP/err")"
[ "$(temps)" = "memory.bin.tmp.$$" ] || fail "temporaries after a resume: $(temps)"
[ "$(json_field "$R/result.json" steps)" = 40 ] || fail "the resumed run did not reach step 40"
echo "ok: train and --resume remove dead processes' temporaries and say so, not a live one's"
exit 0
