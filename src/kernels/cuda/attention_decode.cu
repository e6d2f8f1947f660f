/* attention_decode.cu - attention of an inference step's new rows against a
 * key/value cache on the GPU (infer/kv_cache.h's layout), fp32: row r, a
 * token at absolute position pos[r] of its sequence, attends with head h to
 * keys 0..pos[r] of that sequence's cache. The rows of one step may belong
 * to different sequences at different positions (batched decode, prefill,
 * ragged chunks), each told by its own kv_off[r]: the float offset in k and
 * v of its sequence's rows for this layer (rows of kv_stride floats; the
 * head's kv group at g * D). The CPU reference is attention_head_forward
 * (kernels/cpu/attention.h) with one query row and pos[r] + 1 keys.
 *
 * One block per (row, head), DEC_THREADS threads: the scaled scores of the
 * row's keys in shared memory, the block's maximum and sum by a tree in
 * shared memory, then each thread sums the probabilities against one
 * element of the values per DEC_THREADS. Simple, not tuned: a decode step
 * reads every key once and every value once, which bounds it anyway; the
 * speed on a GPU is unmeasured. Up to DEC_MAX_KEYS keys and head dims up
 * to DEC_MAX_D. Launches: gpu_ops.c (cuda_attention_decode). */
#include "kernels/cuda/cuda_dialect.h"

#define DEC_THREADS 128
#define DEC_MAX_KEYS 4096
#define DEC_MAX_D 256

/* The block's maximum (max != 0) or sum of v over its threads, through red
 * [DEC_THREADS]; every thread gets the result. */
DEVICE float block_reduce(float *red, float v, int max)
{
    int t = threadIdx.x;
    red[t] = v;
    SYNC();
    for (int s = DEC_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            float a = red[t], b = red[t + s];
            red[t] = max ? (b > a ? b : a) : a + b;
        }
        SYNC();
    }
    float r = red[0];
    SYNC(); /* red is reused by the next call */
    return r;
}

/* grid (N, H), block DEC_THREADS; q, o [N, H, D] */
KERNEL attn_decode_f32(float *o, const float *q, const float *k, const float *v, const long long *kv_off,
                       const int *pos, int H, int Hkv, int D, int kv_stride)
{
    SHARED_ARRAY(float, s, [DEC_MAX_KEYS]);
    SHARED_ARRAY(float, qs, [DEC_MAX_D]);
    SHARED_ARRAY(float, red, [DEC_THREADS]);
    int r = blockIdx.x, h = blockIdx.y, g = h / (H / Hkv), t = threadIdx.x;
    int n = pos[r] + 1;
    const float *qr = q + ((size_t)r * H + h) * D;
    const float *kb = k + kv_off[r] + (size_t)g * D, *vb = v + kv_off[r] + (size_t)g * D;
    float scale = tk_div(1.0f, tk_sqrt((float)D));
    for (int d = t; d < D; d += DEC_THREADS)
        qs[d] = qr[d];
    SYNC();
    float mx = tk_neg_inf();
    for (int j = t; j < n; j += DEC_THREADS) {
        const float *kj = kb + (size_t)j * kv_stride;
        float dot = 0;
        for (int d = 0; d < D; d++)
            dot += qs[d] * kj[d];
        s[j] = dot * scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    mx = block_reduce(red, mx, 1);
    float sum = 0;
    for (int j = t; j < n; j += DEC_THREADS) {
        float e = tk_exp(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = block_reduce(red, sum, 0); /* its SYNC also makes every s[j] visible */
    float inv = tk_div(1.0f, sum);
    float *orow = o + ((size_t)r * H + h) * D;
    for (int d = t; d < D; d += DEC_THREADS) {
        float acc = 0;
        for (int j = 0; j < n; j++)
            acc += s[j] * vb[(size_t)j * kv_stride + d];
        orow[d] = acc * inv;
    }
}

EMU_REGISTER_BEGIN(attention_decode)
EMU_KERNEL(attn_decode_f32)
EMU_REGISTER_END
