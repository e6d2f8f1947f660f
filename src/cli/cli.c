/* cli.c - error reporting, flag parsing, preset loading and result printing
 * shared by subcommands. */
#include "cli/cli.h"

#include <errno.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/number.h"

int cli_report(const tempo_error *err)
{
    fprintf(stderr, "tempo: %s\n", err->msg[0] ? err->msg : "unknown error");
    return err->code == 2 ? 2 : 1;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tempo: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    tempo_error err;
    tempo_error_clear(&err);
    return number_parse_int(flag, v, lo, hi, out, &err) ? cli_report(&err) : 0;
}

int cli_parse_real(const char *flag, const char *v, double lo, double hi, int lo_open, double *out)
{
    tempo_error err;
    tempo_error_clear(&err);
    return number_parse_real(flag, v, lo, hi, lo_open, out, &err) ? cli_report(&err) : 0;
}

int cli_parse_duration(const char *flag, const char *v, double *out)
{
    tempo_error err;
    tempo_error_clear(&err);
    return number_parse_duration(flag, v, NUMBER_MAX_DURATION_S, out, &err) ? cli_report(&err) : 0;
}

int cli_parse_size(const char *flag, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    tempo_error err;
    tempo_error_clear(&err);
    return number_parse_size(flag, v, lo, hi, out, &err) ? cli_report(&err) : 0;
}

int cli_load_preset(const char *name, const char *const *sets, int n_sets, int vocab, run_config *c,
                    tempo_error *err)
{
    run_config_defaults(c);
    if (run_config_load_preset(c, name, err))
        return -1;
    for (int i = 0; i < n_sets; i++)
        if (run_config_set_pair(c, sets[i], err))
            return -1;
    c->model.vocab_size = vocab;
    return run_config_finish(c, err);
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n))
            return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

int cli_parse_flags(const char *cmd, int argc, char **argv, const cli_flag *flags, int n_flags, int *help)
{
    *help = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return 0;
        }
        const cli_flag *f = NULL;
        for (int k = 0; k < n_flags && !f; k++)
            if (!strcmp(a, flags[k].name))
                f = &flags[k];
        if (!f)
            return cli_usage_error("%s: unknown option (see tempo %s --help)", a, cmd);
        if (f->kind == CLI_SWITCH) {
            *(int *)f->dst = 1;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("%s: missing value (see tempo %s --help)", a, cmd);
        const char *v = argv[++i];
        long long x;
        switch (f->kind) {
        case CLI_SWITCH: break;
        case CLI_STRING: *(const char **)f->dst = v; break;
        case CLI_CHOICE:
            if (!choice_ok(f->choices, v)) {   /* "a|b|c" said as "a, b or c" */
                char said[256] = "";
                const char *last = strrchr(f->choices, '|');
                size_t k = 0;
                for (const char *p = f->choices; *p && k + 8 < sizeof said; p++) {
                    if (*p != '|')
                        said[k++] = *p;
                    else
                        k += (size_t)snprintf(said + k, sizeof said - k, p == last ? " or " : ", ");
                }
                said[k] = '\0';
                return cli_usage_error("%s %s: expected %s", a, v, said);
            }
            *(const char **)f->dst = v;
            break;
        case CLI_LIST:
            if (*f->count >= f->max)
                return cli_usage_error("%s: at most %d of them", a, f->max);
            ((const char **)f->dst)[(*f->count)++] = v;
            break;
        case CLI_INT:
            if (cli_parse_int(a, v, f->lo, f->hi, &x)) return 2;
            *(int *)f->dst = (int)x;
            break;
        case CLI_INT64:
            if (cli_parse_int(a, v, f->lo, f->hi, &x)) return 2;
            *(long long *)f->dst = x;
            break;
        case CLI_REAL:
            if (cli_parse_real(a, v, f->real_lo, f->real_hi, f->real_lo_open, (double *)f->dst)) return 2;
            break;
        case CLI_DURATION:
            if (cli_parse_duration(a, v, (double *)f->dst)) return 2;
            break;
        }
    }
    return 0;
}

int cli_parse_int32(const char *flag, const char *v, int lo, int hi, int *out)
{
    long long x;
    if (cli_parse_int(flag, v, lo, hi, &x))
        return 2;
    *out = (int)x;
    return 0;
}

int cli_emit_jsonw(jsonw *w, tempo_error *err)
{
    int rc = jsonw_finish(w, err);
    if (!rc)
        cli_emit_result(w->out, NULL);
    strbuf_free(w->out);
    return rc;
}

int cli_emit_result(const strbuf *json, const char *out_dir)
{
    if (out_dir) {
        char path[1024];
        path_join(path, sizeof path, out_dir, "result.json");
        tempo_error err;
        tempo_error_clear(&err);
        strbuf line = {0};
        strbuf_append(&line, json->data, json->len);
        strbuf_puts(&line, "\n");
        int rc = file_write_atomic(path, line.data, line.len, &err);
        strbuf_free(&line);
        if (rc)
            return cli_report(&err);
    }
    fwrite(json->data, 1, json->len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    return 0;
}

/* "1,2" -> counts; 0 or -1 on a bad list. */
int cli_parse_thread_list(const char *text, int *out, int max)
{
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > NUMBER_MAX_THREADS || (*end && *end != ','))
            return -1;
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return *p ? -1 : n;
}

int cli_default_thread_list(int out[2])
{
    int n = 0, all = omp_get_max_threads();
    out[n++] = 1;
    if (all > 1)
        out[n++] = all;
    return n;
}
