/* plan_validate.c - `tempo plan --validate` (see plan_validate.h): the rows
 * to train, running `tempo train` for each row and seed, and the report.
 * The prediction itself is plan.c's; process control is proc/runner.c's. */
#include "plan/plan_validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json_write.h"
#include "proc/runner.h"
#include "train/run_result.h"

#define TARGET_NEIGHBOUR_BPB 0.02
#define TARGET_PREDICTION_BPB 0.03

int plan_validate_rows(const run_config *base, const chip_profile *chip, const quality_law *law,
                       const quality_hybrid *hybrid, const plan_options *o, const plan_candidate *plan,
                       plan_validate_row rows[PLAN_VALIDATE_ROWS], int *n_rows, tempo_error *err)
{
    memset(rows, 0, sizeof rows[0] * PLAN_VALIDATE_ROWS);
    plan_shape p, nb[PLAN_NEIGHBOURS];
    const char *labels[PLAN_NEIGHBOURS];
    plan_shape_of(plan, o->ranks, &p);
    rows[0].label = "plan";
    rows[0].pred = *plan;
    int n = 1;
    if (plan_neighbours(&p, nb, labels))
        return tempo_fail(err, "plan --validate: the plan's width %d has no neighbours in the search", p.d_model);
    for (int k = 0; k < PLAN_NEIGHBOURS; k++) {
        plan_verdict v;
        plan_candidate c;
        if (plan_predict(base, chip, law, hybrid, o, &nb[k], &c, &v, err) < 0)
            return -1;
        if (v != PLAN_OK && v != PLAN_TOO_FEW_STEPS)
            continue; /* no config to train (or over the memory limit) */
        if (v == PLAN_TOO_FEW_STEPS)
            c.steps = 0;
        else
            plan_interval(law, hybrid, &c);
        rows[n].label = labels[k];
        rows[n].pred = c;
        n++;
    }
    *n_rows = n;
    return 0;
}

double plan_validate_mean(const plan_validate_row *r)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < r->n_runs; i++)
        if (isfinite(r->bpb[i])) {
            s += r->bpb[i];
            n++;
        }
    return n ? s / n : NAN;
}

/* What decides whether an old folder's result is this run's: its preset
 * read as tempo train reads it (a key it lacks, written by a tempo that had
 * no such key, takes the default that tempo ran with), against the planned
 * config, both as plan_preset_keys lines. -1 when the old one does not load. */
static int same_config(const char *preset_path, const run_config *planned)
{
    run_config old;
    tempo_error e;
    run_config_defaults(&old);
    if (run_config_load_preset(&old, preset_path, &e))
        return 0;
    strbuf a = {0}, b = {0};
    plan_preset_keys(&old, &a);
    plan_preset_keys(planned, &b);
    int same = a.len == b.len && a.data && b.data && !memcmp(a.data, b.data, a.len);
    strbuf_free(&a);
    strbuf_free(&b);
    return same;
}

static void run_name(const plan_validate_options *vo, const plan_candidate *c, int seed, char *out, size_t n)
{
    const model_config *m = &c->cfg.model;
    snprintf(out, n, "b%.0f-d%d-l%d-h%d-c%d-r%d-m%d-s%d", vo->budget_s, m->d_model, m->n_layers, m->n_heads,
             m->context, c->cfg.batch_size, c->cfg.memory_order, seed);
}

/* 1 when dir holds a finished run of this config and budget (*s filled). */
static int already_done(const char *dir, const run_config *planned, double budget_s, run_result_summary *s)
{
    char path[1400];
    char *text = NULL;
    size_t len = 0;
    tempo_error e;
    int done = 0;
    if (!path_exists(path_join(path, sizeof path, dir, "preset.conf")) || !same_config(path, planned))
        return 0;
    if (!file_read_all(path_join(path, sizeof path, dir, "result.json"), &text, &len, 1 << 20, &e) &&
        !run_result_read(text, len, s, &e) && isfinite(s->val_bpb) && s->budget_seconds == budget_s)
        done = 1;
    free(text);
    return done;
}

static void remove_bulk(const char *dir)
{
    static const char *const bulky[] = {"memory.bin", "checkpoint.safetensors", "model.safetensors"};
    char path[1400];
    for (size_t i = 0; i < sizeof bulky / sizeof bulky[0]; i++)
        remove(path_join(path, sizeof path, dir, bulky[i]));
}

