/* bpb_result.h - what an evaluation gives, the types every layer passes
 * it in: a bits-per-byte figure (bpb.h computes the transformer's) and the
 * hybrid model's reading (hybrid_bpb.h computes it). Only types here, so
 * that the readers of eval's line (the judge) need nothing of models. */
#ifndef TEMPO_BPB_RESULT_H
#define TEMPO_BPB_RESULT_H

#include <stdint.h>

#include "memory/mixer.h"

/* A bits-per-byte figure, the one type every layer passes it in: the
 * transformer's (bpb.h), the mixture's and the transformer's in a hybrid
 * result (eval/hybrid_bpb.h), eval's JSON line and the judge's reading of
 * it (eval/eval_result.h), the trainer's result.json (train/trainer.h).
 * The field names are the JSON keys of eval's line. */
typedef struct {
    double bpb;             /* bits per byte: bits / bytes */
    double bits;            /* total bits */
    double loss;            /* mean nats per scored token */
    uint64_t bytes;         /* bytes of text the tokens stand for */
    uint64_t tokens;        /* scored tokens (stream length - 1) */
    int context, stride;    /* the windows read (bpb_windows) */
    double seconds;
} bpb_result;

/* The hybrid model's reading of a stream: the figure of the whole and of
 * the transformer alone (the type above, one naming scheme), what only a
 * mixture has, and what read it. eval's JSON line is this result
 * (eval/eval_result.h), the trainer's val figures too (train/trainer.h). */
typedef struct {
    bpb_result mixture;            /* the whole model: loss is its bits in nats per scored token, seconds the
                                      whole reading's (transformer, memory, cache, mixer) */
    bpb_result model;              /* the transformer alone (its own bpb, loss and seconds) */
    double bpb_linear;             /* the mixture before its calibration stage (mixture.h) */
    double bpb_component[MIX_N];   /* each component alone (NaN when absent; the transformer: model.bpb) */
    double mean_weight[MIX_N];     /* the mixer's mean weight per component */
    int present[MIX_N];
    double mixture_seconds;        /* memory + cache + mixer */
    int adapt;                     /* 1: the cache and the mixer learned as they read */
    double adapt_lr;               /* the transformer's rate while it read (0: frozen) */
    int memory_order, cache_order, match_length;   /* the parts read with (0: absent) */
    int mixer_fitted;              /* 1: the mixer started from RUN_DIR/mixer.json, 0: from equal weights */
    uint64_t documents;            /* the text's documents (eval_run_bpb sets them; 0: not counted) */
    const char *source;            /* the text file or data folder read (eval_run_bpb; NULL: not said) */
    const char *precision;         /* the transformer's products as read: "fp32" or "bf16" (NULL: not said) */
} hybrid_bpb_result;

#endif
