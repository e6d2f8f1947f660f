/* activation.cu - ReLU^2 and SwiGLU forward and backward on the GPU, over n
 * values of the storage type T (fp32, or bf16 in bf16 mode), math in fp32.
 * Same formulas as kernels/cpu/activation.h, the reference. Each thread
 * takes 16-byte pieces (4 floats or 8 bf16; the buffers are 256-byte
 * aligned), grid-stride; the last n mod 16/sizeof(T) values one by one.
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define FOR_EACH(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

DEVICE float relu2(float x) { return x > 0 ? x * x : 0.0f; }
DEVICE float relu2_grad(float x, float d) { return x > 0 ? 2.0f * x * d : 0.0f; }
DEVICE float swiglu(float g, float u) { return g * tk_sigmoid(g) * u; }
DEVICE void swiglu_grad(float g, float u, float d, float *dg, float *du)
{
    float s = tk_sigmoid(g);
    *du = d * g * s;
    *dg = d * u * s * (1.0f + g * (1.0f - s));
}

/* out = f(in) over n values of T: whole 16-byte pieces, then the tail */
template <typename T> DEVICE void relu2_fwd(T *a, const T *h, size_t n)
{
    const int V = tk_vec<T>::N;
    size_t nv = n / V;
    FOR_EACH(i, nv) {
        float x[V];
        tk_vec<T>::unpack(tk_ld16(h + i * V), x);
        for (int j = 0; j < V; j++)
            x[j] = relu2(x[j]);
        tk_st16(a + i * V, tk_vec<T>::pack(x));
    }
    FOR_EACH(i, n - nv * V)
        tk_st(a, nv * V + i, relu2(tk_ld(h, nv * V + i)));
}

template <typename T> DEVICE void relu2_bwd(T *dh, const T *da, const T *h, size_t n)
{
    const int V = tk_vec<T>::N;
    size_t nv = n / V;
    FOR_EACH(i, nv) {
        float x[V], d[V];
        tk_vec<T>::unpack(tk_ld16(h + i * V), x);
        tk_vec<T>::unpack(tk_ld16(da + i * V), d);
        for (int j = 0; j < V; j++)
            x[j] = relu2_grad(x[j], d[j]);
        tk_st16(dh + i * V, tk_vec<T>::pack(x));
    }
    FOR_EACH(i, n - nv * V) {
        size_t k = nv * V + i;
        tk_st(dh, k, relu2_grad(tk_ld(h, k), tk_ld(da, k)));
    }
}

template <typename T> DEVICE void swiglu_fwd(T *a, const T *g, const T *u, size_t n)
{
    const int V = tk_vec<T>::N;
    size_t nv = n / V;
    FOR_EACH(i, nv) {
        float x[V], y[V];
        tk_vec<T>::unpack(tk_ld16(g + i * V), x);
        tk_vec<T>::unpack(tk_ld16(u + i * V), y);
        for (int j = 0; j < V; j++)
            x[j] = swiglu(x[j], y[j]);
        tk_st16(a + i * V, tk_vec<T>::pack(x));
    }
    FOR_EACH(i, n - nv * V) {
        size_t k = nv * V + i;
        tk_st(a, k, swiglu(tk_ld(g, k), tk_ld(u, k)));
    }
}

/* dg may alias da */
template <typename T> DEVICE void swiglu_bwd(T *dg, T *du, const T *da, const T *g, const T *u, size_t n)
{
    const int V = tk_vec<T>::N;
    size_t nv = n / V;
    FOR_EACH(i, nv) {
        float x[V], y[V], d[V], og[V], ou[V];
        tk_vec<T>::unpack(tk_ld16(g + i * V), x);
        tk_vec<T>::unpack(tk_ld16(u + i * V), y);
        tk_vec<T>::unpack(tk_ld16(da + i * V), d);
        for (int j = 0; j < V; j++)
            swiglu_grad(x[j], y[j], d[j], &og[j], &ou[j]);
        tk_st16(du + i * V, tk_vec<T>::pack(ou));
        tk_st16(dg + i * V, tk_vec<T>::pack(og));
    }
    FOR_EACH(i, n - nv * V) {
        size_t k = nv * V + i;
        float og, ou;
        swiglu_grad(tk_ld(g, k), tk_ld(u, k), tk_ld(da, k), &og, &ou);
        tk_st(du, k, ou);
        tk_st(dg, k, og);
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
