/* test_json.c - the JSON parser: values, escapes and surrogates, raw bytes,
 * strict grammar errors with columns, depth limit, writer round trip, the
 * structured writer (commas, nesting, escaping, misuse caught), matrices
 * (jsonw_rows and json_get_rows: round trip, shape and range errors), HTML/SVG
 * text escaping (strbuf_markup), and a
 * fuzz loop of random and mutated inputs (must never crash; run under ASan). */
#include "test.h"

#include <float.h>

#include "core/json.h"
#include "core/json_write.h"
#include "core/rng.h"
#include "core/strbuf.h"

static json_value *parse(const char *s)
{
    json_value *v = NULL;
    tempo_error err;
    tempo_error_clear(&err);
    if (json_parse(s, strlen(s), &v, &err))
        return NULL;
    return v;
}

/* Parse must fail and the message must contain want. */
static void expect_error(const char *s, size_t len, const char *want)
{
    json_value *v = (json_value *)1;
    tempo_error err;
    tempo_error_clear(&err);
    int rc = json_parse(s, len, &v, &err);
    CHECK_MSG(rc == -1 && v == NULL, "accepted: %.*s", (int)len, s);
    CHECK_MSG(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
    if (rc == 0)
        json_free(v);
}

static void test_values(void)
{
    json_value *v = parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}, \"c\": [], \"a\": 7} ");
    CHECK(v && v->type == JSON_OBJECT && v->n == 4);
    if (!v)
        return;
    const json_value *a = json_get(v, "a");
    CHECK(a && a->type == JSON_ARRAY && a->n == 6);
    CHECK(a->items[0].type == JSON_NUMBER && a->items[0].number == 1);
    CHECK(a->items[1].number == -2500);
    CHECK(a->items[2].type == JSON_BOOL && a->items[2].boolean == 1);
    CHECK(a->items[3].type == JSON_BOOL && a->items[3].boolean == 0);
    CHECK(a->items[4].type == JSON_NULL);
    CHECK(a->items[5].type == JSON_STRING && !strcmp(a->items[5].string, "x"));
    CHECK(json_get(v, "b")->type == JSON_OBJECT && json_get(v, "b")->n == 0);
    CHECK(json_get(v, "c")->type == JSON_ARRAY && json_get(v, "c")->n == 0);
    CHECK(json_get(v, "zz") == NULL);
    CHECK(json_get(a, "a") == NULL); /* not an object */
    CHECK(json_get(NULL, "a") == NULL);
    CHECK(json_get_number(v, "a", 3.5) == 3.5);
    json_free(v);
    v = parse("0.125");
    CHECK(v && v->type == JSON_NUMBER && v->number == 0.125);
    json_free(v);
    v = parse("-0");
    CHECK(v && v->type == JSON_NUMBER && v->number == 0);
    json_free(v);
    v = parse("\"\"");
    CHECK(v && v->type == JSON_STRING && v->string_len == 0 && v->string[0] == 0);
    json_free(v);
}

