/* gpu.c - the GPU context (see gpu.h): the CUDA driver and cuBLASLt reached
 * through dlopen, the built-in PTX loaded as modules, or the CPU emulator;
 * memory, copies, launches, events and the one pending error. */
#include "kernels/cuda/gpu_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sanitizer.h"
#include "core/timer.h"
#include "kernels/cuda/gpu_gemm.h"
#include "kernels/cuda/gpu_ptx.h"

/* PTX ISA 7.2 (what clang 14 emits for sm_80) needs a CUDA 11.2 driver */
#define GPU_MIN_DRIVER 11020

static const char *const kernel_names[GK_COUNT] = {
#define GPU_KERNEL(name) #name,
#include "kernels/cuda/gpu_kernels.def"
#undef GPU_KERNEL
};

const char *gpu_kernel_name(gpu_kernel k) { return k >= 0 && k < GK_COUNT ? kernel_names[k] : "?"; }

/* ---- loading the libraries ---- */

static const char *cu_error(const gpu *g, tk_cu_result r, char *buf, size_t len)
{
    const char *name = NULL, *str = NULL;
    if (g && g->cu.cuGetErrorName)
        g->cu.cuGetErrorName(r, &name);
    if (g && g->cu.cuGetErrorString)
        g->cu.cuGetErrorString(r, &str);
    snprintf(buf, len, "%s%s%s (%d)", name ? name : "CUDA error", str ? ": " : "", str ? str : "", r);
    return buf;
}

/* dlsym each entry of a table of function pointers, by names given in order. */
static int resolve(void *lib, void *table, const char *const *names, int n, const char **missing)
{
    for (int i = 0; i < n; i++) {
        void *sym = dlsym(lib, names[i]);
        if (!sym) {
            *missing = names[i];
            return -1;
        }
        memcpy((char *)table + (size_t)i * sizeof sym, &sym, sizeof sym);
    }
    return 0;
}

/* cuda_driver_api's fields, in order, by the symbols libcuda exports */
static const char *const driver_symbols[] = {
    "cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuDeviceGetCount", "cuDeviceGet",
    "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemGetInfo_v2",
    "cuModuleLoadDataEx", "cuModuleUnload", "cuModuleGetFunction", "cuFuncSetAttribute", "cuMemAlloc_v2",
    "cuMemFree_v2", "cuMemHostAlloc", "cuMemFreeHost", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2", "cuMemsetD8Async", "cuLaunchKernel", "cuStreamCreate", "cuStreamDestroy_v2",
    "cuStreamSynchronize", "cuStreamWaitEvent", "cuEventCreate", "cuEventDestroy_v2", "cuEventRecord",
    "cuEventSynchronize", "cuEventElapsedTime",
};
_Static_assert(sizeof(driver_symbols) / sizeof *driver_symbols == sizeof(cuda_driver_api) / sizeof(void (*)(void)),
               "driver_symbols must list every field of cuda_driver_api");

static const char *const cublaslt_symbols[] = {
    "cublasLtCreate", "cublasLtDestroy", "cublasLtGetVersion", "cublasLtMatmulDescCreate",
    "cublasLtMatmulDescDestroy", "cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutCreate",
    "cublasLtMatrixLayoutDestroy", "cublasLtMatrixLayoutSetAttribute", "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceDestroy",
    "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul",
};
_Static_assert(sizeof(cublaslt_symbols) / sizeof *cublaslt_symbols == sizeof(cublaslt_api) / sizeof(void (*)(void)),
               "cublaslt_symbols must list every field of cublaslt_api");

static const char *libcuda_name(void)
{
    const char *e = getenv("TEMPO_LIBCUDA");
    return e && *e ? e : "libcuda.so.1";
}

/* Opens cuBLASLt: TEMPO_CUBLASLT if set, else by soname (13, then 12).
 * Returns the handle and fills the path it was found by. */
