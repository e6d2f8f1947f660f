/* fuzz_mixer_json.c - libFuzzer harness for RUN_DIR/mixer.json's reader
 * (src/memory/mixer.c): any bytes must load or be refused, never crash or
 * leak; a loaded mixer's weights are computed at a few contexts. */
#include <stdint.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "memory/mixer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (fuzz_write_file(path, sizeof path, "mixer", data, size))
        return 0;
    mixer mx;
    tempo_error err;
    if (mixer_load(&mx, path, &err) == 0) {
        int present[MIX_N] = {1, 1, 1, 1};
        mixer_blend bl;
        ngram_match all = {mx.memory_order, 100, 1}, none = {0, 0, 0};
        for (int b = 0; b < MIX_CONFIDENCE_BINS; b++) {
            mixer_context c = mixer_select(&mx, &all, &none, b, (b + 0.5) / MIX_CONFIDENCE_BINS);
            mixer_weights(&mx, &c, present, &bl);
            c = mixer_select(&mx, &none, &all, 0, b);
            mixer_weights(&mx, &c, present, &bl);
        }
        mixer_free(&mx);
    }
    unlink(path);
    return 0;
}
