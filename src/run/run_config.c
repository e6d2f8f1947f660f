/* run_config.c - the key table behind run_config (see run_config.h): each
 * key's name, type, range, help and default value. The defaults in this table
 * are the one default configuration of tempo: the cpu-default preset, which
 * configs/cpu-default.conf spells out key by key (test_run_config checks the
 * two agree). The model layer (src/model/) has no defaults of its own. */
#include "run/run_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data_path.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"
#include "memory/mixer.h"

typedef enum { K_INT, K_FLOAT, K_DOUBLE, K_BOOL, K_MLP, K_OPTIMIZER, K_PRODUCTS } key_type;

typedef struct {
    const char *name;
    key_type type;
    size_t offset;
    double min, max;
    double def;              /* the default (cpu-default); enums and bools as 0/1 */
    const char *help;
} key_def;

#define F(field) offsetof(run_config, field)
static const key_def KEYS[] = {
    {"vocab_size", K_INT, F(model.vocab_size), 0, 1 << 20, 0, "model vocabulary incl. separator (set from the data)"},
    {"context", K_INT, F(model.context), 1, 65536, 256, "tokens per training sequence"},
    {"d_model", K_INT, F(model.d_model), 1, 65536, 128, "residual width"},
    {"n_layers", K_INT, F(model.n_layers), 1, 1024, 4, "transformer blocks"},
    {"n_heads", K_INT, F(model.n_heads), 1, 1024, 2, "attention heads"},
    {"n_kv_heads", K_INT, F(model.n_kv_heads), 0, 1024, 0, "key/value heads (GQA); 0 = n_heads"},
    {"d_ff", K_INT, F(model.d_ff), 0, 1 << 20, 0, "MLP hidden width; 0 = 4*d_model (relu2) or 8/3*d_model (swiglu)"},
    {"mlp", K_MLP, F(model.mlp), 0, 0, MLP_SWIGLU, "relu2 | swiglu"},
    {"qk_norm", K_BOOL, F(model.qk_norm), 0, 1, 1, "RMSNorm on queries and keys"},
    {"tied_head", K_BOOL, F(model.tied_head), 0, 1, 1, "output head shares the token embedding"},
    {"logit_softcap", K_FLOAT, F(model.logit_softcap), 0, 1e6, 0, "c*tanh(z/c) on logits; 0 = off"},
    {"rope_theta", K_FLOAT, F(model.rope_theta), 1, 1e9, 10000, "rotary base"},
    {"norm_eps", K_FLOAT, F(model.norm_eps), 0, 1, 1e-5, "RMSNorm epsilon"},
    {"init_std", K_FLOAT, F(model.init_std), 0, 10, 0.02, "initial weight standard deviation"},
    {"bf16_products", K_PRODUCTS, F(model.bf16_products), 0, 0, MODEL_PRODUCTS_AUTO,
     "false | true | auto: the transformer's and Muon's matrix products on bf16 operands, fp32 sums (true "
     "needs AVX-512 BF16 to train; auto: bf16 where the CPU has it, fp32 elsewhere)"},
    {"optimizer", K_OPTIMIZER, F(optim.use_muon), 0, 0, 1, "adamw | muon (Muon for hidden matrices)"},
    {"lr", K_FLOAT, F(optim.lr), 0, 1e9, 3e-3, "AdamW lr of hidden matrices"},
    {"lr_embed", K_FLOAT, F(optim.lr_embed), 0, 1e9, 3e-3, "AdamW lr of the token embedding"},
    {"lr_head", K_FLOAT, F(optim.lr_head), 0, 1e9, 3e-3, "AdamW lr of an untied head"},
    {"lr_scalar", K_FLOAT, F(optim.lr_scalar), 0, 1e9, 3e-3, "AdamW lr of norm gains"},
    {"lr_muon", K_FLOAT, F(optim.lr_muon), 0, 1e9, 0.02, "Muon lr of hidden matrices"},
    {"beta1", K_FLOAT, F(optim.beta1), 0, 1, 0.9, "AdamW beta1"},
    {"beta2", K_FLOAT, F(optim.beta2), 0, 1, 0.95, "AdamW beta2"},
    {"eps", K_FLOAT, F(optim.eps), 0, 1, 1e-8, "AdamW epsilon"},
    {"weight_decay", K_FLOAT, F(optim.weight_decay), 0, 10, 0, "decoupled weight decay (matrices, head)"},
    {"muon_momentum", K_FLOAT, F(optim.muon_momentum), 0, 1, 0.95, "Muon Nesterov momentum"},
    {"ns_steps", K_INT, F(optim.ns_steps), 1, 20, 5, "Newton-Schulz iterations"},
    {"grad_clip", K_FLOAT, F(optim.grad_clip), 0, 1e6, 1, "clip global grad norm; 0 = off"},
    {"warmup", K_DOUBLE, F(schedule.warmup), 0, 1, 0.02, "share of the budget for lr warm-up"},
    {"warmdown", K_DOUBLE, F(schedule.warmdown), 0, 1, 0.4, "share of the budget for the final lr warm-down"},
    {"final_lr_frac", K_DOUBLE, F(schedule.final_frac), 0, 1, 0, "lr multiplier at the end of the budget"},
    {"batch_size", K_INT, F(batch_size), 1, 1 << 20, 16, "sequences per optimizer step"},
    {"micro_batch", K_INT, F(micro_batch), 0, 1 << 20, 0, "sequences per forward/backward; 0 = batch_size"},
    {"eval_every", K_DOUBLE, F(eval_every_s), 0, 1e9, 60, "seconds between val-slice evaluations; 0 = off"},
    {"eval_tokens", K_INT, F(eval_tokens), 0, 1 << 30, 16384, "tokens in the periodic val slice"},
    {"checkpoint_every", K_DOUBLE, F(checkpoint_every_s), 0, 1e9, 120, "seconds between checkpoints; 0 = only at the end"},
    {"max_retries", K_INT, F(max_retries), 0, 100, 3, "divergence guard: restores before stopping"},
    {"retry_lr_factor", K_DOUBLE, F(retry_lr_factor), 0, 1, 0.5, "lr multiplier applied at each restore"},
    {"memory_order", K_INT, F(memory_order), 0, 8, 5, "count memory of the training tokens, n-gram orders 1..K; 0 = none"},
    {"memory_prune", K_INT, F(memory_prune), 1, 1 << 20, 1, "drop top-order n-grams counted fewer times (1 = keep all)"},
    {"memory_budget_share", K_DOUBLE, F(memory_budget_share), 0, 1, 0.25,
     "the most of the --budget the memory's build may take, estimated: a shorter budget counts a prefix; 0 = all tokens"},
    {"memory_build_s_per_mtok", K_DOUBLE, F(memory_build_s_per_mtok), 0, 1e6, 0,
     "that estimate: build seconds per million tokens at 2 threads; 0 = the measured figure for the order"},
    {"cache_order", K_INT, F(cache_order), 0, 8, 8, "cache of the text being read, orders 1..K; 0 = none"},
    {"match_length", K_INT, F(match_length), 0, 64, 2, "match model of the text being read: tokens a match starts from; 0 = none"},
    {"mixer_lr", K_DOUBLE, F(mixer_lr), 0, 10, 0.3, "online learning rate of the mixing weights"},
    {"mixer_beta", K_DOUBLE, F(mixer_beta), MIXER_BETA_MIN, MIXER_BETA_MAX, 1.15,
     "the transformer enters the mixture sharpened, p^beta / sum p^beta (1 = as it is); kept in mixer.json"},
    {"adapt_lr", K_DOUBLE, F(adapt_lr), 0, 10, 0.2,
     "the transformer learns as it reads: one SGD step of this rate on every context of scored tokens; 0 = frozen"},
    {"mixer_holdout", K_INT, F(mixer_holdout), 0, 1 << 30, 65536, "training tokens kept out of the memory to fit the mixer"},
    {"memory_train_weight", K_DOUBLE, F(memory_train_weight), 0, 1, 0,
     "a > 0: train on the mixture loss -ln(a p + (1-a) p_memory) (leave-one-out memory); 0 = cross-entropy"},
    {"shard_optimizer", K_BOOL, F(shard_optimizer), 0, 1, 0,
     "with N ranks each keeps and updates only its 1/N of the optimizer state (ZeRO-1); needs mpirun"},
    {"overlap_comm", K_BOOL, F(overlap_comm), 0, 1, 1,
     "with N ranks: reduce each layer's gradient while the backward pass runs (0: one collective after it)"},
    {"thread_replicas", K_BOOL, F(thread_replicas), 0, 1, 1,
     "one process on a CPU: each thread runs the step's forward and backward on its share of the rows "
     "(a model replica each, summed after); 0: every op shared by the threads"},
};
#undef F
#define N_KEYS ((int)(sizeof KEYS / sizeof KEYS[0]))

