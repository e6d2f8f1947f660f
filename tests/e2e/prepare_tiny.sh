#!/usr/bin/env bash
# prepare_tiny.sh - `tempo prepare` on the tiny fixture: all outputs, the
# result JSON as the last stdout line (also in result.json), meta.json
# figures from the fixture README, and the cache (second run reused, --force
# rebuilds to identical files). Run from the repo root with build/tempo built.
set -u
TEMPO=${TEMPO:-build/tempo}
DATA=${TEMPO_DATA:-../shared/data}
tmp=$(mktemp -d /tmp/tempo_e2e_prepare_tiny.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$TEMPO" prepare --out "$tmp/d" --vocab 512 --val "$DATA/tiny/val.txt" "$DATA/tiny/train.txt" \
    >"$tmp/out1" 2>"$tmp/err1" || fail "prepare exited $?: $(cat "$tmp/err1")"
for f in tokenizer.tiktoken train.tok val.tok meta.json result.json; do
    [ -s "$tmp/d/$f" ] || fail "missing $f"
done
ls "$tmp/d" | grep -q '\.tmp\.' && fail "temp files left: $(ls "$tmp/d")"
last=$(tail -n 1 "$tmp/out1")
python3 - "$last" "$tmp/d" <<'PY' || exit 1
import json, sys
r = json.loads(sys.argv[1])
meta = json.load(open(sys.argv[2] + "/meta.json"))
res = json.load(open(sys.argv[2] + "/result.json"))
def need(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
need(r["reused"] is False, "first run reused")
need(res == r, "result.json differs from the stdout line")
need({k: v for k, v in r.items() if k != "reused"} == meta, "stdout JSON differs from meta.json")
need(meta["vocab"] == 512 and meta["total_vocab"] == 513 and meta["sep_id"] == 512, "vocab fields")
need(meta["train"]["documents"] == 77 and meta["train"]["bytes"] == 1008021 - 154, "train figures")
need(meta["val"]["documents"] == 21 and meta["val"]["bytes"] == 115485 - 42, "val figures")
need(meta["sources"][0]["sha256"] == "813b15dfd522a2f22b2842c50f6afc3c0f8ecdfbf37ea83ddae9911ef85f049f", "train sha256")
need(meta["sources"][1]["sha256"] == "3f233d82c47ab3dafacf616be54993a66bb7eace5d227709981355a4f00ccdd3", "val sha256")
need(meta["sources"][1]["role"] == "val", "val role")
# the token files: header fields match meta
import struct
for part in ("train", "val"):
    b = open(sys.argv[2] + "/" + part + ".tok", "rb").read()
    magic, ver, vocab, dtype, hb, nt, nb, nd = struct.unpack("<8sIIIIQQQ", b[:48])
    need(magic == b"TEMPOTOK" and ver == 1 and vocab == 513 and dtype == 2 and hb == 64, part + " header")
    need(nt == meta[part]["tokens"] and nb == meta[part]["bytes"] and nd == meta[part]["documents"], part + " counts")
    need(len(b) == 64 + 2 * nt, part + " size")
# the tokenizer file: tiktoken lines then the special line
lines = open(sys.argv[2] + "/tokenizer.tiktoken").read().split("\n")
need(lines[-1] == "" and lines[-2] == "!special <|sep|> 512" and len(lines) == 514, "tokenizer file shape")
import base64
need(all(base64.b64decode(l.split()[0]) == bytes([i]) for i, l in enumerate(lines[:256])), "byte tokens")
PY

# second run: reused, quickly, same result
"$TEMPO" prepare --out "$tmp/d" --vocab 512 --val "$DATA/tiny/val.txt" "$DATA/tiny/train.txt" \
    >"$tmp/out2" 2>"$tmp/err2" || fail "second run exited $?"
grep -q "reusing" "$tmp/err2" || fail "second run did not say it reused: $(cat "$tmp/err2")"
tail -n 1 "$tmp/out2" | grep -q '"reused":true' || fail "second run result lacks reused:true"

# --force rebuilds, to identical files (deterministic), also with one thread
id1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["content_id"])' "$tmp/d/meta.json")
cp "$tmp/d/train.tok" "$tmp/train1.tok"
cp "$tmp/d/tokenizer.tiktoken" "$tmp/tok1"
"$TEMPO" prepare --out "$tmp/d" --vocab 512 --threads 1 --force --val "$DATA/tiny/val.txt" "$DATA/tiny/train.txt" \
    >"$tmp/out3" 2>"$tmp/err3" || fail "forced run exited $?"
tail -n 1 "$tmp/out3" | grep -q '"reused":false' || fail "--force reused"
cmp -s "$tmp/train1.tok" "$tmp/d/train.tok" || fail "train.tok differs between runs"
cmp -s "$tmp/tok1" "$tmp/d/tokenizer.tiktoken" || fail "tokenizer differs between runs"
# the content id names the text and the options, not where the sources lie or when they were touched:
# the same text copied elsewhere (another path, another mtime) prepares to the same id, another
# vocabulary to another (the trainer's data id: memory.bin and the count-memory store key on it)
mkdir "$tmp/src" && cp "$DATA/tiny/train.txt" "$DATA/tiny/val.txt" "$tmp/src/" && touch -d '2001-01-01' "$tmp/src/train.txt"
"$TEMPO" prepare --out "$tmp/e" --vocab 512 --val "$tmp/src/val.txt" "$tmp/src/train.txt" >/dev/null 2>"$tmp/err4" ||
    fail "prepare of the copied text exited $?: $(cat "$tmp/err4")"
"$TEMPO" prepare --out "$tmp/f" --vocab 256 --val "$tmp/src/val.txt" "$tmp/src/train.txt" >/dev/null 2>"$tmp/err5" ||
    fail "prepare at vocab 256 exited $?: $(cat "$tmp/err5")"
python3 - "$tmp" "$id1" <<'PY' || exit 1
import json, sys
d, e, f = (json.load(open(sys.argv[1] + x + "/meta.json")) for x in ("/d", "/e", "/f"))
assert len(sys.argv[2]) == 64 and d["content_id"] == sys.argv[2], "--force changed the content id"
assert e["content_id"] == d["content_id"], "the same text elsewhere has another content id"
assert e["cache_key"] != d["cache_key"], "the cache key ignored the sources' paths"
assert f["content_id"] != d["content_id"], "another vocabulary has the same content id"
PY
echo "prepare_tiny: ok"
