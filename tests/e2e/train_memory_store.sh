#!/usr/bin/env bash
# train_memory_store.sh - runs of one data and one setting keep one copy of
# their count memory (issue 33: a default run's memory.bin is 5.45 GB, and a
# sweep of ten filled 55 GB): RUN_DIR/memory.bin is a hard link to
# STORE/<identity>.bin. Every run still builds its own; eval of a run keeps
# working when the others are deleted; an entry no run links is removed by
# the next share, and nothing else in the folder; a damaged entry is
# replaced, never linked; --memory-store none, an unusable store and another
# file system leave the run its own copy, with a reason. An entry read whole (or
# written) once carries a stamp (<identity>.verified: its inode, size and time),
# so the next share does not read it again; an edit in place is still caught.
# A run whose memory the store holds already links it before writing: it
# writes none of its own, and a run trained again into its folder leaves no
# temporary link there.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
S="$E2E_TMP/store"
ARGS=(--preset tiny-test --set mixer_holdout=4096 --threads 2 --no-eval --steps 5 --set checkpoint_every=100000
      --memory-store "$S")
run() {   # run NAME ORDER [more flags]: train into $E2E_TMP/NAME, stderr in NAME.err
    local name=$1 order=$2; shift 2
    "$TEMPO" train --data "$D" "${ARGS[@]}" --set memory_order="$order" --out "$E2E_TMP/$name" "$@" \
        >/dev/null 2>"$E2E_TMP/$name.err" || { cat "$E2E_TMP/$name.err" >&2; fail "run $name failed"; }
}
inode() { stat -c %i "$1"; }
entries() { find "$S" -maxdepth 1 -name '*.bin' | wc -l; }
stamps() { find "$S" -maxdepth 1 -name '*.verified' | wc -l; }

run a 4
run b 4
E=$(json_field "$E2E_TMP/a/result.json" memory_store)
[ -n "$E" ] && [ -f "$E" ] || fail "run a's result.json names no store entry ($E)"
[ "$(json_field "$E2E_TMP/b/result.json" memory_store)" = "$E" ] || fail "runs a and b name different entries"
[ "$(json_field "$E2E_TMP/a/result.json" memory_store_reused)" = False ] || fail "run a says it reused an entry"
[ "$(json_field "$E2E_TMP/b/result.json" memory_store_reused)" = True ] || fail "run b did not reuse run a's entry"
[ "$(inode "$E2E_TMP/a/memory.bin")" = "$(inode "$E")" ] && [ "$(inode "$E2E_TMP/b/memory.bin")" = "$(inode "$E")" ] ||
    fail "the runs' memory.bin are not links to the store's copy"
[ "$(stat -c %h "$E")" = 3 ] || fail "the entry has $(stat -c %h "$E") links, not 3"
[ ! -w "$E" ] || [ "$(id -u)" = 0 ] || fail "the shared copy is writable"
[ "$(stat -c %a "$E")" = 444 ] || fail "the shared copy's mode is $(stat -c %a "$E"), not 444"
grep -q "^count memory: added to the store as $E" "$E2E_TMP/a.err" || { cat "$E2E_TMP/a.err" >&2; fail "run a did not say it added the memory"; }
grep -q "^count memory: the same as $E .*links it, nothing written" "$E2E_TMP/b.err" ||
    { cat "$E2E_TMP/b.err" >&2; fail "run b did not say it linked the store's copy without writing its own"; }
grep -q "nothing written" "$E2E_TMP/a.err" && fail "run a, the first of its memory, says it wrote nothing"
grep -q "^count memory: order 4 over" "$E2E_TMP/b.err" || fail "run b did not build its own memory"
[ "$(json_field "$E2E_TMP/b/result.json" memory_seconds)" != 0 ] || fail "run b charged no build"
[ -f "${E%.bin}.verified" ] || fail "the entry has no stamp"
echo "ok: two runs, one copy ($(stat -c %s "$E") bytes, 3 links), stamped"

# a run trained again into its folder, whose memory.bin is the entry already, leaves no temporary link
# (rename() of two links to one file does nothing: memory.bin.tmp.<pid> stayed beside memory.bin)
run b 4
LEFT=$(cd "$E2E_TMP/b" && ls -d memory.bin.tmp.* 2>/dev/null || true)
[ -z "$LEFT" ] || fail "run b trained again left $LEFT in its folder"
[ "$(stat -c %h "$E")" = 3 ] || fail "after run b again the entry has $(stat -c %h "$E") links, not 3"
echo "ok: a run trained again into its folder leaves no temporary link"

