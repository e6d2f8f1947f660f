/* cmd_plan.c - `tempo plan`: flags, finding the chip and scaling files,
 * calling the planner (src/plan/) and printing. No modelling here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/data_path.h"
#include "core/fileio.h"
#include "core/number.h"
#include "plan/calibrate_gpu.h"
#include "plan/chip.h"
#include "data/token_store.h"
#include "proc/self.h"
#include "plan/plan.h"
#include "plan/plan_validate.h"
#include "plan/plan_plot.h"
#include "plan/quality.h"
#include "plan/throughput.h"

#define DEFAULT_LAW "scaling/transformer_law.conf"
#define DEFAULT_HYBRID "scaling/hybrid.conf"
#define DEFAULT_CORPUS_TOKENS 89941522.0 /* the bundled corpus prepared with --vocab 4096 */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo plan --budget D [--chip FILE] [--ranks N] [--memory GB] [--out FILE] [--explain] [--preset-only]\n"
        "       tempo plan --validate --budget D [--data DIR] [--seeds N] [--work DIR] [--keep-runs]\n"
        "       tempo plan --check PRESETS [--chip FILE] [--threads N] [--steps N]\n"
        "       tempo plan --calibrate PRESETS [--chip FILE] [--threads N] [--steps N] [--out FILE]\n"
        "       tempo plan --calibrate-gpu BENCH.jsonl[,...] --chip FILE [--out FILE]\n"
        "       tempo plan --plot FILE [--chip FILE[,FILE...]] [--budget D] [--ranks N] [--memory GB]\n"
        "  Predicts the best model a chip can train from scratch in a wall-clock budget: searches\n"
        "  width, depth, head width, context, batch, the count memory's order (0, 4, 5), the\n"
        "  vocabulary (those the law measured) and a learning-rate multiplier (0.5-2 within the\n"
        "  law's measured range), and\n"
        "  for each candidate predicts tokens/s (an op-by-op roofline of the chip with per-op\n"
        "  efficiencies), tokens seen, and val bpb with a ~90 %% interval (the law fitted to the\n"
        "  grid of short runs in configs/scaling/). Prints the chosen config as a preset file\n"
        "  (--out writes it; `tempo train --preset FILE` trains it) and the ten runners-up.\n"
        "  The base preset (cpu-default) stays the plan unless a candidate is predicted better by\n"
        "  more than that difference's own uncertainty (paired over the law's bootstrap, plus each\n"
        "  run's scatter): a measured configuration is not traded for a gain the law cannot resolve.\n"
        "  --budget D      wall-clock training budget (90s, 10m, 4h)\n"
        "  --chip FILE     a chip profile (default: this machine kind: configs/chips/cpu-zen4-2core.conf\n"
        "                  where the CPU kernels run AVX-512 on 256-bit FMA pipes with AVX-512 BF16 (bf16\n"
        "                  products, as the default trains there), cpu-avx512-2core.conf on other AVX-512,\n"
        "                  else cpu-avx2-2core.conf; TEMPO_KERNELS=avx2 picks the last)\n"
        "  --ranks N       data-parallel chips (ring all-reduce over the chip's link_gbs)\n"
        "  --memory GB     memory per chip to plan within (default: the chip's memory_gb)\n"
        "  --no-memory     the transformer alone (no count memory, cache or match model)\n"
        "  --any-shape     rank by the point prediction alone: the search's best even when it is\n"
        "                  within the uncertainty of the base preset's shape\n"
        "  --explain       what limits the plan (compute, bandwidth, memory, data) and why\n"
        "  --preset-only   print the preset alone (no runners-up, no JSON line): `tempo plan --budget 10m\n"
        "                  --preset-only > my.conf` then `tempo train --preset my.conf`; without it the\n"
        "                  last stdout line is the plan as a JSON object, as every command's is\n"
        "  --law FILE, --hybrid FILE   other coefficients (default configs/" DEFAULT_LAW ", " DEFAULT_HYBRID ")\n"
        "  --corpus-tokens N  training tokens available, in --vocab's tokens (default: the bundled\n"
        "                  corpus, 89.9 M at 4097; other vocabularies hold the same text)\n"
        "  --vocab N       fix the vocabulary, incl. separator (default: search the law's vocabularies;\n"
        "                  the corpus is counted at 4097: prepare --vocab 4096)\n"
        "  --validate      train the plan and its four neighbours (width one step down and up the\n"
        "                  search's widths, depth one less and one more) for the budget on this\n"
        "                  machine, --seeds each (default 2), and print predicted against measured\n"
        "                  val bpb and the issue's targets; vocabulary and corpus size come from\n"
        "                  --data (default data/corpus). Runs go to --work (default\n"
        "                  runs/plan-validate-<budget>s), one folder each with its preset and logs,\n"
        "                  plus report.txt and validate.json; finished runs are reused when it is\n"
        "                  run again. Bulky files (memory.bin, checkpoint, model) are removed after\n"
        "                  each run unless --keep-runs. Takes (1 + 4) x seeds x (budget + eval).\n"
        "  --check PRESETS     comma list: `bench train` each and print measured tokens/s against the\n"
        "                  prediction (committed efficiencies) and a leave-one-out prediction\n"
        "                  (efficiencies fitted on the other presets' measurements of this run)\n"
        "  --calibrate-gpu FILES  the per-op efficiencies of a GPU from the per-kernel profile in each\n"
        "                  file's last `tempo bench train --device cuda` line (run on the GPU; this fit\n"
        "                  runs anywhere), against --chip's measured peak and bandwidth\n"
        "  --calibrate PRESETS comma list: `bench train` each and write the per-op efficiencies\n"
        "                  (the chip-file fragment configs/scaling/op_efficiency_*.conf); a CPU chip's\n"
        "                  presets run with the products its train_dtype says (bf16: bf16_products=1)\n"
        "  --plot FILE     write an SVG of the plan's predicted bpb (with its interval, and its\n"
        "                  transformer alone dashed) against budgets 1m to 24h, one line per chip:\n"
        "                  the --chip files (a comma list), or every configs/chips/*.conf; --budget\n"
        "                  is marked on it; a budget too small for any plan on a chip is left out\n"
        "Partial: the law is in parameters, tokens and the batch, with corrections for the\n"
        "vocabulary and one learning-rate multiplier measured on 150-400-step runs, for depth\n"
        "against width measured on 300-2,400-step runs (the search keeps to what that term measured:\n"
        "2+ layers, d_model / n_layers 16-96) and for the family (cpu-default's SwiGLU and QK-norm,\n"
        "13 runs of 300-7,352 steps); no term for context (the search keeps to the law's 256) or\n"
        "other optimizer settings, which are cpu-default's; the hybrid relation (the learning reader\n"
        "included) rests on 7 runs of two shapes (d128 l4, d96 l3) at order 5 and vocabulary 4097,\n"
        "the only memory and vocabulary it plans a hybrid with; on this CPU the search's best shapes\n"
        "lie within that relation's scatter of the base, which stays the plan. The answers per chip:\n"
        "docs/optimal_model.md; how far they held on this machine: docs/planner.md section 6.\n");
}

