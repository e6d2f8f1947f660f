/* fuzz_mixer_json.c - libFuzzer harness for RUN_DIR/mixer.json's reader
 * (src/memory/mixer.c): any bytes must load or be refused, never crash or
 * leak; a loaded mixer's weights are computed for every bucket. */
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
        double w[MIX_N];
        for (int b = 0; b < mx.n_buckets; b++)
            mixer_weights(&mx, b, present, w);
        mixer_free(&mx);
    }
    unlink(path);
    return 0;
}
