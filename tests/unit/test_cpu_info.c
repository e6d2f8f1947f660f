/* test_cpu_info.c - cpu_info values and the kernel-path switch; the hardware
 * profile's JSON round trip, its error cases, its peak lookup and
 * load_or_measure's measure-then-save-then-load cycle. No figure is checked
 * against a speed (the machine is shared): only that measurements are sane. */
#include "test.h"

#include <unistd.h>

#include "bench/hw_profile.h"
#include "bench/peak.h"
#include "bench/sysload.h"
#include "core/cpu_info.h"
#include "core/fileio.h"

static void test_cpu_values(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    CHECK(ci.cores >= 1 && ci.cores <= 4096);
    CHECK(ci.l1d_bytes >= 1024 && ci.l1d_bytes <= (64L << 20));
    CHECK(ci.l2_bytes >= ci.l1d_bytes);
    CHECK(ci.l3_bytes >= 1024);
    CHECK(ci.model[0] != 0);
    CHECK(ci.avx2 == 0 || ci.avx2 == 1);
    /* FMA3 machines with AVX2 exist without F16C only in theory; at least
     * the flags must be consistent with what the compiler runtime says. */
    CHECK(ci.avx2 == (__builtin_cpu_supports("avx2") != 0));
    CHECK(ci.fma == (__builtin_cpu_supports("fma") != 0));
    if (ci.caches_from_os == 0)
        CHECK(ci.l1d_bytes == CPU_FALLBACK_L1D_BYTES || ci.l2_bytes == CPU_FALLBACK_L2_BYTES ||
              ci.l3_bytes == CPU_FALLBACK_L3_BYTES);
}

static void test_kernel_path_env(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    const char *old = getenv("TEMPO_KERNELS");
    char saved[64] = "";
    if (old)
        snprintf(saved, sizeof saved, "%s", old);

    setenv("TEMPO_KERNELS", "portable", 1);
    CHECK(cpu_kernel_path_select(&ci) == CPU_KERNELS_PORTABLE);
    unsetenv("TEMPO_KERNELS");
    cpu_kernel_path best = !(ci.avx2 && ci.fma) ? CPU_KERNELS_PORTABLE
                         : ci.avx512f         ? CPU_KERNELS_AVX512
                                              : CPU_KERNELS_AVX2;
    CHECK(cpu_kernel_path_select(&ci) == best);
    setenv("TEMPO_KERNELS", "avx512", 1);
    CHECK(cpu_kernel_path_select(&ci) == best);
    /* "avx2" caps the path at AVX2 (an AVX-512 CPU runs the AVX2 GEMM). */
    setenv("TEMPO_KERNELS", "avx2", 1);
    CHECK(cpu_kernel_path_select(&ci) == (best > CPU_KERNELS_AVX2 ? CPU_KERNELS_AVX2 : best));
    unsetenv("TEMPO_KERNELS");
    /* A CPU without AVX2 never gets the AVX2 path, whatever the env says;
     * avx512f without AVX2 + FMA gets neither. */
    cpu_info fake = ci;
    fake.avx2 = 0;
    fake.avx512f = 1;
    CHECK(cpu_kernel_path_select(&fake) == CPU_KERNELS_PORTABLE);
    fake = ci;
    fake.avx2 = fake.fma = 1;
    fake.avx512f = 0;
    CHECK(cpu_kernel_path_select(&fake) == CPU_KERNELS_AVX2);
    fake.avx512f = 1;
    CHECK(cpu_kernel_path_select(&fake) == CPU_KERNELS_AVX512);
    CHECK(strcmp(cpu_kernel_path_name(CPU_KERNELS_AVX512), "avx512") == 0);
    CHECK(strcmp(cpu_kernel_path_name(CPU_KERNELS_AVX2), "avx2") == 0);
    CHECK(strcmp(cpu_kernel_path_name(CPU_KERNELS_PORTABLE), "portable") == 0);

    if (old)
        setenv("TEMPO_KERNELS", saved, 1);
    else
        unsetenv("TEMPO_KERNELS");
}

