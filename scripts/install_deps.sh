#!/usr/bin/env bash
# install_deps.sh - the Debian packages tempo builds and tests with, installed
# with apt-get when one is missing and we are root (CI runs as root); else the
# list of what to install. Run by `make test` and `make run` before they build,
# so that a fresh machine needs only the README's two commands. Nothing is
# installed when everything is there (no network needed then).
set -euo pipefail
need=()
have_header() { echo "#include <$1>" | ${CC:-gcc} -E -x c - >/dev/null 2>&1; }
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
have_header omp.h || need+=(libgomp1 gcc)
have_header lzma.h || need+=(liblzma-dev)
have_header sqlite3.h || need+=(libsqlite3-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
# clang compiles the GPU kernels to PTX (src/kernels/cuda); g++ builds their CPU emulator
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# bubblewrap: the judge's sandbox for submissions (src/judge/sandbox.c)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# Open MPI: multi-process training (tempo train under mpirun) and its tests
if [ "${MPI:-1}" != 0 ]; then
    command -v mpicc >/dev/null 2>&1 || need+=(libopenmpi-dev)
    command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing ${need[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null
else
    echo "deps: missing Debian packages: ${need[*]} (apt-get install them, or run as root to let this script)" >&2
    # without MPI tempo still builds and runs as one process; the rest is required
    for p in "${need[@]}"; do
        case $p in libopenmpi-dev|openmpi-bin) ;; *) exit 1 ;; esac
    done
fi