static void test_escapes(void)
{
    json_value *v = parse("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"");
    CHECK(v && v->type == JSON_STRING);
    if (v) {
        const char want[] = "a\"b\\c/d\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
        CHECK(v->string_len == sizeof want - 1 && !memcmp(v->string, want, sizeof want));
    }
    json_free(v);
    /* lone surrogates: 3-byte form; a high one followed by a non-low escape */
    v = parse("\"\\ud800x\\udc00\\ud800\\u0041\"");
    CHECK(v && v->type == JSON_STRING);
    if (v) {
        const char want[] = "\xed\xa0\x80x\xed\xb0\x80\xed\xa0\x80" "A";
        CHECK(v->string_len == sizeof want - 1 && !memcmp(v->string, want, sizeof want));
    }
    json_free(v);
    /* \u0000 gives a NUL byte inside the string */
    v = parse("{\"k\\u0000\": \"a\\u0000b\"}");
    CHECK(v && v->n == 1 && v->key_lens[0] == 2 && v->items[0].string_len == 3);
    CHECK(v && v->items[0].string[1] == 0 && v->items[0].string[2] == 'b');
    json_free(v);
    /* raw invalid UTF-8 is kept byte-exact */
    const char raw[] = "\"\xff\xfe\xc3(\x80\"";
    v = parse(raw);
    CHECK(v && v->string_len == 5 && !memcmp(v->string, raw + 1, 5));
    json_free(v);
}

static void test_errors(void)
{
    expect_error("", 0, "column 1: empty input");
    expect_error("   ", 3, "column 4: empty input");
    expect_error("{\"a\":1,}", 8, "column 8: expected a string key");
    expect_error("[1 2]", 5, "column 4: expected ',' or ']'");
    expect_error("{\"a\" 1}", 7, "column 6: expected ':'");
    expect_error("{\"a\":1", 6, "unterminated object");
    expect_error("[1,", 3, "unexpected end of input");
    expect_error("\"abc", 4, "column 1: unterminated string");
    expect_error("\"a\tb\"", 5, "column 3: control character");
    expect_error("\"\\x\"", 4, "column 2: bad escape");
    expect_error("\"\\u12g4\"", 8, "bad \\u escape");
    expect_error("\"\\u12\"", 6, "bad \\u escape");
    expect_error("01", 2, "leading zero");
    expect_error("1.", 2, "no digit after '.'");
    expect_error("1e", 2, "no digit in exponent");
    expect_error("+1", 2, "unexpected character");
    expect_error("-", 1, "bad number");
    expect_error("1e999", 5, "out of range");
    expect_error("NaN", 3, "unexpected character");
    expect_error("tru", 3, "unexpected character");
    expect_error("nulll", 5, "column 5: unexpected text after");
    expect_error("{} {}", 5, "column 4: unexpected text after");
    expect_error("[1,\n 2,\n x]", 11, "line 3, column 2: unexpected character");
    expect_error("\"a\0b\"", 5, "control character");
    expect_error("1\0", 2, "unexpected text after");
    /* depth limit: JSON_MAX_DEPTH nested arrays parse, one more does not */
    char deep[2 * (JSON_MAX_DEPTH + 1) + 1];
    for (int i = 0; i < JSON_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * JSON_MAX_DEPTH - 1 - i] = ']';
    }
    json_value *v = NULL;
    tempo_error err;
    CHECK(json_parse(deep, 2 * JSON_MAX_DEPTH, &v, &err) == 0);
    json_free(v);
    for (int i = 0; i <= JSON_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * JSON_MAX_DEPTH + 1 - i] = ']';
    }
    expect_error(deep, 2 * (JSON_MAX_DEPTH + 1), "nested too deeply");
    /* an unclosed 100000-deep input fails at the limit instead of overflowing the stack */
    size_t big = 100000;
    char *open = malloc(big);
    memset(open, '[', big);
    expect_error(open, big, "nested too deeply");
    memset(open, '{', big);
    expect_error(open, big, "expected a string key");
    free(open);
}

/* Valid UTF-8 strings written with strbuf_json_string parse back to the same bytes. */
static void test_writer_round_trip(void)
{
    rng_state r;
    rng_seed(&r, 11);
    const char *pieces[] = {"a", "\"", "\\", "\n", "\x01", "\x1f", "\xc3\xa9", "\xe2\x82\xac",
                            "\xf0\x9f\x98\x80", " ", "/", "\x7f", "\t"};
    size_t n_pieces = sizeof pieces / sizeof pieces[0];
    for (int iter = 0; iter < 500; iter++) {
        strbuf s = {0}, js = {0};
        size_t n = rng_below(&r, 40);
        strbuf_append(&s, "", 0);
        for (size_t i = 0; i < n; i++)
            strbuf_puts(&s, pieces[rng_below(&r, n_pieces)]);
        strbuf_json_string(&js, s.data, s.len);
        json_value *v = NULL;
        tempo_error err;
        int rc = json_parse(js.data, js.len, &v, &err);
        CHECK(rc == 0 && v->type == JSON_STRING && v->string_len == s.len &&
              !memcmp(v->string, s.data, s.len));
        json_free(v);
        strbuf_free(&s);
        strbuf_free(&js);
    }
}

