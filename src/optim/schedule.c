/* schedule.c - warm-up / hold / warm-down learning-rate shape (see schedule.h). */
#include "optim/schedule.h"

double schedule_lr_mult(const lr_schedule *s, double p)
{
    if (p < 0) p = 0;
    if (p > 1) p = 1;
    double m = 1.0;
    if (s->warmup > 0 && p < s->warmup)
        m = (p + 1e-3) / (s->warmup + 1e-3);
    double down_start = 1.0 - s->warmdown;
    if (s->warmdown > 0 && p > down_start) {
        double q = (p - down_start) / s->warmdown;   /* 0 -> 1 over the warm-down */
        double d = 1.0 + (s->final_frac - 1.0) * q;
        if (d < m) m = d;
    }
    return m;
}