static void *open_cublaslt(char *path, size_t len, char *why, size_t why_len)
{
    const char *e = getenv("TEMPO_CUBLASLT");
    const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
    if (e && *e) {
        void *h = dlopen(e, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(why, why_len, "TEMPO_CUBLASLT=%s: %s", e, dlerror());
        else
            snprintf(path, len, "%s", e);
        return h;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(path, len, "%s", names[i]);
            return h;
        }
    }
    snprintf(why, why_len, "libcublasLt.so.13 or .12 not found on the library path (set TEMPO_CUBLASLT to its file)");
    return NULL;
}

void gpu_describe(char *buf, size_t len)
{
    char targets[64] = "";
    int n = 0;
    for (const gpu_ptx_module *m = gpu_ptx_modules; m->name; m++, n++)
        if (!strstr(targets, m->target) && strlen(targets) + strlen(m->target) + 2 < sizeof targets)
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%s", *targets ? "," : "",
                     m->target);
    char drv[160];
    void *lib = dlopen(libcuda_name(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(drv, sizeof drv, "no driver (%s not found)", libcuda_name());
    } else {
        tk_cu_result (*init)(unsigned) = (tk_cu_result(*)(unsigned))dlsym(lib, "cuInit");
        tk_cu_result (*ver)(int *) = (tk_cu_result(*)(int *))dlsym(lib, "cuDriverGetVersion");
        tk_cu_result (*count)(int *) = (tk_cu_result(*)(int *))dlsym(lib, "cuDeviceGetCount");
        int v = 0, c = 0;
        tk_cu_result r = init && ver && count ? init(0) : -1;
        if (r == TK_CUDA_SUCCESS && ver(&v) == TK_CUDA_SUCCESS && count(&c) == TK_CUDA_SUCCESS)
            snprintf(drv, sizeof drv, "driver %d.%d, %d GPU%s", v / 1000, v % 1000 / 10, c, c == 1 ? "" : "s");
        else
            snprintf(drv, sizeof drv, "driver library found but cuInit failed (%d)", r);
        dlclose(lib);
    }
    char path[160], why[200];
    void *lt = open_cublaslt(path, sizeof path, why, sizeof why);
    if (lt)
        dlclose(lt);
    snprintf(buf, len, "PTX %s (%d modules%s); %s; cuBLASLt %s", n ? targets : "none built in", n,
             n ? "" : ": no clang at build time", drv, lt ? path : "not found");
}

gpu_backend gpu_backend_from_env(void)
{
    const char *e = getenv("TEMPO_GPU_EMULATOR");
    return e && !strcmp(e, "1") ? GPU_EMULATOR : GPU_CUDA;
}

/* ---- errors ---- */

void gpu_set_error(gpu *g, const char *fmt, ...)
{
    if (g->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->error, sizeof g->error, fmt, ap);
    va_end(ap);
    g->failed = 1;
}

int gpu_failed(const gpu *g) { return g->failed; }

/* ---- open and close ---- */

