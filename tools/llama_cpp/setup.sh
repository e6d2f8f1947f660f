#!/usr/bin/env bash
# setup.sh - makes the real llama.cpp available to tempo's tests and to
# `tempo bench infer --vs-llama-cpp`, and prints the path of the helper
# program (tools/llama_cpp/tempo_llama.c) built against it.
#
# llama.cpp comes from the npm registry: the package node-llama-cpp ships the
# llama.cpp source as a git bundle (we take only its headers) and
# @node-llama-cpp/linux-x64 ships the prebuilt CPU libraries (libllama,
# libggml*, one CPU backend per x86 level, chosen at run time). Both are
# fetched with `npm pack` (no install scripts, no dependencies, no GPU
# variants) into a cache folder, $TEMPO_LLAMA_CACHE or
# ~/.cache/tempo/llama.cpp, so a rerun costs only the check below.
# Needs node/npm, git and a C compiler. Exit 1 with one line when it fails.
set -euo pipefail
VERSION=3.22.1
here=$(cd "$(dirname "$0")" && pwd)
cache=${TEMPO_LLAMA_CACHE:-${HOME:-/root}/.cache/tempo/llama.cpp}
dir="$cache/$VERSION"
src="$here/tempo_llama.c"
sum=$(sha256sum "$src" | cut -c1-16)
bin="$dir/bin/tempo_llama-$sum"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

fail() { echo "tempo: llama.cpp setup: $*" >&2; exit 1; }
command -v npm >/dev/null || fail "npm is not installed (node-llama-cpp comes from the npm registry)"
mkdir -p "$dir" || fail "cannot create $dir"
# one setup at a time (two test scripts, or two users of one cache); the check again under the lock
exec 9>"$dir/.lock"
flock 9 || fail "cannot lock $dir/.lock"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
work=$(mktemp -d "$dir/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -e "$dir/lib/libllama.so.ok" ]; then
    echo "llama.cpp: fetching node-llama-cpp@$VERSION and @node-llama-cpp/linux-x64@$VERSION" >&2
    (cd "$work" && npm pack --silent "node-llama-cpp@$VERSION" "@node-llama-cpp/linux-x64@$VERSION" >/dev/null) \
        || fail "npm pack node-llama-cpp@$VERSION failed"
    mkdir -p "$work/a" "$work/b"
    tar xzf "$work/node-llama-cpp-$VERSION.tgz" -C "$work/a" || fail "bad node-llama-cpp tarball"
    tar xzf "$work/node-llama-cpp-linux-x64-$VERSION.tgz" -C "$work/b" || fail "bad linux-x64 tarball"
    # headers of exactly the release the libraries were built from: the source bundle's tag must be
    # the release the prebuilt binaries record
    tag=$(grep -o '"tag": *"[^"]*"' "$work/a/package/llama/llama.cpp.info.json" | sed 's/.*"\([^"]*\)"$/\1/')
    rel=$(grep -o '"release": *"[^"]*"' "$work/b/package/bins/linux-x64/_nlcBuildMetadata.json" | sed 's/.*"\([^"]*\)"$/\1/')
    [ -n "$tag" ] && [ "$tag" = "$rel" ] || fail "llama.cpp source '$tag' and prebuilt libraries '$rel' differ"
    git clone -q --no-checkout "$work/a/package/llama/gitRelease.bundle" "$work/src" 2>/dev/null \
        || fail "cannot read the llama.cpp git bundle"
    (cd "$work/src" && git -c advice.detachedHead=false checkout -q FETCH_HEAD -- include ggml/include 2>/dev/null \
        || git checkout -q HEAD -- include ggml/include) || fail "no llama.h in the llama.cpp bundle"
    rm -rf "$dir/include" "$dir/lib"
    mkdir -p "$dir/include"
    cp "$work/src/include/"*.h "$work/src/ggml/include/"*.h "$dir/include/"
    cp -r "$work/b/package/bins/linux-x64" "$dir/lib"
    cp "$work/a/package/llama/llama.cpp.info.json" "$dir/lib/llama.cpp.info.json"
    touch "$dir/lib/libllama.so.ok"
fi
libllama=$(ls "$dir/lib"/libllama.v*.so 2>/dev/null | head -1)
libggml=$(ls "$dir/lib"/libggml.v*.so 2>/dev/null | head -1)
[ -n "$libllama" ] && [ -n "$libggml" ] || fail "no libllama/libggml in $dir/lib"
mkdir -p "$dir/bin"
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$dir/include" -DTEMPO_LLAMA_LIBDIR="\"$dir/lib\"" \
    "$src" "$libllama" "$libggml" "$dir/lib/libggml-base.so" -Wl,-rpath,"$dir/lib" -lm \
    -o "$work/tempo_llama" || fail "cannot build $src against llama.h"
mv "$work/tempo_llama" "$bin"
echo "$bin"
