#!/usr/bin/env bash
# cuda_api_headers.sh - src/kernels/cuda/cuda_api.h (tempo's own declarations
# of the CUDA driver API and cuBLASLt, so that tempo builds without a CUDA
# toolkit) against NVIDIA's headers, where a toolkit is installed: every
# constant equal, every function pointer type assignable from the real
# function (same parameters and result), each struct tempo mirrors the same
# size. Without a toolkit it says SKIP (counted as skipped).
source "$(dirname "$0")/train_common.bash"
inc=""
for d in "${CUDA_HOME:-}/include" /usr/local/cuda/include /usr/include; do
    [ -f "$d/cuda.h" ] && [ -f "$d/cublasLt.h" ] && { inc=$d; break; }
done
[ -n "$inc" ] || { echo "SKIP: no CUDA toolkit headers (cuda.h, cublasLt.h) on this machine"; exit 0; }
cat > "$E2E_TMP/check.c" <<'C'
#include <cuda.h>
#include <cublasLt.h>
#include "kernels/cuda/cuda_api.h"
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)
SAME(TK_CUDA_SUCCESS, CUDA_SUCCESS); SAME(TK_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(TK_CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY); SAME(TK_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(TK_CU_DEVICE_ATTRIBUTE_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
SAME(TK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(TK_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
SAME(TK_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
SAME(TK_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
SAME(TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(TK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(TK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(TK_CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER); SAME(TK_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
SAME(TK_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER); SAME(TK_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(TK_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING); SAME(TK_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME(TK_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING); SAME(TK_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME(TK_CUDA_R_32F, CUDA_R_32F); SAME(TK_CUDA_R_16BF, CUDA_R_16BF);
SAME(TK_CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F); SAME(TK_CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_FAST_TF32);
SAME(TK_CUBLAS_OP_N, CUBLAS_OP_N); SAME(TK_CUBLAS_OP_T, CUBLAS_OP_T);
SAME(TK_CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA); SAME(TK_CUBLASLT_MATMUL_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB);
SAME(TK_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME(TK_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME(TK_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME(TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
SAME(TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
SAME(TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
SAME(TK_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
SAME(sizeof(tk_cublaslt_algo), sizeof(cublasLtMatmulAlgo_t));
SAME(sizeof(tk_cublaslt_heuristic), sizeof(cublasLtMatmulHeuristicResult_t));
SAME(sizeof(CUdeviceptr), sizeof(uint64_t));
int main(void) { return 0; }
C
# the function pointer types: tempo's two tables written again with NVIDIA's type names, then
# each slot assigned the real function: a parameter or result of another type fails (-Werror)
python3 - "$E2E_TMP/check.c" <<'PY'
import re, sys
src = open("src/kernels/cuda/cuda_api.h").read()
names = {"tk_cu_result": "CUresult", "tk_cu_deviceptr": "CUdeviceptr", "tk_cu_device": "CUdevice",
         "tk_cu_context": "CUcontext", "tk_cu_module": "CUmodule", "tk_cu_function": "CUfunction",
         "tk_cu_stream": "CUstream", "tk_cu_event": "CUevent", "tk_cublas_status": "cublasStatus_t",
         "tk_cublaslt_handle": "cublasLtHandle_t", "tk_cublaslt_desc": "cublasLtMatmulDesc_t",
         "tk_cublaslt_layout": "cublasLtMatrixLayout_t", "tk_cublaslt_pref": "cublasLtMatmulPreference_t",
         "tk_cublaslt_algo": "cublasLtMatmulAlgo_t", "tk_cublaslt_heuristic": "cublasLtMatmulHeuristicResult_t"}
# enum-typed parameters tempo declares as int: NVIDIA's enum names for them
enums = {("cuDeviceGetAttribute", 1): "CUdevice_attribute", ("cuFuncSetAttribute", 1): "CUfunction_attribute",
         ("cublasLtMatmulDescCreate", 1): "cublasComputeType_t", ("cublasLtMatmulDescCreate", 2): "cudaDataType_t",
         ("cublasLtMatmulDescSetAttribute", 1): "cublasLtMatmulDescAttributes_t",
         ("cublasLtMatrixLayoutCreate", 1): "cudaDataType", ("cublasLtMatrixLayoutSetAttribute", 1): "cublasLtMatrixLayoutAttribute_t",
         ("cublasLtMatmulPreferenceSetAttribute", 1): "cublasLtMatmulPreferenceAttributes_t",
         ("cublasLtMatmulAlgoGetHeuristic", 0): None}
real = {"cuDeviceTotalMem": "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRelease": "cuDevicePrimaryCtxRelease_v2",
        "cuMemGetInfo": "cuMemGetInfo_v2", "cuMemAlloc": "cuMemAlloc_v2", "cuMemFree": "cuMemFree_v2",
        "cuMemcpyHtoDAsync": "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync": "cuMemcpyDtoHAsync_v2",
        "cuMemcpyDtoDAsync": "cuMemcpyDtoDAsync_v2", "cuStreamDestroy": "cuStreamDestroy_v2",
        "cuEventDestroy": "cuEventDestroy_v2"}
out = []
for table in ("cuda_driver_api", "cublaslt_api"):
    end = src.index("} " + table + ";")
    body = src[src.rindex("typedef struct {", 0, end) + len("typedef struct {"):end]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for ret, name, params in re.findall(r"([\w ]+?)\s*\(\*(\w+)\)\s*\(([^;]*?)\);", body, re.S):
        ps = [p.strip() for p in " ".join(params.split()).split(",")]
        for i, p in enumerate(ps):
            for t, r in names.items():
                p = re.sub(r"\b" + t + r"\b", r, p)
            if (name, i) in enums and enums[(name, i)] and re.match(r"^(const )?int \w+$", p):
                p = enums[(name, i)] + " " + p.split()[-1]
            if name == "cuModuleLoadDataEx" and p.startswith("int *opts"):
                p = "CUjit_option *opts"
            ps[i] = p
        r = names.get(ret.strip(), ret.strip())
        fields.append(f"    {r} (*{name})({', '.join(ps)});")
        out.append(f"static void check_{name}(void) {{ {table}_real t; t.{name} = {real.get(name, name)}; (void)t; }}")
    out.insert(0, "typedef struct {\n" + "\n".join(fields) + "\n} " + table + "_real;")
open(sys.argv[1], "a").write("\n".join(out) + "\n")
PY
cc -std=c11 -Wall -Werror -Wno-unused-function -Isrc -I"$inc" -c "$E2E_TMP/check.c" -o "$E2E_TMP/check.o" 2>"$E2E_TMP/cc.log" ||
    { cat "$E2E_TMP/cc.log"; fail "cuda_api.h disagrees with $inc"; }
echo "cuda_api.h matches $inc"
exit 0
