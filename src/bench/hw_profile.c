/* hw_profile.c - building, writing and reading the hardware profile (see
 * hw_profile.h); parsing is core/json.h's, unknown keys are ignored. */
#include "bench/hw_profile.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/peak.h"
#include "bench/sysload.h"
#include "core/cpu_info.h"
#include "core/fileio.h"
#include "core/json.h"

/* ---- measuring ---- */

int hw_physical_cores(int fallback)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return fallback;
    enum { MAX = 1024 };
    _Static_assert(CPU_SETSIZE <= MAX, "room for every CPU of a mask");
    long seen[MAX];   /* package << 20 | core of each physical core found */
    int n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        long id[2];
        static const char *const file[2] = {"physical_package_id", "core_id"};
        for (int k = 0; k < 2; k++) {
            char path[96];
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, file[k]);
            FILE *f = fopen(path, "r");
            int ok = f && fscanf(f, "%ld", &id[k]) == 1 && id[k] >= 0 && id[k] < (1L << 20);
            if (f)
                fclose(f);
            if (!ok)
                return fallback;
        }
        long key = id[0] << 20 | id[1];
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = seen[i] == key;
        if (!dup)
            seen[n++] = key;
    }
    return n > 0 ? n : fallback;
}

int hw_profile_scaling_short(const hw_profile *p, int physical)
{
    const hw_point *one = NULL, *most = NULL;
    for (int i = 0; i < p->n_peak; i++) {
        const hw_point *q = &p->peak_gflops[i];
        if (q->threads == 1)
            one = q;
        if (!most || q->threads > most->threads)
            most = q;
    }
    if (!one || !most || most->threads <= 1 || !(one->value > 0))
        return 0;
    int cores = most->threads < physical ? most->threads : physical;
    return cores > 1 && most->value < HW_PEAK_SCALING_MIN * cores * one->value;
}

static void add_point(hw_point *pts, int *n, int threads, double value)
{
    if (*n < HW_PROFILE_MAX_POINTS)
        pts[(*n)++] = (hw_point){threads, value};
}

int hw_profile_measure(hw_profile *p, const hw_measure_options *o, tempo_error *err)
{
    memset(p, 0, sizeof *p);
    cpu_info ci;
    cpu_info_query(&ci);
    cpu_kernel_path path = cpu_kernel_path_select(&ci);
    p->cores = ci.cores;
    p->l1d_bytes = ci.l1d_bytes;
    p->l2_bytes = ci.l2_bytes;
    p->l3_bytes = ci.l3_bytes;
    snprintf(p->cpu, sizeof p->cpu, "%s", ci.model);
    p->avx2 = ci.avx2;
    p->fma = ci.fma;
    p->f16c = ci.f16c;
    snprintf(p->kernels, sizeof p->kernels, "%s", cpu_kernel_path_name(path));

    int counts[2] = {1, ci.cores};
    int n_counts = ci.cores > 1 ? 2 : 1;
    double fma_s = o->bandwidth ? 0.15 * o->seconds : 0.5 * o->seconds;
    double triad_s = 0.35 * o->seconds;

    sysload_sample start;
    sysload_sample_now(&start);
    for (int i = 0; i < n_counts; i++)
        add_point(p->peak_gflops, &p->n_peak, counts[i],
                  peak_fma_gflops(path, counts[i], fma_s));
    for (int i = 0; cpu_kernel_path_bf16(&ci, path) && i < n_counts; i++)
        add_point(p->peak_bf16_gflops, &p->n_peak_bf16, counts[i], peak_bf16_gflops(counts[i], fma_s));
    if (o->bandwidth) {
        peak_triad_arrays t;
        if (peak_triad_alloc(&t, o->triad_array_bytes, ci.cores, err))
            return -1;
        for (int i = 0; i < n_counts; i++)
            add_point(p->bandwidth_gbs, &p->n_bandwidth, counts[i],
                      peak_triad_gbs(&t, counts[i], triad_s));
        peak_triad_free(&t);
    }
    sysload_report load;
    sysload_since(&start, &load);
    p->seconds = load.wall_s;
    p->other_load_cores = load.other_cores;
    p->contended = load.contended || hw_profile_scaling_short(p, hw_physical_cores(ci.cores));

    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(p->measured_at, sizeof p->measured_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return 0;
}

/* ---- writing ---- */

/* {"<threads>": value, ...} */
static void points_json(jsonw *w, const char *key, const hw_point *pts, int n)
{
    jsonw_key(w, key);
    jsonw_object_begin(w);
    for (int i = 0; i < n; i++) {
        char t[16];
        snprintf(t, sizeof t, "%d", pts[i].threads);
        jsonw_field_number(w, t, pts[i].value);
    }
    jsonw_object_end(w);
}

void hw_profile_write(jsonw *w, const hw_profile *p)
{
    jsonw_object_begin(w);
    points_json(w, "peak_gflops", p->peak_gflops, p->n_peak);
    points_json(w, "peak_bf16_gflops", p->peak_bf16_gflops, p->n_peak_bf16);
    points_json(w, "bandwidth_gbs", p->bandwidth_gbs, p->n_bandwidth);
    jsonw_field_int(w, "cores", p->cores);
    jsonw_field_int(w, "l1d_bytes", p->l1d_bytes);
    jsonw_field_int(w, "l2_bytes", p->l2_bytes);
    jsonw_field_int(w, "l3_bytes", p->l3_bytes);
    jsonw_field_string(w, "cpu", p->cpu);
    jsonw_field_bool(w, "avx2", p->avx2);
    jsonw_field_bool(w, "fma", p->fma);
    jsonw_field_bool(w, "f16c", p->f16c);
    jsonw_field_string(w, "kernels", p->kernels);
    jsonw_field_string(w, "measured_at", p->measured_at);
    jsonw_field_number(w, "seconds", p->seconds);
    jsonw_field_number(w, "other_load_cores", p->other_load_cores);
    jsonw_field_bool(w, "contended", p->contended);
    jsonw_object_end(w);
}

int hw_profile_to_json(const hw_profile *p, strbuf *out, tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, out);
    hw_profile_write(&w, p);
    return jsonw_finish(&w, err);
}

