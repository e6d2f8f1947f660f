/* gpu_internal.h - struct gpu, shared by the files of the GPU runtime only
 * (gpu.c: context, memory, launches; gpu_gemm.c: cuBLASLt; gpu_emu_stream.c:
 * the emulator's streams). Everything else uses gpu.h. */
#ifndef TEMPO_GPU_INTERNAL_H
#define TEMPO_GPU_INTERNAL_H

#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/emulator.h"
#include "kernels/cuda/gpu.h"

#define GPU_MAX_MODULES 16
#define GPU_GEMM_WORKSPACE (32u << 20) /* cuBLASLt's workspace, bytes */

struct gpu_gemm_cache; /* gpu_gemm.c */

struct gpu {
    gpu_info info;
    /* GPU_CUDA */
    void *libcuda, *liblt;
    cuda_driver_api cu;
    cublaslt_api lt;
    tk_cu_device dev;
    tk_cu_context ctx;
    int ctx_retained;
    tk_cu_stream stream[2];
    tk_cu_event ev_copy, ev_compute, ev_t0, ev_t1;
    tk_cu_module modules[GPU_MAX_MODULES];
    int n_modules;
    tk_cu_function fn[GK_COUNT];
    tk_cublaslt_handle lt_handle;
    gpu_ptr lt_workspace;
    struct gpu_gemm_cache *gemm_cache;
    /* GPU_EMULATOR */
    tk_emu_registry *emu;
    int emu_index[GK_COUNT];
    double emu_t0;
    /* the two streams' queued work (gpu_emu_stream.c) */
    struct gpu_emu_stream {
        struct gpu_emu_op *op;
        int n, cap, head; /* ops queued, room, ops run */
        int wait;         /* the other stream's ops the next op queued runs after */
    } emu_stream[2];
    unsigned long long emu_flushes;
    int emu_order; /* gpu_emulator_order's */
    struct gpu_emu_pinned {
        void *p;
        size_t bytes;
    } *emu_pinned; /* gpu_host_alloc's blocks */
    int n_emu_pinned, cap_emu_pinned;
    /* both */
    int sync_each_launch;   /* TEMPO_GPU_SYNC=1 */
    int failed;
    char error[400];        /* the first error since the last gpu_sync */
    gpu_kernel last_kernel; /* the last launched (named when a sync fails) */
    int launched_any;
    /* gpu_profile_enable */
    int profiling;
    double prof_ms[GK_COUNT + GPU_GEMM_LABELS];   /* [GK_COUNT + label]: the GEMMs */
    int prof_calls[GK_COUNT + GPU_GEMM_LABELS];
    int gemm_label;
    int smem_set[GK_COUNT]; /* gpu_kernel_smem's bytes per kernel (0: none asked) */
};

/* The emulator's streams (gpu_emu_stream.c): work queued on them, run by
 * gpu_emu_run (copy_only: the copy stream's and the compute ops it waits
 * for). A copy from host memory (from_host) reads pinned memory when it runs,
 * other memory when queued. gpu_emu_end drops what is queued. */
void gpu_emu_launch(gpu *g, gpu_kernel k, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                    void **args);
void gpu_emu_call(gpu *g, const char *what, void (*fn)(void *ctx), const void *ctx, size_t bytes);
void gpu_emu_copy(gpu *g, int stream, void *dst, const void *src, size_t bytes, int from_host);
void gpu_emu_fill(gpu *g, void *dst, unsigned char byte, size_t bytes);
void gpu_emu_wait(gpu *g, int stream); /* stream's next ops run after the other's queued so far */
void gpu_emu_run(gpu *g, int copy_only);
void gpu_emu_end(gpu *g);
int gpu_emu_pinned_add(gpu *g, void *p, size_t bytes);
void gpu_emu_pinned_remove(gpu *g, void *p);

#endif
