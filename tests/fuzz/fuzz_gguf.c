/* fuzz_gguf.c - libFuzzer harness for the GGUF reader and importer
 * (src/export/gguf_read.c, gguf_import.c): any bytes must parse cleanly or
 * be refused with an error, never crash, hang or leak; a file that parses
 * goes through the config and tokenizer import, and, when its model is small
 * (so the fuzzer's memory limit is about the reader, not the model), the
 * weights import too. Seeds (corpus/gguf/): tiny exports of tempo models. */
#include <stdint.h>

#include "run/gguf_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file g;
    tempo_error err;
    if (gguf_parse(&g, data, size, "fuzz.gguf", &err) != 0)
        return 0;
    run_config cfg;
    export_arch arch;
    tokenizer *tok = NULL;
    if (gguf_import_config(&g, &cfg, &arch, &err) == 0 &&
        gguf_import_tokenizer(&g, cfg.model.vocab_size, &tok, &err) == 0) {
        const model_config *c = &cfg.model;
        double floats = (double)c->vocab_size * c->d_model * 2 +
                        (double)c->n_layers * (4.0 * c->d_model * c->d_model + 3.0 * c->d_model * c->d_ff) +
                        (double)c->context * c->d_model * (12.0 * c->n_layers + 8);
        model *m = NULL;
        if (floats < 4e6 && c->context <= 512 && model_create(&m, c, 1, &err) == 0) {
            (void)gguf_import_weights(&g, arch, m, &err);
            model_free(m);
        }
        tok_free(tok);
    }
    gguf_free(&g);
    return 0;
}
