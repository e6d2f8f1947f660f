/* fuzz_plan_files.c - libFuzzer harness for the planner's readers of outside
 * files (src/plan/): chip profiles (byte 0 even, bit 2 clear; parsed without
 * a path, so an `efficiencies =` include is refused, never opened), link
 * specs of `bench scale --link` (byte 0 even, bit 2 set: the rest as a
 * string up to its first NUL), the fitted
 * scaling law (byte 0 odd, bit 1 clear) and the hybrid relation (byte 0
 * odd, bit 1 set). Any input must parse or be refused with one
 * error, never crash or leak; what parses keeps the readers' promises: a
 * chip has a positive peak, bandwidth, memory, SRAM, cores and link, and
 * every op efficiency in (0, 1]; a law has n_min <= n_max, d_min <= d_max
 * and evaluates to a finite bpb inside its range, and its shape term (if
 * any) to a finite correction over its aspects; a hybrid relation has a
 * positive pivot and never predicts worse than the transformer it mixes; a
 * link has a bandwidth in (0, 1e6] and a latency in [0, 1e6], and its
 * collectives' times are finite and non-negative. Byte 0 even with bit 3
 * set: a `bench train --device cuda` line for plan --calibrate-gpu
 * (plan/calibrate_gpu.h) against a fixed chip: what it accepts has finite,
 * non-negative times per op. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plan/calibrate_gpu.h"
#include "plan/chip.h"
#include "plan/comm_model.h"
#include "plan/quality.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    tempo_error err;
    const char *text = (const char *)data + 1;
    if (!(data[0] & 1) && (data[0] & 8)) {
        static const char chip_text[] = "name = g\ntrain_dtype = bf16\npeak_tflops_bf16 = 800\nmemory_gb = 141\n"
                                        "bandwidth_gbs = 4000\nsram_mib = 50\ncores = 132\nlink_gbs = 450\n"
                                        "eff_compute = 0.6\neff_memory = 0.7\n";
        chip_profile c;
        throughput_measurement m;
        if (chip_parse(&c, chip_text, sizeof chip_text - 1, NULL, &err))
            __builtin_trap();
        if (calibrate_gpu_measurement(text, size - 1, "bench", &c, &m, &err))
            return 0;
        for (int k = 0; k <= OP_COUNT; k++)
            if (!(m.measured_s[k] >= 0 && isfinite(m.measured_s[k])))
                __builtin_trap();
    } else if (!(data[0] & 1) && (data[0] & 4)) {
        char spec[256];
        size_t n = size - 1 < sizeof spec - 1 ? size - 1 : sizeof spec - 1;
        memcpy(spec, text, n);
        spec[n] = 0;
        link_model l;
        if (link_model_parse(&l, spec, &err))
            return 0;
        double t = comm_allreduce_s(1e9, 1024, &l);
        if (!(l.gbs > 0 && l.gbs <= 1e6 && l.latency_us >= 0 && l.latency_us <= 1e6) || !(isfinite(t) && t >= 0))
            __builtin_trap();
    } else if (!(data[0] & 1)) {
        chip_profile c;
        if (chip_parse(&c, text, size - 1, NULL, &err))
            return 0;
        if (!(c.peak_tflops > 0 && c.bandwidth_gbs > 0 && c.memory_gb > 0 && c.sram_mib > 0 && c.cores > 0 &&
              c.link_gbs > 0))
            __builtin_trap();
        for (int k = 0; k < OP_COUNT; k++)
            if (!(c.eff[k] > 0 && c.eff[k] <= 1))
                __builtin_trap();
    } else if (data[0] & 2) {
        quality_hybrid h;
        if (quality_hybrid_parse(&h, text, size - 1, "hybrid", &err))
            return 0;
        if (!(h.pivot > 0) || !(h.save_drag >= 0 && h.save_drag < 1))
            __builtin_trap();
        for (int k = 0; k <= QUALITY_MAX_ORDER; k++)
            for (double t = 0.5; t < 4; t += 0.5)
                if (quality_hybrid_bpb(&h, k, t) > t)
                    __builtin_trap();
    } else {
        static quality_law q; /* 20 KB of replicates; the harness runs one input at a time */
        if (quality_law_parse(&q, text, size - 1, "law", &err))
            return 0;
        if (q.n_min > q.n_max || q.d_min > q.d_max)
            __builtin_trap();
        double b, lo, hi;
        quality_predict(&q, q.n_max, q.d_max, &b, &lo, &hi);
        if (isnan(b) || lo > b || hi < b)
            __builtin_trap();
        for (int i = 0; i < q.n_vocabs; i++) {   /* the vocabulary and learning-rate terms stay finite */
            double t = quality_tokens_in_law(&q, q.vocabs[i].vocab, 1e6);
            if (!(t > 0) || !isfinite(t) || !isfinite(quality_correction(&q, q.vocabs[i].vocab, q.lr_mult_min, 1e3, 0, 0)) ||
                !isfinite(quality_correction(&q, q.vocabs[i].vocab, q.lr_mult_max, 1e3, 0, 0)))
                __builtin_trap();
        }
        for (double w = 1; w <= 1e6; w *= 4)   /* the family term: finite at any width */
            if (!isfinite(quality_family_term(&q, 1e3, w)))
                __builtin_trap();
        if (quality_has_depth(&q)) {   /* the shape term: finite over its range, and its range inside the parse's */
            if (!(q.depth_aspect_min <= q.depth_aspect_ref && q.depth_aspect_ref <= q.depth_aspect_max))
                __builtin_trap();
            for (double a = q.depth_aspect_min; a <= q.depth_aspect_max; a *= 2)
                for (double st = 1; st <= 1e7; st *= 10)
                    if (!isfinite(quality_correction(&q, q.vocab_ref, 1, st, a, 0)))
                        __builtin_trap();
        }
    }
    return 0;
}