/* Store x (in range, integral for integer keys) in the field of k. */
static void store(run_config *c, const key_def *k, double x)
{
    char *p = (char *)c + k->offset;
    switch (k->type) {
    case K_INT: case K_BOOL: case K_OPTIMIZER: case K_PRODUCTS: *(int *)(void *)p = (int)x; break;
    case K_MLP: *(mlp_kind *)(void *)p = x ? MLP_SWIGLU : MLP_RELU2; break;
    case K_FLOAT: *(float *)(void *)p = (float)x; break;
    case K_DOUBLE: *(double *)(void *)p = x; break;
    }
}

void run_config_defaults(run_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < N_KEYS; i++)
        store(c, &KEYS[i], KEYS[i].def);
    snprintf(c->preset, sizeof c->preset, "cpu-default");
}

static const key_def *find_key(const char *name)
{
    for (int i = 0; i < N_KEYS; i++)
        if (!strcmp(KEYS[i].name, name))
            return &KEYS[i];
    return NULL;
}

/* 1 for 1 | true | yes, 0 for 0 | false | no, else -1. */
static int bool_word(const char *v)
{
    return !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")  ? 1
           : !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") ? 0
                                                                         : -1;
}

int run_config_set(run_config *c, const char *key, const char *value, tempo_error *err)
{
    const key_def *k = find_key(key);
    if (!k)
        return tempo_usage(err, "--set %s: unknown key (see 'tempo train --help' for the list)", key);
    char *p = (char *)c + k->offset;
    const char *v = value;
    while (isspace((unsigned char)*v)) v++;
    if (k->type == K_MLP) {
        if (!strcmp(v, "relu2")) *(mlp_kind *)(void *)p = MLP_RELU2;
        else if (!strcmp(v, "swiglu")) *(mlp_kind *)(void *)p = MLP_SWIGLU;
        else return tempo_usage(err, "--set %s=%s: expected relu2 or swiglu", key, value);
        return 0;
    }
    if (k->type == K_OPTIMIZER) {
        if (!strcmp(v, "adamw")) *(int *)(void *)p = 0;
        else if (!strcmp(v, "muon")) *(int *)(void *)p = 1;
        else return tempo_usage(err, "--set %s=%s: expected adamw or muon", key, value);
        return 0;
    }
    if (k->type == K_PRODUCTS) {   /* a bool (bf16 | fp32 too, as --precision says them), or auto */
        int b = !strcmp(v, "auto") ? MODEL_PRODUCTS_AUTO : !strcmp(v, "bf16") ? 1 : !strcmp(v, "fp32") ? 0
                                                                                         : bool_word(v);
        if (b < 0)
            return tempo_usage(err, "--set %s=%s: expected true, false or auto", key, value);
        *(int *)(void *)p = b;   /* MODEL_PRODUCTS_FP32 0, _BF16 1, _AUTO */
        return 0;
    }
    if (k->type == K_BOOL) {
        int b = bool_word(v);
        if (b < 0)
            return tempo_usage(err, "--set %s=%s: expected true or false", key, value);
        *(int *)(void *)p = b;
        return 0;
    }
    errno = 0;
    char *end;
    double x = strtod(v, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == v || *end || errno || !isfinite(x))
        return tempo_usage(err, "--set %s=%s: not a number", key, value);
    if (x < k->min || x > k->max)
        return tempo_usage(err, "--set %s=%s: out of range [%g, %g]", key, value, k->min, k->max);
    if (k->type == K_INT && x != floor(x))
        return tempo_usage(err, "--set %s=%s: expected an integer", key, value);
    store(c, k, x);
    return 0;
}

