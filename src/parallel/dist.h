/* dist.h - several tempo processes training one model (data parallel), on
 * Open MPI when tempo was built with it (`make` uses mpicc's flags when
 * mpicc is there: TEMPO_MPI). Launched under mpirun, every process is a
 * rank of one job; launched alone (or built without MPI) it is rank 0 of a
 * world of 1, and nothing here does anything.
 *
 * What lives here: starting and ending the MPI session, the collectives the
 * trainer needs (the gradient's all-reduce, the root's decisions broadcast)
 * and, for the waits that can be long (the broadcast, the barrier: a rank
 * waiting while rank 0 builds the count memory or evaluates), a wait that
 * sleeps instead of spinning, so that an idle rank leaves the cores to the
 * ranks still working (these machines have two). The plain all-reduces
 * block (spin): every rank arrives at about the same time. The gradient's
 * reduction can also run span by span beside the backward pass
 * (dist_overlap: non-blocking collectives started as each layer's gradient
 * is final, advanced by a poll at every later span, waited for at the end;
 * Open MPI moves a non-blocking collective on only inside MPI calls, so the
 * polls are what overlaps it with compute). What does
 * not: which rank reads which rows of a batch, who writes files (the
 * trainer), how a job is launched (mpirun). */
#ifndef TEMPO_PARALLEL_DIST_H
#define TEMPO_PARALLEL_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct {
    int rank, world;   /* 0 and 1 when not under mpirun */
    int active;        /* MPI_Init was called (and MPI_Finalize is owed) */
    size_t piece;      /* floats per collective: longer buffers go in pieces (DIST_PIECE_FLOATS) */
} dist_context;

/* The float collectives work in pieces of at most this many floats (4 MB).
 * Measured with Open MPI 4.1.4 on the 2-core machine, 2 ranks (docs/
 * distributed.md): one all-reduce of 64 MB takes about 300 ms, one
 * reduce-scatter of 64 MB about 600 ms, in 1-4 MB pieces 9-12 ms; at 10 MB
 * pieces are as fast as one call. The environment variable
 * TEMPO_MPI_PIECE_FLOATS (1 .. 2^30) overrides it: the tests make the
 * pieces small to show they cover every buffer. */
#define DIST_PIECE_FLOATS ((size_t)1 << 20)

/* How many processes the launcher (mpirun) started this one among, from its
 * environment; 0 when not started by one. Read before any MPI call. */
int dist_launched_world(void);

/* 1 when this tempo was built with MPI. */
int dist_built_with_mpi(void);
/* "Open MPI v4.1.4" or similar when built with MPI, else "none". */
const char *dist_library_version(char *buf, size_t n);

/* Join the job when started by mpirun (its environment says so), else a
 * world of 1. Errors: MPI failing to start, a bad TEMPO_MPI_PIECE_FLOATS. */
int dist_init(dist_context *d, int *argc, char ***argv, tempo_error *err);
/* Leave the job: waits (sleeping) for every rank, then MPI_Finalize. */
void dist_finalize(dist_context *d);
/* End the whole job now, every rank, with this exit status (a rank that
 * failed must not leave the others waiting in a collective). */
void dist_abort(dist_context *d, int status);

/* x[0..n) = the mean over ranks of x (in place; a sum, then a scale by
 * 1/world in float). Returns 0, or -1 with err set. */
int dist_allreduce_mean_f32(dist_context *d, float *x, size_t n, tempo_error *err);
/* x[0..n) = the sum over ranks (floats), in place. */
int dist_allreduce_sum_f32(dist_context *d, float *x, size_t n, tempo_error *err);
/* x[0..n) = the sum over ranks (doubles). */
int dist_allreduce_sum_f64(dist_context *d, double *x, size_t n, tempo_error *err);
/* x[0..n) = the root's (rank 0's) values, waiting by sleeping. */
int dist_broadcast_f64(dist_context *d, double *x, size_t n, tempo_error *err);
/* Every rank reaches this point, waiting by sleeping. */
int dist_barrier(dist_context *d, tempo_error *err);

/* x[0..n) = the sum over ranks (64-bit unsigned), in place. */
int dist_allreduce_sum_u64(dist_context *d, uint64_t *x, size_t n, tempo_error *err);
/* buf[0..n) = rank root's bytes, on every rank (blocking; any size). */
int dist_broadcast_bytes(dist_context *d, void *buf, size_t n, int root, tempo_error *err);

/* The sharded optimizer's collectives (ZeRO-1). Rank r owns the span
 * x[begin[r] .. begin[r] + len[r]) of a flat buffer; the spans follow each
 * other in rank order (begin[r + 1] = begin[r] + len[r]) and each holds fewer
 * than 2^31 floats. */
/* Afterwards this rank's span of x holds the mean over ranks of that span (a
 * sum, then a scale by 1/world in float: the all-reduce's figures); the rest
 * of x is left as it was (each span is reduced to its owner, in pieces). */
int dist_reduce_scatter_mean_f32(dist_context *d, float *x, const size_t *begin, const size_t *len,
                                 tempo_error *err);
/* Every rank's span of x comes from its owner, in place. */
int dist_allgather_f32(dist_context *d, float *x, const size_t *begin, const size_t *len, tempo_error *err);
/* On rank 0, full[begin[r] ..) = rank r's mine[0 .. len[r]); full is used
 * on rank 0 only (NULL elsewhere). */
int dist_gather_f32(dist_context *d, const float *mine, float *full, const size_t *begin, const size_t *len,
                    tempo_error *err);

/* Reducing a flat gradient in spans while the backward pass still runs. Every
 * rank must start the same spans in the same order (the backward pass's), so
 * that the collectives match. Allocates only in dist_overlap_init. */
typedef struct {
    dist_context *d;
    float *x;                    /* the step's buffer, of n_total floats */
    size_t n_total;
    const size_t *begin, *len;   /* ZeRO-1 owners' spans (as above), or NULL: every rank gets the whole mean */
    void *req;                   /* [cap] MPI requests of the step's collectives */
    int n, cap;
    int failed;                  /* a collective could not start or complete */
    size_t fail_n;               /* the span that failed (for the message) */
} dist_overlap;

/* Room for max_spans spans a step over a buffer of n_total floats (each
 * span becomes one collective per piece, per owner when sharded). Returns
 * 0, or -1 when out of memory. */
int dist_overlap_init(dist_overlap *o, dist_context *d, int max_spans, size_t n_total, tempo_error *err);
void dist_overlap_free(dist_overlap *o);
/* A new step over x[0, n); begin/len: the owners' spans (NULL: all-reduce). */
void dist_overlap_begin(dist_overlap *o, float *x, size_t n, const size_t *begin, const size_t *len);
/* x[off, off + n) is final on this rank: start its sum over the ranks (to
 * its owners when sharded), and advance the ones started before. Errors are
 * kept for dist_overlap_finish (this runs inside the backward pass). */
void dist_overlap_start(dist_overlap *o, size_t off, size_t n);
/* Waits for the step's collectives; then x (all-reduce) or this rank's span
 * of x (sharded; the rest as it was) holds the mean over ranks, the same
 * figures as dist_allreduce_mean_f32 / dist_reduce_scatter_mean_f32 up to
 * the order of the sums. Returns 0, or -1 with err set. */
int dist_overlap_finish(dist_overlap *o, tempo_error *err);

#endif
