#!/usr/bin/env bash
# setup.sh - makes Hugging Face's own tokenizers library (the Rust crate
# behind transformers' fast tokenizers, as its official Node binding: the npm
# package `tokenizers`) available to tests/e2e/export_hf.sh, and prints the
# folder to require() it from. Fetched once with `npm pack` (no install
# scripts) into $TEMPO_HF_TOKENIZERS_CACHE or ~/.cache/tempo/hf-tokenizers;
# only the linux-x64-gnu binary of the package is kept. Exit 1 with one line
# when it fails.
set -euo pipefail
VERSION=0.23.2
cache=${TEMPO_HF_TOKENIZERS_CACHE:-${HOME:-/root}/.cache/tempo/hf-tokenizers}
dir="$cache/$VERSION"
if [ -e "$dir/ok" ]; then echo "$dir"; exit 0; fi
fail() { echo "tempo: hf tokenizers setup: $*" >&2; exit 1; }
command -v npm >/dev/null || fail "npm is not installed"
mkdir -p "$cache" || fail "cannot create $cache"
exec 9>"$cache/.lock"
flock 9 || fail "cannot lock $cache/.lock"
if [ -e "$dir/ok" ]; then echo "$dir"; exit 0; fi
work=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "hf tokenizers: fetching tokenizers@$VERSION" >&2
(cd "$work" && npm pack --silent "tokenizers@$VERSION" >/dev/null) || fail "npm pack tokenizers@$VERSION failed"
tar xzf "$work/tokenizers-$VERSION.tgz" -C "$work" || fail "bad tokenizers tarball"
rm -rf "$dir"
mkdir -p "$dir"
cp "$work/package/index.js" "$work/package/package.json" "$work/package/LICENSE" \
    "$work/package/tokenizers.linux-x64-gnu.node" "$dir/" || fail "the package has no linux-x64-gnu binary"
touch "$dir/ok"
echo "$dir"