static int open_driver(gpu *g, tempo_error *err)
{
    char e[200];
    g->libcuda = dlopen(libcuda_name(), RTLD_NOW | RTLD_LOCAL);
    if (!g->libcuda)
        return tempo_fail(err, "cuda: no NVIDIA driver: %s could not be loaded (%s)", libcuda_name(), dlerror());
    const char *missing = NULL;
    if (resolve(g->libcuda, &g->cu, driver_symbols, (int)(sizeof driver_symbols / sizeof *driver_symbols),
                &missing))
        return tempo_fail(err, "cuda: %s has no %s (a driver older than CUDA 11.2?)", libcuda_name(), missing);
    tk_cu_result r = g->cu.cuInit(0);
    if (r == TK_CUDA_ERROR_STUB_LIBRARY)
        return tempo_fail(err, "cuda: %s is the toolkit's stub, not a driver: no NVIDIA driver is installed",
                          libcuda_name());
    if (r == TK_CUDA_ERROR_NO_DEVICE)
        return tempo_fail(err, "cuda: the NVIDIA driver finds no GPU");
    if (r != TK_CUDA_SUCCESS)
        return tempo_fail(err, "cuda: cuInit failed: %s", cu_error(g, r, e, sizeof e));
    int v = 0;
    g->cu.cuDriverGetVersion(&v);
    g->info.driver_version = v;
    if (v < GPU_MIN_DRIVER)
        return tempo_fail(err, "cuda: the driver supports CUDA %d.%d; tempo's PTX needs 11.2 or newer", v / 1000,
                          v % 1000 / 10);
    int count = 0;
    if ((r = g->cu.cuDeviceGetCount(&count)) != TK_CUDA_SUCCESS || count == 0)
        return tempo_fail(err, "cuda: no GPU found");
    const char *ds = getenv("TEMPO_GPU_DEVICE");
    int ordinal = ds && *ds ? atoi(ds) : 0;
    if (ordinal < 0 || ordinal >= count)
        return tempo_fail(err, "cuda: TEMPO_GPU_DEVICE=%s: there %s %d GPU%s", ds, count == 1 ? "is" : "are", count,
                          count == 1 ? "" : "s");
    if ((r = g->cu.cuDeviceGet(&g->dev, ordinal)) != TK_CUDA_SUCCESS)
        return tempo_fail(err, "cuda: cuDeviceGet: %s", cu_error(g, r, e, sizeof e));
    g->cu.cuDeviceGetName(g->info.name, sizeof g->info.name, g->dev);
    int a;
    if (!g->cu.cuDeviceGetAttribute(&a, TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev)) g->info.cc_major = a;
    if (!g->cu.cuDeviceGetAttribute(&a, TK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev)) g->info.cc_minor = a;
    if (!g->cu.cuDeviceGetAttribute(&a, TK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev)) g->info.sm_count = a;
    if (!g->cu.cuDeviceGetAttribute(&a, TK_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g->dev)) g->info.l2_bytes = (size_t)a;
    if (!g->cu.cuDeviceGetAttribute(&a, TK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g->dev))
        g->info.smem_optin = a;
    g->cu.cuDeviceTotalMem(&g->info.mem_total, g->dev);
    if (g->info.cc_major < 8)
        return tempo_fail(err, "cuda: %s has compute capability %d.%d; tempo's kernels need 8.0 or newer (bf16)",
                          g->info.name, g->info.cc_major, g->info.cc_minor);
    if ((r = g->cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev)) != TK_CUDA_SUCCESS)
        return tempo_fail(err, "cuda: cannot create a context on %s: %s", g->info.name, cu_error(g, r, e, sizeof e));
    g->ctx_retained = 1;
    g->cu.cuCtxSetCurrent(g->ctx);
    for (int s = 0; s < 2; s++)
        if ((r = g->cu.cuStreamCreate(&g->stream[s], TK_CU_STREAM_NON_BLOCKING)) != TK_CUDA_SUCCESS)
            return tempo_fail(err, "cuda: cuStreamCreate: %s", cu_error(g, r, e, sizeof e));
    tk_cu_event *evs[4] = {&g->ev_copy, &g->ev_compute, &g->ev_t0, &g->ev_t1};
    for (int i = 0; i < 4; i++)
        if ((r = g->cu.cuEventCreate(evs[i], i < 2 ? TK_CU_EVENT_DISABLE_TIMING : TK_CU_EVENT_DEFAULT)))
            return tempo_fail(err, "cuda: cuEventCreate: %s", cu_error(g, r, e, sizeof e));
    return 0;
}

/* TEMPO_PTX_DIR/NAME.ptx when that variable names a folder holding one (the
 * device check loads nvcc's sm_90 builds this way), else NULL (malloc'd). */
static char *ptx_override(const char *name)
{
    const char *dir = getenv("TEMPO_PTX_DIR");
    if (!dir || !*dir)
        return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.ptx", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf)
        buf[len] = 0;
    return buf;
}