int run_config_set_pair(run_config *c, const char *pair, tempo_error *err)
{
    const char *eq = strchr(pair, '=');
    if (!eq || eq == pair)
        return tempo_usage(err, "--set %s: expected key=value", pair);
    char key[64];
    size_t n = (size_t)(eq - pair);
    while (n && isspace((unsigned char)pair[n - 1])) n--;
    if (n >= sizeof key)
        return tempo_usage(err, "--set %s: key too long", pair);
    memcpy(key, pair, n);
    key[n] = '\0';
    return run_config_set(c, key, eq + 1, err);
}

/* A name with a '/' or ending in .conf is a file path, taken as given. */
static int preset_is_path(const char *name)
{
    size_t len = strlen(name);
    return strchr(name, '/') || (len > 5 && !strcmp(name + len - 5, ".conf"));
}

static int find_preset(const char *name, char *path, size_t n)
{
    if (preset_is_path(name)) {
        snprintf(path, n, "%s", name);
        return path_exists(path);
    }
    char file[128];
    snprintf(file, sizeof file, "%s.conf", name);
    return data_path_find("configs", file, path, n);
}

int run_config_load_preset(run_config *c, const char *name, tempo_error *err)
{
    char path[1200];
    if (!find_preset(name, path, sizeof path)) {
        if (preset_is_path(name))
            return tempo_usage(err, "preset %s: no such file", name);
        return tempo_usage(err, "preset %s: not found (looked for %s.conf in $TEMPO_CONFIGS, <tempo>/../configs, "
                           "<tempo>/../share/tempo/configs, ./configs)",
                           name, name);
    }
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 1 << 20, err))
        return -1;
    int line_no = 0, rc = 0;
    for (char *line = text, *nl; !rc && line < text + len; line = nl + 1) {
        /* every line counts, blank ones too, so that errors name the right one */
        nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl)
            nl = text + len; /* the NUL file_read_all puts after the text */
        *nl = '\0';
        line_no++;
        if (strlen(line) != (size_t)(nl - line)) {
            rc = tempo_usage(err, "%s:%d: a NUL byte (not a text file)", path, line_no);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
        if (!*s) continue;
        tempo_error e2;
        if (run_config_set_pair(c, s, &e2)) /* "--set " is the command line's word, not the file's */
            rc = tempo_usage(err, "%s:%d: %s", path, line_no, strncmp(e2.msg, "--set ", 6) ? e2.msg : e2.msg + 6);
    }
    free(text);
    if (!rc) {
        const char *base = strrchr(name, '/');
        snprintf(c->preset, sizeof c->preset, "%s", base ? base + 1 : name);
    }
    return rc;
}