/* configs/<rel> in $TEMPO_CONFIGS, beside the binary, or ./configs (core/data_path.h). */
void plan_find_config(const char *rel, char *out, size_t n)
{
    data_path_find("configs", rel, out, n);
}

/* The law and the hybrid relation: the files given, else the committed ones. */
static int load_scaling(const char *law_arg, const char *hybrid_arg, quality_law *law, quality_hybrid *hybrid,
                        tempo_error *err)
{
    char law_path[1200], hybrid_path[1200];
    if (law_arg)
        snprintf(law_path, sizeof law_path, "%s", law_arg);
    else
        plan_find_config(DEFAULT_LAW, law_path, sizeof law_path);
    if (hybrid_arg)
        snprintf(hybrid_path, sizeof hybrid_path, "%s", hybrid_arg);
    else
        plan_find_config(DEFAULT_HYBRID, hybrid_path, sizeof hybrid_path);
    return quality_law_load(law, law_path, err) || quality_hybrid_load(hybrid, hybrid_path, err) ? -1 : 0;
}


/* The fitted efficiencies under header, into out_path (atomically) or on stdout. */
static int write_calibration(const throughput_measurement *m, int n, const char *header, const char *out_path)
{
    strbuf text = {0};
    throughput_calibration_write(m, n, header, &text);
    int rc = 0;
    tempo_error err;
    if (out_path) {
        if (file_write_atomic(out_path, text.data, text.len, &err))
            rc = cli_report(&err);
    } else {
        fwrite(text.data, 1, text.len, stdout);
    }
    strbuf_free(&text);
    return rc;
}

