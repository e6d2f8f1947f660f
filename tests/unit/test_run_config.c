/* test_run_config.c - presets, --set overrides and their errors, the one
 * default (the built-in defaults and configs/cpu-default.conf agree key by
 * key), the JSON round trip used by checkpoints, an old checkpoint's missing
 * keys, a checkpoint's loop-state metadata checked before it is cast, its
 * checksum, and the one mapping of a config onto its hybrid parts
 * (run/run_parts.h). */
#include "test.h"

#include <unistd.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "run/checkpoint.h"
#include "run/run_config.h"
#include "run/run_parts.h"
#include "train/train_step.h"

static void test_set_and_errors(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    CHECK(run_config_set_pair(&c, "d_model=128", &err) == 0 && c.model.d_model == 128);
    CHECK(run_config_set_pair(&c, "mlp=swiglu", &err) == 0 && c.model.mlp == MLP_SWIGLU);
    CHECK(run_config_set_pair(&c, "optimizer=muon", &err) == 0 && c.optim.use_muon == 1);
    CHECK(run_config_set_pair(&c, "qk_norm=true", &err) == 0 && c.model.qk_norm == 1);
    CHECK(run_config_set_pair(&c, "lr=0.01", &err) == 0 && fabsf(c.optim.lr - 0.01f) < 1e-9f);
    /* bf16_products: false | true | auto (and 0 | 1, fp32 | bf16 as --precision says them) */
    const struct { const char *v; int want; } products[] = {
        {"auto", MODEL_PRODUCTS_AUTO}, {"true", MODEL_PRODUCTS_BF16}, {"0", MODEL_PRODUCTS_FP32},
        {"bf16", MODEL_PRODUCTS_BF16}, {"false", MODEL_PRODUCTS_FP32}, {"1", MODEL_PRODUCTS_BF16},
        {"fp32", MODEL_PRODUCTS_FP32}, {" auto", MODEL_PRODUCTS_AUTO}};
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        char pair[64];
        snprintf(pair, sizeof pair, "bf16_products=%s", products[i].v);
        CHECK_MSG(run_config_set_pair(&c, pair, &err) == 0 && c.model.bf16_products == products[i].want, "%s", pair);
    }
    const char *bad[] = {"nonsense=1", "d_model=abc", "d_model=1.5", "d_model=-4", "mlp=gelu", "=3", "lr",
                         "qk_norm=maybe", "warmup=2", "bf16_products=2", "bf16_products=autox",
                         "bf16_products=", "qk_norm=auto"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        CHECK_MSG(run_config_set_pair(&c, bad[i], &err) == -1, "%s", bad[i]);
        CHECK_MSG(err.code == 2 && strstr(err.msg, "--set") != NULL, "%s -> %s", bad[i], err.msg);
    }
}

static void test_finish_derives_and_validates(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    c.model.vocab_size = 300;
    c.model.d_model = 96;
    c.model.n_heads = 4;
    c.model.mlp = MLP_RELU2;
    CHECK(run_config_finish(&c, &err) == 0);
    CHECK(c.model.d_ff == 4 * 96 && c.model.n_kv_heads == 4 && c.micro_batch == c.batch_size);
    run_config_defaults(&c);
    c.model.vocab_size = 300;
    c.model.mlp = MLP_SWIGLU;
    CHECK(run_config_finish(&c, &err) == 0);
    CHECK(c.model.d_ff % 32 == 0 && c.model.d_ff >= 8 * c.model.d_model / 3);
    run_config_defaults(&c);
    c.model.vocab_size = 300;
    c.model.d_model = 100;
    c.model.n_heads = 3;
    CHECK(run_config_finish(&c, &err) == -1);
    run_config_defaults(&c);
    c.model.vocab_size = 300;
    c.batch_size = 10;
    c.micro_batch = 4;
    CHECK(run_config_finish(&c, &err) == -1 && strstr(err.msg, "micro_batch"));
    /* a batch of 0 (a bench line can say so: the plan_files fuzz target found it) is refused, not divided by */
    run_config_defaults(&c);
    c.batch_size = 0;
    c.micro_batch = 8;
    CHECK(run_config_finish(&c, &err) == -1 && strstr(err.msg, "batch_size 0"));
}