int run_config_finish(run_config *c, tempo_error *err)
{
    model_config *m = &c->model;
    if (m->n_kv_heads == 0)
        m->n_kv_heads = m->n_heads;
    if (m->d_ff == 0) {
        if (m->mlp == MLP_SWIGLU) {
            int f = (8 * m->d_model / 3 + 31) / 32 * 32;
            m->d_ff = f;
        } else {
            m->d_ff = 4 * m->d_model;
        }
    }
    if (c->batch_size < 1 || c->micro_batch < 0)   /* a config read from a file or a bench line can say so */
        return tempo_usage(err, "batch_size %d and micro_batch %d: batch_size must be at least 1, micro_batch "
                           "at least 0 (0: the whole batch)", c->batch_size, c->micro_batch);
    if (c->micro_batch == 0 || c->micro_batch > c->batch_size)
        c->micro_batch = c->batch_size;
    if (c->batch_size % c->micro_batch)
        return tempo_usage(err, "batch_size %d is not a multiple of micro_batch %d", c->batch_size,
                           c->micro_batch);
    if (c->schedule.warmup + c->schedule.warmdown > 1)
        return tempo_usage(err, "warmup %g + warmdown %g exceed the whole budget", c->schedule.warmup,
                           c->schedule.warmdown);
    return model_config_validate(m, err);
}