/* --calibrate-gpu FILES: the last `bench train --device cuda` line of each
 * file of the comma list (plan/calibrate_gpu.h), fitted as --calibrate
 * fits the CPU's measurements. */
static int calibrate_gpu(const char *list, const chip_profile *chip, const char *out_path, const char *chip_path)
{
    throughput_measurement m[16];
    int n = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    tempo_error err;
    for (char *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (n == 16)
            return cli_usage_error("plan: at most 16 bench files");
        if (calibrate_gpu_file(f, chip, &m[n], &err))
            return cli_report(&err);
        fprintf(stderr, "plan: %s (%s): %.0f tokens/s measured, %.0f predicted with %s's efficiencies\n", f,
                m[n].preset, m[n].measured_tokens_per_s, m[n].predicted_tokens_per_s, chip_path);
        n++;
    }
    char header[2048];
    snprintf(header, sizeof header,
             "# Per-op efficiencies of %s measured by `tempo bench train --device cuda` (its per-kernel\n"
             "# profile of one step, less the wait each profiled call adds), against the roofline with this\n"
             "# chip file's measured peak and bandwidth; from %s.\n"
             "# Re-measure: on the GPU, build/tempo bench train --device cuda [...] > BENCH.jsonl; then anywhere,\n"
             "#   build/tempo plan --calibrate-gpu BENCH.jsonl[,...] --chip %s --out THIS_FILE\n",
             chip->name, list, chip_path);
    return write_calibration(m, n, header, out_path);
}

/* --check / --calibrate: bench train each preset of the comma list. */
static int measure_presets(const char *list, const chip_profile *chip, int vocab, int threads, int steps,
                           int calibrate, const char *out_path, const char *chip_path)
{
    throughput_measurement m[16];
    run_config cfgs[16];
    int n = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    tempo_error err;
    double load = 0;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n == 16)
            return cli_usage_error("plan: at most 16 presets");
        run_config c;
        if (cli_load_preset(p, NULL, 0, vocab, &c, &err))
            return cli_report(&err);
        /* a CPU's products as its chip file describes them (train_dtype), whatever the preset says */
        if (!strcmp(chip->kind, "cpu"))
            c.model.bf16_products = strcmp(chip->train_dtype, "bf16") ? MODEL_PRODUCTS_FP32 : MODEL_PRODUCTS_BF16;
        if (throughput_measure(&c, chip, threads, steps, &m[n], &err))
            return cli_report(&err);
        cfgs[n] = c;
        fprintf(stderr, "plan: %s measured %.0f tokens/s, predicted %.0f\n", p, m[n].measured_tokens_per_s,
                m[n].predicted_tokens_per_s);
        load += m[n].other_load_cores;
        n++;
    }
    if (n == 0)
        return cli_usage_error("plan: no presets in '%s'", list);
    if (calibrate) {
        char header[2048];
        snprintf(header, sizeof header,
                 "# Per-op efficiencies measured on this machine (fraction of the op's roofline time,\n"
                 "# max(FLOPs / peak, bytes / bandwidth) with %s's peak and bandwidth, that the op\n"
                 "# reached in `tempo bench train`), summed over the presets %s,\n"
                 "# %d thread(s), %d steps each; others' load meanwhile %.2f cores on average.\n"
                 "# Re-measure (on a quiet machine): build/tempo plan --calibrate %s --chip %s\n"
                 "#   --threads %d --steps %d --out THIS_FILE\n",
                 chip->name, list, threads, steps, load / n, list, chip_path, threads, steps);
        return write_calibration(m, n, header, out_path);
    }
    printf("%-18s %12s %12s %8s %12s %8s %10s\n", "preset", "measured", "predicted", "error", "leave-1-out",
           "error", "load");
    for (int i = 0; i < n; i++) {
        /* leave-one-out: efficiencies fitted now on the other presets (needs 2 or more) */
        double loo = 0;
        chip_profile other;
        step_prediction p;
        if (n > 1 && !throughput_chip_refit(chip_path, m, n, i, &other, &err) &&
            !throughput_predict(&cfgs[i], &other, 1, &p, &err))
            loo = p.tokens_per_s;
        printf("%-18s %12.0f %12.0f %+7.1f%% %12.0f %+7.1f%% %10.2f\n", m[i].preset, m[i].measured_tokens_per_s,
               m[i].predicted_tokens_per_s, 100 * (m[i].predicted_tokens_per_s / m[i].measured_tokens_per_s - 1),
               loo, loo > 0 ? 100 * (loo / m[i].measured_tokens_per_s - 1) : 0.0, m[i].other_load_cores);
    }
    return 0;
}

