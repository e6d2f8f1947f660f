/* embedding.cu - token embedding on the GPU (kernels/cpu/embedding.h is the
 * reference): the lookup, and the backward's scatter-add made deterministic
 * by summing each token's rows in position order, one block per distinct
 * token (the host sorts the batch's positions by token: gpu_ops.h).
 * Launches: gpu_ops.c. */
#include "kernels/cuda/cuda_dialect.h"

/* out [N, C] (fp32: the residual stream) = emb[tokens[n], :]; grid N, any
 * block size. */
KERNEL embedding_fwd(float *out, const int *tokens, const float *emb, int N, int C)
{
    int n = blockIdx.x;
    const float *e = emb + (size_t)tokens[n] * C;
    float *o = out + (size_t)n * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        o[c] = e[c];
}

/* demb [V, C] += sum over the positions of each distinct token. order [N]:
 * the positions sorted by token (ties by position); seg [n_seg + 1]: where
 * each token's run starts in order; seg_token [n_seg]: its id. grid
 * (n_seg, ceil(C / blockDim)). */
KERNEL embedding_bwd(float *demb, const int *order, const int *seg, const int *seg_token,
                     const float *dout, int C)
{
    int s = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c < C) {
        float *d = demb + (size_t)seg_token[s] * C + c;
        float acc = *d;
        for (int k = seg[s]; k < seg[s + 1]; k++)
            acc += dout[(size_t)order[k] * C + c];
        *d = acc;
    }
}

EMU_REGISTER_BEGIN(embedding)
EMU_KERNEL(embedding_fwd)
EMU_KERNEL(embedding_bwd)
EMU_REGISTER_END
