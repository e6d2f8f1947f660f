/* mixer.h - the weights that mix the model's components into one
 * next-token distribution: p = sum_i w_i(context) p_i over the transformer,
 * the corpus memory, the cache and the match model (DESIGN.md section 6).
 *
 * The weights are a softmax of logits theta[bucket][i] over the components
 * present; the bucket depends only on the past: how long a context each
 * count memory matched and how often that context was seen (three bins).
 * Learning is online gradient descent on the log loss of a token already
 * scored: d(-ln p)/d theta_j = w_j (1 - p_j / p). Every p_i is a normalised
 * distribution, so the mixture is one too. The saved form (RUN_DIR/mixer.json)
 * holds the logits fitted on a held-out slice of the training tokens; the
 * evaluation starts from them and keeps learning (unless told not to). */
#ifndef TEMPO_MIXER_H
#define TEMPO_MIXER_H

#include "core/error.h"
#include "memory/ngram_memory.h"

enum { MIX_MODEL = 0, MIX_MEMORY = 1, MIX_CACHE = 2, MIX_MATCH = 3, MIX_N = 4 };

extern const char *const mixer_component_names[MIX_N];  /* "transformer", "memory", "cache", "match" */

typedef struct {
    int memory_order, cache_order;  /* the bucket layout (0: component absent) */
    int match;                      /* 1: the match model is a component (its length bin splits the buckets) */
    int n_buckets;
    double lr;                      /* online learning rate of the logits */
    double *theta;                  /* [n_buckets][MIX_N] */
} mixer;

/* Logits all zero (equal weights). Orders 0..NGRAM_MAX_ORDER; match 0 or 1. */
int mixer_init(mixer *mx, int memory_order, int cache_order, int match, double lr, tempo_error *err);
void mixer_free(mixer *mx);
int mixer_copy(mixer *dst, const mixer *src, tempo_error *err);

/* The bucket of a position from what each memory matched (NULL: absent)
 * and the match model's length bin (match_model_bin; 0 without one). */
int mixer_bucket(const mixer *mx, const ngram_match *memory, const ngram_match *cache, int match_bin);

/* Weights over the present components (present[i] = 0: w_i = 0). */
void mixer_weights(const mixer *mx, int bucket, const int present[MIX_N], double w[MIX_N]);

/* One gradient step on -ln(sum w_i p_i) for the bucket's logits. */
void mixer_learn(mixer *mx, int bucket, const int present[MIX_N], const double w[MIX_N], const double p[MIX_N]);

/* RUN_DIR/mixer.json: written atomically; read back with every field checked
 * (orders, bucket count, finite logits) and errors naming the file. A file
 * of the older layout (version 1) is refused with -2 rather than -1, so a
 * caller may start from equal weights instead. */
int mixer_save(const mixer *mx, const char *path, tempo_error *err);
int mixer_load(mixer *mx, const char *path, tempo_error *err);

#endif