/* The JSON line's account of the base preset against the search (plan_keep_base). */
static void base_json(const plan_result *r, jsonw *w)
{
    static const char *const status[] = {"not tried", "not a candidate", "beaten", "kept"};
    jsonw_field_string(w, "base", status[r->base_status]);
    if (r->base_status == PLAN_BASE_BEATEN || r->base_status == PLAN_BASE_KEPT) {
        jsonw_field_number(w, "base_val_bpb", r->base_bpb);
        jsonw_field_number(w, "base_gain", r->base_gain);
        jsonw_field_number(w, "base_margin", r->base_margin);
    }
}

/* The last stdout line: the plan as a JSON object (the preset text above it, or in --out). */
static void plan_json(const plan_result *r, const chip_profile *chip, const plan_options *o, const char *out,
                      strbuf *js)
{
    const plan_candidate *c = &r->best[0];
    const model_config *m = &c->cfg.model;
    jsonw w;
    jsonw_init(&w, js);
    jsonw_object_begin(&w);
    jsonw_field_string(&w, "plan", "tempo");
    jsonw_field_string(&w, "chip", chip->name);
    jsonw_field_number(&w, "budget_seconds", o->budget_s);
    jsonw_field_int(&w, "ranks", o->ranks);
    jsonw_field_int(&w, "d_model", m->d_model);
    jsonw_field_int(&w, "n_layers", m->n_layers);
    jsonw_field_int(&w, "n_heads", m->n_heads);
    jsonw_field_int(&w, "context", m->context);
    jsonw_field_int(&w, "batch_size", c->cfg.batch_size);
    jsonw_field_int(&w, "vocab", m->vocab_size);
    jsonw_field_int(&w, "memory_order", c->cfg.memory_order);
    jsonw_field_number(&w, "lr_mult", c->lr_mult);
    jsonw_field_number(&w, "params", c->step.params);
    jsonw_field_number(&w, "tokens_per_second", c->step.tokens_per_s);
    jsonw_field_number(&w, "steps", c->steps);
    jsonw_field_number(&w, "tokens_seen", c->tokens_seen);
    jsonw_field_number(&w, "memory_build_seconds", c->memory_build_s);
    jsonw_field_number(&w, "val_bpb", c->bpb);
    jsonw_field_number(&w, "val_bpb_lo", c->bpb_lo);
    jsonw_field_number(&w, "val_bpb_hi", c->bpb_hi);
    jsonw_field_number(&w, "val_bpb_transformer", c->transformer_bpb);
    jsonw_field_bool(&w, "extrapolated", c->outside_law);
    base_json(r, &w);
    if (out)
        jsonw_field_string(&w, "preset_file", out);
    else
        jsonw_field_null(&w, "preset_file");
    jsonw_object_end(&w);
}