static void test_presets(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    CHECK(run_config_load_preset(&c, "tiny-test", &err) == 0);
    CHECK(c.model.d_model == 64 && !strcmp(c.preset, "tiny-test"));
    /* the defaults are the hybrid model; the other presets say they are the transformer alone */
    const char *alone[] = {"tiny-test", "cpu-transformer", "cpu-d256", "cpu-d512"};
    for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++) {
        run_config_defaults(&c);
        CHECK(run_config_load_preset(&c, alone[i], &err) == 0);
        CHECK_MSG(c.memory_order == 0 && c.cache_order == 0 && c.match_length == 0, "%s", alone[i]);
    }
    CHECK(run_config_load_preset(&c, "cpu-default", &err) == 0);
    /* cpu-30m: the default widened, the hybrid kept */
    run_config_defaults(&c);
    CHECK(run_config_load_preset(&c, "cpu-30m", &err) == 0);
    CHECK(c.model.d_model == 192 && c.model.n_heads == 3 && c.model.n_layers == 4 && c.memory_order == 5 &&
          c.cache_order == 8 && c.adapt_lr > 0);
    tempo_error_clear(&err);
    CHECK(run_config_load_preset(&c, "no-such-preset", &err) == -1 && err.code == 2);
    CHECK(strstr(err.msg, "no-such-preset") != NULL);
    /* a path is taken as given, and the error says so (issue 9: "looked for /nonexistent.conf.conf") */
    CHECK(run_config_load_preset(&c, "/nonexistent.conf", &err) == -1 && err.code == 2);
    CHECK_MSG(!strcmp(err.msg, "preset /nonexistent.conf: no such file"), "%s", err.msg);
    CHECK(run_config_load_preset(&c, "configs/nope", &err) == -1 && !strcmp(err.msg, "preset configs/nope: no such file"));
    CHECK(run_config_load_preset(&c, "nope.conf", &err) == -1 && !strcmp(err.msg, "preset nope.conf: no such file"));
    /* a preset with a bad line names the file and line */
    const char *p = "build/test_bad_preset.conf";
    FILE *f = fopen(p, "w");
    fputs("# comment\nd_model = 64\nwat = 3\n", f);
    fclose(f);
    tempo_error_clear(&err);
    CHECK(run_config_load_preset(&c, p, &err) == -1);
    CHECK(strstr(err.msg, "test_bad_preset.conf:3") != NULL && strstr(err.msg, "wat") != NULL);
    /* blank lines count (they were skipped by the line splitter: the error named line 3 of 5),
     * and a NUL byte is refused rather than ending the file early */
    f = fopen(p, "w");
    fputs("# comment\n\nd_model = 64\n\nwat = 3\n", f);
    fclose(f);
    CHECK(run_config_load_preset(&c, p, &err) == -1);
    CHECK_MSG(strstr(err.msg, "test_bad_preset.conf:5: wat: unknown key") != NULL, "%s", err.msg);
    f = fopen(p, "w");
    fwrite("d_model = 64\n\0wat = 3\n", 1, 23, f);
    fclose(f);
    CHECK(run_config_load_preset(&c, p, &err) == -1);
    CHECK_MSG(strstr(err.msg, "test_bad_preset.conf:2: a NUL byte") != NULL, "%s", err.msg);
    unlink(p);
}

/* Does the preset file at path state exactly the built-in defaults? Its
 * values, loaded over the defaults, must change nothing (no disagreement),
 * and it must name every key but vocab_size (so it is the whole default, not
 * a part that happens to agree). Returns 1 if so, else 0 with why. */
static int preset_is_the_defaults(const char *path, char *why, size_t n)
{
    run_config d, c;
    run_config_defaults(&d);
    run_config_defaults(&c);
    tempo_error err;
    if (run_config_load_preset(&c, path, &err)) {
        snprintf(why, n, "%s", err.msg);
        return 0;
    }
    snprintf(c.preset, sizeof c.preset, "%s", d.preset);
    strbuf a = {0}, b = {0};
    CHECK(run_config_to_json(&d, &a, NULL) == 0);
    CHECK(run_config_to_json(&c, &b, NULL) == 0);
    int same = a.len == b.len && !memcmp(a.data, b.data, a.len);
    if (!same)
        snprintf(why, n, "defaults %s, preset %s", a.data, b.data);
    /* every key of the JSON must have a "key =" line in the file */
    char *text = NULL;
    size_t len = 0;
    tempo_error e2;
    if (same && file_read_all(path, &text, &len, 1 << 20, &e2) == 0) {
        for (const char *k = strchr(a.data, '"'); same && k; k = strchr(k, '"')) {
            const char *end = strchr(k + 1, '"');
            char key[64], line[80];
            snprintf(key, sizeof key, "%.*s", (int)(end - k - 1), k + 1);
            k = strchr(end, ','); /* the next key follows the next comma (no value holds one) */
            if (!k) break;
            if (!strcmp(key, "vocab_size") || !strcmp(key, "preset"))
                continue;
            snprintf(line, sizeof line, "\n%s =", key);
            if (!strstr(text, line)) {
                snprintf(why, n, "no line for %s", key);
                same = 0;
            }
        }
    }
    free(text);
    strbuf_free(&a);
    strbuf_free(&b);
    return same;
}

