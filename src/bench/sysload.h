/* sysload.h - how busy the rest of the machine was while we measured.
 *
 * Benchmarks on a shared 2-core machine are only as good as the quiet they
 * ran in: this samples /proc/stat (all CPUs' busy time, including time the
 * hypervisor stole) and our own CPU time (getrusage) at the start and end of
 * a run, and reports the difference as other processes' load, in cores.
 * Nothing here measures FLOPs or bytes. */
#ifndef TEMPO_SYSLOAD_H
#define TEMPO_SYSLOAD_H

/* A run counts as contended when others used more than this many cores on
 * average (a tenth of a core: enough to cost a 2-thread run ~5 %). */
#define SYSLOAD_CONTENDED_CORES 0.1

typedef struct {
    double wall;                 /* timer_now() at the start */
    double busy_s, steal_s;      /* all CPUs, from /proc/stat, seconds */
    double self_s;               /* this process's user + system time */
    int ok;                      /* 0 when /proc/stat could not be read */
} sysload_sample;

typedef struct {
    double wall_s;        /* seconds between the samples */
    double other_cores;   /* others' CPU time / wall (includes stolen time), >= 0 */
    double steal_cores;   /* stolen time alone / wall */
    int known;            /* 0 when /proc/stat was unreadable (figures are 0) */
    int contended;        /* other_cores > SYSLOAD_CONTENDED_CORES */
} sysload_report;

/* Take a sample now. Never fails (ok = 0 when /proc/stat is unreadable). */
void sysload_sample_now(sysload_sample *s);

/* Compare a sample taken at the start with the present. */
void sysload_since(const sysload_sample *start, sysload_report *r);

#endif