static void print_runners_up(const plan_result *r)
{
    printf("\n# rank  d_model layers heads ctx batch mem vocab  lr x  params     tokens/s   tokens     bpb    interval\n");
    for (int i = 0; i < r->n_keep; i++) {
        const plan_candidate *c = &r->best[i];
        const model_config *m = &c->cfg.model;
        printf("# %-4d  %7d %6d %5d %4d %5d %3d %5d %5.2f  %9.3g  %9.0f  %9.3g  %.3f  %.3f-%.3f%s\n", i, m->d_model,
               m->n_layers, m->n_heads, m->context, c->cfg.batch_size, c->cfg.memory_order, m->vocab_size,
               c->lr_mult, c->step.params, c->step.tokens_per_s, c->tokens_seen, c->bpb, c->bpb_lo, c->bpb_hi,
               c->outside_law ? "  (extrapolated)" : "");
    }
    if (r->base_status == PLAN_BASE_KEPT && r->base_gain <= 0) {
        printf("# rank 0 is the base preset's shape: the search found none predicted better\n");
    } else if (r->base_status == PLAN_BASE_KEPT) {
        const model_config *m = &r->searched_best.cfg.model;
        printf("# rank 0 is the base preset's shape, kept: the search's best (d_model %d, %d layers, batch %d) is "
               "predicted %.3f bpb better, inside that difference's uncertainty %.3f (--any-shape takes it)\n",
               m->d_model, m->n_layers, r->searched_best.cfg.batch_size, r->base_gain, r->base_margin);
    } else if (r->base_status == PLAN_BASE_BEATEN) {
        printf("# the base preset's shape is predicted %.3f bpb worse than rank 0, beyond that difference's "
               "uncertainty %.3f\n", r->base_gain, r->base_margin);
    }
}

/* The prepared corpus's vocabulary and training tokens, for the plan. */
static int read_corpus(const char *data_dir, plan_options *o, tempo_error *err)
{
    char path[1200];
    token_file tf;
    if (token_file_open(&tf, path_join(path, sizeof path, data_dir, "train.tok"), err))
        return -1;
    o->vocab_size = (int)tf.vocab_size;
    o->corpus_tokens = (double)tf.n_tokens;
    token_file_close(&tf);
    return 0;
}

/* --validate: train the plan r->best[0] and its neighbours, print the
 * comparison, keep it in the work folder. */
static int validate(const run_config *base, const chip_profile *chip, const quality_law *law,
                    const quality_hybrid *hybrid, const plan_options *o, const plan_result *r,
                    plan_validate_options *vo)
{
    tempo_error err;
    char exe[1200], work[1200], path[1400];
    if (proc_self_exe(exe, sizeof exe, &err))
        return cli_report(&err);
    if (!vo->work_dir) {
        snprintf(work, sizeof work, "runs/plan-validate-%.0fs", o->budget_s);
        vo->work_dir = work;
    }
    vo->tempo = exe;
    plan_validate_row rows[PLAN_VALIDATE_ROWS];
    int n = 0;
    if (plan_validate_rows(base, chip, law, hybrid, o, &r->best[0], rows, &n, &err))
        return cli_report(&err);
    fprintf(stderr, "plan: validating the plan and %d neighbours, %d seed(s), budget %.0f s, in %s\n", n - 1,
            vo->seeds, o->budget_s, vo->work_dir);
    int rc = plan_validate_train(vo, chip, o, rows, n, &err);
    if (rc < 0)
        return cli_report(&err);
    strbuf text = {0}, json = {0};
    plan_validate_report(vo, rows, n, &text);
    fwrite(text.data, 1, text.len, stdout);
    if (plan_validate_json(vo, rows, n, &json, &err) ||
        file_write_atomic(path_join(path, sizeof path, vo->work_dir, "validate.json"), json.data, json.len,
                          &err) ||
        file_write_atomic(path_join(path, sizeof path, vo->work_dir, "report.txt"), text.data, text.len, &err))
        rc = cli_report(&err);
    strbuf_free(&text);
    strbuf_free(&json);
    return rc ? 1 : 0;
}

/* --plot FILE: the chips of chip_list (or every .conf in configs/chips), the
 * default budgets, one SVG written atomically (plan/plan_plot.h). */
