#!/usr/bin/env bash
# train_mpi.sh - data-parallel training under mpirun (src/parallel/), on 2 ranks of
# this machine: the same losses as one process on the same global batches
# (AdamW and Muon; with the optimizer state sharded too) and bit for bit as one
# process of 2 threads (thread replicas, with and without a mixture prior), the gradient reduced
# inside the backward pass equal to one collective after it, a budget that every rank stops at the same step, a batch
# that does not divide refused in one line, a killed rank ending the job
# (no hang) with the last checkpoint still loading, and resume at 2 ranks
# bit-identical and at 1 rank working. Skips, visibly, only when tempo was
# built without MPI and mpirun is missing (CI installs Open MPI).
source "$(dirname "$0")/train_common.bash"
if ! "$TEMPO" --version | grep -q '^mpi: Open MPI'; then
    command -v mpirun >/dev/null && fail "mpirun is here but tempo was built without MPI (rebuild: make clean; make)"
    echo "SKIP: tempo built without MPI and no mpirun (apt-get install libopenmpi-dev openmpi-bin)"; exit 0
fi
MPIRUN=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
export OMPI_MCA_btl_vader_single_copy_mechanism=none   # containers forbid the CMA syscalls
D=$(tiny_data 512)

# 1. Two ranks on halves of each global batch of 8 = one process on the same 8 (as 2 micro-batches of 4).
#    Differences come only from the order of the two halves' sum: one process adds the second half's
#    gradient into the first's inside the backward pass, MPI adds the two finished halves; a relative
#    1e-6 over 20 steps allows that rounding (measured: 2e-8) and nothing else.
#    With shard_optimizer (ZeRO-1: each rank keeps and updates the optimizer state of its half of the
#    tensors, gradients reduce-scattered, weights all-gathered) the same, within the same tolerance (the
#    gradient norm is now a sum of the two halves' sums of squares: another order of the same sum), and
#    each rank keeps about half the optimizer state of one process.
for opt in adamw muon; do
  for shard in false true; do
    SAME=(--data "$D" --preset tiny-test --steps 20 --no-eval --threads 1 --seed 3 --set batch_size=8
          --set micro_batch=4 --set optimizer="$opt")
    "$TEMPO" train "${SAME[@]}" --out "$E2E_TMP/one-$opt" > /dev/null 2>&1 || fail "1-process run ($opt) failed"
    "${MPIRUN[@]}" "$TEMPO" train "${SAME[@]}" --set shard_optimizer=$shard --out "$E2E_TMP/two-$opt" \
        > "$E2E_TMP/two.out" 2> "$E2E_TMP/two.err" \
        || { cat "$E2E_TMP/two.err" >&2; fail "2-rank run ($opt, shard $shard) failed"; }
    [ "$(grep -c '^{' "$E2E_TMP/two.out")" = 1 ] || fail "2 ranks printed $(grep -c '^{' "$E2E_TMP/two.out") results (rank 0 only)"
    python3 - "$E2E_TMP/one-$opt" "$E2E_TMP/two-$opt" "$opt" "$shard" <<'PY' || fail "2 ranks do not train like 1 process ($opt, shard $shard)"
import json, sys
one, two, opt, shard = sys.argv[1:]
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"train_loss"' in l]
a, b = rows(one), rows(two)
assert len(a) == len(b) == 20, (len(a), len(b))
worst = max(abs(x["train_loss"] - y["train_loss"]) / abs(x["train_loss"]) for x, y in zip(a, b))
assert worst < 1e-6, f"{opt}: worst relative loss difference {worst}"
assert a[0]["train_loss"] == b[0]["train_loss"] or abs(a[0]["train_loss"] - b[0]["train_loss"]) < 1e-6 * a[0]["train_loss"]
r1, r2 = json.load(open(one + "/result.json")), json.load(open(two + "/result.json"))
assert r1["world_size"] == 1 and r2["world_size"] == 2 and r2["ranks_threads"] == 1, (r1, r2)
assert r2["comm_seconds"] > 0 and r1["comm_seconds"] == 0
assert r1["tokens"] == r2["tokens"], (r1["tokens"], r2["tokens"])   # the same global batches
whole = r1["optimizer_state_bytes_per_rank"][0]
per_rank = r2["optimizer_state_bytes_per_rank"]
assert r1["shard_optimizer"] is False and r2["shard_optimizer"] is (shard == "true"), (r1, r2)
assert len(per_rank) == 2 and len(r2["peak_rss_bytes_per_rank"]) == 2 and min(r2["peak_rss_bytes_per_rank"]) > 0
if shard == "true":
    assert sum(per_rank) == whole and max(per_rank) < 0.75 * whole, (per_rank, whole)
