/* hybrid_bpb.h - bits per byte of the hybrid model (docs/hybrid_model.md):
 * the transformer's sliding-window probabilities (bpb.h), then the stream
 * read in order through the count memory, the cache and the mixer, score
 * first, then learn (memory/mixture.h). Same accounting as bpb.h: every
 * token after the leading separator scored once, bpb = bits / bytes. With
 * no memory and no cache it is bpb.h's figure, bit for bit. */
#ifndef TEMPO_HYBRID_BPB_H
#define TEMPO_HYBRID_BPB_H

#include "parallel/dist.h"
#include "eval/bpb.h"
#include "memory/hybrid.h"

/* adapt = 0 freezes the cache (empty), the mixer and the transformer (eval
 * --no-adapt); with adapt and h->model_lr > 0 the transformer learns as it
 * reads (bpb_evaluate with lr > 0: one window per forward, in order, `batch`
 * unused), and its figures in res are the learning reader's. res says
 * which parts read (from h); documents and source are left for the caller.
 * fitted (may be NULL) receives the mixer as it ended: the trainer fits the
 * initial weights this way on held-out training tokens. progress (may be
 * NULL) is told the transformer's targets as they are scored, then the
 * mixture's stage ("the count memory, cache and mixer") as it starts and ends.
 * dist NULL (or a world of 1): one process. With ranks (a data-parallel job; every
 * rank must call it), every rank runs the transformer on its share of the
 * windows (bpb_options.part and parts), the per-token figures are summed
 * over the ranks, and rank 0 alone reads the stream through the mixture
 * (the count memory is rank 0's). Rank 0's result is bit for bit the single
 * process's; the other ranks get only res->model. A transformer that learns
 * as it reads runs on rank 0 alone (its windows are a sequence). */
int hybrid_bpb_evaluate(dist_context *dist, model *m, const hybrid_parts *h, int adapt, const int32_t *tokens,
                        size_t n_tokens, uint64_t n_bytes, int stride, int batch, mixer *fitted,
                        progress_meter *progress, hybrid_bpb_result *res, tempo_error *err);

#endif
