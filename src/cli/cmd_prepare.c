/* cmd_prepare.c - `tempo prepare`: parse flags, run the pipeline of
 * data/prepare.h with progress lines on stderr, print the result JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/json_write.h"
#include "core/number.h"
#include "data/prepare.h"
#include "data/tokenizer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo prepare --out DATA_DIR [options] INPUT...\n"
            "  INPUT: files or folders of .txt, .jsonl (field \"text\"), optionally .xz;\n"
            "         in .txt files documents end at a line holding only the byte 0x1E\n"
            "options:\n"
            "  --out DIR           output folder: tokenizer.tiktoken, train.tok, val.tok, meta.json\n"
            "  --vocab N           regular tokens, %d..%d (default %d; 256 = plain bytes);\n"
            "                      the model vocabulary is N+1 (the document separator)\n"
            "  --val FILE          validation documents (default: hold out a share of the inputs)\n"
            "  --val-share F       held-out share of input documents when no --val, 0..%g\n"
            "                      (default %g; chosen by a hash of the document index)\n"
            "  --tok-sample-mb M   tokenizer training sample size in MB (default %g): %s\n"
            "  --threads N         threads for counting and encoding (default: all)\n"
            "  --force             rebuild even if DATA_DIR/meta.json records the same inputs and options\n",
            TOK_MIN_VOCAB, TOK_MAX_VOCAB, PREPARE_DEFAULT_VOCAB, PREPARE_MAX_VAL_SHARE,
            PREPARE_DEFAULT_VAL_SHARE, PREPARE_DEFAULT_TOK_SAMPLE_MB, prepare_sample_rule());
}

static void progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "tempo prepare: %s\n", line);
}

int cmd_prepare(int argc, char **argv)
{
    prepare_options o;
    prepare_defaults(&o);
    char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (!inputs)
        return cli_usage_error("prepare: out of memory");
    int n_inputs = 0, rc = 0, only_inputs = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (only_inputs || a[0] != '-' || !a[1]) {
            inputs[n_inputs++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_inputs = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(inputs);
            return 0;
        }
        if (!strcmp(a, "--force")) {
            o.force = 1;
            continue;
        }
        /* flags with a value: "--flag VALUE" or "--flag=VALUE" */
        char name[64];
        const char *value = NULL, *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name - 1 ? nl : sizeof name - 1), a);
        const char *known[] = {"--out", "--vocab", "--val", "--val-share", "--tok-sample-mb", "--threads"};
        int k = -1;
        for (int j = 0; j < 6; j++)
            if (!strcmp(name, known[j]))
                k = j;
        if (k < 0) {
            rc = cli_usage_error("prepare: unknown option '%s' (see tempo prepare --help)", a);
            break;
        }
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            rc = cli_usage_error("%s: needs a value", name);
            break;
        }
        switch (k) {
        case 0: o.out_dir = value; break;
        case 1: rc = cli_parse_int32("--vocab", value, TOK_MIN_VOCAB, TOK_MAX_VOCAB, &o.vocab); break;
        case 2: o.val_path = value; break;
        case 3: rc = cli_parse_real("--val-share", value, 0, PREPARE_MAX_VAL_SHARE, 0, &o.val_share); break;
        case 4: rc = cli_parse_real("--tok-sample-mb", value, 0, 1e6, 1, &o.tok_sample_mb); break;
        default: rc = cli_parse_int32("--threads", value, 1, NUMBER_MAX_THREADS, &o.threads); break;
        }
    }
    if (rc == 0 && !o.out_dir)
        rc = cli_usage_error("prepare: --out DATA_DIR is required (see tempo prepare --help)");
    if (rc == 0 && n_inputs == 0)
        rc = cli_usage_error("prepare: no INPUT given (files or folders of .txt, .jsonl, .txt.xz, .jsonl.xz)");
    if (rc) {
        free(inputs);
        return rc;
    }
    o.inputs = inputs;
    o.n_inputs = n_inputs;
    o.progress = progress;
    strbuf meta = {0};
    int reused = 0;
    tempo_error err;
    tempo_error_clear(&err);
    if (prepare_run(&o, &meta, &reused, &err)) {
        strbuf_free(&meta);
        free(inputs);
        return cli_report(&err);
    }
    /* the result: meta.json's object plus whether it was reused (extended
     * as text: a reused meta.json's mtime_ns would not survive a double) */
    strbuf result = {0};
    jsonw w;
    jsonw_init(&w, &result);
    jsonw_object_extend(&w, meta.data);
    jsonw_field_bool(&w, "reused", reused);
    jsonw_object_end(&w);
    if (jsonw_finish(&w, &err))
        rc = cli_report((tempo_error_prefix(&err, "prepare: the result"), &err));
    else
        rc = cli_emit_result(&result, o.out_dir);
    strbuf_free(&result);
    strbuf_free(&meta);
    free(inputs);
    return rc;
}
