/* calibration.h - the hybrid model's calibration stages: a learned map
 * that corrects the probability the mixture gives to one token (an
 * adaptive probability map, as in the PAQ family, over a yes/no question:
 * "is the next token this one?").
 *
 * A row of the map is a piecewise-linear function of the logit of p,
 * CALIB_KNOTS knots evenly spread over logits -8..8, starting as the
 * identity. Reading it at p gives p'; learning moves the two knots around p
 * towards 1 if the token came and 0 if not, each by its share of the
 * interpolation. The token gets p' of its part of the distribution and
 * every other token of that part is scaled by (1 - p') / (1 - p), so a
 * distribution stays a distribution.
 *
 * A stage (calib_stage) is one unit: its rows and the four things done
 * with them, here and nowhere else: apply (calib_stage_read: the point a
 * token's share falls on; calib_point_apply: any token's probability
 * after it), learn (calib_point_learn, once the token is known), save and
 * load (its rows under its key of mixer.json). The mixture has two
 * (mixer.h, mixture.h): the match model's predicted token ("calibration",
 * a row per match length bin) and the transformer's top token
 * ("calibration_top"). Which token a stage reads at a position, and its
 * share, is the mixture's to say (mixture.c: it reads the stream, and the
 * rule that nothing of the scored token is read). */
#ifndef TEMPO_CALIBRATION_H
#define TEMPO_CALIBRATION_H

#include <stdint.h>

#include "core/error.h"
#include "core/json.h"
#include "core/json_write.h"

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

/* A stage: rows of the map (0: the stage is absent). */
typedef struct {
    int rows;
    double *knots;   /* [rows][CALIB_KNOTS] */
} calib_stage;

/* rows identity rows; -1 when out of memory (c then empty). */
int calib_stage_init(calib_stage *c, int rows);
void calib_stage_free(calib_stage *c);
/* src's rows into dst, of as many rows (both from calib_stage_init). */
void calib_stage_copy(calib_stage *dst, const calib_stage *src);

/* Where a stage was read at one position: its token's probability after
 * the map and every other token's factor (inactive: nothing moves). */
typedef struct {
    int active;
    int32_t token;         /* the token the map is about (-1: none); kept when the map is not read */
    double p_token, scale; /* its probability after the map; every other token's factor */
    double *row;           /* the row read */
    calib_slot slot;
} calib_point;

/* The stage not read: every probability as it is (token kept for who asks which one it would have been). */
calib_point calib_point_none(int32_t token);

/* Apply: row `row` read at P, the token's share of a part of the
 * distribution of mass `mass`: the token gets mass P', every other token
 * of that part is scaled by (1 - P') / (1 - P), so the part keeps its mass. */
calib_point calib_stage_read(const calib_stage *c, int row, int32_t token, double P, double mass);

/* p(y) after the map, given p(y) before it (unchanged when it was not read). */
double calib_point_apply(const calib_point *m, int32_t y, double p);

/* Learn: after the token y is scored, the row read learns whether it was m's token. */
void calib_point_learn(const calib_point *m, int32_t y);

/* Save: "key": its rows (nothing for an absent stage). */
void calib_stage_save(const calib_stage *c, const char *key, jsonw *w);

/* Load: its rows from file's key, every knot in 0..1 (errors name path and
 * key); an absent key leaves the rows as they are (a file written before
 * the stage existed: the identity). */
int calib_stage_load(calib_stage *c, const json_value *file, const char *key, const char *path, tempo_error *err);

#endif
