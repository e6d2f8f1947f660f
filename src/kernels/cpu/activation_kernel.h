/* activation_kernel.h - the AVX2 + FMA bodies of the activations (internal to
 * activation.c, which splits the work over threads and picks the path). Same
 * contracts as activation.h over one contiguous range; call only when
 * kernel_path_avx2() says so. */
#ifndef TEMPO_ACTIVATION_KERNEL_H
#define TEMPO_ACTIVATION_KERNEL_H

#include <stddef.h>

void act_relu2_forward_avx2(float *a, const float *h, size_t n);
void act_relu2_backward_avx2(float *dh, const float *da, const float *h, size_t n);
void act_swiglu_forward_avx2(float *a, const float *g, const float *u, size_t n);
void act_swiglu_backward_avx2(float *dg, float *du, const float *da, const float *g,
                              const float *u, size_t n);

#endif
