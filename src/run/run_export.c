/* run_export.c - `tempo export` as a library call (see run_export.h). */
#include "run/run_export.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "core/strbuf.h"
#include "export/export_map.h"
#include "export/hf_write.h"
#include "run/checkpoint.h"

/* The provenance strings stored in the model file's metadata ("config",
 * "data_id", "commit"), copied into bufs. */
static void read_provenance(const char *model_path, strbuf *config, char *data_id, char *commit, size_t n)
{
    char path[1100];
    struct stat st;
    if (stat(model_path, &st) == 0 && S_ISDIR(st.st_mode))
        path_join(path, sizeof path, model_path, "model.safetensors");
    else
        snprintf(path, sizeof path, "%s", model_path);
    safetensors_file sf;
    tempo_error e;
    if (safetensors_open(&sf, path, &e))
        return;
    const char *v = safetensors_meta(&sf, "config");
    if (v)
        strbuf_puts(config, v);
    if ((v = safetensors_meta(&sf, "data_id")))
        snprintf(data_id, n, "%s", v);
    if ((v = safetensors_meta(&sf, "commit")))
        snprintf(commit, n, "%s", v);
    safetensors_close(&sf);
}

static int has_memory(const char *model_path)
{
    char p[1100];
    struct stat st;
    if (stat(model_path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    return path_exists(path_join(p, sizeof p, model_path, "memory.bin")) ||
           path_exists(path_join(p, sizeof p, model_path, "mixer.json"));
}

int export_run(const export_options *o, export_summary *s, tempo_error *err)
{
    memset(s, 0, sizeof *s);
    if (o->format == EXPORT_HF && o->dtype == EXPORT_Q8_0)
        return tempo_usage(err, "export: --dtype q8_0 is for GGUF only (the HF folder takes f32 or f16)");
    run_config cfg;
    model *m = NULL;
    tokenizer *tok = NULL;
    if (checkpoint_load_model(o->model_path, 1, &cfg, &m, &tok, err))
        return -1;
    export_arch arch;
    int rc = export_arch_of(&cfg.model, &arch, err);
    strbuf config = {0};
    char data_id[256] = "unknown", commit[256];
    snprintf(commit, sizeof commit, "%s", o->commit ? o->commit : "unknown");
    if (!rc) {
        read_provenance(o->model_path, &config, data_id, commit, sizeof data_id);
        export_provenance prov = {config.data, data_id, commit};
        rc = o->format == EXPORT_GGUF ? gguf_write_model(o->out, m, tok, o->dtype, &prov, err)
                                      : hf_write_model(o->out, m, tok, o->dtype, &prov, err);
    }
    if (!rc) {
        snprintf(s->arch, sizeof s->arch, "%s", export_arch_name(arch));
        s->params = (long long)model_num_params(m);
        s->had_memory = has_memory(o->model_path);
        struct stat st;
        char p[1100];
        if (o->format == EXPORT_GGUF && stat(o->out, &st) == 0)
            s->bytes = (long long)st.st_size;
        else if (o->format == EXPORT_HF && stat(path_join(p, sizeof p, o->out, "model.safetensors"), &st) == 0)
            s->bytes = (long long)st.st_size;
    }
    strbuf_free(&config);
    model_free(m);
    tok_free(tok);
    return rc;
}
