/* icl_task.c - core_tasks.tsv and the JSON-lines task files (see
 * icl_task.h): parsing, validation, skip accounting. No tokenizing or
 * scoring here. */
#include "eval/icl_task.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"

const char *icl_type_name(icl_type t)
{
    switch (t) {
    case ICL_MULTIPLE_CHOICE: return "multiple_choice";
    case ICL_SCHEMA: return "schema";
    case ICL_LANGUAGE_MODELING: return "language_modeling";
    }
    return "unknown";
}

const char *icl_skip_name(icl_skip s)
{
    static const char *const names[ICL_SKIP_COUNT] = {
        "malformed", "gold_out_of_range", "too_few_choices", "invalid_text", "empty_continuation",
        "continuation_too_long"};
    return s >= 0 && s < ICL_SKIP_COUNT ? names[s] : "unknown";
}

int icl_text_ok(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return 0;
        }
        if (i + (size_t)len > n)
            return 0;
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += (size_t)len;
    }
    return 1;
}

/* ---- core_tasks.tsv ---- */

static int parse_int_field(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_table_line(char *line, const char *path, int lineno, icl_task_spec *t,
                            tempo_error *err)
{
    char *f[9];
    int n = 0;
    for (char *p = line; n < 9;) {
        f[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    if (n != 8)
        return tempo_fail(err, "%s:%d: %d tab-separated fields, expected 8", path, lineno, n);
    memset(t, 0, sizeof *t);
    if (!*f[0] || strlen(f[0]) >= sizeof t->label)
        return tempo_fail(err, "%s:%d: bad label", path, lineno);
    strcpy(t->label, f[0]);
    if (!*f[1] || strlen(f[1]) >= sizeof t->file || strstr(f[1], ".."))
        return tempo_fail(err, "%s:%d: bad file name '%s'", path, lineno, f[1]);
    strcpy(t->file, f[1]);
    if (!strcmp(f[2], "multiple_choice"))
        t->type = ICL_MULTIPLE_CHOICE;
    else if (!strcmp(f[2], "schema"))
        t->type = ICL_SCHEMA;
    else if (!strcmp(f[2], "language_modeling"))
        t->type = ICL_LANGUAGE_MODELING;
    else
        return tempo_fail(err, "%s:%d: unknown task type '%s' (multiple_choice, schema or language_modeling)",
                          path, lineno, f[2]);
    long v;
    if (parse_int_field(f[3], 0, 1000, &v))
        return tempo_fail(err, "%s:%d: num_fewshot '%s' is not an integer in [0, 1000]", path, lineno, f[3]);
    t->num_fewshot = (int)v;
    json_value *d = NULL;
    tempo_error je;
    if (json_parse(f[4], strlen(f[4]), &d, &je) || d->type != JSON_STRING ||
        d->string_len >= sizeof t->delimiter || !icl_text_ok(d->string, d->string_len)) {
        json_free(d);
        return tempo_fail(err, "%s:%d: continuation_delimiter %s is not a short JSON string", path, lineno, f[4]);
    }
    memcpy(t->delimiter, d->string, d->string_len + 1);
    json_free(d);
    char *end;
    double b = strtod(f[5], &end);
    if (!*f[5] || *end || !(b >= 0 && b < 100))
        return tempo_fail(err, "%s:%d: random_baseline_pct '%s' is not a number in [0, 100)", path, lineno, f[5]);
    t->random_baseline = b / 100.0;
    if (parse_int_field(f[6], 0, 1, &v) || parse_int_field(f[7], 0, 1L << 40, &v))
        return tempo_fail(err, "%s:%d: present/records must be 0/1 and a count", path, lineno);
    t->in_core = 1;
    return 0;
}

int icl_table_read(const char *tasks_dir, icl_task_spec **specs, int *n_specs, int *n_core,
                   tempo_error *err)
{
    *specs = NULL;
    *n_specs = *n_core = 0;
    char path[1100];
    path_join(path, sizeof path, tasks_dir, "core_tasks.tsv");
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 1 << 20, err))
        return -1;
    int cap = 8, n = 0, header = 0, lineno = 0, rc = 0;
    icl_task_spec *s = malloc(sizeof *s * (size_t)cap);
    if (!s) {
        free(text);
        return tempo_fail(err, "%s: out of memory", path);
    }
    for (char *p = text, *nl; !rc && p < text + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(text + len - p));
        if (!nl)
            nl = text + len;
        *nl = '\0';
        lineno++;
        if (nl > p && nl[-1] == '\r')
            nl[-1] = '\0';
        if (!*p || *p == '#')
            continue;
        if (!header) {
            if (strncmp(p, "label\t", 6))
                rc = tempo_fail(err, "%s:%d: expected the header line 'label<TAB>file<TAB>...'", path, lineno);
            header = 1;
            continue;
        }
        if (n + 2 > cap) {
            icl_task_spec *g = realloc(s, sizeof *s * (size_t)(cap *= 2));
            if (!g) {
                rc = tempo_fail(err, "%s: out of memory", path);
                break;
            }
            s = g;
        }
        rc = parse_table_line(p, path, lineno, &s[n], err);
        if (!rc) {
            for (int i = 0; i < n && !rc; i++)
                if (!strcmp(s[i].label, s[n].label))
                    rc = tempo_fail(err, "%s:%d: label '%s' appears twice", path, lineno, s[n].label);
            n++;
        }
    }
    free(text);
    if (!rc && n == 0)
        rc = tempo_fail(err, "%s: no task entries", path);
    if (rc) {
        free(s);
        return -1;
    }
    *n_core = n;
    icl_task_spec *x = &s[n++];
    memset(x, 0, sizeof *x);
    snprintf(x->label, sizeof x->label, "hellaswag_val_subset1000");
    snprintf(x->file, sizeof x->file, "%s", ICL_EXTRA_HELLASWAG_FILE);
    x->type = ICL_MULTIPLE_CHOICE;
    x->num_fewshot = 10;
    snprintf(x->delimiter, sizeof x->delimiter, " ");
    x->random_baseline = 0.25;
    x->in_core = 0;
    *specs = s;
    *n_specs = n;
    return 0;
}

