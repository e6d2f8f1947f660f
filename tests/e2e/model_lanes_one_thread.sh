#!/usr/bin/env bash
# model_lanes_one_thread.sh - the two-lane backward (src/model/model_backward_lanes.c) when its region
# gets one thread after all: under OMP_NUM_THREADS=2 and OMP_THREAD_LIMIT=1, libgomp says two threads
# may run (so the lanes are taken) and gives the region one. The lanes' stages must then run one after
# the other in an order that needs no wait: a stage waiting for the other lane would hang (the
# deadline below fails it), a wrong order would read a gradient before it is there. test_model's
# test_backward_lanes_bits checks the gradients against the serial backward's bits and that the lanes
# ran; the finite-difference checks run through them too.
source "$(dirname "$0")/train_common.bash"
BIN=${TEST_MODEL:-build/tests/test_model}
[ -x "$BIN" ] || fail "$BIN is not built (make build/tests/test_model)"
out=$(OMP_NUM_THREADS=2 OMP_THREAD_LIMIT=1 timeout 300 "$BIN" 2>&1); rc=$?
[ "$rc" -eq 0 ] || { echo "$out" | tail -20 >&2; fail "test_model with one thread in the lanes' region: exit $rc"; }
echo "$out" | grep -q "^test_model: [0-9]* passed, 0 failed" || fail "unexpected summary: $(echo "$out" | tail -1)"
echo "ok: the lanes' one-thread order ($(echo "$out" | tail -1))"