/* Train one row for one seed; fills the row's slot i. Returns 0 when a val
 * bpb came out, 1 when the run failed (said in row->failure), -1 when it
 * could not be started. */
static int train_one(const plan_validate_options *vo, const chip_profile *chip, const plan_options *po,
                     plan_validate_row *row, int i, int seed, tempo_error *err)
{
    char name[128], dir[1200], preset_path[1400], out_log[1400], err_log[1400], result_path[1400];
    run_name(vo, &row->pred, seed, name, sizeof name);
    path_join(dir, sizeof dir, vo->work_dir, name);
    strbuf preset = {0};
    plan_preset_text(&row->pred, chip, po, &preset);
    run_result_summary s;
    int reused = already_done(dir, &row->pred.cfg, vo->budget_s, &s);
    if (!reused) {
        if (path_exists(dir) && dir_remove_tree(dir, err))
            goto fail_start;
        if (dir_create(dir, err) ||
            file_write_atomic(path_join(preset_path, sizeof preset_path, dir, "preset.conf"), preset.data,
                              preset.len, err))
            goto fail_start;
        char budget[64], seed_s[32], threads[32];
        snprintf(budget, sizeof budget, "%.17gs", vo->budget_s);
        snprintf(seed_s, sizeof seed_s, "%d", seed);
        snprintf(threads, sizeof threads, "%d", vo->threads);
        char *argv[] = {(char *)vo->tempo, "train",          "--data",  (char *)vo->data_dir, "--preset",
                        preset_path,       "--budget",       budget,    "--seed",               seed_s,
                        "--threads",       threads,          "--out",   dir,
                        /* its runs' memories go with their folders' bulk (remove_bulk): none is shared */
                        "--memory-store",  "none",           NULL};
        proc_spec spec = {
            .argv = argv,
            .stdout_log = path_join(out_log, sizeof out_log, dir, "train.out"),
            .stderr_log = path_join(err_log, sizeof err_log, dir, "train.log"),
            .log_head_bytes = 1 << 16,
            .log_tail_bytes = 1 << 16,
            /* the budget, the count memory's save, the final evaluation: generous */
            .budget_s = 2 * vo->budget_s + 1800,
            .grace_s = 30,
        };
        proc_result pr;
        if (proc_run(&spec, &pr, err))
            goto fail_start;
        char how[256];
        proc_describe(&pr, how, sizeof how);
        int ok = pr.exited && pr.exit_code == 0 && !pr.deadline_hit;
        proc_free(&pr);
        char *text = NULL;
        size_t len = 0;
        tempo_error e;
        if (!ok || file_read_all(path_join(result_path, sizeof result_path, dir, "result.json"), &text, &len,
                                 1 << 20, &e) ||
            run_result_read(text, len, &s, &e) || !isfinite(s.val_bpb)) {
            free(text);
            if (!row->failure[0])
                snprintf(row->failure, sizeof row->failure, "seed %d: tempo train %s (see %s)", seed,
                         ok ? "wrote no val bpb" : how, err_log);
            row->bpb[i] = row->transformer_bpb[i] = row->tokens_per_s[i] = row->tokens[i] = NAN;
            strbuf_free(&preset);
            return 1;
        }
        free(text);
        if (!vo->keep_files)
            remove_bulk(dir);
    }
    strbuf_free(&preset);
    row->bpb[i] = s.val_bpb;
    row->transformer_bpb[i] = row->pred.cfg.memory_order ? s.val_bpb_transformer : s.val_bpb;
    row->tokens_per_s[i] = s.tokens_per_second;
    row->tokens[i] = s.tokens >= 0 ? (double)s.tokens : NAN;
    row->n_ok++;
    fprintf(stderr, "plan: validate %-7s seed %d: val bpb %.4f (predicted %.4f), %.0f tokens/s%s\n", row->label,
            seed, s.val_bpb, row->pred.bpb, s.tokens_per_second, reused ? " (done before: reused)" : "");
    return 0;
fail_start:
    strbuf_free(&preset);
    return -1;
}

int plan_validate_train(const plan_validate_options *vo, const chip_profile *chip, const plan_options *po,
                        plan_validate_row *rows, int n_rows, tempo_error *err)
{
    if (dir_create(vo->work_dir, err))
        return -1;
    int failed = 0, total = vo->seeds * n_rows, k = 0;
    for (int seed = 1; seed <= vo->seeds; seed++)
        for (int r = 0; r < n_rows; r++) {
            plan_validate_row *row = &rows[r];
            const model_config *m = &row->pred.cfg.model;
            fprintf(stderr, "plan: validate run %d/%d: %s (d_model %d, %d layers), seed %d\n", ++k, total,
                    row->label, m->d_model, m->n_layers, seed);
            row->n_runs = seed;
            int rc = train_one(vo, chip, po, row, seed - 1, seed, err);
            if (rc < 0)
                return -1;
            failed |= rc;
        }
    return failed;
}

