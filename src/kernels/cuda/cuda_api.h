/* cuda_api.h - tempo's own declarations of the parts of the CUDA driver API
 * and of cuBLASLt that it calls, so that tempo builds with no CUDA header or
 * library: both are reached at run time through dlopen (gpu.c). Values and
 * signatures are those of CUDA 12/13's cuda.h, library_types.h,
 * cublas_api.h and cublasLt.h, under tk_ names (so that a file may include
 * both); tests/e2e/cuda_api_headers.sh checks them against those headers
 * wherever a toolkit is installed. Only what tempo uses is here. */
#ifndef TEMPO_CUDA_API_H
#define TEMPO_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- driver API (libcuda.so.1) ---- */
typedef int tk_cu_result;      /* CUDA_SUCCESS = 0 */
typedef int tk_cu_device;
typedef uint64_t tk_cu_deviceptr;
typedef struct tk_cu_ctx_st *tk_cu_context;
typedef struct tk_cu_mod_st *tk_cu_module;
typedef struct tk_cu_func_st *tk_cu_function;
typedef struct tk_cu_stream_st *tk_cu_stream;
typedef struct tk_cu_event_st *tk_cu_event;

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
    tk_cu_result (*cuInit)(unsigned int flags);
    tk_cu_result (*cuDriverGetVersion)(int *version);
    tk_cu_result (*cuGetErrorName)(tk_cu_result e, const char **s);
    tk_cu_result (*cuGetErrorString)(tk_cu_result e, const char **s);
    tk_cu_result (*cuDeviceGetCount)(int *n);
    tk_cu_result (*cuDeviceGet)(tk_cu_device *d, int ordinal);
    tk_cu_result (*cuDeviceGetName)(char *name, int len, tk_cu_device d);
    tk_cu_result (*cuDeviceGetAttribute)(int *v, int attr, tk_cu_device d);
    tk_cu_result (*cuDeviceTotalMem)(size_t *bytes, tk_cu_device d);              /* cuDeviceTotalMem_v2 */
    tk_cu_result (*cuDevicePrimaryCtxRetain)(tk_cu_context *c, tk_cu_device d);
    tk_cu_result (*cuDevicePrimaryCtxRelease)(tk_cu_device d);                    /* _v2 */
    tk_cu_result (*cuCtxSetCurrent)(tk_cu_context c);
    tk_cu_result (*cuCtxSynchronize)(void);
    tk_cu_result (*cuMemGetInfo)(size_t *free_b, size_t *total_b);            /* _v2 */
    tk_cu_result (*cuModuleLoadDataEx)(tk_cu_module *m, const void *image, unsigned int n_opts, int *opts,
                                   void **values);
    tk_cu_result (*cuModuleUnload)(tk_cu_module m);
    tk_cu_result (*cuModuleGetFunction)(tk_cu_function *f, tk_cu_module m, const char *name);
    tk_cu_result (*cuFuncSetAttribute)(tk_cu_function f, int attr, int value);
    tk_cu_result (*cuMemAlloc)(tk_cu_deviceptr *p, size_t bytes);                 /* _v2 */
    tk_cu_result (*cuMemFree)(tk_cu_deviceptr p);                                 /* _v2 */
    tk_cu_result (*cuMemHostAlloc)(void **p, size_t bytes, unsigned int flags);
    tk_cu_result (*cuMemFreeHost)(void *p);
    tk_cu_result (*cuMemcpyHtoDAsync)(tk_cu_deviceptr dst, const void *src, size_t bytes, tk_cu_stream s); /* _v2 */
    tk_cu_result (*cuMemcpyDtoHAsync)(void *dst, tk_cu_deviceptr src, size_t bytes, tk_cu_stream s);       /* _v2 */
    tk_cu_result (*cuMemcpyDtoDAsync)(tk_cu_deviceptr dst, tk_cu_deviceptr src, size_t bytes, tk_cu_stream s); /* _v2 */
    tk_cu_result (*cuMemsetD8Async)(tk_cu_deviceptr dst, unsigned char v, size_t n, tk_cu_stream s);
    tk_cu_result (*cuLaunchKernel)(tk_cu_function f, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                               tk_cu_stream s, void **params, void **extra);
    tk_cu_result (*cuStreamCreate)(tk_cu_stream *s, unsigned int flags);
    tk_cu_result (*cuStreamDestroy)(tk_cu_stream s);                              /* _v2 */
    tk_cu_result (*cuStreamSynchronize)(tk_cu_stream s);
    tk_cu_result (*cuStreamWaitEvent)(tk_cu_stream s, tk_cu_event e, unsigned int flags);
    tk_cu_result (*cuEventCreate)(tk_cu_event *e, unsigned int flags);
    tk_cu_result (*cuEventDestroy)(tk_cu_event e);                                /* _v2 */
    tk_cu_result (*cuEventRecord)(tk_cu_event e, tk_cu_stream s);
    tk_cu_result (*cuEventSynchronize)(tk_cu_event e);
    tk_cu_result (*cuEventElapsedTime)(float *ms, tk_cu_event start, tk_cu_event end);
} cuda_driver_api;