else:
    assert per_rank == [whole, whole], (per_rank, whole)
print(f"{opt}, shard {shard}: 20 steps, worst relative loss difference {worst:.2e}; optimizer state per rank {per_rank} of {whole}")
PY
  done
done

# 1b. One process of 2 threads trains each batch as 2 ranks of 1 thread do, bit for bit: its threads each
#     run a replica of the model on half the rows (thread_replicas, the default) and their gradients are
#     averaged as the ranks' all-reduce averages them. With thread_replicas=false the ops share the threads
#     instead: the same figures up to the order of sums (1e-6).
for opt in adamw muon; do
    TR=(--data "$D" --preset tiny-test --steps 12 --no-eval --seed 3 --set batch_size=8 --set optimizer="$opt")
    "$TEMPO" train "${TR[@]}" --threads 2 --out "$E2E_TMP/rep-$opt" > /dev/null 2>&1 || fail "2-thread run ($opt) failed"
    "$TEMPO" train "${TR[@]}" --threads 2 --set thread_replicas=false --out "$E2E_TMP/norep-$opt" > /dev/null 2>&1 \
        || fail "2-thread run without replicas ($opt) failed"
    "${MPIRUN[@]}" "$TEMPO" train "${TR[@]}" --threads 1 --out "$E2E_TMP/ranks-$opt" > /dev/null 2>&1 \
        || fail "2-rank run ($opt) failed"
    python3 - "$E2E_TMP/rep-$opt" "$E2E_TMP/ranks-$opt" "$E2E_TMP/norep-$opt" "$opt" <<'PY' || fail "2 threads do not train like 2 ranks ($opt)"
import json, sys
rep, ranks, norep, opt = sys.argv[1:]
rows = lambda d: [(r["train_loss"], r["grad_norm"]) for r in map(json.loads, open(d + "/metrics.jsonl")) if "train_loss" in r]
a, b, c = rows(rep), rows(ranks), rows(norep)
assert len(a) == len(b) == len(c) == 12, (len(a), len(b), len(c))
assert a == b, f"{opt}: replicas {a[:3]} against ranks {b[:3]}"
worst = max(abs(x[0] - y[0]) / abs(y[0]) for x, y in zip(c, b))
assert worst < 1e-6, f"{opt}: without replicas, worst relative loss difference {worst}"
print(f"{opt}: 2 threads (replicas) = 2 ranks over 12 steps, bit for bit (losses, norms); shared ops within {worst:.1e}")
PY
done

# 1c. The gradient reduced span by span inside the backward pass (overlap_comm, the default: each layer's
#     gradient reduced as soon as it is final) and in one collective after the pass train alike, bit for bit:
#     on 2 ranks every element's sum has the same two addends whichever collective forms it. With and
#     without shard_optimizer (there the spans go to their owners), with 2 micro-batches per rank (the last
#     one's spans take the 1/2 before they leave). The collectives go in pieces (dist.h); with pieces of 777
#     floats (TEMPO_MPI_PIECE_FLOATS: hundreds of pieces a step, cut inside spans and shards) each run
#     trains bit for bit as with whole spans, so the pieces cover every float once.
for shard in false true; do
    OV=(--data "$D" --preset tiny-test --steps 10 --no-eval --threads 1 --seed 5 --set batch_size=8
        --set micro_batch=2 --set shard_optimizer=$shard)
    for ov in true false; do
        "${MPIRUN[@]}" "$TEMPO" train "${OV[@]}" --set overlap_comm=$ov --out "$E2E_TMP/ov-$shard-$ov" \
            > /dev/null 2> "$E2E_TMP/ov.err" || { cat "$E2E_TMP/ov.err" >&2; fail "2-rank run (overlap $ov, shard $shard) failed"; }
        TEMPO_MPI_PIECE_FLOATS=777 "${MPIRUN[@]}" "$TEMPO" train "${OV[@]}" --set overlap_comm=$ov \
            --out "$E2E_TMP/ovp-$shard-$ov" > /dev/null 2> "$E2E_TMP/ov.err" \
            || { cat "$E2E_TMP/ov.err" >&2; fail "2-rank run in pieces (overlap $ov, shard $shard) failed"; }
    done
    python3 - "$E2E_TMP/ov-$shard-true" "$E2E_TMP/ov-$shard-false" "$shard" "$E2E_TMP/ovp-$shard-true" \
        "$E2E_TMP/ovp-$shard-false" <<'PY' || fail "overlapped, blocking and pieced gradient reductions differ (shard $shard)"
