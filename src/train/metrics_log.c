/* metrics_log.c - metrics.jsonl written and read (see metrics_log.h); the
 * key names are the string literals of this file and nowhere else in C. */
#include "train/metrics_log.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/json_write.h"

static const char *const event_key[] = {
    [METRICS_VAL_SLICE] = "val_bpb_slice",
    [METRICS_VAL_FULL] = "val_bpb",
    [METRICS_DIVERGED] = "diverged",
};

int metrics_record_json(const metrics_record *r, strbuf *out, tempo_error *err)
{
    if (r->kind == METRICS_OTHER || r->kind < 0 || r->kind > METRICS_OTHER)
        return tempo_fail(err, METRICS_LOG_FILE ": no line of kind %d", (int)r->kind);
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_int(&w, "step", r->step);
    jsonw_field_number(&w, "elapsed_s", r->elapsed_s);
    jsonw_field_uint(&w, "tokens", r->tokens);
    if (r->kind == METRICS_STEP) {
        jsonw_field_number(&w, "train_loss", r->value);
        jsonw_field_number(&w, "lr", r->lr);
        jsonw_field_number(&w, "tokens_per_s", r->tokens_per_s);
        jsonw_field_number(&w, "grad_norm", r->grad_norm);
        jsonw_field_number(&w, "step_s", r->step_s);
    } else {
        jsonw_field_number(&w, event_key[r->kind], r->value);
        if (r->note)
            jsonw_field_string(&w, "note", r->note);
    }
    jsonw_object_end(&w);
    return jsonw_finish(&w, err) ? tempo_error_prefix(err, METRICS_LOG_FILE) : 0;
}

static int number_of(const json_value *v, const char *key, double *out)
{
    const json_value *x = json_get(v, key);
    if (!x || x->type != JSON_NUMBER)
        return 0;
    *out = x->number;
    return 1;
}

/* A figure that is there, as a number or as null (a non-finite one written
 * by the writer): its line's kind is known; its value is NaN when null. */
static int figure_of(const json_value *v, const char *key, double *out)
{
    const json_value *x = json_get(v, key);
    if (!x || (x->type != JSON_NUMBER && x->type != JSON_NULL))
        return 0;
    *out = x->type == JSON_NUMBER ? x->number : NAN;
    return 1;
}

int metrics_record_read(const char *line, size_t len, metrics_record *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->kind = METRICS_OTHER;
    r->step = -1;
    r->elapsed_s = r->value = r->lr = r->tokens_per_s = r->grad_norm = r->step_s = NAN;
    json_value *v;
    if (json_parse(line, len, &v, err))
        return -1;
    if (v->type != JSON_OBJECT) {
        json_free(v);
        return tempo_fail(err, "not a JSON object");
    }
    double x;
    if (number_of(v, "step", &x) && x >= 0 && x <= 9007199254740992.0 && x == floor(x))
        r->step = (int64_t)x;
    if (number_of(v, "tokens", &x) && x >= 0 && x <= 9007199254740992.0 && x == floor(x))
        r->tokens = (uint64_t)x;
    number_of(v, "elapsed_s", &r->elapsed_s);
    if (figure_of(v, "train_loss", &r->value)) {
        r->kind = METRICS_STEP;
        number_of(v, "lr", &r->lr);
        number_of(v, "tokens_per_s", &r->tokens_per_s);
        number_of(v, "grad_norm", &r->grad_norm);
        number_of(v, "step_s", &r->step_s);
    } else {
        for (int k = METRICS_VAL_SLICE; k <= METRICS_DIVERGED; k++)
            if (figure_of(v, event_key[k], &r->value)) {
                r->kind = (metrics_kind)k;
                break;
            }
    }
    json_free(v);
    return 0;
}

/* Keep the complete lines of steps <= step (a crash can leave later ones). */
static int truncate_after(const char *path, int64_t step, tempo_error *err)
{
    if (!path_exists(path))
        return 0;
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 0, err))
        return -1;
    strbuf keep = {0};
    for (char *line = text; line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(text + len - line);
        metrics_record r;
        tempo_error e;
        if (nl && metrics_record_read(line, n - 1, &r, &e) == 0 && r.step >= 0 && r.step <= step)
            strbuf_append(&keep, line, n);
        line += n;
    }
    int rc = file_write_atomic(path, keep.data ? keep.data : "", keep.len, err);
    strbuf_free(&keep);
    free(text);
    return rc;
}

int metrics_log_open(metrics_log *m, const char *run_dir, int64_t resume_step, tempo_error *err)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
    path_join(m->path, sizeof m->path, run_dir, METRICS_LOG_FILE);
    if (resume_step >= 0 && truncate_after(m->path, resume_step, err))
        return -1;
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (resume_step >= 0 ? O_APPEND : O_TRUNC);
    m->fd = open(m->path, flags, 0666);
    if (m->fd < 0)
        return tempo_fail(err, "%s: cannot write: %s", m->path, strerror(errno));
    m->open = 1;
    return 0;
}

int metrics_log_write(metrics_log *m, const metrics_record *r, tempo_error *err)
{
    if (!m || !m->open)
        return 0;
    strbuf s = {0};
    if (metrics_record_json(r, &s, err)) {
        strbuf_free(&s);
        return -1;
    }
    strbuf_puts(&s, "\n");
    if (s.oom) {
        strbuf_free(&s);
        return tempo_fail(err, "%s: out of memory", m->path);
    }
    off_t end = lseek(m->fd, 0, SEEK_END);   /* where the line starts (O_APPEND or not) */
    size_t done = 0;
    while (done < s.len) {
        ssize_t w = write(m->fd, s.data + done, s.len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            strbuf_free(&s);
            /* the part that went out comes back off: the file ends on its last whole line */
            if (done && (end < 0 || ftruncate(m->fd, end) != 0))
                return tempo_fail(err, "%s: write failed: %s (and the torn line stays)", m->path, strerror(e));
            return tempo_fail(err, "%s: write failed: %s", m->path, strerror(e));
        }
        done += (size_t)w;
    }
    strbuf_free(&s);
    return 0;
}

void metrics_log_close(metrics_log *m)
{
    if (m->open)
        close(m->fd);
    m->open = 0;
    m->fd = -1;
}
