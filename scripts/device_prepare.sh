#!/usr/bin/env bash
# device_prepare.sh - builds, on the project's machine, what one call of the
# device tool carries for scripts/device_check.sh, so that the call spends its
# minutes on the GPU and none on building or preparing, then prints the call.
#   devbin/   build/tempo and build/tests/test_cuda_device of the working tree
#             (its uncommitted changes included), built in a scratch copy
#             without MPI: the GPU machine has no Open MPI, and installs nothing;
#   devdata/  corpus1/, the first 24 MB of train-000 and the first 1 MB of val
#             prepared (vocab 4096), and val_small.txt, val's first 32 kB: what
#             stage 3 trains on and evaluates.
# Both folders are added to .git/info/exclude (they must not be committed) and
# together stay far below the tool's 64 MiB a call. Data from $TEMPO_DATA
# (default ../shared/data). Re-running rebuilds the binaries and keeps devdata.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${TEMPO_DATA:-../shared/data}
for f in "$data/corpus/train-000.txt.xz" "$data/corpus/val.txt.xz"; do
    [ -f "$f" ] || { echo "device_prepare: $f: no such file (set TEMPO_DATA)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tempo-devprep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "device_prepare: building the working tree without MPI in $tmp" >&2
tree=$(git stash create)   # the working tree's tracked changes as a commit; empty when clean
git archive "${tree:-HEAD}" | tar -x -C "$tmp"
make -s -C "$tmp" -j"$(nproc 2>/dev/null || echo 2)" MPI=0 build/tempo build/tests/test_cuda_device >&2
mkdir -p devbin
cp "$tmp/build/tempo" "$tmp/build/tests/test_cuda_device" devbin/
devbin/tempo --version >&2

if [ ! -f devdata/corpus1/train.tok ] || [ ! -f devdata/val_small.txt ]; then
    echo "device_prepare: preparing devdata/corpus1 (a slice of the corpus)" >&2
    mkdir -p devdata "$tmp/text"
    # the first bytes of a file: xz stopped by head's exit (SIGPIPE, 141) is expected, any other failure is not
    first() {
        local rc=0
        xz -dc "$1" | head -c "$2" >"$3" || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 141 ] || { echo "device_prepare: $1: cannot decompress (xz exit $rc)" >&2; exit 1; }
        [ -s "$3" ] || { echo "device_prepare: $1: no text" >&2; exit 1; }
    }
    first "$data/corpus/train-000.txt.xz" 24000000 "$tmp/text/train.txt"
    first "$data/corpus/val.txt.xz" 1000000 "$tmp/text/val.txt"
    first "$data/corpus/val.txt.xz" 32000 devdata/val_small.txt.tmp
    rm -rf devdata/corpus1
    devbin/tempo prepare --out devdata/corpus1 --vocab 4096 "$tmp/text/train.txt" --val "$tmp/text/val.txt" >/dev/null
    mv devdata/val_small.txt.tmp devdata/val_small.txt
fi

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for p in /devbin/ /devdata/; do
    grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >>"$exclude"
done
du -sh devbin devdata >&2
cat <<'EOF'
The device call (run, one call, timeout_s 560; STAGES="2 3" or "4 5" for a short one; STAGES=6, timeout_s 300,
  trains the planner's plan in a second call):
  carry:   ["devbin", "devdata"]
  command: mkdir -p build/tests && cp devbin/tempo build/tempo && cp devbin/test_cuda_device build/tests/ && bash scripts/device_check.sh $OUT/dc
EOF
