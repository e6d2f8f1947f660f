/* model_step.c - throwaway figure: forward+backward tokens/s of the model on
 * the reference shape (d_model 256, 6 layers, 4 heads, context 256, batch 8,
 * vocab 4097, ReLU^2, tied head). Not built by the Makefile; never pass/fail.
 *   make build/libtempo.a && gcc -std=c11 -D_GNU_SOURCE -O3 -march=x86-64-v2 -fopenmp -Isrc \
 *     bench/model_step.c build/libtempo.a -llzma -lsqlite3 -lm -o build/model_step && \
 *     build/model_step 2 8          # threads, timed steps (after one warm-up step)
 * Prints the load average first: the machine is shared, contended runs are slow. */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

#include "core/rng.h"
#include "core/timer.h"
#include "model/model.h"

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2, steps = argc > 2 ? atoi(argv[2]) : 5;
    omp_set_num_threads(threads);
    model_config c = model_config_default(4097);
    int B = 8, T = 256, N = B * T;
    model *m;
    tempo_error err;
    if (model_create(&m, &c, B, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    model_init(m, 1);
    int32_t *tok = malloc(sizeof(int32_t) * N), *tg = malloc(sizeof(int32_t) * N);
    rng_state r;
    rng_seed(&r, 2);
    for (int i = 0; i < N; i++) {
        tok[i] = (int32_t)rng_below(&r, 4097);
        tg[i] = (int32_t)rng_below(&r, 4097);
    }
    FILE *f = fopen("/proc/loadavg", "r");
    char load[64] = "?";
    if (f) {
        if (!fgets(load, sizeof load, f))
            load[0] = 0;
        fclose(f);
    }
    printf("loadavg before: %s", load);
    double tf = 0, tb = 0, best = 1e9;
    for (int s = 0; s <= steps; s++) {
        double t0 = timer_now();
        model_forward(m, tok, tg, B, T);
        double t1 = timer_now();
        model_backward(m);
        double t2 = timer_now();
        if (s == 0)
            continue; /* warm-up */
        tf += t1 - t0;
        tb += t2 - t1;
        best = t2 - t0 < best ? t2 - t0 : best;
    }
    double step = (tf + tb) / steps, fpt = model_flops_per_token(&c, T);
    printf("threads %d: forward %.1f ms, backward %.1f ms, step %.1f ms (best %.1f): "
           "%.0f tokens/s (best %.0f), %.1f model GFLOP/s (%.1f MFLOP/token), "
           "%zu params, %.0f MiB activations\n",
           threads, 1e3 * tf / steps, 1e3 * tb / steps, 1e3 * step, 1e3 * best, N / step,
           N / best, fpt * N / step / 1e9, fpt / 1e6, model_num_params(m),
           (double)model_activation_bytes(m) / 1048576.0);
    free(tok);
    free(tg);
    model_free(m);
    return 0;
}
