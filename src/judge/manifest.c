/* manifest.c - strict parsing of a submission's manifest.json (see manifest.h). */
#include "judge/manifest.h"
#include "core/text.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

#define MF JUDGE_MANIFEST_FILE

static int copy_text(char *dst, size_t n, const json_value *v, const char *key, tempo_error *err)
{
    if (v->type != JSON_STRING)
        return tempo_fail(err, MF ": \"%s\" must be a string", key);
    if (v->string_len >= n)
        return tempo_fail(err, MF ": \"%s\" is too long (%zu bytes, at most %zu)", key, v->string_len, n - 1);
    if (strlen(v->string) != v->string_len)
        return tempo_fail(err, MF ": \"%s\" holds a NUL byte", key);
    memcpy(dst, v->string, v->string_len + 1);
    return 0;
}

static int get_int(const json_value *v, const char *key, long long lo, long long hi, long long *out, tempo_error *err)
{
    if (v->type != JSON_NUMBER || v->number != floor(v->number) || v->number < (double)lo || v->number > (double)hi)
        return tempo_fail(err, MF ": \"%s\" must be an integer from %lld to %lld", key, lo, hi);
    *out = (long long)v->number;
    return 0;
}

static int valid_name(const char *s)
{
    if (!isalnum((unsigned char)s[0]))
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            return 0;
    return 1;
}

static int parse_authors(judge_manifest *m, const json_value *v, tempo_error *err)
{
    if (v->type == JSON_STRING)
        return copy_text(m->authors, sizeof m->authors, v, "authors", err);
    if (v->type != JSON_ARRAY || v->n == 0)
        return tempo_fail(err, MF ": \"authors\" must be a non-empty list of names");
    strbuf sb = {0};
    for (size_t i = 0; i < v->n; i++) {
        const json_value *a = &v->items[i];
        if (a->type != JSON_STRING || a->string_len == 0 || strlen(a->string) != a->string_len) {
            strbuf_free(&sb);
            return tempo_fail(err, MF ": \"authors\" item %zu must be a non-empty string", i + 1);
        }
        if (i)
            strbuf_puts(&sb, ", ");
        strbuf_puts(&sb, a->string);
    }
    int rc = 0;
    if (sb.oom || sb.len >= sizeof m->authors)
        rc = tempo_fail(err, MF ": \"authors\" is too long (at most %zu bytes)", sizeof m->authors - 1);
    else
        memcpy(m->authors, sb.data, sb.len + 1);
    strbuf_free(&sb);
    return rc;
}

static int parse_overrides(judge_manifest *m, const json_value *v, tempo_error *err)
{
    if (v->type != JSON_OBJECT)
        return tempo_fail(err, MF ": \"overrides\" must be an object of config keys and values");
    if (v->n > JUDGE_MAX_OVERRIDES)
        return tempo_fail(err, MF ": \"overrides\": too many keys (at most %d)", JUDGE_MAX_OVERRIDES);
    for (size_t i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        if (!*k || strlen(k) != v->key_lens[i])
            return tempo_fail(err, MF ": \"overrides\": empty key");
        for (const char *p = k; *p; p++)
            if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_' && *p != '.')
                return tempo_fail(err, MF ": \"overrides\": key \"%s\" is not a config key name", k);
        const json_value *x = &v->items[i];
        strbuf val = {0};
        if (x->type == JSON_STRING)
            strbuf_append(&val, x->string, x->string_len);
        else if (x->type == JSON_NUMBER)
            strbuf_json_number(&val, x->number);
        else if (x->type == JSON_BOOL)
            strbuf_puts(&val, x->boolean ? "true" : "false");
        else {
            strbuf_free(&val);
            return tempo_fail(err, MF ": \"overrides\": \"%s\" must be a string, number or boolean", k);
        }
        int bad = val.oom || val.len == 0 || strlen(val.data) != val.len;
        for (size_t j = 0; !bad && j < val.len; j++)
            bad = (unsigned char)val.data[j] < 0x20;
        int n = bad ? -1 : text_fmt(m->overrides[m->n_overrides], JUDGE_MAX_OVERRIDE_LEN, "%s=%s", k, val.data);
        strbuf_free(&val);
        if (bad)
            return tempo_fail(err, MF ": \"overrides\": \"%s\" has an empty value or control characters", k);
        if (n >= JUDGE_MAX_OVERRIDE_LEN)
            return tempo_fail(err, MF ": \"overrides\": \"%s\" is too long", k);
        m->n_overrides++;
    }
    return 0;
}

static int parse_command(judge_manifest *m, const json_value *v, tempo_error *err)
{
    if (v->type == JSON_STRING) {
        if (v->string_len == 0)
            return tempo_fail(err, MF ": \"command\" is empty");
        if (copy_text(m->command[0], JUDGE_MAX_ARG_LEN, v, "command", err))
            return -1;
        m->n_command = 1;
        m->command_shell = 1;
        return 0;
    }
    if (v->type != JSON_ARRAY || v->n == 0)
        return tempo_fail(err, MF ": \"command\" must be a non-empty list of arguments or a shell line");
    if (v->n > JUDGE_MAX_ARGS)
        return tempo_fail(err, MF ": \"command\": too many arguments (at most %d)", JUDGE_MAX_ARGS);
    for (size_t i = 0; i < v->n; i++) {
        const json_value *a = &v->items[i];
        if (a->type != JSON_STRING)
            return tempo_fail(err, MF ": \"command\" argument %zu must be a string", i + 1);
        if (copy_text(m->command[i], JUDGE_MAX_ARG_LEN, a, "command", err))
            return -1;
    }
    if (!m->command[0][0])
        return tempo_fail(err, MF ": \"command\": the program name is empty");
    m->n_command = (int)v->n;
    return 0;
}

