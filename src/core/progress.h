/* progress.h - a progress line now and then on long work (an evaluation of a
 * whole validation split, a compression): the stage, how much of how much is
 * done, the time the stage has taken and about how long it has left. At most
 * one line every `every_s` seconds, and none for work shorter than that, so a
 * short run prints nothing. Lines go to a FILE (stderr, or a run's progress
 * stream); a meter with none is silent. */
#ifndef TEMPO_CORE_PROGRESS_H
#define TEMPO_CORE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *to;             /* NULL: silent */
    const char *what;     /* the line's start: "eval: bpb of val.txt" */
    const char *unit;     /* what is counted: "tokens" */
    double every_s;       /* the least seconds between two lines */
    const char *stage;    /* the stage being timed (NULL before the first update) */
    double stage_t0;      /* when the stage began (the meter's start before the first) */
    double last;          /* when the last line was printed (the start before any) */
    int lines;            /* lines printed so far */
    int stage_closed;     /* the stage's done == total line was printed */
} progress_meter;

/* A meter whose clock starts now. what and unit are borrowed. */
void progress_meter_start(progress_meter *p, FILE *to, const char *what, const char *unit, double every_s);

/* done of total units of `stage` (a borrowed string; NULL: unnamed). A line
 * when every_s seconds have passed since the start or the last line; a new
 * stage restarts the time left's reckoning and, once a line was printed,
 * says so at once; done == total closes the stage with a line when one was
 * printed in it. The time left is the stage's pace so far. */
void progress_meter_update(progress_meter *p, const char *stage, uint64_t done, uint64_t total);

#endif