/* min and max of the measured bpb (over seeds) for a row */
static void spread(const plan_validate_row *r, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < r->n_runs; i++)
        if (isfinite(r->bpb[i])) {
            *lo = fmin(*lo, r->bpb[i]);
            *hi = fmax(*hi, r->bpb[i]);
        }
}

static void report_targets(const plan_validate_row *rows, int n_rows, double worst, int n_pred, int n_inside,
                           strbuf *out);

void plan_validate_report(const plan_validate_options *vo, const plan_validate_row *rows, int n_rows, strbuf *out)
{
    strbuf_printf(out, "validation: budget %.0f s, %d seed(s), %d thread(s), data %s\n", vo->budget_s, vo->seeds,
                  vo->threads, vo->data_dir);
    strbuf_printf(out, "%-8s %7s %6s %9s  %-19s %8s %8s %8s %8s  %-17s %10s %10s\n", "config", "d_model", "layers",
                  "params", "predicted [interval]", "measured", "error", "in-int", "seeds", "transformer p/m",
                  "tok/s pred", "tok/s meas");
    double worst = 0;
    int n_pred = 0, n_inside = 0;
    for (int r = 0; r < n_rows; r++) {
        const plan_validate_row *w = &rows[r];
        const plan_candidate *c = &w->pred;
        double mean = plan_validate_mean(w), lo, hi, mt = 0, mtps = 0;
        int nt = 0, ntps = 0;
        spread(w, &lo, &hi);
        for (int i = 0; i < w->n_runs; i++) {
            if (isfinite(w->transformer_bpb[i])) {
                mt += w->transformer_bpb[i];
                nt++;
            }
            if (isfinite(w->tokens_per_s[i])) {
                mtps += w->tokens_per_s[i];
                ntps++;
            }
        }
        int predicted = c->steps > 0;
        char pred[64] = "-", err_s[32] = "-", in_s[8] = "-", tr[48] = "-";
        if (predicted) {
            snprintf(pred, sizeof pred, "%.3f [%.3f-%.3f]", c->bpb, c->bpb_lo, c->bpb_hi);
            if (isfinite(mean)) {
                int inside = mean >= c->bpb_lo && mean <= c->bpb_hi;
                snprintf(err_s, sizeof err_s, "%+.3f", c->bpb - mean);
                snprintf(in_s, sizeof in_s, "%s", inside ? "yes" : "no");
                worst = fmax(worst, fabs(c->bpb - mean));
                n_pred++;
                n_inside += inside;
            }
            if (nt)
                snprintf(tr, sizeof tr, "%.3f/%.3f", c->transformer_bpb, mt / nt);
        } else {
            snprintf(pred, sizeof pred, "(under %d steps)", PLAN_MIN_STEPS);
        }
        char meas[32] = "failed", seeds[32];
        if (isfinite(mean))
            snprintf(meas, sizeof meas, "%.4f", mean);
        snprintf(seeds, sizeof seeds, "%d/%d", w->n_ok, w->n_runs);
        strbuf_printf(out, "%-8s %7d %6d %9.3g  %-19s %8s %8s %8s %8s  %-17s %10.0f %10.0f\n", w->label,
                      c->cfg.model.d_model, c->cfg.model.n_layers, c->step.params, pred, meas, err_s, in_s, seeds,
                      tr, c->step.tokens_per_s, ntps ? mtps / ntps : NAN);
        if (isfinite(lo) && hi > lo)
            strbuf_printf(out, "%-8s %7s %6s %9s  %-19s seeds span %.4f-%.4f\n", "", "", "", "", "", lo, hi);
        if (w->failure[0])
            strbuf_printf(out, "%-8s failed: %s\n", "", w->failure);
    }
    const run_config *pc = &rows[0].pred.cfg;
    if (pc->memory_order > 0 && pc->adapt_lr > 0)
        strbuf_printf(out, "transformer p/m: the law's frozen prediction against the runs' transformer as read (the "
                           "learning reader, adapt_lr %g): their difference is mostly the reader's gain, not an error\n",
                      pc->adapt_lr);
    report_targets(rows, n_rows, worst, n_pred, n_inside, out);
}

