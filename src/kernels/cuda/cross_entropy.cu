/* cross_entropy.cu - the head's row pass on the GPU: given a chunk of logits
 * [R, V] (fp32, the head GEMM's output), per row the optional soft-cap, the
 * log-sum-exp, the loss, the model's confidence (top_logprob), and either
 * the gradient with respect to the logits (training; written as the storage
 * type T for the two GEMMs that follow) or the evaluation outputs (the top
 * token's id, -ln sum p^beta). The math is kernels/cpu/lm_head.h's
 * row_loss, the reference. One block of CE_THREADS per row; reductions in a
 * fixed tree order (deterministic). Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

#define CE_THREADS 256

/* sum over the block in double (every thread gets it); red: CE_THREADS / 32 */
DEVICE double block_sum_d(double v, double *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = tk_warp_sum_d(v);
    SYNC();
    if (lane == 0)
        red[w] = v;
    SYNC();
    double s = 0;
    for (int i = 0; i < nw; i++)
        s += red[i];
    return s;
}

/* the largest value and the first index holding it */
DEVICE void block_argmax(float *val, int *idx, float *redv, int *redi)
{
    float v = *val;
    int i = *idx;
    for (int o = 16; o > 0; o >>= 1) {
        float ov = tk_shfl_xor(v, o);
        int oi = (int)tk_shfl_xor((float)i, o); /* ids < 2^24 are exact as floats */
        if (ov > v || (ov == v && oi < i)) {
            v = ov;
            i = oi;
        }
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    SYNC();
    if (lane == 0) {
        redv[w] = v;
        redi[w] = i;
    }
    SYNC();
    v = redv[0];
    i = redi[0];
    for (int k = 1; k < nw; k++)
        if (redv[k] > v || (redv[k] == v && redi[k] < i)) {
            v = redv[k];
            i = redi[k];
        }
    *val = v;
    *idx = i;
}

/* The row's parts both kernels share, after its max mx (first at arg), its
 * target's logit zt and the block's sum of exp(z - mx): the loss,
 * top_logprob and (evaluation) top_id of row r written by thread 0; returns
 * the log-sum-exp. */
DEVICE float ce_row_outputs(int r, float mx, int arg, float zt, double sum, float *losses, float *top_logprob,
                            int *top_id, int eval)
{
    float lse = mx + (float)tk_log((float)sum);
    if (threadIdx.x == 0) {
        losses[r] = lse - zt;
        if (top_logprob)
            top_logprob[r] = mx - lse;
        if (eval && top_id)
            top_id[r] = arg;
    }
    return lse;
}

/* -ln sum p^beta from the block's sums of exp(z - mx) and exp(beta (z - mx)) */
DEVICE float ce_log_norm(double sum, double sum_beta, float beta)
{
    return beta * tk_log((float)sum) - tk_log((float)sum_beta);
}

/* the gradient's scale: grad_scale, times a p / (a p + mix_b[r]) inside a mixture */
DEVICE float ce_grad_scale(float grad_scale, const float *mix_b, float mix_a, float zt, float lse, int r)
{
    if (!mix_b)
        return grad_scale;
    float ap = mix_a * tk_exp(zt - lse);
    return grad_scale * (ap / (ap + mix_b[r]));
}

/* one logit's gradient: (softmax - onehot) * dcap * scale */
DEVICE float ce_grad(float x, float lse, int is_target, float cap, float scale)
{
    float d = tk_exp(x - lse) - (is_target ? 1.0f : 0.0f);
    if (cap > 0) {
        float u = x / cap;
        d *= 1.0f - u * u;
    }
    return d * scale;
}

/* logits [R, V]: row r's raw logits (rewritten: capped, when cap > 0).
 * losses [R], top_logprob [R] (may be null). Training (dz non-null): dz [R, V]
 * = grad_scale * (softmax - onehot) * dcap, times a p / (a p + mix_b[r])
 * when mix_b is given. Evaluation (dz null): top_id [R], log_norm [R] (each
 * may be null; beta <= 0 or 1 writes log_norm 0). dz may alias logits when
 * T is float. grid R, block CE_THREADS. */
template <typename T>
DEVICE void ce_rows(float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                    float *log_norm, float beta, T *dz, const float *mix_b, float mix_a, int V, float cap,
                    float grad_scale)
{
    SHARED_ARRAY(float, redf, [CE_THREADS / 32]);
    SHARED_ARRAY(double, redd, [CE_THREADS / 32]);
    SHARED_ARRAY(int, redi, [CE_THREADS / 32]);
    int r = blockIdx.x;
    float *z = logits + (size_t)r * V;
    float mx = tk_neg_inf();
    int arg = V;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float x = z[v];
        if (cap > 0) {
            x = cap * tk_tanh(x / cap);
            z[v] = x;
        }
        if (x > mx || arg == V) {
            mx = x;
            arg = v;
        }
    }
    block_argmax(&mx, &arg, redf, redi);
    int t = targets[r];
    SYNC(); /* the capped logits are visible to every thread */
    float zt = z[t];
    double part = 0;
    for (int v = threadIdx.x; v < V; v += blockDim.x)
        part += (double)tk_exp(z[v] - mx);
    double sum = block_sum_d(part, redd);
    float lse = ce_row_outputs(r, mx, arg, zt, sum, losses, top_logprob, top_id, !dz);
    if (!dz && log_norm) {
        float ln = 0;
        if (beta > 0 && beta != 1.0f) {
            double p2 = 0;
            for (int v = threadIdx.x; v < V; v += blockDim.x)
                p2 += (double)tk_exp(beta * (z[v] - mx));
            ln = ce_log_norm(sum, block_sum_d(p2, redd), beta);
        }
        if (threadIdx.x == 0)
            log_norm[r] = ln;
    }
    if (dz) {
        float scale = ce_grad_scale(grad_scale, mix_b, mix_a, zt, lse, r);
        T *g = dz + (size_t)r * V;
        for (int v = threadIdx.x; v < V; v += blockDim.x)
            tk_st(g, v, ce_grad(z[v], lse, v == t, cap, scale));
    }
}

