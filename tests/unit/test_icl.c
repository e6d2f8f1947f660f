/* test_icl.c - the CORE scoring protocol against hand-computed answers, with
 * a stub model whose log-probabilities are a known table (a byte-level
 * tokenizer makes every character one token):
 *   cost(prev, tok) = -ln p(tok | prev): 'a' 1, 'b' 2, ' ' 0.5 (0 after 'a'),
 *   anything else 3; greedy choice after 'c' is ' ', after ' ' 'd', after
 *   'd' 'e', after 'e' 'f', else 'z'.
 * Checks: mean (not summed) continuation loss for multiple choice; the
 * common-suffix span of schema; exact greedy match for language modeling
 * (with the delimiter's space inside the span, as the stripped prompt puts
 * it); the few-shot prompts equal those Python's nanochat protocol renders
 * (strings printed by python3, see the comment at that test); left
 * truncation keeping the separator and the continuation; skipped and counted
 * bad records; the table reader's errors; the summary and its JSON. */
#include "test.h"

#include <unistd.h>

#include "core/json.h"
#include "eval/icl.h"
#include "eval/icl_interval.h"
#include "eval/icl_prompt.h"

#define SEP 256

typedef struct {
    int context;
    int n_req;
    char text[64][160]; /* bytes after the separator of the first 64 requests */
    int len[64], start[64], end[64], sep_first[64];
} stub;

static double cost(int prev, int tok)
{
    double c = tok == 'a' ? 1 : tok == 'b' ? 2 : tok == ' ' ? 0.5 : 3;
    if (prev == 'a' && tok == ' ')
        c -= 0.5;
    return c;
}

static int greedy_after(int prev)
{
    switch (prev) {
    case 'c': return ' ';
    case ' ': return 'd';
    case 'd': return 'e';
    case 'e': return 'f';
    }
    return 'z';
}

static int stub_score(void *ctx, const icl_request *req, int n, icl_answer *ans, tempo_error *err)
{
    stub *s = ctx;
    for (int i = 0; i < n; i++) {
        const icl_request *r = &req[i];
        if (r->n > s->context || r->start < 1 || r->end != r->n)
            return tempo_fail(err, "stub: bad request");
        if (s->n_req < 64) {
            int k = s->n_req;
            s->sep_first[k] = r->tokens[0] == SEP;
            s->len[k] = r->n;
            s->start[k] = r->start;
            s->end[k] = r->end;
            int m = 0;
            for (int t = 1; t < r->n && m < 159; t++)
                s->text[k][m++] = (char)r->tokens[t];
            s->text[k][m] = '\0';
        }
        s->n_req++;
        ans[i].nll_sum = 0;
        ans[i].all_argmax = 1;
        for (int t = r->start; t < r->end; t++) {
            ans[i].nll_sum += cost(r->tokens[t - 1], r->tokens[t]);
            ans[i].all_argmax &= greedy_after(r->tokens[t - 1]) == r->tokens[t];
        }
    }
    return 0;
}

static tokenizer *byte_tokenizer(void)
{
    uint8_t bytes[256];
    const uint8_t *toks[256];
    size_t lens[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        toks[i] = &bytes[i];
        lens[i] = 1;
    }
    tokenizer *t = NULL;
    tempo_error err;
    tok_from_tokens(&t, toks, lens, 256, "test", &err);
    return t;
}

static char g_dir[64]; /* set once in main; read-only afterwards */

static void write_file(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
}

static icl_task_spec spec(const char *file, icl_type type, int shots, const char *delim, double base)
{
    icl_task_spec t;
    memset(&t, 0, sizeof t);
    snprintf(t.label, sizeof t.label, "%s", file);
    snprintf(t.file, sizeof t.file, "%s", file);
    t.type = type;
    t.num_fewshot = shots;
    snprintf(t.delimiter, sizeof t.delimiter, "%s", delim);
    t.random_baseline = base;
    t.in_core = 1;
    return t;
}

