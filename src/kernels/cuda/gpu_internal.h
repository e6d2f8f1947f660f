/* gpu_internal.h - struct gpu, shared by the files of the GPU runtime only
 * (gpu.c: context, memory, launches; gpu_gemm.c: cuBLASLt). Everything else
 * uses gpu.h. */
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
    /* copies run as late as they may be (gpu.c, emu_copy_flush): the copy
     * stream's, at the compute stream's wait for them or a sync; the bytes
     * of the compute stream's downloads (read when queued: owned), into
     * host memory at a sync */
    struct gpu_emu_copy {
        void *dst;
        const void *src;
        size_t bytes;
        int owned; /* src is a snapshot of ours: free it once copied */
    } *emu_copies;
    int n_emu_copies, cap_emu_copies;
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

#endif
