/* nice_ticks.h - "nice" axis tick values (multiples of 1, 2 or 5 x 10^k) for
 * the SVG plots (the judge's learning curves, the planner's budget plot).
 * Only the numbers: no drawing, no formatting here. */
#ifndef TEMPO_CORE_NICE_TICKS_H
#define TEMPO_CORE_NICE_TICKS_H

/* Tick positions inside [lo, hi]: multiples of a step of 1, 2 or 5 x 10^k
 * chosen to give about 5 intervals; writes at most max ticks and returns
 * how many (1 when lo == hi, 0 for non-finite bounds). */
int nice_ticks(double lo, double hi, double *ticks, int max);

#endif
