/* test_cuda_device.c - the GPU's kernels against the CPU's on a real NVIDIA
 * GPU (the driver and cuBLASLt found at run time). Where there is none it
 * prints "SKIP: <why>" and exits 0, so the suite counts it as skipped, not
 * passed. The same checks as test_cuda_kernels and test_cuda_model (50
 * training steps here). scripts/device_check.sh runs it on the H200. */
#include "cuda_kernel_checks.h"
#include "cuda_model_checks.h"

static gpu *dev;

static void test_kernels_on_gpu(void) { run_kernel_checks(dev); }
static void test_model_on_gpu(void) { run_model_checks(dev, 50); }

int main(void)
{
    tempo_error e;
    if (gpu_open(&dev, GPU_CUDA, &e)) {
        printf("SKIP: no usable GPU (%s)\n", e.msg);
        return 0;
    }
    const gpu_info *in = gpu_get_info(dev);
    printf("gpu: %s, compute capability %d.%d, %d SMs, %.1f GB, driver %d, PTX %s, %s\n", in->name, in->cc_major,
           in->cc_minor, in->sm_count, (double)in->mem_total / 1e9, in->driver_version, in->ptx_target, in->cublaslt);
    RUN(test_kernels_on_gpu);
    RUN(test_model_on_gpu);
    gpu_close(dev);
    return test_summary("test_cuda_device");
}