/* What one core can do at most: a clock of MAX_GHZ, two 256-bit FMA pipes
 * (8 lanes x 2 FLOPs x 2 = 32 FLOPs per cycle) for the AVX2 loop, two 512-bit
 * pipes (64) for the AVX-512 loop; for the
 * portable loop (128-bit SSE at the x86-64-v2 baseline, no FMA), at most four
 * 4-lane operations per cycle (16 FLOPs). At least: a core of 1 GHz with one
 * pipe, shared three ways with other work. A count of FLOPs per iteration off
 * by a power of two lands outside on most machines (this one: 113 GFLOP/s
 * AVX2, 45-49 portable at 1 thread). */
#define MAX_GHZ 6.0
#define AVX2_MAX_GFLOPS (32 * MAX_GHZ)
#define AVX512_MAX_GFLOPS (64 * MAX_GHZ)
#define PORTABLE_MAX_GFLOPS (16 * MAX_GHZ)
#define AVX2_MIN_GFLOPS (16 * 1.0 / 3)
#define PORTABLE_MIN_GFLOPS (4 * 1.0 / 3)
/* Triad over 3 x 1 MiB (cache-resident): at most three 64-byte accesses per cycle. */
#define TRIAD_MAX_GBS (3 * 64 * MAX_GHZ)
/* A read of 256 KiB (in L2): at most three 64-byte loads per cycle; a pass
 * the compiler dropped or hoisted out of the repetition would read faster. */
#define READ_MAX_GBS (3 * 64 * MAX_GHZ)

static void test_peak_sane(void)
{
    cpu_info ci;
    cpu_info_query(&ci);
    double g = peak_fma_gflops(CPU_KERNELS_PORTABLE, 1, 0.02);
    CHECK_MSG(g > PORTABLE_MIN_GFLOPS && g <= PORTABLE_MAX_GFLOPS, "portable %.1f GFLOP/s", g);
    if (ci.avx2 && ci.fma) {
        double v = peak_fma_gflops(CPU_KERNELS_AVX2, 1, 0.02);
        CHECK_MSG(v > AVX2_MIN_GFLOPS && v <= AVX2_MAX_GFLOPS, "AVX2 %.1f GFLOP/s", v);
    } else {
        TEST_SKIP("no AVX2 and FMA on this CPU: their peak loop not run");
    }
    if (ci.avx2 && ci.fma && ci.avx512f) {   /* two 512-bit pipes at most */
        double v = peak_fma_gflops(CPU_KERNELS_AVX512, 1, 0.02);
        CHECK_MSG(v > AVX2_MIN_GFLOPS && v <= AVX512_MAX_GFLOPS, "AVX-512 %.1f GFLOP/s", v);
    } else {
        TEST_SKIP("no AVX-512 on this CPU: its peak loop not run");
    }
    if (ci.avx512bf16) {   /* two products a lane: at most twice the widest FMA's bound */
        double v = peak_bf16_gflops(1, 0.02);
        CHECK_MSG(v > AVX2_MIN_GFLOPS && v <= 2 * AVX512_MAX_GFLOPS, "AVX-512 BF16 %.1f GFLOP/s", v);
    } else {
        CHECK(peak_bf16_gflops(1, 0.02) == 0);
        TEST_SKIP("no AVX-512 BF16 on this CPU: its peak loop not run");
    }
    peak_triad_arrays t;
    tempo_error err;
    tempo_error_clear(&err);
    CHECK(peak_triad_alloc(&t, 1 << 20, 1, &err) == 0);
    if (t.a) {
        double bw = peak_triad_gbs(&t, 1, 0.01);
        CHECK_MSG(bw > 0.5 && bw <= TRIAD_MAX_GBS, "triad %.1f GB/s", bw);
        CHECK(t.a[0] == 1 + 0.5f * 2 && t.a[t.n - 1] == 2);
        peak_triad_free(&t);
    }
    for (int path = 0; path <= (ci.avx2 ? 1 : 0); path++) {
        double rd = peak_read_gbs(path ? CPU_KERNELS_AVX2 : CPU_KERNELS_PORTABLE, 256 << 10, 1, 0.01, &err);
        CHECK_MSG(rd > 0.5 && rd <= READ_MAX_GBS, "read (%s) %.1f GB/s", path ? "avx2" : "portable", rd);
    }
    CHECK(peak_read_gbs(CPU_KERNELS_PORTABLE, 1, 2, 0.001, &err) > 0);   /* one block at least, 2 threads */
}

