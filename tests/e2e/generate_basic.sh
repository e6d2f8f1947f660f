#!/usr/bin/env bash
# generate_basic.sh - `tempo generate` on the copy model: the streamed text on stdout is
# exactly the JSON line's "text"; greedy is deterministic and continues the copy pattern;
# a seed repeats its sample and another seed differs; the token limit holds; a prompt
# longer than the context is cut (and said so); a full context stops generation; bad
# options are usage errors.
source "$(dirname "$0")/icl_common.bash"
M=$(copy_model) || exit 1
R="$M/run"
gen() { "$TEMPO" generate --model "$R" "$@"; }
gen --prompt $'k = k\n\nb = b\n\nm =' --tokens 12 --temperature 0 > "$E2E_TMP/g1.out" 2>/dev/null || fail "greedy failed"
gen --prompt $'k = k\n\nb = b\n\nm =' --tokens 12 --temperature 0 > "$E2E_TMP/g2.out" 2>/dev/null || fail "greedy failed"
gen --prompt 'a = a' --tokens 40 --seed 5 > "$E2E_TMP/s1.out" 2>/dev/null || fail "sampling failed"
gen --prompt 'a = a' --tokens 40 --seed 5 > "$E2E_TMP/s2.out" 2>/dev/null || fail "sampling failed"
gen --prompt 'a = a' --tokens 40 --seed 6 --temperature 1.5 --top-k 8 --top-p 0.95 > "$E2E_TMP/s3.out" 2>/dev/null \
    || fail "sampling with top-k/top-p failed"
long=$(printf 'q = q\n\n%.0s' $(seq 30))
gen --prompt "$long" --tokens 10 --temperature 0 > "$E2E_TMP/l.out" 2> "$E2E_TMP/l.err" || fail "long prompt failed"
grep -q "prompt cut" "$E2E_TMP/l.err" || fail "no note that the prompt was cut"
gen --prompt "$long" --tokens 1000 --no-stop > "$E2E_TMP/c.out" 2>/dev/null || fail "long generation failed"
python3 - "$E2E_TMP" <<'PY' || fail "generate output wrong"
import json, sys
d = sys.argv[1]
def read(name):
    raw = open(f"{d}/{name}", "rb").read().decode("utf-8", "replace")
    head, _, last = raw.rstrip("\n").rpartition("\n")
    return head, json.loads(last)
text, j = read("g1.out")
assert (text, j["text"]) == read("g2.out")[0:1] + (read("g2.out")[1]["text"],), "greedy is not deterministic"
assert text == j["text"], (text, j["text"])            # stdout streamed exactly the generated text
assert j["new_tokens"] == 12 and j["stop"] == "tokens" and j["temperature"] == 0, j
assert j["prompt_tokens"] == 1 + len("k = k\n\nb = b\n\nm ="), j    # separator + bytes (vocab 256)
print("greedy after 'm =':", repr(j["text"]))
a, b, c = (read(n)[1] for n in ("s1.out", "s2.out", "s3.out"))
assert a["text"] == b["text"] and a["text"] != c["text"], (a["text"], c["text"])
assert a["new_tokens"] <= 40 and a["stop"] in ("tokens", "separator"), a
l = read("l.out")[1]
assert l["prompt_cut"] > 0 and l["prompt_tokens"] == 64 - 10, l   # room left for the 10 new tokens
cj = read("c.out")[1]
assert cj["stop"] == "context" and cj["prompt_tokens"] + cj["new_tokens"] == 64 + 1, cj
PY
expect_error 2 "model RUN_DIR is required" "$TEMPO" generate --prompt x
expect_error 2 "^tempo: --top-p: 0 is out of range \(above 0 to 1\)$" "$TEMPO" generate --model "$R" --top-p 0
expect_error 2 "^tempo: --top-p: 1.5 is out of range" "$TEMPO" generate --model "$R" --top-p 1.5
expect_error 2 "^tempo: --temperature: -1 is out of range" "$TEMPO" generate --model "$R" --temperature -1
expect_error 2 "^tempo: --tokens: 0 is out of range" "$TEMPO" generate --model "$R" --tokens 0
expect_error 2 "^tempo: --tokens: '2.5' is not an integer" "$TEMPO" generate --model "$R" --tokens 2.5
# numbers beyond their type (issue 9)
expect_error 2 "^tempo: --tokens: 99999999999999999999 is out of range" "$TEMPO" generate --model "$R" --tokens 99999999999999999999
expect_error 2 "^tempo: --temperature: 'nan' is not a number" "$TEMPO" generate --model "$R" --temperature nan
expect_error 2 "^tempo: --temperature: 1e999 is out of range" "$TEMPO" generate --model "$R" --temperature 1e999
expect_error 2 "^tempo: --top-k: 4294967297 is out of range" "$TEMPO" generate --model "$R" --top-k 4294967297
expect_error 2 "^tempo: --seed: 9007199254740993 is out of range" "$TEMPO" generate --model "$R" --seed 9007199254740993
expect_error 2 "^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$" "$TEMPO" generate --model "$R" --threads 4294967297
expect_error 2 "unknown option" "$TEMPO" generate --model "$R" --frobnicate
expect_error 1 "nope" "$TEMPO" generate --model "$E2E_TMP/nope"
exit 0
