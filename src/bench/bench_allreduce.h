/* bench_allreduce.h - `tempo bench allreduce`: the all-reduce the trainer
 * averages gradients with (parallel/dist.h), timed by message size on the ranks
 * of an mpirun job, beside a memcpy of the same size on one rank (the
 * memory-copy bandwidth the target compares with). Figures as in
 * nccl-tests: algorithm bandwidth = bytes / time, bus bandwidth = algbw x
 * 2 (N - 1) / N (what each rank's link carries in a ring). Nothing else. */
#ifndef TEMPO_BENCH_ALLREDUCE_H
#define TEMPO_BENCH_ALLREDUCE_H

#include <stddef.h>

#include "core/error.h"
#include "core/json_write.h"
#include "parallel/dist.h"

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

/* {"bench":"allreduce","ranks":N,"bytes":...,"seconds":...,"algbw_GBps":...,
 *  "busbw_GBps":...,"memcpy_GBps":...,"busbw_vs_memcpy":...} as one value
 * into w, rounded like the other benchmarks' figures: seconds to 1e-9 (the
 * clock's resolution: a 4 KiB all-reduce takes a few microseconds), GB/s
 * and the ratio to 3 decimals. */
void bench_allreduce_json(jsonw *w, const dist_context *d, const bench_allreduce_row *r);

#endif
