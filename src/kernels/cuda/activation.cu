/* activation.cu - ReLU^2 and SwiGLU forward and backward on the GPU, over n
 * values of the storage type T (fp32, or bf16 in bf16 mode), math in fp32.
 * Same formulas as kernels/cpu/activation.h, the reference. One thread per
 * value, grid-stride. Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define FOR_EACH(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

template <typename T> DEVICE void relu2_fwd(T *a, const T *h, size_t n)
{
    FOR_EACH(i, n) {
        float x = tk_ld(h, i), r = x > 0 ? x : 0.0f;
        tk_st(a, i, r * r);
    }
}

template <typename T> DEVICE void relu2_bwd(T *dh, const T *da, const T *h, size_t n)
{
    FOR_EACH(i, n) {
        float x = tk_ld(h, i);
        tk_st(dh, i, x > 0 ? 2.0f * x * tk_ld(da, i) : 0.0f);
    }
}

template <typename T> DEVICE void swiglu_fwd(T *a, const T *g, const T *u, size_t n)
{
    FOR_EACH(i, n) {
        float x = tk_ld(g, i);
        tk_st(a, i, x * tk_sigmoid(x) * tk_ld(u, i));
    }
}

/* dg may alias da */
template <typename T> DEVICE void swiglu_bwd(T *dg, T *du, const T *da, const T *g, const T *u, size_t n)
{
    FOR_EACH(i, n) {
        float x = tk_ld(g, i), s = tk_sigmoid(x), d = tk_ld(da, i), up = tk_ld(u, i);
        tk_st(du, i, d * x * s);
        tk_st(dg, i, d * up * s * (1.0f + x * (1.0f - s)));
    }
}

#define INSTANCES(T, sfx)                                                                          \
    KERNEL relu2_fwd_##sfx(T *a, const T *h, size_t n) { relu2_fwd(a, h, n); }                     \
    KERNEL relu2_bwd_##sfx(T *dh, const T *da, const T *h, size_t n) { relu2_bwd(dh, da, h, n); }  \
    KERNEL swiglu_fwd_##sfx(T *a, const T *g, const T *u, size_t n) { swiglu_fwd(a, g, u, n); }    \
    KERNEL swiglu_bwd_##sfx(T *dg, T *du, const T *da, const T *g, const T *u, size_t n)           \
    {                                                                                              \
        swiglu_bwd(dg, du, da, g, u, n);                                                           \
    }
INSTANCES(float, f32)
INSTANCES(bf16_t, bf16)

EMU_REGISTER_BEGIN(activation)
EMU_KERNEL(relu2_fwd_f32)
EMU_KERNEL(relu2_bwd_f32)
EMU_KERNEL(swiglu_fwd_f32)
EMU_KERNEL(swiglu_bwd_f32)
EMU_KERNEL(relu2_fwd_bf16)
EMU_KERNEL(relu2_bwd_bf16)
EMU_KERNEL(swiglu_fwd_bf16)
EMU_KERNEL(swiglu_bwd_bf16)
EMU_REGISTER_END
