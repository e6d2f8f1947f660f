#!/usr/bin/env bash
# compress_roundtrip.sh - tempo compress / decompress end to end (issue 34
# item 6: the score, proven by compression). A hybrid run on the tiny fixture
# (count memory, cache, match model, mixer, the learning reader) codes 60 kB
# of the val text: decompress gives the file back byte for byte, and the
# code is `tempo eval --text`'s bits of the same file to within 0.5 % (plus
# the header); compress's own eval figure is eval's. stdin gives the same
# file; bytes that are not UTF-8 come back too. Refused in one line, with no
# output left behind: another model, a truncated file, a changed byte, a
# file that is not compressed, another thread count, an existing output
# without --force, a missing input, bad flags.
source "$(dirname "$0")/train_common.bash"
D=$(tiny_data 512)
HYB=(--set memory_order=4 --set cache_order=3 --set match_length=4 --set mixer_holdout=4096 --set adapt_lr=0.2)
R="$E2E_TMP/run"
"$TEMPO" train --data "$D" --preset tiny-test --steps 30 --threads 2 --seed 5 "${HYB[@]}" --out "$R" \
    > /dev/null 2> "$E2E_TMP/train.err" || { cat "$E2E_TMP/train.err" >&2; fail "training failed"; }
W="$E2E_TMP/w"
mkdir -p "$W"
head -c 60000 "$DATA/tiny/val.txt" > "$W/val.txt"   # documents and the start of one more
"$TEMPO" compress --model "$R" --in "$W/val.txt" --threads 2 > "$W/c.json" 2> "$W/c.err" \
    || { cat "$W/c.err" >&2; fail "compress failed"; }
[ -s "$W/val.txt.tpz" ] || fail "no val.txt.tpz"
mv "$W/val.txt" "$W/orig.txt"
"$TEMPO" decompress --model "$R" --in "$W/val.txt.tpz" > "$W/d.json" 2> "$W/d.err" \
    || { cat "$W/d.err" >&2; fail "decompress failed"; }
cmp "$W/orig.txt" "$W/val.txt" || fail "decompress did not give the text back"
"$TEMPO" eval --model "$R" --text "$W/orig.txt" > "$W/e.json" 2> /dev/null || fail "eval failed"
python3 - "$W/c.json" "$W/d.json" "$W/e.json" "$W/val.txt.tpz" <<'PY' || fail "the code is not eval's bits"
import json, os, sys
c, d, e = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:4])
size = os.path.getsize(sys.argv[4])
assert c["bytes_in"] == 60000 and c["bytes_out"] == size and d["bytes_out"] == 60000, (c, d, size)
assert c["read_as_eval_text"] and c["documents"] == e["documents"] >= 2 and c["tokens"] == e["tokens"] + 1, (c, e)
assert d["verified"] and d["threads"] == 2 and c["threads"] == 2, d   # decompress took the file's thread count
# compress's own eval of the stream is eval's figure; the coded distributions give it too
assert abs(c["eval_bits"] - e["bits"]) <= 1e-9 * e["bits"], (c["eval_bits"], e["bits"])
assert abs(c["ideal_bits"] - e["bits"]) <= 1e-6 * e["bits"], (c["ideal_bits"], e["bits"])
code = 8 * (size - c["header_bytes"])
assert code == c["code_bits"] and e["bits"] <= code <= 1.005 * e["bits"], (code, e["bits"])
print(f"compress: {size} bytes, code {code} bits, eval {e['bits']:.1f} bits (+{100 * (code / e['bits'] - 1):.3f} %), "
      f"{c['ms_per_token']:.2f} ms a token", file=sys.stderr)
PY
# bytes that are not UTF-8 (every value, 0x1E lines among them) come back; stdin gives the same file
python3 -c 'import random, sys; r = random.Random(4); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(3000)) + b"\n\x1e\n\xff")' \
    > "$W/bin"
