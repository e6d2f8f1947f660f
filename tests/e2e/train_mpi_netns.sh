#!/usr/bin/env bash
# train_mpi_netns.sh - data-parallel training across "machines", as far as one
# machine allows: two network namespaces joined by a veth pair, one rank in
# each, Open MPI's TCP transport between them (shared memory off), mpirun in
# the first namespace starting the second rank's daemon through a launch
# agent that enters the second namespace (where a real cluster would use
# ssh; docs/distributed.md gives the --hostfile run). It must train like one
# process (the same losses to 1e-6, as train_mpi.sh), the second rank must
# have been launched in the second namespace, and the gradients must have
# crossed the veth. Skips, visibly, where namespaces cannot be made (not
# root, no `ip`, no CAP_SYS_ADMIN) or tempo was built without MPI.
source "$(dirname "$0")/train_common.bash"
skip() { echo "SKIP: $*"; exit 0; }
"$TEMPO" --version | grep -q '^mpi: Open MPI' || skip "tempo built without MPI"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
A=tempo$$a B=tempo$$b
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; rm -rf "$E2E_TMP"; }
trap cleanup EXIT
err=$(ip netns add "$A" 2>&1) || skip "cannot make a network namespace: $err"
ip netns add "$B" || fail "second namespace"
ip link add "tv$$a" type veth peer name "tv$$b" || skip "cannot make a veth pair"
ip link set "tv$$a" netns "$A" && ip link set "tv$$b" netns "$B" &&
    ip -n "$A" addr add 10.231.0.1/24 dev "tv$$a" && ip -n "$B" addr add 10.231.0.2/24 dev "tv$$b" &&
    ip -n "$A" link set "tv$$a" up && ip -n "$B" link set "tv$$b" up &&
    ip -n "$A" link set lo up && ip -n "$B" link set lo up || fail "setting up the veth pair"

# Open MPI's rsh launcher runs: AGENT HOST COMMAND...; this agent runs COMMAND in HOST's namespace.
cat > "$E2E_TMP/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in 10.231.0.1) ns=$A;; 10.231.0.2) ns=$B;; *) echo "agent: unknown host \$host" >&2; exit 1;; esac
echo "launched in \$ns" >> "$E2E_TMP/agent.log"
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
chmod +x "$E2E_TMP/agent.sh"
printf '10.231.0.1 slots=1\n10.231.0.2 slots=1\n' > "$E2E_TMP/hosts"

D=$(tiny_data 512)
SAME=(--data "$D" --preset tiny-test --steps 10 --no-eval --threads 1 --seed 3 --set batch_size=8 --set micro_batch=4)
"$TEMPO" train "${SAME[@]}" --out "$E2E_TMP/one" > /dev/null 2>&1 || fail "1-process run failed"
rx0=$(ip -n "$B" -s link show "tv$$b" | awk 'NR == 4 {print $1}')
timeout 120 ip netns exec "$A" mpirun --allow-run-as-root -np 2 --hostfile "$E2E_TMP/hosts" --map-by node \
    --mca plm_rsh_agent "$E2E_TMP/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.231.0.0/24 --mca oob_tcp_if_include 10.231.0.0/24 \
    "$PWD/$TEMPO" train "${SAME[@]}" --out "$E2E_TMP/two" > "$E2E_TMP/two.out" 2> "$E2E_TMP/two.err" \
    || { tail -20 "$E2E_TMP/two.err" >&2; fail "the 2-namespace run failed (or passed 120 s)"; }
rx1=$(ip -n "$B" -s link show "tv$$b" | awk 'NR == 4 {print $1}')
grep -qx "launched in $B" "$E2E_TMP/agent.log" 2>/dev/null || fail "the second rank was not launched in $B"
python3 - "$E2E_TMP/one" "$E2E_TMP/two" "$rx0" "$rx1" <<'PY' || fail "2 namespaces do not train like 1 process"
import json, sys
one, two, rx0, rx1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = lambda d: [json.loads(l)["train_loss"] for l in open(d + "/metrics.jsonl") if '"train_loss"' in l]
a, b = rows(one), rows(two)
assert len(a) == len(b) == 10, (len(a), len(b))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
assert worst < 1e-6, worst
r = json.load(open(two + "/result.json"))
assert r["world_size"] == 2 and r["comm_seconds"] > 0, r
# each step's all-reduce brings rank 1 at least half the fp32 gradient (the model's weights' bytes)
raw = open(two + "/model.safetensors", "rb").read()
weights = len(raw) - 8 - int.from_bytes(raw[:8], "little")
got = rx1 - rx0
assert got > 10 * weights / 2, f"only {got} bytes crossed the veth; a gradient is {weights}"
print(f"2 namespaces over TCP: 10 steps, worst relative loss difference {worst:.1e}, {got / 1e6:.1f} MB over the veth")
PY
echo "train_mpi_netns: ok"
