/* run_config.h - everything a training run is configured by: the model shape,
 * the optimizer, the schedule and the loop's own settings, as one struct.
 * Values come from defaults, then a named preset (configs/NAME.conf: lines
 * `key = value`, `#` comments), then `--set key=value` overrides, all through
 * one table of keys, so an unknown key or a bad value is one clear error. The
 * same table holds the defaults (they are the cpu-default preset) and writes
 * and reads the config as JSON for checkpoints. */
#ifndef TEMPO_RUN_CONFIG_H
#define TEMPO_RUN_CONFIG_H

#include <stdio.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "model/config.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

typedef struct {
    model_config model;      /* vocab_size comes from the data, not from presets */
    optim_config optim;
    lr_schedule schedule;
    int batch_size;          /* sequences per optimizer step */
    int micro_batch;         /* sequences per forward/backward; 0 = batch_size */
    double eval_every_s;     /* periodic val bpb on a slice; 0 = off */
    int eval_tokens;         /* tokens in that slice */
    double checkpoint_every_s;
    int max_retries;         /* divergence guard: restores before giving up */
    double retry_lr_factor;  /* learning-rate multiplier applied at each restore */
    /* the hybrid model's other components (docs/hybrid_model.md; src/memory/) */
    int memory_order;        /* count memory of the training stream, orders 1..K; 0 = none */
    int memory_prune;        /* top-order n-grams counted fewer times are dropped (1 = keep all) */
    double memory_budget_share;   /* the most of --budget the memory's build may take (estimated); 0 = no cap */
    double memory_build_s_per_mtok; /* that estimate's cost at 2 threads; 0 = memory_budget.h's for the order */
    int cache_order;         /* cache of the text being read, orders 1..K; 0 = none */
    int match_length;        /* match model of the text being read: tokens a match starts from; 0 = none */
    double mixer_lr;         /* online learning rate of the mixing weights */
    double mixer_beta;       /* the transformer's sharpening in the mixture (memory/mixer.h) */
    int mixer_holdout;       /* training tokens kept out of the memory to fit the mixer on; 0 = no fit */
    double adapt_lr;         /* the transformer's SGD rate while it reads a text (eval/bpb.h); 0 = frozen */
    double memory_train_weight; /* > 0: the transformer trains on -ln(a p + (1-a) p_memory), a = this; 0 = plain */
    int shard_optimizer;     /* ZeRO-1 over ranks: each keeps and updates its share of the optimizer state */
    int overlap_comm;        /* with ranks: the gradient's reduction runs beside the backward pass */
    int thread_replicas;     /* one CPU process: the step's rows shared out among the threads (train_step.h) */
    char preset[64];
} run_config;

/* The one default configuration, the cpu-default preset: every key at its
 * default (configs/cpu-default.conf lists the same values; a test checks),
 * vocab_size 0 (it comes from the data), preset name "cpu-default". Other
 * presets are applied on top of it, so a preset that wants a component of
 * the hybrid model off says so (memory_order = 0, ...). */
void run_config_defaults(run_config *c);
/* Set one key from text. Unknown key or bad value: -1, code 2, message names both. */
int run_config_set(run_config *c, const char *key, const char *value, tempo_error *err);
/* Apply "key=value". */
int run_config_set_pair(run_config *c, const char *pair, tempo_error *err);
/* Load a preset by name (searched in $TEMPO_CONFIGS, <exe>/../configs, ./configs)
 * or by path (contains '/' or ends in .conf). */
int run_config_load_preset(run_config *c, const char *name, tempo_error *err);
/* Fill derived values (d_ff default, micro_batch) and validate everything. */
int run_config_finish(run_config *c, tempo_error *err);
/* All keys as one JSON object {"key": value, ...}, vocab_size included,
 * appended to out (no newline); -1 with err set on out of memory. */
int run_config_to_json(const run_config *c, strbuf *out, tempo_error *err);
/* Read such an object back (every key in it must be known). */
int run_config_from_json(run_config *c, const char *json, size_t len, tempo_error *err);
/* Print "key  default  help" lines for --help. */
void run_config_print_keys(FILE *f);

#endif
