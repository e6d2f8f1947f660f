/* comm_model.h - the data-parallel communication model: ring collectives
 * over a link (bandwidth, latency), the gradient's spans in the order the
 * backward pass hands them over (model_set_grad_ready), and a step's time on
 * N ranks with and without the sharded optimizer (ZeRO-1) and with and
 * without the reduction overlapped with the backward pass, as the trainer
 * runs them (train/train_step.h). The step's compute parts come from the
 * throughput model (plan/throughput.h) or a measured step; nothing here
 * measures, parses a chip file or prints.
 *
 * Stated assumptions: ring algorithms (an all-reduce moves 2 (N-1)/N of the
 * buffer through each rank's link and takes 2 (N-1) latency steps; a
 * reduce-scatter or all-gather half of each); one collective at a time on
 * the link, in hand-over order; with overlap, a span's collective starts
 * when the pass hands it over and progresses on its own (an engine with
 * asynchronous progress; Open MPI on this machine advances it only at the
 * trainer's polls, so the model is optimistic there); the backward pass is
 * GEMM_BWD + ATTN_BWD + half of the norms, RoPE and activations, spread
 * evenly over the layers; only the last micro-batch's backward overlaps. */
#ifndef TEMPO_PLAN_COMM_MODEL_H
#define TEMPO_PLAN_COMM_MODEL_H

#include "core/error.h"
#include "model/config.h"

typedef struct {
    char name[80];
    double gbs;          /* per rank, one direction, GB/s */
    double latency_us;   /* per collective step */
} link_model;

/* "25gbe", "100gbe", "400gbe" (Ethernet: line rate / 8, 10/5/3 us),
 * "nvlink" (an 8-GPU NVLink 4 server: 450 GB/s, 2 us) or "GBPS[:LAT_US]".
 * Errors (code 2) say what is accepted. */
int link_model_parse(link_model *l, const char *spec, tempo_error *err);

double comm_allreduce_s(double bytes, int ranks, const link_model *l);
double comm_reduce_scatter_s(double bytes, int ranks, const link_model *l);   /* = an all-gather's */

#define COMM_MAX_SPANS 1026
/* The gradient's spans in hand-over order (final norm + untied head, the
 * layers last to first, the embedding), in floats; returns how many
 * (n_layers + 2), or 0 when more than max. */
int comm_grad_spans(const model_config *c, double *floats, int max);

/* One rank's step without communication, seconds. */
typedef struct {
    double compute_s;         /* forward + backward of the rank's rows, all micro-batches, data included */
    double last_backward_s;   /* the last micro-batch's backward pass: the overlap window */
    double optimizer_s;       /* gradient norm + update of the whole model (one rank, unsharded) */
    double fixed_s;           /* per-step overheads */
} comm_step_parts;

typedef struct {
    double step_s;
    double comm_s;            /* every collective's time */
    double exposed_s;         /* the part the step waits for */
    double optimizer_s;       /* as run (1/N of it when sharded) */
} comm_step;

/* A step on `ranks` ranks: the spans' reduction (all-reduce; sharded: to
 * their owners, a reduce-scatter's volume, then an all-gather of the
 * weights, which never overlaps), overlapped or not. */
void comm_project(const comm_step_parts *p, const double *span_floats, int n_spans, int ranks, int sharded,
                  int overlap, const link_model *l, comm_step *out);

#endif