static int load_modules(gpu *g, tempo_error *err)
{
    if (!gpu_ptx_modules[0].name)
        return tempo_fail(err, "cuda: this tempo was built without PTX (no clang at build time): rebuild with clang "
                               "installed");
    snprintf(g->info.ptx_target, sizeof g->info.ptx_target, "%s", gpu_ptx_modules[0].target);
    for (const gpu_ptx_module *m = gpu_ptx_modules; m->name; m++) {
        if (g->n_modules == GPU_MAX_MODULES)
            return tempo_fail(err, "cuda: more than %d PTX modules", GPU_MAX_MODULES);
        char log[4096] = "";
        int opts[2] = {TK_CU_JIT_ERROR_LOG_BUFFER, TK_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
        char *over = ptx_override(m->name);
        if (over)
            snprintf(g->info.ptx_target, sizeof g->info.ptx_target, "%s", "TEMPO_PTX_DIR");
        tk_cu_result r = g->cu.cuModuleLoadDataEx(&g->modules[g->n_modules], over ? over : m->ptx, 2, opts, vals);
        free(over);
        if (r != TK_CUDA_SUCCESS) {
            char e[200];
            char *nl = strchr(log, '\n');
            if (nl) *nl = 0;
            return tempo_fail(err, "cuda: the driver could not compile the built-in PTX (%s, %s): %s%s%s", m->name,
                              m->target, cu_error(g, r, e, sizeof e), *log ? ": " : "", log);
        }
        g->n_modules++;
    }
    for (int k = 0; k < GK_COUNT; k++) {
        for (int i = 0; i < g->n_modules && !g->fn[k]; i++)
            if (g->cu.cuModuleGetFunction(&g->fn[k], g->modules[i], kernel_names[k]) != TK_CUDA_SUCCESS)
                g->fn[k] = NULL;
        if (!g->fn[k])
            return tempo_fail(err, "cuda: kernel %s is missing from the built-in PTX", kernel_names[k]);
    }
    return 0;
}

static int open_cublaslt_handle(gpu *g, tempo_error *err)
{
    char why[240];
    g->liblt = open_cublaslt(g->info.cublaslt, sizeof g->info.cublaslt, why, sizeof why);
    if (!g->liblt)
        return tempo_fail(err, "cuda: no cuBLASLt: %s", why);
    const char *missing = NULL;
    if (resolve(g->liblt, &g->lt, cublaslt_symbols, (int)(sizeof cublaslt_symbols / sizeof *cublaslt_symbols),
                &missing))
        return tempo_fail(err, "cuda: %s has no %s", g->info.cublaslt, missing);
    g->info.cublaslt_version = g->lt.cublasLtGetVersion();
    tk_cublas_status s = g->lt.cublasLtCreate(&g->lt_handle);
    if (s != 0)
        return tempo_fail(err, "cuda: cublasLtCreate failed (status %d)", s);
    return gpu_alloc(g, &g->lt_workspace, GPU_GEMM_WORKSPACE, "the cuBLASLt workspace", err);
}

static int open_emulator(gpu *g, tempo_error *err)
{
    g->emu = tk_emu_registry_new();
    if (!g->emu)
        return tempo_fail(err, "gpu emulator: out of memory");
    for (int k = 0; k < GK_COUNT; k++)
        if ((g->emu_index[k] = tk_emu_find(g->emu, kernel_names[k])) < 0)
            return tempo_fail(err, "gpu emulator: kernel %s is not registered", kernel_names[k]);
    snprintf(g->info.name, sizeof g->info.name, "CPU emulator");
    snprintf(g->info.ptx_target, sizeof g->info.ptx_target, "host");
    g->info.sm_count = 1;
    g->info.mem_total = (size_t)4 << 30;
    g->info.smem_optin = 227 * 1024; /* as an H100/H200: the kernels' requests are checked against it */
    return 0;
}

int gpu_open(gpu **out, gpu_backend backend, tempo_error *err)
{
    *out = NULL;
    gpu *g = calloc(1, sizeof *g);
    if (!g)
        return tempo_fail(err, "gpu: out of memory");
    g->info.backend = backend;
    const char *s = getenv("TEMPO_GPU_SYNC");
    g->sync_each_launch = s && !strcmp(s, "1");
    int rc = backend == GPU_EMULATOR ? open_emulator(g, err)
                                     : (open_driver(g, err) || load_modules(g, err) || open_cublaslt_handle(g, err));
    if (rc) {
        gpu_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

void gpu_close(gpu *g)
{
    if (!g)
        return;
    gpu_gemm_cache_free(g);
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_end(g); /* nobody waits for the work queued any more */
        for (int s = 0; s < 2; s++)
            free(g->emu_stream[s].op);
        free(g->emu_pinned);
        tk_emu_registry_free(g->emu);
    } else {
        if (g->ctx_retained) {
            g->cu.cuCtxSetCurrent(g->ctx);
            g->cu.cuCtxSynchronize();
            if (g->lt_workspace) g->cu.cuMemFree(g->lt_workspace);
            if (g->lt_handle) g->lt.cublasLtDestroy(g->lt_handle);
            for (int i = 0; i < g->n_modules; i++) g->cu.cuModuleUnload(g->modules[i]);
            tk_cu_event evs[4] = {g->ev_copy, g->ev_compute, g->ev_t0, g->ev_t1};
            for (int i = 0; i < 4; i++) if (evs[i]) g->cu.cuEventDestroy(evs[i]);
            for (int i = 0; i < 2; i++) if (g->stream[i]) g->cu.cuStreamDestroy(g->stream[i]);
            g->cu.cuDevicePrimaryCtxRelease(g->dev);
        }
        if (g->liblt) dlclose(g->liblt);
        if (g->libcuda) dlclose(g->libcuda);
    }
    free(g);
}

const gpu_info *gpu_get_info(const gpu *g) { return &g->info; }

int gpu_sync_each_launch(const gpu *g) { return g->sync_each_launch; }

/* ---- memory ---- */

static double gb(size_t b) { return (double)b / 1e9; }

int gpu_alloc(gpu *g, gpu_ptr *p, size_t bytes, const char *what, tempo_error *err)
{
    *p = 0;
    size_t n = bytes ? bytes : 1;
    if (g->info.backend == GPU_EMULATOR) {
        void *h = aligned_alloc(256, (n + 255) / 256 * 256);
        if (!h)
            return tempo_fail(err, "gpu emulator: out of memory for %s (%.3g GB)", what, gb(bytes));
        memset(h, 0xff, (n + 255) / 256 * 256); /* memory is not zeroed: NaN until written */
#ifdef TEMPO_ASAN
        /* in the sanitizers' build, the bytes past the size asked for are out of bounds (a kernel reading
         * past its buffer reads another's on a GPU) */
        ASAN_POISON_MEMORY_REGION((char *)h + n, (n + 255) / 256 * 256 - n);
#endif
        *p = (gpu_ptr)(uintptr_t)h;
        return 0;
    }
    tk_cu_result r = g->cu.cuMemAlloc(p, n);
    if (r == TK_CUDA_SUCCESS)
        return 0;
    size_t fr = 0, tot = 0;
    g->cu.cuMemGetInfo(&fr, &tot);
    char e[200];
    if (r == TK_CUDA_ERROR_OUT_OF_MEMORY)
        return tempo_fail(err, "cuda: out of GPU memory for %s (%.3g GB asked, %.3g GB free of %.3g)", what, gb(bytes),
                          gb(fr), gb(tot));
    return tempo_fail(err, "cuda: allocating %s (%.3g GB): %s", what, gb(bytes), cu_error(g, r, e, sizeof e));
}

void gpu_free(gpu *g, gpu_ptr p)
{
    if (!p)
        return;
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_run(g, 0); /* as cuMemFree, which waits for the work queued before it */
        free((void *)(uintptr_t)p);
    } else {
        g->cu.cuMemFree(p);
    }
}

int gpu_host_alloc(gpu *g, void **p, size_t bytes, const char *what, tempo_error *err)
{
    *p = NULL;
    size_t n = bytes ? bytes : 1;
    if (g->info.backend == GPU_EMULATOR) {
        *p = malloc(n);
        if (*p && gpu_emu_pinned_add(g, *p, n)) {
            free(*p);
            *p = NULL;
        }
        return *p ? 0 : tempo_fail(err, "gpu emulator: out of memory for %s", what);
    }
    tk_cu_result r = g->cu.cuMemHostAlloc(p, n, TK_CU_MEMHOSTALLOC_PORTABLE);
    char e[200];
    return r == TK_CUDA_SUCCESS ? 0
                                : tempo_fail(err, "cuda: pinned host memory for %s (%.3g GB): %s", what, gb(bytes),
                                             cu_error(g, r, e, sizeof e));
}

void gpu_host_free(gpu *g, void *p)
{
    if (!p)
        return;
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_run(g, 0); /* as cuMemFreeHost */
        gpu_emu_pinned_remove(g, p);
        free(p);
    } else {
        g->cu.cuMemFreeHost(p);
    }
}

