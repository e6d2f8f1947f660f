/* checkpoint.h - what a run leaves on disk and reads back.
 *
 * RUN_DIR/model.safetensors: the weights (F32, tensor names from the model)
 *   with "__metadata__": format "tempo-model-2", "config" (run config JSON,
 *   vocab_size included), "tokenizer" (the tokenizer file text), "step",
 *   "tokens". Self-describing: eval, icl and other tools need nothing else.
 * RUN_DIR/checkpoint.safetensors: the same weights plus the optimizer state
 *   ("optim.m", "optim.v", flat) and the loop state in metadata (step, tokens,
 *   elapsed seconds, budget, RNG state, divergence-guard state), so one atomic
 *   file holds everything a resume needs and can never disagree with itself.
 * Both are written atomically (temp file, fsync, rename) and carry a sha256
 * of their tensors and metadata (core/safetensors.h), checked on every load:
 * a damaged file is refused ("checksum mismatch"), never trained on or
 * scored. Version 2 of the formats ("tempo-model-2", "tempo-checkpoint-2")
 * says the file has a checksum, so one whose checksum key was damaged is
 * refused too; files written before (version 1, or no format) load
 * unchecked. */
#ifndef TEMPO_CHECKPOINT_H
#define TEMPO_CHECKPOINT_H

#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/tokenizer.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "run/run_config.h"

typedef struct {
    int64_t step;
    uint64_t tokens;
    double elapsed_s;     /* training seconds already spent (charged to the budget) */
    double budget_s;      /* the run's budget (0 when step-limited only) */
    int64_t max_steps;    /* the run's step limit (0 = none) */
    rng_state rng;        /* batch sampling */
    double guard_mult;    /* divergence guard lr multiplier */
    int retries;          /* divergence restores so far */
    double memory_s;      /* of elapsed_s, the seconds spent building the count memory (0: none) */
    int world_size;       /* ranks that trained it (data parallel; 1 = one process) */
} train_state;

/* Where a model came from, recorded in model.safetensors' metadata as
 * "data_id" and "commit" (tempo export copies them into GGUF and HF files). */
typedef struct {
    const char *data_id;  /* "sha256:<hex>" of DATA_DIR/meta.json (it lists every source's sha256) */
    const char *commit;   /* git commit tempo was built from */
} checkpoint_provenance;

/* prov may be NULL (nothing recorded). */
int checkpoint_save_model(const char *path, model *m, const run_config *cfg, const char *tokenizer_text,
                          const train_state *st, const checkpoint_provenance *prov, tempo_error *err);
int checkpoint_save_full(const char *path, model *m, const run_config *cfg, const optimizer *opt,
                         const train_state *st, tempo_error *err);

/* Load a model for evaluation from RUN_DIR (its model.safetensors), from a
 * .safetensors path, or from a GGUF file (run/gguf_import.h: llama or
 * qwen3, the transformer alone): builds the config, the model (for up to
 * max_batch sequences) and the tokenizer. */
int checkpoint_load_model(const char *run_dir_or_file, int max_batch, run_config *cfg, model **m,
                          tokenizer **tok, tempo_error *err);

/* Resume: read checkpoint.safetensors into an existing model and optimizer
 * built from the config the file holds (checkpoint_read_config), and the
 * loop state. Every weight's name and shape and the optimizer state's size
 * are checked against the model, so a mismatched file is an error.
 * *checksummed (when not NULL): 1 when the file's checksum was checked, 0
 * for a file written before checksums (loaded as it is). */
int checkpoint_load_full(const char *path, model *m, optimizer *opt, train_state *st, int *checksummed,
                         tempo_error *err);

/* Only the config stored in a checkpoint (to rebuild the model on resume). */
int checkpoint_read_config(const char *path, run_config *cfg, tempo_error *err);

#endif
