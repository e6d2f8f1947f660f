/* number.h - checked parsing of the numbers a user types: every numeric
 * flag of every command goes through here.
 *
 * Why one parser: strtoll saturates at LLONG_MAX, strtol results cast to int
 * wrap (--threads 4294967297 ran on 1 thread), and a double outside a
 * type's range is undefined behaviour when cast. Here the whole text must
 * be the number, finite, and inside an inclusive range [lo, hi] that the
 * caller states; otherwise the error (code 2, bad usage) is one line naming
 * the flag, the text as typed and the range:
 *   --threads: 4294967297 is out of range (1 to 1024)
 *   --vocab: 'abc' is not a number (use 256 to 65536)
 * Values inside the range are exact in the caller's type as long as hi is
 * (an int flag gives hi <= INT_MAX). */
#ifndef TEMPO_NUMBER_H
#define TEMPO_NUMBER_H

#include <stdint.h>

#include "core/error.h"

/* The ranges commands share. */
#define NUMBER_MAX_THREADS 1024               /* --threads: far above any CPU we run on */
#define NUMBER_MAX_STEPS (1LL << 40)          /* --steps and other step numbers */
#define NUMBER_MAX_SEED (1LL << 53)           /* seeds: exact as a JSON number */
#define NUMBER_MAX_DURATION_S (30.0 * 86400)  /* budgets and timeouts: 30 days */

/* A decimal integer in [lo, hi] ("12", "-3", "+7"; not "1.5", "1e3", " 4"). */
int number_parse_int(const char *what, const char *text, long long lo, long long hi, long long *out,
                     tempo_error *err);

/* A finite decimal number in [lo, hi], or in (lo, hi] when lo_open. */
int number_parse_real(const char *what, const char *text, double lo, double hi, int lo_open, double *out,
                      tempo_error *err);

/* A duration such as "90s", "10m", "1h30m", "2.5m", "45" (seconds), greater
 * than zero and at most max_s seconds. */
int number_parse_duration(const char *what, const char *text, double max_s, double *out, tempo_error *err);

/* A byte count such as "4096", "512K", "1.5M", "8G" (K = 1024), in [lo, hi]
 * (fractions of a byte are dropped). */
int number_parse_size(const char *what, const char *text, uint64_t lo, uint64_t hi, uint64_t *out,
                      tempo_error *err);

#endif
