#!/usr/bin/env bash
# ptx_assemble.sh - the PTX that clang builds and tempo embeds (build/ptx/*.ptx,
# one file per src/kernels/cuda/*.cu) through NVIDIA's own assembler, where a
# CUDA toolkit is installed: the driver's JIT compiles the same text on a GPU,
# so a kernel it would reject is found here, without a GPU. Checks, for sm_80
# (the PTX's target) and sm_90 (H100/H200): ptxas accepts every file; every
# kernel of gpu_kernels.def is an entry of the PTX; no kernel spills registers
# to local memory, except those listed below with their measured bytes (a
# spill that appears or grows fails). Prints sm_90's resource table (registers,
# stack, spills, shared memory per kernel). Without ptxas it says SKIP.
source "$(dirname "$0")/train_common.bash"
ptxas=""
for p in "${CUDA_HOME:-}/bin/ptxas" /usr/local/cuda/bin/ptxas "$(command -v ptxas 2>/dev/null)"; do
    [ -n "$p" ] && [ -x "$p" ] && { ptxas=$p; break; }
done
[ -n "$ptxas" ] || { echo "SKIP: no ptxas (CUDA toolkit) on this machine"; exit 0; }
shopt -s nullglob
files=(build/ptx/*.ptx)
if [ ${#files[@]} -eq 0 ]; then
    command -v "${PTX_CC:-clang}" >/dev/null && fail "clang is here but build/ptx holds no PTX (run make)"
    echo "SKIP: no PTX built (no clang on this machine)"; exit 0
fi
for cu in src/kernels/cuda/*.cu; do
    [ -f "build/ptx/$(basename "$cu" .cu).ptx" ] || fail "$cu has no build/ptx/$(basename "$cu" .cu).ptx"
done

# Known spills, in bytes of spill stores (ptxas 13.0): the fp32 SIMT
# attention's d128 backward (fp32 mode is for exact comparisons, not speed)
# and the d128 tensor-core dK/dV's inner function (the GPU presets' heads are
# 64 wide, whose kernels do not spill).
declare -A allowed=([sm_80:attn_dkdv_f32_d128]=108 [sm_90:attn_dkdv_f32_d128]=104
                    [sm_80:attn_dkdv_mma_d128]=52 [sm_90:attn_dkdv_mma_d128]=28)

"$ptxas" --version | tail -1
for arch in sm_80 sm_90; do
    : >"$E2E_TMP/info.$arch"
    for f in "${files[@]}"; do
        if ! "$ptxas" -arch=$arch -O3 -v "$f" -o "$E2E_TMP/out.cubin" >>"$E2E_TMP/info.$arch" 2>&1; then
            grep -m3 -i error "$E2E_TMP/info.$arch" >&2
            fail "ptxas -arch=$arch rejects $f"
        fi
    done
done

# every kernel tempo looks up is in the PTX
while read -r k; do
    grep -q "^\.visible \.entry $k(" "${files[@]}" || fail "kernel $k of gpu_kernels.def is not an entry of build/ptx/*.ptx"
done < <(sed -n 's/^GPU_KERNEL(\([a-z0-9_]*\))$/\1/p' src/kernels/cuda/gpu_kernels.def)
[ "$(grep -c '^GPU_KERNEL(' src/kernels/cuda/gpu_kernels.def)" -ge 40 ] || fail "gpu_kernels.def read as too few kernels"

# one row per function: name regs stack spill_stores smem (ptxas -v's lines;
# a non-inlined device function's spills are charged to its kernel's name)
table() {
    awk '
        /Compiling entry function/ { match($0, /\x27[^\x27]+\x27/); k = substr($0, RSTART + 1, RLENGTH - 2) }
        /Function properties for/ { owner = ($NF ~ /^_Z/) ? k : $NF }
        /bytes stack frame/ { st[owner] += $1; sp[owner] += $5 }
        /Used [0-9]+ registers/ {
            regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
            smem = 0; if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ .*/, "", smem) }
            r[k] = regs; m[k] = smem; order[++n] = k
        }
        END { for (i = 1; i <= n; i++) { k = order[i]; printf "%s %d %d %d %d\n", k, r[k], st[k], sp[k], m[k] } }
    ' "$1"
}
for arch in sm_80 sm_90; do
    table "$E2E_TMP/info.$arch" >"$E2E_TMP/table.$arch"
    [ "$(wc -l <"$E2E_TMP/table.$arch")" -ge 40 ] || fail "ptxas -v gave too few kernels for $arch"
    while read -r k regs stack spill smem; do
        limit=${allowed[$arch:$k]:-0}
        [ "$spill" -le "$limit" ] || fail "$k spills $spill bytes at $arch (allowed $limit): look at its register use"
    done <"$E2E_TMP/table.$arch"
done
printf '%-26s %5s %6s %6s %6s   (sm_90, ptxas -O3 -v)\n' kernel regs stack spill smem
while read -r k regs stack spill smem; do printf '%-26s %5d %6d %6d %6d\n' "$k" "$regs" "$stack" "$spill" "$smem"; done <"$E2E_TMP/table.sm_90"
echo "ok: ${#files[@]} PTX files assemble for sm_80 and sm_90, every kernel present, no new spill"
