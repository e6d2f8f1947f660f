/* cuda_dialect.h - the few words tempo's CUDA kernels (the .cu files of src/kernels/cuda)
 * are written in, so that one source compiles three ways:
 *   - by clang as CUDA device code to PTX (the default build: no CUDA SDK,
 *     only clang's builtin-variable header and NVVM builtins);
 *   - by nvcc (where a toolkit exists, for sm_90 variants);
 *   - by a host C++ compiler as plain functions that the CPU emulator
 *     (emulator.cpp) runs, each CUDA thread of a block a fiber, one block at
 *     a time (a block's shared arrays come from the launch: SHARED_ARRAY).
 * The kernels use only what is below: no CUDA headers, no libdevice. Math
 * that needs the GPU's instructions (exp2, the bf16 conversion, shuffles)
 * lives here once, with the emulator's plain C equivalent beside it.
 *
 * Rules the kernels keep so that the emulator is faithful: every thread of
 * a block reaches every barrier (no early return before one), warp
 * shuffles are called by all 32 lanes together, blockDim is a multiple of
 * 32, and shared memory is declared with DYNAMIC_SHARED, SHARED_ARRAY or
 * SHARED_VAR (never TK_SHARED itself: the host build has no such word). */
#ifndef TEMPO_CUDA_DIALECT_H
#define TEMPO_CUDA_DIALECT_H

#if defined(__CUDA_ARCH__) || defined(__CUDACC__) /* either of nvcc's passes, or clang's device pass */
#define TK_DEVICE_CODE 1
#else
#define TK_DEVICE_CODE 0
#endif

typedef unsigned short bf16_t; /* bfloat16 bits (the storage type of bf16 mode) */
typedef unsigned long long tk_u64;

#if TK_DEVICE_CODE
/* ---- device code (clang or nvcc) ---- */
#if defined(__clang__) && !defined(__NVCC__)
#include <__clang_cuda_builtin_vars.h>
typedef __SIZE_TYPE__ size_t;
#define TK_GLOBAL __attribute__((global))
#define TK_DEV __attribute__((device))
#define TK_SHARED __attribute__((shared))
#else
#define TK_GLOBAL __global__
#define TK_DEV __device__
#define TK_SHARED __shared__
#endif
#define KERNEL extern "C" TK_GLOBAL void
#define DEVICE static TK_DEV inline
/* a part of a kernel cut out to name it: always inlined, so that its register arrays (passed by
 * pointer) stay registers and the kernel compiles as if written in one piece */
#if defined(__clang__) && !defined(__NVCC__)
#define DEVICE_INLINE static TK_DEV inline __attribute__((always_inline))
#else
#define DEVICE_INLINE static __device__ __forceinline__
#endif
#define MEMBER static TK_DEV inline /* a struct's static member function */
/* dynamic shared memory of a launch (its size is a launch parameter) */
#define DYNAMIC_SHARED(type, name) extern TK_SHARED type name[]
/* a block's own shared array (dims: "[n]", "[n][m]") or variable */
#define SHARED_ARRAY(type, name, dims) TK_SHARED type name dims
#define SHARED_VAR(type, name) TK_SHARED type name
#define SYNC() __syncthreads()
#define UNROLL _Pragma("unroll")
/* a kernel's largest block and the blocks an SM should hold at once: ptxas
 * keeps its registers within 65,536 / (threads x blocks) */
#if defined(__clang__) && !defined(__NVCC__)
#define LAUNCH_BOUNDS(threads, blocks) __attribute__((launch_bounds(threads, blocks)))
#else
#define LAUNCH_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#endif

DEVICE float tk_shfl_xor(float v, int lane_mask)
{
#if defined(__clang__) && !defined(__NVCC__)
    return __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, lane_mask, 0x1f);
#else
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
#endif
}
DEVICE double tk_shfl_xor_d(double v, int lane_mask)
{
    int lo, hi;
    asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "d"(v));
#if defined(__clang__) && !defined(__NVCC__)
    lo = __nvvm_shfl_sync_bfly_i32(0xffffffffu, lo, lane_mask, 0x1f);
    hi = __nvvm_shfl_sync_bfly_i32(0xffffffffu, hi, lane_mask, 0x1f);
#else
    lo = __shfl_xor_sync(0xffffffffu, lo, lane_mask);
    hi = __shfl_xor_sync(0xffffffffu, hi, lane_mask);