# another setting: another entry
run c 3
[ "$(entries)" = 2 ] || fail "two settings left $(entries) entries, not 2"

# a run's eval works when the run that added the entry is gone, and after the entry itself is
"$TEMPO" eval --model "$E2E_TMP/b" --data "$D" >"$E2E_TMP/b.eval0" 2>&1 || fail "eval of run b failed"
rm -rf "$E2E_TMP/a"
rm -f "$E"
"$TEMPO" eval --model "$E2E_TMP/b" --data "$D" >"$E2E_TMP/b.eval1" 2>&1 || { cat "$E2E_TMP/b.eval1" >&2; fail "eval of run b failed after a and the entry were deleted"; }
[ "$(tail -1 "$E2E_TMP/b.eval0" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["bpb"])')" = \
  "$(tail -1 "$E2E_TMP/b.eval1" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["bpb"])')" ] ||
    fail "run b's bpb changed when the others were deleted"
echo "ok: eval of run b unchanged with run a and the entry deleted"

# entries no run links any more go at the next share; other files in the folder stay
rm -rf "$E2E_TMP/b" "$E2E_TMP/c"
echo keep > "$S/notes.txt"
touch "$S/$(printf 'g%.0s' $(seq 64)).bin"
run d 2
[ "$(entries)" = 2 ] || { ls -l "$S" >&2; fail "the store holds $(entries) .bin files after the prune, not d's and the non-entry"; }
[ -f "$S/notes.txt" ] || fail "the prune removed a file that is not an entry"
grep -q "^count memory: 1 store entry that no run links any more removed" "$E2E_TMP/d.err" ||
    { cat "$E2E_TMP/d.err" >&2; fail "run d did not say it removed c's orphaned entry"; }
ED=$(json_field "$E2E_TMP/d/result.json" memory_store)
[ "$(stamps)" = 1 ] && [ -f "${ED%.bin}.verified" ] || { ls -l "$S" >&2; fail "the stamps of removed entries were left"; }
echo "ok: orphaned entries pruned with their stamps, other files kept"

# a damaged entry is replaced, never linked: run e gets a whole memory, run d keeps its own
cp "$ED" "$E2E_TMP/bad" && chmod u+w "$E2E_TMP/bad"
printf '\x55' | dd of="$E2E_TMP/bad" bs=1 seek=9000 conv=notrunc 2>/dev/null
mv -f "$E2E_TMP/bad" "$ED"
run e 2
grep -q "a damaged copy there replaced" "$E2E_TMP/e.err" || { cat "$E2E_TMP/e.err" >&2; fail "run e did not replace the damaged entry"; }
[ "$(inode "$E2E_TMP/e/memory.bin")" = "$(inode "$ED")" ] || fail "run e's memory.bin is not the new entry"
"$TEMPO" eval --model "$E2E_TMP/e" --data "$D" >/dev/null 2>&1 || fail "eval of run e failed"
"$TEMPO" eval --model "$E2E_TMP/d" --data "$D" >/dev/null 2>&1 || fail "eval of run d failed"
echo "ok: a damaged entry replaced"

# an entry edited in place (the same inode: its stamp's time no longer matches) is read again and replaced
chmod u+w "$ED"
printf '\x55' | dd of="$ED" bs=1 seek=9000 conv=notrunc 2>/dev/null
chmod 444 "$ED"
run f 2
grep -q "a damaged copy there replaced" "$E2E_TMP/f.err" || { cat "$E2E_TMP/f.err" >&2; fail "an entry edited in place was linked"; }
"$TEMPO" eval --model "$E2E_TMP/f" --data "$D" >/dev/null 2>&1 || fail "eval of run f failed"
echo "ok: an entry edited in place replaced"


# the same text prepared again elsewhere (another folder, the sources copied with another mtime) is
# the same data: its run shares run d's entry (the data's id is meta.json's content_id)
mkdir -p "$E2E_TMP/src" && cp "$DATA/tiny/train.txt" "$DATA/tiny/val.txt" "$E2E_TMP/src/" && touch "$E2E_TMP/src/train.txt"
"$TEMPO" prepare --out "$E2E_TMP/d2" --vocab 512 "$E2E_TMP/src/train.txt" --val "$E2E_TMP/src/val.txt" >/dev/null 2>&1 ||
    fail "prepare of the copied text failed"