/* ---- task files ---- */

typedef struct {
    icl_task_data *d;
    const char *path;
    int line;
} loader;

static int skip(loader *L, icl_skip why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Count a skipped record; remember the first as "file:line: problem". Returns 1. */
static int skip(loader *L, icl_skip why, const char *fmt, ...)
{
    L->d->skipped[why]++;
    if (!L->d->first_skip[0]) {
        char msg[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        int n = snprintf(L->d->first_skip, sizeof L->d->first_skip, "%.200s:%d: ", L->path, L->line);
        if (n > 0 && (size_t)n < sizeof L->d->first_skip)
            snprintf(L->d->first_skip + n, sizeof L->d->first_skip - (size_t)n, "%s", msg);
    }
    return 1;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* A string field: returns 0 and *out (malloc'd), 1 when skipped, -1 out of memory. */
static int get_text(loader *L, const json_value *obj, const char *key, char **out)
{
    const json_value *v = json_get(obj, key);
    if (!v || v->type != JSON_STRING)
        return skip(L, ICL_SKIP_MALFORMED, "field '%s' missing or not a string", key);
    if (!icl_text_ok(v->string, v->string_len))
        return skip(L, ICL_SKIP_TEXT, "field '%s' is not valid UTF-8 text", key);
    return (*out = dup_bytes(v->string, v->string_len)) ? 0 : -1;
}

static int get_list(loader *L, const json_value *obj, const char *key, icl_item *it)
{
    const json_value *v = json_get(obj, key);
    if (!v || v->type != JSON_ARRAY)
        return skip(L, ICL_SKIP_MALFORMED, "field '%s' missing or not a list", key);
    if (v->n < 2)
        return skip(L, ICL_SKIP_CHOICES, "'%s' has fewer than two entries", key);
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i].type != JSON_STRING)
            return skip(L, ICL_SKIP_MALFORMED, "an entry of '%s' is not a string", key);
        if (!icl_text_ok(v->items[i].string, v->items[i].string_len))
            return skip(L, ICL_SKIP_TEXT, "an entry of '%s' is not valid UTF-8 text", key);
    }
    if (v->n > 1000)
        return skip(L, ICL_SKIP_MALFORMED, "'%s' has more than 1000 entries", key);
    it->options = calloc(v->n, sizeof(char *));
    if (!it->options)
        return -1;
    it->n_options = (int)v->n;
    for (size_t i = 0; i < v->n; i++)
        if (!(it->options[i] = dup_bytes(v->items[i].string, v->items[i].string_len)))
            return -1;
    return 0;
}

static int get_gold(loader *L, const json_value *obj, icl_item *it)
{
    const json_value *v = json_get(obj, "gold");
    if (!v || v->type != JSON_NUMBER)
        return skip(L, ICL_SKIP_MALFORMED, "field '%s' missing or not a number", "gold");
    double g = v->number;
    if (!(g >= 0 && g < it->n_options && g == floor(g))) {
        char d[64];
        snprintf(d, sizeof d, "%g (%d choices)", g, it->n_options);
        return skip(L, ICL_SKIP_GOLD, "gold %s out of range", d);
    }
    it->gold = (int)g;
    return 0;
}

static int only_space_n(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!memchr(" \t\n\r\v\f", s[i], 6))
            return 0;
    return 1;
}