/* The three defaults of issue 9 are one: the model layer has none,
 * run_config_defaults is cpu-default, and configs/cpu-default.conf writes
 * it out; a copy with one value changed or one key left out is caught. */
static void test_defaults_are_cpu_default(void)
{
    run_config d;
    run_config_defaults(&d);
    CHECK(!strcmp(d.preset, "cpu-default") && d.model.vocab_size == 0);
    char why[2048] = "";
    CHECK_MSG(preset_is_the_defaults("configs/cpu-default.conf", why, sizeof why), "%s", why);
    char *text = NULL;
    size_t len = 0;
    tempo_error err;
    CHECK(file_read_all("configs/cpu-default.conf", &text, &len, 1 << 20, &err) == 0);
    if (!text)
        return;
    const char *p = "build/test_defaults_copy.conf";
    char *cut = strstr(text, "\ncache_order = 8");
    CHECK(cut != NULL);
    if (!cut) { free(text); return; }
    FILE *f = fopen(p, "w"); /* cache_order = 7: one value disagrees */
    fprintf(f, "%.*s\ncache_order = 7%s", (int)(cut - text), text, cut + strlen("\ncache_order = 8"));
    fclose(f);
    CHECK(!preset_is_the_defaults(p, why, sizeof why) && strstr(why, "\"cache_order\":7"));
    f = fopen(p, "w"); /* the cache_order line left out: the values agree, the file is not whole */
    fprintf(f, "%.*s%s", (int)(cut - text), text, cut + strlen("\ncache_order = 8"));
    fclose(f);
    CHECK_MSG(!preset_is_the_defaults(p, why, sizeof why) && !strcmp(why, "no line for cache_order"), "%s", why);
    unlink(p);
    free(text);
}

static void test_json_round_trip(void)
{
    run_config a, b;
    run_config_defaults(&a);
    tempo_error err;
    CHECK(run_config_set_pair(&a, "lr=0.0123", &err) == 0);
    CHECK(run_config_set_pair(&a, "mlp=swiglu", &err) == 0);
    CHECK(run_config_set_pair(&a, "optimizer=muon", &err) == 0);
    CHECK(run_config_set_pair(&a, "warmdown=0.33", &err) == 0);
    CHECK(run_config_set_pair(&a, "bf16_products=auto", &err) == 0);
    a.model.vocab_size = 4097;
    snprintf(a.preset, sizeof a.preset, "x");
    strbuf s = {0};
    CHECK(run_config_to_json(&a, &s, &err) == 0);
    run_config_defaults(&b);
    CHECK(run_config_from_json(&b, s.data, s.len, &err) == 0);
    strbuf t = {0};
    CHECK(run_config_to_json(&b, &t, &err) == 0);
    CHECK(s.len == t.len && !memcmp(s.data, t.data, s.len));
    CHECK(b.optim.lr == a.optim.lr && b.schedule.warmdown == a.schedule.warmdown && b.model.vocab_size == 4097);
    CHECK(b.model.bf16_products == MODEL_PRODUCTS_AUTO && strstr(s.data, "\"bf16_products\":\"auto\"") != NULL);
    /* 0 and 1 as JSON bools, as before auto existed: older readers take them */
    for (int v = MODEL_PRODUCTS_FP32; v <= MODEL_PRODUCTS_BF16; v++) {
        strbuf u = {0};
        a.model.bf16_products = v;
        CHECK(run_config_to_json(&a, &u, &err) == 0);
        CHECK(strstr(u.data, v ? "\"bf16_products\":true" : "\"bf16_products\":false") != NULL);
        CHECK(run_config_from_json(&b, u.data, u.len, &err) == 0 && b.model.bf16_products == v);
        strbuf_free(&u);
    }
    strbuf_free(&s);
    strbuf_free(&t);
    CHECK(run_config_from_json(&b, "{\"bogus\":1}", 11, &err) == -1);
    CHECK(run_config_from_json(&b, "[1]", 3, &err) == -1);
}