/* ---- reading ---- */

/* {"<threads>": number, ...} into pts; absent is fine (n = 0). */
static int read_points(const json_value *obj, const char *key, hw_point *pts, int *n,
                       tempo_error *err)
{
    *n = 0;
    const json_value *v = json_get(obj, key);
    if (!v)
        return 0;
    if (v->type != JSON_OBJECT)
        return tempo_fail(err, "%s: not an object", key);
    for (size_t i = 0; i < v->n; i++) {
        char *end;
        long t = strtol(v->keys[i], &end, 10);
        if (end == v->keys[i] || *end || t < 1 || t > 1 << 20)
            return tempo_fail(err, "%s: thread count '%s' is not a positive integer", key, v->keys[i]);
        if (v->items[i].type != JSON_NUMBER || !(v->items[i].number > 0))
            return tempo_fail(err, "%s.%s: not a positive number", key, v->keys[i]);
        for (int j = 0; j < *n; j++)
            if (pts[j].threads == (int)t)
                return tempo_fail(err, "%s: thread count %ld given twice", key, t);
        add_point(pts, n, (int)t, v->items[i].number);
    }
    return 0;
}

static int read_bool(const json_value *obj, const char *key, int *out, tempo_error *err)
{
    const json_value *v = json_get(obj, key);
    *out = 0;
    if (!v)
        return 0;
    if (v->type != JSON_BOOL)
        return tempo_fail(err, "%s: not true or false", key);
    *out = v->boolean;
    return 0;
}

/* An integer in [lo, hi], else dflt (absent, fractional, or out of range: a
 * damaged file; checked before any cast, which would be undefined beyond
 * the type's range). */
static long long read_count(const json_value *obj, const char *key, long long lo, long long hi, long long dflt)
{
    double x = json_get_number(obj, key, NAN);
    return x >= (double)lo && x <= (double)hi && x == floor(x) ? (long long)x : dflt;
}

static void read_string(const json_value *obj, const char *key, char *out, size_t n)
{
    const char *s = json_get_string(obj, key);
    snprintf(out, n, "%s", s ? s : "");
}

int hw_profile_from_json(hw_profile *p, const char *text, size_t len, tempo_error *err)
{
    memset(p, 0, sizeof *p);
    json_value *root;
    if (json_parse(text, len, &root, err))
        return -1;
    int rc = -1;
    if (root->type != JSON_OBJECT) {
        tempo_fail(err, "not a JSON object");
        goto done;
    }
    if (read_points(root, "peak_gflops", p->peak_gflops, &p->n_peak, err) ||
        read_points(root, "peak_bf16_gflops", p->peak_bf16_gflops, &p->n_peak_bf16, err) ||
        read_points(root, "bandwidth_gbs", p->bandwidth_gbs, &p->n_bandwidth, err) ||
        read_bool(root, "avx2", &p->avx2, err) || read_bool(root, "fma", &p->fma, err) ||
        read_bool(root, "f16c", &p->f16c, err) || read_bool(root, "contended", &p->contended, err))
        goto done;
    if (p->n_peak < 1) {
        tempo_fail(err, "peak_gflops: missing or empty");
        goto done;
    }
    p->cores = (int)read_count(root, "cores", 1, 1 << 20, 1);
    p->l1d_bytes = (long)read_count(root, "l1d_bytes", 0, 1LL << 40, 0);
    p->l2_bytes = (long)read_count(root, "l2_bytes", 0, 1LL << 40, 0);
    p->l3_bytes = (long)read_count(root, "l3_bytes", 0, 1LL << 40, 0);
    p->seconds = json_get_number(root, "seconds", 0);
    p->other_load_cores = json_get_number(root, "other_load_cores", 0);
    read_string(root, "cpu", p->cpu, sizeof p->cpu);
    read_string(root, "kernels", p->kernels, sizeof p->kernels);
    read_string(root, "measured_at", p->measured_at, sizeof p->measured_at);
    rc = 0;
done:
    json_free(root);
    return rc;
}

