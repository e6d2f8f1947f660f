/* progress.c - the progress meter of progress.h. */
#include "core/progress.h"

#include <string.h>

#include "core/timer.h"

void progress_meter_start(progress_meter *p, FILE *to, const char *what, const char *unit, double every_s)
{
    memset(p, 0, sizeof *p);
    p->to = to;
    p->what = what ? what : "";
    p->unit = unit ? unit : "";
    p->every_s = every_s > 0 ? every_s : 0;
    p->stage_t0 = p->last = timer_now();
}

static void print_line(progress_meter *p, const char *stage, uint64_t done, uint64_t total, double now)
{
    double spent = now - p->stage_t0;
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    char so_far[16], left[16];
    timer_format_clock(so_far, sizeof so_far, spent);
    fprintf(p->to, "%s%s%s: %llu of %llu %s (%.0f %%) in %s", p->what, stage ? ", " : "", stage ? stage : "",
            (unsigned long long)done, (unsigned long long)total, p->unit, pct, so_far);
    if (done > 0 && done < total) {
        timer_format_clock(left, sizeof left, spent / (double)done * (double)(total - done));
        fprintf(p->to, ", about %s left", left);
    }
    fputc('\n', p->to);
    fflush(p->to);
    p->last = now;
    p->lines++;
}

void progress_meter_update(progress_meter *p, const char *stage, uint64_t done, uint64_t total)
{
    if (!p->to)
        return;
    double now = timer_now();
    if (done > total)
        done = total;
    int new_stage = p->stage != stage && (!p->stage || !stage || strcmp(p->stage, stage) != 0);
    if (new_stage) {
        p->stage = stage;
        p->stage_t0 = now;
        p->stage_closed = 0;
        if (p->lines > 0) {   /* the user has seen lines: say what runs now */
            print_line(p, stage, done, total, now);
            p->stage_closed = done == total;
            return;
        }
    }
    if (p->stage_closed)
        return;
    int printed_in_stage = p->lines > 0 && p->last >= p->stage_t0;
    if (done == total ? printed_in_stage : now - p->last >= p->every_s)
        print_line(p, stage, done, total, now);
    p->stage_closed = done == total;
}
