/* json_write.c - the streaming JSON writer (see json_write.h). The text of
 * numbers and strings comes from strbuf_json_number / strbuf_json_string, so
 * there is one escaping and one number format in the program. */
#include "core/json_write.h"

#include <math.h>
#include <string.h>

void jsonw_init(jsonw *w, strbuf *out)
{
    w->out = out;
    w->depth = 0;
    w->want_value = 0;
    w->top_done = 0;
    w->misuse = NULL;
}

static void misuse(jsonw *w, const char *what)
{
    if (!w->misuse)
        w->misuse = what;
}

/* Before any value: the comma, and the check that a value may stand here. */
static int value_slot(jsonw *w)
{
    if (w->depth == 0) {
        if (w->top_done) {
            misuse(w, "a second top-level value");
            return -1;
        }
        return 0;
    }
    int d = w->depth - 1;
    if (w->in_object[d]) {
        if (!w->want_value) {
            misuse(w, "a value in an object without a key");
            return -1;
        }
        w->want_value = 0;
        return 0;
    }
    if (w->has_item[d])
        strbuf_puts(w->out, ",");
    w->has_item[d] = 1;
    return 0;
}

static void value_done(jsonw *w)
{
    if (w->depth == 0)
        w->top_done = 1;
}

void jsonw_key(jsonw *w, const char *key)
{
    if (w->depth == 0 || !w->in_object[w->depth - 1] || w->want_value) {
        misuse(w, w->want_value ? "a key where a value was due" : "a key outside an object");
        return;
    }
    int d = w->depth - 1;
    if (w->has_item[d])
        strbuf_puts(w->out, ",");
    w->has_item[d] = 1;
    strbuf_json_string(w->out, key ? key : "", key ? strlen(key) : 0);
    strbuf_puts(w->out, ":");
    w->want_value = 1;
}

static void begin(jsonw *w, int object)
{
    if (value_slot(w))
        return;
    if (w->depth == JSONW_MAX_DEPTH) {
        misuse(w, "nesting deeper than JSONW_MAX_DEPTH");
        return;
    }
    strbuf_puts(w->out, object ? "{" : "[");
    w->in_object[w->depth] = (unsigned char)object;
    w->has_item[w->depth] = 0;
    w->depth++;
}

static void end(jsonw *w, int object)
{
    if (w->depth == 0 || w->in_object[w->depth - 1] != object || w->want_value) {
        misuse(w, w->want_value ? "a key without its value" : "an end that does not match its begin");
        return;
    }
    strbuf_puts(w->out, object ? "}" : "]");
    w->depth--;
    value_done(w);
}

void jsonw_object_begin(jsonw *w) { begin(w, 1); }
void jsonw_object_end(jsonw *w) { end(w, 1); }
void jsonw_array_begin(jsonw *w) { begin(w, 0); }
void jsonw_array_end(jsonw *w) { end(w, 0); }

void jsonw_number(jsonw *w, double v)
{
    if (value_slot(w))
        return;
    strbuf_json_number(w->out, v);
    value_done(w);
}

void jsonw_number_digits(jsonw *w, double v, int decimals)
{
    if (isfinite(v)) {
        double scale = pow(10, decimals);
        double r = round(v * scale) / scale;
        if (isfinite(r))
            v = r;
    }
    jsonw_number(w, v);
}

void jsonw_rows(jsonw *w, const double *x, int rows, int width)
{
    jsonw_array_begin(w);
    for (int b = 0; b < rows; b++) {
        jsonw_array_begin(w);
        for (int i = 0; i < width; i++)
            jsonw_number(w, x[(size_t)b * width + i]);
        jsonw_array_end(w);
    }
    jsonw_array_end(w);
}

void jsonw_int(jsonw *w, long long v)
{
    if (value_slot(w))
        return;
    strbuf_printf(w->out, "%lld", v);
    value_done(w);
}

void jsonw_uint(jsonw *w, unsigned long long v)
{
    if (value_slot(w))
        return;
    strbuf_printf(w->out, "%llu", v);
    value_done(w);
}

void jsonw_bool(jsonw *w, int b)
{
    if (value_slot(w))
        return;
    strbuf_puts(w->out, b ? "true" : "false");
    value_done(w);
}

void jsonw_null(jsonw *w)
{
    if (value_slot(w))
        return;
    strbuf_puts(w->out, "null");
    value_done(w);
}

void jsonw_string_n(jsonw *w, const char *s, size_t n)
{
    if (value_slot(w))
        return;
    strbuf_json_string(w->out, s, n);
    value_done(w);
}

void jsonw_string(jsonw *w, const char *s)
{
    if (!s)
        jsonw_null(w);
    else
        jsonw_string_n(w, s, strlen(s));
}

void jsonw_raw(jsonw *w, const char *json)
{
    if (!json || !*json) {
        misuse(w, "an empty raw value");
        return;
    }
    if (value_slot(w))
        return;
    strbuf_puts(w->out, json);
    value_done(w);
}

void jsonw_object_extend(jsonw *w, const char *object_json)
{
    const char *s = object_json ? object_json : "";
    size_t n = strlen(s);
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    if (n < 2 || s[0] != '{' || s[n - 1] != '}') {
        misuse(w, "an extended object that is not an object");
        return;
    }
    begin(w, 1);
    if (w->misuse)
        return;
    /* the members between the braces, if there are any */
    size_t a = 1, b = n - 1;
    while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r'))
        a++;
    if (a < b) {
        strbuf_append(w->out, s + a, b - a);
        w->has_item[w->depth - 1] = 1;
    }
}

void jsonw_field_number(jsonw *w, const char *key, double v) { jsonw_key(w, key); jsonw_number(w, v); }
void jsonw_field_digits(jsonw *w, const char *key, double v, int decimals)
{
    jsonw_key(w, key);
    jsonw_number_digits(w, v, decimals);
}
void jsonw_field_int(jsonw *w, const char *key, long long v) { jsonw_key(w, key); jsonw_int(w, v); }
void jsonw_field_uint(jsonw *w, const char *key, unsigned long long v) { jsonw_key(w, key); jsonw_uint(w, v); }
void jsonw_field_bool(jsonw *w, const char *key, int b) { jsonw_key(w, key); jsonw_bool(w, b); }
void jsonw_field_null(jsonw *w, const char *key) { jsonw_key(w, key); jsonw_null(w); }
void jsonw_field_string(jsonw *w, const char *key, const char *s) { jsonw_key(w, key); jsonw_string(w, s); }
void jsonw_field_raw(jsonw *w, const char *key, const char *json) { jsonw_key(w, key); jsonw_raw(w, json); }

int jsonw_finish(jsonw *w, tempo_error *err)
{
    if (w->misuse)
        return tempo_fail(err, "json writer: %s", w->misuse);
    if (w->depth || w->want_value || !w->top_done)
        return tempo_fail(err, "json writer: the value is not complete (%d open)", w->depth);
    if (w->out->oom)
        return tempo_fail(err, "json writer: out of memory");
    return 0;
}