import json, sys
a_dir, b_dir, shard, ap_dir, bp_dir = sys.argv[1:]
rows = lambda d: [(r["train_loss"], r["grad_norm"]) for r in map(json.loads, open(d + "/metrics.jsonl")) if "train_loss" in r]
a, b = rows(a_dir), rows(b_dir)
assert len(a) == len(b) == 10 and a == b, (a, b)
assert rows(ap_dir) == a and rows(bp_dir) == b, (rows(ap_dir), rows(bp_dir), a)
ra, rb = json.load(open(a_dir + "/result.json")), json.load(open(b_dir + "/result.json"))
assert ra["overlap_comm"] is True and rb["overlap_comm"] is False, (ra["overlap_comm"], rb["overlap_comm"])
def tensors(d):   # the safetensors data section (the header holds the config, which differs in overlap_comm)
    raw = open(d + "/model.safetensors", "rb").read()
    return raw[8 + int.from_bytes(raw[:8], "little"):]
assert tensors(a_dir) == tensors(b_dir) and len(tensors(a_dir)) > 0
assert tensors(ap_dir) == tensors(a_dir) and tensors(bp_dir) == tensors(b_dir)
print(f"shard {shard}: overlapped = blocking = in pieces of 777 floats over 10 steps, bit for bit (losses, norms, final weights)")
PY
done

# shard_optimizer in one process: nothing to share it with, one line, exit 2
expect_error 2 "shard_optimizer: one process has no ranks to share the optimizer state with" \
    "$TEMPO" train --data "$D" --preset tiny-test --steps 2 --set shard_optimizer=true --out "$E2E_TMP/shard1"

# 1b. The periodic val slices are shared out over the ranks (each runs every other window, the figures
#     summed): a slice after every step (eval_every 1e-6 s) gives one process's figures, to the same 1e-6.
SL=(--data "$D" --preset tiny-test --steps 5 --no-eval --threads 1 --seed 3 --set batch_size=8 --set micro_batch=4
    --set eval_every=1e-6 --set eval_tokens=700)
"$TEMPO" train "${SL[@]}" --out "$E2E_TMP/sl1" > /dev/null 2>&1 || fail "1-process slice run failed"
"${MPIRUN[@]}" "$TEMPO" train "${SL[@]}" --out "$E2E_TMP/sl2" > /dev/null 2> "$E2E_TMP/sl2.err" \
    || { cat "$E2E_TMP/sl2.err" >&2; fail "2-rank slice run failed"; }
python3 - "$E2E_TMP/sl1/metrics.jsonl" "$E2E_TMP/sl2/metrics.jsonl" <<'PY' || fail "2-rank val slices differ from one process's"
import json, sys
sl = lambda p: [json.loads(l)["val_bpb_slice"] for l in open(p) if '"val_bpb_slice"' in l]
a, b = sl(sys.argv[1]), sl(sys.argv[2])
assert len(a) == len(b) == 5, (a, b)
assert all(abs(x - y) < 1e-6 * x for x, y in zip(a, b)), (a, b)
print("val slices on 2 ranks:", b)
PY

# 2. The budget: rank 0's clock stops every rank after the same step, and the job exits 0.
"${MPIRUN[@]}" "$TEMPO" train --data "$D" --preset tiny-test --budget 15s --threads 1 --set batch_size=8 \
    --set eval_every=0 --out "$E2E_TMP/budget" > /dev/null 2> "$E2E_TMP/budget.err" \
    || { cat "$E2E_TMP/budget.err" >&2; fail "2-rank budget run failed"; }