/* The same pass with the row in registers, for V <= CE_REG_PER x blockDim
 * (blockDim <= CE_REG_MAX_THREADS): one read of the logits and one write
 * of dz, where ce_rows reads them three times (the H200's profile of
 * 2026-12-04: 1.4 ms a gpt2-small step, about 3.6x its bytes). Thread i
 * holds values i, i + blockDim, ... (coalesced); the same float operations
 * as ce_rows, the block's sums in another order. The capped logits are not
 * written back (nothing reads them). grid R, block a multiple of 32 up to
 * CE_REG_MAX_THREADS. Left to itself ptxas gave it 139 registers a thread
 * (sm_90): one block of 256 an SM, which then waits on each row's loads
 * and reductions in turn; bounded to two blocks an SM it fits 128 without a
 * spill (three spill). */
#define CE_REG_PER 32
#define CE_REG_MAX_THREADS 256
template <typename T>
DEVICE void ce_rows_reg(const float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                        float *log_norm, float beta, T *dz, const float *mix_b, float mix_a, int V, float cap,
                        float grad_scale)
{
    SHARED_ARRAY(float, redf, [CE_REG_MAX_THREADS / 32]);
    SHARED_ARRAY(double, redd, [CE_REG_MAX_THREADS / 32]);
    SHARED_ARRAY(int, redi, [CE_REG_MAX_THREADS / 32]);
    SHARED_VAR(float, target_logit);
    int r = blockIdx.x, nt = (int)blockDim.x, t = targets[r];
    const float *z = logits + (size_t)r * V;
    float x[CE_REG_PER];
    float mx = tk_neg_inf();
    int arg = V;
    UNROLL
    for (int k = 0; k < CE_REG_PER; k++) {
        int v = (int)threadIdx.x + k * nt;
        x[k] = 0;
        if (v < V) {
            float y = z[v];
            if (cap > 0)
                y = cap * tk_tanh(y / cap);
            x[k] = y;
            if (y > mx || arg == V) {
                mx = y;
                arg = v;
            }
            if (v == t)
                target_logit = y;
        }
    }
    block_argmax(&mx, &arg, redf, redi); /* its barriers publish target_logit */
    float zt = target_logit;
    double part = 0;
    UNROLL
    for (int k = 0; k < CE_REG_PER; k++)
        if ((int)threadIdx.x + k * nt < V)
            part += (double)tk_exp(x[k] - mx);
    double sum = block_sum_d(part, redd);
    float lse = ce_row_outputs(r, mx, arg, zt, sum, losses, top_logprob, top_id, !dz);
    if (!dz && log_norm) {
        float ln = 0;
        if (beta > 0 && beta != 1.0f) {
            double p2 = 0;
            UNROLL
            for (int k = 0; k < CE_REG_PER; k++)
                if ((int)threadIdx.x + k * nt < V)
                    p2 += (double)tk_exp(beta * (x[k] - mx));
            ln = ce_log_norm(sum, block_sum_d(p2, redd), beta);
        }
        if (threadIdx.x == 0)
            log_norm[r] = ln;
    }
    if (dz) {
        float scale = ce_grad_scale(grad_scale, mix_b, mix_a, zt, lse, r);
        T *g = dz + (size_t)r * V;
        UNROLL
        for (int k = 0; k < CE_REG_PER; k++) {
            int v = (int)threadIdx.x + k * nt;
            if (v < V)
                tk_st(g, v, ce_grad(x[k], lse, v == t, cap, scale));
        }
    }
}

KERNEL ce_rows_f32(float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                   float *log_norm, float beta, float *dz, const float *mix_b, float mix_a, int V, float cap,
                   float grad_scale)
{
    ce_rows(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}
KERNEL ce_rows_bf16(float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                    float *log_norm, float beta, bf16_t *dz, const float *mix_b, float mix_a, int V, float cap,
                    float grad_scale)
{
    ce_rows(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}

/* two blocks an SM: 128 registers a thread, no spill (ptx_assemble.sh) */
#define CE_REG_BOUNDS LAUNCH_BOUNDS(CE_REG_MAX_THREADS, 2)
KERNEL CE_REG_BOUNDS ce_rows_reg_f32(const float *logits, const int *targets, float *losses, float *top_logprob,
                                     int *top_id, float *log_norm, float beta, float *dz, const float *mix_b,
                                     float mix_a, int V, float cap, float grad_scale)
{
    ce_rows_reg(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}
KERNEL CE_REG_BOUNDS ce_rows_reg_bf16(const float *logits, const int *targets, float *losses, float *top_logprob,
                                      int *top_id, float *log_norm, float beta, bf16_t *dz, const float *mix_b,
                                      float mix_a, int V, float cap, float grad_scale)
{
    ce_rows_reg(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}

EMU_REGISTER_BEGIN(cross_entropy)
EMU_KERNEL(ce_rows_f32)
EMU_KERNEL(ce_rows_bf16)
EMU_KERNEL_BOUNDED(ce_rows_reg_f32, CE_REG_MAX_THREADS)
EMU_KERNEL_BOUNDED(ce_rows_reg_bf16, CE_REG_MAX_THREADS)
EMU_REGISTER_END
