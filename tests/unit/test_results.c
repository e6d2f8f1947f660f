/* test_results.c - the documents that cross process boundaries, each written
 * by its owner module and read back by the same module: the trainer's
 * result.json (train/run_result.h), the metrics stream (train/metrics_log.h)
 * and eval's phase-1 line (eval/eval_result.h; the scorecard's round trip
 * through the judge is in test_judge_score). */
#include "test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "eval/eval_result.h"
#include "train/metrics_log.h"
#include "train/run_result.h"

static json_value *parse(const strbuf *sb)
{
    json_value *v = NULL;
    tempo_error err;
    if (!sb->data || json_parse(sb->data, sb->len, &v, &err))
        return NULL;
    return v;
}

static void test_run_result(void)
{
    train_result r;
    memset(&r, 0, sizeof r);
    r.val.mixture.bpb = 1.617;
    r.train_seconds = 600.25;
    r.steps = 1234;
    r.tokens = 9007199254740992ull;   /* 2^53: the largest count read back exactly */
    r.params = 2560000;
    r.tokens_per_second = 8123.5;
    r.mfu = NAN;
    r.world_size = 2;
    r.budget_s = 600;
    r.memory_order = 5;
    r.memory_seconds = 55.5;
    r.phase_seconds.steps = 590;
    r.phase_seconds.other = 0.5;
    for (int k = 0; k < MIX_N; k++)
        r.val.bpb_component[k] = 2 + k;
    train_options o;
    memset(&o, 0, sizeof o);
    o.threads = 2;
    o.seed = 7;
    strbuf sb = {0};
    tempo_error err;
    CHECK(run_result_json(&r, &o, 1, &sb, &err) == 0);
    json_value *v = parse(&sb);
    CHECK(v && v->type == JSON_OBJECT);
    /* every key once: a duplicate would be read as its first copy only */
    for (size_t i = 0; v && i < v->n; i++)
        for (size_t j = i + 1; j < v->n; j++)
            CHECK_MSG(strcmp(v->keys[i], v->keys[j]) != 0, "duplicate key %s", v->keys[i]);
    CHECK(json_get(v, "mfu") && json_get(v, "mfu")->type == JSON_NULL);
    const json_value *ph = json_get(v, "phase_seconds");
    CHECK(ph && ph->type == JSON_OBJECT && ph->n == 7 && json_get_number(ph, "steps", 0) == 590);
    CHECK(json_get_number(v, "val_bpb_cache", 0) == 4 && json_get_number(v, "seed", 0) == 7);
    CHECK(json_get(v, "threads_pinned") && json_get(v, "threads_pinned")->boolean == 1);
    CHECK(json_get_number(v, "world_size", 0) == 2 && json_get_number(v, "ranks_threads", 0) == 2);
    json_free(v);

    run_result_summary s;
    CHECK(run_result_read(sb.data, sb.len, &s, &err) == 0);
    CHECK(s.val_bpb == 1.617 && s.train_seconds == 600.25 && s.tokens_per_second == 8123.5 && isnan(s.mfu));
    CHECK(s.steps == 1234 && s.tokens == 9007199254740992ll && s.params == 2560000);
    CHECK(s.budget_seconds == 600 && s.memory_seconds == 55.5 && s.val_bpb_transformer == 2);
    strbuf_free(&sb);

    /* lenient on figures (a submission's file), strict on the shape */
    const char *odd = "{\"steps\":1.5,\"tokens\":-3,\"params\":1e300,\"tokens_per_second\":\"fast\"}";
    CHECK(run_result_read(odd, strlen(odd), &s, &err) == 0);
    CHECK(s.steps == -1 && s.tokens == -1 && s.params == -1 && isnan(s.tokens_per_second) && isnan(s.val_bpb));
    CHECK(isnan(s.val_bpb_transformer) && isnan(s.budget_seconds) && isnan(s.memory_seconds));
    CHECK(run_result_read("[1]", 3, &s, &err) == -1 && strstr(err.msg, "result.json: not a JSON object"));
    CHECK(run_result_read("{\"steps\":", 9, &s, &err) == -1 && strncmp(err.msg, "result.json: ", 13) == 0);

    train_result bad = r;
    bad.mfu = 1.3;
    CHECK(run_result_drop_impossible_mfu(&bad) == 1 && isnan(bad.mfu));
    bad.mfu = 0.6;
    CHECK(run_result_drop_impossible_mfu(&bad) == 0 && bad.mfu == 0.6);
}

