/* peak_cuda.h - a GPU's measured limits, the ceilings tempo's GPU MFU and
 * byte floors use: the matrix rate of cuBLASLt on a large square product
 * (bf16 operands with fp32 accumulation, bf16 out; fp32 with and without
 * TF32) on random data, and the device-to-device copy bandwidth (bytes read
 * plus written). Medians of repeated timed runs after warm-up, timed with
 * device events. Measurements, never datasheet values. */
#ifndef TEMPO_PEAK_CUDA_H
#define TEMPO_PEAK_CUDA_H

#include "core/error.h"
#include "core/json_write.h"
#include "kernels/cuda/gpu.h"

typedef struct {
    char device[128];
    int gemm_n;             /* the square product's size */
    double bf16_tflops;     /* the MFU denominator of bf16 mode */
    double tf32_tflops;
    double fp32_tflops;     /* exact fp32 (no TF32): fp32 mode's */
    double copy_gbs;        /* device-to-device, (read + write) bytes / s / 1e9 */
    size_t copy_bytes;      /* the buffer copied */
    int reps;
} peak_cuda;

/* Measures g with products of n x n x n (e.g. 8192; smaller on the
 * emulator) and a copy of copy_bytes, reps timed runs each. */
int peak_cuda_measure(gpu *g, int n, size_t copy_bytes, int reps, peak_cuda *p, tempo_error *err);

/* The ceilings a run measures before it starts (train's MFU, bench train's
 * and bench infer's bounds): 8192^3 products and a 1 GiB copy, 5 runs each;
 * on the emulator 64^3, 1 MiB, once. */
int peak_cuda_measure_startup(gpu *g, peak_cuda *p, tempo_error *err);

void peak_cuda_write(jsonw *w, const peak_cuda *p);

#endif