#endif
    double r;
    asm("mov.b64 %0, {%1, %2};" : "=d"(r) : "r"(lo), "r"(hi));
    return r;
}
/* 2^x, |relative error| about 2 ulp (ex2.approx.ftz) */
DEVICE float tk_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
/* log2(x), about 2 ulp (lg2.approx.ftz) */
DEVICE float tk_log2(float x)
{
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
DEVICE float tk_sqrt(float x)
{
    float y;
    asm("sqrt.rn.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
DEVICE double tk_sqrt_d(double x)
{
    double y;
    asm("sqrt.rn.f64 %0, %1;" : "=d"(y) : "d"(x));
    return y;
}
DEVICE float tk_div(float a, float b)
{
    float y;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
}
/* a*b and a+b rounded separately (never contracted into an FMA): the
 * optimizer's update is bitwise the CPU's (optim_kernels.h) */
DEVICE float tk_mul(float a, float b)
{
    float y;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
}
DEVICE float tk_add(float a, float b)
{
    float y;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
}
DEVICE float tk_sub(float a, float b)
{
    float y;
    asm("sub.rn.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
}
DEVICE bf16_t tk_to_bf16(float x)
{
    bf16_t b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));
    return b;
}
DEVICE float tk_from_bf16(bf16_t b)
{
    unsigned int u = (unsigned int)b << 16;
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
}
DEVICE float tk_bits_to_float(unsigned int u)
{
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
}
DEVICE unsigned tk_float_to_bits(float f)
{
    unsigned u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
    return u;
}
/* two floats as a pair of bf16 in one register: lo in the low half */
DEVICE unsigned tk_pack_bf16x2(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
/* two adjacent bf16 (4-byte aligned) as one register */
DEVICE unsigned tk_ld_bf16x2(const bf16_t *p) { return *(const unsigned *)p; }
DEVICE void tk_st_bf16x2(bf16_t *p, unsigned v) { *(unsigned *)p = v; }
/* d[4] += A b: the warp's 16x16 (row) by 16x8 (col) bf16 product with fp32
 * accumulation (mma.sync m16n8k16). Fragments as the PTX ISA lays them out:
 * lane = 4 g + q; a[0] = A[g][2q..2q+1], a[1] = A[g+8][2q..], a[2] =
 * A[g][2q+8..], a[3] = A[g+8][2q+8..]; b[0] = B[2q..2q+1][g], b[1] =
 * B[2q+8..2q+9][g]; d[0..1] = D[g][2q..2q+1], d[2..3] = D[g+8][2q..]. Every
 * lane of the warp calls it together. */
/* the shared-memory address of a generic pointer into shared memory */
DEVICE unsigned tk_smem_addr(const void *p)
{
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
/* ldmatrix x4: lanes 8i..8i+7 give the row addresses (16 bytes each) of
 * 8x8 bf16 matrix i; r[i] gets lane L's pair of matrix i: row L/4, columns
 * 2 (L%4) and + 1 (with trans: column L/4, rows 2 (L%4) and + 1). Every
 * lane calls it together. */
DEVICE void tk_ldmatrix_x4(unsigned *r, const bf16_t *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(tk_smem_addr(row)));
}
DEVICE void tk_ldmatrix_x4_trans(unsigned *r, const bf16_t *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(tk_smem_addr(row)));
}
/* 16 bytes global -> shared without the registers (cp.async, sm_80): issued,
 * then grouped by commit, then waited for by wait (all but the last n
 * groups) followed by a barrier. */
DEVICE void tk_cp_async16(bf16_t *dst, const bf16_t *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(tk_smem_addr(dst)), "l"(src) : "memory");
}
DEVICE void tk_cp_async_commit(void) { asm volatile("cp.async.commit_group;" : : : "memory"); }
DEVICE void tk_cp_async_wait_all(void) { asm volatile("cp.async.wait_group 0;" : : : "memory"); }
DEVICE void tk_cp_async_wait_1(void) { asm volatile("cp.async.wait_group 1;" : : : "memory"); }

DEVICE void tk_mma_bf16(float *d, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#else
/* ---- host emulation (emulator.cpp) ---- */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tk_dim3 {
    unsigned int x, y, z;
};
/* set for each emulated thread by emulator.cpp */
extern thread_local tk_dim3 threadIdx, blockIdx, blockDim, gridDim;

void tk_emu_syncthreads(void);
float tk_emu_shfl_xor(float v, int lane_mask);
double tk_emu_shfl_xor_d(double v, int lane_mask);
void *tk_emu_dynamic_shared(void);
void tk_emu_mma_bf16(float *d, const unsigned *a, const unsigned *b);
void tk_emu_ldmatrix_x4(unsigned *r, const unsigned short *row, int trans);
void tk_emu_cp_async16(void *dst, const void *src);
void tk_emu_cp_async_commit(void);
void tk_emu_cp_async_wait(int newest_pending);
void *tk_emu_static_shared(const void *key, size_t bytes);
/* a vector access of `bytes` at p: the GPU faults unless p is aligned to
 * them, so the emulator fails the launch (the first such access named) */
void tk_emu_misaligned(const void *p, int bytes);
#define TK_EMU_ALIGNED(p, bytes) \
    do { if ((uintptr_t)(p) % (bytes)) tk_emu_misaligned(p, bytes); } while (0)

#define KERNEL static void
#define LAUNCH_BOUNDS(threads, blocks)
#define DEVICE static inline
#define DEVICE_INLINE static inline
#define MEMBER static inline
#define DYNAMIC_SHARED(type, name) type *name = (type *)tk_emu_dynamic_shared()
/* a block's shared array or variable: the launch's memory for this
 * declaration (its address the key), poisoned at the start of every block
 * (emulator.cpp), so that a block reading what it never wrote shows up; no
 * TK_SHARED here, so that every declaration goes through these */
#define SHARED_ARRAY(type, name, dims)                                                                           \
    static const char name##_emu_key = 0;                                                                        \
    type(&name) dims = *(type(*) dims)tk_emu_static_shared(&name##_emu_key, sizeof(type dims))
#define SHARED_VAR(type, name)                                                                                   \
    static const char name##_emu_key = 0;                                                                        \
    type &name = *(type *)tk_emu_static_shared(&name##_emu_key, sizeof(type))
#define SYNC() tk_emu_syncthreads()
#define UNROLL

DEVICE float tk_shfl_xor(float v, int lane_mask) { return tk_emu_shfl_xor(v, lane_mask); }
DEVICE double tk_shfl_xor_d(double v, int lane_mask) { return tk_emu_shfl_xor_d(v, lane_mask); }
DEVICE float tk_exp2(float x) { return exp2f(x); }
DEVICE float tk_log2(float x) { return log2f(x); }
DEVICE float tk_sqrt(float x) { return sqrtf(x); }
DEVICE double tk_sqrt_d(double x) { return sqrt(x); }
DEVICE float tk_div(float a, float b) { return a / b; }
DEVICE float tk_mul(float a, float b) { return a * b; }
DEVICE float tk_add(float a, float b) { return a + b; }
DEVICE float tk_sub(float a, float b) { return a - b; }
DEVICE bf16_t tk_to_bf16(float x)
{
    unsigned int u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays a (quiet) NaN */
        return (bf16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (bf16_t)(u >> 16);
}
DEVICE float tk_from_bf16(bf16_t b)
{
    unsigned int u = (unsigned int)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
DEVICE float tk_bits_to_float(unsigned int u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
DEVICE unsigned tk_pack_bf16x2(float lo, float hi)
{
    return (unsigned)tk_to_bf16(lo) | ((unsigned)tk_to_bf16(hi) << 16);
}
DEVICE unsigned tk_float_to_bits(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
DEVICE unsigned tk_ld_bf16x2(const bf16_t *p)
{
    unsigned r;
    TK_EMU_ALIGNED(p, 4);
    memcpy(&r, p, 4);
    return r;
}
DEVICE void tk_st_bf16x2(bf16_t *p, unsigned v)
{
    TK_EMU_ALIGNED(p, 4);
    memcpy(p, &v, 4);
}
DEVICE void tk_mma_bf16(float *d, const unsigned *a, const unsigned *b) { tk_emu_mma_bf16(d, a, b); }
DEVICE void tk_ldmatrix_x4(unsigned *r, const bf16_t *row) { tk_emu_ldmatrix_x4(r, row, 0); }
DEVICE void tk_ldmatrix_x4_trans(unsigned *r, const bf16_t *row) { tk_emu_ldmatrix_x4(r, row, 1); }
/* the emulator holds each copy back until a wait covers its group, as late
 * as the hardware may land it (emulator.cpp) */
DEVICE void tk_cp_async16(bf16_t *dst, const bf16_t *src)
{
    TK_EMU_ALIGNED(dst, 16);
    TK_EMU_ALIGNED(src, 16);
    tk_emu_cp_async16(dst, src);
}
DEVICE void tk_cp_async_commit(void) { tk_emu_cp_async_commit(); }
DEVICE void tk_cp_async_wait_all(void) { tk_emu_cp_async_wait(0); }
DEVICE void tk_cp_async_wait_1(void) { tk_emu_cp_async_wait(1); }
#endif

/* ---- shared by both ---- */
#define TK_LOG2E 1.4426950408889634f
#define TK_LN2 0.6931471805599453f

DEVICE float tk_exp(float x) { return tk_exp2(x * TK_LOG2E); }
DEVICE float tk_log(float x) { return tk_log2(x) * TK_LN2; }
DEVICE float tk_fmaxf(float a, float b) { return a > b ? a : b; }
DEVICE float tk_neg_inf(void) { return tk_bits_to_float(0xff800000u); }
DEVICE float tk_nan(void) { return tk_bits_to_float(0x7fc00000u); }
DEVICE float tk_absf(float x) { return x < 0 ? -x : x; }

/* tanh for the logit soft-cap: a short series near 0 (where 1 - e^-2x would
 * lose digits), the exponential form elsewhere; a few ulp. */
DEVICE float tk_tanh(float x)
{
    float a = tk_absf(x);
    if (a < 0.25f) {
        float x2 = x * x;
        return x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315 + x2 * (62.0f / 2835)))));
    }
    float e = tk_exp(-2.0f * a);
    float t = tk_div(1.0f - e, 1.0f + e);
    return x < 0 ? -t : t;
}
DEVICE float tk_sigmoid(float x) { return tk_div(1.0f, 1.0f + tk_exp(-x)); }

/* loads and stores of the two storage types, as float */
DEVICE float tk_ld(const float *p, size_t i) { return p[i]; }
DEVICE float tk_ld(const bf16_t *p, size_t i) { return tk_from_bf16(p[i]); }
DEVICE void tk_st(float *p, size_t i, float v) { p[i] = v; }
DEVICE void tk_st(bf16_t *p, size_t i, float v) { p[i] = tk_to_bf16(v); }

/* 16 bytes at once (a 16-byte aligned address): 4 floats or 8 bf16 */
struct __attribute__((aligned(16))) tk_v16 {
    unsigned w[4];
};
#if TK_DEVICE_CODE
DEVICE tk_v16 tk_ld16(const void *p) { return *(const tk_v16 *)p; }
DEVICE void tk_st16(void *p, tk_v16 v) { *(tk_v16 *)p = v; }
#else
DEVICE tk_v16 tk_ld16(const void *p)
{
    tk_v16 v;
    TK_EMU_ALIGNED(p, 16);
    memcpy(&v, p, 16);
    return v;
}
DEVICE void tk_st16(void *p, tk_v16 v)
{
    TK_EMU_ALIGNED(p, 16);
    memcpy(p, &v, 16);
}
#endif
/* the values of a 16-byte piece of storage type T, as floats, and back */
template <typename T> struct tk_vec;
template <> struct tk_vec<float> {
    enum { N = 4 };
    MEMBER void unpack(tk_v16 v, float *f)
    {
        for (int i = 0; i < 4; i++)
            f[i] = tk_bits_to_float(v.w[i]);
    }
    MEMBER tk_v16 pack(const float *f)
    {
        tk_v16 v;
        for (int i = 0; i < 4; i++) {
            v.w[i] = tk_float_to_bits(f[i]);
        }
        return v;
    }
};
template <> struct tk_vec<bf16_t> {
    enum { N = 8 };
    MEMBER void unpack(tk_v16 v, float *f)
    {
        for (int i = 0; i < 4; i++) {
            f[2 * i] = tk_bits_to_float(v.w[i] << 16);
            f[2 * i + 1] = tk_bits_to_float(v.w[i] & 0xffff0000u);
        }
    }
    MEMBER tk_v16 pack(const float *f)
    {
        tk_v16 v;
        for (int i = 0; i < 4; i++)
            v.w[i] = tk_pack_bf16x2(f[2 * i], f[2 * i + 1]);
        return v;
    }
};

/* 2 consecutive values (a pair of bf16 in one 4-byte access) */
DEVICE void tk_ld2(const float *p, float *f)
{
    f[0] = p[0];
    f[1] = p[1];
}
DEVICE void tk_st2(float *p, const float *f)
{
    p[0] = f[0];
    p[1] = f[1];
}
DEVICE void tk_ld2(const bf16_t *p, float *f)
{
    unsigned a = tk_ld_bf16x2(p);
    f[0] = tk_bits_to_float(a << 16);
    f[1] = tk_bits_to_float(a & 0xffff0000u);
}
DEVICE void tk_st2(bf16_t *p, const float *f) { tk_st_bf16x2(p, tk_pack_bf16x2(f[0], f[1])); }

/* 4 consecutive values (16-byte aligned floats, 8-byte aligned bf16) */
DEVICE void tk_ld4(const float *p, float *f) { tk_vec<float>::unpack(tk_ld16(p), f); }
DEVICE void tk_st4(float *p, const float *f) { tk_st16(p, tk_vec<float>::pack(f)); }
DEVICE void tk_ld4(const bf16_t *p, float *f)
{
    unsigned a = tk_ld_bf16x2(p), b = tk_ld_bf16x2(p + 2);
    f[0] = tk_bits_to_float(a << 16);
    f[1] = tk_bits_to_float(a & 0xffff0000u);
    f[2] = tk_bits_to_float(b << 16);
    f[3] = tk_bits_to_float(b & 0xffff0000u);
}
DEVICE void tk_st4(bf16_t *p, const float *f)
{
    tk_st_bf16x2(p, tk_pack_bf16x2(f[0], f[1]));
    tk_st_bf16x2(p + 2, tk_pack_bf16x2(f[2], f[3]));
}

/* sums over the 32 lanes of a warp (every lane gets the sum, in the same
 * butterfly order on every lane) */
DEVICE float tk_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += tk_shfl_xor(v, o);
    return v;
}
DEVICE double tk_warp_sum_d(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += tk_shfl_xor_d(v, o);
    return v;
}
DEVICE float tk_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = tk_fmaxf(v, tk_shfl_xor(v, o));
    return v;
}

/* Kernel names: a template body instantiated for the storage types, each
 * instantiation an extern "C" kernel named base_f32 / base_bf16. The
 * emulator's registry (EMU_REGISTER_*) lists the same names. */
#if TK_DEVICE_CODE
#define EMU_REGISTER_BEGIN(file)
#define EMU_KERNEL(name)
#define EMU_KERNEL_BOUNDED(name, threads)
#define EMU_REGISTER_END
#else
typedef void (*tk_emu_trampoline)(void **args);
struct tk_emu_registry;
void tk_emu_add(tk_emu_registry *r, const char *name, tk_emu_trampoline fn, int max_threads, int n_args,
                const unsigned char *arg_sizes);
/* A kernel's parameters: how many, and each one's bytes (what a launch's
 * arguments are copied as when it is queued, as cuLaunchKernel copies them). */
template <typename... A> static int tk_emu_n_args(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static const unsigned char *tk_emu_arg_sizes(void (*)(A...))
{
    static const unsigned char sizes[sizeof...(A) + 1] = {(unsigned char)sizeof(A)..., 0};
    return sizes;
}
/* Unpacks a launch's argument array (pointers to each argument's value, as
 * cuLaunchKernel takes them) into a call of the kernel. */
template <typename T> static T tk_emu_arg(void *p)
{
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}
template <size_t... I> struct tk_index_list {};
template <size_t N, size_t... I> struct tk_make_index : tk_make_index<N - 1, N - 1, I...> {};
template <size_t... I> struct tk_make_index<0, I...> {
    typedef tk_index_list<I...> type;
};
template <typename... A, size_t... I>
static void tk_emu_unpack(void (*k)(A...), void **args, tk_index_list<I...>)
{
    k(tk_emu_arg<A>(args[I])...);
}
template <typename... A> static void tk_emu_invoke(void (*k)(A...), void **args)
{
    tk_emu_unpack(k, args, typename tk_make_index<sizeof...(A)>::type());
}
#define EMU_REGISTER_BEGIN(file) extern "C" void tk_emu_register_##file(tk_emu_registry *r) {
#define EMU_KERNEL(name)                                                                                      \
    tk_emu_add(r, #name, [](void **a) { tk_emu_invoke(name, a); }, 0, tk_emu_n_args(name), tk_emu_arg_sizes(name));
/* a kernel with LAUNCH_BOUNDS(threads, ...): the emulator refuses larger blocks, as the driver does */
#define EMU_KERNEL_BOUNDED(name, threads)                                                                     \
    tk_emu_add(r, #name, [](void **a) { tk_emu_invoke(name, a); }, threads, tk_emu_n_args(name),            \
               tk_emu_arg_sizes(name));
#define EMU_REGISTER_END }
#endif

#endif
