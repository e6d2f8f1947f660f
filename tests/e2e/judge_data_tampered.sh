#!/usr/bin/env bash
# judge_data_tampered.sh - the training folder the judge prepares once and
# reuses (WORK/data/v256-KEY/, checked against its record KEY.sha256) is
# never handed over changed: after each kind of tampering (train.tok
# truncated, a byte of val.tok flipped, meta.json edited or deleted, the
# tokenizer replaced, a file added, the record deleted, the record edited to
# hide a replaced tokenizer by listing another file twice, a hash in the
# record changed) the next judging notes what changed, rebuilds the folder,
# and the submission sees exactly the data of the first judging. The
# submission fingerprints what it is handed (the sha256 of train.tok,
# val.tok, the tokenizer and text/, and whether any file says TAMPERED) and
# reports it as its score through a fake `tempo eval`; `tempo prepare` is the
# real one (about a second on the tiny fixture), so each judging is quick.
source "$(dirname "$0")/judge_common.bash"
W=$J_TMP/work
REAL=$(cd "$(dirname "$TEMPO")" && pwd)/$(basename "$TEMPO")
fake_tempo "$J_TMP/fake"
cat > "$J_TMP/tempo" <<SH
#!/bin/sh
[ "\$1" = prepare ] && exec "$REAL" "\$@"
exec "$J_TMP/fake" "\$@"
SH
chmod +x "$J_TMP/tempo"
awk 'BEGIN { RS = "\n\x1e\n"; ORS = "\n\x1e\n" } NR == 2' "$DATA/tiny/val.txt" > "$J_TMP/val.txt"
J_ARGS=(--budget 30s --grace 1s --corpus "$DATA/tiny" --val "$J_TMP/val.txt" --db "$J_TMP/lb.sqlite" --work "$W"
        --threads 1 --vocab 256 --memory 4G --tempo "$J_TMP/tempo")
S=$J_TMP/subs/fp
mkdir -p "$S"
write_model_py "$S/write_model.py"
cat > "$S/fp.sh" <<'SH'
cd "$TEMPO_DATA_DIR" || exit 1
h=$( { sha256sum train.tok val.tok tokenizer.tiktoken; find text -type f | LC_ALL=C sort | xargs sha256sum;
       grep -rl TAMPERED . ; } | sha256sum | cut -c1-8)
cd "$TEMPO_SUBMISSION_DIR" && python3 write_model.py "$TEMPO_OUT_DIR/model.safetensors" ok "1.$(printf %d "0x$h")"
SH
new_submission "$S" fingerprint '["sh", "fp.sh"]'

judge_expect "$S" ok '^$'
b0=$(json_get "$J_TMP/last.json" 'repr(j["runs"][0]["bpb"])')
D=$(ls -d "$W"/data/v256-* | grep -v '\.sha256$' | grep -v '\.log$' | head -n 1)
R=$D.sha256
[ -d "$D" ] && [ -s "$R" ] && [ -f "$D/train.tok" ] || fail "no prepared folder and record under $W/data"
grep -q "rebuilding" "$J_TMP/last.err" && fail "the first judging rebuilt a folder that did not exist"
judge_expect "$S" ok '^$'
grep -q "rebuilding" "$J_TMP/last.err" && fail "an untouched folder was rebuilt: $(grep rebuilding "$J_TMP/last.err")"
[ "$(json_get "$J_TMP/last.json" 'repr(j["runs"][0]["bpb"])')" = "$b0" ] || fail "an untouched folder reads differently"
echo "ok: prepared once, reused untouched (fingerprint $b0)"

writable() { chmod u+w "$@"; }