static int evaluate(stub *s, tokenizer *tok, const icl_task_spec *t, int limit,
                    icl_task_result *r)
{
    icl_lm lm = {s, s->context, SEP, stub_score};
    icl_options o;
    icl_options_default(&o);
    o.limit = limit;
    o.batch_tokens = 7; /* several score calls per task */
    tempo_error err;
    return icl_evaluate_task(&lm, tok, g_dir, t, &o, r, &err);
}

/* Without shots the shuffled order does not matter for accuracy. */
static void test_multiple_choice_mean_loss(void)
{
    tokenizer *tok = byte_tokenizer();
    write_file("mc.jsonl",
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":0}\n"      /* 1.0 vs 2.0: right */
               "{\"query\":\"Q:\",\"choices\":[\"aaaab\",\"b\"],\"gold\":0}\n"   /* mean 1.2 vs 2 (sums 6 vs 2): right */
               "{\"query\":\"Q:\",\"choices\":[\"b\",\"ab\"],\"gold\":0}\n"      /* 2.0 vs 1.5: wrong */
               "\n"
               "{\"query\":\"Q:\",\"choices\":[\"x\",\"b\"],\"gold\":1}\n");     /* 3.0 vs 2.0: right */
    stub s = {.context = 100};
    icl_task_spec t = spec("mc.jsonl", ICL_MULTIPLE_CHOICE, 0, " ", 0.25);
    icl_task_result r;
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.status == ICL_TASK_OK);
    CHECK(r.n_eval == 4 && r.n_correct == 3 && r.n_records == 4);
    CHECK_NEAR(r.accuracy, 0.75, 1e-12);
    CHECK_NEAR(r.centered, (0.75 - 0.25) / 0.75, 1e-12);
    CHECK(s.n_req == 8);
    for (int k = 0; k < 8 && k < s.n_req; k++) {
        CHECK(s.sep_first[k]);
        CHECK(s.start[k] == 4); /* sep Q : ' ' | continuation */
        CHECK(!strncmp(s.text[k], "Q: ", 3));
    }
    tok_free(tok);
}

static void test_schema_common_suffix(void)
{
    tokenizer *tok = byte_tokenizer();
    /* "xa cc" vs "xb cc": span " cc"; means (0+3+3)/3 = 2 and (0.5+3+3)/3 */
    write_file("schema.jsonl",
               "{\"context_options\":[\"xa\",\"xb\"],\"continuation\":\"cc\",\"gold\":0}\n"
               "{\"context_options\":[\"xb\",\"xa\"],\"continuation\":\"cc\",\"gold\":0}\n");
    stub s = {.context = 100};
    icl_task_spec t = spec("schema.jsonl", ICL_SCHEMA, 0, " ", 0.5);
    icl_task_result r;
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.n_eval == 2 && r.n_correct == 1);
    CHECK_NEAR(r.centered, 0.0, 1e-12);
    CHECK(s.n_req == 4);
    for (int k = 0; k < 4; k++) {
        CHECK(s.len[k] == 6 && s.start[k] == 3 && s.end[k] == 6);
    }
    tok_free(tok);
}

static void test_language_modeling_greedy(void)
{
    tokenizer *tok = byte_tokenizer();
    write_file("lm.jsonl",
               "{\"context\":\"abc\",\"continuation\":\"def\"}\n"      /* ' ' d e f all greedy */
               "{\"context\":\"  abc \\n\",\"continuation\":\"dex\"}\n" /* 'x' is not */
               "{\"context\":\"abc\",\"continuation\":\"de\",\"category\":\"x\"}\n");
    stub s = {.context = 100};
    icl_task_spec t = spec("lm.jsonl", ICL_LANGUAGE_MODELING, 0, " ", 0);
    icl_task_result r;
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.n_eval == 3 && r.n_correct == 2);
    CHECK(s.n_req == 3);
    for (int k = 0; k < 3; k++) {
        CHECK(!strncmp(s.text[k], "abc de", 6)); /* the context was stripped */
        CHECK(s.start[k] == 4);                  /* sep a b c | ' ' d e ... */
    }
    tok_free(tok);
}