/* ---- cuBLASLt (libcublasLt.so.13 or .12) ---- */
typedef int tk_cublas_status;  /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct tk_cublaslt_ctx *tk_cublaslt_handle;
typedef struct tk_cublaslt_desc_st *tk_cublaslt_desc;
typedef struct tk_cublaslt_layout_st *tk_cublaslt_layout;
typedef struct tk_cublaslt_pref_st *tk_cublaslt_pref;
typedef struct {
    uint64_t data[8];
} tk_cublaslt_algo;
typedef struct {
    tk_cublaslt_algo algo;
    size_t workspaceSize;
    tk_cublas_status state;
    float wavesCount;
    int reserved[4];
} tk_cublaslt_heuristic;

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
    tk_cublas_status (*cublasLtCreate)(tk_cublaslt_handle *h);
    tk_cublas_status (*cublasLtDestroy)(tk_cublaslt_handle h);
    size_t (*cublasLtGetVersion)(void);
    tk_cublas_status (*cublasLtMatmulDescCreate)(tk_cublaslt_desc *d, int compute_type, int scale_type);
    tk_cublas_status (*cublasLtMatmulDescDestroy)(tk_cublaslt_desc d);
    tk_cublas_status (*cublasLtMatmulDescSetAttribute)(tk_cublaslt_desc d, int attr, const void *buf,
                                                     size_t size);
    tk_cublas_status (*cublasLtMatrixLayoutCreate)(tk_cublaslt_layout *l, int type, uint64_t rows,
                                                 uint64_t cols, int64_t ld);
    tk_cublas_status (*cublasLtMatrixLayoutDestroy)(tk_cublaslt_layout l);
    tk_cublas_status (*cublasLtMatrixLayoutSetAttribute)(tk_cublaslt_layout l, int attr, const void *buf,
                                                       size_t size);
    tk_cublas_status (*cublasLtMatmulPreferenceCreate)(tk_cublaslt_pref *p);
    tk_cublas_status (*cublasLtMatmulPreferenceDestroy)(tk_cublaslt_pref p);
    tk_cublas_status (*cublasLtMatmulPreferenceSetAttribute)(tk_cublaslt_pref p, int attr,
                                                           const void *buf, size_t size);
    tk_cublas_status (*cublasLtMatmulAlgoGetHeuristic)(tk_cublaslt_handle h, tk_cublaslt_desc d,
                                                     tk_cublaslt_layout a, tk_cublaslt_layout b,
                                                     tk_cublaslt_layout c, tk_cublaslt_layout dd,
                                                     tk_cublaslt_pref p, int requested,
                                                     tk_cublaslt_heuristic *results, int *found);
    tk_cublas_status (*cublasLtMatmul)(tk_cublaslt_handle h, tk_cublaslt_desc d, const void *alpha,
                                     const void *A, tk_cublaslt_layout a, const void *B,
                                     tk_cublaslt_layout b, const void *beta, const void *C,
                                     tk_cublaslt_layout c, void *D, tk_cublaslt_layout dd,
                                     const tk_cublaslt_algo *algo, void *workspace, size_t ws_bytes,
                                     tk_cu_stream s);
} cublaslt_api;

#endif
