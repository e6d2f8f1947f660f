/* cmd_export.c - `tempo export`: flag parsing and the result line; the work
 * is src/run/run_export.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/json_write.h"
#include "run/run_export.h"
#include "proc/self.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo export --model RUN_DIR --format gguf|hf --out PATH [--dtype f32|f16|q8_0]\n"
        "  --model RUN_DIR   a run folder (its model.safetensors) or a model .safetensors file\n"
        "  --format gguf     one GGUF file for llama.cpp (and everything built on ggml)\n"
        "  --format hf       a Hugging Face folder: config.json, model.safetensors, tokenizer.json\n"
        "  --out PATH        the GGUF file (replaced atomically) or the HF folder (must not exist)\n"
        "  --dtype T         f32 (default), f16, or q8_0 (GGUF only; norms stay f32, and a matrix\n"
        "                    whose rows are not a multiple of 32 values is written f16)\n"
        "Architectures: SwiGLU without QK-norm is llama (LlamaForCausalLM), SwiGLU with QK-norm is\n"
        "qwen3 (Qwen3ForCausalLM); mlp=relu2 or a logit soft-cap has no counterpart and is refused.\n"
        "Only the transformer is exported: a run's count memory and mixer (memory.bin, mixer.json)\n"
        "are left out, so the exported model scores as the run's transformer alone.\n"
        "The tokenizer goes along (GGUF 'gpt2' BPE / tokenizer.json), the separator as BOS and EOS;\n"
        "tempo's pre-split rule is its own: llama.cpp splits text with GPT-2's rule, which differs\n"
        "on digit runs, newlines after spaces and upper-case contractions, so feed token ids when\n"
        "an exact match matters (docs/export.md).\n"
        "Ends with one JSON line: format, dtype, arch, params, bytes, out, memory_left_out.\n");
}

int cmd_export(int argc, char **argv)
{
    export_options o = {.format = -1, .dtype = EXPORT_F32};
    const char *format = NULL, *dtype = "f32";
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &o.model_path),
        CLI_F_STRING("--out", &o.out),
        CLI_F_CHOICE("--format", &format, "gguf|hf"),
        CLI_F_CHOICE("--dtype", &dtype, "f32|f16|q8_0"),
    };
    int help, bad = cli_parse_flags("export", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    if (format)
        o.format = strcmp(format, "gguf") == 0 ? EXPORT_GGUF : EXPORT_HF;
    o.dtype = (export_dtype)export_dtype_parse(dtype);   /* one of the choices: never -1 */
    if (!o.model_path || !o.out || (int)o.format < 0)
        return cli_usage_error("export: --model, --format and --out are required (see tempo export --help)");
    char exe[1024], commit[128];
    tempo_error err;
    if (proc_self_exe(exe, sizeof exe, &err) == 0) {
        proc_git_commit(exe, commit, sizeof commit);
        o.commit = commit;
    }
    export_summary s;
    if (export_run(&o, &s, &err))
        return cli_report(&err);
    fprintf(stderr, "export: %s %s (%s, %lld parameters) -> %s%s\n", o.format == EXPORT_GGUF ? "GGUF" : "HF",
            s.arch, export_dtype_name(o.dtype), s.params, o.out,
            s.had_memory ? "; the transformer only: the run's count memory and mixer are not exported" : "");
    strbuf j = {0};
    jsonw w;
    jsonw_init(&w, &j);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "format", o.format == EXPORT_GGUF ? "gguf" : "hf");
    jsonw_field_string(&w, "dtype", export_dtype_name(o.dtype));
    jsonw_field_string(&w, "arch", s.arch);
    jsonw_field_int(&w, "params", s.params);
    jsonw_field_int(&w, "bytes", s.bytes);
    jsonw_field_string(&w, "out", o.out);
    jsonw_field_string(&w, "contents", "transformer");
    jsonw_field_bool(&w, "memory_left_out", s.had_memory);
    jsonw_object_end(&w);
    if (jsonw_finish(&w, &err)) {
        strbuf_free(&j);
        return cli_report(&err);
    }
    int rc = cli_emit_result(&j, NULL);
    strbuf_free(&j);
    return rc;
}