static int write_plot(const char *path, const char *chip_list, const char *law_arg, const char *hybrid_arg,
                      const plan_options *o, int other_mode)
{
    if (other_mode)
        return cli_usage_error("plan: --plot goes without --out, --check, --calibrate, --explain and --validate");
    char dir[1200];
    plan_find_config("chips", dir, sizeof dir);
    tempo_error err;
    plan_plot_chip chips[PLAN_PLOT_MAX_CHIPS];   /* about 21 KB */
    plan_plot_point points[PLAN_PLOT_MAX_POINTS]; /* about 33 KB */
    double budgets[PLAN_PLOT_MAX_BUDGETS];
    int n_budgets = plan_plot_default_budgets(budgets, PLAN_PLOT_MAX_BUDGETS);
    quality_law law;
    quality_hybrid hybrid;
    run_config base;
    int n_chips = plan_plot_load_chips(chip_list, dir, chips, PLAN_PLOT_MAX_CHIPS, &err);
    if (n_chips < 0 || load_scaling(law_arg, hybrid_arg, &law, &hybrid, &err) ||
        cli_load_preset("cpu-default", NULL, 0, o->vocab_size, &base, &err))
        return cli_report(&err);
    int n = plan_plot_points(&base, chips, n_chips, &law, &hybrid, o, budgets, n_budgets, points,
                             PLAN_PLOT_MAX_POINTS, &err);
    if (n < 0)
        return cli_report(&err);
    strbuf svg = {0};
    plan_plot_svg(chips, n_chips, points, n, o->budget_s, &svg);
    int rc = 0;
    if (svg.oom) {
        tempo_fail(&err, "plan: out of memory drawing the plot");
        rc = cli_report(&err);
    } else if (file_write_atomic(path, svg.data, svg.len, &err)) {
        rc = cli_report(&err);
    } else {
        fprintf(stderr, "plan: wrote %s (%d chip%s, %d points)\n", path, n_chips, n_chips == 1 ? "" : "s", n);
    }
    strbuf_free(&svg);
    return rc;
}

/* The command line of `tempo plan`. */
typedef struct {
    plan_options o;
    plan_validate_options vo;
    const char *chip_arg, *out, *law_arg, *hybrid_arg, *check, *calib, *calib_gpu, *plot;
    int explain, threads, steps, do_validate, preset_only;
} plan_args;

/* Reads the flags into *a; nonzero (the exit status) on a bad one. */
static int parse_args(int argc, char **argv, plan_args *a, int *help)
{
    *a = (plan_args){.o = {.ranks = 1, .corpus_tokens = DEFAULT_CORPUS_TOKENS, .vocab_size = 4097, .search_vocab = 1,
                           .allow_memory = 1, .keep_base = 1},
                     .vo = {.data_dir = "data/corpus", .seeds = 2, .ranks = 1},
                     .threads = 2,
                     .steps = 5};
    plan_options *o = &a->o;
    plan_validate_options *vo = &a->vo;
    int no_memory = 0, vocab = 0, any_shape = 0;
    const cli_flag flags[] = {
        CLI_F_DURATION("--budget", &o->budget_s),
        CLI_F_STRING("--chip", &a->chip_arg),
        CLI_F_INT("--ranks", &o->ranks, 1, 1 << 20),
        CLI_F_REAL("--memory", &o->memory_gb, 0, 1e7, 1),
        CLI_F_STRING("--out", &a->out),
        CLI_F_STRING("--law", &a->law_arg),
        CLI_F_STRING("--hybrid", &a->hybrid_arg),
        CLI_F_REAL("--corpus-tokens", &o->corpus_tokens, 0, 1e15, 1),
        CLI_F_INT("--vocab", &vocab, 2, 1 << 24),
        CLI_F_INT("--threads", &a->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_INT("--steps", &a->steps, 1, 1000),
        CLI_F_STRING("--data", &vo->data_dir),
        CLI_F_STRING("--work", &vo->work_dir),
        CLI_F_INT("--seeds", &vo->seeds, 1, PLAN_VALIDATE_MAX_SEEDS),
        CLI_F_STRING("--check", &a->check),
        CLI_F_STRING("--calibrate", &a->calib),
        CLI_F_STRING("--calibrate-gpu", &a->calib_gpu),
        CLI_F_STRING("--plot", &a->plot),
        CLI_F_SWITCH("--explain", &a->explain),
        CLI_F_SWITCH("--preset-only", &a->preset_only),
        CLI_F_SWITCH("--validate", &a->do_validate),
        CLI_F_SWITCH("--keep-runs", &vo->keep_files),
        CLI_F_SWITCH("--no-memory", &no_memory),
        CLI_F_SWITCH("--any-shape", &any_shape),
    };
    int bad = cli_parse_flags("plan", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), help);
    if (bad || *help)
        return bad;
    if (no_memory)
        o->allow_memory = 0;
    if (any_shape)
        o->keep_base = 0;
    if (vocab) {
        o->vocab_size = vocab;
        o->search_vocab = 0;
    }
    return 0;
}