/* Expected prompts printed by python3 (nanochat's rendering and draws):
 *   items = [{"query": "Q%d:" % i, "choices": ["a" * (i % 3 + 1), "b", "ca"],
 *             "gold": i % 3} for i in range(5)]
 *   data = list(items); random.Random(1337).shuffle(data)
 *   for idx in range(5):
 *       fs = random.Random(1234 + idx).sample([i for i in range(5) if i != idx], 2)
 *       shots = "".join(f"{data[i]['query']}\nA: {data[i]['choices'][data[i]['gold']]}\n\n" for i in fs)
 *       print((shots + f"{data[idx]['query']}\nA: {data[idx]['choices'][0]}").strip()) */
static void test_fewshot_prompts_match_reference(void)
{
    tokenizer *tok = byte_tokenizer();
    char text[2048] = "";
    for (int i = 0; i < 5; i++) {
        char line[200], a[4] = "aaa";
        a[i % 3 + 1] = '\0';
        snprintf(line, sizeof line, "{\"query\":\"Q%d:\",\"choices\":[\"%s\",\"b\",\"ca\"],\"gold\":%d}\n",
                 i, a, i % 3);
        strcat(text, line);
    }
    write_file("shots.jsonl", text);
    stub s = {.context = 100};
    icl_task_spec t = spec("shots.jsonl", ICL_MULTIPLE_CHOICE, 2, "\nA: ", 1.0 / 3);
    icl_task_result r;
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    const char *want[5] = {"Q4:\nA: b\n\nQ0:\nA: a\n\nQ1:\nA: aa",
                           "Q4:\nA: b\n\nQ2:\nA: ca\n\nQ0:\nA: a",
                           "Q4:\nA: b\n\nQ2:\nA: ca\n\nQ3:\nA: a",
                           "Q0:\nA: a\n\nQ4:\nA: b\n\nQ2:\nA: aaa",
                           "Q1:\nA: b\n\nQ0:\nA: a\n\nQ4:\nA: aa"};
    CHECK(s.n_req == 15);
    for (int i = 0; i < 5 && 3 * i < s.n_req; i++)
        CHECK_MSG(!strcmp(s.text[3 * i], want[i]), "item %d: got [%s]", i, s.text[3 * i]);
    /* --limit 2: the same first two items, the same prompts */
    stub s2 = {.context = 100};
    CHECK(evaluate(&s2, tok, &t, 2, &r) == 0);
    CHECK(r.n_eval == 2 && s2.n_req == 6);
    CHECK(!strcmp(s2.text[3], want[1]));
    tok_free(tok);
}

static void test_truncation_keeps_continuation(void)
{
    tokenizer *tok = byte_tokenizer();
    write_file("long.jsonl", "{\"query\":\"Q: long long text\",\"choices\":[\"aa\",\"b\"],\"gold\":0}\n");
    icl_task_spec t = spec("long.jsonl", ICL_MULTIPLE_CHOICE, 0, " ", 0.5);
    icl_task_result r;
    stub s = {.context = 10};
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.n_eval == 1 && r.n_correct == 1);
    /* both cut by 11 tokens after the separator: "Q: long long text aa" (21 tokens) */
    CHECK(s.len[0] == 10 && s.sep_first[0] && !strcmp(s.text[0], "g text aa"));
    CHECK(s.len[1] == 9 && s.sep_first[1] && !strcmp(s.text[1], "g text b"));
    CHECK(s.start[0] == 8 && s.start[1] == 8);
    stub s3 = {.context = 3}; /* sep + "aa": still fits */
    CHECK(evaluate(&s3, tok, &t, 0, &r) == 0);
    CHECK(r.n_eval == 1 && s3.start[0] == 1);
    stub s2 = {.context = 2}; /* "aa" cannot follow the separator in 2 positions */
    CHECK(evaluate(&s2, tok, &t, 0, &r) == 0);
    CHECK(r.status == ICL_TASK_FAILED && r.n_eval == 0 && r.skipped[ICL_SKIP_TOO_LONG] == 1);
    CHECK(strstr(r.first_skip, "long.jsonl:1:") != NULL);
    tok_free(tok);
}

/* Prompts that strip to nothing (empty query and choices): nothing to score, the item is
 * skipped as empty (the sanitized build caught a memcpy from a NULL array of no ids here;
 * found by tests/fuzz/fuzz_icl_task.c). */