static void item_free(icl_item *it)
{
    free(it->text);
    free(it->continuation);
    for (int i = 0; i < it->n_options; i++)
        free(it->options[i]);
    free(it->options);
    memset(it, 0, sizeof *it);
}

/* One line -> *it. 0 valid, 1 skipped (counted), -1 out of memory. */
static int parse_record(loader *L, const char *line, size_t len, icl_type type, icl_item *it)
{
    memset(it, 0, sizeof *it);
    it->gold = -1;
    it->line = L->line;
    json_value *v = NULL;
    tempo_error je;
    if (json_parse(line, len, &v, &je))
        return skip(L, ICL_SKIP_MALFORMED, "not JSON (%s)", je.msg);
    int rc;
    if (v->type != JSON_OBJECT)
        rc = skip(L, ICL_SKIP_MALFORMED, "%s", "not a JSON object");
    else if (type == ICL_MULTIPLE_CHOICE)
        rc = get_text(L, v, "query", &it->text);
    else if (type == ICL_SCHEMA)
        rc = get_list(L, v, "context_options", it);
    else
        rc = get_text(L, v, "context", &it->text);
    if (!rc && type == ICL_MULTIPLE_CHOICE)
        rc = get_list(L, v, "choices", it);
    if (!rc && type != ICL_MULTIPLE_CHOICE)
        rc = get_text(L, v, "continuation", &it->continuation);
    if (!rc && type != ICL_LANGUAGE_MODELING)
        rc = get_gold(L, v, it);
    if (!rc && it->continuation && only_space_n(it->continuation, strlen(it->continuation)))
        rc = skip(L, ICL_SKIP_EMPTY, "%s", "the continuation is empty");
    json_free(v);
    if (rc)
        item_free(it);
    return rc;
}

int icl_task_load(const char *path, icl_type type, icl_task_data *d, tempo_error *err)
{
    memset(d, 0, sizeof *d);
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, (size_t)1 << 31, err))
        return -1;
    size_t cap = 0;
    loader L = {d, path, 0};
    int rc = 0;
    for (char *p = text, *nl; !rc && p < text + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(text + len - p));
        if (!nl)
            nl = text + len;
        L.line++;
        size_t n = (size_t)(nl - p);
        if (n && p[n - 1] == '\r')
            n--;
        if (only_space_n(p, n))
            continue;
        d->n_lines++;
        if ((size_t)d->n_items == cap) {
            cap = cap ? 2 * cap : 256;
            icl_item *g = realloc(d->items, sizeof *g * cap);
            if (!g) {
                rc = -1;
                break;
            }
            d->items = g;
        }
        int r = parse_record(&L, p, n, type, &d->items[d->n_items]);
        if (r < 0)
            rc = -1;
        else if (r == 0)
            d->n_items++;
    }
    free(text);
    if (rc) {
        icl_task_free(d);
        return tempo_fail(err, "%s: out of memory", path);
    }
    return 0;
}

void icl_task_free(icl_task_data *d)
{
    for (int i = 0; i < d->n_items; i++)
        item_free(&d->items[i]);
    free(d->items);
    memset(d, 0, sizeof *d);
}