static void test_metrics_records(void)
{
    metrics_record in[] = {
        {.kind = METRICS_STEP, .step = 3, .elapsed_s = 1.25, .tokens = 4096, .value = 5.5, .lr = 0.01,
         .tokens_per_s = 3000, .grad_norm = 0.75, .step_s = 0.5},
        {.kind = METRICS_VAL_SLICE, .step = 4, .elapsed_s = 2, .tokens = 5000, .value = 2.25},
        {.kind = METRICS_VAL_FULL, .step = 5, .elapsed_s = 3, .tokens = 6000, .value = 1.75, .note = "full \"val\""},
        {.kind = METRICS_DIVERGED, .step = 6, .elapsed_s = 4, .tokens = 7000, .value = NAN, .note = "restored"},
    };
    tempo_error err;
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        strbuf sb = {0};
        CHECK(metrics_record_json(&in[i], &sb, &err) == 0);
        metrics_record out;
        CHECK_MSG(metrics_record_read(sb.data, sb.len, &out, &err) == 0, "%s", sb.data);
        CHECK_MSG(out.kind == in[i].kind && out.step == in[i].step && out.elapsed_s == in[i].elapsed_s &&
                  out.tokens == in[i].tokens, "%s", sb.data);
        /* a NaN figure is written as null: the line still reads, its value unknown, its kind not guessed */
        if (isnan(in[i].value))
            CHECK(isnan(out.value) && out.kind == METRICS_DIVERGED);
        else
            CHECK(out.value == in[i].value);
        if (in[i].kind == METRICS_STEP)
            CHECK(out.lr == 0.01 && out.tokens_per_s == 3000 && out.grad_norm == 0.75 && out.step_s == 0.5);
        strbuf_free(&sb);
    }
    metrics_record r;
    CHECK(metrics_record_read("{\"step\":2}", 10, &r, &err) == 0 && r.kind == METRICS_OTHER && r.step == 2);
    CHECK(metrics_record_read("{\"step\":-2,\"elapsed_s\":\"x\"}", 27, &r, &err) == 0 && r.step == -1 &&
          isnan(r.elapsed_s));
    CHECK(metrics_record_read("{\"step\":", 8, &r, &err) == -1);
    CHECK(metrics_record_read("7", 1, &r, &err) == -1 && strstr(err.msg, "not a JSON object"));
    metrics_record other = {.kind = METRICS_OTHER};
    strbuf sb = {0};
    CHECK(metrics_record_json(&other, &sb, &err) == -1);
    strbuf_free(&sb);
}

/* Resume keeps the complete lines of steps <= the checkpoint's and appends. */
static void test_metrics_resume(void)
{
    char dir[] = "/tmp/tempo_test_results.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    tempo_error err;
    metrics_log m;
    CHECK(metrics_log_open(&m, dir, -1, &err) == 0);
    for (int s = 1; s <= 5; s++) {
        metrics_record r = {.kind = METRICS_STEP, .step = s, .elapsed_s = s, .tokens = 10 * (uint64_t)s, .value = 9 - s};
        CHECK(metrics_log_write(&m, &r, &err) == 0);
    }
    metrics_log_close(&m);
    char path[1100];
    path_join(path, sizeof path, dir, METRICS_LOG_FILE);
    FILE *f = fopen(path, "a");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"step\":2,\"elapsed_s\":9", f);   /* a line cut short by a crash */
        fclose(f);
    }
    CHECK(metrics_log_open(&m, dir, 3, &err) == 0);
    metrics_record r = {.kind = METRICS_VAL_SLICE, .step = 4, .elapsed_s = 4.5, .tokens = 40, .value = 2};
    CHECK(metrics_log_write(&m, &r, &err) == 0);
    metrics_log_close(&m);
    char *text;
    size_t len;
    CHECK(file_read_all(path, &text, &len, 0, &err) == 0);
    int lines = 0, last_step = 0;
    for (char *p = text, *nl; p < text + len && (nl = memchr(p, '\n', (size_t)(text + len - p))); p = nl + 1) {
        metrics_record x;
        CHECK(metrics_record_read(p, (size_t)(nl - p), &x, &err) == 0);
        CHECK(x.step > last_step || (lines == 3 && x.step == 4 && x.kind == METRICS_VAL_SLICE));
        last_step = (int)x.step;
        lines++;
    }
    CHECK_MSG(lines == 4 && text[len - 1] == '\n', "%d lines:\n%s", lines, text);
    free(text);
    unlink(path);
    rmdir(dir);
}

/* A write that fails is the caller's error, naming the file (issue 31:
 * metrics.jsonl ignored a full disk and the run went on): on /dev/full (a
 * disk with no space) at once, and cut short by a file size limit partway
 * through a line, after which the file still ends on its last whole line. */