/* Numbers written with strbuf_json_number: integers as integers, the rest in
 * the shortest form that reads back equal, non-finite as null; magnitudes
 * beyond long long are never cast to it (issue 9: {"overrides":{"lr":1e19}}
 * in a manifest was undefined behaviour, caught by the sanitized build's
 * float-cast-overflow). */
static void test_writer_numbers(void)
{
    struct { double v; const char *want; } cases[] = {
        {1e19, "1e+19"}, {-1e19, "-1e+19"}, {1e300, "1e+300"}, {-1e300, "-1e+300"},
        {9.3e18, "9.3e+18"}, {9223372036854775807.0, "9.223372036854776e+18"},
        {-9223372036854775808.0, "-9.223372036854776e+18"}, {1.8446744073709552e19, "1.8446744073709552e+19"},
        {1e15, "1e+15"}, {999999999999999.0, "999999999999999"}, {-999999999999999.0, "-999999999999999"},
        {0, "0"}, {-0.0, "0"}, {42, "42"}, {2.5, "2.5"}, {0.1, "0.1"}, {1e-300, "1e-300"},
        {DBL_MAX, "1.7976931348623157e+308"}, {NAN, "null"}, {-NAN, "null"}, {INFINITY, "null"}, {-INFINITY, "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strbuf js = {0};
        strbuf_json_number(&js, cases[i].v);
        CHECK_MSG(js.data && !strcmp(js.data, cases[i].want), "%g: wrote '%s', want '%s'", cases[i].v,
                  js.data ? js.data : "", cases[i].want);
        json_value *v = NULL;
        tempo_error err;
        if (isfinite(cases[i].v))
            CHECK(json_parse(js.data, js.len, &v, &err) == 0 && v->type == JSON_NUMBER && v->number == cases[i].v);
        json_free(v);
        strbuf_free(&js);
    }
}

/* Random bytes and mutations of valid documents: parse must return 0 or -1
 * with a message, never crash or leak (ASan/LSan check the rest). */
/* The structured writer: commas and colons placed by it, strings escaped,
 * the text exact and parsed back; every misuse is reported by finish. */
static void test_structured_writer(void)
{
    strbuf sb = {0};
    jsonw w;
    tempo_error err;
    tempo_error_clear(&err);
    jsonw_init(&w, &sb);
    jsonw_object_begin(&w);
    jsonw_field_number(&w, "a", 1.5);
    jsonw_field_int(&w, "b", -3);
    jsonw_field_uint(&w, "c", 18446744073709551615ull);
    jsonw_field_bool(&w, "d", 1);
    jsonw_field_null(&w, "e");
    jsonw_field_string(&w, "quote\"key", "tab\there\n\x01");
    jsonw_field_number(&w, "nan", NAN);
    jsonw_field_digits(&w, "r", 2.71828, 2);
    jsonw_key(&w, "list");
    jsonw_array_begin(&w);
    jsonw_int(&w, 1);
    jsonw_object_begin(&w);
    jsonw_object_end(&w);
    jsonw_array_begin(&w);
    jsonw_array_end(&w);
    jsonw_string(&w, NULL);
    jsonw_raw(&w, "{\"x\":[true]}");
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    CHECK(jsonw_finish(&w, &err) == 0);
    const char *want = "{\"a\":1.5,\"b\":-3,\"c\":18446744073709551615,\"d\":true,\"e\":null,"
                       "\"quote\\\"key\":\"tab\\there\\n\\u0001\",\"nan\":null,\"r\":2.72,"
                       "\"list\":[1,{},[],null,{\"x\":[true]}]}";
    CHECK_MSG(sb.data && strcmp(sb.data, want) == 0, "%s", sb.data ? sb.data : "(null)");
    json_value *v = parse(sb.data);
    CHECK(v && v->type == JSON_OBJECT && v->n == 9);
    CHECK(json_get_string(v, "quote\"key") && strcmp(json_get_string(v, "quote\"key"), "tab\there\n\x01") == 0);
    const json_value *list = json_get(v, "list");
    CHECK(list && list->type == JSON_ARRAY && list->n == 5 && list->items[4].type == JSON_OBJECT);
    json_free(v);
    strbuf_free(&sb);

    /* a top-level array and a bare number are values too */
    jsonw_init(&w, &sb);
    jsonw_number(&w, 0.1);
    CHECK(jsonw_finish(&w, &err) == 0 && strcmp(sb.data, "0.1") == 0);
    strbuf_free(&sb);

    /* an object written elsewhere, extended: its members first (a large
     * integer kept as written), the new ones after a comma; an empty one
     * takes no comma */
    const char *base[] = {" {\"big\":1700000000123456789, \"s\":\"}\"}\n", "{ }"};
    const char *want_ext[] = {"{\"big\":1700000000123456789, \"s\":\"}\",\"more\":true}", "{\"more\":true}"};
    for (int i = 0; i < 2; i++) {
        jsonw_init(&w, &sb);
        jsonw_object_extend(&w, base[i]);
        jsonw_field_bool(&w, "more", 1);
        jsonw_object_end(&w);
        CHECK_MSG(jsonw_finish(&w, &err) == 0 && strcmp(sb.data, want_ext[i]) == 0, "%s", sb.data);
        v = parse(sb.data);
        CHECK(v && v->type == JSON_OBJECT && v->n == (i == 0 ? 3u : 1u));
        json_free(v);
        strbuf_free(&sb);
    }

    /* misuse: each is caught and named, never silently written as broken JSON */
    struct { int kind; const char *msg; } bad[] = {
        {0, "without a key"}, {1, "key outside an object"}, {2, "does not match"}, {3, "not complete"},
        {4, "key without its value"}, {5, "second top-level value"}, {6, "deeper than"},
        {7, "not complete"}, {8, "key where a value was due"}, {9, "empty raw value"},
        {10, "not an object"}, {11, "not an object"}, {12, "without a key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        jsonw_init(&w, &sb);
        switch (bad[i].kind) {
        case 0: jsonw_object_begin(&w); jsonw_int(&w, 1); jsonw_object_end(&w); break;
        case 1: jsonw_array_begin(&w); jsonw_key(&w, "k"); jsonw_array_end(&w); break;
        case 2: jsonw_array_begin(&w); jsonw_object_end(&w); break;
        case 3: jsonw_object_begin(&w); jsonw_field_int(&w, "k", 1); break;
        case 4: jsonw_object_begin(&w); jsonw_key(&w, "k"); jsonw_object_end(&w); break;
        case 5: jsonw_int(&w, 1); jsonw_int(&w, 2); break;
        case 6: for (int d = 0; d <= JSONW_MAX_DEPTH; d++) jsonw_array_begin(&w); break;
        case 7: break;
        case 8: jsonw_object_begin(&w); jsonw_key(&w, "a"); jsonw_key(&w, "b"); break;
        case 9: jsonw_array_begin(&w); jsonw_raw(&w, ""); jsonw_array_end(&w); break;
        case 10: jsonw_object_extend(&w, "[1]"); jsonw_object_end(&w); break;
        case 11: jsonw_object_extend(&w, NULL); jsonw_object_end(&w); break;
        case 12: jsonw_object_begin(&w); jsonw_object_extend(&w, "{}"); jsonw_object_end(&w);
                 jsonw_object_end(&w); break;
        }
        CHECK_MSG(jsonw_finish(&w, &err) == -1 && strstr(err.msg, bad[i].msg), "case %d: %s", bad[i].kind, err.msg);
        strbuf_free(&sb);
    }
}

/* strbuf_markup (HTML/SVG text): the five markup characters as entities,
 * control characters kept or replaced as asked, other bytes (UTF-8) as is. */
/* A matrix written by jsonw_rows reads back bit for bit; a wrong shape or a number out of range is refused, named. */
static void test_rows(void)
{
    const double x[6] = {0.1, -1.0 / 3, 1e-300, 30, -30, 0};
    strbuf sb = {0};
    jsonw w;
    jsonw_init(&w, &sb);
    jsonw_rows(&w, x, 2, 3);
    tempo_error err;
    CHECK(jsonw_finish(&w, &err) == 0 && sb.data && sb.data[0] == '[' && sb.data[1] == '[');
    json_value *v = parse(sb.data);
    double y[6];
    CHECK(v && json_get_rows(v, y, 2, 3, -30, 30, "m", &err) == 0 && !memcmp(x, y, sizeof x));
    CHECK(json_get_rows(v, y, 3, 2, -30, 30, "m", &err) == -1 && !strcmp(err.msg, "m: expected 3 rows of 2 numbers"));
    CHECK(json_get_rows(v, y, 2, 2, -30, 30, "m", &err) == -1 && !strcmp(err.msg, "m[0]: expected 2 numbers"));
    CHECK(json_get_rows(v, y, 2, 3, 0, 1, "m", &err) == -1 && !strcmp(err.msg, "m[0][1]: expected a number in 0..1"));
    CHECK(json_get_rows(NULL, y, 1, 1, 0, 1, "absent", &err) == -1 && strstr(err.msg, "absent: expected 1 rows"));
    json_free(v);
    strbuf_free(&sb);
}

static void test_markup(void)
{
    strbuf a = {0}, b = {0};
    const char *s = "a<b>&\"c'\t\x01\x7f\xc3\xa9";
    strbuf_markup(&a, s, 0);
    strbuf_markup(&b, s, 1);
    CHECK(a.data && !strcmp(a.data, "a&lt;b&gt;&amp;&quot;c&#39;\t\x01\x7f\xc3\xa9"));
    CHECK(b.data && !strcmp(b.data, "a&lt;b&gt;&amp;&quot;c&#39;???\xc3\xa9"));
    strbuf_free(&a);
    strbuf_free(&b);
}

static void test_fuzz(void)
{
    rng_state r;
    rng_seed(&r, 1234);
    const char *seeds[] = {
        "{\"text\": \"hello \\u00e9 world\", \"n\": [1, 2.5, -3e2, true, null], \"o\": {\"k\": []}}",
        "[[[[{\"a\":[\"\\ud83d\\ude00\",{}]}]]]]",
        "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 1}",
    };
    const char alphabet[] = "{}[]\":,\\/ubfnrt0123456789-+.eE \n\tabcxyz\x80\xff\x00";
    char buf[256];
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n;
        if (iter % 2 == 0) {
            n = rng_below(&r, 64);
            for (size_t i = 0; i < n; i++)
                buf[i] = alphabet[rng_below(&r, sizeof alphabet - 1)];
        } else {
            const char *s = seeds[rng_below(&r, 3)];
            n = strlen(s);
            memcpy(buf, s, n);
            int edits = 1 + (int)rng_below(&r, 4);
            for (int e = 0; e < edits && n > 0; e++) {
                size_t at = rng_below(&r, n);
                switch (rng_below(&r, 3)) {
                case 0: buf[at] = alphabet[rng_below(&r, sizeof alphabet - 1)]; break;
                case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break;
                default: n = at; break; /* truncate */
                }
            }
        }
        json_value *v = NULL;
        tempo_error err;
        tempo_error_clear(&err);
        if (json_parse(buf, n, &v, &err) == 0) {
            ok++;
            CHECK(v != NULL);
        } else {
            bad++;
            CHECK(v == NULL && (strncmp(err.msg, "column", 6) == 0 || strncmp(err.msg, "line", 4) == 0));
        }
        json_free(v);
    }
    CHECK(ok > 100 && bad > 100);
}

int main(void)
{
    RUN(test_values);
    RUN(test_escapes);
    RUN(test_errors);
    RUN(test_writer_round_trip);
    RUN(test_writer_numbers);
    RUN(test_structured_writer);
    RUN(test_rows);
    RUN(test_markup);
    RUN(test_fuzz);
    return test_summary("test_json");
}
