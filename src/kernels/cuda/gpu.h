/* gpu.h - one GPU as tempo uses it: a context with two streams (compute,
 * and copy for batches), device memory, pinned host memory, the kernels of
 * the PTX built into tempo (or of the CPU emulator), launches, events and
 * errors. Two backends behind one interface:
 *   GPU_CUDA      the NVIDIA driver (libcuda.so.1, by dlopen: no CUDA SDK is
 *                 needed to build), the built-in PTX JIT-compiled for the
 *                 chip at open;
 *   GPU_EMULATOR  the same kernels compiled for the CPU (emulator.h), the
 *                 streams' work held back until the host waits for it
 *                 (gpu_emu_stream.c): for tests and for machines without a
 *                 GPU; slow.
 * Device pointers are gpu_ptr (a CUdeviceptr; a host address in the
 * emulator). Launches and copies marked async are queued on a stream; the
 * first error is kept (with the name of the kernel or copy that failed to
 * launch) and returned by the next gpu_sync, after which nothing else is
 * queued. With TEMPO_GPU_SYNC=1 every launch is followed by a
 * synchronisation, so an error inside a kernel names that kernel. */
#ifndef TEMPO_GPU_H
#define TEMPO_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef uint64_t gpu_ptr;
typedef struct gpu gpu;

typedef enum { GPU_CUDA = 0, GPU_EMULATOR = 1 } gpu_backend;

/* The kernels, by the extern "C" names of the .cu files (gpu_kernels.def). */
typedef enum {
#define GPU_KERNEL(name) GK_##name,
#include "kernels/cuda/gpu_kernels.def"
#undef GPU_KERNEL
    GK_COUNT
} gpu_kernel;

typedef struct {
    gpu_backend backend;
    char name[128];          /* "NVIDIA H200", or "CPU emulator" */
    int cc_major, cc_minor;  /* compute capability (0.0 in the emulator) */
    int sm_count;
    size_t mem_total;        /* bytes of device memory */
    size_t l2_bytes;
    int smem_optin;          /* largest dynamic shared memory a block may ask for */
    int driver_version;      /* e.g. 13000; 0 in the emulator */
    char ptx_target[16];     /* the built-in PTX's target, e.g. "sm_80" */
    char cublaslt[160];      /* the cuBLASLt library opened ("" = none: the emulator's reference GEMM) */
    size_t cublaslt_version;
} gpu_info;

/* What tempo can find, for `tempo --version`: the PTX targets built in, and
 * whether a CUDA driver with a GPU and cuBLASLt are present (nothing is
 * initialised beyond asking the driver for its version and device count).
 * Writes one line into buf. */
void gpu_describe(char *buf, size_t len);

/* Opens device 0 of the backend (TEMPO_GPU_DEVICE=N picks another), loads
 * the kernels, creates the streams and (GPU_CUDA) a cuBLASLt handle.
 * Errors are one line: no driver ("cuda: libcuda.so.1 not found: ..."), an
 * old driver, no GPU, no cuBLASLt, a PTX the driver cannot compile (with its
 * log's first line), no PTX built in. */
int gpu_open(gpu **out, gpu_backend backend, tempo_error *err);
void gpu_close(gpu *g); /* NULL is fine */

/* The backend --device asks for: GPU_CUDA, unless TEMPO_GPU_EMULATOR=1. */
gpu_backend gpu_backend_from_env(void);

const gpu_info *gpu_get_info(const gpu *g);

/* Device memory. The message on failure names `what` and the bytes asked
 * for, and the bytes free: "cuda: out of GPU memory for model activations
 * (2.1 GB asked, 0.3 GB free)". Memory is not zeroed. */
int gpu_alloc(gpu *g, gpu_ptr *p, size_t bytes, const char *what, tempo_error *err);
void gpu_free(gpu *g, gpu_ptr p);    /* 0 is fine */
/* Pinned host memory (plain memory in the emulator). */
int gpu_host_alloc(gpu *g, void **p, size_t bytes, const char *what, tempo_error *err);
void gpu_host_free(gpu *g, void *p);

/* Streams: GPU_STREAM_COMPUTE runs every kernel; GPU_STREAM_COPY the
 * batches' uploads. */
enum { GPU_STREAM_COMPUTE = 0, GPU_STREAM_COPY = 1 };

