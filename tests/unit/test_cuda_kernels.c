/* test_cuda_kernels.c - the GPU's kernels against the CPU's on the CPU
 * emulator (kernels/cuda/emulator.h): the kernels' logic and the host code
 * that launches them, on every machine. What the hardware itself does is
 * test_cuda_device's (skipped where there is no GPU). */
#include "child_stops.h"
#include "core/sanitizer.h"
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

/* An emulator of its own, for the stream checks (each counts its syncs). */
static gpu *open_emulator(void)
{
    tempo_error e;
    gpu *g;
    if (gpu_open(&g, GPU_EMULATOR, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return NULL;
    }
    return g;
}

/* The emulator holds both streams' work back until the host waits for it:
 * a launch's arguments are copied when queued, an upload reads pinned
 * memory when it runs (pageable memory when queued, as the driver stages
 * it), a download reaches host memory when it runs. */
static void test_streams_run_when_waited_for(void)
{
    tempo_error e;
    gpu *g = open_emulator();
    if (!g)
        return;
    gpu_ptr d = 0;
    float *pin = NULL, page[4] = {1, 2, 3, 4}, got[4] = {0};
    CHECK(gpu_alloc(g, &d, 16, "d", &e) == 0 && gpu_host_alloc(g, (void **)&pin, 16, "pin", &e) == 0);
    for (int i = 0; i < 4; i++)
        pin[i] = (float)(10 + i);
    /* pinned staging rewritten before the sync: the new bytes are what the GPU copies */
    gpu_upload_async(g, GPU_STREAM_COMPUTE, d, pin, 16);
    pin[0] = 20;
    gpu_download_async(g, GPU_STREAM_COMPUTE, got, d, 16);
    CHECK(got[0] == 0 && got[3] == 0); /* nothing has run: not in host memory yet */
    CHECK(gpu_sync(g, &e) == 0);
    CHECK(got[0] == 20 && got[1] == 11 && got[3] == 13);
    /* pageable memory is copied when queued */
    gpu_upload_async(g, GPU_STREAM_COMPUTE, d, page, 16);
    page[0] = 30;
    CHECK(gpu_download(g, got, d, 16, &e) == 0 && got[0] == 1 && got[3] == 4);
    /* a launch's arguments are copied when queued: the kernel scales by 2, not by the 5 set after */
    size_t n = 4;
    float s = 2;
    void *a[] = {&d, &n, &s};
    gpu_launch(g, GK_scale_f32, 1, 1, 1, 32, 0, a);
    s = 5;
    n = 0;
    CHECK(gpu_download(g, got, d, 16, &e) == 0 && got[0] == 2 && got[3] == 8);
    /* the copy stream's own sync runs its copies, and the compute stream's work only where they wait for it */
    pin[0] = 40;
    gpu_upload_async(g, GPU_STREAM_COMPUTE, d, pin, 16);
    gpu_copy_waits_for_compute(g);
    gpu_download_async(g, GPU_STREAM_COPY, got, d, 16);
    pin[1] = 41;
    gpu_upload_async(g, GPU_STREAM_COMPUTE, d, pin, 16); /* after the copy's wait: still queued after its sync */
    CHECK(gpu_copy_sync(g, &e) == 0);
    CHECK(got[0] == 40 && got[1] == 41 && got[2] == 12);
    pin[2] = 42;
    CHECK(gpu_download(g, got, d, 16, &e) == 0 && got[2] == 42);
    /* a fault is reported by the sync and nothing queued after it runs */
    gpu_memset_async(g, d, 0, 16);
    CHECK(gpu_sync(g, &e) == 0);
    float one = 1;
    void *bad[] = {&d, &n, &one};
    n = 4;
    gpu_launch(g, GK_scale_f32, 1, 1, 1, 32, 64 << 10, bad); /* above 48 KiB without the opt-in: refused now */
    CHECK(gpu_failed(g));
    CHECK(gpu_sync(g, &e) == -1 && strstr(e.msg, "scale_f32"));
    gpu_host_free(g, pin);
    gpu_free(g, d);
    gpu_close(g);
}

/* Without a wait between them the two streams run in either order: every
 * other sync runs the copy stream's work as early as it may run, the others
 * as late, so a wait left out shows in one of two rounds, and work that
 * waits is right in both. */
static void test_streams_missing_waits_show(void)
{
    tempo_error e;
    gpu *g = open_emulator();
    if (!g)
        return;
    gpu_ptr d[2] = {0, 0};
    float *src = NULL, *src2 = NULL;
    CHECK(gpu_alloc(g, &d[0], 16, "d0", &e) == 0 && gpu_alloc(g, &d[1], 16, "d1", &e) == 0);
    CHECK(gpu_host_alloc(g, (void **)&src, 16, "src", &e) == 0);
    CHECK(gpu_host_alloc(g, (void **)&src2, 16, "src2", &e) == 0);
    for (int i = 0; i < 4; i++)
        src[i] = (float)(1 + i);
    /* the compute stream reads an upload: without gpu_compute_waits_for_copy, one round reads the poison */
    int early_poison = 0, early_data = 0;
    for (int r = 0; r < 2; r++) {
        float early[4] = {0}, late[4] = {0};
        gpu_upload_async(g, GPU_STREAM_COPY, d[r], src, 16);
        gpu_download_async(g, GPU_STREAM_COMPUTE, early, d[r], 16); /* no wait */
        gpu_compute_waits_for_copy(g);
        gpu_download_async(g, GPU_STREAM_COMPUTE, late, d[r], 16);
        CHECK(gpu_sync(g, &e) == 0);
        early_poison += isnan(early[0]);
        early_data += early[0] == 1;
        CHECK(late[0] == 1 && late[3] == 4);
    }
    CHECK(early_poison == 1 && early_data == 1);
    /* the copy stream overwrites what the compute stream reads: without gpu_copy_waits_for_compute, one
     * round reads the new bytes */
    int overwritten = 0, kept = 0;
    for (int r = 0; r < 2; r++) { /* one sync a round: the rounds alternate */
        float before[4] = {0}, waited[4] = {0};
        gpu_download_async(g, GPU_STREAM_COMPUTE, before, d[0], 16);
        src[0] = (float)(100 + r);
        gpu_upload_async(g, GPU_STREAM_COPY, d[0], src, 16); /* no wait */
        gpu_download_async(g, GPU_STREAM_COMPUTE, waited, d[1], 16);
        gpu_copy_waits_for_compute(g);
        src2[0] = (float)(200 + r);
        gpu_upload_async(g, GPU_STREAM_COPY, d[1], src2, 16);
        CHECK(gpu_sync(g, &e) == 0);
        overwritten += before[0] == (float)(100 + r);
        kept += before[0] == (r == 0 ? 1.0f : 100.0f);
        CHECK(waited[0] == (r == 0 ? 1.0f : 200.0f)); /* always what the last round left */
    }
    CHECK(overwritten == 1 && kept == 1);
    /* freeing runs what is queued first, as cuMemFree waits for it (else the sync below would write into
     * freed memory: AddressSanitizer's build stops there) */
    gpu_upload_async(g, GPU_STREAM_COPY, d[0], src, 16);
    gpu_free(g, d[0]);
    CHECK(gpu_sync(g, &e) == 0);
    gpu_host_free(g, src);
    gpu_host_free(g, src2);
    gpu_free(g, d[1]);
    gpu_close(g);
}

#ifdef TEMPO_ASAN
/* The child of the check below: a launch reading one float past a 20-byte buffer. */
static void read_past_buffer(void *unused)
{
    (void)unused;
    tempo_error e;
    gpu *g;
    gpu_ptr d = 0;
    if (gpu_open(&g, GPU_EMULATOR, &e) || gpu_alloc(g, &d, 20, "d", &e))
        _exit(3);
    size_t n = 6; /* 24 bytes */
    float s = 2;
    void *a[] = {&d, &n, &s};
    gpu_launch(g, GK_scale_f32, 1, 1, 1, 32, 0, a);
    _exit(gpu_sync(g, &e) ? 4 : 0);
}

/* The sanitizers' build: a kernel reading one float past the 20 bytes a
 * buffer was allocated with (the emulator's allocation is rounded up to 256)
 * stops the process, as a read of another buffer's bytes on a GPU would
 * not (run in a child, AddressSanitizer's report looked for). */
static void test_device_overflow_stops_asan(void)
{
    char buf[8192];
    int stopped = child_stops(read_past_buffer, NULL, buf, sizeof buf);
    CHECK_MSG(stopped && strstr(buf, "AddressSanitizer") && strstr(buf, "scale_f32"),
              "the overflow was not reported: %.300s", buf);
}
#endif

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
    RUN(test_streams_run_when_waited_for);
    RUN(test_streams_missing_waits_show);
#ifdef TEMPO_ASAN
    RUN(test_device_overflow_stops_asan);
#endif
    gpu_close(emu);
    return test_summary("test_cuda_kernels");
}
