/* kernel_path.h - the cheap per-call choice between a kernel's AVX2+FMA and
 * portable implementations, for the elementwise, attention and optimizer
 * kernels. Same rule as cpu_kernel_path_select (core/cpu_info.h: the best the
 * CPU supports unless TEMPO_KERNELS=portable), but without cpu_info_query's
 * sysfs reads: cpuid (cpu_info_query_features) and one getenv, a few tens of
 * nanoseconds, so a kernel may ask once per call. Header-only. */
#ifndef TEMPO_KERNEL_PATH_H
#define TEMPO_KERNEL_PATH_H

#include "core/cpu_info.h"

/* The path a kernel may run now (cpu_kernel_path_select on cpuid alone). */
static inline cpu_kernel_path kernel_path_select_now(void)
{
    cpu_info ci = {0};
    cpu_info_query_features(&ci);
    return cpu_kernel_path_select(&ci);
}

/* 1 when AVX-512 BF16's kernels may run now: the avx512 path on a CPU with
 * BF16 (cpu_kernel_path_bf16, the rule of the GEMM's bf16 mode). */
static inline int kernel_path_bf16_now(void)
{
    cpu_info ci = {0};
    cpu_info_query_features(&ci);
    return cpu_kernel_path_bf16(&ci, cpu_kernel_path_select(&ci));
}

/* 1 when the AVX2 + FMA variants may run now, 0 for the portable C ones. */
static inline int kernel_path_avx2(void)
{
    return kernel_path_select_now() >= CPU_KERNELS_AVX2;
}

#endif
