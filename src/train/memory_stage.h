/* memory_stage.h - the hybrid model's parts in a training run: the count
 * memory built from the training stream inside the budget (its seconds are
 * training seconds), saved to RUN_DIR/memory.bin by a background thread
 * while the transformer trains, and the mixer's initial weights fitted at
 * the end on training tokens held out of the memory (RUN_DIR/mixer.json).
 * The loop itself lives in trainer.c. */
#ifndef TEMPO_MEMORY_STAGE_H
#define TEMPO_MEMORY_STAGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "data/token_store.h"
#include "parallel/dist.h"
#include "memory/hybrid.h"
#include "memory/memory_store.h"
#include "memory/ngram_memory.h"
#include "model/model.h"
#include "run/run_config.h"

typedef struct {
    ngram_memory memory;
    int has_memory;
    int built;                /* 1: built in this session (0: loaded from memory.bin on resume) */
    int reused;               /* 1: memory.bin was reused (memory.build_seconds: its build's time then) */
    double build_s, load_s, save_s;
    uint64_t holdout_start;   /* training tokens [holdout_start, n) are held out of the memory */
    uint64_t count_tokens;    /* the memory counts tokens [0, count_tokens): <= holdout_start */
    int budget_capped;        /* 1: count_tokens < holdout_start, for the budget (memory_budget.h) */
    char path[1100];
    pthread_t saver;
    int saver_running, save_rc;
    atomic_int save_done;     /* the saver has finished (save_rc is set) */
    tempo_error save_err;
    char store_dir[1100];     /* the shared store (memory_store.h), "" = none */
    int shared;               /* 1: memory.bin is a link to the store's copy (store says which) */
    int linked_unwritten;     /* 1: the store held it before the save: memory.bin was linked, never written */
    memory_store_result store;
    char store_why[600];      /* why not shared */
    double share_s;
    int store_reported;
    FILE *progress;
    mixer fitted;             /* after memory_stage_fit_mixer */
    int has_fitted;
} memory_stage;

/* The settings' usage errors (orders the vocabulary allows, a held-out
 * slice the training stream can spare), without any work: the same on every
 * rank, so a multi-rank run can find them before its first collective. */
int memory_stage_check(const run_config *cfg, const token_file *train, tempo_error *err);

/* With cfg->memory_order > 0: on resume, reuse RUN_DIR/memory.bin when it
 * is the memory this run would build: of this data (data_id, the sha256 of
 * DATA_DIR/meta.json, recorded in the file; when either side does not know
 * it, the tokenizer and the token count stand for it), with this order and
 * pruning, over the same tokens; else (no file, another data's or settings',
 * a damaged one) build over the training tokens before the held-out tail (with
 * budget_s > 0: only the prefix whose estimated build fits
 * cfg->memory_budget_share of it, memory_budget.h) and
 * start saving it (with data_id and the build's seconds), saying on progress
 * why a file there was not reused. A saved memory is then shared through
 * store_dir (not NULL or ""; memory_store.h): RUN_DIR/memory.bin becomes a
 * link to the store's one copy, said on progress after the save (when the
 * store holds a valid copy already, the link is made first and nothing is
 * written). With mixer_holdout > 0 (and a memory or a
 * cache) the tail of cfg->mixer_holdout tokens is held out. Nothing to do
 * otherwise. data_id may be NULL (unknown).
 * With ranks (dist not NULL, world > 1) every rank calls it: rank 0 decides
 * load or build; a build is split over the ranks (each counts its shards of
 * threads x world, the tables are broadcast from their owners: the same
 * memory as one process with that many threads), and only rank 0 keeps the
 * memory (the others free it: they train the transformer only), unless
 * memory_train_weight > 0: then every rank's batches ask the memory, so
 * every rank keeps it (a load maps RUN_DIR/memory.bin on every rank: on
 * several machines each needs the file in its run folder). Only rank 0
 * writes it. */
int memory_stage_prepare(memory_stage *ms, const run_config *cfg, const token_file *train, uint64_t tokenizer_id,
                         const uint8_t *data_id, const char *out_dir, const char *store_dir, int threads,
                         int resume, double budget_s, FILE *progress, dist_context *dist, tempo_error *err);

/* Wait for the background save; its error, if any. */
int memory_stage_wait_saved(memory_stage *ms, tempo_error *err);

/* Without waiting: 0 while the save runs or after it worked; -1 with its
 * error once it failed (a full disk), so the run stops at that step
 * instead of training to the end of its budget for a folder it cannot
 * complete. */
int memory_stage_save_status(memory_stage *ms, tempo_error *err);

/* The run's parts (run/run_parts.h, all of them) over this stage's memory
 * (borrowed: valid while ms lives) with the fitted mixer when there is one,
 * else equal weights. Free with hybrid_parts_free (the memory stays ms's). */
int memory_stage_parts(memory_stage *ms, const run_config *cfg, int vocab, hybrid_parts *h, tempo_error *err);

/* Fit the mixer on the first `fraction` (0, 1] of the held-out tokens (at
 * least MEMORY_STAGE_FIT_MIN_TOKENS of them; the mixture read with learning
 * on) and write RUN_DIR/mixer.json, saying on progress how many; *seconds
 * and *tokens get the time it took and the tokens it read. */
int memory_stage_fit_mixer(memory_stage *ms, model *m, const run_config *cfg, const token_file *train,
                           const char *out_dir, int batch, double fraction, FILE *progress, double *seconds,
                           uint64_t *tokens, tempo_error *err);

/* The fit inside a budget, from a training step's time (forward + backward
 * over tokens_per_step tokens): *reserve the seconds the loop leaves for it
 * (the whole fit's estimate, at most MEMORY_STAGE_FIT_SHARE of budget_s > 0),
 * and *fraction the share of the held-out tokens that fits in them (1 when
 * all do, or without a budget). */
#define MEMORY_STAGE_FIT_SHARE 0.1
#define MEMORY_STAGE_FIT_MIN_TOKENS 4096
void memory_stage_fit_budget(const run_config *cfg, double step_s, uint64_t tokens_per_step, double budget_s,
                             double *reserve, double *fraction);

void memory_stage_free(memory_stage *ms);

#endif
