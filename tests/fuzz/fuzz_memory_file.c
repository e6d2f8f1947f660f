/* fuzz_memory_file.c - libFuzzer harness for the count memory's file loader
 * (src/memory/memory_file.c): any bytes as RUN_DIR/memory.bin must load
 * cleanly or be refused with an error, never crash, hang or leak; a loaded
 * memory is queried (so a table whose probes never end would hang here).
 * The store's readers (memory_file_identity, the header alone, and
 * memory_file_verify, the checksum) take the same bytes. */
#include <stdint.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "memory/memory_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (fuzz_write_file(path, sizeof path, "memory", data, size))
        return 0;
    ngram_memory m;
    tempo_error err;
    uint8_t id[32];
    (void)memory_file_identity(path, id, &err);
    (void)memory_file_verify(path, &err);
    if (memory_file_load(&m, path, 0, 0, &err) == 0) {
        int32_t tokens[8] = {0, 1, 2, 3, 1, 2, 3, 0};
        for (size_t i = 0; i < 8; i++)
            if (m.vocab > 3)
                (void)ngram_memory_prob(&m, tokens, i, NULL);
        ngram_memory_free(&m);
    }
    unlink(path);
    return 0;
}
