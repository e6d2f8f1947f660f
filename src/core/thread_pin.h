/* thread_pin.h - where the OpenMP threads run: which CPU each thread of a
 * team is bound to, read back from the OS (sched_getaffinity), so that a run
 * can report whether pinning (OMP_PROC_BIND / OMP_PLACES, which `tempo
 * ... --pin-threads` sets before libgomp starts: see cli/main.c) took hold.
 * Nothing here binds threads itself. */
#ifndef TEMPO_THREAD_PIN_H
#define TEMPO_THREAD_PIN_H

/* Runs one parallel region of the current team size; cpu_of_thread[t] is the
 * one CPU thread t may run on, or -1 when it may run on several. Returns the
 * team size (at most max entries filled). */
int thread_pin_read(int *cpu_of_thread, int max);

/* With OpenMP's threads bound (OMP_PROC_BIND), the CPUs of all its places,
 * which libgomp built from the process's mask before binding the main thread
 * to the first one: that whole mask into *set (a cpu_set_t), their count
 * returned. 0 (and *set empty) when threads are not bound. */
int thread_pin_places_mask(void *set);

/* 1 when every thread of the team is bound to one CPU and no two share one. */
int thread_pin_all_distinct(const int *cpu_of_thread, int n);

#endif
