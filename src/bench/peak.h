/* peak.h - the chip's measured limits: fp32 FMA throughput, memory
 * bandwidth (a STREAM-style triad) and the read bandwidth of a buffer of a
 * given size (from whichever cache level holds it). These are measurements, never
 * assumptions; the hardware profile (bench/hw_profile.h) stores them.
 * Nothing here reads or writes files. */
#ifndef TEMPO_PEAK_H
#define TEMPO_PEAK_H

#include <stddef.h>

#include "core/cpu_info.h"
#include "core/error.h"

/* Independent accumulator chains in the FMA loop: FMA latency (4-5 cycles) x
 * 2 pipes needs >= 10; 12 ymm registers leave room for the operands. */
#define PEAK_FMA_CHAINS 12

/* fp32 FLOP/s (x 1e-9) of `threads` threads each running independent FMA
 * chains, best of repetitions (>= 3) within about `seconds`. The AVX2 path
 * uses 256-bit FMAs, the AVX-512 path 512-bit ones; the portable path measures what plain C compiled for the
 * build target reaches (multiply + add, counted as 2 FLOPs). */
double peak_fma_gflops(cpu_kernel_path path, int threads, double seconds);

/* The same for AVX-512 BF16's dot product (vdpbf16ps, two bf16 products a
 * lane, counted as 4 FLOPs): the rate of gemm's bf16 mode. 0 on a CPU
 * without it. */
double peak_bf16_gflops(int threads, double seconds);

/* Three arrays for the triad a[i] = b[i] + s * c[i], first touched by
 * `threads` threads with the same static split the measurement uses. */
typedef struct {
    float *a, *b, *c;
    size_t n;   /* floats per array */
} peak_triad_arrays;

/* Allocate 3 arrays of bytes_per_array each (e.g. 256 MiB: far beyond L3). */
int peak_triad_alloc(peak_triad_arrays *t, size_t bytes_per_array, int threads, tempo_error *err);
void peak_triad_free(peak_triad_arrays *t);

/* Triad bandwidth in GB/s (1e9 bytes/s, counting 3 x 4 bytes per element
 * as STREAM does), best of passes (>= 3) within about `seconds`. */
double peak_triad_gbs(const peak_triad_arrays *t, int threads, double seconds);

/* Read bandwidth in GB/s (1e9 bytes/s) of `threads` threads summing a
 * buffer of `bytes` floats' bytes (rounded down to whole 256-byte blocks, at
 * least one), each thread its own contiguous share, which it touched first:
 * repetitions of several passes, the best within about `seconds`. A buffer
 * that fits a cache level is read from it after the first pass, so this is
 * what reading a working set of that size can reach: the rate a decode step
 * that streams its weights once cannot beat. `path` picks 256-bit loads
 * (CPU_KERNELS_AVX2) or the portable loop. -1 with err set when the buffer
 * cannot be allocated. */
double peak_read_gbs(cpu_kernel_path path, size_t bytes, int threads, double seconds, tempo_error *err);

#endif
