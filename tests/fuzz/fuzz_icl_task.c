/* fuzz_icl_task.c - libFuzzer harness for the ICL task file reader
 * (icl_task_load, src/eval/icl_task.c) and the prompts built from what it
 * accepts (src/eval/icl_prompt.c). The first input byte picks the task type,
 * the second the model's context (16..271 tokens), the third the number of
 * few-shot examples (0..3); the rest is the JSONL file. Any file must load
 * (bad records skipped and counted), never crash or leak, and every item's
 * sequences must keep the promises of icl_prompt.h: each starts with the
 * separator, fits the context, and scores a non-empty span at its end. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "eval/icl_prompt.h"
#include "eval/icl_task.h"
#include "fuzz_file.h"

/* A tokenizer of the 256 single bytes (vocab 256, separator 256). */
static tokenizer *byte_tokenizer(void)
{
    uint8_t bytes[256];
    const uint8_t *tokens[256];
    size_t lens[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        tokens[i] = &bytes[i];
        lens[i] = 1;
    }
    tokenizer *t;
    tempo_error err;
    return tok_from_tokens(&t, tokens, lens, 256, "bytes", &err) ? NULL : t;
}

static void check_items(const icl_task_data *d, icl_type type, int context, int n_shots)
{
    tokenizer *tok = byte_tokenizer();
    tok_encoder *enc;
    tempo_error err;
    if (!tok || tok_encoder_new(&enc, tok, &err)) {
        tok_free(tok);
        return;
    }
    icl_task_spec spec = {.type = type, .num_fewshot = n_shots, .delimiter = " "};
    int32_t sep = tok_sep_id(tok);
    icl_seqs s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < d->n_items; i++) {
        int32_t shots[3];
        int k = 0;
        for (int j = 0; j < d->n_items && k < n_shots; j++)
            if (j != i)
                shots[k++] = j;
        icl_skip why;
        int built = icl_build_item(&spec, d->items, i, shots, k, enc, sep, context, &s, &why, &err);
        if (built != 0)
            continue;
        for (int j = 0; j < s.n_seq; j++) {
            int len = s.offset[j + 1] - s.offset[j];
            if (len > context || s.tokens[s.offset[j]] != sep || !(1 <= s.start[j] && s.start[j] < s.end[j]) ||
                s.end[j] != len)
                __builtin_trap(); /* a sequence breaks icl_prompt.h's promise */
        }
    }
    icl_seqs_free(&s);
    tok_encoder_free(enc);
    tok_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    icl_type type = (icl_type)(data[0] % 3);
    int context = 16 + data[1], n_shots = data[2] % 4;
    char path[64];
    if (fuzz_write_file(path, sizeof path, "icl", data + 3, size - 3))
        return 0;
    icl_task_data d;
    tempo_error err;
    if (icl_task_load(path, type, &d, &err) == 0) {
        int skipped = 0;
        for (int i = 0; i < ICL_SKIP_COUNT; i++)
            skipped += d.skipped[i];
        if (d.n_items + skipped != d.n_lines || (skipped > 0) != (d.first_skip[0] != '\0'))
            __builtin_trap(); /* a record neither kept nor counted */
        check_items(&d, type, context, n_shots);
        icl_task_free(&d);
    }
    unlink(path);
    return 0;
}
