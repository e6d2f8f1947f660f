/* calibration.c - a calibration stage: the learned map of one token's
 * probability, applied, learned, saved and loaded (see calibration.h). */
#include "memory/calibration.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int calib_stage_init(calib_stage *c, int rows)
{
    c->rows = rows;
    c->knots = malloc(sizeof(double) * CALIB_KNOTS * (size_t)(rows ? rows : 1));
    if (!c->knots) {
        c->rows = 0;
        return -1;
    }
    for (int r = 0; r < rows; r++)
        calibration_identity(c->knots + (size_t)r * CALIB_KNOTS);
    return 0;
}

void calib_stage_free(calib_stage *c)
{
    free(c->knots);
    c->knots = NULL;
    c->rows = 0;
}

void calib_stage_copy(calib_stage *dst, const calib_stage *src)
{
    memcpy(dst->knots, src->knots, sizeof(double) * CALIB_KNOTS * (size_t)src->rows);
}

calib_point calib_point_none(int32_t token)
{
    calib_point m = {0, token, 0, 1, NULL, {0, 0}};
    return m;
}

calib_point calib_stage_read(const calib_stage *c, int row, int32_t token, double P, double mass)
{
    double *knots = c->knots + (size_t)row * CALIB_KNOTS;
    calib_point m = {1, token, 0, 1, knots, {0, 0}};
    double pc = calibration_read(knots, P, &m.slot);
    m.p_token = mass * pc;
    m.scale = (1 - pc) / (1 - P);
    return m;
}

double calib_point_apply(const calib_point *m, int32_t y, double p)
{
    if (!m->active)
        return p;
    return y == m->token ? m->p_token : p * m->scale;
}

void calib_point_learn(const calib_point *m, int32_t y)
{
    if (m->active)
        calibration_learn(m->row, &m->slot, y == m->token);
}

void calib_stage_save(const calib_stage *c, const char *key, jsonw *w)
{
    if (!c->rows)
        return;
    jsonw_key(w, key);
    jsonw_rows(w, c->knots, c->rows, CALIB_KNOTS);
}

int calib_stage_load(calib_stage *c, const json_value *file, const char *key, const char *path, tempo_error *err)
{
    const json_value *a = json_get(file, key);
    if (a && json_get_rows(a, c->knots, c->rows, CALIB_KNOTS, 0, 1, key, err))
        return tempo_error_prefix(err, path);
    return 0;
}
