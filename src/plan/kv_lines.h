/* kv_lines.h - the planner's text files (chip profiles, fitted laws) are
 * `key = value` lines with `#` comments; this reads them, one line at a
 * time, and hands each pair to the caller. What the keys mean lives with
 * each file's reader (plan/chip.c, plan/quality.c). */
#ifndef TEMPO_PLAN_KV_LINES_H
#define TEMPO_PLAN_KV_LINES_H

#include <stddef.h>

#include "core/error.h"

/* Called for each pair: key and value trimmed, value writable; `where` is
 * "path:line" for error messages. Returns 0 or -1 with err set. */
typedef int (*kv_line_fn)(void *ctx, const char *key, char *value, const char *where, tempo_error *err);

/* fn for each `key = value` line of text[0..len) (blank and comment-only
 * lines skipped). Errors, naming path:line, exit code 2: a NUL byte, a line
 * over 511 characters, a line without '=', a value without a key. */
int kv_lines_each(const char *text, size_t len, const char *path, kv_line_fn fn, void *ctx, tempo_error *err);

#endif
