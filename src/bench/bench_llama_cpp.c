/* bench_llama_cpp.c - tempo against llama.cpp on the same model (see
 * bench_llama_cpp.h). */
#include "bench/bench_llama_cpp.h"

#include "core/data_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "export/gguf_write.h"

/* s as one single-quoted shell word */
static void shell_word(strbuf *b, const char *s)
{
    strbuf_puts(b, "'");
    for (; *s; s++) {
        if (*s == '\'')
            strbuf_puts(b, "'\\''");
        else
            strbuf_append(b, s, 1);
    }
    strbuf_puts(b, "'");
}

/* Runs cmd and keeps its stdout's last line in out. */
static int run_last_line(const char *cmd, char *out, size_t n, const char *what, tempo_error *err)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return tempo_fail(err, "%s: cannot start", what);
    char line[4096];
    out[0] = '\0';
    while (fgets(line, sizeof line, p))
        if (line[0] != '\n')
            snprintf(out, n, "%s", line);
    int status = pclose(p);
    size_t k = strlen(out);
    while (k && (out[k - 1] == '\n' || out[k - 1] == '\r'))
        out[--k] = '\0';
    if (status != 0 || k == 0)
        return tempo_fail(err, "%s failed (its error is above)", what);
    return 0;
}

int bench_llama_cpp_helper(char *out, size_t n, tempo_error *err)
{
    const char *env = getenv("TEMPO_LLAMA_HELPER");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return 0;
    }
    char script[1100];
    char tools[1024];
    if (!data_dir_beside(NULL, "tools", tools, sizeof tools) ||
        snprintf(script, sizeof script, "%s/llama_cpp/setup.sh", tools) >= (int)sizeof script || !path_exists(script))
        return tempo_fail(err, "bench infer: --vs-llama-cpp: no tools/llama_cpp/setup.sh beside the tempo binary "
                               "(set TEMPO_LLAMA_HELPER to a built tempo_llama)");
    strbuf cmd = {0};
    strbuf_puts(&cmd, "bash ");
    shell_word(&cmd, script);
    int rc = cmd.oom ? tempo_fail(err, "out of memory")
                     : run_last_line(cmd.data, out, n, "bench infer: llama.cpp setup", err);
    strbuf_free(&cmd);
    return rc;
}

int bench_llama_cpp_run(model *m, const tokenizer *tok, const bench_infer_result *r, bench_llama_cpp_at *out,
                        tempo_error *err)
{
    char helper[1024], gguf[1100];
    if (bench_llama_cpp_helper(helper, sizeof helper, err))
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(gguf, sizeof gguf, "%s/tempo-vs-llama-cpp.%ld.gguf", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    export_provenance prov = {NULL, NULL, NULL};
    if (gguf_write_model(gguf, m, tok, EXPORT_F32, &prov, err))
        return tempo_error_prefix(err, "bench infer: --vs-llama-cpp");
    int rc = 0;
    for (int k = 0; k < r->n_at && rc == 0; k++) {
        const bench_infer_at *a = &r->at[k];
        strbuf cmd = {0};
        shell_word(&cmd, helper);
        strbuf_puts(&cmd, " bench ");
        shell_word(&cmd, gguf);
        strbuf_printf(&cmd, " %d %d %d %d %d", a->threads, r->prompt_tokens, r->decode_prompt, r->decode_steps,
                      r->runs);
        char line[4096];
        rc = cmd.oom ? tempo_fail(err, "out of memory") : run_last_line(cmd.data, line, sizeof line,
                                                                           "bench infer: llama.cpp", err);
        strbuf_free(&cmd);
        json_value *v = NULL;
        tempo_error e;
        if (!rc && json_parse(line, strlen(line), &v, &e))
            rc = tempo_fail(err, "bench infer: llama.cpp printed no JSON: %.200s", line);
        if (!rc) {
            bench_llama_cpp_at *o = &out[k];
            o->threads = a->threads;
            o->prefill_tokens_per_s = json_get_number(v, "prefill_tokens_per_s", 0);
            o->decode_tokens_per_s = json_get_number(v, "decode_tokens_per_s", 0);
            o->tempo_prefill_tokens_per_s = a->prefill_tokens_per_s;
            o->tempo_decode_tokens_per_s = a->n_decode > 0 ? a->decode[0].tokens_per_s : 0;
            if (!(o->prefill_tokens_per_s > 0) || !(o->decode_tokens_per_s > 0))
                rc = tempo_fail(err, "bench infer: llama.cpp reported no speed: %.200s", line);
        }
        json_free(v);
    }
    unlink(gguf);
    return rc;
}

void bench_llama_cpp_json(jsonw *w, const bench_infer_result *r, const bench_llama_cpp_at *a)
{
    jsonw_object_begin(w);
    jsonw_field_string(w, "bench", "infer");
    jsonw_field_string(w, "what", "vs_llama_cpp");
    jsonw_field_int(w, "threads", a->threads);
    jsonw_field_int(w, "prompt_tokens", r->prompt_tokens);
    jsonw_field_int(w, "decode_prompt", r->decode_prompt);
    jsonw_field_int(w, "decode_steps", r->decode_steps);
    jsonw_field_int(w, "runs", r->runs);
    jsonw_field_string(w, "weights", "f32");
    jsonw_field_number(w, "tempo_prefill_tokens_per_s", a->tempo_prefill_tokens_per_s);
    jsonw_field_number(w, "llama_cpp_prefill_tokens_per_s", a->prefill_tokens_per_s);
    jsonw_field_number(w, "tempo_decode_tokens_per_s", a->tempo_decode_tokens_per_s);
    jsonw_field_number(w, "llama_cpp_decode_tokens_per_s", a->decode_tokens_per_s);
    jsonw_field_number(w, "prefill_ratio", a->tempo_prefill_tokens_per_s / a->prefill_tokens_per_s);
    jsonw_field_number(w, "decode_ratio", a->tempo_decode_tokens_per_s / a->decode_tokens_per_s);
    jsonw_object_end(w);
}
