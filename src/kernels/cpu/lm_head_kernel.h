/* lm_head_kernel.h - the per-row passes of the head's softmax cross-entropy
 * (internal to lm_head.c), one table per kernel path: lm_head.c holds the
 * plain C table and the row logic, lm_head_avx2.c the AVX2 + FMA one,
 * lm_head_avx512.c the AVX-512 one. z is
 * one row of V logits. */
#ifndef TEMPO_LM_HEAD_KERNEL_H
#define TEMPO_LM_HEAD_KERNEL_H

typedef struct {
    /* z[v] = cap * tanh(z[v] / cap) */
    void (*softcap)(float *z, int V, float cap);
    /* max over z (V >= 1) */
    float (*max)(const float *z, int V);
    /* sum over v of exp(z[v] - mx), accumulated in double in a fixed order;
     * when store, z[v] = exp(z[v] - mx) as well. The sum does not depend on
     * store. */
    double (*exp_sum)(float *z, int V, float mx, int store);
    /* sum over v of exp(k z[v] - mx) for k > 0, k z[v] rounded to float
     * first, z unchanged: the bits of scale(z, V, k) then exp_sum(z, V, mx, 0). */
    double (*exp_sum_scaled)(const float *z, int V, float k, float mx);
    /* z[v] *= k */
    void (*scale)(float *z, int V, float k);
    /* soft-capped gradient: t = z[v] (capped logit) ->
     * z[v] = exp(t - lse) * k * (1 - (t / cap)^2) (the caller subtracts the
     * target's one-hot term). */
    void (*cap_grad)(float *z, int V, float lse, float cap, float k);
    /* the first v with z[v] == x (V - 1 when there is none, as for a NaN x) */
    int (*index_of)(const float *z, int V, float x);
} lm_head_row_ops;

/* The vector passes' 8 partial sums (lanes 0-3 and 4-7 of every 8 logits)
 * added in their one fixed order. */
static inline double lm_head_sum8(const double lanes[8])
{
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

extern const lm_head_row_ops lm_head_row_ops_portable;
extern const lm_head_row_ops lm_head_row_ops_avx2; /* only when kernel_path_avx2() */
/* Only on the avx512 path: the AVX2 table's results, bit for bit (max,
 * exp_sum and scale on zmm, the rest the AVX2 table's). */
extern const lm_head_row_ops lm_head_row_ops_avx512;

#endif
