/* cuda_api.h - tempo's own declarations of the parts of the CUDA driver API
 * and of cuBLASLt that it calls, so that tempo builds with no CUDA header or
 * library: both are reached at run time through dlopen (gpu.c). Values and
 * signatures are those of CUDA 12/13's cuda.h, library_types.h,
 * cublas_api.h and cublasLt.h (test_cuda_api checks them against those
 * headers wherever a toolkit is installed). Only what tempo uses is here. */
#ifndef TEMPO_CUDA_API_H
#define TEMPO_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver API (libcuda.so.1) ---- */
typedef int CUresult;      /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define TK_CUDA_SUCCESS 0
#define TK_CUDA_ERROR_OUT_OF_MEMORY 2
#define TK_CUDA_ERROR_STUB_LIBRARY 34
#define TK_CUDA_ERROR_NO_DEVICE 100

#define TK_CU_DEVICE_ATTRIBUTE_CLOCK_RATE 13
#define TK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define TK_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE 36
#define TK_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH 37
#define TK_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define TK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define TK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define TK_CU_JIT_INFO_LOG_BUFFER 3
#define TK_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define TK_CU_JIT_ERROR_LOG_BUFFER 5
#define TK_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define TK_CU_STREAM_NON_BLOCKING 1
#define TK_CU_EVENT_DEFAULT 0
#define TK_CU_EVENT_DISABLE_TIMING 2
#define TK_CU_MEMHOSTALLOC_PORTABLE 1

/* The driver entry points, by the names libcuda exports (the _v2 ones where
 * cuda.h maps a name to them). */
typedef struct {
    CUresult (*cuInit)(unsigned int flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult e, const char **s);
    CUresult (*cuGetErrorString)(CUresult e, const char **s);
    CUresult (*cuDeviceGetCount)(int *n);
    CUresult (*cuDeviceGet)(CUdevice *d, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice d);
    CUresult (*cuDeviceGetAttribute)(int *v, int attr, CUdevice d);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice d);              /* cuDeviceTotalMem_v2 */
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice d);                    /* _v2 */
    CUresult (*cuCtxSetCurrent)(CUcontext c);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemGetInfo)(size_t *free_b, size_t *total_b);            /* _v2 */
    CUresult (*cuModuleLoadDataEx)(CUmodule *m, const void *image, unsigned int n_opts, int *opts,
                                   void **values);
    CUresult (*cuModuleUnload)(CUmodule m);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*cuFuncSetAttribute)(CUfunction f, int attr, int value);
    CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);                 /* _v2 */
    CUresult (*cuMemFree)(CUdeviceptr p);                                 /* _v2 */
    CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned int flags);
    CUresult (*cuMemFreeHost)(void *p);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s); /* _v2 */
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);       /* _v2 */
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s); /* _v2 */
    CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                               CUstream s, void **params, void **extra);
    CUresult (*cuStreamCreate)(CUstream *s, unsigned int flags);
    CUresult (*cuStreamDestroy)(CUstream s);                              /* _v2 */
    CUresult (*cuStreamSynchronize)(CUstream s);
    CUresult (*cuStreamWaitEvent)(CUstream s, CUevent e, unsigned int flags);
    CUresult (*cuEventCreate)(CUevent *e, unsigned int flags);
    CUresult (*cuEventDestroy)(CUevent e);                                /* _v2 */
    CUresult (*cuEventRecord)(CUevent e, CUstream s);
    CUresult (*cuEventSynchronize)(CUevent e);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
} cuda_driver_api;

/* ---- cuBLASLt (libcublasLt.so.13 or .12) ---- */
typedef int cublasStatus_t;  /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque *cublasLtMatmulPreference_t;
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

#define TK_CUDA_R_32F 0
#define TK_CUDA_R_16BF 14
#define TK_CUBLAS_COMPUTE_32F 68
#define TK_CUBLAS_COMPUTE_32F_FAST_TF32 77
#define TK_CUBLAS_OP_N 0
#define TK_CUBLAS_OP_T 1
#define TK_CUBLASLT_MATMUL_DESC_TRANSA 3
#define TK_CUBLASLT_MATMUL_DESC_TRANSB 4
#define TK_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT 5
#define TK_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET 6
#define TK_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1
#define TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES 5
#define TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES 6
#define TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES 7
#define TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES 8

typedef struct {
    cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *h);
    cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t h);
    size_t (*cublasLtGetVersion)(void);
    cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *d, int compute_type, int scale_type);
    cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t d);
    cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t d, int attr, const void *buf,
                                                     size_t size);
    cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *l, int type, uint64_t rows,
                                                 uint64_t cols, int64_t ld);
    cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t l);
    cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t l, int attr, const void *buf,
                                                       size_t size);
    cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *p);
    cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t p);
    cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t p, int attr,
                                                           const void *buf, size_t size);
    cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
                                                     cublasLtMatmulPreference_t p, int requested,
                                                     cublasLtMatmulHeuristicResult_t *results, int *found);
    cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                                     const void *A, cublasLtMatrixLayout_t a, const void *B,
                                     cublasLtMatrixLayout_t b, const void *beta, const void *C,
                                     cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t dd,
                                     const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws_bytes,
                                     CUstream s);
} cublaslt_api;

#endif
