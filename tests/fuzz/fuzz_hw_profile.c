/* fuzz_hw_profile.c - libFuzzer harness for the hardware profile's reader
 * (bench/hw_profile.c: ~/.cache/tempo/hardware.json or $TEMPO_HW_PROFILE, a
 * file any user can edit, and what every MFU figure divides by). Any bytes
 * must be read or refused, never crash or leak; a profile read has at least
 * one peak, no thread count twice, every figure finite and positive, and
 * what the writer writes of it reads back with the same figures. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bench/hw_profile.h"

static int points_ok(const hw_point *pts, int n)
{
    for (int i = 0; i < n; i++)
    {
        if (pts[i].threads < 1 || !(pts[i].value > 0) || !isfinite(pts[i].value))
            return 0;
        for (int j = 0; j < i; j++)
            if (pts[j].threads == pts[i].threads)
                return 0;
    }
    return n >= 0 && n <= HW_PROFILE_MAX_POINTS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tempo_error err;
    hw_profile p;
    if (hw_profile_from_json(&p, (const char *)data, size, &err))
        return 0;
    if (p.n_peak < 1 || !points_ok(p.peak_gflops, p.n_peak) || !points_ok(p.bandwidth_gbs, p.n_bandwidth) ||
        !points_ok(p.peak_bf16_gflops, p.n_peak_bf16) || !(hw_profile_matrix_gflops(&p, 2, 1) > 0) ||
        p.cores < 1 || p.l1d_bytes < 0 || p.l2_bytes < 0 || p.l3_bytes < 0 || !isfinite(p.seconds) ||
        !isfinite(p.other_load_cores))
        __builtin_trap();
    (void)hw_profile_scaling_short(&p, 2);
    /* what the writer writes reads back with the same figures (strings may come back mended: a byte
     * that is not UTF-8 is written as \u00XX) */
    strbuf sb = {0};
    hw_profile q;
    if (hw_profile_to_json(&p, &sb, &err) == 0) {
        if (hw_profile_from_json(&q, sb.data, sb.len, &err) || q.n_peak != p.n_peak ||
            q.n_bandwidth != p.n_bandwidth || q.n_peak_bf16 != p.n_peak_bf16 || q.cores != p.cores ||
            q.l2_bytes != p.l2_bytes ||
            q.contended != p.contended)
            __builtin_trap();
        for (int i = 0; i < p.n_peak; i++)
            if (q.peak_gflops[i].threads != p.peak_gflops[i].threads ||
                q.peak_gflops[i].value != p.peak_gflops[i].value)
                __builtin_trap();
        for (int i = 0; i < p.n_peak_bf16; i++)
            if (q.peak_bf16_gflops[i].threads != p.peak_bf16_gflops[i].threads ||
                q.peak_bf16_gflops[i].value != p.peak_bf16_gflops[i].value)
                __builtin_trap();
        for (int i = 0; i < p.n_bandwidth; i++)
            if (q.bandwidth_gbs[i].threads != p.bandwidth_gbs[i].threads ||
                q.bandwidth_gbs[i].value != p.bandwidth_gbs[i].value)
                __builtin_trap();
    }
    strbuf_free(&sb);
    return 0;
}
