/* fuzz_token_file.c - libFuzzer harness for the token file reader
 * (token_file_open, src/data/token_store.c): any bytes as a .tok file must
 * open or be refused with an error naming it, never crash or leak. An opened
 * file's tokens are all read (ASan catches a count beyond the mapping) and
 * must keep the stream layout of token_store.h. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/token_store.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (fuzz_write_file(path, sizeof path, "tok", data, size))
        return 0;
    token_file tf;
    tempo_error err;
    if (token_file_open(&tf, path, &err) == 0) {
        int32_t *ids = malloc(tf.n_tokens * sizeof *ids + 1);
        if (ids) {
            token_file_read(&tf, 0, tf.n_tokens, ids);
            uint64_t seps = 0;
            for (uint64_t i = 0; i < tf.n_tokens; i++) {
                if (ids[i] < 0 || (uint32_t)ids[i] >= tf.vocab_size)
                    __builtin_trap();
                seps += (uint32_t)ids[i] == tf.vocab_size - 1;
            }
            if (seps != tf.n_docs + 1 || (uint32_t)ids[0] != tf.vocab_size - 1)
                __builtin_trap(); /* the stream layout was not checked */
            free(ids);
        }
        token_file_close(&tf);
    }
    unlink(path);
    return 0;
}
