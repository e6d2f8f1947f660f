/* cpu_info.h - what the CPU offers, as the OS and cpuid report it: SIMD
 * features (AVX2, FMA, F16C), usable core count, cache sizes (L1d, L2, L3)
 * and the model name; and the choice of kernel path (AVX2 or portable C).
 *
 * Nothing is cached: each query reads cpuid and /sys afresh (about 0.1 ms in
 * this VM, where every sysfs open costs ~10 us), so callers on a hot path
 * query once and keep the result in their own context struct (e.g. the GEMM
 * config, kernels/cpu/gemm.h). Measurements (peak FLOP/s, bandwidth) live in
 * bench/, not here. */
#ifndef TEMPO_CPU_INFO_H
#define TEMPO_CPU_INFO_H

/* Fallback cache sizes, used when the OS does not report a level: a typical
 * x86 core of the last decade (32 KiB L1d, 512 KiB L2, 8 MiB L3). */
#define CPU_FALLBACK_L1D_BYTES (32L * 1024)
#define CPU_FALLBACK_L2_BYTES  (512L * 1024)
#define CPU_FALLBACK_L3_BYTES  (8L * 1024 * 1024)

typedef struct {
    int avx2, fma, f16c;   /* 1 when the CPU (and OS) support the feature */
    int avx512f;           /* AVX-512 Foundation (zmm state enabled by the OS) */
    int avx512bf16;        /* AVX-512 BF16 (vdpbf16ps; with BW and VL): gemm's bf16 mode */
    int fma512_full;       /* avx512f with FMA units 512 bits wide, so a zmm FMA is twice a ymm
                              one's work at the same rate: not so on AMD before family 0x1a
                              (Zen 4 runs a zmm FMA on both 256-bit pipes); by vendor and family
                              (__builtin_cpu_is), assumed wide elsewhere. The GEMM's thread
                              split and the planner's default chip read it */
    int cores;             /* CPUs this process may run on (affinity), >= 1 */
    long l1d_bytes;        /* per-core L1 data cache, > 0 */
    long l2_bytes;         /* per-core (or per-cluster) L2, > 0 */
    long l3_bytes;         /* last-level cache as seen by cpu0, > 0 */
    int caches_from_os;    /* 1 when all three sizes came from /sys, 0 when any is a fallback */
    char model[128];       /* "model name" from /proc/cpuinfo, or "unknown" */
} cpu_info;

/* Fill ci. Never fails: anything the OS does not say gets a documented
 * fallback (cores 1, the CPU_FALLBACK_* cache sizes, model "unknown"). */
void cpu_info_query(cpu_info *ci);

/* Only ci's SIMD features (avx2, fma, avx512f, f16c) from cpuid: no sysfs,
 * a few nanoseconds, for a kernel choosing its path per call. */
void cpu_info_query_features(cpu_info *ci);

/* The kernel implementations a CPU kernel may choose between. */
typedef enum {
    CPU_KERNELS_PORTABLE = 0,   /* plain C, any CPU */
    CPU_KERNELS_AVX2 = 1,       /* AVX2 + FMA micro-kernels */
    CPU_KERNELS_AVX512 = 2      /* the AVX2 path, with AVX-512F for the GEMM's
                                   micro-kernel and the peak's FMA loop */
} cpu_kernel_path;

/* The path to use on this CPU: the best ci supports (AVX2 needs avx2 and fma,
 * AVX-512 those and avx512f), unless the environment variable TEMPO_KERNELS
 * says "portable" (forces the portable C path, e.g. in tests) or "avx2" (no
 * wider than AVX2). TEMPO_KERNELS=auto (or unset, or "avx512") means the best
 * supported; a path the CPU lacks is never chosen. Paths are ordered: a
 * kernel with an AVX2 variant runs it for any path >= CPU_KERNELS_AVX2.
 * Reads the environment on every call. */
cpu_kernel_path cpu_kernel_path_select(const cpu_info *ci);

/* "portable", "avx2" or "avx512". */
const char *cpu_kernel_path_name(cpu_kernel_path path);

/* Whether path runs the GEMM's bf16 mode on this CPU: the avx512 path and
 * AVX-512 BF16. The one rule for the mode, its peak and the MFU against it. */
int cpu_kernel_path_bf16(const cpu_info *ci, cpu_kernel_path path);

#endif
