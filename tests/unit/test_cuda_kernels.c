/* test_cuda_kernels.c - the GPU's kernels against the CPU's on the CPU
 * emulator (kernels/cuda/emulator.h): the kernels' logic and the host code
 * that launches them, on every machine. What the hardware itself does is
 * test_cuda_device's (skipped where there is no GPU). */
#include "cuda_kernel_checks.h"

static gpu *emu;

static void test_kernels_on_emulator(void) { run_kernel_checks(emu); }

/* the emulator catches a kernel that reads shared memory it never wrote, a
 * bad launch and a missing kernel name the same way the driver would */
static void test_errors_are_reported(void)
{
    tempo_error e;
    CHECK(gpu_sync(emu, &e) == 0);
    float *x = NULL;
    CHECK(gpu_host_alloc(emu, (void **)&x, 16, "x", &e) == 0);
    gpu_host_free(emu, x);
    /* a launch with a block that is not a multiple of 32 fails, names the kernel, and stays failed */
    gpu_ptr p = 0;
    CHECK(gpu_alloc(emu, &p, 64, "p", &e) == 0);
    size_t n = 4;
    float s = 2;
    void *a[] = {&p, &n, &s};
    gpu_launch(emu, GK_scale_f32, 1, 1, 1, 20, 0, a);
    CHECK(gpu_failed(emu));
    CHECK(gpu_sync(emu, &e) == -1 && strstr(e.msg, "scale_f32"));
    CHECK(gpu_sync(emu, &e) == -1);
    gpu_free(emu, p);
}

/* what a GPU faults on or refuses fails the emulator's launch too: a
 * 16-byte access at an address that is not 16-byte aligned (here RMSNorm's
 * vector path on rows offset by one float), a grid past 65,535 in y, and
 * more than 48 KiB of dynamic shared memory where gpu_kernel_smem did not
 * raise the kernel's limit, and a block above a kernel's launch bounds. Each
 * on a fresh context: a failed one stays failed. */
static void test_hardware_faults_are_reported(void)
{
    tempo_error e;
    gpu *g;
    CHECK(gpu_open(&g, GPU_EMULATOR, &e) == 0);
    gpu_ptr x = 0, y = 0, w = 0, r = 0;
    CHECK(gpu_alloc(g, &x, 256, "x", &e) == 0 && gpu_alloc(g, &y, 256, "y", &e) == 0 &&
          gpu_alloc(g, &w, 64, "w", &e) == 0 && gpu_alloc(g, &r, 64, "r", &e) == 0);
    cuda_rmsnorm_forward(g, GPU_F32, GPU_F32, y, r, 0, x, w, 2, 8, 1e-5f);
    CHECK(gpu_sync(g, &e) == 0); /* aligned: fine */
    cuda_rmsnorm_forward(g, GPU_F32, GPU_F32, y, r, 0, x + 4, w, 2, 8, 1e-5f);
    CHECK(gpu_sync(g, &e) == -1 && strstr(e.msg, "rmsnorm_fwd") && strstr(e.msg, "not 16-byte aligned"));
    gpu_free(g, x); gpu_free(g, y); gpu_free(g, w); gpu_free(g, r);
    gpu_close(g);
    CHECK(gpu_open(&g, GPU_EMULATOR, &e) == 0);
    CHECK(gpu_alloc(g, &x, 64, "x", &e) == 0);
    size_t n = 4;
    float s = 2;
    void *a[] = {&x, &n, &s};
    gpu_launch(g, GK_scale_f32, 1, 65535, 1, 32, 0, a);
    CHECK(gpu_sync(g, &e) == 0);
    gpu_launch(g, GK_scale_f32, 1, 65536, 1, 32, 0, a);
    CHECK(gpu_sync(g, &e) == -1 && strstr(e.msg, "scale_f32") && strstr(e.msg, "limits"));
    gpu_free(g, x);
    gpu_close(g);
    /* dynamic shared memory above 48 KiB only after gpu_kernel_smem, as the driver has it */
    CHECK(gpu_open(&g, GPU_EMULATOR, &e) == 0);
    CHECK(gpu_alloc(g, &x, 64, "x", &e) == 0);
    gpu_launch(g, GK_scale_f32, 1, 1, 1, 32, GPU_SMEM_DEFAULT, a);
    CHECK(gpu_sync(g, &e) == 0);
    CHECK(gpu_kernel_smem(g, GK_scale_f32, GPU_SMEM_DEFAULT + 16, &e) == 0);
    gpu_launch(g, GK_scale_f32, 1, 1, 1, 32, GPU_SMEM_DEFAULT + 16, a);
    CHECK(gpu_sync(g, &e) == 0);
    void *b[] = {&x, &x, &n, &s};
    gpu_launch(g, GK_sgd_f32, 1, 1, 1, 32, GPU_SMEM_DEFAULT + 16, b); /* another kernel: its own limit */
    CHECK(gpu_sync(g, &e) == -1 && strstr(e.msg, "sgd_f32") && strstr(e.msg, "gpu_kernel_smem"));
    gpu_free(g, x);
    gpu_close(g);
    /* a block above a kernel's launch bounds (the head's register row pass: 256 threads) */
    CHECK(gpu_open(&g, GPU_EMULATOR, &e) == 0);
    gpu_ptr z = 0, t = 0, l = 0;
    CHECK(gpu_alloc(g, &z, 64 * 4, "logits", &e) == 0 && gpu_alloc(g, &t, 4, "target", &e) == 0 &&
          gpu_alloc(g, &l, 4, "loss", &e) == 0);
    gpu_memset_async(g, z, 0, 64 * 4);
    gpu_memset_async(g, t, 0, 4);
    gpu_ptr none = 0;
    float beta = 1, mix_a = 1, cap = 0, scale = 1;
    int V = 64;
    void *c[] = {&z, &t, &l, &none, &none, &none, &beta, &none, &none, &mix_a, &V, &cap, &scale};
    gpu_launch(g, GK_ce_rows_reg_f32, 1, 1, 1, 256, 0, c);
    CHECK(gpu_sync(g, &e) == 0);
    gpu_launch(g, GK_ce_rows_reg_f32, 1, 1, 1, 288, 0, c);
    CHECK(gpu_sync(g, &e) == -1 && strstr(e.msg, "ce_rows_reg_f32") && strstr(e.msg, "launch bounds"));
    gpu_free(g, z); gpu_free(g, t); gpu_free(g, l);
    gpu_close(g);
}