/* Queued copies and fills (bytes). */
void gpu_upload_async(gpu *g, int stream, gpu_ptr dst, const void *src, size_t bytes);
void gpu_download_async(gpu *g, int stream, void *dst, gpu_ptr src, size_t bytes);
void gpu_copy_async(gpu *g, gpu_ptr dst, gpu_ptr src, size_t bytes);
void gpu_memset_async(gpu *g, gpu_ptr dst, unsigned char byte, size_t bytes);
/* Synchronous versions: queued on the compute stream, then waited for. */
int gpu_upload(gpu *g, gpu_ptr dst, const void *src, size_t bytes, tempo_error *err);
int gpu_download(gpu *g, void *dst, gpu_ptr src, size_t bytes, tempo_error *err);

/* Launch kernel k on the compute stream. args: pointers to each argument's
 * value, in the kernel's parameter order (integers as int or size_t exactly
 * as declared; pointers as gpu_ptr). */
void gpu_launch(gpu *g, gpu_kernel k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                void **args);
/* Sets kernel k's largest dynamic shared memory: a launch asking for more
 * than GPU_SMEM_DEFAULT needs it first (the driver refuses it otherwise, and
 * so does the emulator). */
int gpu_kernel_smem(gpu *g, gpu_kernel k, int bytes, tempo_error *err);
#define GPU_SMEM_DEFAULT 49152

/* Waits for both streams. Returns 0, or -1 with the first error since the
 * last gpu_sync ("cuda: attn_fwd_f32_d64: an illegal memory access was
 * encountered"). The error stays: every later call fails the same way. */
int gpu_sync(gpu *g, tempo_error *err);
/* 1 when an error is pending (nothing more is queued). */
int gpu_failed(const gpu *g);

/* Waits for the copy stream only (its pinned sources may then be reused). */
int gpu_copy_sync(gpu *g, tempo_error *err);

/* The emulator's order for the two streams' work where no wait joins them
 * (gpu_emu_stream.c), for tests that check each: GPU_EMU_ALTERNATE (the
 * default: the copy stream early at every other sync, late at the others),
 * GPU_EMU_COPIES_EARLY, GPU_EMU_COPIES_LATE. Nothing on a GPU. */
enum { GPU_EMU_ALTERNATE = 0, GPU_EMU_COPIES_EARLY = 1, GPU_EMU_COPIES_LATE = 2 };
void gpu_emulator_order(gpu *g, int order);

/* The copy stream's uploads queued so far must finish before the compute
 * stream's next work (an event between them). */
void gpu_compute_waits_for_copy(gpu *g);
/* The copy stream may not overwrite what the compute stream has queued so
 * far (the reverse wait). */
void gpu_copy_waits_for_compute(gpu *g);

/* Timing on the compute stream (device events): start, then stop returns
 * the milliseconds between them after waiting for the stop (wall-clock
 * milliseconds in the emulator). Returns a negative value on error. */
void gpu_timer_start(gpu *g);
double gpu_timer_stop_ms(gpu *g);

/* Per-kernel timing, for benchmarks: while enabled, every launch and
 * product is waited for before and after and its wall time added to its
 * kernel's total (all cuBLASLt products as one entry, "gemm"). It slows the
 * work down and adds launch latency to each figure: meaningful for kernels
 * of tens of microseconds and more. Enabling clears the totals. */
void gpu_profile_enable(gpu *g, int on);
/* The entries with time, largest first: up to max names, milliseconds and
 * calls; returns how many. */
int gpu_profile_report(const gpu *g, const char **names, double *ms, int *calls, int max);
/* The entry the next products are profiled under (where they are called
 * from): "gemm", "gemm_fwd", "gemm_bwd", "gemm_head", "gemm_optimizer". */
typedef enum { GPU_GEMM_OTHER, GPU_GEMM_FWD, GPU_GEMM_BWD, GPU_GEMM_HEAD, GPU_GEMM_OPTIMIZER, GPU_GEMM_LABELS } gpu_gemm_label;
void gpu_profile_gemm_label(gpu *g, gpu_gemm_label label);
/* For gpu_gemm.c: the bracket around one product. */
double gpu_profile_begin(gpu *g);
void gpu_profile_end_gemm(gpu *g, double t0);

/* Records err as the pending error (an earlier one stays), for the code
 * that queues work (gpu_gemm.c, gpu_ops.c, the GPU model). */
void gpu_set_error(gpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 under TEMPO_GPU_SYNC=1 (gpu_gemm.c synchronises after each product too). */
int gpu_sync_each_launch(const gpu *g);

/* The kernel's name ("rmsnorm_fwd_f32_f32"). */
const char *gpu_kernel_name(gpu_kernel k);

#endif
