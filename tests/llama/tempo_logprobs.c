/* tempo_logprobs.c - tempo's side of the llama.cpp comparison
 * (tests/e2e/export_llama.sh): loads a model the way eval does (a run folder
 * or a GGUF file), evaluates a token id sequence in one forward pass and
 * prints, for i = 0..n-2, ln p(ids[i+1] | ids[0..i]), one per line, in the
 * format of tools/llama_cpp/tempo_llama.c's "logprobs". A test tool, not a
 * tempo command.
 *   usage: tempo_logprobs MODEL IDS_FILE */
#include <stdio.h>
#include <stdlib.h>

#include "run/checkpoint.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tempo_logprobs MODEL IDS_FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        fprintf(stderr, "tempo_logprobs: %s: cannot open\n", argv[2]);
        return 1;
    }
    int32_t *ids = malloc(sizeof *ids * 65536);
    int n = 0;
    long v;
    while (ids && n < 65536 && fscanf(f, "%ld", &v) == 1)
        ids[n++] = (int32_t)v;
    fclose(f);
    run_config cfg;
    model *m;
    tokenizer *tok;
    tempo_error err;
    if (checkpoint_load_model(argv[1], 1, &cfg, &m, &tok, &err)) {
        fprintf(stderr, "tempo: %s\n", err.msg);
        free(ids);
        return 1;
    }
    int rc = 0;
    if (n < 2 || n - 1 > cfg.model.context) {
        fprintf(stderr, "tempo_logprobs: %s: %d ids; needs 2 to context + 1 (%d)\n", argv[2], n,
                cfg.model.context + 1);
        rc = 1;
    } else {
        model_set_training(m, 0);
        double loss = model_forward(m, ids, ids + 1, 1, n - 1);
        if (loss != loss) {
            fprintf(stderr, "tempo_logprobs: %s: ids out of range\n", argv[2]);
            rc = 1;
        }
        const float *l = model_token_losses(m);
        for (int i = 0; !rc && i < n - 1; i++)
            printf("%.9g\n", -(double)l[i]);
    }
    model_free(m);
    tok_free(tok);
    free(ids);
    return rc;
}
