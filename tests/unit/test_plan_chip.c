/* test_plan_chip.c - the planner's chip profiles and throughput model
 * (src/plan/chip.c, throughput.c): the reader and its errors, the committed
 * chip files, the default chip by the CPU's kernel path, and the model's
 * FLOP count against the model's own. */
#include "test.h"
#include "plan_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_info.h"
#include "model/model.h"
#include "plan/chip.h"
#include "plan/throughput.h"

static void test_chip_parse(void)
{
    chip_profile c;
    tempo_error err;
    CHECK(parse(good_chip, &c, &err) == 0);
    CHECK(!strcmp(c.name, "test-chip") && !strcmp(c.train_dtype, "bf16"));
    CHECK_NEAR(c.peak_tflops, 100, 0);
    CHECK_NEAR(c.dtype_bytes, 2, 0);
    CHECK_NEAR(c.eff[OP_GEMM_FWD], 0.5, 0);   /* the compute default */
    CHECK_NEAR(c.eff[OP_NORM], 0.8, 0);       /* the memory default */
    CHECK_NEAR(c.eff[OP_ATTN_BWD], 0.25, 0);  /* its own line */
    CHECK(c.cores == 100 && c.call_overhead_us == 0);
}

/* good_chip with the line starting with `key` removed or replaced. */
static void edited(char *out, size_t n, const char *key, const char *replacement)
{
    out[0] = '\0';
    const char *p = good_chip;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p) + 1;
        if (!strncmp(p, key, strlen(key)) && p[strlen(key)] == ' ')
            strncat(out, replacement, n - strlen(out) - 1);
        else
            strncat(out, p, len < n - strlen(out) - 1 ? len : n - strlen(out) - 1);
        p += len;
    }
}

static void test_chip_errors(void)
{
    const char *required[] = {"name", "train_dtype", "memory_gb", "bandwidth_gbs", "sram_mib", "cores",
                              "link_gbs", "eff_compute", "eff_memory", "peak_tflops_bf16"};
    char text[2048], want[64];
    chip_profile c;
    tempo_error err;
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        edited(text, sizeof text, required[i], "");
        tempo_error_clear(&err);
        CHECK_MSG(parse(text, &c, &err) == -1 && err.code == 2, "%s", required[i]);
        snprintf(want, sizeof want, "missing %s", required[i]);
        CHECK_MSG(strstr(err.msg, want) && strstr(err.msg, "t.conf"), "%s -> %s", required[i], err.msg);
    }
    const char *positive[] = {"memory_gb", "bandwidth_gbs", "sram_mib", "cores", "link_gbs", "peak_tflops_bf16"};
    const char *values[] = {"0", "-1", "abc", ""};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        for (size_t j = 0; j < sizeof values / sizeof values[0]; j++) {
            char line[128];
            snprintf(line, sizeof line, "%s = %s\n", positive[i], values[j]);
            edited(text, sizeof text, positive[i], line);
            tempo_error_clear(&err);
            CHECK_MSG(parse(text, &c, &err) == -1 && strstr(err.msg, positive[i]) && strstr(err.msg, "t.conf:"),
                      "%s -> %s", line, err.msg);
        }
    struct {
        const char *key, *line, *want;
    } bad[] = {
        {"eff_memory", "eff_memory = 1.5\n", "out of range"},
        {"eff.attention_bwd", "eff.attention_bwd = 0.3\neff.attention_bwd = 0.3\n", "given twice"},
        {"eff.attention_bwd", "eff.warp_drive = 0.3\n", "no such op"},
        {"kind", "kind = toaster\n", "kind"},
        {"kind", "colour = blue\n", "unknown key 'colour'"},
        {"kind", "just words\n", "expected 'key = value'"},
        {"kind", "efficiencies = x.conf\n", "efficiencies"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        edited(text, sizeof text, bad[i].key, bad[i].line);
        tempo_error_clear(&err);
        int rc = bad[i].line[0] == 'e' && !strncmp(bad[i].line, "efficiencies", 12)
                     ? chip_parse(&c, text, strlen(text), NULL, &err) /* no file: no includes */
                     : parse(text, &c, &err);
        CHECK_MSG(rc == -1 && strstr(err.msg, bad[i].want), "%s -> %s", bad[i].line, err.msg);
    }
    CHECK(chip_parse(&c, "name = a\0b\n", 11, "t.conf", &err) == -1 && strstr(err.msg, "NUL"));
    CHECK(chip_load(&c, "/nonexistent/chip.conf", &err) == -1 && strstr(err.msg, "/nonexistent/chip.conf"));
}

