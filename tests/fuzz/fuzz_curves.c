/* fuzz_curves.c - libFuzzer harness for the judge's learning curves
 * (judge/curves.c, judge/plot_svg.c): a submission's own metrics.jsonl, read
 * by the judge, thinned, kept in the leaderboard as JSON, read back and drawn
 * into the report. Any bytes must give curves or none, never a crash, a leak
 * or undefined behaviour; the curves hold only finite points, at most
 * JUDGE_CURVE_MAX_POINTS a series, their JSON reads back to the same number of
 * points, and the plot is one closed <svg> element. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include "judge/curves.h"
#include "judge/plot_svg.h"

static void check_series(const judge_series *s)
{
    if (s->n > JUDGE_CURVE_MAX_POINTS)
        __builtin_trap();
    for (size_t i = 0; i < s->n; i++)
        if (!isfinite(s->t[i]) || !isfinite(s->v[i]))
            __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_curves.%ld.jsonl", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t wrote = fwrite(data, 1, size, f);
    if (fclose(f) || wrote != size) {
        unlink(path);
        return 0;
    }
    judge_curves c;
    tempo_error err;
    int rc = judge_curves_read(path, &c, &err);
    unlink(path);
    if (rc)
        return 0;
    check_series(&c.train_loss);
    check_series(&c.val_bpb);
    strbuf json = {0};
    judge_curves_to_json(&c, &json);
    judge_curves back;
    if (!json.oom) {
        if (judge_curves_from_json(json.data, &back, &err) || back.train_loss.n != c.train_loss.n ||
            back.val_bpb.n != c.val_bpb.n)
            __builtin_trap();
        strbuf svg = {0};
        double judged = c.val_bpb.n ? c.val_bpb.v[c.val_bpb.n - 1] : NAN;
        judge_svg_run_plot(&svg, &back, c.val_bpb.n ? c.val_bpb.t[0] : NAN, judged, "fuzz");
        if (!svg.oom && (strncmp(svg.data, "<svg", 4) || !strstr(svg.data, "</svg>") ||
                         strstr(svg.data, "nan") || strstr(svg.data, "inf")))
            __builtin_trap();
        strbuf_free(&svg);
        judge_curves_free(&back);
    }
    strbuf_free(&json);
    judge_curves_free(&c);
    return 0;
}