/* ---- copies ---- */

static void check(gpu *g, tk_cu_result r, const char *what)
{
    if (r != TK_CUDA_SUCCESS) {
        char e[200];
        gpu_set_error(g, "cuda: %s: %s", what, cu_error(g, r, e, sizeof e));
    }
}

void gpu_upload_async(gpu *g, int stream, gpu_ptr dst, const void *src, size_t bytes)
{
    if (g->failed || !bytes)
        return;
    if (g->info.backend == GPU_CUDA)
        check(g, g->cu.cuMemcpyHtoDAsync(dst, src, bytes, g->stream[stream]), "copy to the GPU");
    else
        gpu_emu_copy(g, stream, (void *)(uintptr_t)dst, src, bytes, 1);
}

void gpu_download_async(gpu *g, int stream, void *dst, gpu_ptr src, size_t bytes)
{
    if (g->failed || !bytes)
        return;
    if (g->info.backend == GPU_EMULATOR)
        gpu_emu_copy(g, stream, dst, (const void *)(uintptr_t)src, bytes, 0);
    else
        check(g, g->cu.cuMemcpyDtoHAsync(dst, src, bytes, g->stream[stream]), "copy from the GPU");
}

void gpu_copy_async(gpu *g, gpu_ptr dst, gpu_ptr src, size_t bytes)
{
    if (g->failed || !bytes)
        return;
    if (g->info.backend == GPU_EMULATOR)
        gpu_emu_copy(g, GPU_STREAM_COMPUTE, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes, 0);
    else
        check(g, g->cu.cuMemcpyDtoDAsync(dst, src, bytes, g->stream[0]), "copy on the GPU");
}

