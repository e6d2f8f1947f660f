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

int thread_pin_places_mask(void *set_)
{
    cpu_set_t *set = set_;
    CPU_ZERO(set);
    if (omp_get_proc_bind() == omp_proc_bind_false)
        return 0;
    int ids[CPU_SETSIZE];
    for (int p = 0; p < omp_get_num_places(); p++) {
        int n = omp_get_place_num_procs(p);
        if (n < 1 || n > CPU_SETSIZE)
            continue;
        omp_get_place_proc_ids(p, ids);
        for (int i = 0; i < n; i++)
            if (ids[i] >= 0 && ids[i] < CPU_SETSIZE)
                CPU_SET(ids[i], set);
    }
    return CPU_COUNT(set);
}
