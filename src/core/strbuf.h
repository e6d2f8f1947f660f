/* strbuf.h - a growable string for building text output. The two JSON
 * primitives (an escaped string, a number that round-trips) and HTML/SVG
 * text escaping live here; whole
 * JSON documents are written with core/json_write.h, which places the commas
 * and quotes; JSON *parsing* lives in core/json.h. */
#ifndef TEMPO_STRBUF_H
#define TEMPO_STRBUF_H

#include <stddef.h>

typedef struct {
    char *data;   /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int oom;      /* set if an allocation failed; further appends are ignored */
} strbuf;

void strbuf_free(strbuf *sb);
void strbuf_append(strbuf *sb, const char *s, size_t n);
void strbuf_puts(strbuf *sb, const char *s);
void strbuf_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s (n bytes) as a JSON string literal with quotes; bytes that are not
 * valid UTF-8 are written as \u00XX escapes of the byte value. */
void strbuf_json_string(strbuf *sb, const char *s, size_t n);
/* Append a double as JSON: shortest form that round-trips; NaN/Inf -> null. */
void strbuf_json_number(strbuf *sb, double v);
/* Append s for an HTML/SVG text node or attribute: & < > " ' as entities;
 * with replace_controls, control characters (not allowed in XML) as '?'. */
void strbuf_markup(strbuf *sb, const char *s, int replace_controls);

#endif
