/* error.h - the error value every library function reports through.
 *
 * Library code never exits or prints: it fills a tempo_error and returns -1
 * (or NULL). Only the CLI decides to print "tempo: <thing>: <problem>" and exit.
 * This file holds no logging, no timing, nothing else. */
#ifndef TEMPO_ERROR_H
#define TEMPO_ERROR_H

#include <stddef.h>

typedef struct {
    char msg[512];   /* "<file or thing>: <what is wrong>", empty when no error */
    int code;        /* exit code the CLI should use: 1 failure, 2 bad usage */
} tempo_error;

/* Clear an error value. */
void tempo_error_clear(tempo_error *err);

/* Format an error (printf-style) with exit code 1. Always returns -1 so that
 * callers can write `return tempo_fail(err, "%s: truncated", path);`.
 * err may be NULL (the message is then dropped). */
int tempo_fail(tempo_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Same with exit code 2 (bad usage: unknown flag, bad value). */
int tempo_usage(tempo_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefix an existing message with "what: " (keeps the code). Returns -1. */
int tempo_error_prefix(tempo_error *err, const char *what);

#endif
