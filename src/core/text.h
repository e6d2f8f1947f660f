/* text.h - bounded string formatting for the judge's fixed-size fields and
 * paths: like snprintf, but through a function, so a long path is cut (and
 * reported through the return value) rather than warned about at every call
 * site; and byte counts in words. Nothing else lives here. */
#ifndef TEMPO_CORE_TEXT_H
#define TEMPO_CORE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* vsnprintf into dst (size n, always NUL-terminated when n > 0). Returns the
 * length the full text needs, as snprintf does (>= n means it was cut). */
int text_fmt(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A byte count for a reason line: "512 KiB", "64.0 MiB", "1.50 GiB". */
void text_bytes(uint64_t bytes, char *dst, size_t n);

#endif
