/* run_parts.h - a run's hybrid parts from its config: the one mapping of
 * run_config onto hybrid_settings (memory_order, cache_order, match_length,
 * mixer_lr, mixer_beta and adapt_lr, the transformer's rate while it
 * reads), used by every reader of a run: eval and compress (all parts),
 * ICL, generation and the inference benchmark (the transformer frozen:
 * run_parts_frozen), and the trainer's mixer fit and final validation
 * (train/memory_stage.c, over the memory it built). The parts themselves
 * live in memory/hybrid.h. */
#ifndef TEMPO_RUN_PARTS_H
#define TEMPO_RUN_PARTS_H

#include "core/error.h"
#include "data/tokenizer.h"
#include "memory/hybrid.h"
#include "run/run_config.h"

/* Which of the run's parts a reader uses (all, as the run has them, by default: run_parts_all). */
typedef struct {
    int memory, cache, adapt;        /* 0: the count memory off; the cache and match model off; all frozen */
    int cache_order, match_length;   /* >= 0: instead of the run's own (components needing no training) */
    double adapt_lr;                 /* >= 0: the transformer's rate while reading, instead of the run's adapt_lr */
} run_parts_use;

run_parts_use run_parts_all(void);

/* The parts as the readers of single prompts use them (tempo icl, eval
 * --phase 2's ICL, generate, bench infer): the memory (memory = 0: off),
 * the cache and match model (cache = 0: off; both 0: the transformer
 * alone) and the fitted mixer, with the transformer frozen (adapt_lr 0) on
 * purpose: an ICL item, a generation or a benchmark reads one prompt, and
 * a transformer that learned from it would carry its steps into the next
 * item (docs/icl_and_inference.md). */
run_parts_use run_parts_frozen(int memory, int cache);

/* The settings of cfg's parts as `use` takes them: the one mapping. */
hybrid_settings run_parts_settings(const run_config *cfg, run_parts_use use);

/* The parts of the run at run_dir (a folder or a file in one) as `use`
 * takes them: hybrid_parts_load of run_parts_settings, with the transformer's
 * rate while reading in h->model_lr. Free with hybrid_parts_free. */
int run_parts_load(const char *run_dir, const run_config *cfg, const tokenizer *tok, run_parts_use use,
                   hybrid_parts *h, tempo_error *err);

#endif
