/* checkpoint.c - model and full training checkpoints (see checkpoint.h). */
#include "run/checkpoint.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "core/strbuf.h"
#include "run/gguf_import.h"

#define MAX_META 16
/* The formats' version 2 carries a checksum (core/safetensors.h); version 1
 * files were written before it and load unchecked. */
#define MODEL_FORMAT "tempo-model-2"
#define CHECKPOINT_FORMAT "tempo-checkpoint-2"
#define CHECKPOINT_FORMAT_1 "tempo-checkpoint-1"

static int collect_tensors(model *m, st_write_tensor *out)
{
    const float *params = model_params(m);
    int n = model_num_tensors(m);
    for (int i = 0; i < n; i++) {
        const model_tensor *t = model_tensor_at(m, i);
        out[i].name = t->name;
        out[i].data = params + t->offset;
        out[i].ndim = t->ndim;
        for (int d = 0; d < t->ndim; d++) out[i].shape[d] = t->shape[d];
    }
    return n;
}

/* The loop state as metadata; only step and tokens unless full. */
static void state_meta(const train_state *st, char buf[][80], st_meta *meta, int *n, int full)
{
    snprintf(buf[0], 80, "%" PRId64, st->step);
    snprintf(buf[1], 80, "%" PRIu64, st->tokens);
    snprintf(buf[2], 80, "%.17g", st->elapsed_s);
    snprintf(buf[3], 80, "%.17g", st->budget_s);
    snprintf(buf[4], 80, "%" PRId64, st->max_steps);
    snprintf(buf[5], 80, "%016" PRIx64 "%016" PRIx64 "%016" PRIx64 "%016" PRIx64, st->rng.s[0], st->rng.s[1],
             st->rng.s[2], st->rng.s[3]);
    snprintf(buf[6], 80, "%.17g", st->guard_mult);
    snprintf(buf[7], 80, "%d", st->retries);
    snprintf(buf[8], 80, "%.17g", st->memory_s);
    snprintf(buf[9], 80, "%d", st->world_size > 0 ? st->world_size : 1);
    const char *keys[10] = {"step", "tokens", "elapsed_s", "budget_s", "max_steps", "rng", "guard_mult", "retries",
                            "memory_s", "world_size"};
    for (int i = 0; i < (full ? 10 : 2); i++) {
        meta[*n].key = keys[i];
        meta[*n].value = buf[i];
        (*n)++;
    }
}

int checkpoint_save_model(const char *path, model *m, const run_config *cfg, const char *tokenizer_text,
                          const train_state *st, const checkpoint_provenance *prov, tempo_error *err)
{
    int nt = model_num_tensors(m);
    st_write_tensor *ts = malloc(sizeof *ts * (size_t)nt);
    if (!ts)
        return tempo_fail(err, "%s: out of memory", path);
    collect_tensors(m, ts);
    strbuf cj = {0};
    if (run_config_to_json(cfg, &cj, err)) {
        strbuf_free(&cj);
        free(ts);
        return tempo_error_prefix(err, path);
    }
    char buf[10][80];
    st_meta meta[MAX_META];
    int n = 0;
    meta[n++] = (st_meta){"format", MODEL_FORMAT};
    meta[n++] = (st_meta){"config", cj.data};
    meta[n++] = (st_meta){"tokenizer", tokenizer_text};
    if (prov && prov->data_id)
        meta[n++] = (st_meta){"data_id", prov->data_id};
    if (prov && prov->commit)
        meta[n++] = (st_meta){"commit", prov->commit};
    state_meta(st, buf, meta, &n, 0);
    int rc = safetensors_write(path, ts, nt, meta, n, err);
    strbuf_free(&cj);
    free(ts);
    return rc;
}

int checkpoint_save_full(const char *path, model *m, const run_config *cfg, const optimizer *opt,
                         const train_state *st, tempo_error *err)
{
    if (opt->state_len != opt->n_params)
        return tempo_fail(err, "%s: the optimizer state is sharded: gather it whole first", path);
    int nt = model_num_tensors(m);
    st_write_tensor *ts = malloc(sizeof *ts * (size_t)(nt + 2));
    if (!ts)
        return tempo_fail(err, "%s: out of memory", path);
    collect_tensors(m, ts);
    ts[nt] = (st_write_tensor){"optim.m", opt->m, 1, {(int64_t)opt->n_params}};
    ts[nt + 1] = (st_write_tensor){"optim.v", opt->v, 1, {(int64_t)opt->n_params}};
    strbuf cj = {0};
    if (run_config_to_json(cfg, &cj, err)) {
        strbuf_free(&cj);
        free(ts);
        return tempo_error_prefix(err, path);
    }
    char buf[10][80], tbuf[32];
    snprintf(tbuf, sizeof tbuf, "%" PRId64, opt->t);
    st_meta meta[MAX_META];
    int n = 0;
    meta[n++] = (st_meta){"format", CHECKPOINT_FORMAT};
    meta[n++] = (st_meta){"config", cj.data};
    meta[n++] = (st_meta){"optim_t", tbuf};
    state_meta(st, buf, meta, &n, 1);
    int rc = safetensors_write(path, ts, nt + 2, meta, n, err);
    strbuf_free(&cj);
    free(ts);
    return rc;
}

