/* op_profile.c - the names of the op kinds (see op_profile.h). */
#include "core/op_profile.h"

const char *op_kind_name(op_kind k)
{
    static const char *const names[OP_COUNT] = {
        [OP_EMBEDDING] = "embedding",        [OP_NORM] = "rmsnorm",
        [OP_GEMM_FWD] = "gemm_fwd",          [OP_GEMM_BWD] = "gemm_bwd",
        [OP_ATTN_FWD] = "attention_fwd",     [OP_ATTN_BWD] = "attention_bwd",
        [OP_ROPE] = "rope",                  [OP_ACTIVATION] = "activation",
        [OP_HEAD] = "head_xent",             [OP_HEAD_GRAD_ADD] = "head_grad_add",
        [OP_GRAD_NORM] = "grad_norm",        [OP_OPTIMIZER] = "optimizer",
        [OP_DATA] = "data",
    };
    return k >= 0 && k < OP_COUNT ? names[k] : "?";
}