/* Copy the checkpoint src to dst with one metadata value replaced. */
static int rewrite_meta(const char *src, const char *dst, const char *key, const char *value)
{
    safetensors_file sf;
    tempo_error err;
    if (safetensors_open(&sf, src, &err))
        return -1;
    st_write_tensor *ts = calloc((size_t)sf.n_tensors, sizeof *ts);
    st_meta *meta = calloc((size_t)sf.n_meta, sizeof *meta);
    for (int i = 0; ts && i < sf.n_tensors; i++) {
        const st_tensor *t = &sf.tensors[i];
        ts[i].name = t->name;
        ts[i].data = t->data;
        ts[i].ndim = t->ndim;
        memcpy(ts[i].shape, t->shape, sizeof t->shape);
    }
    for (int i = 0; meta && i < sf.n_meta; i++) {
        meta[i].key = sf.meta_keys[i];
        meta[i].value = strcmp(sf.meta_keys[i], key) ? sf.meta_values[i] : value;
    }
    int rc = ts && meta ? safetensors_write(dst, ts, sf.n_tensors, meta, sf.n_meta, &err) : -1;
    free(ts);
    free(meta);
    safetensors_close(&sf);
    return rc;
}

/* A checkpoint written before the hybrid model's keys existed (its config
 * lacks memory_order, cache_order, match_length, memory_train_weight,
 * adapt_lr, bf16_products) reads with those components off, as it was
 * trained and scored, not with the defaults' (on; bf16_products auto). */
static void check_old_config(const char *src, const char *dst, const run_config *c)
{
    strbuf js = {0}, old = {0};
    CHECK(run_config_to_json(c, &js, NULL) == 0);
    const char *later[] = {"memory_order", "cache_order", "match_length", "memory_train_weight", "adapt_lr",
                           "bf16_products"};
    for (const char *k = js.data + 1; *k;) { /* copy the object, leaving out the later keys */
        const char *end = strchr(k, ',');
        size_t n = end ? (size_t)(end - k) : strlen(k);
        int skip = 0;
        for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
            char q[64];
            snprintf(q, sizeof q, "\"%s\":", later[i]);
            skip |= !strncmp(k, q, strlen(q));
        }
        if (!skip)
            strbuf_printf(&old, "%s%.*s", old.len ? "," : "{", (int)n, k);
        k += n + (end != NULL);
    }
    CHECK(strstr(old.data, "match_length") == NULL && strstr(old.data, "\"d_model\":64") != NULL);
    CHECK(rewrite_meta(src, dst, "config", old.data) == 0);
    run_config back;
    tempo_error err;
    CHECK_MSG(checkpoint_read_config(dst, &back, &err) == 0, "%s", err.msg);
    CHECK(back.memory_order == 0 && back.cache_order == 0 && back.match_length == 0 &&
          back.memory_train_weight == 0 && back.adapt_lr == 0 && back.model.d_model == 64);
    CHECK(back.model.bf16_products == MODEL_PRODUCTS_FP32);   /* the defaults' is auto */
    strbuf_free(&js);
    strbuf_free(&old);
}

/* A checkpoint whose loop state holds numbers out of their range (a damaged
 * or edited file) is refused as malformed: the loader casts them to
 * integers, which is undefined behaviour beyond the type's range (the
 * sanitized build checks it). The unchanged copy loads. */