python3 - "$E2E_TMP/budget/result.json" <<'PY' || fail "2-rank budget run did not respect the budget"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["world_size"] == 2 and r["steps"] > 0
assert 10 < r["train_seconds"] <= 15 + max(0.3, r["step_seconds_mean"]) + 1e-9, r["train_seconds"]
PY

# 2b. A hybrid run on 2 ranks: rank 0 builds the memory and fits the mixer, the final evaluation's
#     transformer windows are shared out over the ranks; its val bpb equals one process's tempo eval of
#     the same folder bit for bit (every token's figure comes from one rank; sums in token order).
H=(--data "$D" --preset tiny-test --steps 10 --threads 1 --seed 3 --set batch_size=8 --set memory_order=3
   --set cache_order=6 --set match_length=2 --set mixer_holdout=4096)
"${MPIRUN[@]}" "$TEMPO" train "${H[@]}" --out "$E2E_TMP/hyb" > "$E2E_TMP/hyb.out" 2> "$E2E_TMP/hyb.err" \
    || { cat "$E2E_TMP/hyb.err" >&2; fail "2-rank hybrid run failed"; }
[ -s "$E2E_TMP/hyb/memory.bin" ] && [ -s "$E2E_TMP/hyb/mixer.json" ] || fail "2-rank hybrid run wrote no memory.bin/mixer.json"
"$TEMPO" eval --model "$E2E_TMP/hyb" --data "$D" > "$E2E_TMP/hyb_eval.json" 2>/dev/null || fail "eval of the 2-rank hybrid run failed"
python3 - "$E2E_TMP/hyb/result.json" "$E2E_TMP/hyb_eval.json" <<'PY' || fail "split evaluation differs from one process's"
import json, sys
r = json.load(open(sys.argv[1]))
e = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
assert r["world_size"] == 2 and r["memory_order"] == 3, r
assert r["val_bpb"] == e["bpb"], (r["val_bpb"], e["bpb"])
PY

# 2c. The count memory's build is split over the ranks (each counts its shards, the tables are broadcast
#     from their owners): 2 ranks x 1 thread build the memory of one process with 2 threads, byte for byte.
"$TEMPO" train "${H[@]}" --out "$E2E_TMP/hyb1" --threads 2 > /dev/null 2> "$E2E_TMP/hyb1.err" \
    || { cat "$E2E_TMP/hyb1.err" >&2; fail "1-process hybrid run failed"; }
same_memory "$E2E_TMP/hyb/memory.bin" "$E2E_TMP/hyb1/memory.bin" || fail "the 2-rank count memory differs from one process's"

# 2d. Training inside the mixture (memory_train_weight): every rank keeps the memory it helped build and asks it
#     (leave-one-out) for its own rows' prior, so 2 ranks on halves of each global batch train like one process on
#     the whole batch, within the same 1e-6 as section 1 (the prior is per token: no new rounding). Rank 0 alone
#     writes memory.bin. Stopped at step 5 and resumed, every rank maps the saved memory and the run ends bit for
#     bit as one run straight through.
MW=(--data "$D" --preset tiny-test --steps 10 --no-eval --threads 1 --seed 3 --set batch_size=8 --set micro_batch=4
    --set memory_order=3 --set mixer_holdout=4096 --set memory_train_weight=0.5)
"$TEMPO" train "${MW[@]}" --out "$E2E_TMP/mw1" > /dev/null 2> "$E2E_TMP/mw.err" \
    || { cat "$E2E_TMP/mw.err" >&2; fail "1-process memory_train_weight run failed"; }
"${MPIRUN[@]}" "$TEMPO" train "${MW[@]}" --out "$E2E_TMP/mw2" > /dev/null 2> "$E2E_TMP/mw.err" \
    || { cat "$E2E_TMP/mw.err" >&2; fail "2-rank memory_train_weight run failed"; }
MWT=(--data "$D" --preset tiny-test --steps 10 --no-eval --threads 2 --seed 3 --set batch_size=8
     --set memory_order=3 --set mixer_holdout=4096 --set memory_train_weight=0.5)
"$TEMPO" train "${MWT[@]}" --out "$E2E_TMP/mwt" > /dev/null 2> "$E2E_TMP/mw.err" \
    || { cat "$E2E_TMP/mw.err" >&2; fail "2-thread memory_train_weight run failed"; }