/* The report's last lines: the two targets, from the rows and the prediction errors gathered. */
static void report_targets(const plan_validate_row *rows, int n_rows, double worst, int n_pred, int n_inside,
                           strbuf *out)
{
    double plan = plan_validate_mean(&rows[0]), best = INFINITY;
    const char *best_label = NULL;
    for (int r = 1; r < n_rows; r++) {
        double m = plan_validate_mean(&rows[r]);
        if (isfinite(m) && m < best) {
            best = m;
            best_label = rows[r].label;
        }
    }
    if (isfinite(plan) && best_label)
        strbuf_printf(out,
                      "target 1 (the plan within %.2f bpb of its best neighbour): plan %.4f, best neighbour %s "
                      "%.4f: %s (%+.4f)\n",
                      TARGET_NEIGHBOUR_BPB, plan, best_label, best,
                      plan <= best + TARGET_NEIGHBOUR_BPB ? "met" : "NOT met", plan - best);
    else
        strbuf_printf(out, "target 1: not measured (the plan or every neighbour failed)\n");
    if (n_pred)
        strbuf_printf(out,
                      "target 2 (predicted within %.2f bpb of measured): worst error %.4f over %d configs: %s; "
                      "%d of %d inside the predicted interval\n",
                      TARGET_PREDICTION_BPB, worst, n_pred, worst <= TARGET_PREDICTION_BPB ? "met" : "NOT met",
                      n_inside, n_pred);
    else
        strbuf_printf(out, "target 2: not measured\n");
}

int plan_validate_json(const plan_validate_options *vo, const plan_validate_row *rows, int n_rows, strbuf *out,
                       tempo_error *err)
{
    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_field_number(&w, "budget_seconds", vo->budget_s);
    jsonw_field_int(&w, "seeds", vo->seeds);
    jsonw_field_int(&w, "threads", vo->threads);
    jsonw_field_string(&w, "data", vo->data_dir);
    jsonw_key(&w, "configs");
    jsonw_array_begin(&w);
    for (int r = 0; r < n_rows; r++) {
        const plan_validate_row *x = &rows[r];
        const plan_candidate *c = &x->pred;
        jsonw_object_begin(&w);
        jsonw_field_string(&w, "label", x->label);
        jsonw_field_int(&w, "d_model", c->cfg.model.d_model);
        jsonw_field_int(&w, "n_layers", c->cfg.model.n_layers);
        jsonw_field_int(&w, "n_heads", c->cfg.model.n_heads);
        jsonw_field_int(&w, "context", c->cfg.model.context);
        jsonw_field_int(&w, "batch_size", c->cfg.batch_size);
        jsonw_field_int(&w, "memory_order", c->cfg.memory_order);
        jsonw_field_number(&w, "params", c->step.params);
        jsonw_field_number(&w, "predicted_steps", c->steps);
        jsonw_field_number(&w, "predicted_tokens_per_s", c->step.tokens_per_s);
        jsonw_field_number(&w, "predicted_bpb", c->steps > 0 ? c->bpb : NAN);
        jsonw_field_number(&w, "predicted_bpb_lo", c->steps > 0 ? c->bpb_lo : NAN);
        jsonw_field_number(&w, "predicted_bpb_hi", c->steps > 0 ? c->bpb_hi : NAN);
        jsonw_field_number(&w, "predicted_transformer_bpb", c->steps > 0 ? c->transformer_bpb : NAN);
        jsonw_field_number(&w, "measured_bpb_mean", plan_validate_mean(x));
        jsonw_key(&w, "runs");
        jsonw_array_begin(&w);
        for (int i = 0; i < x->n_runs; i++) {
            jsonw_object_begin(&w);
            jsonw_field_int(&w, "seed", i + 1);
            jsonw_field_number(&w, "val_bpb", x->bpb[i]);
            jsonw_field_number(&w, "val_bpb_transformer", x->transformer_bpb[i]);
            jsonw_field_number(&w, "tokens_per_second", x->tokens_per_s[i]);
            jsonw_field_number(&w, "tokens", x->tokens[i]);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
        if (x->failure[0])
            jsonw_field_string(&w, "failure", x->failure);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    if (jsonw_finish(&w, err))
        return -1;
    strbuf_puts(out, "\n");
    return 0;
}