static void test_sysload(void)
{
    sysload_sample s;
    sysload_sample_now(&s);
    volatile double x = 0;
    for (int i = 0; i < 1000000; i++)
        x += i;
    sysload_report r;
    sysload_since(&s, &r);
    CHECK(r.wall_s >= 0);
    CHECK(r.other_cores >= 0 && r.steal_cores >= 0);
    CHECK(r.contended == (r.other_cores > SYSLOAD_CONTENDED_CORES));
}

static hw_profile sample_profile(void)
{
    hw_profile p;
    memset(&p, 0, sizeof p);
    p.n_peak = 2;
    p.peak_gflops[0] = (hw_point){1, 94.25};
    p.peak_gflops[1] = (hw_point){2, 187.5};
    p.n_bandwidth = 2;
    p.bandwidth_gbs[0] = (hw_point){1, 11.5};
    p.bandwidth_gbs[1] = (hw_point){2, 17};
    p.cores = 2;
    p.l1d_bytes = 32768;
    p.l2_bytes = 524288;
    p.l3_bytes = 33554432;
    snprintf(p.cpu, sizeof p.cpu, "AMD \"EPYC\" \\ 7B13");
    p.avx2 = p.fma = 1;
    p.f16c = 0;
    snprintf(p.kernels, sizeof p.kernels, "avx2");
    snprintf(p.measured_at, sizeof p.measured_at, "2025-01-31T12:00:00Z");
    p.seconds = 4.125;
    p.other_load_cores = 0.5;
    p.contended = 1;
    return p;
}

static void test_profile_roundtrip(void)
{
    hw_profile p = sample_profile(), q;
    strbuf sb = {0};
    tempo_error err;
    tempo_error_clear(&err);
    CHECK(hw_profile_to_json(&p, &sb, &err) == 0);
    CHECK(hw_profile_from_json(&q, sb.data, sb.len, &err) == 0);
    CHECK_MSG(err.msg[0] == 0, "%s", err.msg);
    CHECK(q.n_peak == 2 && q.peak_gflops[1].threads == 2 && q.peak_gflops[1].value == 187.5);
    CHECK(q.n_bandwidth == 2 && q.bandwidth_gbs[0].value == 11.5);
    CHECK(q.cores == 2 && q.l1d_bytes == 32768 && q.l2_bytes == 524288 && q.l3_bytes == 33554432);
    CHECK(strcmp(q.cpu, p.cpu) == 0);
    CHECK(q.avx2 == 1 && q.fma == 1 && q.f16c == 0 && q.contended == 1);
    CHECK(strcmp(q.kernels, "avx2") == 0 && strcmp(q.measured_at, p.measured_at) == 0);
    CHECK(q.seconds == 4.125 && q.other_load_cores == 0.5);
    CHECK(q.n_peak_bf16 == 0);   /* written as {} */
    strbuf_free(&sb);
    p.n_peak_bf16 = 1;
    p.peak_bf16_gflops[0] = (hw_point){1, 222.5};
    sb = (strbuf){0};
    CHECK(hw_profile_to_json(&p, &sb, &err) == 0 && hw_profile_from_json(&q, sb.data, sb.len, &err) == 0);
    CHECK(q.n_peak_bf16 == 1 && q.peak_bf16_gflops[0].threads == 1 && q.peak_bf16_gflops[0].value == 222.5);
    strbuf_free(&sb);

    /* Unknown keys of any shape are skipped; an empty bandwidth is fine. */
    const char *extra = "{\"x\":[1,{\"y\":null},\"z\"],\"peak_gflops\":{\"1\":50},"
                        "\"bandwidth_gbs\":{},\"note\":\"a\\\"b\"}";
    CHECK(hw_profile_from_json(&q, extra, strlen(extra), &err) == 0);
    CHECK(q.n_peak == 1 && q.peak_gflops[0].value == 50 && q.n_bandwidth == 0 && q.cores == 1);

    /* counts no integer type holds (a damaged or hand-edited file) read as absent, never cast */
    const char *huge = "{\"peak_gflops\":{\"1\":50},\"cores\":1e19,\"l1d_bytes\":1e300,"
                       "\"l2_bytes\":-1e300,\"l3_bytes\":3.5}";
    CHECK(hw_profile_from_json(&q, huge, strlen(huge), &err) == 0);
    CHECK_MSG(q.cores == 1 && q.l1d_bytes == 0 && q.l2_bytes == 0 && q.l3_bytes == 0, "cores %d, l1d %ld, l2 %ld, l3 %ld",
              q.cores, q.l1d_bytes, q.l2_bytes, q.l3_bytes);
}

