/* rope.h - rotary position embedding (RoPE), forward and backward.
 *
 * Convention: half-split pairs (as in GPT-NeoX and Hugging Face Llama): within
 * each head vector of D values, element i (i < D/2) is rotated together with
 * element i + D/2 by the angle pos * theta^(-2i/D):
 *   y[i]       = x[i] cos - x[i+D/2] sin
 *   y[i+D/2]   = x[i] sin + x[i+D/2] cos
 * D must be even. The backward is the inverse rotation (angle negated).
 * Nothing else lives here (QK-norm is rmsnorm.h, attention is attention.h). */
#ifndef TEMPO_ROPE_H
#define TEMPO_ROPE_H

/* Fills cos_tab, sin_tab [max_pos, D/2] with cos/sin(pos * theta^(-2i/D)),
 * computed in double precision. Done once per model. */
void rope_table_init(float *cos_tab, float *sin_tab, int max_pos, int D, float theta);

/* x [B, T, n_heads, D] rotated in place; the row of time t has position
 * pos0 + t (pos0 = 0 for training; a decode step passes the cache length).
 * Requires pos0 + T <= the table's max_pos. Parallel over rows (static). */
void rope_forward(float *x, int B, int T, int n_heads, int D, int pos0,
                  const float *cos_tab, const float *sin_tab);

/* dx [B, T, n_heads, D]: gradient w.r.t. the rotated values in, gradient
 * w.r.t. the unrotated values out (in place): the inverse rotation. */
void rope_backward(float *dx, int B, int T, int n_heads, int D, int pos0,
                   const float *cos_tab, const float *sin_tab);

/* Plain reference of rope_forward that computes the angles itself with
 * cos/sin in double (does not use the table). */
void rope_forward_ref(float *x, int B, int T, int n_heads, int D, int pos0, float theta);

#endif
