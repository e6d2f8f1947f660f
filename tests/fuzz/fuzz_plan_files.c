/* fuzz_plan_files.c - libFuzzer harness for the planner's readers of outside
 * files (src/plan/): chip profiles (byte 0 even; parsed without a path, so
 * an `efficiencies =` include is refused, never opened), the fitted
 * scaling law (byte 0 odd, bit 1 clear) and the hybrid relation (byte 0
 * odd, bit 1 set). Any input must parse or be refused with one
 * error, never crash or leak; what parses keeps the readers' promises: a
 * chip has a positive peak, bandwidth, memory, SRAM, cores and link, and
 * every op efficiency in (0, 1]; a law has n_min <= n_max, d_min <= d_max
 * and evaluates to a finite bpb inside its range; a hybrid relation has a
 * positive pivot and never predicts worse than the transformer it mixes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plan/chip.h"
#include "plan/quality.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    tempo_error err;
    const char *text = (const char *)data + 1;
    if (!(data[0] & 1)) {
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
    }
    return 0;
}