/* Copy every model tensor from the file, checking names and shapes. */
static int load_weights(const safetensors_file *sf, model *m, tempo_error *err)
{
    float *params = model_params(m);
    for (int i = 0; i < model_num_tensors(m); i++) {
        const model_tensor *t = model_tensor_at(m, i);
        const st_tensor *s = safetensors_find(sf, t->name);
        if (!s)
            return tempo_fail(err, "%s: tensor %s missing", sf->path, t->name);
        int same = s->ndim == t->ndim && s->numel == t->numel;
        for (int d = 0; same && d < t->ndim; d++) same = s->shape[d] == t->shape[d];
        if (!same)
            return tempo_fail(err, "%s: tensor %s has the wrong shape for the model config", sf->path, t->name);
        memcpy(params + t->offset, s->data, sizeof(float) * t->numel);
    }
    for (size_t i = 0; i < model_num_params(m); i++)
        if (!(params[i] == params[i]) || params[i] - params[i] != 0)
            return tempo_fail(err, "%s: weights hold non-finite values", sf->path);
    return 0;
}

/* safetensors_open checked the checksum when there is one. A file whose
 * format has one but which holds none was damaged where its key was (damage
 * anywhere else fails the checksum itself). */
static int check_sealed(const safetensors_file *sf, tempo_error *err)
{
    const char *fmt = safetensors_meta(sf, "format");
    if (fmt && (!strcmp(fmt, MODEL_FORMAT) || !strcmp(fmt, CHECKPOINT_FORMAT)) && !sf->checksummed)
        return tempo_fail(err, "%s: checksum mismatch (its format records a checksum and the header holds none: "
                          "the file is damaged)", sf->path);
    return 0;
}

static int config_from_file(const safetensors_file *sf, run_config *cfg, tempo_error *err)
{
    if (check_sealed(sf, err))
        return -1;
    const char *cj = safetensors_meta(sf, "config");
    if (!cj)
        return tempo_fail(err, "%s: not a tempo model (no config in its metadata)", sf->path);
    /* A key the config lacks predates it: the checkpoint was written before
     * the hybrid model's components existed, so they were off (the defaults,
     * cpu-default, have them on); so was learning while reading (adapt_lr),
     * so an older run reads as it was scored; and so were bf16 products. Every
     * other later key defaults to the value it had in effect before it was
     * added (beta1, beta2). */
    run_config_defaults(cfg);
    cfg->model.bf16_products = MODEL_PRODUCTS_FP32;
    cfg->memory_order = cfg->cache_order = cfg->match_length = 0;
    cfg->memory_train_weight = 0;
    cfg->adapt_lr = 0;
    tempo_error e2;
    if (run_config_from_json(cfg, cj, strlen(cj), &e2) || run_config_finish(cfg, &e2))
        return tempo_fail(err, "%s: bad config in metadata: %s", sf->path, e2.msg);
    return 0;
}

int checkpoint_load_model(const char *run_dir_or_file, int max_batch, run_config *cfg, model **m,
                          tokenizer **tok, tempo_error *err)
{
    char path[1100];
    struct stat st;
    *m = NULL;
    *tok = NULL;
    if (stat(run_dir_or_file, &st) == 0 && S_ISREG(st.st_mode) && gguf_is_file(run_dir_or_file))
        return gguf_import_model(run_dir_or_file, max_batch, cfg, m, tok, err); /* a model from llama.cpp's world */
    if (stat(run_dir_or_file, &st) == 0 && S_ISDIR(st.st_mode))
        path_join(path, sizeof path, run_dir_or_file, "model.safetensors");
    else
        snprintf(path, sizeof path, "%s", run_dir_or_file);
    safetensors_file sf;
    if (safetensors_open(&sf, path, err))
        return -1;
    int rc = config_from_file(&sf, cfg, err);
    const char *tt = safetensors_meta(&sf, "tokenizer");
    if (!rc && !tt)
        rc = tempo_fail(err, "%s: no tokenizer in its metadata", path);
    if (!rc && tok_parse(tok, tt, strlen(tt), path, err))
        rc = -1;
    if (!rc && tok_vocab_size(*tok) != cfg->model.vocab_size)
        rc = tempo_fail(err, "%s: tokenizer has %d ids but the model vocabulary is %d", path,
                        tok_vocab_size(*tok), cfg->model.vocab_size);
    if (!rc && model_create(m, &cfg->model, max_batch, err))
        rc = -1;
    if (!rc && load_weights(&sf, *m, err))
        rc = -1;
    safetensors_close(&sf);
    if (rc) {
        if (*m) model_free(*m);
        if (*tok) tok_free(*tok);
        *m = NULL;
        *tok = NULL;
    }
    return rc;
}