# after_tamper WHAT NOTE_REGEX: judge again; the note names the change, the folder
# matches its record (and nothing else is in it), no file says TAMPERED, and the
# submission saw the data of the first judging
after_tamper() {
    judge_expect "$S" ok '^$'
    grep -Eq "rebuilding the training folder: .*$2" "$J_TMP/last.err" ||
        { cat "$J_TMP/last.err" >&2; fail "$1: no note /$2/"; }
    (cd "$D" && sha256sum --quiet -c "$R") || fail "$1: the folder does not match its record"
    diff <(cd "$D" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) <(cut -c67- "$R" | LC_ALL=C sort) >/dev/null ||
        fail "$1: the folder holds files its record does not list"
    if grep -rq TAMPERED "$D"; then fail "$1: a tampered file is still there"; fi
    local b
    b=$(json_get "$J_TMP/last.json" 'repr(j["runs"][0]["bpb"])')
    [ "$b" = "$b0" ] || fail "$1: the submission was handed other data (fingerprint $b, first $b0)"
    echo "ok: $1: noted ($(grep -o 'rebuilding the training folder: .*' "$J_TMP/last.err" | head -n 1 | cut -c1-150)), rebuilt, same data"
}

writable "$D/train.tok"; truncate -s 1000 "$D/train.tok"
after_tamper "train.tok truncated" "train.tok: changed since the judge prepared it"

writable "$D/val.tok"
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(100); b = f.read(1); f.seek(100); f.write(bytes([b[0] ^ 1]))' "$D/val.tok"
after_tamper "a byte of val.tok flipped" "val.tok: changed since"

writable "$D/meta.json"; sed -i 's/"vocab":256/"vocab":255,"note":"TAMPERED"/' "$D/meta.json"
grep -q TAMPERED "$D/meta.json" || fail "the meta.json edit did not apply"
after_tamper "meta.json edited" "meta.json: changed since"

rm -f "$D/meta.json"
after_tamper "meta.json deleted" "meta.json: missing"

writable "$D/tokenizer.tiktoken"; { echo "VEFNUEVSRUQ= 0"; tail -n +2 "$D/tokenizer.tiktoken"; } > "$J_TMP/tok"
cat "$J_TMP/tok" > "$D/tokenizer.tiktoken"   # base64 of TAMPERED, in place of the first piece
after_tamper "tokenizer replaced" "tokenizer.tiktoken: changed since"

echo "TAMPERED: the validation text" > "$D/text/val.txt"
after_tamper "a file added" "text/val.txt: not prepared by the judge"

rm -f "$R"
after_tamper "the record deleted" "no record of its files"

# the record edited to match a replaced tokenizer: listing another file twice kept the count right
writable "$D/tokenizer.tiktoken"; echo "VEFNUEVSRUQ= 0" > "$D/tokenizer.tiktoken"
chmod u+w "$R"
python3 - "$R" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
dup = next(l for l in lines if l.endswith("  train.tok"))
lines = [dup if l.endswith("  tokenizer.tiktoken") else l for l in lines]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
after_tamper "the record edited to hide a replaced tokenizer" "train.tok listed twice"

chmod u+w "$R"; sed -i '1s/^./x/' "$R"
after_tamper "a hash in the record changed" "changed since the judge prepared it"

# a changed folder the judge cannot remove is refused, not used (root removes it anyway)
if [ "$(id -u)" != 0 ]; then
    writable "$D/train.tok"; truncate -s 1000 "$D/train.tok"; chmod a-w "$D/text/train"
    "$TEMPO" judge --submission "$S" "${J_ARGS[@]}" >"$J_TMP/last.json" 2>"$J_TMP/last.err"
    rc=$?
    chmod u+w "$D/text/train"
    [ "$rc" = 1 ] || fail "a folder that cannot be removed: judge exited $rc, expected 1"
    grep -q "train.tok: changed since the judge prepared it.*cannot be removed" "$J_TMP/last.err" ||
        { cat "$J_TMP/last.err" >&2; fail "a folder that cannot be removed: no clear error"; }
    echo "ok: a changed folder that cannot be removed is refused"
else
    echo "PART SKIPPED: a folder that cannot be removed: running as root, which removes it anyway"
fi
exit 0
