/* nice_ticks.c - axis tick values of 1, 2 or 5 x 10^k (see nice_ticks.h). */
#include "core/nice_ticks.h"

#include <math.h>

int nice_ticks(double lo, double hi, double *ticks, int max)
{
    if (!isfinite(lo) || !isfinite(hi) || max < 1)
        return 0;
    if (hi <= lo) {
        ticks[0] = lo;
        return 1;
    }
    /* the step of 1, 2, 5 or 10 x 10^k that gives closest to 5 intervals */
    double range = hi - lo, mag = pow(10, floor(log10(range / 5)));
    double cand[] = {1, 2, 5, 10}, step = mag;
    for (int i = 0; i < 4; i++)
        if (fabs(range / (cand[i] * mag) - 5) < fabs(range / step - 5))
            step = cand[i] * mag;
    int n = 0;
    for (double t = ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9 && n < max; t += step)
        ticks[n++] = fabs(t) < step * 1e-9 ? 0 : t;
    return n;
}
