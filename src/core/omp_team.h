/* omp_team.h - when a loop may start an OpenMP team of its own. On this
 * project's paravirtualised host a two-thread region costs 32-40 us when
 * libgomp's worker sleeps between regions (the default passive policy), and
 * a region that starts no second thread - an `if` clause that is false, a
 * region nested in another, a team of one - still costs several us and two
 * futex system calls (lab notebook, 2026-12-05). So a loop gets a team only
 * when called from serial code, with more than one thread to use and more
 * than min_work of work; otherwise its caller runs the same loop plainly.
 * Callers branch on this, never on an `if` clause. Header-only. */
#ifndef TEMPO_OMP_TEAM_H
#define TEMPO_OMP_TEAM_H

#include <omp.h>
#include <stddef.h>

/* Floats below which a memory-bound pass over rows (a norm, a rotation, an
 * activation) runs on the calling thread: one thread streams about 256K
 * floats in the 32-40 us a two-thread region costs to start. Measured on
 * the learning reader (a step's backward over one 256-token window: passes
 * of 32K-90K floats, 17 norms and 8 rotations a step), 300 kB of val at 2
 * threads, three alternations: 16,384 -> 262,144 for the norms and RoPE,
 * 6.05 / 5.09 / 5.86 s -> 5.61 / 4.65 / 5.39 s, the same bits. */
#define OMP_TEAM_MIN_STREAM 262144

static inline int omp_team_worth(size_t work, size_t min_work)
{
    return work > min_work && omp_get_level() == 0 && omp_get_max_threads() > 1;
}

/* for (TYPE I = 0; I < N; I++) { ... } over a static team when `team` is
 * nonzero (omp_team_worth), else on the calling thread: the same
 * iterations, each independent of the others. */
#define OMP_TEAM_FOR(team, TYPE, I, N, ...)                                  \
    do {                                                                     \
        if (team) {                                                          \
            _Pragma("omp parallel for schedule(static)")                     \
            for (TYPE I = 0; I < (N); I++) { __VA_ARGS__; }                  \
        } else {                                                             \
            for (TYPE I = 0; I < (N); I++) { __VA_ARGS__; }                  \
        }                                                                    \
    } while (0)

#endif
