/* model_internal.h - the definition of struct model, shared by the files of
 * src/model only (model.c: lifecycle, layout, init; model_pass.c: forward and
 * backward). Other modules use the accessors in model.h. */
#ifndef TEMPO_MODEL_INTERNAL_H
#define TEMPO_MODEL_INTERNAL_H

#include "core/op_profile.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/lm_head.h"
#include "model/block.h"
#include "model/model.h"

struct model {
    model_config cfg;
    int max_batch;
    model_block_dims dims;      /* its gemm points at gemm below, prof at prof */
    gemm_context *gemm;         /* [n_gemm]: every GEMM of a pass goes through them (block.h) */
    int n_gemm;                 /* omp_get_max_threads() at model_create */
    gemm_packed_b xpack;        /* see model_block_dims */
    lm_head_workspace head_ws;  /* the head's packed weights (gemm = &gemm[0]) */
    op_profile *prof;           /* NULL unless profiling (model_set_profile) */
    model_grad_ready_fn grad_ready;   /* NULL unless set (model_set_grad_ready) */
    void *grad_ready_ctx;

    /* parameters and gradients: one buffer each, same layout */
    size_t n_params;
    float *params, *grads;
    int params_borrowed;        /* params is another model's (model_create_replica) */
    model_tensor *tensors;
    int n_tensors;
    model_layer_weights *lw, *lg; /* [n_layers] views into params / grads */
    float *tok_emb, *final_norm, *head;    /* head == tok_emb when tied */
    float *g_tok_emb, *g_final_norm, *g_head;

    /* one allocation for every activation and scratch buffer */
    float *arena;
    size_t arena_floats;
    float *rope_cos, *rope_sin; /* [context, D/2] */
    float *res;                 /* [2 L + 1][N, C] residual stream after each half-layer */
    model_layer_acts *acts;     /* [n_layers] */
    model_block_scratch scratch;
    float *xf, *rstd_f;         /* final norm output [N, C], [N] */
    float *dxf, *dres;          /* head input gradient, residual gradient [N, C] */
    float *losses;              /* [N] */
    float *top_logprob;         /* [N]: log of each position's largest next-token probability */
    int32_t *top_id;            /* [N]: its id (evaluation forwards only) */
    float *log_norm;            /* [N]: -ln sum_v p_v^beta (model_forward_eval only) */
    float *head_scratch;        /* lm_head_scratch_floats(MODEL_HEAD_CHUNK_ROWS, V) */
    float *head_dw;             /* [V, C] head weight gradient staged by a training forward */
    int32_t *tokens, *targets;  /* [N] copies of the last forward's inputs */
    /* the two-lane backward's hand-over buffers (model_backward_lanes.c), for up to
     * MODEL_HEAD_CHUNK_ROWS rows, made on its first use; NULL before */
    float *lane_buf;
    model_layer_dys *lane_dys;  /* [n_layers] views into lane_buf */

    /* A GPU that runs the passes (model_attach_device), or NULL. The host
     * buffers then hold the per-token outputs, the inputs and, after
     * model_params_to_host, the parameters; the gradients live on the GPU. */
    struct model_cuda *device;
    int host_only;              /* model_create_for_device: no activations here */
    char device_error[512];     /* the last GPU error of a pass ("" when none) */
    float *saved_params;        /* model_params_save's copy (CPU) */

    /* state of the last forward */
    int training;
    int B, T;
    int have_targets;   /* last forward succeeded with targets */
    int head_dw_ready;  /* head_dw and dxf hold the last forward's head gradients */
};

/* Residual stream after half-layer i (0 = embeddings, 2l+1 after layer l's
 * attention, 2l+2 after its MLP): [N, C] at a stride of max_batch*context rows. */
static inline float *model_residual(const model *m, int i)
{
    return m->res + (size_t)i * m->max_batch * m->cfg.context * m->cfg.d_model;
}

/* The backward of the last forward's first `rows` sequences on two threads
 * (model_backward_lanes.c) when it applies: a CPU model, called from serial
 * code with two threads or more, at most MODEL_HEAD_CHUNK_ROWS rows (the
 * head in one chunk), no op profile and no gradient hand-over attached.
 * Returns 0 when it ran it (the same bits as the serial backward), -1 when
 * it did not apply (or found no memory): nothing done then. */
int model_backward_lanes(model *m, int rows);

#endif