static void test_empty_prompt_skipped(void)
{
    tokenizer *tok = byte_tokenizer();
    write_file("empty.jsonl", "{\"query\":\"\",\"choices\":[\"\",\" \"],\"gold\":0}\n");
    icl_task_spec t = spec("empty.jsonl", ICL_MULTIPLE_CHOICE, 0, " ", 0.5);
    icl_task_result r;
    stub s = {.context = 100};
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.n_eval == 0 && r.skipped[ICL_SKIP_EMPTY] == 1 && r.status == ICL_TASK_FAILED);
    tok_free(tok);
}

/* Bootstrap intervals: reproducible, around the estimate, as wide as the binomial says
 * (100 items at 50 %: about +-0.098), degenerate at 0 or all right, none without items. */
static void test_intervals(void)
{
    double lo, hi, lo2, hi2;
    icl_interval_accuracy(100, 50, &lo, &hi);
    icl_interval_accuracy(100, 50, &lo2, &hi2);
    CHECK(lo == lo2 && hi == hi2);
    CHECK_MSG(lo > 0.38 && lo < 0.42 && hi > 0.58 && hi < 0.62, "[%g, %g]", lo, hi);
    icl_interval_accuracy(1000, 500, &lo, &hi);
    CHECK_MSG(lo > 0.465 && lo < 0.475 && hi > 0.525 && hi < 0.535, "[%g, %g]", lo, hi);
    icl_interval_accuracy(20, 0, &lo, &hi);
    CHECK(lo == 0 && hi == 0);
    icl_interval_accuracy(20, 20, &lo, &hi);
    CHECK(lo == 1 && hi == 1);
    icl_interval_accuracy(0, 0, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));
    /* CORE of two tasks at 50 % of 100 items, baselines 0 and 0.25: centered 0.5 and 1/3, mean
     * 0.4167; sd of the mean = sqrt(0.05^2 + (0.05/0.75)^2) / 2 = 0.0417, so about +-0.082 */
    icl_interval_task t[2] = {{100, 50, 0.0}, {100, 50, 0.25}};
    icl_interval_core(t, 2, &lo, &hi);
    CHECK_MSG(lo > 0.32 && lo < 0.35 && hi > 0.48 && hi < 0.51, "[%g, %g]", lo, hi);
    icl_interval_core(t, 0, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));
}

static void test_bad_records_skipped_and_counted(void)
{
    tokenizer *tok = byte_tokenizer();
    write_file("bad.jsonl",
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":0}\n"   /* fine */
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":0\n"    /* malformed */
               "[1,2]\n"                                                    /* not an object */
               "{\"choices\":[\"aa\",\"b\"],\"gold\":0}\n"                  /* no query */
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":2}\n"   /* gold out of range */
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":-1}\n"
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":0.5}\n"
               "{\"query\":\"Q:\",\"choices\":[\"aa\",\"b\"],\"gold\":\"0\"}\n" /* malformed */
               "{\"query\":\"Q:\",\"choices\":[],\"gold\":0}\n"                /* empty choices */
               "{\"query\":\"Q:\",\"choices\":[\"aa\"],\"gold\":0}\n"
               "{\"query\":\"\xff\xfe\",\"choices\":[\"aa\",\"b\"],\"gold\":0}\n" /* not UTF-8 */
               "{\"query\":\"Q:\\u0000\",\"choices\":[\"aa\",\"b\"],\"gold\":0}\n" /* NUL */
               "{\"query\":\"Q:\",\"choices\":[\"\\ud800\",\"b\"],\"gold\":0}\n" /* lone surrogate */
               "{\"query\":\"Q:\",\"choices\":[\"b\",\"b\"],\"gold\":0}\n"      /* identical choices */
               "{\"query\":\"Q:\",\"choices\":[\"x\",\"b\"],\"gold\":1}\n");    /* fine */
    stub s = {.context = 100};
    icl_task_spec t = spec("bad.jsonl", ICL_MULTIPLE_CHOICE, 0, " ", 0.5);
    icl_task_result r;
    CHECK(evaluate(&s, tok, &t, 0, &r) == 0);
    CHECK(r.status == ICL_TASK_OK);
    CHECK(r.n_records == 3); /* two fine + the identical-choices one (skipped when built) */
    CHECK(r.n_eval == 2 && r.n_correct == 2);
    CHECK(r.skipped[ICL_SKIP_MALFORMED] == 4);
    CHECK(r.skipped[ICL_SKIP_GOLD] == 3);
    CHECK(r.skipped[ICL_SKIP_CHOICES] == 2);
    CHECK(r.skipped[ICL_SKIP_TEXT] == 3);
    CHECK(r.skipped[ICL_SKIP_EMPTY] == 1);
    CHECK(strstr(r.first_skip, "bad.jsonl:2:") != NULL);
    /* a whitespace-only LM continuation; a file of nothing valid fails the task */
    write_file("bad_lm.jsonl", "{\"context\":\"abc\",\"continuation\":\" \\n\"}\n{\"context\":1}\n");
    icl_task_spec t2 = spec("bad_lm.jsonl", ICL_LANGUAGE_MODELING, 2, " ", 0);
    CHECK(evaluate(&s, tok, &t2, 0, &r) == 0);
    CHECK(r.status == ICL_TASK_FAILED && r.n_eval == 0 && isnan(r.accuracy));
    CHECK(r.skipped[ICL_SKIP_EMPTY] == 1 && r.skipped[ICL_SKIP_MALFORMED] == 1);
    /* missing file */
    icl_task_spec t3 = spec("nope.jsonl", ICL_MULTIPLE_CHOICE, 0, " ", 0.25);
    CHECK(evaluate(&s, tok, &t3, 0, &r) == 0);
    CHECK(r.status == ICL_TASK_MISSING);
    tok_free(tok);
}

