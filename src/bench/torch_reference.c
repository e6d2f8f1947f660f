/* torch_reference.c - see torch_reference.h. */
#include "bench/torch_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/data_path.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"

int torch_reference_find(const char *name, char *path, size_t n)
{
    if (data_path_find("scripts", name, path, n))
        return 1;
    fprintf(stderr, "bench train: --vs-torch: scripts/%s not found\n", name);
    return 0;
}

double torch_reference_run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "bench train: --vs-torch: cannot start the PyTorch reference\n");
        return -1;
    }
    char line[4096];
    double tps = -1;
    while (fgets(line, sizeof line, p)) {
        json_value *v = NULL;
        tempo_error err;
        if (json_parse(line, strlen(line), &v, &err) == 0) {
            const json_value *t = json_get(v, "tokens_per_s");
            if (t && t->type == JSON_NUMBER)
                tps = t->number;
            printf("%s", line);
            json_free(v);
        }
    }
    int status = pclose(p);
    if (status != 0 || tps <= 0) {
        fprintf(stderr, "bench train: --vs-torch: the PyTorch reference failed (exit %d)%s\n", status,
                status == 3 << 8 ? ": python3-torch is not installed, or PyTorch sees no GPU" : "");
        return -1;
    }
    return tps;
}

/* Run the reference; returns its tokens/s, or -1 (message on stderr). */
double torch_reference_cpu(const run_config *cfg, int threads, int steps, int warmup)
{
    char script[1100];
    if (!torch_reference_find("torch_reference.py", script, sizeof script))
        return -1;
    const model_config *m = &cfg->model;
    if (m->n_kv_heads != m->n_heads || m->qk_norm || m->logit_softcap > 0)
        fprintf(stderr, "bench train: note: the PyTorch reference has no GQA, QK-norm or "
                        "soft-cap; it runs the plain shape\n");
    const char *py = path_exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --d-model %d --n-layers %d --n-heads %d --d-ff %d --context %d "
             "--batch %d --vocab %d --mlp %s%s --threads %d --steps %d --warmup %d",
             py, script, m->d_model, m->n_layers, m->n_heads, m->d_ff, m->context,
             cfg->batch_size, m->vocab_size, m->mlp == MLP_SWIGLU ? "swiglu" : "relu2",
             m->tied_head ? "" : " --untied", threads, steps, warmup);
    fprintf(stderr, "bench train: running the PyTorch reference (%d threads)\n", threads);
    return torch_reference_run(cmd);
}

/* scripts/torch_reference_cuda.py's tokens/s on the same shape, or -1 */
double torch_reference_gpu(const run_config *cfg, int steps, int warmup, const char *precision)
{
    char script[1100];
    if (!torch_reference_find("torch_reference_cuda.py", script, sizeof script))
        return -1;
    const model_config *m = &cfg->model;
    if (m->n_kv_heads != m->n_heads || m->logit_softcap > 0)
        fprintf(stderr, "bench train: note: the PyTorch reference has no GQA or soft-cap; it runs the plain shape\n");
    const char *py = getenv("TEMPO_PYTHON");
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --d-model %d --n-layers %d --n-heads %d --d-ff %d --context %d --batch %d --vocab %d "
             "--mlp %s%s%s --steps %d --warmup %d --dtype %s",
             py && *py ? py : "python3", script, m->d_model, m->n_layers, m->n_heads, m->d_ff, m->context,
             cfg->batch_size, m->vocab_size, m->mlp == MLP_SWIGLU ? "swiglu" : "relu2", m->tied_head ? "" : " --untied",
             m->qk_norm ? " --qk-norm" : "", steps, warmup, precision);
    fprintf(stderr, "bench train: running the PyTorch reference\n");
    return torch_reference_run(cmd);
}
