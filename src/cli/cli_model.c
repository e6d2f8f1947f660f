/* cli_model.c - the model a subcommand reads, loaded from a run folder (or
 * a .safetensors or GGUF file) and, with --device cuda, attached to a GPU
 * (see cli.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "kernels/cuda/gpu.h"
#include "model/model_cuda.h"
#include "run/checkpoint.h"

int cli_load_model(const char *what, const char *model_path, int batch, const char *device, const char *precision,
                   run_config *cfg, model **m, tokenizer **tok, cli_device *d, tempo_error *err)
{
    d->g = NULL;
    d->gm = NULL;
    if (checkpoint_load_model(model_path, batch, cfg, m, tok, err))
        return -1;
    if (!device || !strcmp(device, "cpu"))
        return 0;
    int bf16 = precision && !strcmp(precision, "bf16");
    if (gpu_open(&d->g, gpu_backend_from_env(), err) ||
        model_cuda_attach_new(*m, d->g, bf16 ? MODEL_CUDA_BF16 : MODEL_CUDA_FP32, &d->gm, err)) {
        gpu_close(d->g);
        d->g = NULL;
        model_free(*m);
        tok_free(*tok);
        return -1;
    }
    fprintf(stderr, "%s: on %s (%s)\n", what, gpu_get_info(d->g)->name, bf16 ? "bf16" : "fp32");
    return 0;
}

void cli_free_model(model *m, tokenizer *tok, cli_device *d)
{
    if (d->gm)
        model_attach_device(m, NULL);
    model_cuda_free(d->gm);
    gpu_close(d->g);
    d->g = NULL;
    d->gm = NULL;
    model_free(m);
    tok_free(tok);
}