static void test_table_reader(void)
{
    icl_task_spec *sp;
    int n, n_core;
    tempo_error err;
    write_file("core_tasks.tsv",
               "# comment\n"
               "label\tfile\ttask_type\tnum_fewshot\tcontinuation_delimiter\trandom_baseline_pct\tpresent\trecords\n"
               "one\ta.jsonl\tmultiple_choice\t10\t\"\\nAnswer: \"\t25\t1\t10\n"
               "two\tb.jsonl\tlanguage_modeling\t0\t\" \"\t0\t0\t0\n");
    CHECK(icl_table_read(g_dir, &sp, &n, &n_core, &err) == 0);
    CHECK(n == 3 && n_core == 2);
    if (n == 3) {
        CHECK(!strcmp(sp[0].delimiter, "\nAnswer: ") && sp[0].num_fewshot == 10);
        CHECK_NEAR(sp[0].random_baseline, 0.25, 1e-12);
        CHECK(sp[1].type == ICL_LANGUAGE_MODELING && sp[1].in_core);
        CHECK(!sp[2].in_core && !strcmp(sp[2].file, ICL_EXTRA_HELLASWAG_FILE));
        free(sp);
    }
    const char *bad[] = {
        "label\tx\none\ta.jsonl\tcloze\t0\t\" \"\t25\t1\t1\n",            /* unknown type */
        "label\tx\none\ta.jsonl\tschema\t0\t\" \"\t25\t1\n",              /* 7 fields */
        "label\tx\none\ta.jsonl\tschema\tten\t\" \"\t25\t1\t1\n",         /* bad count */
        "label\tx\none\ta.jsonl\tschema\t0\t \t25\t1\t1\n",               /* delimiter not JSON */
        "label\tx\none\ta.jsonl\tschema\t0\t\" \"\t100\t1\t1\n",          /* baseline 100 % */
        "one\ta.jsonl\tschema\t0\t\" \"\t25\t1\t1\n",                     /* no header */
        "label\tx\n",                                                     /* no entries */
        "label\tx\none\ta.jsonl\tschema\t0\t\" \"\t25\t1\t1\none\tb\tschema\t0\t\" \"\t25\t1\t1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("core_tasks.tsv", bad[i]);
        CHECK_MSG(icl_table_read(g_dir, &sp, &n, &n_core, &err) == -1, "case %zu accepted", i);
        CHECK(strstr(err.msg, "core_tasks.tsv") != NULL);
    }
    write_file("core_tasks.tsv", bad[0]);
    icl_table_read(g_dir, &sp, &n, &n_core, &err);
    CHECK(strstr(err.msg, ":2: unknown task type 'cloze'") != NULL);
}

