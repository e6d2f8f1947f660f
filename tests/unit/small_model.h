/* small_model.h - what the hybrid model's evaluation tests (test_icl_engine.c,
 * test_hybrid_bpb.c) share: a model small enough that its whole next-token
 * distribution comes from one forward of V copies of a sequence, and that
 * forward. Include after test.h. */
#ifndef TEMPO_TEST_SMALL_MODEL_H
#define TEMPO_TEST_SMALL_MODEL_H

#include <string.h>

#include "model/model.h"

enum { SMALL_V = 11, SMALL_T = 40 };   /* vocabulary (small: argmax matches happen) and context */

static model_config small_model_config(void)
{
    model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = SMALL_V;
    c.context = SMALL_T;
    c.d_model = 16;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.d_ff = 32;
    c.mlp = MLP_RELU2;
    c.tied_head = 1;
    c.rope_theta = 10000;
    c.norm_eps = 1e-5f;
    c.init_std = 0.5f;
    return c;
}

/* nll[t * V + v] = -ln p(v | tokens[0..t]) for t < T <= SMALL_T, by one
 * forward of V copies. */
static void small_model_full_nll(model *m, const int32_t *tokens, int T, double *nll)
{
    int V = model_get_config(m)->vocab_size;
    int32_t in[SMALL_V * SMALL_T], tg[SMALL_V * SMALL_T];
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++) {
            in[v * T + t] = tokens[t];
            tg[v * T + t] = v;
        }
    model_forward(m, in, tg, V, T);
    const float *l = model_token_losses(m);
    for (int v = 0; v < V; v++)
        for (int t = 0; t < T; t++)
            nll[t * V + v] = l[v * T + t];
}

#endif
