/* calibrate_gpu.c - a GPU's per-op measurement from a `bench train --device
 * cuda` line (see calibrate_gpu.h). */
#include "plan/calibrate_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "run/run_config.h"

/* the op each kernel (by name prefix) or product label belongs to */
static const struct {
    const char *prefix;
    op_kind op;
} owners[] = {
    {"embedding_", OP_EMBEDDING}, {"rmsnorm_", OP_NORM},           {"gemm_fwd", OP_GEMM_FWD},
    {"gemm_bwd", OP_GEMM_BWD},    {"convert_f32_bf16", OP_GEMM_BWD}, /* the bf16 operands of the backward */
    {"gemm_head", OP_HEAD},       {"ce_rows_", OP_HEAD},           {"attn_fwd", OP_ATTN_FWD},
    {"attn_dkdv", OP_ATTN_BWD},   {"attn_dq", OP_ATTN_BWD},        {"attn_delta", OP_ATTN_BWD},
    {"rope_", OP_ROPE},           {"relu2_", OP_ACTIVATION},       {"swiglu_", OP_ACTIVATION},
    {"sum_", OP_GRAD_NORM},       {"adamw", OP_OPTIMIZER},         {"muon_", OP_OPTIMIZER},
    {"ns_", OP_OPTIMIZER},        {"gemm_optimizer", OP_OPTIMIZER}, {"scale_f32", OP_OPTIMIZER},
};

static int owner_of(const char *kernel)
{
    for (size_t i = 0; i < sizeof owners / sizeof *owners; i++)
        if (!strncmp(kernel, owners[i].prefix, strlen(owners[i].prefix)))
            return (int)owners[i].op;
    return -1;
}

static int number(const json_value *v, const char *key, double *out, const char *what, tempo_error *err)
{
    const json_value *x = json_get(v, key);
    if (!x || x->type != JSON_NUMBER || !isfinite(x->number))
        return tempo_fail(err, "%s: no number \"%s\" in the bench line", what, key);
    *out = x->number;
    return 0;
}

/* the run config the line describes (the fields bench_train_cuda_write puts there) */
static int config_of(const json_value *v, run_config *cfg, const char *what, tempo_error *err)
{
    run_config_defaults(cfg);
    double d[10];
    const char *keys[10] = {"d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "context", "vocab", "batch",
                            "micro_batch", "qk_norm"};
    for (int i = 0; i < 10; i++) {
        if (number(v, keys[i], &d[i], what, err))
            return -1;
        if (!(d[i] >= 0 && d[i] <= (1 << 30)) || d[i] != floor(d[i]))
            return tempo_fail(err, "%s: \"%s\" %g is not a whole number in 0..2^30", what, keys[i], d[i]);
    }
    model_config *m = &cfg->model;
    m->d_model = (int)d[0];
    m->n_layers = (int)d[1];
    m->n_heads = (int)d[2];
    m->n_kv_heads = (int)d[3];
    m->d_ff = (int)d[4];
    m->context = (int)d[5];
    m->vocab_size = (int)d[6];
    cfg->batch_size = (int)d[7];
    cfg->micro_batch = (int)d[8];
    m->qk_norm = d[9] != 0;
    const char *mlp = json_get_string(v, "mlp"), *opt = json_get_string(v, "optimizer");
    const char *preset = json_get_string(v, "preset");
    if (!mlp || !opt || (strcmp(mlp, "relu2") && strcmp(mlp, "swiglu")) || (strcmp(opt, "muon") && strcmp(opt, "adamw")))
        return tempo_fail(err, "%s: the bench line lacks \"mlp\" (relu2|swiglu) or \"optimizer\" (muon|adamw)", what);
    m->mlp = !strcmp(mlp, "swiglu") ? MLP_SWIGLU : MLP_RELU2;
    cfg->optim.use_muon = !strcmp(opt, "muon");
    snprintf(cfg->preset, sizeof cfg->preset, "%s/%s", preset ? preset : "?", opt);
    return run_config_finish(cfg, err);
}

