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

/* "a|b|c" said as "a, b or c". */
static void say_choices(const char *choices, char *said, size_t n)
{
    const char *last = strrchr(choices, '|');
    size_t k = 0;
    for (const char *p = choices; *p && k + 8 < n; p++) {
        if (*p != '|')
            said[k++] = *p;
        else
            k += (size_t)snprintf(said + k, n - k, p == last ? " or " : ", ");
    }
    said[k] = '\0';
}

/* The row that takes argument a: its name, or for "--name=VALUE" a row
 * with a value named name (*v = VALUE); NULL when none. */
static const cli_flag *find_flag(const char *a, const cli_flag *flags, int n_flags, const char **v)
{
    *v = NULL;
    for (int k = 0; k < n_flags; k++)
        if (flags[k].kind != CLI_ARGS && !strcmp(a, flags[k].name))
            return &flags[k];
    const char *eq = strchr(a, '=');
    if (!eq || strncmp(a, "--", 2))
        return NULL;
    for (int k = 0; k < n_flags; k++) {
        size_t n = strlen(flags[k].name);
        if (flags[k].kind != CLI_ARGS && flags[k].kind != CLI_SWITCH && n == (size_t)(eq - a) &&
            !strncmp(a, flags[k].name, n)) {
            *v = eq + 1;
            return &flags[k];
        }
    }
    return NULL;
}

/* Store v as row f says: 0, or 2 after the one-line error. */
static int set_value(const cli_flag *f, const char *v)
{
    const char *a = f->name;
    long long x;
    uint64_t sz;
    switch (f->kind) {
    case CLI_SWITCH: *(int *)f->dst = 1; break;
    case CLI_STRING: *(const char **)f->dst = v; break;
    case CLI_CHOICE:
        if (!choice_ok(f->choices, v)) {
            char said[256];
            say_choices(f->choices, said, sizeof said);
            return cli_usage_error("%s %s: expected %s", a, v, said);
        }
        *(const char **)f->dst = v;
        break;
    case CLI_LIST:
    case CLI_ARGS:
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
        return cli_parse_real(a, v, f->real_lo, f->real_hi, f->real_lo_open, (double *)f->dst) ? 2 : 0;
    case CLI_DURATION:
        return cli_parse_duration(a, v, (double *)f->dst) ? 2 : 0;
    case CLI_SIZE:
        if (cli_parse_size(a, v, (uint64_t)f->lo, (uint64_t)f->hi, &sz)) return 2;
        *(uint64_t *)f->dst = sz;
        break;
    }
    return 0;
}

int cli_parse_flags(const char *cmd, int argc, char **argv, const cli_flag *flags, int n_flags, int *help)
{
    *help = 0;
    const cli_flag *rest = NULL;   /* where arguments that are not options go */
    for (int k = 0; k < n_flags; k++)
        if (flags[k].kind == CLI_ARGS)
            rest = &flags[k];
    int only_args = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (rest && (only_args || a[0] != '-' || !a[1])) {
            if (set_value(rest, a)) return 2;
            continue;
        }
        if (rest && !strcmp(a, "--")) {
            only_args = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return 0;
        }
        const cli_flag *f = find_flag(a, flags, n_flags, &v);
        if (!f)
            return cli_usage_error("%s: unknown option (see tempo %s --help)", a, cmd);
        if (!v && f->kind != CLI_SWITCH) {
            if (i + 1 >= argc)
                return cli_usage_error("%s: missing value (see tempo %s --help)", a, cmd);
            v = argv[++i];
        }
        if (set_value(f, v))
            return 2;
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