static void test_committed_chips(void)
{
    const char *files[] = {"configs/chips/cpu-avx2-2core.conf", "configs/chips/cpu-avx512-2core.conf",
                           "configs/chips/nvidia-h200.conf", "configs/chips/aws-trainium2.conf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        chip_profile c;
        tempo_error err;
        CHECK_MSG(chip_load(&c, files[i], &err) == 0, "%s: %s", files[i], err.msg);
        for (int k = 0; k < OP_COUNT; k++)
            CHECK_MSG(c.eff[k] > 0 && c.eff[k] <= 1, "%s eff %d", files[i], k);
    }
}

/* The default chip follows the kernel path: AVX-512 only where the CPU has it
 * and TEMPO_KERNELS does not cap it, Zen 4's where its FMAs are 256 bits wide
 * and it has AVX-512 BF16; the file it names loads. */
static void test_default_chip(void)
{
    const char *avx2 = "chips/cpu-avx2-2core.conf", *avx512 = "chips/cpu-avx512-2core.conf",
               *zen4 = "chips/cpu-zen4-2core.conf";
    cpu_info ci = {0};
    cpu_info_query_features(&ci);
    const char *saved = getenv("TEMPO_KERNELS");
    char keep[32] = "";
    if (saved)
        snprintf(keep, sizeof keep, "%s", saved);
    setenv("TEMPO_KERNELS", "avx2", 1);
    CHECK(!strcmp(chip_default_file(), avx2));
    setenv("TEMPO_KERNELS", "portable", 1);
    CHECK(!strcmp(chip_default_file(), avx2));
    setenv("TEMPO_KERNELS", "auto", 1);
    const char *want = !(ci.avx2 && ci.fma && ci.avx512f) ? avx2 : !ci.fma512_full && ci.avx512bf16 ? zen4 : avx512;
    CHECK_MSG(!strcmp(chip_default_file(), want), "%s, want %s", chip_default_file(), want);
    if (saved)
        setenv("TEMPO_KERNELS", keep, 1);
    else
        unsetenv("TEMPO_KERNELS");
    char path[256];
    snprintf(path, sizeof path, "configs/%s", chip_default_file());
    chip_profile c;
    tempo_error err;
    CHECK_MSG(chip_load(&c, path, &err) == 0, "%s: %s", path, err.msg);
}

static void test_throughput_counts(void)
{
    chip_profile chip;
    tempo_error err;
    CHECK(parse(good_chip, &chip, &err) == 0);
    run_config c = small_config();
    step_prediction p;
    CHECK(throughput_predict(&c, &chip, 1, &p, &err) == 0);
    /* the projections, attention and head are exactly the model's FLOPs per token */
    double tokens = (double)c.batch_size * c.model.context;
    double counted = p.flops[OP_GEMM_FWD] + p.flops[OP_GEMM_BWD] + p.flops[OP_ATTN_FWD] + p.flops[OP_ATTN_BWD] +
                   p.flops[OP_HEAD];
    CHECK_NEAR(counted / tokens, model_flops_per_token(&c.model, c.model.context), 1e-6 * counted / tokens);
    double sum = 0;
    for (int k = 0; k < OP_COUNT; k++)
        sum += p.seconds[k];
    CHECK_NEAR(p.step_s, sum + chip.step_overhead_ms * 1e-3, 1e-12);
    CHECK(p.allreduce_s == 0 && p.tokens_per_s > 0);
    /* twice the peak: every FLOP-bound op takes half the time */
    chip_profile fast = chip;
    fast.peak_tflops *= 2;
    step_prediction q;
    CHECK(throughput_predict(&c, &fast, 1, &q, &err) == 0);
    /* (an op may move from the FLOP-bound share to the bandwidth-bound one: Muon's Newton-Schulz
     * with the default optimizer; so the shares' sum and the step shrink, not each share) */
    CHECK(q.compute_bound_s + q.memory_bound_s < p.compute_bound_s + p.memory_bound_s && q.step_s < p.step_s);
    CHECK(q.compute_bound_s < p.compute_bound_s);
    /* two ranks: half the rows each, plus an all-reduce of the gradients */
    CHECK(throughput_predict(&c, &chip, 2, &q, &err) == 0);
    CHECK(q.allreduce_s > 0 && q.flops[OP_GEMM_FWD] == p.flops[OP_GEMM_FWD] / 2);
    CHECK(throughput_predict(&c, &chip, 3, &q, &err) == -1 && strstr(err.msg, "not divisible"));
}

int main(void)
{
    RUN(test_chip_parse);
    RUN(test_chip_errors);
    RUN(test_committed_chips);
    RUN(test_default_chip);
    RUN(test_throughput_counts);
    return test_summary("test_plan_chip");
}
