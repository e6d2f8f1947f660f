/* chip.c - the chip-profile reader (see chip.h). Only parsing and checks;
 * no modelling. */
#include "plan/chip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_info.h"
#include "core/fileio.h"
#include "core/number.h"
#include "plan/kv_lines.h"

#define CHIP_MAX_FILE (1 << 20)
#define CHIP_MAX_TFLOPS 1e7   /* 10 EFLOP/s: far above any single chip */
#define CHIP_MAX_GB 1e7

/* Which keys were seen (duplicates, required ones). */
typedef struct {
    int name, kind, dtype, fp32, bf16, fp8, memory, bandwidth, sram, cores, link, latency;
    int eff_compute, eff_memory, call_overhead, step_overhead, efficiencies;
    int eff_op[OP_COUNT];
    double eff_compute_v, eff_memory_v;
} chip_seen;

const char *chip_default_file(void)
{
    cpu_info ci = {0};
    cpu_info_query_features(&ci);
    cpu_kernel_path path = cpu_kernel_path_select(&ci);
    if (path != CPU_KERNELS_AVX512)
        return "chips/cpu-avx2-2core.conf";
    /* AVX-512 on 256-bit pipes with AVX-512 BF16 (Zen 4): measured training as the default
     * does there, with bf16 products */
    if (!ci.fma512_full && cpu_kernel_path_bf16(&ci, path))
        return "chips/cpu-zen4-2core.conf";
    return "chips/cpu-avx512-2core.conf";
}

int chip_op_is_compute(op_kind k)
{
    return k == OP_GEMM_FWD || k == OP_GEMM_BWD || k == OP_ATTN_FWD || k == OP_ATTN_BWD || k == OP_HEAD ||
           k == OP_OPTIMIZER;
}

static int set_text(char *dst, size_t n, const char *value, const char *where, const char *key, tempo_error *err)
{
    if (!*value || strlen(value) >= n)
        return tempo_usage(err, "%s: %s: empty or longer than %zu characters", where, key, n - 1);
    memcpy(dst, value, strlen(value) + 1);
    return 0;
}

static int set_real(double *dst, const char *value, double lo, double hi, int lo_open, const char *where,
                    const char *key, tempo_error *err)
{
    tempo_error e;
    if (number_parse_real(key, value, lo, hi, lo_open, dst, &e))
        return tempo_usage(err, "%s: %s", where, e.msg);
    return 0;
}

static int parse_text(chip_profile *c, chip_seen *s, const char *text, size_t len, const char *path,
                      int allow_include, tempo_error *err);

/* The `efficiencies = FILE` key: FILE relative to the chip file's folder. */
static int include_file(chip_profile *c, chip_seen *s, const char *value, const char *path, const char *where,
                        tempo_error *err)
{
    char full[1200];
    const char *slash = strrchr(path, '/');
    if (value[0] == '/' || !slash)
        snprintf(full, sizeof full, "%s", value);
    else
        snprintf(full, sizeof full, "%.*s/%s", (int)(slash - path), path, value);
    char *text;
    size_t len;
    tempo_error e;
    if (file_read_all(full, &text, &len, CHIP_MAX_FILE, &e))
        return tempo_usage(err, "%s: efficiencies: %s", where, e.msg);
    int rc = parse_text(c, s, text, len, full, 0, err);
    free(text);
    return rc;
}

#define ONCE(flag)                                                             \
    do {                                                                       \
        if (flag)                                                              \
            return tempo_usage(err, "%s: %s given twice", where, key);         \
        flag = 1;                                                              \
    } while (0)