static void test_profile_errors(void)
{
    const char *bad[] = {
        "",
        "[]",
        "{}",
        "{\"peak_gflops\":{}}",
        "{\"peak_gflops\":{\"1\":-3}}",
        "{\"peak_gflops\":{\"1\":1e999}}",   /* beyond a double: never an infinite peak (MFU 0) */
        "{\"peak_gflops\":{\"1\":3,\"2\":5,\"2\":6}}",   /* which one would MFU use? */
        "{\"peak_gflops\":{\"one\":3}}",
        "{\"peak_gflops\":{\"1\":3},\"peak_bf16_gflops\":{\"1\":0}}",
        "{\"peak_gflops\":{\"1\":3},\"peak_bf16_gflops\":[6]}",
        "{\"peak_gflops\":{\"1\":3}",
        "{\"peak_gflops\":{\"1\":3},\"avx2\":yes}",
        "{\"peak_gflops\":{\"1\":3},\"cpu\":\"unterminated}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hw_profile q;
        tempo_error err;
        tempo_error_clear(&err);
        CHECK_MSG(hw_profile_from_json(&q, bad[i], strlen(bad[i]), &err) == -1, "%s", bad[i]);
        CHECK_MSG(err.msg[0] != 0, "no message for %s", bad[i]);
    }
}

static void test_peak_lookup(void)
{
    hw_profile p = sample_profile();
    CHECK(hw_profile_peak_gflops(&p, 1) == 94.25);
    CHECK(hw_profile_peak_gflops(&p, 2) == 187.5);
    CHECK(hw_profile_peak_gflops(&p, 4) == 187.5);   /* capped at the largest measured */
    p.n_peak = 1;
    CHECK(hw_profile_peak_gflops(&p, 3) == 94.25);   /* only one point: cap is itself */
    p.n_peak = 0;
    CHECK(hw_profile_peak_gflops(&p, 1) == 0);
    /* the matrix peak: bf16's where asked for and measured, else the FMA's */
    p = sample_profile();
    CHECK(hw_profile_matrix_gflops(&p, 2, 1) == 187.5 && hw_profile_matrix_gflops(&p, 2, 0) == 187.5);
    p.n_peak_bf16 = 2;
    p.peak_bf16_gflops[0] = (hw_point){1, 200};
    p.peak_bf16_gflops[1] = (hw_point){2, 390};
    CHECK(hw_profile_matrix_gflops(&p, 2, 1) == 390 && hw_profile_matrix_gflops(&p, 1, 1) == 200);
    CHECK(hw_profile_matrix_gflops(&p, 4, 1) == 390 && hw_profile_matrix_gflops(&p, 2, 0) == 187.5);
}

/* An FMA peak scales with the physical cores: a profile whose peak at its
 * most threads falls short of 0.75 x min(threads, physical) x the
 * one-thread peak is short (the threads shared cores), capped by the
 * physical cores (SMT siblings share the FMA units); one point never is. */