"$TEMPO" compress --model "$R" --in "$W/bin" > "$W/b.json" 2>/dev/null || fail "compress of binary bytes failed"
"$TEMPO" decompress --model "$R" --in "$W/bin.tpz" --out "$W/bin.back" > /dev/null 2>&1 || fail "decompress of binary failed"
cmp "$W/bin" "$W/bin.back" || fail "binary bytes did not come back"
"$TEMPO" compress --model "$R" --out "$W/stdin.tpz" < "$W/bin" > /dev/null 2>&1 || fail "compress from stdin failed"
cmp "$W/stdin.tpz" "$W/bin.tpz" || fail "compress from stdin differs"
# refusals: one line naming the file, exit 1, no output and no temporary left
O="$W/x.out"
refused() {   # PATTERN cmd...
    expect_error 1 "$@"
    [ ! -e "$O" ] || fail "an output was left after: $*"
    ! ls "$W" | grep -q '\.tmp\.' || fail "a temporary was left after: $*"
}
"$TEMPO" train --data "$D" --preset tiny-test --steps 5 --threads 2 --seed 6 "${HYB[@]}" --out "$E2E_TMP/other" \
    > /dev/null 2>&1 || fail "second training failed"
refused "val.txt.tpz: compressed with another model" "$TEMPO" decompress --model "$E2E_TMP/other" --in "$W/val.txt.tpz" --out "$O"
head -c -9 "$W/bin.tpz" > "$W/cut.tpz"
refused "cut.tpz: truncated" "$TEMPO" decompress --model "$R" --in "$W/cut.tpz" --out "$O"
head -c 100 "$W/val.txt.tpz" > "$W/head.tpz"
refused "head.tpz: truncated" "$TEMPO" decompress --model "$R" --in "$W/head.tpz" --out "$O"
python3 - "$W/bin.tpz" "$W/flip.tpz" "$W/flip_end.tpz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
m = bytearray(b); m[len(b) // 2] ^= 0x20; open(sys.argv[2], "wb").write(m)
m = bytearray(b); m[-1] ^= 0x01; open(sys.argv[3], "wb").write(m)   # the last byte: the tokens may decode the same
PY
refused "flip.tpz: .*damaged" "$TEMPO" decompress --model "$R" --in "$W/flip.tpz" --out "$O"
refused "flip_end.tpz: .*damaged" "$TEMPO" decompress --model "$R" --in "$W/flip_end.tpz" --out "$O"
refused "orig.txt: not a tempo compressed file" "$TEMPO" decompress --model "$R" --in "$W/orig.txt" --out "$O"
refused "val.txt.tpz: compressed with 2 threads.*--threads 2" "$TEMPO" decompress --model "$R" --in "$W/val.txt.tpz" --out "$O" --threads 1
refused "bin: exists \(give --force" "$TEMPO" decompress --model "$R" --in "$W/bin.tpz"
"$TEMPO" decompress --model "$R" --in "$W/bin.tpz" --force > /dev/null 2>&1 || fail "--force did not replace the output"
cmp "$W/bin" "$W/bin.back" || fail "the replaced output differs"
refused "missing: cannot open" "$TEMPO" compress --model "$R" --in "$W/missing" --out "$O"
expect_error 2 "unknown option" "$TEMPO" compress --model "$R" --in "$W/orig.txt" --level 9
expect_error 2 "--model RUN_DIR is required" "$TEMPO" decompress --in "$W/val.txt.tpz"
expect_error 2 "give --out FILE when the input is stdin" "$TEMPO" compress --model "$R"
expect_error 2 "does not end in .tpz" "$TEMPO" decompress --model "$R" --in "$W/orig.txt"
"$TEMPO" compress --help | grep -q "usage: tempo compress" || fail "compress --help"
"$TEMPO" decompress --help | grep -q "usage: tempo decompress" || fail "decompress --help"
echo "compress_roundtrip: ok"