"$TEMPO" train --data "$E2E_TMP/d2" "${ARGS[@]}" --set memory_order=2 --out "$E2E_TMP/p" >/dev/null 2>"$E2E_TMP/p.err" ||
    { cat "$E2E_TMP/p.err" >&2; fail "run p failed"; }
[ "$(json_field "$E2E_TMP/p/result.json" memory_store)" = "$ED" ] && [ "$(json_field "$E2E_TMP/p/result.json" memory_store_reused)" = True ] ||
    { cat "$E2E_TMP/p.err" >&2; fail "the same text prepared again did not share run d's entry"; }
echo "ok: the same text prepared again shares the entry"

# a resumed run reuses its linked memory.bin
"$TEMPO" train --data "$D" "${ARGS[@]}" --set memory_order=2 --steps 8 --stop-at-step 3 --out "$E2E_TMP/r" \
    >/dev/null 2>&1 || fail "the stopped run failed"
"$TEMPO" train --data "$D" "${ARGS[@]}" --set memory_order=2 --steps 8 --out "$E2E_TMP/r" --resume >/dev/null \
    2>"$E2E_TMP/r.err" || { cat "$E2E_TMP/r.err" >&2; fail "the resume failed"; }
grep -q "^count memory: reusing $E2E_TMP/r/memory.bin" "$E2E_TMP/r.err" || { cat "$E2E_TMP/r.err" >&2; fail "the resume did not reuse its memory"; }

# none: no store; an unusable store: the run's own copy and a reason
run n 2 --memory-store none
[ "$(json_field "$E2E_TMP/n/result.json" memory_store)" = "" ] || fail "--memory-store none shared the memory"
[ "$(stat -c %h "$E2E_TMP/n/memory.bin")" = 1 ] || fail "--memory-store none linked memory.bin"
run u 2 --memory-store "$S/notes.txt/sub"
grep -q "^count memory: not shared, the run keeps its own copy: .*notes.txt" "$E2E_TMP/u.err" ||
    { cat "$E2E_TMP/u.err" >&2; fail "an unusable store was not reported"; }
[ "$(stat -c %h "$E2E_TMP/u/memory.bin")" = 1 ] && [ "$(json_field "$E2E_TMP/u/result.json" memory_store)" = "" ] ||
    fail "an unusable store left a linked memory.bin or a store in result.json"
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$E2E_TMP")" ]; then
    X=$(mktemp -d /dev/shm/tempo-store.XXXXXX)
    run x 2 --memory-store "$X"
    rm -rf "$X"
    grep -q "not shared, the run keeps its own copy: .*another file system" "$E2E_TMP/x.err" ||
        { cat "$E2E_TMP/x.err" >&2; fail "a store on another file system was not reported"; }
    echo "ok: none, an unusable store and another file system keep the run's own copy"
else
    echo "ok: none and an unusable store keep the run's own copy (no second file system to try)"
fi
# an entry whose stamp still matches (damaged in place with its time put back) is not read again: that is
# what the stamp saves; the next load of the memory (eval) finds the damage and says so (last: it
# leaves that entry damaged)
EF=$(json_field "$E2E_TMP/f/result.json" memory_store)
touch -r "$EF" "$E2E_TMP/times"
chmod u+w "$EF"
printf '\x55' | dd of="$EF" bs=1 seek=9000 conv=notrunc 2>/dev/null
chmod 444 "$EF"
touch -r "$E2E_TMP/times" "$EF"
run g 2
grep -q "^count memory: the same as $EF" "$E2E_TMP/g.err" || { cat "$E2E_TMP/g.err" >&2; fail "a stamped entry was read again"; }
"$TEMPO" eval --model "$E2E_TMP/g" --data "$D" >"$E2E_TMP/g.eval" 2>&1 && fail "eval of a damaged memory succeeded"
grep -q "memory.bin: corrupt" "$E2E_TMP/g.eval" || { cat "$E2E_TMP/g.eval" >&2; fail "eval did not name the damaged memory"; }
echo "ok: a stamped entry is not read again; eval finds damage the stamp hid"
echo "ok: train_memory_store"