static void test_checkpoint_metadata_ranges(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    CHECK(run_config_load_preset(&c, "tiny-test", &err) == 0);
    c.model.vocab_size = 97;
    CHECK(run_config_finish(&c, &err) == 0);
    model *m = NULL;
    CHECK(model_create(&m, &c.model, 1, &err) == 0);
    if (!m)
        return;
    model_init(m, 1);
    optimizer o;
    CHECK(train_optimizer_create(&o, m, &c.optim, &err) == 0);
    train_state st = {.step = 12, .tokens = 3456, .elapsed_s = 1.5, .budget_s = 60, .max_steps = 0,
                      .guard_mult = 1, .retries = 0};
    char src[64], dst[64];
    snprintf(src, sizeof src, "build/test_ckpt_%d.safetensors", (int)getpid());
    snprintf(dst, sizeof dst, "build/test_ckpt_%d_bad.safetensors", (int)getpid());
    CHECK(checkpoint_save_full(src, m, &c, &o, &st, &err) == 0);
    train_state back;
    CHECK(rewrite_meta(src, dst, "step", "12") == 0);
    CHECK_MSG(checkpoint_load_full(dst, m, &o, &back, NULL, &err) == 0 && back.step == 12 && back.tokens == 3456,
              "%s", err.msg);
    struct { const char *key, *value; } bad[] = {
        {"step", "1e30"}, {"step", "-1"}, {"step", "2.5"}, {"tokens", "1e20"}, {"max_steps", "9.3e18"},
        {"optim_t", "1e300"}, {"retries", "1e10"}, {"retries", "-1e300"}, {"elapsed_s", "nan"},
        {"budget_s", "inf"}, {"guard_mult", "-1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(rewrite_meta(src, dst, bad[i].key, bad[i].value) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(checkpoint_load_full(dst, m, &o, &back, NULL, &err) == -1 && strstr(err.msg, "malformed") &&
                      strstr(err.msg, bad[i].key),
                  "%s=%s: %s", bad[i].key, bad[i].value, err.msg);
    }
    check_old_config(src, dst, &c);
    unlink(src);
    unlink(dst);
    optim_free(&o);
    model_free(m);
}

/* Blank a span of a file's header with spaces (JSON whitespace): an edit
 * that keeps the header's length. */
static void blank(char *file, const char *from, size_t n)
{
    char *at = strstr(file + 8, from);
    CHECK(at != NULL);
    if (at)
        memset(at, ' ', n);
}

/* Checkpoints carry a checksum (issue 31: 2,000 flipped bytes were resumed
 * and trained on until the run diverged): every flip of a header byte and
 * of a sample of the data's bytes is refused naming the file, the data's as
 * a checksum mismatch, the checksum key's own letters included (the format,
 * "tempo-checkpoint-2", says there is one); a checkpoint written before
 * checksums ("tempo-checkpoint-1", none) still loads, unchecked; a model's
 * header is sealed the same way for its readers (config_from_file). */
