/* gemv.c - y = W x (+ y) for one vector (see gemv.h): the path chosen once
 * per call (kernel_path.h), rows shared out to the threads above
 * GEMV_PAR_MIN multiply-adds. Each row's sum is computed alone, the same
 * whichever thread takes it, so the result does not depend on the thread
 * count. */
#include "kernels/cpu/gemv.h"
#include "core/omp_team.h"
#include "kernels/cpu/gemv_kernel.h"
#include "kernels/cpu/kernel_path.h"
#include "kernels/cpu/vec.h"

#include <omp.h>
#include <stddef.h>

#define GEMV_PAR_MIN 32768   /* below this many multiply-adds a parallel region costs more than it saves */

static void rows_portable(float *y, const float *x, const float *W, int in, int o0, int o1, int accumulate)
{
    for (int o = o0; o < o1; o++) {
        float d = vec_dot(W + (size_t)o * in, x, in);
        y[o] = accumulate ? y[o] + d : d;
    }
}

static void run(float *y, const float *x, const float *W, int in, int out, int accumulate, int avx2)
{
    void (*rows)(float *, const float *, const float *, int, int, int, int) =
        avx2 ? gemv_rows_avx2 : rows_portable;
    if (!omp_team_worth((size_t)out * (size_t)in, GEMV_PAR_MIN)) {
        rows(y, x, W, in, 0, out, accumulate);
        return;
    }
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        rows(y, x, W, in, (int)((long)out * t / nt), (int)((long)out * (t + 1) / nt), accumulate);
    }
}

void gemv_f32(float *y, const float *x, const float *W, int in, int out, int accumulate)
{
    run(y, x, W, in, out, accumulate, kernel_path_avx2());
}

void gemv_f32_portable(float *y, const float *x, const float *W, int in, int out, int accumulate)
{
    run(y, x, W, in, out, accumulate, 0);
}
