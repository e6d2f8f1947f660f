/* test_cuda_model.c - the whole training step on the GPU path (model_cuda.h,
 * optimizer_cuda.h) against the CPU's, run on the CPU emulator: the host
 * logic around the kernels on every machine. test_cuda_device runs the same
 * checks (more steps) on a real GPU. */
#include "cuda_kernel_checks.h"
#include "cuda_model_checks.h"

static gpu *emu;

static void test_model_on_emulator(void) { run_model_checks(emu, 6); }

int main(void)
{
    tempo_error e;
    if (gpu_open(&emu, GPU_EMULATOR, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    ck_gpu = emu;
    RUN(test_model_on_emulator);
    gpu_close(emu);
    return test_summary("test_cuda_model");
}