static void test_metrics_write_errors(void)
{
    char dir[] = "/tmp/tempo_test_metrics_full.XXXXXX", path[1100];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    path_join(path, sizeof path, dir, METRICS_LOG_FILE);
    tempo_error err;
    metrics_log m;
    metrics_record r = {.kind = METRICS_STEP, .step = 1, .elapsed_s = 0.5, .tokens = 10, .value = 4.25};
    if (symlink("/dev/full", path) == 0) {
        CHECK(metrics_log_open(&m, dir, -1, &err) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(metrics_log_write(&m, &r, &err) == -1 && strstr(err.msg, path) && strstr(err.msg, "write failed") &&
                      strstr(err.msg, "No space left"), "%s", err.msg);
        metrics_log_close(&m);
        unlink(path);
    }
    /* a limit a few bytes past two lines: the third goes out in part, then fails */
    CHECK(metrics_log_open(&m, dir, -1, &err) == 0);
    CHECK(metrics_log_write(&m, &r, &err) == 0);
    r.step = 2;
    CHECK(metrics_log_write(&m, &r, &err) == 0);
    off_t two = lseek(m.fd, 0, SEEK_END);
    struct rlimit old, lim;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);   /* the write then fails with EFBIG */
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)two + 7;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    r.step = 3;
    tempo_error_clear(&err);
    int rc = metrics_log_write(&m, &r, &err);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, old_handler);
    CHECK_MSG(rc == -1 && strstr(err.msg, "write failed") && !strstr(err.msg, "torn"), "%s", err.msg);
    metrics_log_close(&m);
    char *text;
    size_t len;
    CHECK(file_read_all(path, &text, &len, 0, &err) == 0);
    CHECK_MSG((off_t)len == two && text[len - 1] == '\n', "%zu bytes of %lld: %s", len, (long long)two, text);
    free(text);
    unlink(path);
    rmdir(dir);
}

static void test_eval_line(void)
{
    hybrid_bpb_result r;
    memset(&r, 0, sizeof r);
    r.mixture = (bpb_result){.bpb = 1.6163, .bits = 8.19e6, .loss = 3.5, .bytes = 5067016, .tokens = 1560910,
                             .context = 256, .stride = 128, .seconds = 31.5};
    r.source = "data/\"val\"";
    for (int c = 0; c < MIX_N; c++)
        r.bpb_component[c] = NAN;
    strbuf sb = {0};
    tempo_error err;
    CHECK(eval_bpb_json(&r, &sb, &err) == 0);
    /* the line reads back into the same type: the whole model's figure, every field */
    bpb_result f;
    CHECK(eval_bpb_read(sb.data, &f, &err) == 0);
    CHECK(memcmp(&f, &r.mixture, sizeof f) == 0);
    json_value *v = parse(&sb);
    const json_value *comp = json_get(v, "components");
    CHECK(comp && comp->n == MIX_N && json_get(json_get(comp, "cache"), "bpb")->type == JSON_NULL);
    CHECK(json_get_string(v, "source") && strcmp(json_get_string(v, "source"), "data/\"val\"") == 0);
    json_free(v);
    strbuf_free(&sb);
    /* a diverged model: bpb null reads as NaN; no bpb at all is an error */
    r.mixture.bpb = NAN;
    CHECK(eval_bpb_json(&r, &sb, &err) == 0);
    CHECK(eval_bpb_read(sb.data, &f, &err) == 0 && isnan(f.bpb));
    strbuf_free(&sb);
    /* absent figures: NaN, absent counts or counts the type cannot hold: 0 */
    CHECK(eval_bpb_read("{\"bpb\":1,\"bytes\":-1,\"tokens\":1e300,\"context\":2.5,\"stride\":1e10}", &f, &err) == 0);
    CHECK(isnan(f.bits) && isnan(f.loss) && isnan(f.seconds));
    CHECK(f.bytes == 0 && f.tokens == 0 && f.context == 0 && f.stride == 0);
    CHECK(eval_bpb_read("{\"bits\":1}", &f, &err) == -1 && strstr(err.msg, "no \"bpb\""));
    CHECK(eval_bpb_read("", &f, &err) == -1 && strstr(err.msg, "no JSON line"));
    CHECK(eval_bpb_read("{", &f, &err) == -1 && strstr(err.msg, "eval output: not JSON"));
}

int main(void)
{
    RUN(test_run_result);
    RUN(test_metrics_records);
    RUN(test_metrics_resume);
    RUN(test_metrics_write_errors);
    RUN(test_eval_line);
    return test_summary("test_results");
}
