/* schedule.h - the learning-rate multiplier as a function of training
 * progress p in [0, 1], where p is elapsed_seconds / budget_seconds for a
 * wall-clock run (or step / max_steps for a fixed-step run). Shape:
 * linear warm-up over [0, warmup), hold at 1, then a linear warm-down over the
 * last `warmdown` share to final_frac, reached exactly at p = 1. */
#ifndef TEMPO_SCHEDULE_H
#define TEMPO_SCHEDULE_H

typedef struct {
    double warmup;      /* share of progress for warm-up, e.g. 0.02 */
    double warmdown;    /* share of progress for the final warm-down, e.g. 0.4 */
    double final_frac;  /* multiplier at p = 1, e.g. 0.0 */
} lr_schedule;

/* Multiplier in [final_frac, 1]; p outside [0,1] is clamped. */
double schedule_lr_mult(const lr_schedule *s, double p);

#endif
