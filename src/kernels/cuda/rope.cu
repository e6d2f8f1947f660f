/* rope.cu - rotary position embedding on the GPU, in place over x [B, T,
 * n_heads, D] of the storage type T, half-split pairs (kernels/cpu/rope.h is
 * the reference and builds the cos/sin tables this reads). dir = +1 rotates
 * (forward), -1 rotates back (the backward). One block per position
 * (blockIdx.x = t, blockIdx.y = b) over its H heads; one thread per two
 * adjacent pairs (one 4-byte access per half in bf16), or per pair when D/2
 * is odd. The position comes from the block and the index math is 32-bit:
 * the first version's two 64-bit divisions per thread were, by an estimate of
 * their instructions, about as costly as the kernel's bytes (it ran at about
 * 2.2x its byte floor on an H200; this one is not yet measured there).
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

template <typename T>
DEVICE void rope(T *x, int Tn, int H, int D, int pos0, const float *cos_tab, const float *sin_tab, float dir)
{
    int half = D / 2, two = (half & 1) == 0, hp = two ? half / 2 : half, n = H * hp;
    int t = (int)blockIdx.x, b = (int)blockIdx.y;
    const float *ct = cos_tab + (size_t)(pos0 + t) * half, *st = sin_tab + (size_t)(pos0 + t) * half;
    T *xr = x + ((size_t)b * Tn + t) * H * D;
    for (int j = (int)threadIdx.x; j < n; j += (int)blockDim.x) {
        int h = j / hp, k = (j - h * hp) * (two ? 2 : 1);
        const float *cr = ct + k, *sr = st + k;
        T *p = xr + h * D + k;
        if (two) {
            float a[2], b2[2], oa[2], ob[2];
            tk_ld2(p, a);
            tk_ld2(p + half, b2);
            for (int u = 0; u < 2; u++) {
                float c = cr[u], s = dir * sr[u];
                oa[u] = a[u] * c - b2[u] * s;
                ob[u] = a[u] * s + b2[u] * c;
            }
            tk_st2(p, oa);
            tk_st2(p + half, ob);
        } else {
            float c = cr[0], s = dir * sr[0], x0 = tk_ld(p, 0), x1 = tk_ld(p, half);
            tk_st(p, 0, x0 * c - x1 * s);
            tk_st(p, half, x0 * s + x1 * c);
        }
    }
}

KERNEL rope_f32(float *x, int T, int H, int D, int pos0, const float *c, const float *s, float dir)
{
    rope(x, T, H, D, pos0, c, s, dir);
}
KERNEL rope_bf16(bf16_t *x, int T, int H, int D, int pos0, const float *c, const float *s, float dir)
{
    rope(x, T, H, D, pos0, c, s, dir);
}

EMU_REGISTER_BEGIN(rope)
EMU_KERNEL(rope_f32)
EMU_KERNEL(rope_bf16)
EMU_REGISTER_END