static void test_summary_and_json(void)
{
    icl_task_result r[4];
    memset(r, 0, sizeof r);
    r[0].spec = spec("a", ICL_MULTIPLE_CHOICE, 0, " ", 0.25);
    r[0].status = ICL_TASK_OK;
    r[0].accuracy = 0.5;
    r[0].centered = (0.5 - 0.25) / 0.75;
    r[0].n_eval = 100;
    r[0].n_correct = 50;
    r[1].spec = spec("b", ICL_LANGUAGE_MODELING, 0, " ", 0);
    r[1].status = ICL_TASK_OK;
    r[1].accuracy = r[1].centered = 0.1;
    r[1].n_eval = 50;
    r[1].n_correct = 5;
    r[2].spec = spec("c", ICL_SCHEMA, 0, " ", 0.5);
    r[2].status = ICL_TASK_MISSING;
    r[2].accuracy = r[2].centered = NAN;
    r[3].spec = spec("extra", ICL_MULTIPLE_CHOICE, 0, " ", 0.25);
    r[3].spec.in_core = 0;
    r[3].status = ICL_TASK_OK;
    r[3].accuracy = 0.9;
    r[3].centered = (0.9 - 0.25) / 0.75;
    icl_summary s;
    icl_summarize(r, 4, 5, &s);
    CHECK(s.n_core == 2 && s.n_table == 5 && s.n_missing == 1 && s.n_failed == 2);
    CHECK_NEAR(s.core, ((0.25 / 0.75) + 0.1) / 2, 1e-12);
    strbuf js = {0};
    icl_options o;
    icl_options_default(&o);
    icl_summary_json(&js, r, 4, &s, &o);
    json_value *v = NULL;
    tempo_error err;
    CHECK(json_parse(js.data, js.len, &v, &err) == 0);
    if (v) {
        CHECK_NEAR(json_get_number(v, "core", -1), s.core, 1e-12);
        const json_value *ci = json_get(v, "core_ci95");
        CHECK(ci && ci->type == JSON_ARRAY && ci->n == 2 && ci->items[0].number == s.core_lo &&
              ci->items[1].number == s.core_hi && s.core_lo < s.core && s.core < s.core_hi);
        CHECK(!strcmp(json_get_string(v, "core_label"), "CORE-2"));
        const json_value *tasks = json_get(v, "tasks");
        CHECK(tasks && tasks->type == JSON_ARRAY && tasks->n == 4);
        const json_value *ex = json_get(json_get(v, "extra"), "extra");
        CHECK(ex && fabs(json_get_number(ex, "accuracy", -1) - 0.9) < 1e-12);
        json_free(v);
    }
    strbuf_free(&js);
}

static void test_strip(void)
{
    size_t a, b;
    const char *s = "\xc2\xa0 \t x y\xe3\x80\x80\n";
    icl_strip(s, strlen(s), &a, &b);
    CHECK(a == 5 && b == 8);
    icl_strip("   ", 3, &a, &b);
    CHECK(a == b);
    const char *t = "\xe2\x80\x8bz\xe2\x80\x8b"; /* zero-width space is not white space */
    icl_strip(t, strlen(t), &a, &b);
    CHECK(a == 0 && b == strlen(t));
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/tempo_test_icl_XXXXXX");
    if (!mkdtemp(g_dir))
        return 1;
    RUN(test_multiple_choice_mean_loss);
    RUN(test_schema_common_suffix);
    RUN(test_language_modeling_greedy);
    RUN(test_fewshot_prompts_match_reference);
    RUN(test_truncation_keeps_continuation);
    RUN(test_empty_prompt_skipped);
    RUN(test_intervals);
    RUN(test_bad_records_skipped_and_counted);
    RUN(test_table_reader);
    RUN(test_summary_and_json);
    RUN(test_strip);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return test_summary("test_icl");
}