void gpu_memset_async(gpu *g, gpu_ptr dst, unsigned char byte, size_t bytes)
{
    if (g->failed || !bytes)
        return;
    if (g->info.backend == GPU_EMULATOR)
        gpu_emu_fill(g, (void *)(uintptr_t)dst, byte, bytes);
    else
        check(g, g->cu.cuMemsetD8Async(dst, byte, bytes, g->stream[0]), "memset on the GPU");
}

int gpu_upload(gpu *g, gpu_ptr dst, const void *src, size_t bytes, tempo_error *err)
{
    gpu_upload_async(g, GPU_STREAM_COMPUTE, dst, src, bytes);
    return gpu_sync(g, err);
}

int gpu_download(gpu *g, void *dst, gpu_ptr src, size_t bytes, tempo_error *err)
{
    gpu_download_async(g, GPU_STREAM_COMPUTE, dst, src, bytes);
    return gpu_sync(g, err);
}

/* ---- launches ---- */

/* ---- profiling ---- */

void gpu_profile_enable(gpu *g, int on)
{
    g->profiling = on;
    memset(g->prof_ms, 0, sizeof g->prof_ms);
    memset(g->prof_calls, 0, sizeof g->prof_calls);
}

double gpu_profile_begin(gpu *g)
{
    if (!g->profiling)
        return 0;
    tempo_error e;
    gpu_sync(g, &e);
    return timer_now();
}

