/* cpu_info.c - CPU features, cores, caches and model name (see cpu_info.h).
 * Features come from cpuid via __builtin_cpu_supports (which also checks that
 * the OS saves ymm state), the FMA units' width from the vendor and family;
 * cores from the affinity mask (with OpenMP's threads bound, the CPUs of all
 * its places); caches from
 * /sys/devices/system/cpu/cpu0/cache/index*; the model from /proc/cpuinfo. */
#include "core/cpu_info.h"
#include "core/thread_pin.h"

#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read the first line of a small text file into buf; 0 on success. */
static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = 0;
    return 0;
}

/* Parse a sysfs size such as "32K", "512K", "32768K", "8M"; 0 if malformed. */
static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v <= 0)
        return 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': return v * 1024;
    case 'M': return v * 1024 * 1024;
    case 'G': return v * 1024 * 1024 * 1024;
    case 0: return v;
    default: return 0;
    }
}

static void query_caches(cpu_info *ci)
{
    long l1d = 0, l2 = 0, l3 = 0;
    for (int i = 0; i < 16; i++) {
        char path[128], level[16], type[32], size[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_line(path, level, sizeof level))
            break;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_line(path, type, sizeof type))
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_line(path, size, sizeof size))
            continue;
        long bytes = parse_size(size);
        int lv = atoi(level);
        if (!strcmp(type, "Instruction") || bytes <= 0)
            continue;
        if (lv == 1 && !l1d)
            l1d = bytes;
        else if (lv == 2 && !l2)
            l2 = bytes;
        else if (lv == 3 && !l3)
            l3 = bytes;
    }
    ci->caches_from_os = l1d > 0 && l2 > 0 && l3 > 0;
    ci->l1d_bytes = l1d > 0 ? l1d : CPU_FALLBACK_L1D_BYTES;
    ci->l2_bytes = l2 > 0 ? l2 : CPU_FALLBACK_L2_BYTES;
    ci->l3_bytes = l3 > 0 ? l3 : CPU_FALLBACK_L3_BYTES;
}

static int query_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        cpu_set_t places;   /* bound threads (--pin-threads): the main thread's mask is one place */
        int n = CPU_COUNT(&set), placed = thread_pin_places_mask(&places);
        if (placed > n)
            n = placed;
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void query_model(char *out, size_t n)
{
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10))
            continue;
        const char *v = strchr(line, ':');
        if (!v)
            break;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len = strcspn(v, "\r\n");
        while (len && v[len - 1] == ' ')
            len--;
        if (len)
            snprintf(out, n, "%.*s", (int)len, v);
        break;
    }
    fclose(f);
}

void cpu_info_query_features(cpu_info *ci)
{
    __builtin_cpu_init();
    ci->avx2 = __builtin_cpu_supports("avx2") != 0;
    ci->fma = __builtin_cpu_supports("fma") != 0;
    ci->avx512f = __builtin_cpu_supports("avx512f") != 0;
    /* AMD's AVX-512 before family 0x1a (Zen 4) runs a zmm FMA on two 256-bit
     * pipes. From the data __builtin_cpu_init read once: a cpuid here would
     * be a VM exit on every call (this runs per decode step: 11x slower) */
    ci->fma512_full = ci->avx512f && !__builtin_cpu_is("amdfam19h");
    ci->avx512bf16 = ci->avx512f && __builtin_cpu_supports("avx512bf16") != 0 &&
                     __builtin_cpu_supports("avx512bw") != 0 && __builtin_cpu_supports("avx512vl") != 0;
#ifdef __clang__
    ci->f16c = 0;   /* clang 14 has no "f16c" for __builtin_cpu_supports: the fuzz build only */
#else
    ci->f16c = __builtin_cpu_supports("f16c") != 0;
#endif
}

void cpu_info_query(cpu_info *ci)
{
    memset(ci, 0, sizeof *ci);
    cpu_info_query_features(ci);
    ci->cores = query_cores();
    query_caches(ci);
    query_model(ci->model, sizeof ci->model);
}

cpu_kernel_path cpu_kernel_path_select(const cpu_info *ci)
{
    const char *want = getenv("TEMPO_KERNELS");
    if (want && !strcmp(want, "portable"))
        return CPU_KERNELS_PORTABLE;
    if (!ci->avx2 || !ci->fma)
        return CPU_KERNELS_PORTABLE;
    if (!ci->avx512f || (want && !strcmp(want, "avx2")))
        return CPU_KERNELS_AVX2;
    return CPU_KERNELS_AVX512;
}

int cpu_kernel_path_bf16(const cpu_info *ci, cpu_kernel_path path)
{
    return path == CPU_KERNELS_AVX512 && ci->avx512bf16;
}

const char *cpu_kernel_path_name(cpu_kernel_path path)
{
    return path == CPU_KERNELS_AVX512 ? "avx512" : path == CPU_KERNELS_AVX2 ? "avx2" : "portable";
}
