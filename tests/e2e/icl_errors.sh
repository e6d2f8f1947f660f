#!/usr/bin/env bash
# icl_errors.sh - bad input to `tempo icl` is a clear error or a counted, reported skip,
# never a crash or a silently wrong score: usage errors (exit 2), a missing model (exit 1),
# a table with an unknown task type or a malformed line (exit 1 naming file:line), an
# unknown --task (exit 2), and a task file with malformed lines, an out-of-range gold, an
# empty choice list, non-UTF-8 text and a continuation longer than the model's context:
# those items are skipped and counted by reason, the rest scored.
source "$(dirname "$0")/icl_common.bash"
M=$(copy_model) || exit 1
expect_error 2 "model RUN_DIR is required" "$TEMPO" icl --tasks "$M/icl"
expect_error 2 "unknown option" "$TEMPO" icl --model "$M/run" --bogus 1
expect_error 2 "^tempo: --limit: -3 is out of range" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --limit -3
# numbers beyond their type (issue 9)
expect_error 2 "^tempo: --limit: 4294967297 is out of range" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --limit 4294967297
expect_error 2 "^tempo: --shots: '1e3' is not an integer" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --shots 1e3
expect_error 2 "^tempo: --seed: 99999999999999999999 is out of range" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --seed 99999999999999999999
expect_error 2 "^tempo: --threads: 4294967297 is out of range \(1 to 1024\)$" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --threads 4294967297
expect_error 2 "^tempo: --threads: 0 is out of range" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --threads 0
expect_error 2 "missing value" "$TEMPO" icl --model "$M/run" --limit
expect_error 1 "nope" "$TEMPO" icl --model "$E2E_TMP/nope" --tasks "$M/icl"
expect_error 2 "no task 'nope'" "$TEMPO" icl --model "$M/run" --tasks "$M/icl" --task nope
expect_error 1 "core_tasks.tsv" "$TEMPO" icl --model "$M/run" --tasks "$E2E_TMP"   # no table
B="$E2E_TMP/bad"
mkdir -p "$B"
hdr=$'label\tfile\ttask_type\tnum_fewshot\tcontinuation_delimiter\trandom_baseline_pct\tpresent\trecords'
printf '%s\nx\tx.jsonl\tcloze\t0\t" "\t25\t1\t1\n' "$hdr" > "$B/core_tasks.tsv"
expect_error 1 "core_tasks.tsv:2: unknown task type 'cloze'" "$TEMPO" icl --model "$M/run" --tasks "$B"
printf '%s\nx\tx.jsonl\tschema\t0\n' "$hdr" > "$B/core_tasks.tsv"
expect_error 1 "core_tasks.tsv:2: 4 tab-separated fields" "$TEMPO" icl --model "$M/run" --tasks "$B"
# a task file with every kind of bad record, plus two good ones per type
printf '%s\nmc\tmc.jsonl\tmultiple_choice\t1\t" "\t25\t1\t0\nlm\tlm.jsonl\tlanguage_modeling\t1\t" "\t0\t1\t0\n' \
    "$hdr" > "$B/core_tasks.tsv"
python3 - "$B" <<'PY'
import sys
d = sys.argv[1]
with open(d + "/mc.jsonl", "wb") as f:
    f.write(b'{"query": "a =", "choices": ["a", "b"], "gold": 0}\n')
    f.write(b'{"query": "b =", "choices": ["a", "b"], "gold": 1\n')               # malformed
    f.write(b'{"query": "b =", "choices": ["a", "b"], "gold": 2}\n')              # gold out of range
    f.write(b'{"query": "b =", "choices": [], "gold": 0}\n')                      # empty choices
    f.write(b'{"query": "\xff\xfe\xfd", "choices": ["a", "b"], "gold": 0}\n')     # not UTF-8
    f.write(b'{"query": "c =", "choices": ["c", "d"], "gold": 0}\n')
with open(d + "/lm.jsonl", "wb") as f:
    f.write(b'{"context": "a =", "continuation": "a"}\n')
    f.write(b'{"context": "b =", "continuation": "' + b"b" * 100 + b'"}\n')     # longer than the context (64)
    f.write(b'{"context": "c =", "continuation": "c"}\n')
PY
"$TEMPO" icl --model "$M/run" --tasks "$B" > "$E2E_TMP/bad.json" 2> "$E2E_TMP/bad.err" \
    || { cat "$E2E_TMP/bad.err"; fail "icl on bad records failed"; }
python3 - "$E2E_TMP/bad.json" <<'PY' || fail "skips not counted as expected"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
t = {x["label"]: x for x in r["tasks"]}
mc, lm = t["mc"], t["lm"]
assert mc["status"] == "ok" and mc["evaluated"] == 2 and mc["records"] == 2, mc
s = mc["skipped"]
assert (s["malformed"], s["gold_out_of_range"], s["too_few_choices"], s["invalid_text"]) == (1, 1, 1, 1), s
assert s["total"] == 4, s
assert mc["first_skip"].endswith("mc.jsonl:2: not JSON (column 50: unterminated object)"), mc["first_skip"]
assert lm["evaluated"] == 2 and lm["skipped"]["continuation_too_long"] == 1, lm
assert "context of 64 tokens" in lm["first_skip"], lm["first_skip"]
assert r["core_entries"] == 2 and r["core_of"] == 2
PY
# every item skipped: the task fails, nothing evaluated -> exit 1 with a clear message
printf '%s\nlm\tlm.jsonl\tlanguage_modeling\t0\t" "\t0\t1\t0\n' "$hdr" > "$B/core_tasks.tsv"
printf '{"context": "b =", "continuation": "%s"}\n' "$(printf 'b%.0s' $(seq 100))" > "$B/lm.jsonl"
expect_error 1 "no task could be evaluated" "$TEMPO" icl --model "$M/run" --tasks "$B"
exit 0
