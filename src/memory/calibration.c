/* calibration.c - the learned map of the predicted token's probability
 * (see calibration.h). */
#include "memory/calibration.h"

#include <math.h>

#define CALIB_LOGIT_RANGE 8.0   /* knots at logits -8, -7.5, ..., 8 */

static double knot_position(double p)
{
    double step = 2 * CALIB_LOGIT_RANGE / (CALIB_KNOTS - 1);
    if (!(p > 0)) p = 1e-300;          /* also NaN: the lowest knot */
    if (p >= 1) p = 1 - 1e-16;
    double x = (log(p / (1 - p)) + CALIB_LOGIT_RANGE) / step;
    return x < 0 ? 0 : x > CALIB_KNOTS - 1 ? CALIB_KNOTS - 1 : x;
}

void calibration_identity(double row[CALIB_KNOTS])
{
    double step = 2 * CALIB_LOGIT_RANGE / (CALIB_KNOTS - 1);
    for (int j = 0; j < CALIB_KNOTS; j++)
        row[j] = 1 / (1 + exp(CALIB_LOGIT_RANGE - j * step));
}

double calibration_read(const double row[CALIB_KNOTS], double p, calib_slot *slot)
{
    double x = knot_position(p);
    int j = (int)x;
    if (j >= CALIB_KNOTS - 1) j = CALIB_KNOTS - 2;
    double f = x - j;
    if (slot) {
        slot->knot = j;
        slot->frac = f;
    }
    double q = row[j] * (1 - f) + row[j + 1] * f;
    return q < CALIB_MIN ? CALIB_MIN : q > 1 - CALIB_MIN ? 1 - CALIB_MIN : q;
}

void calibration_learn(double row[CALIB_KNOTS], const calib_slot *slot, int hit)
{
    double y = hit ? 1 : 0;
    int j = slot->knot;
    row[j] += CALIB_RATE * (1 - slot->frac) * (y - row[j]);
    row[j + 1] += CALIB_RATE * slot->frac * (y - row[j + 1]);
}