/* The plan's preset (to stdout, and to --out), then unless --preset-only the runners-up, the
 * --explain text and the JSON line. */
static int print_plan(const plan_result *r, const chip_profile *chip, const quality_law *law, const plan_args *a)
{
    tempo_error err;
    strbuf text = {0};
    plan_preset_text(&r->best[0], chip, &a->o, &text);
    int rc = 0;
    if (a->out && file_write_atomic(a->out, text.data, text.len, &err))
        rc = cli_report(&err);
    if (!rc) {
        fwrite(text.data, 1, text.len, stdout);
        if (!a->preset_only) {
            print_runners_up(r);
            if (a->explain) {
                strbuf why = {0};
                plan_explain(r, chip, law, &a->o, &why);
                printf("\n%s", why.data);
                strbuf_free(&why);
            }
            strbuf js = {0};
            plan_json(r, chip, &a->o, a->out, &js);
            rc = cli_emit_result(&js, NULL);
            strbuf_free(&js);
        }
    }
    strbuf_free(&text);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    int help, bad = parse_args(argc, argv, &a, &help);
    if (bad)
        return bad;
    if (help) {
        usage(stdout);
        return 0;
    }
    plan_options *o = &a.o;
    if (a.plot)
        return write_plot(a.plot, a.chip_arg, a.law_arg, a.hybrid_arg, o,
                          a.out || a.check || a.calib || a.explain || a.do_validate);
    const char *default_file = chip_default_file();
    char chip_path[1200], default_name[64];
    snprintf(default_name, sizeof default_name, "configs/%s", default_file);
    if (a.chip_arg)
        snprintf(chip_path, sizeof chip_path, "%s", a.chip_arg);
    else
        plan_find_config(default_file, chip_path, sizeof chip_path);
    tempo_error err;
    chip_profile chip;
    if (chip_load(&chip, chip_path, &err))
        return cli_report(&err);
    const char *chip_name = a.chip_arg ? a.chip_arg : default_name;
    if (a.calib_gpu)
        return calibrate_gpu(a.calib_gpu, &chip, a.out, chip_name);
    if (a.check || a.calib)
        return measure_presets(a.check ? a.check : a.calib, &chip, o->vocab_size, a.threads, a.steps,
                               a.calib != NULL, a.out, chip_name);
    if (!(o->budget_s > 0))
        return cli_usage_error("plan: --budget is required (tempo plan --help)");
    quality_law law;
    quality_hybrid hybrid;
    if (load_scaling(a.law_arg, a.hybrid_arg, &law, &hybrid, &err))
        return cli_report(&err);
    if (a.do_validate) {
        if (o->ranks != 1)
            return cli_usage_error("plan: --validate trains on this machine in one process: no --ranks");
        if (read_corpus(a.vo.data_dir, o, &err))
            return cli_report(&err);
        o->search_vocab = 0;   /* the runs train on this data: its vocabulary */
        a.vo.budget_s = o->budget_s;
        a.vo.threads = a.threads;
    }
    run_config base;
    if (cli_load_preset("cpu-default", NULL, 0, o->vocab_size, &base, &err))
        return cli_report(&err);
    plan_result r;
    if (plan_search(&base, &chip, &law, &hybrid, o, &r, &err))
        return cli_report(&err);
    if (a.do_validate)
        return validate(&base, &chip, &law, &hybrid, o, &r, &a.vo);
    return print_plan(&r, &chip, &law, &a);
}