"${MPIRUN[@]}" "$TEMPO" train "${MW[@]}" --out "$E2E_TMP/mw2p" --stop-at-step 5 > /dev/null 2> "$E2E_TMP/mw.err" \
    || { cat "$E2E_TMP/mw.err" >&2; fail "2-rank memory_train_weight partial run failed"; }
"${MPIRUN[@]}" "$TEMPO" train "${MW[@]}" --out "$E2E_TMP/mw2p" --resume > /dev/null 2> "$E2E_TMP/mw.err" \
    || { cat "$E2E_TMP/mw.err" >&2; fail "2-rank memory_train_weight resume failed"; }
cmp "$E2E_TMP/mw2/model.safetensors" "$E2E_TMP/mw2p/model.safetensors" \
    || fail "2-rank memory_train_weight resume is not bit-identical"
python3 - "$E2E_TMP/mw1" "$E2E_TMP/mw2" "$E2E_TMP/mwt" <<'PY' || fail "memory_train_weight: 2 ranks do not train like 1 process"
import json, sys
one, two, threads = sys.argv[1:]
rows = lambda d: [json.loads(l)["train_loss"] for l in open(d + "/metrics.jsonl") if '"train_loss"' in l]
a, b, t = rows(one), rows(two), rows(threads)
assert len(a) == len(b) == len(t) == 10, (len(a), len(b), len(t))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
assert worst < 1e-6, f"worst relative loss difference {worst}"
assert t == b, f"2 threads' replicas (each its rows' prior) {t[:3]} against 2 ranks {b[:3]}"
r2 = json.load(open(two + "/result.json"))
assert r2["world_size"] == 2 and r2["memory_order"] == 3, r2
print(f"memory_train_weight 0.5: 2 ranks = 1 process over 10 steps (worst relative loss difference {worst:.2e}); "
      "= 2 threads, bit for bit")
PY

# 3. Bad input: a batch that does not divide among the ranks, one line from rank 0, exit 2.
out=$("${MPIRUN[@]}" "$TEMPO" train --data "$D" --preset tiny-test --steps 2 --threads 1 --set batch_size=7 \
      --out "$E2E_TMP/bad" 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] || fail "batch_size 7 on 2 ranks: exit $rc, not 2"
[ "$(echo "$out" | grep -c '^tempo:')" = 1 ] || fail "expected one tempo: line, got: $out"
echo "$out" | grep -q "batch_size 7 does not divide among 2 ranks" || fail "unclear error: $out"

# 4. Resume: 2 ranks stopped at step 10 and resumed = 2 ranks straight through, bit for bit; 1 rank resumes it too.
R=(--data "$D" --preset tiny-test --steps 20 --no-eval --threads 1 --seed 5 --set batch_size=8)
"${MPIRUN[@]}" "$TEMPO" train "${R[@]}" --out "$E2E_TMP/full" > /dev/null 2>&1 || fail "2-rank full run failed"
"${MPIRUN[@]}" "$TEMPO" train "${R[@]}" --out "$E2E_TMP/part" --stop-at-step 10 > /dev/null 2>&1 || fail "2-rank partial run failed"
[ "$(json_field "$E2E_TMP/part/result.json" steps)" = 10 ] || fail "2-rank stop-at-step did not stop at 10"
cp -r "$E2E_TMP/part" "$E2E_TMP/part1"
"${MPIRUN[@]}" "$TEMPO" train "${R[@]}" --out "$E2E_TMP/part" --resume > /dev/null 2>&1 || fail "2-rank resume failed"
cmp "$E2E_TMP/full/model.safetensors" "$E2E_TMP/part/model.safetensors" || fail "2-rank resume is not bit-identical"
expect_error 2 "a checkpoint of 2 ranks, resumed on 1: add --resume-other-world" \
    "$TEMPO" train "${R[@]}" --out "$E2E_TMP/part1" --resume
