/* thread_pin.c - read back the OpenMP threads' CPU bindings (see thread_pin.h). */
#include "core/thread_pin.h"

#include <omp.h>
#include <sched.h>

int thread_pin_read(int *cpu_of_thread, int max)
{
    int n = 1;
#pragma omp parallel
    {
        int t = omp_get_thread_num();
#pragma omp single
        n = omp_get_num_threads();
        cpu_set_t set;
        CPU_ZERO(&set);
        int cpu = -1;
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set)) {
                    cpu = c;
                    break;
                }
        if (t < max)
            cpu_of_thread[t] = cpu;
    }
    return n;
}

int thread_pin_all_distinct(const int *cpu_of_thread, int n)
{
    for (int i = 0; i < n; i++) {
        if (cpu_of_thread[i] < 0)
            return 0;
        for (int j = 0; j < i; j++)
            if (cpu_of_thread[j] == cpu_of_thread[i])
                return 0;
    }
    return 1;
}
