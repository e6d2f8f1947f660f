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
    TK_SHARED float redf[CE_THREADS / 32];
    TK_SHARED double redd[CE_THREADS / 32];
    TK_SHARED int redi[CE_THREADS / 32];
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
    float lse = mx + (float)tk_log((float)sum);
    if (threadIdx.x == 0) {
        losses[r] = lse - zt;
        if (top_logprob)
            top_logprob[r] = mx - lse;
        if (!dz && top_id)
            top_id[r] = arg;
    }
    if (!dz && log_norm) {
        float ln = 0;
        if (beta > 0 && beta != 1.0f) {
            double p2 = 0;
            for (int v = threadIdx.x; v < V; v += blockDim.x)
                p2 += (double)tk_exp(beta * (z[v] - mx));
            double s2 = block_sum_d(p2, redd);
            ln = beta * tk_log((float)sum) - tk_log((float)s2);
        }
        if (threadIdx.x == 0)
            log_norm[r] = ln;
    }
    if (dz) {
        float scale = grad_scale;
        if (mix_b) {
            float ap = mix_a * tk_exp(zt - lse);
            scale *= ap / (ap + mix_b[r]);
        }
        T *g = dz + (size_t)r * V;
        for (int v = threadIdx.x; v < V; v += blockDim.x) {
            float x = z[v], d = tk_exp(x - lse) - (v == t ? 1.0f : 0.0f);
            if (cap > 0) {
                float u = x / cap;
                d *= 1.0f - u * u;
            }
            tk_st(g, v, d * scale);
        }
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
    TK_SHARED float redf[CE_REG_MAX_THREADS / 32];
    TK_SHARED double redd[CE_REG_MAX_THREADS / 32];
    TK_SHARED int redi[CE_REG_MAX_THREADS / 32];
    TK_SHARED float target_logit;
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
    float lse = mx + (float)tk_log((float)sum);
    if (threadIdx.x == 0) {
        losses[r] = lse - zt;
        if (top_logprob)
            top_logprob[r] = mx - lse;
        if (!dz && top_id)
            top_id[r] = arg;
    }
    if (!dz && log_norm) {
        float ln = 0;
        if (beta > 0 && beta != 1.0f) {
            double p2 = 0;
UNROLL
            for (int k = 0; k < CE_REG_PER; k++)
                if ((int)threadIdx.x + k * nt < V)
                    p2 += (double)tk_exp(beta * (x[k] - mx));
            double s2 = block_sum_d(p2, redd);
            ln = beta * tk_log((float)sum) - tk_log((float)s2);
        }
        if (threadIdx.x == 0)
            log_norm[r] = ln;
    }
    if (dz) {
        float scale = grad_scale;
        if (mix_b) {
            float ap = mix_a * tk_exp(zt - lse);
            scale *= ap / (ap + mix_b[r]);
        }
        T *g = dz + (size_t)r * V;
UNROLL
        for (int k = 0; k < CE_REG_PER; k++) {
            int v = (int)threadIdx.x + k * nt;
            if (v < V) {
                float d = tk_exp(x[k] - lse) - (v == t ? 1.0f : 0.0f);
                if (cap > 0) {
                    float u = x[k] / cap;
                    d *= 1.0f - u * u;
                }
                tk_st(g, v, d * scale);
            }
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

KERNEL LAUNCH_BOUNDS(CE_REG_MAX_THREADS, 2) ce_rows_reg_f32(const float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                       float *log_norm, float beta, float *dz, const float *mix_b, float mix_a, int V, float cap,
                       float grad_scale)
{
    ce_rows_reg(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}
KERNEL LAUNCH_BOUNDS(CE_REG_MAX_THREADS, 2) ce_rows_reg_bf16(const float *logits, const int *targets, float *losses, float *top_logprob, int *top_id,
                        float *log_norm, float beta, bf16_t *dz, const float *mix_b, float mix_a, int V, float cap,
                        float grad_scale)
{
    ce_rows_reg(logits, targets, losses, top_logprob, top_id, log_norm, beta, dz, mix_b, mix_a, V, cap, grad_scale);
}

EMU_REGISTER_BEGIN(cross_entropy)
EMU_KERNEL(ce_rows_f32)
EMU_KERNEL(ce_rows_bf16)
EMU_KERNEL(ce_rows_reg_f32)
EMU_KERNEL(ce_rows_reg_bf16)
EMU_REGISTER_END