static int set_key(chip_profile *c, chip_seen *s, const char *key, const char *value, const char *path,
                   const char *where, int allow_include, tempo_error *err)
{
    if (!strcmp(key, "name")) {
        ONCE(s->name);
        return set_text(c->name, sizeof c->name, value, where, key, err);
    }
    if (!strcmp(key, "kind")) {
        ONCE(s->kind);
        if (strcmp(value, "cpu") && strcmp(value, "gpu") && strcmp(value, "accelerator"))
            return tempo_usage(err, "%s: kind: '%s' (use cpu, gpu or accelerator)", where, value);
        return set_text(c->kind, sizeof c->kind, value, where, key, err);
    }
    if (!strcmp(key, "train_dtype")) {
        ONCE(s->dtype);
        if (strcmp(value, "fp32") && strcmp(value, "bf16") && strcmp(value, "fp8"))
            return tempo_usage(err, "%s: train_dtype: '%s' (use fp32, bf16 or fp8)", where, value);
        return set_text(c->train_dtype, sizeof c->train_dtype, value, where, key, err);
    }
    struct {
        const char *key;
        double *dst;
        int *seen;
        double lo, hi;
        int lo_open;
    } reals[] = {
        {"peak_tflops_fp32", &c->peak_tflops_fp32, &s->fp32, 0, CHIP_MAX_TFLOPS, 1},
        {"peak_tflops_bf16", &c->peak_tflops_bf16, &s->bf16, 0, CHIP_MAX_TFLOPS, 1},
        {"peak_tflops_fp8", &c->peak_tflops_fp8, &s->fp8, 0, CHIP_MAX_TFLOPS, 1},
        {"memory_gb", &c->memory_gb, &s->memory, 0, CHIP_MAX_GB, 1},
        {"bandwidth_gbs", &c->bandwidth_gbs, &s->bandwidth, 0, CHIP_MAX_GB, 1},
        {"sram_mib", &c->sram_mib, &s->sram, 0, CHIP_MAX_GB, 1},
        {"link_gbs", &c->link_gbs, &s->link, 0, CHIP_MAX_GB, 1},
        {"link_latency_us", &c->link_latency_us, &s->latency, 0, 1e6, 1},
        {"eff_compute", &s->eff_compute_v, &s->eff_compute, 0, 1, 1},
        {"eff_memory", &s->eff_memory_v, &s->eff_memory, 0, 1, 1},
        {"call_overhead_us", &c->call_overhead_us, &s->call_overhead, 0, 1e6, 0},
        {"step_overhead_ms", &c->step_overhead_ms, &s->step_overhead, 0, 1e6, 0},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        if (!strcmp(key, reals[i].key)) {
            ONCE(*reals[i].seen);
            return set_real(reals[i].dst, value, reals[i].lo, reals[i].hi, reals[i].lo_open, where, key, err);
        }
    if (!strcmp(key, "cores")) {
        ONCE(s->cores);
        long long v;
        tempo_error e;
        if (number_parse_int(key, value, 1, 1 << 20, &v, &e))
            return tempo_usage(err, "%s: %s", where, e.msg);
        c->cores = (int)v;
        return 0;
    }
    if (!strncmp(key, "eff.", 4)) {
        for (int k = 0; k < OP_COUNT; k++)
            if (!strcmp(key + 4, op_kind_name((op_kind)k))) {
                ONCE(s->eff_op[k]);
                return set_real(&c->eff[k], value, 0, 1, 1, where, key, err);
            }
        return tempo_usage(err, "%s: %s: no such op (use the names of tempo bench train's \"ops\")", where, key);
    }
    if (!strcmp(key, "efficiencies")) {
        if (!allow_include)
            return tempo_usage(err, "%s: efficiencies: not allowed here (one level of files)", where);
        ONCE(s->efficiencies);
        return include_file(c, s, value, path, where, err);
    }
    return tempo_usage(err, "%s: unknown key '%s'", where, key);
}

/* One file's pairs into c (kv_lines_each's callback). */
typedef struct {
    chip_profile *c;
    chip_seen *s;
    const char *path;
    int allow_include;
} chip_file;

static int chip_line(void *ctx, const char *key, char *value, const char *where, tempo_error *err)
{
    chip_file *f = ctx;
    return set_key(f->c, f->s, key, value, f->path, where, f->allow_include, err);
}

static int parse_text(chip_profile *c, chip_seen *s, const char *text, size_t len, const char *path,
                      int allow_include, tempo_error *err)
{
    chip_file f = {c, s, path ? path : "chip", allow_include};
    return kv_lines_each(text, len, f.path, chip_line, &f, err);
}

int chip_parse(chip_profile *c, const char *text, size_t len, const char *path, tempo_error *err)
{
    memset(c, 0, sizeof *c);
    chip_seen s;
    memset(&s, 0, sizeof s);
    const char *name = path ? path : "chip";
    if (parse_text(c, &s, text, len, path, path != NULL, err))
        return -1;
    struct {
        int seen;
        const char *key;
    } required[] = {{s.name, "name"},           {s.dtype, "train_dtype"},     {s.memory, "memory_gb"},
                    {s.bandwidth, "bandwidth_gbs"}, {s.sram, "sram_mib"},   {s.cores, "cores"},
                    {s.link, "link_gbs"},       {s.eff_compute, "eff_compute"}, {s.eff_memory, "eff_memory"}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].seen)
            return tempo_usage(err, "%s: missing %s", name, required[i].key);
    if (!strcmp(c->train_dtype, "fp32")) {
        c->peak_tflops = c->peak_tflops_fp32;
        c->dtype_bytes = 4;
    } else if (!strcmp(c->train_dtype, "bf16")) {
        c->peak_tflops = c->peak_tflops_bf16;
        c->dtype_bytes = 2;
    } else {
        c->peak_tflops = c->peak_tflops_fp8;
        c->dtype_bytes = 1;
    }
    if (!(c->peak_tflops > 0))
        return tempo_usage(err, "%s: missing peak_tflops_%s (the peak of train_dtype)", name, c->train_dtype);
    if (!s.kind)
        snprintf(c->kind, sizeof c->kind, "%s", "accelerator");
    for (int k = 0; k < OP_COUNT; k++)
        if (!s.eff_op[k])
            c->eff[k] = chip_op_is_compute((op_kind)k) ? s.eff_compute_v : s.eff_memory_v;
    return 0;
}

int chip_load(chip_profile *c, const char *path, tempo_error *err)
{
    char *text;
    size_t len;
    tempo_error e;
    if (file_read_all(path, &text, &len, CHIP_MAX_FILE, &e))
        return tempo_usage(err, "chip %s", e.msg);
    int rc = chip_parse(c, text, len, path, err);
    free(text);
    return rc;
}
