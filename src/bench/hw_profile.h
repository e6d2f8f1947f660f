/* hw_profile.h - the hardware profile: this machine's measured limits (fp32
 * FMA peak and triad bandwidth per thread count) plus what the OS says about
 * it (cores, caches, model, SIMD features), as a JSON file that MFU and the
 * presets read:
 *
 *   {"peak_gflops": {"1": 94.1, "2": 187.2}, "peak_bf16_gflops": {},
 *    "bandwidth_gbs": {"1": 11.5, "2": 17},
 *    "cores": 2, "l1d_bytes": 32768, "l2_bytes": 524288, "l3_bytes": 33554432,
 *    "cpu": "AMD EPYC", "avx2": true, "fma": true, "f16c": true,
 *    "kernels": "avx2", "measured_at": "2025-01-31T12:00:00Z", "seconds": 4.1,
 *    "other_load_cores": 0.02, "contended": false}
 *
 * bandwidth_gbs is {} when only the quick FMA measurement was made;
 * peak_bf16_gflops (AVX-512 BF16's dot product, the rate of gemm's bf16
 * mode) is {} on a CPU without it, and may be absent (older files). The
 * measurements themselves live in bench/peak.h; the load accounting in
 * bench/sysload.h. */
#ifndef TEMPO_HW_PROFILE_H
#define TEMPO_HW_PROFILE_H

#include <stddef.h>

#include "core/error.h"
#include "core/json_write.h"

#define HW_PROFILE_MAX_POINTS 8

typedef struct {
    int threads;
    double value;
} hw_point;

typedef struct {
    int n_peak;                                 /* points in peak_gflops (>= 1 when valid) */
    hw_point peak_gflops[HW_PROFILE_MAX_POINTS];
    int n_peak_bf16;                            /* points in peak_bf16_gflops (0: no AVX-512 BF16) */
    hw_point peak_bf16_gflops[HW_PROFILE_MAX_POINTS];   /* vdpbf16ps: gemm's bf16 mode */
    int n_bandwidth;                            /* points in bandwidth_gbs (0: not measured) */
    hw_point bandwidth_gbs[HW_PROFILE_MAX_POINTS];
    int cores;
    long l1d_bytes, l2_bytes, l3_bytes;
    char cpu[128];
    int avx2, fma, f16c;
    char kernels[16];        /* path that measured the peak: "avx2" or "portable" */
    char measured_at[32];    /* UTC, ISO 8601 */
    double seconds;          /* wall time of the measurement */
    double other_load_cores; /* others' CPU use during it, in cores (bench/sysload.h) */
    int contended;           /* other_load_cores above SYSLOAD_CONTENDED_CORES */
} hw_profile;

typedef struct {
    double seconds;             /* total time to spend, roughly (e.g. 4) */
    int bandwidth;              /* 1: also measure the triad */
    size_t triad_array_bytes;   /* per array (e.g. 256 MiB) */
} hw_measure_options;

/* Measure this machine: FMA peak at 1 thread and at all cores (best kernel
 * path the CPU supports, honouring TEMPO_KERNELS), optionally triad bandwidth
 * at the same thread counts, cpu_info, and the load seen meanwhile. */
int hw_profile_measure(hw_profile *p, const hw_measure_options *o, tempo_error *err);

/* p as one JSON object value into w (for a document that holds it). */
void hw_profile_write(jsonw *w, const hw_profile *p);
/* p as one JSON object appended to out (no newline); -1 with err set when
 * the writer failed (out of memory). */
int hw_profile_to_json(const hw_profile *p, strbuf *out, tempo_error *err);

/* Parse the JSON written by hw_profile_to_json (unknown keys are ignored).
 * Needs a peak_gflops object with at least one point. */
int hw_profile_from_json(hw_profile *p, const char *text, size_t len, tempo_error *err);

/* Read / write a profile file; write is atomic and creates the folder. */
int hw_profile_load(hw_profile *p, const char *path, tempo_error *err);
int hw_profile_save(const hw_profile *p, const char *path, tempo_error *err);

/* Where the profile lives: $TEMPO_HW_PROFILE if set, else
 * $XDG_CACHE_HOME/tempo/hardware.json, else $HOME/.cache/tempo/hardware.json.
 * Fails when none of these variables is set. */
int hw_profile_path(char *out, size_t n, tempo_error *err);

/* 1 when p was measured on a machine like this one, on the kernel path that
 * runs here now: the same path name (TEMPO_KERNELS included), cores, cache
 * sizes and CPU model. A profile of another path's peak (an AVX2 peak where
 * the AVX-512 GEMM runs) would misstate every MFU. */
int hw_profile_fits_here(const hw_profile *p);

/* An FMA peak scales with the physical cores: 1 when p's peak at its most
 * threads is below HW_PEAK_SCALING_MIN of that many (at most `physical`)
 * times its one-thread peak, as when the threads shared a core (a process
 * bound to fewer cores than the profile says, or a vCPU the hypervisor
 * took: 102.7 and 102.5 GFLOP/s at 1 and 2 threads, with no load the guest
 * could see). Such a measurement counts as contended. 0 with one point. */
#define HW_PEAK_SCALING_MIN 0.75
int hw_profile_scaling_short(const hw_profile *p, int physical);

/* Physical cores among the CPUs this process may run on (SMT siblings once),
 * from /sys's topology; `fallback` when it cannot be read. */
int hw_physical_cores(int fallback);

/* The profile the trainer uses for MFU: loaded from hw_profile_path() when
 * that file exists and fits this machine (hw_profile_fits_here; a file that
 * does not parse is an error naming it); otherwise the FMA peak alone is
 * measured (~0.5 s) and saved there atomically, replacing a profile that did
 * not fit. A cached profile measured under load (contended, or its peak
 * short of the cores' scaling: hw_profile_scaling_short) is measured
 * again each time it is asked for; the higher peak of the two stands and is
 * saved (an MFU against a peak measured beside a busy loop read 88 %).
 * Saving is best-effort: an unwritable cache still returns the measured
 * profile (re-measured next time). */
int hw_profile_load_or_measure(hw_profile *p, tempo_error *err);

/* Peak GFLOP/s at `threads` threads: the measured point if there is one,
 * else the 1-thread (or smallest) point scaled linearly, capped at the
 * largest measured value. 0 when the profile has no points. */
double hw_profile_peak_gflops(const hw_profile *p, int threads);
/* The matrix products' peak for MFU: the bf16 dot product's (by the same
 * rule) when bf16 is set and p has it, else hw_profile_peak_gflops. */
double hw_profile_matrix_gflops(const hw_profile *p, int threads, int bf16);

/* Triad bandwidth (GB/s) at `threads`: the measured point if there is one,
 * else the largest measured at fewer threads (bandwidth does not scale
 * linearly). 0 when none was measured. */
double hw_profile_bandwidth_gbs(const hw_profile *p, int threads);

#endif
