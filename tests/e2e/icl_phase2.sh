#!/usr/bin/env bash
# icl_phase2.sh - the phase-2 scorecard `tempo eval --model RUN --phase 2`: one JSON object
# with bpb (equal to phase-1 `tempo eval` on the same text), the ICL summary (CORE and every
# task) and the inference figures, under the top-level names the judge reads (core,
# decode_tokens_per_s); the same object in --out DIR/result.json; without a text, bpb is
# null; an empty --tasks (as the judge passes when it has none) means $TEMPO_DATA/icl.
# And `tempo bench infer`, whose figures the scorecard carries: JSON lines (prefill, decode
# per batch, bound) per thread count, the summary last.
source "$(dirname "$0")/icl_common.bash"
M=$(copy_model) || exit 1
"$TEMPO" eval --model "$M/run" --text "$M/val.txt" > "$E2E_TMP/p1.json" 2>/dev/null || fail "phase-1 eval failed"
"$TEMPO" eval --model "$M/run" --phase 2 --text "$M/val.txt" --tasks "$M/icl" --limit 20 --out "$E2E_TMP/p2" \
    > "$E2E_TMP/p2.json" 2> "$E2E_TMP/p2.err" || { cat "$E2E_TMP/p2.err"; fail "phase-2 eval failed"; }
tail -n 1 "$E2E_TMP/p2.json" | cmp -s - "$E2E_TMP/p2/result.json" || fail "stdout last line differs from result.json"
"$TEMPO" eval --model "$M/run" --phase 2 --tasks "" --limit 1 > "$E2E_TMP/p3.json" 2> "$E2E_TMP/p3.err" \
    || { cat "$E2E_TMP/p3.err"; fail "phase-2 eval with the default tasks failed"; }
python3 - "$E2E_TMP/p1.json" "$E2E_TMP/p2/result.json" "$E2E_TMP/p3.json" <<'PY' || fail "scorecard wrong"
import json, sys
p1 = json.loads(open(sys.argv[1]).read().splitlines()[-1])
p2 = json.load(open(sys.argv[2]))
p3 = json.loads(open(sys.argv[3]).read().splitlines()[-1])
assert p2["phase"] == 2 and abs(p2["bpb"] - p1["bpb"]) < 1e-12, (p2["bpb"], p1["bpb"])
assert p2["bpb_detail"]["bytes"] == p1["bytes"]
assert p2["core"] == p2["icl"]["core"] and p2["core_entries"] == 2 and p2["core_of"] == 3, p2["core"]
assert p2["core"] > 0.2, p2["core"]                          # the copy model beats chance
assert len(p2["icl"]["tasks"]) == 4 and p2["icl"]["limit"] == 20
inf = p2["inference"]
assert inf["what"] == "summary" and p2["decode_tokens_per_s"] == inf["decode_tokens_per_s"] > 0, inf
assert p2["prefill_tokens_per_s"] > 0 and p2["time_to_first_token_s"] > 0 and inf["bound_tokens_per_s"] > 0
assert inf["ratio"] > 0 and p2["best_decode_tokens_per_s"] >= p2["decode_tokens_per_s"] * 0.999
assert p3["bpb"] is None and p3["core_of"] == 22, (p3["bpb"], p3["core_of"])   # the real CORE table
print("phase 2: bpb %.4f core %.3f (%s) decode %.0f tok/s (bound %.0f, %s), prefill %.0f tok/s" %
      (p2["bpb"], p2["core"], p2["core_label"], p2["decode_tokens_per_s"], inf["bound_tokens_per_s"],
       inf["bound_kind"], p2["prefill_tokens_per_s"]))
PY
"$TEMPO" bench infer --model "$M/run" --runs 2 --max-batch 4 > "$E2E_TMP/bench.jsonl" 2>/dev/null \
    || fail "bench infer failed"
python3 - "$E2E_TMP/bench.jsonl" <<'PY' || fail "bench infer lines wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
what = [l["what"] for l in lines]
assert what[-1] == "summary" and "prefill" in what and "bound" in what, what
dec = [l for l in lines if l["what"] == "decode"]
assert [d["batch"] for d in dec if d["threads"] == dec[0]["threads"]][:3] == [1, 2, 4], dec
s = lines[-1]
assert s["decode_tokens_per_s"] > 0 and s["prefill_tokens_per_s"] > 0 and s["bound_tokens_per_s"] > 0
assert s["decode_tokens_per_s"] == max(d["tokens_per_s"] for d in dec if d["batch"] == 1)
PY
expect_error 2 "model RUN_DIR is required" "$TEMPO" bench infer --runs 2
expect_error 2 "^tempo: --runs: 0 is out of range" "$TEMPO" bench infer --model "$M/run" --runs 0
expect_error 2 "^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$" "$TEMPO" bench infer --model "$M/run" --threads 4294967297
expect_error 2 "^tempo: --prompt: 99999999999999999999 is out of range" "$TEMPO" bench infer --model "$M/run" --prompt 99999999999999999999
expect_error 2 "--phase 3: expected 1 or 2" "$TEMPO" eval --model "$M/run" --phase 3
expect_error 2 "belong to --phase 2" "$TEMPO" eval --model "$M/run" --text "$M/val.txt" --limit 3
expect_error 2 "exactly one of" "$TEMPO" eval --model "$M/run" --phase 2 --text a --data b
exit 0
