#!/usr/bin/env bash
# bench_scale.sh - `tempo bench scale`, the projection of a preset's step over
# 1-1,024 data-parallel ranks (plan/comm_model.h): the rows it promises
# (strong scaling while the global batch divides, weak to --max-ranks, each
# with and without the sharded optimizer and the overlap), the model's
# invariants on them, a measured --step-ms taken as the one-rank step,
# --link presets, and bad input as one line. The formulas themselves are
# proved in tests/unit/test_comm_model.c.
source "$(dirname "$0")/train_common.bash"
"$TEMPO" bench scale > "$E2E_TMP/default.jsonl" 2> "$E2E_TMP/default.err" || fail "bench scale failed: $(cat "$E2E_TMP/default.err")"
"$TEMPO" bench scale --link 25gbe --step-ms 500 --max-ranks 64 > "$E2E_TMP/slow.jsonl" 2>/dev/null || fail "bench scale --link 25gbe failed"
"$TEMPO" bench scale --link nvlink --preset cpu-d512 --max-ranks 8 > "$E2E_TMP/nv.jsonl" 2>/dev/null || fail "bench scale --link nvlink failed"
python3 - "$E2E_TMP" <<'PY' || fail "bench scale's rows are wrong"
import json, sys
d = sys.argv[1]
load = lambda f: [json.loads(l) for l in open(f"{d}/{f}")]
rows = load("default.jsonl")
strong = [r for r in rows if r["scaling"] == "strong"]
weak = [r for r in rows if r["scaling"] == "weak"]
# cpu-default's batch of 16 splits over 1, 2, 4, 8, 16 ranks; weak scaling goes to 1024
assert sorted({r["ranks"] for r in strong}) == [1, 2, 4, 8, 16], sorted({r["ranks"] for r in strong})
assert sorted({r["ranks"] for r in weak}) == [2 ** k for k in range(11)]
assert len(rows) == 4 * (5 + 11)
for r in rows:
    assert r["step_source"] == "model" and r["exposed_comm_ms"] <= r["comm_ms"] + 1e-9, r
    if r["ranks"] == 1:
        assert r["comm_ms"] == 0 and r["efficiency"] == 1, r
key = lambda r: (r["scaling"], r["ranks"], r["sharded"])
by = {}
for r in rows:
    by.setdefault(key(r), {})[r["overlap"]] = r
for k, pair in by.items():
    if k[1] > 1:   # the overlap hides some of the reduction, never adds
        assert pair[True]["exposed_comm_ms"] < pair[False]["exposed_comm_ms"], (k, pair)
        assert pair[True]["comm_ms"] == pair[False]["comm_ms"], (k, pair)
for (s, n, sh), pair in by.items():
    if sh and n > 1:   # the sharded update is 1/N of the whole
        whole = by[(s, n, False)][False]["optimizer_ms"]
        assert abs(pair[False]["optimizer_ms"] - whole / n) < 1e-3 * whole, (s, n, pair)
# weak scaling: more ranks, more to reduce and more latency steps, never less
w = sorted((r for r in weak if not r["sharded"] and not r["overlap"]), key=lambda r: r["ranks"])
assert all(a["comm_ms"] < b["comm_ms"] for a, b in zip(w[1:], w[2:])), [r["comm_ms"] for r in w]
# a measured one-rank step is taken as it is
slow = load("slow.jsonl")
one = [r for r in slow if r["ranks"] == 1]
assert all(abs(r["step_ms"] - 500) < 1e-3 and r["step_source"] == "measured" for r in one), one
assert "3.125 GB/s" in slow[0]["link"] or "25" in slow[0]["link"], slow[0]["link"]
# a slower link: more communication than the chip's own link at the same ranks
fast2 = [r for r in rows if r["scaling"] == "weak" and r["ranks"] == 64 and not r["sharded"] and not r["overlap"]][0]
slow2 = [r for r in slow if r["scaling"] == "weak" and r["ranks"] == 64 and not r["sharded"] and not r["overlap"]][0]
assert slow2["comm_ms"] > fast2["comm_ms"], (slow2, fast2)
nv = load("nv.jsonl")
assert max(r["ranks"] for r in nv) == 8 and all(r["efficiency"] > 0 for r in nv)
print("bench scale:", len(rows), "rows; 2 ranks strong, overlapped:",
      [r["efficiency"] for r in strong if r["ranks"] == 2 and not r["sharded"] and r["overlap"]])
PY
grep -q "one rank .* ms a step (the chip model)" "$E2E_TMP/default.err" || fail "no summary line: $(cat "$E2E_TMP/default.err")"

# bad input: one line, exit 2 (1 for a preset that is not there)
expect_error 2 "link 'fast'" "$TEMPO" bench scale --link fast
expect_error 2 "link '10:'" "$TEMPO" bench scale --link 10:
expect_error 2 "step-ms" "$TEMPO" bench scale --step-ms -5
expect_error 2 "max-ranks" "$TEMPO" bench scale --max-ranks 0
expect_error 2 "unknown option" "$TEMPO" bench scale --ranks 2
expect_error 2 "missing value" "$TEMPO" bench scale --link
expect_error 2 "no_such_key" "$TEMPO" bench scale --set no_such_key=1
out=$("$TEMPO" bench scale --preset "$E2E_TMP/nonexistent.conf" 2>&1 >/dev/null); rc=$?
[ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "nonexistent" || fail "missing preset: rc $rc: $out"
echo "bench_scale: ok"
