/* calibration.h - the hybrid model's last stage: a learned map that
 * corrects the probability the mixture gives to the one token the match
 * model predicts (an adaptive probability map, as in the PAQ family, over
 * a yes/no question: "is the next token the predicted one?").
 *
 * A row of the map is a piecewise-linear function of the logit of p,
 * CALIB_KNOTS knots evenly spread over logits -8..8, starting as the
 * identity. Reading it at p gives p'; learning moves the two knots around p
 * towards 1 if the predicted token came and 0 if not, each by its share of
 * the interpolation. The mixture (mixture.c) gives the predicted token p'
 * and scales every other token by (1 - p') / (1 - p), so a distribution
 * stays a distribution. Rows are chosen by the match model's length bin.
 *
 * This file holds the map only; where it is applied, and the rule that it
 * reads nothing of the token being scored, live in mixture.c. */
#ifndef TEMPO_CALIBRATION_H
#define TEMPO_CALIBRATION_H

#define CALIB_KNOTS 33
#define CALIB_RATE 0.02        /* how far a knot moves towards each outcome */
#define CALIB_MIN 1e-6         /* p' stays in [CALIB_MIN, 1 - CALIB_MIN] */

/* Where a read fell: the lower knot and the share of the upper one. */
typedef struct {
    int knot;
    double frac;
} calib_slot;

/* A row that maps every p to itself (at the knots; linear in between). */
void calibration_identity(double row[CALIB_KNOTS]);

/* p' for p in (0, 1); slot (may be NULL) records where it fell. */
double calibration_read(const double row[CALIB_KNOTS], double p, calib_slot *slot);

/* Move the knots of slot towards hit (1: the predicted token came). */
void calibration_learn(double row[CALIB_KNOTS], const calib_slot *slot, int hit);

#endif