int hw_profile_load(hw_profile *p, const char *path, tempo_error *err)
{
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 1 << 20, err))
        return -1;
    int rc = hw_profile_from_json(p, text, len, err);
    free(text);
    if (rc)
        return tempo_error_prefix(err, path);
    return 0;
}

int hw_profile_save(const hw_profile *p, const char *path, tempo_error *err)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (dir_create(dir, err))
            return -1;
    }
    strbuf sb = {0};
    if (hw_profile_to_json(p, &sb, err)) {
        strbuf_free(&sb);
        return tempo_error_prefix(err, path);
    }
    strbuf_puts(&sb, "\n");
    if (sb.oom) {
        strbuf_free(&sb);
        return tempo_fail(err, "%s: out of memory", path);
    }
    int rc = file_write_atomic(path, sb.data, sb.len, err);
    strbuf_free(&sb);
    return rc;
}

int hw_profile_path(char *out, size_t n, tempo_error *err)
{
    const char *env = getenv("TEMPO_HW_PROFILE");
    int w;
    if (env && *env)
        w = snprintf(out, n, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && *env)
        w = snprintf(out, n, "%s/tempo/hardware.json", env);
    else if ((env = getenv("HOME")) && *env)
        w = snprintf(out, n, "%s/.cache/tempo/hardware.json", env);
    else
        return tempo_fail(err, "hardware profile: neither TEMPO_HW_PROFILE, XDG_CACHE_HOME nor HOME is set");
    if (w < 0 || (size_t)w >= n)
        return tempo_fail(err, "hardware profile: path too long");
    return 0;
}

int hw_profile_fits_here(const hw_profile *p)
{
    cpu_info ci;
    cpu_info_query(&ci);
    cpu_kernel_path path = cpu_kernel_path_select(&ci);
    /* a profile from before the bf16 peak was measured lacks it: measure again */
    return !strcmp(p->kernels, cpu_kernel_path_name(path)) &&
           (p->n_peak_bf16 > 0) == cpu_kernel_path_bf16(&ci, path) &&
           p->cores == ci.cores && p->l1d_bytes == ci.l1d_bytes && p->l2_bytes == ci.l2_bytes &&
           p->l3_bytes == ci.l3_bytes && !strcmp(p->cpu, ci.model);
}

int hw_profile_load_or_measure(hw_profile *p, tempo_error *err)
{
    char path[1024];
    int have_path = hw_profile_path(path, sizeof path, NULL) == 0;
    hw_profile cached;
    int have_cached = 0;
    if (have_path && path_exists(path)) {
        if (hw_profile_load(&cached, path, err))
            return -1;
        if (hw_profile_fits_here(&cached)) {
            if (!cached.contended && !hw_profile_scaling_short(&cached, hw_physical_cores(cached.cores))) {
                *p = cached;
                return 0;
            }
            have_cached = 1;   /* measured under load: too low a peak; measure again */
        }
    }
    hw_measure_options o = {.seconds = 0.5, .bandwidth = 0};
    if (hw_profile_measure(p, &o, err))
        return -1;
    /* under load again: load only lowers a peak, so the higher of the two stands (still marked contended) */
    if (have_cached && p->contended && hw_profile_peak_gflops(&cached, 0) >= hw_profile_peak_gflops(p, 0)) {
        *p = cached;
        return 0;
    }
    if (have_path)
        hw_profile_save(p, path, NULL);
    return 0;
}

/* A peak at `threads` from measured points (see hw_profile_peak_gflops). */
static double peak_at(const hw_point *pts, int n, int threads)
{
    if (n < 1)
        return 0;
    const hw_point *low = &pts[0];
    double top = 0;
    for (int i = 0; i < n; i++) {
        const hw_point *q = &pts[i];
        if (q->threads == threads)
            return q->value;
        if (q->threads < low->threads)
            low = q;
        if (q->value > top)
            top = q->value;
    }
    if (threads < 1)
        return top;
    double est = low->value / low->threads * threads;
    return est < top ? est : top;
}

double hw_profile_peak_gflops(const hw_profile *p, int threads)
{
    return peak_at(p->peak_gflops, p->n_peak, threads);
}

double hw_profile_matrix_gflops(const hw_profile *p, int threads, int bf16)
{
    return bf16 && p->n_peak_bf16 > 0 ? peak_at(p->peak_bf16_gflops, p->n_peak_bf16, threads)
                                      : hw_profile_peak_gflops(p, threads);
}

double hw_profile_bandwidth_gbs(const hw_profile *p, int threads)
{
    double best = 0;
    int best_threads = 0;
    for (int i = 0; i < p->n_bandwidth; i++) {
        const hw_point *q = &p->bandwidth_gbs[i];
        if (q->threads == threads)
            return q->value;
        if (q->threads < threads && q->threads > best_threads) {
            best = q->value;
            best_threads = q->threads;
        }
    }
    return best;
}
