/* lane_signal.h - a count that one thread raises and another waits on,
 * inside one OpenMP region: the model's two-lane backward (one thread runs
 * the chain of input gradients and posts after each stage, the other waits
 * for a stage's outputs before it computes that stage's weight gradients).
 * A post is a release store, a wait an acquire load, so whatever the poster
 * wrote before posting is visible to the waiter after it returns. A waiter
 * spins a short while (a stage is tens of microseconds away), then yields
 * its core on every look, so that on a shared machine it never keeps another
 * process (or its own poster) off the core for long. libgomp's barriers
 * cannot do this under tempo's passive wait policy: every one of them would
 * sleep and be woken (32-40 us here). Header-only. */
#ifndef TEMPO_LANE_SIGNAL_H
#define TEMPO_LANE_SIGNAL_H

#include <sched.h>
#include <stdatomic.h>

typedef struct {
    atomic_int posted;
} lane_signal;

static inline void lane_signal_init(lane_signal *s)
{
    atomic_init(&s->posted, 0);
}

/* One more stage done (its outputs written before this call). NULL: nothing. */
static inline void lane_signal_post(lane_signal *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->posted, 1, memory_order_release);
}

/* The stages posted so far (NULL: a very large count, as if all were). */
static inline int lane_signal_posted(lane_signal *s)
{
    return s ? atomic_load_explicit(&s->posted, memory_order_acquire) : 1 << 30;
}

/* Returns once at least n stages have been posted. NULL: at once. */
static inline void lane_signal_wait(lane_signal *s, int n)
{
    if (!s)
        return;
    for (int spin = 0; spin < 2000; spin++) {   /* about 50-100 us of pauses */
        if (atomic_load_explicit(&s->posted, memory_order_acquire) >= n)
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    while (atomic_load_explicit(&s->posted, memory_order_acquire) < n)
        sched_yield();
}

#endif