static void profile_end(gpu *g, int slot, double t0)
{
    if (!g->profiling)
        return;
    tempo_error e;
    gpu_sync(g, &e);
    g->prof_ms[slot] += (timer_now() - t0) * 1e3;
    g->prof_calls[slot]++;
}

static const char *const gemm_label_names[GPU_GEMM_LABELS] = {"gemm", "gemm_fwd", "gemm_bwd", "gemm_head",
                                                               "gemm_optimizer"};

void gpu_profile_gemm_label(gpu *g, gpu_gemm_label label)
{
    g->gemm_label = label >= 0 && label < GPU_GEMM_LABELS ? (int)label : 0;
}

void gpu_profile_end_gemm(gpu *g, double t0) { profile_end(g, GK_COUNT + g->gemm_label, t0); }

static const char *slot_name(int k) { return k >= GK_COUNT ? gemm_label_names[k - GK_COUNT] : kernel_names[k]; }

int gpu_profile_report(const gpu *g, const char **names, double *ms, int *calls, int max)
{
    int n = 0;
    for (int pass = 0; pass < max; pass++) { /* selection of the largest remaining: a few dozen entries */
        int best = -1;
        for (int k = 0; k < GK_COUNT + GPU_GEMM_LABELS; k++) {
            if (g->prof_calls[k] == 0)
                continue;
            int taken = 0;
            for (int j = 0; j < n; j++)
                taken |= names[j] == slot_name(k);
            if (!taken && (best < 0 || g->prof_ms[k] > g->prof_ms[best]))
                best = k;
        }
        if (best < 0)
            break;
        names[n] = slot_name(best);
        ms[n] = g->prof_ms[best];
        calls[n] = g->prof_calls[best];
        n++;
    }
    return n;
}

void gpu_launch(gpu *g, gpu_kernel k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned shmem,
                void **args)
{
    if (g->failed)
        return;
    double prof_t0 = gpu_profile_begin(g);
    g->last_kernel = k;
    g->launched_any = 1;
    if (g->info.backend == GPU_EMULATOR) {
        unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, 1, 1};
        char e[200];
        if (shmem > (unsigned)g->info.smem_optin)
            gpu_set_error(g, "gpu emulator: %s asks for %u bytes of shared memory (the limit is %d)", kernel_names[k],
                          shmem, g->info.smem_optin);
        else if (shmem > GPU_SMEM_DEFAULT && shmem > (unsigned)g->smem_set[k]) /* the driver refuses it */
            gpu_set_error(g, "gpu emulator: %s asks for %u bytes of dynamic shared memory, above the %d a launch gets "
                          "unless gpu_kernel_smem raised its limit (to %d)", kernel_names[k], shmem, GPU_SMEM_DEFAULT,
                          g->smem_set[k]);
        else if (tk_emu_check(g->emu, g->emu_index[k], grid, block, e, sizeof e))
            gpu_set_error(g, "%s", e);
        else
            gpu_emu_launch(g, k, grid, block, shmem, args);
        if (g->sync_each_launch)
            gpu_emu_run(g, 0);
        profile_end(g, k, prof_t0);
        return;
    }
    tk_cu_result r = g->cu.cuLaunchKernel(g->fn[k], gx, gy, gz, bx, 1, 1, shmem, g->stream[0], args, NULL);
    if (r != TK_CUDA_SUCCESS) {
        char e[200];
        gpu_set_error(g, "cuda: launching %s (grid %ux%ux%u, block %u, %u B shared): %s", kernel_names[k], gx, gy, gz,
                      bx, shmem, cu_error(g, r, e, sizeof e));
        return;
    }
    if (g->sync_each_launch && (r = g->cu.cuStreamSynchronize(g->stream[0])) != TK_CUDA_SUCCESS) {
        char e[200];
        gpu_set_error(g, "cuda: %s: %s", kernel_names[k], cu_error(g, r, e, sizeof e));
    }
    profile_end(g, k, prof_t0);
}

