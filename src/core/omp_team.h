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
