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

/* The flags into o and the INPUTs into inputs[0..*n): 0, the exit code of a
 * usage error (printed), or -1 after --help. */
static int prepare_flags(int argc, char **argv, prepare_options *o, const char **inputs, int *n)
{
    const cli_flag flags[] = {
        CLI_F_STRING("--out", &o->out_dir),
        CLI_F_INT("--vocab", &o->vocab, TOK_MIN_VOCAB, TOK_MAX_VOCAB),
        CLI_F_STRING("--val", &o->val_path),
        CLI_F_REAL("--val-share", &o->val_share, 0, PREPARE_MAX_VAL_SHARE, 0),
        CLI_F_REAL("--tok-sample-mb", &o->tok_sample_mb, 0, 1e6, 1),
        CLI_F_INT("--threads", &o->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_SWITCH("--force", &o->force),
        CLI_F_ARGS("INPUT", inputs, n, argc),
    };
    int help, bad = cli_parse_flags("prepare", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return -1; }
    if (!o->out_dir)
        return cli_usage_error("prepare: --out DATA_DIR is required (see tempo prepare --help)");
    if (*n == 0)
        return cli_usage_error("prepare: no INPUT given (files or folders of .txt, .jsonl, .txt.xz, .jsonl.xz)");
    return 0;
}

int cmd_prepare(int argc, char **argv)
{
    prepare_options o;
    prepare_defaults(&o);
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (!inputs)
        return cli_usage_error("prepare: out of memory");
    int n_inputs = 0, rc = prepare_flags(argc, argv, &o, inputs, &n_inputs);
    if (rc) {
        free(inputs);
        return rc < 0 ? 0 : rc;
    }
    o.inputs = (char *const *)inputs;   /* argv's own strings */
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
