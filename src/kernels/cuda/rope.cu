/* rope.cu - rotary position embedding on the GPU, in place over x [B, T,
 * n_heads, D] of the storage type T, half-split pairs (kernels/cpu/rope.h is
 * the reference and builds the cos/sin tables this reads). dir = +1 rotates
 * (forward), -1 rotates back (the backward). One thread per two adjacent
 * pairs (one 4-byte access per half in bf16), or per pair when D/2 is odd.
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

template <typename T>
DEVICE void rope(T *x, int B, int Tn, int H, int D, int pos0, const float *cos_tab, const float *sin_tab,
                 float dir)
{
    int half = D / 2, two = (half & 1) == 0, hp = two ? half / 2 : half;
    size_t n = (size_t)B * Tn * H * hp;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / hp; /* (b t h) */
        int k = (int)(i - row * hp) * (two ? 2 : 1);
        int t = (int)((row / H) % Tn);
        const float *cr = cos_tab + (size_t)(pos0 + t) * half + k, *sr = sin_tab + (size_t)(pos0 + t) * half + k;
        T *p = x + row * D + k;
        if (two) {
            float a[2], b[2], oa[2], ob[2];
            tk_ld2(p, a);
            tk_ld2(p + half, b);
            for (int j = 0; j < 2; j++) {
                float c = cr[j], s = dir * sr[j];
                oa[j] = a[j] * c - b[j] * s;
                ob[j] = a[j] * s + b[j] * c;
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

KERNEL rope_f32(float *x, int B, int T, int H, int D, int pos0, const float *c, const float *s, float dir)
{
    rope(x, B, T, H, D, pos0, c, s, dir);
}
KERNEL rope_bf16(bf16_t *x, int B, int T, int H, int D, int pos0, const float *c, const float *s, float dir)
{
    rope(x, B, T, H, D, pos0, c, s, dir);
}

EMU_REGISTER_BEGIN(rope)
EMU_KERNEL(rope_f32)
EMU_KERNEL(rope_bf16)
EMU_REGISTER_END
