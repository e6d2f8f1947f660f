#!/usr/bin/env bash
# source_layers.sh - the layers of src/ point one way: every `#include "folder/..."`
# line of a file in src/FOLDER names FOLDER itself or a folder of a lower rank
# in docs/architecture.md's layer table, and every folder of src/ is in that
# table. The check is shown able to fail: a copy of the tree with one include
# pointing up, and one with a folder the table lacks, must be refused.
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }

# check SRC_ROOT TABLE_FILE: prints each violation, exit 1 when there is one
check() {
    local root=$1 table=$2
    python3 - "$root" "$table" <<'EOF'
import os, re, sys
root, table = sys.argv[1], sys.argv[2]
rank = {}
for line in open(table, encoding="utf-8"):
    m = re.match(r"^\|\s*(\d+)\s*\|\s*`([a-z_]+)/`\s*\|", line)
    if m:
        rank[m.group(2)] = int(m.group(1))
if len(rank) < 5:
    print(f"{table}: no layer table found"); sys.exit(1)
bad = 0
folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
for d in folders:
    if d not in rank:
        print(f"src/{d}/: not in the layer table of {table}"); bad += 1
for d in folders:
    for dirpath, _, files in os.walk(os.path.join(root, d)):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".cu", ".cpp", ".def")):
                continue
            path = os.path.join(dirpath, f)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                if not m or m.group(1) == d:
                    continue
                to = m.group(1)
                if to not in rank:
                    print(f"{path}:{n}: includes {to}/, a folder the table does not list"); bad += 1
                elif d in rank and rank[to] > rank[d]:
                    print(f"{path}:{n}: {d}/ (rank {rank[d]}) includes {to}/ (rank {rank[to]}): a higher layer"); bad += 1
sys.exit(1 if bad else 0)
EOF
}

out=$(check src docs/architecture.md) || { echo "$out"; fail "an include points up a layer (docs/architecture.md, Layers)"; }
n=$(grep -rhoE '^\s*#\s*include "[a-z_]+/' src | wc -l)
echo "ok: $n include lines of src/ point down or sideways"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r src "$tmp/src"
echo '#include "cli/cli.h"' >>"$tmp/src/core/error.h"
out=$(check "$tmp/src" docs/architecture.md) && fail "an include of cli/ from core/ was not refused"
echo "$out" | grep -q 'core/ (rank 1) includes cli/' || fail "the refusal did not name the upward include: $out"
echo "ok: an upward include is refused: $out"

rm -rf "$tmp/src"; cp -r src "$tmp/src"; mkdir "$tmp/src/newlayer"
out=$(check "$tmp/src" docs/architecture.md) && fail "a folder missing from the table was not refused"
echo "$out" | grep -q 'src/newlayer/: not in the layer table' || fail "the refusal did not name the folder: $out"
echo "ok: a folder the table lacks is refused"