int gpu_kernel_smem(gpu *g, gpu_kernel k, int bytes, tempo_error *err)
{
    if (bytes > g->info.smem_optin)
        return tempo_fail(err, "cuda: %s needs %d bytes of shared memory per block; %s allows %d", kernel_names[k],
                          bytes, g->info.name, g->info.smem_optin);
    g->smem_set[k] = bytes;
    if (g->info.backend == GPU_EMULATOR)
        return 0;
    tk_cu_result r = g->cu.cuFuncSetAttribute(g->fn[k], TK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    char e[200];
    return r == TK_CUDA_SUCCESS ? 0
                                : tempo_fail(err, "cuda: %s: setting %d bytes of shared memory: %s", kernel_names[k],
                                             bytes, cu_error(g, r, e, sizeof e));
}

int gpu_sync(gpu *g, tempo_error *err)
{
    if (g->info.backend == GPU_EMULATOR)
        gpu_emu_run(g, 0);
    if (!g->failed && g->info.backend == GPU_CUDA) {
        for (int s = 0; s < 2 && !g->failed; s++) {
            tk_cu_result r = g->cu.cuStreamSynchronize(g->stream[s]);
            if (r != TK_CUDA_SUCCESS) {
                char e[200];
                gpu_set_error(g, "cuda: %s%s%s (set TEMPO_GPU_SYNC=1 to name the kernel)", cu_error(g, r, e, sizeof e),
                              g->launched_any ? ", in or after kernel " : "",
                              g->launched_any ? kernel_names[g->last_kernel] : "");
            }
        }
    }
    if (g->failed)
        return tempo_fail(err, "%s", g->error);
    return 0;
}

int gpu_copy_sync(gpu *g, tempo_error *err)
{
    if (g->info.backend == GPU_EMULATOR)
        gpu_emu_run(g, 1);
    if (!g->failed && g->info.backend == GPU_CUDA)
        check(g, g->cu.cuStreamSynchronize(g->stream[1]), "copy stream");
    return g->failed ? tempo_fail(err, "%s", g->error) : 0;
}

void gpu_compute_waits_for_copy(gpu *g)
{
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_wait(g, GPU_STREAM_COMPUTE);
        return;
    }
    if (g->failed)
        return;
    check(g, g->cu.cuEventRecord(g->ev_copy, g->stream[1]), "event record");
    check(g, g->cu.cuStreamWaitEvent(g->stream[0], g->ev_copy, 0), "stream wait");
}

void gpu_copy_waits_for_compute(gpu *g)
{
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_wait(g, GPU_STREAM_COPY);
        return;
    }
    if (g->failed)
        return;
    check(g, g->cu.cuEventRecord(g->ev_compute, g->stream[0]), "event record");
    check(g, g->cu.cuStreamWaitEvent(g->stream[1], g->ev_compute, 0), "stream wait");
}

void gpu_timer_start(gpu *g)
{
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_run(g, 0); /* the work queued before the start is not timed */
        g->emu_t0 = timer_now();
        return;
    }
    if (!g->failed)
        check(g, g->cu.cuEventRecord(g->ev_t0, g->stream[0]), "event record");
}

double gpu_timer_stop_ms(gpu *g)
{
    if (g->info.backend == GPU_EMULATOR) {
        gpu_emu_run(g, 0); /* it waits for the compute stream, as the event's synchronisation */
        return (timer_now() - g->emu_t0) * 1e3;
    }
    if (g->failed)
        return -1;
    check(g, g->cu.cuEventRecord(g->ev_t1, g->stream[0]), "event record");
    if (g->failed)
        return -1;
    check(g, g->cu.cuEventSynchronize(g->ev_t1), "event synchronize");
    float ms = -1;
    if (!g->failed)
        check(g, g->cu.cuEventElapsedTime(&ms, g->ev_t0, g->ev_t1), "event elapsed time");
    return g->failed ? -1 : ms;
}
