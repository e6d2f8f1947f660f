/* cmd_eval.c - `tempo eval`: bits per byte of a trained model on the val
 * split of a data folder or on any text file (tokenised with the model's own
 * tokenizer). Flag parsing and printing only; the work is eval/bpb.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "data/token_store.h"
#include "data/tokenizer.h"
#include "eval/bpb.h"
#include "train/checkpoint.h"

static int takes_value(const char *flag)
{
    static const char *const flags[] = {"--model", "--data", "--text", "--stride", "--batch", "--threads"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(flag, flags[i]))
            return 1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo eval --model RUN_DIR (--data DATA_DIR | --text FILE) [--stride N] [--batch N] [--threads N]\n"
        "  --model RUN_DIR   a run folder (its model.safetensors) or a .safetensors file\n"
        "  --data DATA_DIR   score DATA_DIR/val.tok (must use the model's tokenizer)\n"
        "  --text FILE       score any .txt/.jsonl(.xz) file: documents as 'tempo prepare' reads them\n"
        "  --stride N        sliding-window stride in tokens (default: context/2; context = disjoint windows)\n"
        "bpb = sum of -log2 p(token | preceding text) over every token / bytes of document text. The stream is\n"
        "SEP d1 SEP d2 ... SEP: the first SEP is given (not scored); later SEPs are predicted and their bits\n"
        "counted although they stand for no bytes.\n");
}

int cmd_eval(int argc, char **argv)
{
    const char *model_path = NULL, *data_dir = NULL, *text = NULL;
    int stride = 0, batch = 8, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!takes_value(a)) return cli_usage_error("%s: unknown option (see tempo eval --help)", a);
        if (!v) return cli_usage_error("%s: missing value (see tempo eval --help)", a);
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--data")) data_dir = v;
        else if (!strcmp(a, "--text")) text = v;
        else if (!strcmp(a, "--stride") || !strcmp(a, "--batch") || !strcmp(a, "--threads")) {
            char *end;
            long x = strtol(v, &end, 10);
            if (!*v || *end || x < 1 || x > 1 << 20) return cli_usage_error("%s %s: expected a positive integer", a, v);
            if (a[2] == 's') stride = (int)x;
            else if (a[2] == 'b') batch = (int)x;
            else threads = (int)x;
        } else return cli_usage_error("%s: unknown option (see tempo eval --help)", a);
        i++;
    }
    if (!model_path) return cli_usage_error("eval: --model RUN_DIR is required");
    if (!data_dir == !text) return cli_usage_error("eval: give exactly one of --data DATA_DIR or --text FILE");
    if (threads > 0) omp_set_num_threads(threads);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    if (checkpoint_load_model(model_path, batch, &cfg, &m, &tok, &err)) return cli_report(&err);
    int32_t *ids = NULL;
    size_t n = 0;
    uint64_t n_bytes = 0, n_docs = 0;
    int rc = 0;
    if (text) {
        if (token_encode_file(tok, text, &ids, &n, &n_bytes, &n_docs, &err)) rc = -1;
    } else {
        char p[1100];
        token_file tf;
        if (token_file_open(&tf, path_join(p, sizeof p, data_dir, "val.tok"), &err)) rc = -1;
        else {
            if (tf.vocab_size != (uint32_t)cfg.model.vocab_size)
                rc = tempo_fail(&err, "%s: vocabulary %u does not match the model's %d", p, tf.vocab_size,
                                cfg.model.vocab_size);
            else if (!(ids = malloc(sizeof(int32_t) * (tf.n_tokens ? tf.n_tokens : 1))))
                rc = tempo_fail(&err, "%s: out of memory", p);
            else {
                token_file_read(&tf, 0, tf.n_tokens, ids);
                n = tf.n_tokens;
                n_bytes = tf.n_bytes;
                n_docs = tf.n_docs;
            }
            token_file_close(&tf);
        }
    }
    bpb_result r;
    if (!rc) rc = bpb_evaluate(m, ids, n, n_bytes, stride ? stride : cfg.model.context / 2, batch, &r, &err);
    free(ids);
    model_free(m);
    tok_free(tok);
    if (rc) return cli_report(&err);
    strbuf js = {0};
    strbuf_puts(&js, "{\"bpb\":");
    strbuf_json_number(&js, r.bpb);
    strbuf_puts(&js, ",\"bits\":");
    strbuf_json_number(&js, r.bits);
    strbuf_puts(&js, ",\"loss\":");
    strbuf_json_number(&js, r.loss);
    strbuf_printf(&js, ",\"bytes\":%llu,\"tokens\":%llu,\"documents\":%llu,\"context\":%d,\"stride\":%d,\"seconds\":",
                  (unsigned long long)r.n_bytes, (unsigned long long)r.n_tokens, (unsigned long long)n_docs, r.context,
                  r.stride);
    strbuf_json_number(&js, r.seconds);
    strbuf_puts(&js, ",\"first_separator\":\"given\",\"source\":");
    const char *src = text ? text : data_dir;
    strbuf_json_string(&js, src, strlen(src));
    strbuf_puts(&js, "}");
    rc = cli_emit_result(&js, NULL);
    strbuf_free(&js);
    return rc;
}
