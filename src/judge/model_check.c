/* model_check.c - structural and numeric checks of a submitted model (see
 * model_check.h). */
#include "judge/model_check.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "core/safetensors.h"

judge_model_verdict judge_model_check(const char *path, tempo_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        tempo_fail(err, "%s: missing", path);
        return JUDGE_MODEL_INVALID;
    }
    if ((uint64_t)st.st_size > JUDGE_MODEL_MAX_BYTES) {
        tempo_fail(err, "%s: too large (%lld bytes, limit %llu)", path, (long long)st.st_size,
                   (unsigned long long)JUDGE_MODEL_MAX_BYTES);
        return JUDGE_MODEL_INVALID;
    }
    safetensors_file sf;
    if (safetensors_open(&sf, path, err))
        return JUDGE_MODEL_INVALID;
    judge_model_verdict v = JUDGE_MODEL_OK;
    if (!safetensors_meta(&sf, "config") || !safetensors_meta(&sf, "tokenizer")) {
        tempo_fail(err, "%s: not a tempo model (no \"config\" and \"tokenizer\" in __metadata__)", path);
        v = JUDGE_MODEL_INVALID;
    } else if (sf.n_tensors == 0) {
        tempo_fail(err, "%s: holds no tensors", path);
        v = JUDGE_MODEL_INVALID;
    }
    for (int i = 0; v == JUDGE_MODEL_OK && i < sf.n_tensors; i++) {
        const st_tensor *t = &sf.tensors[i];
        for (size_t j = 0; j < t->numel; j++) {
            float x;
            memcpy(&x, (const char *)t->data + j * sizeof x, sizeof x); /* data may be unaligned */
            if (!isfinite(x)) {
                tempo_fail(err, "%s: weights hold non-finite values (tensor %s)", path, t->name);
                v = JUDGE_MODEL_NONFINITE;
                break;
            }
        }
    }
    safetensors_close(&sf);
    return v;
}
