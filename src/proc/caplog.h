/* caplog.h - a size-capped log of a child's output stream: the first
 * head_max bytes go to the file as they arrive, the last tail_max bytes are
 * kept in memory and appended on close after a one-line marker saying how
 * many bytes in between were dropped. So a flood of output costs at most
 * head_max + tail_max bytes of disk, and both the start and the end of the
 * output (where errors are) survive. Nothing here knows about processes;
 * judge/runner.h feeds it. */
#ifndef TEMPO_PROC_CAPLOG_H
#define TEMPO_PROC_CAPLOG_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct {
    int fd;              /* log file, -1 when only the in-memory tail is kept */
    size_t head_max;     /* bytes written to the file as they come */
    size_t tail_max;     /* bytes kept in the ring (the last ones offered) */
    size_t head_written;
    char *ring;          /* tail_max bytes */
    size_t ring_len;     /* bytes in the ring (<= tail_max) */
    size_t ring_start;   /* index of the oldest byte */
    uint64_t total;      /* bytes offered so far */
    int write_failed;    /* a write to the file failed (e.g. disk full); the rest is dropped */
} proc_caplog;

/* Start a log. path may be NULL (keep only the tail in memory). tail_max
 * must be >= 1. The file is created or truncated. */
int proc_caplog_open(proc_caplog *l, const char *path, size_t head_max, size_t tail_max, tempo_error *err);

/* Offer n bytes of output. Never fails (write errors set write_failed). */
void proc_caplog_add(proc_caplog *l, const char *data, size_t n);

/* Finish the file: when more than head_max bytes were offered, append
 * "\n[tempo judge: N bytes dropped]\n" (when N > 0) and the tail. Closes the
 * file but keeps the ring, so the last line can still be read; call
 * proc_caplog_free afterwards. */
void proc_caplog_close(proc_caplog *l);
void proc_caplog_free(proc_caplog *l);

/* The last non-empty line of the output (from the in-memory tail, so at
 * most tail_max bytes long), with control bytes replaced by spaces and
 * surrounding blanks trimmed, into out (size n, always NUL-terminated).
 * Returns its length (0 when there is none). */
size_t proc_caplog_last_line(const proc_caplog *l, char *out, size_t n);

#endif
