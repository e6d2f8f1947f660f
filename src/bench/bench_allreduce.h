/* bench_allreduce.h - `tempo bench allreduce`: the all-reduce the trainer
 * averages gradients with (dist/dist.h), timed by message size on the ranks
 * of an mpirun job, beside a memcpy of the same size on one rank (the
 * memory-copy bandwidth the target compares with). Figures as in
 * nccl-tests: algorithm bandwidth = bytes / time, bus bandwidth = algbw x
 * 2 (N - 1) / N (what each rank's link carries in a ring). Nothing else. */
#ifndef TEMPO_BENCH_ALLREDUCE_H
#define TEMPO_BENCH_ALLREDUCE_H

#include <stddef.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "dist/dist.h"

typedef struct {
    size_t bytes;
    double seconds;        /* median (nearest rank) over the timed repetitions (rank 0's clock, after a barrier) */
    double algbw_gbps, busbw_gbps;
    double memcpy_gbps;    /* one rank copying the same bytes, median */
} bench_allreduce_row;

/* One row per size (bytes, rounded down to whole floats, at least one),
 * `iters` timed repetitions each after two untimed ones. Every rank must
 * call it with the same arguments. */
int bench_allreduce_run(dist_context *d, const size_t *sizes, int n_sizes, int iters, bench_allreduce_row *rows,
                        tempo_error *err);

/* {"bench":"allreduce","ranks":N,"bytes":...,...} */
void bench_allreduce_json(const dist_context *d, const bench_allreduce_row *r, strbuf *out);

#endif
