/* sysload.c - other processes' CPU use during a measurement (see sysload.h). */
#include "bench/sysload.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/timer.h"

void sysload_sample_now(sysload_sample *s)
{
    s->wall = timer_now();
    s->busy_s = s->steal_s = s->self_s = 0;
    s->ok = 0;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        s->self_s = ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec +
                    ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec;
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    /* cpu user nice system idle iowait irq softirq steal (guest is in user) */
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 7)
        return;
    double tick = (double)sysconf(_SC_CLK_TCK);
    if (tick <= 0)
        tick = 100;
    s->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
    s->steal_s = (double)v[7] / tick;
    s->ok = 1;
}

void sysload_since(const sysload_sample *start, sysload_report *r)
{
    sysload_sample now;
    sysload_sample_now(&now);
    r->wall_s = now.wall - start->wall;
    r->known = start->ok && now.ok;
    r->other_cores = r->steal_cores = 0;
    if (r->known && r->wall_s > 0) {
        double other = (now.busy_s - start->busy_s) - (now.self_s - start->self_s);
        r->other_cores = other > 0 ? other / r->wall_s : 0;
        double steal = now.steal_s - start->steal_s;
        r->steal_cores = steal > 0 ? steal / r->wall_s : 0;
    }
    r->contended = r->other_cores > SYSLOAD_CONTENDED_CORES;
}
