/* model_check.h - the judge's own look at a submitted model before it is
 * evaluated: a safetensors file that opens and validates (core/
 * safetensors.h), carries tempo's "config" and "tokenizer" metadata, holds at
 * least one tensor and only finite weights. Checking the vocabulary against
 * the tokenizer is left to `tempo eval`, which builds both. */
#ifndef TEMPO_JUDGE_MODEL_CHECK_H
#define TEMPO_JUDGE_MODEL_CHECK_H

#include <stdint.h>

#include "core/error.h"

#define JUDGE_MODEL_MAX_BYTES (16ull << 30)

typedef enum {
    JUDGE_MODEL_OK = 0,
    JUDGE_MODEL_INVALID = 1,    /* truncated, foreign, not tempo's, too large */
    JUDGE_MODEL_NONFINITE = 2,  /* NaN or infinite weights: the run diverged */
} judge_model_verdict;

/* Check the model file at path; on a verdict other than OK, err says why
 * ("model.safetensors: truncated (...)", "...: weights hold non-finite
 * values (tensor X)"). */
judge_model_verdict judge_model_check(const char *path, tempo_error *err);

#endif