/* the copy stream's uploads run no earlier than the compute stream's wait
 * for them (or a sync), reading their source then: the compute stream
 * reading before the wait sees the poison, a host that rewrote the source
 * before then has its new bytes copied. A compute-stream download reads
 * the device in the stream's order but reaches host memory at a sync only. */
static void test_copy_stream_runs_late(void)
{
    tempo_error e;
    gpu *g;
    if (gpu_open(&g, GPU_EMULATOR, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return;
    }
    gpu_ptr d = 0;
    CHECK(gpu_alloc(g, &d, 16, "d", &e) == 0);
    float src[4] = {1, 2, 3, 4}, early[4] = {0}, got[4] = {0};
    gpu_upload_async(g, GPU_STREAM_COPY, d, src, sizeof src);
    gpu_download_async(g, GPU_STREAM_COMPUTE, early, d, sizeof early); /* no wait: too early */
    CHECK(early[0] == 0 && early[3] == 0);                              /* and not in host memory yet */
    src[0] = 5; /* before the copy ran */
    gpu_compute_waits_for_copy(g);
    gpu_download_async(g, GPU_STREAM_COMPUTE, got, d, sizeof got);
    CHECK(got[0] == 0);
    CHECK(gpu_sync(g, &e) == 0);
    CHECK(isnan(early[0]) && isnan(early[3]));
    CHECK(got[0] == 5 && got[1] == 2 && got[3] == 4);
    src[1] = 7;
    gpu_upload_async(g, GPU_STREAM_COPY, d, src, sizeof src);
    CHECK(gpu_copy_sync(g, &e) == 0); /* the copy stream's own sync runs it too */
    CHECK(gpu_download(g, got, d, sizeof got, &e) == 0 && got[1] == 7);
    /* freeing runs what is queued first, as cuMemFree waits for it (else the sync below would write
     * into freed memory: AddressSanitizer's build stops there) */
    gpu_upload_async(g, GPU_STREAM_COPY, d, src, sizeof src);
    gpu_free(g, d);
    CHECK(gpu_sync(g, &e) == 0);
    gpu_close(g);
}

int main(void)
{
    tempo_error e;
    if (gpu_open(&emu, GPU_EMULATOR, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    printf("gpu: %s\n", gpu_get_info(emu)->name);
    RUN(test_kernels_on_emulator);
    RUN(test_errors_are_reported);
    RUN(test_hardware_faults_are_reported);
    RUN(test_copy_stream_runs_late);
    gpu_close(emu);
    return test_summary("test_cuda_kernels");
}
