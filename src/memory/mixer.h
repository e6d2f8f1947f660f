/* mixer.h - the weights that mix the model's components into one
 * next-token distribution: p = sum_i w_i(context) p_i over the transformer,
 * the corpus memory, the cache and the match model (docs/hybrid_model.md).
 *
 * Two layers, as in the PAQ family of compressors but over probabilities:
 * three weight sets each hold a softmax over the components per bucket, the
 * bucket chosen by a different view of the past,
 *   set 0 "matched":    how long a context each count memory matched and how
 *                       often it was seen (four bins), and the match length;
 *   set 1 "cache":      the cache's matched context and bin, and the match length;
 *   set 2 "confidence": the transformer's largest next-token probability (four
 *                       bins) and the orders the memory and the cache matched;
 * and a final softmax over the three sets, chosen by the confidence bin and
 * the memory's matched order. The result is again one linear mixture of the
 * components, w_i = sum_s v_s w_{s,i}, so every p_i being a normalised
 * distribution makes the mixture one too. Everything the buckets read is
 * known before the token.
 *
 * Learning is online gradient descent on the log loss of a token already
 * scored: each set's logits on the loss of that set's own mixture,
 * d(-ln q_s)/d theta_{s,j} = w_{s,j} (1 - p_j / q_s), and the final logits on
 * the loss of the whole, d(-ln p)/d phi_s = v_s (1 - q_s / p). The saved form
 * (RUN_DIR/mixer.json) holds the logits fitted on a held-out slice of the
 * training tokens; an evaluation starts from them and keeps learning (unless
 * told not to).
 *
 * The mixer holds every stage of the mixture (mixture.h), each one unit
 * with its own apply, learn, save and load:
 *   - the linear stage, here: beta, the power the transformer's
 *     distribution is raised to (and renormalised) before it is mixed (a
 *     calibrated model's peaks are averaged down by the linear mixture,
 *     and a sharper one mixes better, docs/hybrid_model.md), then the
 *     weights above: mixer_select and mixer_weights apply them,
 *     mixer_learn learns, and mixer.c saves and loads their keys;
 *   - the calibration of the match model's predicted token (calib, one
 *     row per match length bin; absent without the match model) and the
 *     top-token stage (calib_top, MIX_TOP_ROWS rows), two calibration
 *     stages (calibration.h: their apply, learn, save and load).
 * mixer_init, _copy, _free, _save and _load hand each stage its part;
 * mixer.json holds them all, fitted on held-out training tokens. */
#ifndef TEMPO_MIXER_H
#define TEMPO_MIXER_H

#include "core/error.h"
#include "memory/calibration.h"
#include "memory/ngram_memory.h"

enum { MIX_MODEL = 0, MIX_MEMORY = 1, MIX_CACHE = 2, MIX_MATCH = 3, MIX_N = 4 };
enum { MIX_SETS = 3, MIX_CONFIDENCE_BINS = 4 };
/* The top-token stage's map (mixture.c): a row per bin of the transformer's
 * probability of its most probable token x what the match model predicts
 * (nothing, that token, another). */
enum { MIX_TOP_CONFIDENCE_BINS = 8, MIX_TOP_ROWS = MIX_TOP_CONFIDENCE_BINS * 3 };

extern const char *const mixer_component_names[MIX_N];  /* "transformer", "memory", "cache", "match" */
extern const char *const mixer_set_names[MIX_SETS];      /* "matched", "cache", "confidence" */

typedef struct {
    int memory_order, cache_order;  /* the bucket layout (0: component absent) */
    int match;                      /* 1: the match model is a component (its length bin splits buckets) */
    int n_buckets[MIX_SETS];
    int n_final;
    double lr;                      /* online learning rate of the sets' logits */
    double lr_final;                /* of the final logits */
    double *theta[MIX_SETS];        /* [n_buckets[s]][MIX_N] */
    double *phi;                    /* [n_final][MIX_SETS] */
    double beta;                    /* the transformer enters the mixture sharpened: p^beta / sum_v p_v^beta
                                       (1: as it is; MIXER_BETA_MIN..MIXER_BETA_MAX) */
    calib_stage calib;              /* the match model's predicted token: MATCH_LEN_BINS rows with it, else 0 */
    calib_stage calib_top;          /* the transformer's top token: MIX_TOP_ROWS rows (mixture_top_row) */
} mixer;

/* Where a position stands: one bucket per set and the final one. */
typedef struct {
    int bucket[MIX_SETS];
    int final;
} mixer_context;

/* The weights at a position: each set's, the sets', and the combined ones. */
typedef struct {
    double set[MIX_SETS][MIX_N];
    double v[MIX_SETS];
    double w[MIX_N];   /* w_i = sum_s v_s set[s][i]: p = sum_i w_i p_i */
} mixer_blend;

/* The range of mixer.beta (mixer.json's "model_beta", run_config's mixer_beta). */
#define MIXER_BETA_MIN 0.25
#define MIXER_BETA_MAX 4.0

/* The final layer's learning rate unless told otherwise. */
#define MIXER_LR_FINAL 0.02

/* Logits all zero (equal weights), calibration the identity, beta 1. Orders
 * 0..NGRAM_MAX_ORDER; match 0 or 1. */
int mixer_init(mixer *mx, int memory_order, int cache_order, int match, double lr, tempo_error *err);
void mixer_free(mixer *mx);
int mixer_copy(mixer *dst, const mixer *src, tempo_error *err);

/* The context of a position from what each memory matched (NULL: absent),
 * the match model's length bin (match_model_bin; 0 without one) and the
 * transformer's largest next-token probability (0..1). */
mixer_context mixer_select(const mixer *mx, const ngram_match *memory, const ngram_match *cache, int match_bin,
                           double confidence);

/* Weights over the present components (present[i] = 0: weight 0). */
void mixer_weights(const mixer *mx, const mixer_context *c, const int present[MIX_N], mixer_blend *b);

/* One gradient step on the log loss of a token whose components gave p. */
void mixer_learn(mixer *mx, const mixer_context *c, const int present[MIX_N], const mixer_blend *b,
                 const double p[MIX_N]);

/* RUN_DIR/mixer.json: written atomically; read back with every field checked
 * (orders, bucket counts, finite logits) and errors naming the file. A file
 * of an older layout (versions 1 and 2: one weight set) is refused with -2
 * rather than -1, so a caller may start from equal weights instead. A
 * version 3 file without "calibration" or "calibration_top" (written before
 * they existed) loads with identity maps, one without "model_beta" with
 * beta 1. */
int mixer_save(const mixer *mx, const char *path, tempo_error *err);
int mixer_load(mixer *mx, const char *path, tempo_error *err);

#endif
