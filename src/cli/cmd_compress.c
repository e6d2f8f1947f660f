/* cmd_compress.c - `tempo compress` and `tempo decompress`: a text coded by
 * a run's whole mixture, as eval scores it, and back. Flag parsing, files
 * and printing only; the coding is eval/compress.c, the model's parts come
 * from eval/eval_run.h as eval takes them. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/json_write.h"
#include "core/number.h"
#include "core/progress.h"
#include "core/timer.h"
#include "eval/compress.h"
#include "eval/eval_run.h"
#include "run/checkpoint.h"

#define SUFFIX ".tpz"
#define EVAL_BATCH 8   /* eval's default: compress's own eval of the text runs as `tempo eval` does */

static void usage(FILE *f, int decompress)
{
    if (decompress)
        fprintf(f,
            "usage: tempo decompress --model RUN_DIR [--in FILE] [--out FILE] [--threads N] [--force]\n"
            "  --in FILE      a file tempo compress wrote (default: stdin)\n"
            "  --out FILE     where the text goes (default: FILE without its " SUFFIX "; needed with stdin);\n"
            "                 written atomically, never over an existing file without --force\n"
            "  --threads N    default: the compressing run's count (the floats depend on it; another is refused)\n"
            "The run must be the compressing one (the file records the model's id: another is refused in one line),\n"
            "on a machine with the same kernel path and cache sizes. The output is checked against the original's\n"
            "length and sha256 before it is written. The last stdout line is a JSON object.\n");
    else
        fprintf(f,
            "usage: tempo compress --model RUN_DIR [--in FILE] [--out FILE] [--threads N] [--force]\n"
            "  --model RUN_DIR  a run folder, a .safetensors file or a GGUF file, as tempo eval takes it\n"
            "  --in FILE        the text (default: stdin); any bytes\n"
            "  --out FILE       the compressed file (default: FILE" SUFFIX "; needed with stdin); written\n"
            "                   atomically, never over an existing file without --force\n"
            "  --threads N      OpenMP threads (decompress uses the same)\n"
            "Codes the text with the run's whole next-token distribution at every token: the transformer, the count\n"
            "memory, the cache and the match model mixed and learning exactly as `tempo eval --model RUN --text FILE`\n"
            "scores the text (a range coder, frequencies out of 2^30), so the code is eval's bits plus a few bytes,\n"
            "and it decompresses only because every part is a normalised distribution of the tokens before it.\n"
            "The text is read as eval reads a .txt file (documents split at lines holding only 0x1E) when that gives\n"
            "its bytes back exactly, else as one document; read_as_eval_text says which. About 2 ms a token with a\n"
            "default run's 5.5 GB memory on 2 cores (100 kB of text a minute; decompress the same). The last stdout\n"
            "line is a JSON object: bytes_in, bytes_out (header_bytes of them the header), tokens, bits_per_byte (of\n"
            "the file), code_bits, ideal_bits (sum of -log2 p of the coded distributions), eval_bits and eval_bpb\n"
            "(eval's figures for the same tokens, computed here), overhead_pct (code_bits over eval_bits), seconds,\n"
            "ms_per_token. docs/hybrid_model.md says more.\n");
}

/* A line on stderr every 10 s: tokens done, the time so far, the time left (core/progress.h). */
static void progress(void *user, size_t done, size_t total)
{
    progress_meter_update(user, NULL, done, total);
}

typedef struct {
    const char *model, *in, *out;
    int threads, force;
} options;

/* Parse the flags; 0, or the exit code (usage printed or an error reported). */
static int parse(int argc, char **argv, int decompress, options *o, int *done)
{
    memset(o, 0, sizeof *o);
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &o->model),
        CLI_F_STRING("--in", &o->in),
        CLI_F_STRING("--out", &o->out),
        CLI_F_INT("--threads", &o->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_SWITCH("--force", &o->force),
    };
    int bad = cli_parse_flags(argv[0], argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), done);
    if (bad) return bad;
    if (*done) {
        usage(stdout, decompress);
        return 0;
    }
    if (!o->model)
        return cli_usage_error("%s: --model RUN_DIR is required", argv[0]);
    return 0;
}

/* The output's name: --out, or the input's with the suffix added (compress) or taken off. */
static int output_name(const options *o, int decompress, char *out, size_t n)
{
    if (o->out) {
        snprintf(out, n, "%s", o->out);
        return 0;
    }
    if (!o->in)
        return cli_usage_error("%s: give --out FILE when the input is stdin", decompress ? "decompress" : "compress");
    size_t len = strlen(o->in), sl = strlen(SUFFIX);
    if (!decompress) {
        snprintf(out, n, "%s" SUFFIX, o->in);
        return 0;
    }
    if (len <= sl || strcmp(o->in + len - sl, SUFFIX))
        return cli_usage_error("decompress: %s does not end in " SUFFIX ": give --out FILE", o->in);
    snprintf(out, n, "%.*s", (int)(len - sl), o->in);
    return 0;
}

/* Read the input, refuse to overwrite: 0 or the exit code. */
static int read_input(const options *o, const char *out, char **data, size_t *len)
{
    tempo_error err;
    tempo_error_clear(&err);
    if (o->in && !strcmp(o->in, out))
        return cli_usage_error("%s: the input and the output are the same file", out);
    if (!o->force && path_exists(out)) {
        tempo_fail(&err, "%s: exists (give --force to replace it)", out);
        return cli_report(&err);
    }
    int rc = o->in ? file_read_all(o->in, data, len, 0, &err) : file_read_stream(stdin, "stdin", data, len, &err);
    return rc ? cli_report(&err) : 0;
}

