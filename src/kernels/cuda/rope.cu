/* rope.cu - rotary position embedding on the GPU, in place over x [B, T,
 * n_heads, D] of the storage type T, half-split pairs (kernels/cpu/rope.h is
 * the reference and builds the cos/sin tables this reads). dir = +1 rotates
 * (forward), -1 rotates back (the backward). One thread per pair.
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

template <typename T>
DEVICE void rope(T *x, int B, int Tn, int H, int D, int pos0, const float *cos_tab, const float *sin_tab,
                 float dir)
{
    int half = D / 2;
    size_t n = (size_t)B * Tn * H * half;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int k = (int)(i % half);
        size_t row = i / half; /* (b t h) */
        int t = (int)((row / H) % Tn);
        float c = cos_tab[(size_t)(pos0 + t) * half + k], s = dir * sin_tab[(size_t)(pos0 + t) * half + k];
        size_t a = row * D + k;
        float x0 = tk_ld(x, a), x1 = tk_ld(x, a + half);
        tk_st(x, a, x0 * c - x1 * s);
        tk_st(x, a + half, x0 * s + x1 * c);
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
