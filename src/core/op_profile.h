/* op_profile.h - where a training step's wall time goes: seconds and calls
 * per kind of operation, accumulated by the model and the step driver when a
 * profile is attached (model_set_profile), for `tempo bench train`.
 * A NULL profile costs one branch per op; timing is wall clock of the calling
 * (serial) thread around each op, so the shares add up to the step time minus
 * what no op covers; beside it, the process's CPU time over the same span
 * (all threads), so cpu / wall says how many threads an op kept busy.
 * Nothing here decides anything: it only counts. */
#ifndef TEMPO_OP_PROFILE_H
#define TEMPO_OP_PROFILE_H

#include "core/timer.h"

typedef enum {
    OP_EMBEDDING,      /* token embedding forward and backward */
    OP_NORM,           /* RMSNorm (layer, QK and final) forward and backward */
    OP_GEMM_FWD,       /* the layers' projections, forward */
    OP_GEMM_BWD,       /* their input and weight gradients (dx = dy W, dW += dy^T x:
                          one kind, since the two may run side by side) */
    OP_ATTN_FWD,       /* fused causal attention forward */
    OP_ATTN_BWD,       /* and backward */
    OP_ROPE,           /* rotary embedding forward and backward */
    OP_ACTIVATION,     /* ReLU^2 / SwiGLU forward and backward */
    OP_HEAD,           /* output head fused with cross-entropy (all its GEMMs) */
    OP_HEAD_GRAD_ADD,  /* adding the staged head gradient into the gradients */
    OP_GRAD_NORM,      /* global gradient norm */
    OP_OPTIMIZER,      /* AdamW and Muon updates (Newton-Schulz GEMMs included) */
    OP_DATA,           /* sampling the batch */
    OP_COUNT
} op_kind;

typedef struct {
    double seconds[OP_COUNT];      /* wall */
    double cpu_seconds[OP_COUNT];  /* process CPU time (all threads) */
    long calls[OP_COUNT];
} op_profile;

typedef struct {
    double wall, cpu;
} op_mark;

/* "gemm_fwd", ... (stable names, used as JSON keys). */
const char *op_kind_name(op_kind k);

static inline op_mark op_profile_begin(const op_profile *p)
{
    op_mark m = {0.0, 0.0};
    if (p) {
        m.cpu = timer_process_cpu();
        m.wall = timer_now();
    }
    return m;
}

static inline void op_profile_end(op_profile *p, op_kind k, op_mark m)
{
    if (p) {
        p->seconds[k] += timer_now() - m.wall;
        p->cpu_seconds[k] += timer_process_cpu() - m.cpu;
        p->calls[k]++;
    }
}

/* Run stmt, adding its time to prof as op k (prof may be NULL). */
#define OP_PROFILE_TIMED(prof, k, stmt)                 \
    do {                                                \
        op_mark t0_ = op_profile_begin(prof);           \
        stmt;                                           \
        op_profile_end((prof), (k), t0_);               \
    } while (0)

#endif