static void test_peak_scaling(void)
{
    hw_profile p = sample_profile();   /* 94.25 at 1, 187.5 at 2 */
    CHECK(!hw_profile_scaling_short(&p, 2));
    p.peak_gflops[1].value = 102.5;    /* as measured with the second vCPU gone */
    CHECK(hw_profile_scaling_short(&p, 2));
    CHECK(!hw_profile_scaling_short(&p, 1));   /* one physical core: no more to expect */
    p.peak_gflops[1].value = 0.75 * 2 * 94.25;
    CHECK(!hw_profile_scaling_short(&p, 2));
    p.peak_gflops[1].value = 0.74 * 2 * 94.25;
    CHECK(hw_profile_scaling_short(&p, 2));
    p.peak_gflops[1] = (hw_point){4, 160};   /* 4 threads on 2 physical cores: 2 cores' worth expected */
    CHECK(!hw_profile_scaling_short(&p, 2));
    CHECK(hw_profile_scaling_short(&p, 4));
    p.n_peak = 1;
    CHECK(!hw_profile_scaling_short(&p, 2));
    int phys = hw_physical_cores(-1);
    cpu_info ci;
    cpu_info_query(&ci);
    CHECK_MSG(phys == -1 || (phys >= 1 && phys <= ci.cores), "%d physical cores of %d", phys, ci.cores);
}