int calibrate_gpu_measurement(const char *json_line, size_t len, const char *what, const chip_profile *chip,
                              throughput_measurement *m, tempo_error *err)
{
    memset(m, 0, sizeof *m);
    json_value *v = NULL;
    if (json_parse(json_line, len, &v, err))
        return tempo_error_prefix(err, what);
    int rc = -1;
    const char *bench = json_get_string(v, "bench"), *device = json_get_string(v, "device");
    const json_value *ms = json_get(v, "kernels_ms"), *calls = json_get(v, "kernel_calls");
    run_config cfg;
    step_prediction p;
    double step_ms = 0, tps = 0;
    if (!bench || strcmp(bench, "train") || !device || strcmp(device, "cuda") || !ms || ms->type != JSON_OBJECT ||
        !calls || calls->type != JSON_OBJECT) {
        tempo_fail(err, "%s: not a `tempo bench train --device cuda` line with kernels_ms and kernel_calls", what);
        goto done;
    }
    if (number(v, "step_ms", &step_ms, what, err) || number(v, "tokens_per_s", &tps, what, err) ||
        config_of(v, &cfg, what, err) || throughput_predict(&cfg, chip, 1, &p, err))
        goto done;
    /* the wait the profile adds to each call: its excess over the unprofiled step, spread evenly */
    double total_ms = 0, total_calls = 0;
    for (size_t i = 0; i < ms->n; i++) {
        const json_value *c = json_get(calls, ms->keys[i]);
        if (ms->items[i].type != JSON_NUMBER || !c || c->type != JSON_NUMBER) {
            tempo_fail(err, "%s: kernel %s has no time or no call count", what, ms->keys[i]);
            goto done;
        }
        total_ms += ms->items[i].number;
        total_calls += c->number;
    }
    double wait_ms = total_calls > 0 ? fmax(0, (total_ms - step_ms) / total_calls) : 0;
    double covered = 0;
    for (size_t i = 0; i < ms->n; i++) {
        if (!strcmp(ms->keys[i], "gemm")) { /* unlabelled products (a profile before the labels): */
            double c = json_get(calls, ms->keys[i])->number;  /* shared by the FLOPs of the ops that run them */
            double t = fmax(0, ms->items[i].number - c * wait_ms) * 1e-3;
            op_kind ks[4] = {OP_GEMM_FWD, OP_GEMM_BWD, OP_HEAD, OP_OPTIMIZER};
            double f = 0;
            for (int j = 0; j < 4; j++)
                f += p.flops[ks[j]];
            for (int j = 0; f > 0 && j < 4; j++)
                m->measured_s[ks[j]] += t * p.flops[ks[j]] / f;
            covered += t;
            continue;
        }
        int op = owner_of(ms->keys[i]);
        if (op < 0) {
            tempo_fail(err, "%s: kernel %s belongs to no op of the planner (plan/calibrate_gpu.c)", what, ms->keys[i]);
            goto done;
        }
        double c = json_get(calls, ms->keys[i])->number;
        double t = fmax(0, ms->items[i].number - c * wait_ms) * 1e-3;
        m->measured_s[op] += t;
        covered += t;
    }
    snprintf(m->preset, sizeof m->preset, "%s", cfg.preset);
    m->measured_tokens_per_s = tps;
    m->predicted_tokens_per_s = p.tokens_per_s;
    for (int k = 0; k < OP_COUNT; k++) {
        m->roofline_s[k] = p.roofline_s[k];
        m->calls[k] = p.calls[k];
    }
    m->optimizer_stream_roofline_s = p.optimizer_stream_s * chip->eff[OP_GRAD_NORM];
    m->measured_s[OP_COUNT] = fmax(0, step_ms * 1e-3 - covered);
    rc = 0;
done:
    json_free(v);
    return rc;
}

int calibrate_gpu_file(const char *path, const chip_profile *chip, throughput_measurement *m, tempo_error *err)
{
    char *text;
    size_t len;
    if (file_read_all(path, &text, &len, 64u << 20, err))
        return -1;
    const char *line = NULL; /* the last line holding a GPU training benchmark */
    size_t line_len = 0;
    for (char *l = text; l < text + len;) {
        char *e = memchr(l, '\n', (size_t)(text + len - l));
        size_t ll = e ? (size_t)(e - l) : (size_t)(text + len - l);
        if (memmem(l, ll, "\"kernels_ms\"", 12)) {
            line = l;
            line_len = ll;
        }
        l += ll + 1;
    }
    int rc = line ? calibrate_gpu_measurement(line, line_len, path, chip, m, err)
                  : tempo_fail(err, "%s: no `tempo bench train --device cuda` line", path);
    free(text);
    return rc;
}