int checkpoint_read_config(const char *path, run_config *cfg, tempo_error *err)
{
    safetensors_file sf;
    if (safetensors_open(&sf, path, err))
        return -1;
    int rc = config_from_file(&sf, cfg, err);
    safetensors_close(&sf);
    return rc;
}

/* A metadata number in [lo, hi] (and whole when integer): checked here, since
 * the caller casts it, and a double beyond the type's range is undefined
 * behaviour in the cast (a damaged or hand-edited checkpoint). */
static int meta_num(const safetensors_file *sf, const char *key, double lo, double hi, int integer, double *out,
                    tempo_error *err)
{
    const char *v = safetensors_meta(sf, key);
    char *end;
    if (!v || (*out = strtod(v, &end), end == v || *end) || !(*out >= lo && *out <= hi) ||
        (integer && *out != floor(*out)))
        return tempo_fail(err, "%s: checkpoint metadata %s missing or malformed", sf->path, key);
    return 0;
}

int checkpoint_load_full(const char *path, model *m, optimizer *opt, train_state *st, int *checksummed,
                         tempo_error *err)
{
    safetensors_file sf;
    if (safetensors_open(&sf, path, err))
        return -1;
    if (checksummed)
        *checksummed = sf.checksummed;
    int rc = check_sealed(&sf, err);
    const char *fmt = safetensors_meta(&sf, "format");
    if (!rc && (!fmt || (strcmp(fmt, CHECKPOINT_FORMAT) && strcmp(fmt, CHECKPOINT_FORMAT_1))))
        rc = tempo_fail(err, "%s: not a tempo training checkpoint", path);
    if (!rc && load_weights(&sf, m, err))
        rc = -1;
    const char *names[2] = {"optim.m", "optim.v"};
    float *dst[2] = {opt->m, opt->v};
    for (int i = 0; !rc && i < 2; i++) {
        const st_tensor *t = safetensors_find(&sf, names[i]);
        if (!t || t->numel != opt->n_params)
            rc = tempo_fail(err, "%s: optimizer state %s missing or of the wrong size", path, names[i]);
        else   /* a sharded optimizer keeps its own span */
            memcpy(dst[i], (const float *)t->data + opt->state_base, sizeof(float) * opt->state_len);
    }
    double v[8];
    const char *keys[8] = {"step", "tokens", "elapsed_s", "budget_s", "max_steps", "guard_mult", "retries", "optim_t"};
    const double count = 9007199254740992.0; /* 2^53: counters stay exact in a double */
    const double hi[8] = {count, count, DBL_MAX, DBL_MAX, count, DBL_MAX, INT_MAX, count};
    const int integer[8] = {1, 1, 0, 0, 1, 0, 1, 1};
    for (int i = 0; !rc && i < 8; i++)
        rc = meta_num(&sf, keys[i], 0, hi[i], integer[i], &v[i], err);
    const char *r = safetensors_meta(&sf, "rng");
    if (!rc && (!r || strlen(r) != 64))
        rc = tempo_fail(err, "%s: checkpoint metadata rng missing or malformed", path);
    if (!rc) {
        st->step = (int64_t)v[0];
        st->tokens = (uint64_t)v[1];
        st->elapsed_s = v[2];
        st->budget_s = v[3];
        st->max_steps = (int64_t)v[4];
        st->guard_mult = v[5];
        st->retries = (int)v[6];
        opt->t = (int64_t)v[7];
        /* absent from checkpoints written before the count memory */
        const char *ms = safetensors_meta(&sf, "memory_s");
        st->memory_s = ms ? strtod(ms, NULL) : 0;
        if (!(st->memory_s >= 0 && st->memory_s <= st->elapsed_s)) st->memory_s = 0;
        /* absent from checkpoints written before data parallel training: one process */
        const char *ws = safetensors_meta(&sf, "world_size");
        long w = ws ? strtol(ws, NULL, 10) : 1;
        st->world_size = w >= 1 && w <= (1 << 20) ? (int)w : 1;
        for (int i = 0; i < 4; i++) {
            char part[17];
            memcpy(part, r + 16 * i, 16);
            part[16] = '\0';
            st->rng.s[i] = strtoull(part, NULL, 16);
        }
    }
    safetensors_close(&sf);
    return rc;
}
