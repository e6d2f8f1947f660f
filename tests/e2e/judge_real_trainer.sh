#!/usr/bin/env bash
# judge_real_trainer.sh - the judge with tempo's own prepare/train/eval on the
# tiny fixture: the training folder it prepares holds no validation text (its
# val.tok is a dev split cut from the training text); a preset submission
# judged twice with the same seed, threads and step cap gives the same bpb to
# the last printed digit; a model whose vocabulary does not match its
# tokenizer is refused by `tempo eval` and recorded as invalid_model; the
# command-form example runs; phase 2 gives the combined score with its parts.
source "$(dirname "$0")/judge_common.bash"
W=$J_TMP/work
# a small validation text (3 short documents of the tiny one, ~8.5 KB) keeps each evaluation short
awk 'BEGIN { RS = "\n\x1e\n"; ORS = "\n\x1e\n" } NR == 2 || NR == 4 || NR == 5' "$DATA/tiny/val.txt" > "$J_TMP/val.txt"
J_ARGS=(--budget 40s --grace 2s --corpus "$DATA/tiny" --val "$J_TMP/val.txt" --db "$J_TMP/lb.sqlite" --work "$W"
        --threads 1 --vocab 256 --memory 8G)
S=$J_TMP/subs
mkdir -p "$S/tiny"
cat > "$S/tiny/manifest.json" <<'JSON'
{"name": "tiny-preset", "authors": ["e2e"], "description": "tiny-test preset, 40 steps", "phase": 1,
 "preset": "tiny-test", "overrides": {"eval_every": 1}, "steps": 40}
JSON

# 1. reproducibility: same seed, threads and step cap => same bpb, to the last printed digit
judge_expect "$S/tiny" ok '^$' --seed 7
cp "$J_TMP/last.json" "$J_TMP/first.json"
printed1=$(grep -o 'seed 7: ok, val bpb [0-9.]*' "$J_TMP/last.err")
judge_expect "$S/tiny" ok '^$' --seed 7
printed2=$(grep -o 'seed 7: ok, val bpb [0-9.]*' "$J_TMP/last.err")
b1=$(json_get "$J_TMP/first.json" 'repr(j["runs"][0]["bpb"])')
b2=$(json_get "$J_TMP/last.json" 'repr(j["runs"][0]["bpb"])')
[ -n "$printed1" ] && [ "$printed1" = "$printed2" ] || fail "printed bpb differs: '$printed1' vs '$printed2'"
[ "$b1" = "$b2" ] || fail "bpb differs between identical judgings: $b1 vs $b2"
steps=$(json_get "$J_TMP/last.json" 'j["runs"][0]["steps"]')
[ "$steps" = 40 ] || fail "the step cap was not applied (steps $steps)"
python3 -c "import sys; b=float(sys.argv[1]); assert 0 < b < 8.5, b" "$b1" || fail "bpb $b1 out of range"
echo "ok: reproducible: $printed1 twice (steps $steps)"

# 2. the training folder handed over: no validation text, val.tok made from a dev split of the training text
D=$(ls -d "$W"/data/v256-* | grep -v '\.sha256$' | head -n 1)
[ -f "$D/train.tok" ] && [ -f "$D/val.tok" ] && [ -f "$D/text/dev.txt" ] || fail "training folder $D incomplete"
awk 'length > 50' "$DATA/tiny/val.txt" | head -n 50 | cut -c1-50 > "$J_TMP/val.lines"
if grep -rqF -f "$J_TMP/val.lines" "$D"; then fail "the training folder holds validation text"; fi
awk 'length > 50' "$D/text/dev.txt" | head -n 5 | cut -c1-50 > "$J_TMP/dev.lines"
[ -s "$J_TMP/dev.lines" ] || fail "empty dev split"
grep -qF -f "$J_TMP/dev.lines" "$DATA/tiny/train.txt" || fail "the dev split does not come from the training text"
if grep -rqF -f "$J_TMP/dev.lines" "$D/text/train"; then fail "dev documents were left in the training text"; fi
val_sha=$(sha256sum "$DATA/tiny/val.txt" | cut -d' ' -f1)
if grep -q "$val_sha" "$D/meta.json"; then fail "meta.json names the validation text"; fi
echo "ok: the training folder holds no validation text; val.tok is a dev split"

# 3. a model whose vocabulary does not match its tokenizer
run_dir=$(json_get "$J_TMP/last.json" 'j["runs"][0]["run_dir"]')
"$TEMPO" prepare --out "$J_TMP/d300" --vocab 300 "$DATA/tiny/train.txt" --val "$J_TMP/val.txt" >/dev/null 2>&1 ||
    fail "prepare --vocab 300"
mkdir -p "$S/mismatch"
python3 - "$run_dir/scored/model.safetensors" "$J_TMP/d300/tokenizer.tiktoken" "$S/mismatch/bad.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"]["tokenizer"] = open(sys.argv[2]).read()
hb = json.dumps(h).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(sys.argv[3], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
python3 tests/e2e/py/safetensors_seal.py "$S/mismatch/bad.safetensors"  # an edit on purpose, not damage
new_submission "$S/mismatch" mismatch '["sh", "-c", "cp bad.safetensors \"$TEMPO_OUT_DIR/model.safetensors\""]'
judge_expect "$S/mismatch" invalid_model '^model.safetensors: tokenizer has 301 ids but the model vocabulary is 257'

# 4. the command-form example, a few steps
judge_expect examples/custom-command ok '^$' --steps 2 --budget 60s

# 5. phase 2: the combined score and its parts (the parts recorded as unavailable when
#    `tempo eval --phase 2` fails is judge_seeds_phase2.sh's, with a fake tempo)
judge_expect "$S/tiny" ok '^$' --phase 2 --seed 7 --icl-limit 2
python3 - "$J_TMP/last.json" "$b1" <<'PY' || fail "phase 2: the combined score and its parts"
import json, math, sys
j = json.loads(open(sys.argv[1]).read().splitlines()[-1])
r = j["runs"][0]
assert repr(r["bpb"]) == sys.argv[2], (r["bpb"], sys.argv[2])
assert r["core"] is not None and r["decode_tokens_per_s"] > 0, r
bpt = r["val_bytes"] / r["val_tokens"]
speed = max(-0.25, min(0.25, 0.05 * math.log2(r["decode_tokens_per_s"] * bpt / 1000)))
want = r["bpb"] - r["core"] - speed
assert abs(r["score"] - want) < 1e-9 and abs(j["score_mean"] - want) < 1e-9, (r["score"], want)
print("phase 2: score %.6f = bpb %.6f - CORE %.4f - speed %.4f" % (want, r["bpb"], r["core"], speed))
PY

"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" --check >/dev/null || fail "leaderboard check"
exit 0
