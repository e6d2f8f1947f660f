/* peak_fma.h - the FMA throughput loops behind peak_fma_gflops, and the
 * bf16 dot-product loop behind peak_bf16_gflops (internal to bench/). Each runs `iters` iterations of PEAK_FMA_CHAINS independent
 * multiply-add chains and returns a value that depends on all of them, so the
 * compiler cannot drop the work. */
#ifndef TEMPO_PEAK_FMA_H
#define TEMPO_PEAK_FMA_H

/* FLOPs done per iteration by each loop. */
#define PEAK_FMA_AVX2_FLOPS_PER_ITER (2 * 12 * 8 * 2)      /* 2 x 12 ymm FMAs */
#define PEAK_FMA_AVX512_FLOPS_PER_ITER (2 * 12 * 16 * 2)   /* 2 x 12 zmm FMAs */
#define PEAK_FMA_PORTABLE_FLOPS_PER_ITER (12 * 4 * 2)      /* 12 x 4 mul+add */
#define PEAK_BF16_AVX512_FLOPS_PER_ITER (2 * 12 * 32 * 2)  /* 2 x 12 vdpbf16ps: 32 products each */

/* AVX2 + FMA (target attribute; call only when cpuid says both). */
float peak_fma_loop_avx2(long iters);
/* AVX-512F (target attribute; call only when cpuid says so). */
float peak_fma_loop_avx512(long iters);
/* AVX-512 BF16's dot product (target attribute; call only when cpuid says so). */
float peak_bf16_loop_avx512(long iters);
/* Plain C. */
float peak_fma_loop_portable(long iters);

#endif