/* The model, its tokenizer and the hybrid parts as eval takes them. */
static int load(const char *model_path, run_config *cfg, model **m, tokenizer **tok, hybrid_parts *h,
                compress_model *cm, tempo_error *err)
{
    memset(h, 0, sizeof *h);
    if (checkpoint_load_model(model_path, EVAL_BATCH, cfg, m, tok, err))
        return -1;
    if (run_parts_load(model_path, cfg, *tok, run_parts_all(), h, err)) {
        model_free(*m);
        tok_free(*tok);
        return -1;
    }
    memset(cm, 0, sizeof *cm);
    cm->m = *m;
    cm->tok = *tok;
    cm->h = h;
    cm->stride = eval_run_stride(cfg, 0);
    cm->adapt = run_parts_all().adapt;
    cm->eval_batch = EVAL_BATCH;
    return 0;
}

static void id_hex(const compress_model *cm, char out[17])
{
    uint8_t id[32];
    compress_model_id(cm, id);
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* The result line: the files, the sizes, the figures and the model's id. */
static int emit_result(const char *what, const char *out, int decompress, const compress_result *r, const char *id)
{
    tempo_error err;
    strbuf js = {0};
    jsonw w;
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "in", what);
    jsonw_field_string(&w, "out", out);
    jsonw_field_uint(&w, "bytes_in", r->bytes_in);
    jsonw_field_uint(&w, "bytes_out", r->bytes_out);
    jsonw_field_uint(&w, "tokens", r->tokens);
    if (!decompress) {
        double code_bits = 8.0 * (double)(r->bytes_out - COMPRESS_HEADER_BYTES);
        jsonw_field_uint(&w, "header_bytes", COMPRESS_HEADER_BYTES);
        jsonw_field_uint(&w, "documents", r->documents);
        jsonw_field_bool(&w, "read_as_eval_text", r->as_documents);
        jsonw_field_number(&w, "bits_per_byte", r->bytes_in ? 8.0 * (double)r->bytes_out / (double)r->bytes_in : NAN);
        jsonw_field_number(&w, "code_bits", code_bits);
        jsonw_field_number(&w, "ideal_bits", r->ideal_bits);
        jsonw_field_number(&w, "eval_bits", r->eval_bits);
        jsonw_field_number(&w, "eval_bpb", r->eval_bpb);
        jsonw_field_number(&w, "overhead_pct", (code_bits - r->eval_bits) / r->eval_bits * 100);
    } else {
        jsonw_field_bool(&w, "verified", 1);   /* length and sha256 of the original, checked */
    }
    jsonw_field_number(&w, "seconds", r->seconds);
    jsonw_field_number(&w, "ms_per_token", r->tokens > 1 ? r->seconds * 1e3 / (double)(r->tokens - 1) : NAN);
    jsonw_field_int(&w, "threads", omp_get_max_threads());
    jsonw_field_string(&w, "model_id", id);
    jsonw_object_end(&w);
    if (jsonw_finish(&w, &err)) {
        strbuf_free(&js);
        return cli_report(&err);
    }
    int rc = cli_emit_result(&js, NULL);
    strbuf_free(&js);
    return rc;
}

static int run(int argc, char **argv, int decompress)
{
    options o;
    int done;
    int rc = parse(argc, argv, decompress, &o, &done);
    if (rc || done)
        return rc;
    char out[1100];
    if ((rc = output_name(&o, decompress, out, sizeof out)))
        return rc;
    char *data;
    size_t len;
    if ((rc = read_input(&o, out, &data, &len)))
        return rc;
    const char *what = o.in ? o.in : "stdin";
    tempo_error err;
    tempo_error_clear(&err);
    compress_header hd;
    if (decompress && compress_header_read((const uint8_t *)data, len, what, &hd, &err)) {
        free(data);
        return cli_report(&err);
    }
    /* decompress runs on the compressing run's threads unless told otherwise (then refused if they differ) */
    int threads = o.threads ? o.threads : decompress ? (int)hd.env.threads : 0;
    if (threads > 0)
        omp_set_num_threads(threads);
    run_config cfg;
    model *m;
    tokenizer *tok;
    hybrid_parts h;
    compress_model cm;
    if (load(o.model, &cfg, &m, &tok, &h, &cm, &err)) {
        free(data);
        return cli_report(&err);
    }
    progress_meter ps;
    progress_meter_start(&ps, stderr, decompress ? "decompress" : "compress", "tokens", 10);
    cm.progress = progress;
    cm.user = &ps;
    uint8_t *result;
    size_t result_len;
    compress_result r;
    rc = decompress ? decompress_data(&cm, (const uint8_t *)data, len, what, &result, &result_len, &r, &err)
                    : compress_text(&cm, (const uint8_t *)data, len, what, &result, &result_len, &r, &err);
    char id[17];
    id_hex(&cm, id);
    hybrid_parts_free(&h);
    model_free(m);
    tok_free(tok);
    free(data);
    if (!rc)
        rc = file_write_atomic(out, result, result_len, &err);
    free(result);
    if (rc)
        return cli_report(&err);
    return emit_result(what, out, decompress, &r, id);
}

int cmd_compress(int argc, char **argv) { return run(argc, argv, 0); }
int cmd_decompress(int argc, char **argv) { return run(argc, argv, 1); }
