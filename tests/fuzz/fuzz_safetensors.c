/* fuzz_safetensors.c - libFuzzer harness for the safetensors reader
 * (src/core/safetensors.c): any bytes as a file must open or be refused with
 * an error naming it, never crash or leak. An opened file's tensors are read
 * in full (as the checkpoint loader copies them) and every metadata key looked
 * up, so an offset that points outside the file is caught by ASan. A file
 * that opened checked holds its checksum key. The checkpoint layer then reads
 * the same file's config (run/checkpoint.c: the format's checksum seal, the
 * config JSON). Seeds: a checksummed file (written by the spec in
 * safetensors.h, independently of the C writer), the same with a flipped
 * byte, and a "tempo-model-2" file with no checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "run/checkpoint.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (fuzz_write_file(path, sizeof path, "safetensors", data, size))
        return 0;
    safetensors_file sf;
    tempo_error err;
    if (safetensors_open(&sf, path, &err) == 0) {
        for (int i = 0; i < sf.n_tensors; i++) {
            const st_tensor *t = &sf.tensors[i];
            float *copy = malloc(t->numel * sizeof(float) + 1);
            if (copy) {
                memcpy(copy, t->data, t->numel * sizeof(float));
                free(copy);
            }
            if (safetensors_find(&sf, t->name) == NULL)
                __builtin_trap(); /* a tensor the file holds cannot be found by its name */
        }
        for (int i = 0; i < sf.n_meta; i++)
            if (safetensors_meta(&sf, sf.meta_keys[i]) == NULL)
                __builtin_trap();
        if (sf.checksummed && safetensors_meta(&sf, ST_CHECKSUM_KEY) == NULL)
            __builtin_trap(); /* checked against a checksum it does not hold */
        safetensors_close(&sf);
        run_config cfg;
        checkpoint_read_config(path, &cfg, &err);
    }
    unlink(path);
    return 0;
}
