/* caplog.c - head-to-file, tail-in-memory capped logs (see caplog.h). */
#include "proc/caplog.h"
#include "core/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_caplog_open(proc_caplog *l, const char *path, size_t head_max, size_t tail_max, tempo_error *err)
{
    memset(l, 0, sizeof *l);
    l->fd = -1;
    if (tail_max == 0)
        return tempo_fail(err, "%s: log tail size must be positive", path ? path : "log");
    l->ring = malloc(tail_max);
    if (!l->ring)
        return tempo_fail(err, "%s: out of memory", path ? path : "log");
    l->head_max = head_max;
    l->tail_max = tail_max;
    if (path) {
        l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (l->fd < 0) {
            int e = errno;
            free(l->ring);
            l->ring = NULL;
            return tempo_fail(err, "%s: cannot write: %s", path, strerror(e));
        }
    }
    return 0;
}

static void write_all(proc_caplog *l, const char *p, size_t n)
{
    while (l->fd >= 0 && !l->write_failed && n > 0) {
        ssize_t w = write(l->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            l->write_failed = 1;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void proc_caplog_add(proc_caplog *l, const char *data, size_t n)
{
    l->total += n;
    if (l->head_written < l->head_max) {
        size_t k = l->head_max - l->head_written;
        if (k > n)
            k = n;
        write_all(l, data, k);
        l->head_written += k;
    }
    /* the ring always holds the last tail_max bytes offered */
    if (n >= l->tail_max) {
        memcpy(l->ring, data + n - l->tail_max, l->tail_max);
        l->ring_len = l->tail_max;
        l->ring_start = 0;
        return;
    }
    size_t cap = l->tail_max, end = (l->ring_start + l->ring_len) % cap;
    size_t first = cap - end < n ? cap - end : n;
    memcpy(l->ring + end, data, first);
    memcpy(l->ring, data + first, n - first);
    l->ring_len += n;
    if (l->ring_len > cap) { /* the oldest bytes were overwritten */
        l->ring_start = (l->ring_start + l->ring_len - cap) % cap;
        l->ring_len = cap;
    }
}

/* Byte i (0 = oldest) of the ring. */
static char ring_at(const proc_caplog *l, size_t i)
{
    return l->ring[(l->ring_start + i) % l->tail_max];
}

void proc_caplog_close(proc_caplog *l)
{
    if (l->fd < 0)
        return;
    if (l->total > l->head_written) {
        uint64_t after_head = l->total - l->head_written;
        size_t keep = after_head < l->ring_len ? (size_t)after_head : l->ring_len;
        uint64_t dropped = after_head - keep;
        if (dropped > 0) {
            char marker[96];
            int m = text_fmt(marker, sizeof marker, "\n[tempo judge: %llu bytes dropped]\n",
                             (unsigned long long)dropped);
            write_all(l, marker, (size_t)m);
        }
        for (size_t i = l->ring_len - keep; i < l->ring_len; i++) {
            char c = ring_at(l, i);
            write_all(l, &c, 1);
        }
    }
    close(l->fd);
    l->fd = -1;
}

void proc_caplog_free(proc_caplog *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    free(l->ring);
    l->ring = NULL;
    l->ring_len = 0;
}

size_t proc_caplog_last_line(const proc_caplog *l, char *out, size_t n)
{
    if (n == 0)
        return 0;
    out[0] = '\0';
    size_t end = l->ring_len;
    for (;;) {
        /* skip trailing blanks and newlines */
        while (end > 0) {
            char c = ring_at(l, end - 1);
            if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
                end--;
            else
                break;
        }
        if (end == 0)
            return 0;
        size_t start = end;
        while (start > 0 && ring_at(l, start - 1) != '\n')
            start--;
        while (start < end && (ring_at(l, start) == ' ' || ring_at(l, start) == '\t'))
            start++;
        size_t len = end - start, k = 0;
        if (len > n - 1)
            len = n - 1;
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)ring_at(l, start + i);
            out[k++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
        }
        out[k] = '\0';
        if (k > 0)
            return k;
        end = start;
    }
}