static void test_checkpoint_checksum(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    CHECK(run_config_load_preset(&c, "tiny-test", &err) == 0);
    c.model.vocab_size = 97;
    c.model.d_model = 16;
    c.model.n_layers = 1;
    c.model.d_ff = 32;
    c.model.context = 16;
    CHECK_MSG(run_config_finish(&c, &err) == 0, "%s", err.msg);
    model *m = NULL;
    CHECK(model_create(&m, &c.model, 1, &err) == 0);
    if (!m)
        return;
    model_init(m, 1);
    optimizer o;
    CHECK(train_optimizer_create(&o, m, &c.optim, &err) == 0);
    train_state st = {.step = 12, .tokens = 3456, .elapsed_s = 1.5, .budget_s = 60, .guard_mult = 1, .world_size = 1};
    char src[64], dst[64];
    snprintf(src, sizeof src, "build/test_sum_%d.safetensors", (int)getpid());
    snprintf(dst, sizeof dst, "build/test_sum_%d_bad.safetensors", (int)getpid());
    CHECK(checkpoint_save_full(src, m, &c, &o, &st, &err) == 0);
    train_state back;
    int checksummed = -1;
    CHECK_MSG(checkpoint_load_full(src, m, &o, &back, &checksummed, &err) == 0 && checksummed == 1, "%s", err.msg);
    char *file;
    size_t len;
    CHECK(file_read_all(src, &file, &len, 0, &err) == 0);
    uint64_t hl;
    memcpy(&hl, file, 8);
    int refused = 0, tried = 0;
    for (size_t i = 0; i < len; i += i < 8 + hl ? 1 : 61) {
        file[i] ^= 0x01;
        CHECK(file_write_atomic(dst, file, len, &err) == 0);
        file[i] ^= 0x01;
        tempo_error_clear(&err);
        tried++;
        int rc = checkpoint_load_full(dst, m, &o, &back, NULL, &err);
        refused += rc == -1 && strstr(err.msg, dst) != NULL;
        CHECK_MSG(rc == -1 && strstr(err.msg, dst), "flip at byte %zu of %zu (header %llu) loaded", i, len,
                  (unsigned long long)hl);
        if (i >= 8 + hl)
            CHECK_MSG(strstr(err.msg, "checksum mismatch"), "data flip at %zu: %s", i, err.msg);
    }
    CHECK_MSG(refused == tried && tried > 1000, "%d of %d refused", refused, tried);
    /* the checksum entry gone, the format still version 2: refused */
    const size_t entry = strlen(",\"checksum\":\"sha256:\"") + 64;
    char *old = malloc(len);
    memcpy(old, file, len);
    blank(old, ",\"checksum\":\"sha256:", entry);
    CHECK(file_write_atomic(dst, old, len, &err) == 0);
    tempo_error_clear(&err);
    CHECK_MSG(checkpoint_load_full(dst, m, &o, &back, NULL, &err) == -1 && strstr(err.msg, "checksum mismatch"), "%s",
              err.msg);
    /* ... and as version 1 wrote it: loads, unchecked */
    char *v = strstr(old + 8, "tempo-checkpoint-2");
    CHECK(v != NULL);
    if (v)
        v[strlen("tempo-checkpoint-")] = '1';
    CHECK(file_write_atomic(dst, old, len, &err) == 0);
    checksummed = -1;
    CHECK_MSG(checkpoint_load_full(dst, m, &o, &back, &checksummed, &err) == 0 && checksummed == 0 && back.step == 12,
              "%s", err.msg);
    free(old);
    free(file);
    /* a model: its header's flips are refused by the config reader that eval's loader shares */
    train_state ms = {.step = 12, .tokens = 3456};
    CHECK(checkpoint_save_model(src, m, &c, "tokenizer text", &ms, NULL, &err) == 0);
    run_config rc_back;
    CHECK_MSG(checkpoint_read_config(src, &rc_back, &err) == 0 && rc_back.model.d_model == 16, "%s", err.msg);
    CHECK(file_read_all(src, &file, &len, 0, &err) == 0);
    memcpy(&hl, file, 8);
    for (size_t i = 0; i < 8 + hl; i++) {
        file[i] ^= 0x01;
        CHECK(file_write_atomic(dst, file, len, &err) == 0);
        file[i] ^= 0x01;
        tempo_error_clear(&err);
        CHECK_MSG(checkpoint_read_config(dst, &rc_back, &err) == -1 && strstr(err.msg, dst), "model flip at %zu", i);
    }
    free(file);
    unlink(src);
    unlink(dst);
    optim_free(&o);
    model_free(m);
}

/* run_parts_settings: the run's parts, adapt_lr included; what a reader switches off or asks for instead */
static void test_parts_settings(void)
{
    run_config c;
    tempo_error err;
    run_config_defaults(&c);
    const char *set[] = {"memory_order=4", "cache_order=3", "match_length=5", "mixer_lr=0.25", "mixer_beta=1.5",
                         "adapt_lr=0.2"};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        CHECK_MSG(run_config_set_pair(&c, set[i], &err) == 0, "%s: %s", set[i], err.msg);
    hybrid_settings s = run_parts_settings(&c, run_parts_all());
    CHECK(s.memory_order == 4 && s.cache_order == 3 && s.match_length == 5);
    CHECK(s.mixer_lr == c.mixer_lr && s.mixer_beta == c.mixer_beta && s.model_lr == c.adapt_lr && s.model_lr > 0);
    s = run_parts_settings(&c, run_parts_frozen(1, 1));   /* ICL, generate, bench infer: the transformer frozen */
    CHECK(s.memory_order == 4 && s.cache_order == 3 && s.match_length == 5 && s.model_lr == 0);
    s = run_parts_settings(&c, run_parts_frozen(0, 0));   /* the transformer alone, frozen */
    CHECK(s.memory_order == 0 && s.cache_order == 0 && s.match_length == 0 && s.model_lr == 0);
    run_parts_use u = run_parts_all();
    u.cache_order = 2;
    u.match_length = 0;
    u.adapt_lr = 0.5;
    s = run_parts_settings(&c, u);
    CHECK(s.memory_order == 4 && s.cache_order == 2 && s.match_length == 0 && s.model_lr == 0.5);
}

int main(void)
{
    RUN(test_set_and_errors);
    RUN(test_finish_derives_and_validates);
    RUN(test_presets);
    RUN(test_defaults_are_cpu_default);
    RUN(test_json_round_trip);
    RUN(test_checkpoint_metadata_ranges);
    RUN(test_checkpoint_checksum);
    RUN(test_parts_settings);
    return test_summary("test_run_config");
}
