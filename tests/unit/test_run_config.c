/* test_run_config.c - presets, --set overrides and their errors, the JSON
 * round trip used by checkpoints. */
#include "test.h"

#include <unistd.h>

#include "train/run_config.h"

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
    const char *bad[] = {"nonsense=1", "d_model=abc", "d_model=1.5", "d_model=-4", "mlp=gelu", "=3", "lr",
                         "qk_norm=maybe", "warmup=2"};
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
}

static void test_presets(void)
{
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    CHECK(run_config_load_preset(&c, "tiny-test", &err) == 0);
    CHECK(c.model.d_model == 64 && !strcmp(c.preset, "tiny-test"));
    CHECK(run_config_load_preset(&c, "cpu-default", &err) == 0);
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
    unlink(p);
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
    a.model.vocab_size = 4097;
    snprintf(a.preset, sizeof a.preset, "x");
    strbuf s = {0};
    run_config_to_json(&a, &s);
    run_config_defaults(&b);
    CHECK(run_config_from_json(&b, s.data, s.len, &err) == 0);
    strbuf t = {0};
    run_config_to_json(&b, &t);
    CHECK(s.len == t.len && !memcmp(s.data, t.data, s.len));
    CHECK(b.optim.lr == a.optim.lr && b.schedule.warmdown == a.schedule.warmdown && b.model.vocab_size == 4097);
    strbuf_free(&s);
    strbuf_free(&t);
    CHECK(run_config_from_json(&b, "{\"bogus\":1}", 11, &err) == -1);
    CHECK(run_config_from_json(&b, "[1]", 3, &err) == -1);
}

int main(void)
{
    RUN(test_set_and_errors);
    RUN(test_finish_derives_and_validates);
    RUN(test_presets);
    RUN(test_json_round_trip);
    return test_summary("test_run_config");
}