/* The keys that must be there, and "overrides", which needs a preset. */
typedef struct {
    int name, authors, desc, phase, overrides;
} manifest_seen;

/* The integer keys: threads, ranks, vocab, steps. 1 when k is none of them. */
static int parse_count(judge_manifest *m, const char *k, const json_value *v, tempo_error *err)
{
    long long x = 0;
    if (!strcmp(k, "threads")) {
        if (get_int(v, k, 1, 1024, &x, err))
            return -1;
        m->threads = (int)x;
    } else if (!strcmp(k, "ranks")) {
        if (get_int(v, k, 1, 256, &x, err))
            return -1;
        m->ranks = (int)x;
    } else if (!strcmp(k, "vocab")) {
        if (get_int(v, k, 256, 1 << 20, &x, err))
            return -1;
        m->vocab = (int)x;
    } else if (!strcmp(k, "steps")) {
        if (get_int(v, k, 1, 1000000000000LL, &x, err))
            return -1;
        m->steps = x;
    } else {
        return 1;
    }
    return 0;
}

/* One key of the manifest's object. */
static int parse_key(judge_manifest *m, const char *k, const json_value *v, manifest_seen *seen, tempo_error *err)
{
    long long x = 0;
    if (!strcmp(k, "name")) {
        if (copy_text(m->name, sizeof m->name, v, k, err))
            return -1;
        if (!valid_name(m->name))
            return tempo_fail(err, MF ": \"name\" must be letters, digits, '.', '_' or '-' (starting with a letter or digit)");
        seen->name = 1;
    } else if (!strcmp(k, "authors")) {
        if (parse_authors(m, v, err))
            return -1;
        seen->authors = 1;
    } else if (!strcmp(k, "description")) {
        if (copy_text(m->description, sizeof m->description, v, k, err))
            return -1;
        seen->desc = 1;
    } else if (!strcmp(k, "phase")) {
        if (get_int(v, k, 1, 2, &x, err))
            return -1;
        m->phase = (int)x;
        seen->phase = 1;
    } else if (!strcmp(k, "preset")) {
        if (copy_text(m->preset, sizeof m->preset, v, k, err))
            return -1;
        if (!valid_name(m->preset))
            return tempo_fail(err, MF ": \"preset\" must be a preset name (configs/NAME.conf), not a path");
    } else if (!strcmp(k, "overrides")) {
        if (parse_overrides(m, v, err))
            return -1;
        seen->overrides = 1;
    } else if (!strcmp(k, "command")) {
        if (parse_command(m, v, err))
            return -1;
    } else {
        int rc = parse_count(m, k, v, err);
        if (rc == 1)
            return tempo_fail(err, MF ": unknown key \"%s\" (see docs/submission.md)", k);
        return rc;
    }
    return 0;
}

/* What the keys say together: the required ones there, one of preset and command, ranks only
 * for a phase-2 preset. */
static int check_manifest(judge_manifest *m, const manifest_seen *seen, tempo_error *err)
{
    if (!seen->name || !seen->authors || !seen->desc || !seen->phase)
        return tempo_fail(err, MF ": missing \"%s\"",
                          !seen->name ? "name" : !seen->authors ? "authors" : !seen->desc ? "description" : "phase");
    if (!m->preset[0] == !m->n_command)
        return tempo_fail(err, MF ": give exactly one of \"preset\" (with optional \"overrides\") or \"command\"");
    if (seen->overrides && !m->preset[0])
        return tempo_fail(err, MF ": \"overrides\" applies to a \"preset\" only");
    if (m->ranks > 1 && (m->phase != 2 || !m->preset[0]))
        return tempo_fail(err, MF ": \"ranks\" above 1 is for a phase-2 \"preset\" submission (a command starts its own)");
    if (m->ranks < 1)
        m->ranks = 1;
    return 0;
}

int judge_manifest_parse(judge_manifest *m, const char *text, size_t len, tempo_error *err)
{
    memset(m, 0, sizeof *m);
    json_value *root;
    if (json_parse(text, len, &root, err)) {
        char msg[sizeof err->msg];
        text_fmt(msg, sizeof msg, "%s", err->msg);
        return tempo_fail(err, MF ": malformed JSON: %s", msg);
    }
    int rc = -1;
    manifest_seen seen = {0};
    if (root->type != JSON_OBJECT) {
        tempo_fail(err, MF ": must be a JSON object");
        goto done;
    }
    for (size_t i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(root->keys[j], k)) {
                tempo_fail(err, MF ": \"%s\" is given twice", k);
                goto done;
            }
        if (parse_key(m, k, &root->items[i], &seen, err))
            goto done;
    }
    rc = check_manifest(m, &seen, err);
done:
    json_free(root);
    return rc;
}

int judge_manifest_load(judge_manifest *m, const char *dir, tempo_error *err)
{
    char path[1100];
    path_join(path, sizeof path, dir, MF);
    if (!path_exists(path)) {
        memset(m, 0, sizeof *m);
        return tempo_fail(err, MF ": missing (a submission folder needs one, see docs/submission.md)");
    }
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 1 << 16, err)) {
        memset(m, 0, sizeof *m);
        char msg[sizeof err->msg];
        const char *p = strstr(err->msg, MF ":");
        text_fmt(msg, sizeof msg, "%s", p ? p : err->msg);
        return tempo_fail(err, "%s", msg);
    }
    int rc = judge_manifest_parse(m, text, len, err);
    free(text);
    return rc;
}