"$TEMPO" train "${R[@]}" --out "$E2E_TMP/part1" --resume-other-world > /dev/null 2>&1 || fail "1-process resume of a 2-rank run failed"
[ "$(json_field "$E2E_TMP/part1/result.json" steps)" = 20 ] || fail "1-process resume did not reach step 20"
# ... and the same with the optimizer state sharded: the checkpoint holds it whole (gathered on rank 0),
# a 2-rank resume takes its halves back bit for bit, one process resumes it whole; the divergence guard
# restores each rank's half of the state.
RS=("${R[@]}" --set shard_optimizer=true)
"${MPIRUN[@]}" "$TEMPO" train "${RS[@]}" --out "$E2E_TMP/sfull" > /dev/null 2>&1 || fail "2-rank sharded run failed"
"${MPIRUN[@]}" "$TEMPO" train "${RS[@]}" --out "$E2E_TMP/spart" --stop-at-step 10 > /dev/null 2>&1 || fail "2-rank sharded partial run failed"
cp -r "$E2E_TMP/spart" "$E2E_TMP/spart1"
"${MPIRUN[@]}" "$TEMPO" train "${RS[@]}" --out "$E2E_TMP/spart" --resume > /dev/null 2>&1 || fail "2-rank sharded resume failed"
cmp "$E2E_TMP/sfull/model.safetensors" "$E2E_TMP/spart/model.safetensors" || fail "2-rank sharded resume is not bit-identical"
python3 - "$E2E_TMP/sfull/checkpoint.safetensors" "$E2E_TMP/spart/checkpoint.safetensors" <<'PY' || fail "sharded optimizer state differs after resume"
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]] for k, v in h.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys() and "optim.m" in a and "optim.v" in a
for k in a:
    assert a[k] == b[k], k
assert any(x != 0 for x in a["optim.v"]), "optim.v all zero"
PY
"$TEMPO" train "${RS[@]}" --out "$E2E_TMP/spart1" --resume-other-world > /dev/null 2>&1 || fail "1-process resume of a sharded run failed"
[ "$(json_field "$E2E_TMP/spart1/result.json" steps)" = 20 ] || fail "1-process resume of a sharded run did not reach step 20"
"${MPIRUN[@]}" "$TEMPO" train "${RS[@]}" --out "$E2E_TMP/snan" --inject-nan-at-step 5 > /dev/null 2>&1 || fail "2-rank sharded run with a NaN failed"
[ "$(json_field "$E2E_TMP/snan/result.json" retries)" = 1 ] && [ "$(json_field "$E2E_TMP/snan/result.json" steps)" = 20 ] \
    || fail "2-rank sharded divergence guard: not one restore and 20 steps"

# 5. tempo bench allreduce: one JSON line per size from rank 0, figures that hold together; one process refuses.
#    The bench checks the sums it timed (exact small integers) and fails if one float is wrong; 9 MB is
#    three pieces of the default 4 MB, and pieces of 1,000 floats cut 1 MB into 263.
"${MPIRUN[@]}" "$TEMPO" bench allreduce --sizes 4K,1M,9M --iters 3 > "$E2E_TMP/ar.json" 2> "$E2E_TMP/ar.err" \
    || { cat "$E2E_TMP/ar.err" >&2; fail "bench allreduce failed"; }
TEMPO_MPI_PIECE_FLOATS=1000 "${MPIRUN[@]}" "$TEMPO" bench allreduce --sizes 1M --iters 1 > /dev/null \
    2> "$E2E_TMP/ar.err" || { cat "$E2E_TMP/ar.err" >&2; fail "bench allreduce in pieces of 1,000 floats failed"; }
TEMPO_MPI_PIECE_FLOATS=0 "${MPIRUN[@]}" "$TEMPO" bench allreduce --sizes 1M > /dev/null 2> "$E2E_TMP/ar.err" \
    && fail "TEMPO_MPI_PIECE_FLOATS=0 was accepted"
grep -q "tempo: TEMPO_MPI_PIECE_FLOATS: 0 is out of range" "$E2E_TMP/ar.err" || fail "TEMPO_MPI_PIECE_FLOATS=0: no one-line error"
python3 - "$E2E_TMP/ar.json" <<'PY' || fail "bench allreduce lines wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["bytes"] for r in rows] == [4096, 1048576, 9437184], rows
for r in rows:
    assert r["ranks"] == 2 and r["seconds"] > 0 and r["memcpy_GBps"] > 0
    # printed rounded: seconds to 1e-9 (+-0.5 ns), GB/s to 3 decimals (+-0.0005); algbw = bytes / seconds
    # within exactly those roundings
    lo = r["bytes"] / (r["seconds"] + 0.5e-9) * 1e-9 - 0.5e-3
    hi = r["bytes"] / (r["seconds"] - 0.5e-9) * 1e-9 + 0.5e-3
    assert lo - 1e-12 <= r["algbw_GBps"] <= hi + 1e-12, r
    assert abs(r["busbw_GBps"] - r["algbw_GBps"]) < 1e-12   # 2(N-1)/N = 1 at N = 2
