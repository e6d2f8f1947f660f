/* activation.h - the MLP nonlinearities, forward and backward, elementwise
 * over n values (n = B*T*F for an MLP hidden layer of width F).
 *
 *   ReLU^2:  a = relu(h)^2                    da/dh = 2 relu(h)
 *   SwiGLU:  a = silu(g) * u, silu(g) = g*sigmoid(g)
 *            da/du = silu(g),  da/dg = u * sigmoid(g) * (1 + g (1 - sigmoid(g)))
 *
 * The plain loops (one line of math each, activation.c) are the portable
 * path; an AVX2 path (activation_avx2.c) is chosen at run time unless
 * TEMPO_KERNELS=portable. The tests compare both with double-precision
 * versions. No matmuls here. */
#ifndef TEMPO_ACTIVATION_H
#define TEMPO_ACTIVATION_H

#include <stddef.h>

/* h [n] -> a [n]. a may alias h. */
void act_relu2_forward(float *a, const float *h, size_t n);
/* da [n], h [n] (forward input) -> dh [n] (overwrite). dh may alias da. */
void act_relu2_backward(float *dh, const float *da, const float *h, size_t n);

/* g [n] (gate), u [n] (up) -> a [n]. a may alias g or u. */
void act_swiglu_forward(float *a, const float *g, const float *u, size_t n);
/* da [n], g [n], u [n] -> dg [n], du [n] (overwrite). dg may alias da. */
void act_swiglu_backward(float *dg, float *du, const float *da, const float *g,
                         const float *u, size_t n);

#endif