static void test_load_or_measure(void)
{
    char dir[] = "/tmp/tempo_test_hw_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/sub/hardware.json", dir);
    setenv("TEMPO_HW_PROFILE", path, 1);
    tempo_error err;
    tempo_error_clear(&err);
    hw_profile p, q;
    CHECK(hw_profile_load_or_measure(&p, &err) == 0);     /* measures, saves */
    CHECK_MSG(err.msg[0] == 0, "%s", err.msg);
    CHECK(p.n_peak >= 1 && p.peak_gflops[0].threads == 1 && p.peak_gflops[0].value > 0);
    CHECK(p.n_bandwidth == 0 && p.cores >= 1);
    CHECK(path_exists(path));
    p.contended = 0;   /* as measured on a quiet machine (this one may be busy): used as it is */
    for (int i = 1; i < p.n_peak; i++)   /* and with its threads on cores of their own */
        p.peak_gflops[i].value = p.peak_gflops[0].value * p.peak_gflops[i].threads;
    CHECK(hw_profile_save(&p, path, &err) == 0);
    CHECK(hw_profile_load_or_measure(&q, &err) == 0);     /* loads */
    CHECK(q.peak_gflops[0].value == p.peak_gflops[0].value);
    CHECK(strcmp(q.measured_at, p.measured_at) == 0);
    CHECK(hw_profile_fits_here(&q));

    /* A profile of another kernel path or machine is measured again and
     * replaced (an AVX2 peak must not stand for the AVX-512 GEMM's), and
     * so is one whose bf16 peak is missing where the CPU has one, or
     * present where it has none. */
    const char *change[4] = {"kernels", "cores", "cpu", "bf16 peak"};
    for (int c = 0; c < 4; c++) {
        hw_profile other = p;
        if (c == 3)
            other.n_peak_bf16 = p.n_peak_bf16 ? 0 : 1;
        if (c == 3 && other.n_peak_bf16)
            other.peak_bf16_gflops[0] = (hw_point){1, 10};
        if (c == 0)
            snprintf(other.kernels, sizeof other.kernels, "%s",
                     strcmp(p.kernels, "portable") ? "portable" : "avx2");
        else if (c == 1)
            other.cores = p.cores + 1;
        else if (c == 2)
            snprintf(other.cpu, sizeof other.cpu, "another CPU");
        other.peak_gflops[0].value = 12345;
        snprintf(other.measured_at, sizeof other.measured_at, "2000-01-01T00:00:00Z");
        CHECK(!hw_profile_fits_here(&other));
        CHECK(hw_profile_save(&other, path, &err) == 0);
        CHECK(hw_profile_load_or_measure(&q, &err) == 0);
        CHECK_MSG(q.peak_gflops[0].value != 12345 && strcmp(q.measured_at, "2000-01-01T00:00:00Z") != 0,
                  "a profile with another %s was used as it was", change[c]);
        CHECK(hw_profile_fits_here(&q));
        hw_profile saved;
        CHECK(hw_profile_load(&saved, path, &err) == 0 && saved.peak_gflops[0].value == q.peak_gflops[0].value);
    }

    /* A profile measured under load is measured again: the higher peak stands, and is saved. */
    hw_profile busy = p;
    busy.contended = 1;
    busy.peak_gflops[0].value = 1e-3;   /* far below any real measurement */
    for (int i = 1; i < busy.n_peak; i++)
        busy.peak_gflops[i].value = 1e-3;
    snprintf(busy.measured_at, sizeof busy.measured_at, "2000-01-01T00:00:00Z");
    CHECK(hw_profile_fits_here(&busy));
    CHECK(hw_profile_save(&busy, path, &err) == 0);
    CHECK(hw_profile_load_or_measure(&q, &err) == 0);
    CHECK_MSG(q.peak_gflops[0].value > 1e-3 && strcmp(q.measured_at, "2000-01-01T00:00:00Z") != 0,
              "a contended profile's peak was used as it was");
    hw_profile saved;
    CHECK(hw_profile_load(&saved, path, &err) == 0 && saved.peak_gflops[0].value == q.peak_gflops[0].value);
    /* ... and one whose peak no measurement here reaches stays: load only lowers a peak */
    busy.peak_gflops[0].value = 1e9;
    for (int i = 1; i < busy.n_peak; i++)
        busy.peak_gflops[i].value = 1e9;
    CHECK(hw_profile_save(&busy, path, &err) == 0);
    CHECK(hw_profile_load_or_measure(&q, &err) == 0);
    if (q.contended)   /* this measurement was under load too: the higher, cached, peak */
        CHECK(q.peak_gflops[0].value == 1e9);
    else               /* a quiet measurement replaces it */
        CHECK(q.peak_gflops[0].value < 1e9 && hw_profile_load(&saved, path, &err) == 0 &&
              saved.peak_gflops[0].value == q.peak_gflops[0].value);

    /* A quiet profile whose second thread added nothing (the threads shared a core) is measured again too. */
    if (p.n_peak >= 2 && hw_physical_cores(1) >= 2) {
        hw_profile shared = p;
        shared.contended = 0;
        for (int i = 0; i < shared.n_peak; i++)
            shared.peak_gflops[i].value = 1e-3;   /* no scaling at all, and below any measurement */
        snprintf(shared.measured_at, sizeof shared.measured_at, "2000-01-01T00:00:00Z");
        CHECK(hw_profile_save(&shared, path, &err) == 0);
        CHECK(hw_profile_load_or_measure(&q, &err) == 0);
        CHECK_MSG(strcmp(q.measured_at, "2000-01-01T00:00:00Z") != 0,
                  "a profile whose peak did not scale with the cores was used as it was");
    } else {
        TEST_SKIP("one physical core here: a profile short of the cores' scaling cannot be made");
    }

    /* A corrupt file is an error naming the file, never silently replaced. */
    CHECK(file_write_atomic(path, "{\"peak_gflops\":", 15, &err) == 0);
    tempo_error_clear(&err);
    CHECK(hw_profile_load_or_measure(&q, &err) == -1);
    CHECK(strstr(err.msg, path) != NULL);

    unsetenv("TEMPO_HW_PROFILE");
    unlink(path);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    RUN(test_cpu_values);
    RUN(test_kernel_path_env);
    RUN(test_peak_sane);
    RUN(test_sysload);
    RUN(test_profile_roundtrip);
    RUN(test_profile_errors);
    RUN(test_peak_lookup);
    RUN(test_peak_scaling);
    RUN(test_load_or_measure);
    return test_summary("test_cpu_info");
}