PY
expect_error 2 "one process has nothing to reduce" "$TEMPO" bench allreduce
# 5b. tempo bench train under mpirun: the ranks' step (each its rows, the all-reduce), then one process with
#     every rank's threads on the same global batch, and the scaling efficiency between them.
"${MPIRUN[@]}" "$TEMPO" bench train --preset tiny-test --steps 2 > "$E2E_TMP/bt.json" 2> "$E2E_TMP/bt.err" \
    || { cat "$E2E_TMP/bt.err" >&2; fail "bench train under mpirun failed"; }
python3 - "$E2E_TMP/bt.json" <<'PY' || fail "bench train under mpirun: lines wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, rows   # rank 0 only: the ranks' line, the one process's, the summary
ranks, one, s = rows
assert ranks["ranks"] == 2 and ranks["threads"] == 1 and 0 < ranks["comm_share"] < 1, ranks
assert one["ranks"] == 1 and one["threads"] == 2 and one["comm_share"] == 0, one
assert s["summary"] and s["ranks"] == 2 and s["one_process_threads"] == 2
assert s["tokens_per_s_ranks"] == ranks["tokens_per_s"] and s["tokens_per_s_one_process"] == one["tokens_per_s"]
assert abs(s["scaling_efficiency"] - ranks["tokens_per_s"] / one["tokens_per_s"]) < 1e-3, s
print("bench train, 2 ranks:", s)
PY
out=$("${MPIRUN[@]}" "$TEMPO" bench train --preset tiny-test --steps 2 --threads 1,2 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && [ "$(echo "$out" | grep -c '^tempo:')" = 1 ] || fail "bench train --threads 1,2 under mpirun: exit $rc: $out"
# any other command under mpirun would run N times over the same files: refused, one line
out=$("${MPIRUN[@]}" "$TEMPO" eval --model "$E2E_TMP/hyb" --data "$D" 2>&1 >/dev/null); rc=$?
[ "$rc" -ne 0 ] || fail "eval under mpirun -np 2 ran"
[ "$(echo "$out" | grep -c '^tempo:')" = 1 ] && echo "$out" | grep -q "eval runs as one process" \
    || fail "eval under mpirun: expected one tempo: line, got: $out"

# 6. A rank killed mid-run ends the whole job non-zero (within 60 s, no hang); the last checkpoint loads.
"${MPIRUN[@]}" "$TEMPO" train --data "$D" --preset tiny-test --budget 60s --threads 1 --set batch_size=8 \
    --set checkpoint_every=1 --set eval_every=0 --out "$E2E_TMP/kill" > /dev/null 2> "$E2E_TMP/kill.err" &
job=$!
for _ in $(seq 200); do [ -f "$E2E_TMP/kill/model.safetensors" ] && break; sleep 0.1; done   # the first periodic save
# then mid-run: three more steps logged after that save
seen=$(grep -c '"train_loss"' "$E2E_TMP/kill/metrics.jsonl" 2>/dev/null)
for _ in $(seq 600); do [ "$(grep -c '"train_loss"' "$E2E_TMP/kill/metrics.jsonl" 2>/dev/null)" -ge $((seen + 3)) ] && break; sleep 0.1; done
victim=$(pgrep -f "train --data $D .*--out $E2E_TMP/kill" | sort -n | tail -n 1)
[ -n "$victim" ] || fail "no rank to kill"
kill -9 "$victim"
for _ in $(seq 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then kill -9 "$job"; fail "the job still ran 60 s after a rank was killed"; fi
wait "$job"; rc=$?
[ "$rc" -ne 0 ] || fail "a killed rank left the job exiting 0"
"$TEMPO" eval --model "$E2E_TMP/kill" --data "$D" > /dev/null 2>&1 \
    || fail "the last checkpoint of the killed job does not load"
exit 0