int run_config_to_json(const run_config *c, strbuf *out, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    for (int i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        const char *p = (const char *)c + k->offset;
        jsonw_key(&w, k->name);
        switch (k->type) {
        case K_INT: jsonw_int(&w, *(const int *)(const void *)p); break;
        case K_BOOL: jsonw_bool(&w, *(const int *)(const void *)p); break;
        case K_FLOAT: jsonw_number(&w, *(const float *)(const void *)p); break;
        case K_DOUBLE: jsonw_number(&w, *(const double *)(const void *)p); break;
        case K_MLP: jsonw_string(&w, *(const mlp_kind *)(const void *)p == MLP_SWIGLU ? "swiglu" : "relu2"); break;
        case K_OPTIMIZER: jsonw_string(&w, *(const int *)(const void *)p ? "muon" : "adamw"); break;
        case K_PRODUCTS:   /* a bool as before auto existed, so older readers take 0 and 1 */
            if (*(const int *)(const void *)p == MODEL_PRODUCTS_AUTO) jsonw_string(&w, "auto");
            else jsonw_bool(&w, *(const int *)(const void *)p);
            break;
        }
    }
    jsonw_field_string(&w, "preset", c->preset);
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, "config") : 0;
}

int run_config_from_json(run_config *c, const char *json, size_t len, tempo_error *err)
{
    json_value *root;
    if (json_parse(json, len, &root, err))
        return -1;
    int rc = 0;
    if (root->type != JSON_OBJECT)
        rc = tempo_fail(err, "config: not a JSON object");
    for (size_t i = 0; !rc && i < root->n; i++) {
        const json_value *v = &root->items[i];
        const char *key = root->keys[i];
        char text[64];
        if (!strcmp(key, "preset")) {
            if (v->type == JSON_STRING)
                snprintf(c->preset, sizeof c->preset, "%s", v->string);
            continue;
        }
        if (v->type == JSON_STRING) snprintf(text, sizeof text, "%s", v->string);
        else if (v->type == JSON_BOOL) snprintf(text, sizeof text, "%s", v->boolean ? "true" : "false");
        else if (v->type == JSON_NUMBER) snprintf(text, sizeof text, "%.17g", v->number);
        else { rc = tempo_fail(err, "config: key %s: unexpected value", key); break; }
        if (run_config_set(c, key, text, err)) {
            err->code = 1;
            rc = -1;
        }
    }
    json_free(root);
    return rc;
}

void run_config_print_keys(FILE *f)
{
    for (int i = 0; i < N_KEYS; i++) {
        const key_def *k = &KEYS[i];
        char def[32];
        if (k->type == K_MLP) snprintf(def, sizeof def, "%s", k->def ? "swiglu" : "relu2");
        else if (k->type == K_OPTIMIZER) snprintf(def, sizeof def, "%s", k->def ? "muon" : "adamw");
        else if (k->type == K_BOOL) snprintf(def, sizeof def, "%s", k->def ? "true" : "false");
        else if (k->type == K_PRODUCTS)
            snprintf(def, sizeof def, "%s", k->def == MODEL_PRODUCTS_AUTO ? "auto" : k->def ? "true" : "false");
        else snprintf(def, sizeof def, "%g", k->def);
        fprintf(f, "  %-19s %-8s %s\n", k->name, def, k->help);
    }
}
