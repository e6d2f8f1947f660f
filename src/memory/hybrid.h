/* hybrid.h - the parts of a run's model beside the transformer: the count
 * memory (RUN_DIR/memory.bin), the cache's order and the mixer's initial
 * weights (RUN_DIR/mixer.json), found beside model.safetensors and checked
 * against the model's vocabulary and tokenizer. What they compute lives in
 * ngram_memory.h, mixer.h and mixture.h; this file only gathers them. */
#ifndef TEMPO_HYBRID_H
#define TEMPO_HYBRID_H

#include <stdint.h>

#include "core/error.h"
#include "memory/mixer.h"
#include "memory/mixture.h"
#include "memory/ngram_memory.h"

/* What a run's parts are: run/run_parts.h maps a run's config onto it
 * (the one mapping, adapt_lr included) for every reader of a run. */
typedef struct {
    int memory_order;       /* 0: no count memory */
    int cache_order;        /* 0: no cache */
    int match_length;       /* 0: no match model */
    double mixer_lr;        /* a mixer started from equal weights: its online rate, */
    double mixer_beta;      /* and the transformer's sharpening (mixer.h) */
    double model_lr;        /* the transformer's learning rate while it reads (0: frozen) */
} hybrid_settings;

typedef struct {
    ngram_memory memory;
    int has_memory;
    int memory_borrowed;    /* 1: memory is another's (hybrid_parts_over): hybrid_parts_free leaves it */
    int cache_order;        /* 0: no cache */
    int match_length;       /* 0: no match model */
    mixer mx;               /* initial weights (fitted, or equal when the run has none) */
    int mixer_fitted;       /* 1: mx came from a fitted mixer (mixer.json, or the trainer's fit) */
    int vocab;
    double model_lr;        /* the transformer's learning rate while it reads (run_config's adapt_lr;
                               eval/bpb.h, bpb_evaluate with lr > 0); 0: it reads frozen */
} hybrid_parts;

/* Gather the parts s names of the run at run_dir_or_file (a run folder or
 * its model.safetensors): memory_order > 0 needs RUN_DIR/memory.bin (a
 * clear error when missing or foreign); cache_order > 0 turns the cache on,
 * match_length > 0 the match model; mixer.json is used when it was fitted
 * for these parts, else (other parts, or an older layout) the weights start
 * equal (at s's mixer_lr and mixer_beta); a corrupt mixer.json is an error.
 * Orders of 0 switch a component off even when the run has it (eval
 * --no-memory, --no-cache). */
int hybrid_parts_load(hybrid_parts *h, const char *run_dir_or_file, int vocab, uint64_t tokenizer_id,
                      const hybrid_settings *s, tempo_error *err);

/* The parts s names over a count memory already built (memory, borrowed:
 * it must outlive h; NULL: none) and a fitted mixer (copied; NULL: equal
 * weights at s's mixer_lr and mixer_beta): the trainer's, before its files
 * are read back. */
int hybrid_parts_over(hybrid_parts *h, int vocab, const ngram_memory *memory, const mixer *fitted,
                      const hybrid_settings *s, tempo_error *err);
void hybrid_parts_free(hybrid_parts *h);

/* 1 when h has any component beside the transformer. */
int hybrid_parts_any(const hybrid_parts *h);

/* Options for reading a stream through these parts. */
mixture_options hybrid_parts_options(const hybrid_parts *h, int adapt);

/* RUN_DIR of a run folder or of a file inside one. */
void hybrid_run_dir(const char *run_dir_or_file, char *out, size_t n);

#endif
