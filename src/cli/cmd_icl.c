/* cmd_icl.c - `tempo icl`: in-context-learning accuracy (the CORE protocol,
 * eval/icl.h) of a trained model over the task files. Flag parsing, progress
 * and printing only; the work is eval/icl*.c. Also the progress line and the
 * results table that `tempo eval --phase 2` prints the same way. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "run/run_parts.h"
#include "memory/memory_file.h"
#include "core/fileio.h"
#include "core/number.h"
#include "core/timer.h"
#include "eval/icl_engine.h"

#define MAX_TASK_NAMES 64

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo icl --model RUN_DIR [--tasks DIR] [--task NAME]... [--shots N] [--limit N]\n"
        "                 [--seed S] [--threads N] [--out DIR] [--no-memory] [--no-cache] [--device cpu|cuda]\n"
        "  --model RUN_DIR  a run folder (its model.safetensors), a .safetensors file, or a GGUF file\n"
        "                   of llama/qwen3 with a tempo tokenizer (F32/F16/Q8_0, e.g. from tempo export)\n"
        "  --tasks DIR      the ICL folder with core_tasks.tsv (default $TEMPO_DATA/icl)\n"
        "  --task NAME      only this table entry (repeatable); default: every entry, then the\n"
        "                   extra HellaSwag subset (reported beside CORE, never inside it)\n"
        "  --shots N        few-shot examples for every task (default: the table's)\n"
        "  --limit N        score only the first N items of each task's fixed shuffled order\n"
        "  --seed S         few-shot seed base (default 1234: item i uses Python random.Random(S+i))\n"
        "  --out DIR        also write DIR/result.json\n"
        "  --no-memory      leave the run's count memory out of the mixture; --no-cache: the cache\n"
        "  --device cuda    the transformer on an NVIDIA GPU (the KV-cache engine in fp32; memory, cache\n"
        "                   and mixer on the CPU); checked on the CPU emulator (TEMPO_GPU_EMULATOR=1) only\n"
        "A run with a count memory or a cache (memory_order, cache_order) scores each continuation token by\n"
        "the mixture of the transformer, the memory and a cache of the item's own text before the token, at\n"
        "the run's fitted mixer weights (docs/hybrid_model.md).\n"
        "Per task: accuracy, its random baseline, centered accuracy (acc-base)/(1-base); CORE = the\n"
        "mean centered accuracy over the table entries present (\"CORE-18\" when 18 of 22 are).\n"
        "Progress and a table go to stderr; the last stdout line is the result JSON.\n");
}

/* ---- shared with cmd_eval.c (--phase 2) ---- */

void cli_icl_progress(void *user, const char *label, int done, int total)
{
    cli_icl_progress_state *p = user;
    double now = timer_now();
    if (p->tty) {
        int w = 30, fill = total ? (int)((long long)w * done / total) : w;
        fprintf(stderr, "\r  %-34s [%.*s%*s] %d/%d %5.0fs", label, fill,
                "##############################", w - fill, "", done, total, now - p->t0);
        if (done == total)
            fputc('\n', stderr);
    } else if (done == total) {
        fprintf(stderr, "icl: %s: %d items (%.1f s so far)\n", label, total, now - p->t0);
    }
    fflush(stderr);
}

void cli_icl_progress_init(cli_icl_progress_state *p)
{
    p->tty = isatty(2);
    p->t0 = timer_now();
}

void cli_icl_print_table(FILE *f, const icl_task_result *r, int n, const icl_summary *s)
{
    fprintf(f, "%-34s %5s %8s %16s %6s %9s %6s %7s\n", "task", "shots", "accuracy", "95% interval", "random",
            "centered", "items", "skipped");
    for (int i = 0; i < n; i++) {
        int sk = 0;
        for (int k = 0; k < ICL_SKIP_COUNT; k++)
            sk += r[i].skipped[k];
        char label[80];
        snprintf(label, sizeof label, "%s%s", r[i].spec.label, r[i].spec.in_core ? "" : " (extra)");
        if (r[i].status != ICL_TASK_OK) {
            fprintf(f, "%-34s %5d %8s %16s %6.3f %9s %6d %7d  %s\n", label, r[i].shots,
                    r[i].status == ICL_TASK_MISSING ? "missing" : "FAILED", "-", r[i].spec.random_baseline,
                    "-", r[i].n_eval, sk, r[i].status == ICL_TASK_MISSING ? "" : r[i].error);
            continue;
        }
        char ci[40];
        snprintf(ci, sizeof ci, "[%.4f, %.4f]", r[i].accuracy_lo, r[i].accuracy_hi);
        fprintf(f, "%-34s %5d %8.4f %16s %6.3f %9.4f %6d %7d\n", label, r[i].shots, r[i].accuracy, ci,
                r[i].spec.random_baseline, r[i].centered, r[i].n_eval, sk);
    }
    if (s->n_core)
        fprintf(f, "%s (%d of %d entries%s): %.4f, 95%% interval [%.4f, %.4f]   (%.1f s, %lld tokens)\n",
                s->n_core == s->n_table ? "CORE" : "CORE over the entries present", s->n_core,
                s->n_table, s->n_missing ? ", the others' files are missing" : "", s->core, s->core_lo,
                s->core_hi, s->seconds, s->tokens);
    else
        fprintf(f, "CORE: no entry could be evaluated\n");
}

/* ---- tempo icl ---- */

int cli_icl_default_tasks(char *out, size_t n)
{
    const char *d = getenv("TEMPO_DATA");
    if (!d || !*d)
        return -1;
    snprintf(out, n, "%s/icl", d);
    return 0;
}

typedef struct {
    const char *model_path, *tasks, *out_dir, *device;
    const char *names[MAX_TASK_NAMES];
    int n_names, threads, no_memory, no_cache;
    icl_options o;
} icl_args;

/* 0, the exit code of a usage error (printed), or -1 after --help. */
static int icl_flags(int argc, char **argv, icl_args *p)
{
    memset(p, 0, sizeof *p);
    p->device = "cpu";
    icl_options_default(&p->o);
    long long seed = (long long)p->o.seed;
    const cli_flag flags[] = {
        CLI_F_STRING("--model", &p->model_path),
        CLI_F_STRING("--tasks", &p->tasks),
        CLI_F_STRING("--out", &p->out_dir),
        CLI_F_LIST("--task", p->names, &p->n_names, MAX_TASK_NAMES),
        CLI_F_INT("--shots", &p->o.shots, 0, 1000000000),
        CLI_F_INT("--limit", &p->o.limit, 0, 1000000000),
        CLI_F_INT64("--seed", &seed, 0, NUMBER_MAX_SEED),
        CLI_F_INT("--threads", &p->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_SWITCH("--no-memory", &p->no_memory),
        CLI_F_SWITCH("--no-cache", &p->no_cache),
        CLI_F_CHOICE("--device", &p->device, "cpu|cuda"),
    };
    int help, bad = cli_parse_flags("icl", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return -1; }
    p->o.seed = (uint64_t)seed;
    return 0;
}

int cmd_icl(int argc, char **argv)
{
    icl_args p;
    int bad = icl_flags(argc, argv, &p);
    if (bad)
        return bad < 0 ? 0 : bad;
    const char *model_path = p.model_path, *tasks = p.tasks, *out_dir = p.out_dir;
    icl_options o = p.o;
    if (!model_path)
        return cli_usage_error("icl: --model RUN_DIR is required");
    char def[1024];
    if (!tasks || !*tasks) {
        if (cli_icl_default_tasks(def, sizeof def))
            return cli_usage_error("icl: give --tasks DIR (or set TEMPO_DATA)");
        tasks = def;
    }
    if (p.threads > 0)
        omp_set_num_threads(p.threads);
    tempo_error err;
    tempo_error_clear(&err);
    run_config cfg;
    model *m;
    tokenizer *tok;
    cli_device dev;
    if (cli_load_model("icl", model_path, 1, p.device, "fp32", &cfg, &m, &tok, &dev, &err))
        return cli_report(&err);
    cli_icl_progress_state ps;
    cli_icl_progress_init(&ps);
    o.progress = cli_icl_progress;
    o.user = &ps;
    icl_task_result *r = NULL;
    int n = 0;
    icl_summary s;
    hybrid_parts h;
    int rc = run_parts_load(model_path, &cfg, tok, run_parts_frozen(!p.no_memory, !p.no_cache), &h, &err);
    if (!rc)
        rc = icl_engine_run(m, &h, tok, tasks, p.names, p.n_names, &o, &r, &n, &s, &err);
    int mem_k = h.has_memory ? h.memory.order : 0, cache_k = h.cache_order;
    hybrid_parts_free(&h);
    cli_free_model(m, tok, &dev);
    if (rc)
        return cli_report(&err);
    cli_icl_print_table(stderr, r, n, &s);
    strbuf js = {0};
    jsonw w;
    jsonw_init(&w, &js);
    jsonw_object_begin(&w);
    icl_summary_members(&w, r, n, &s, &o);
    jsonw_field_int(&w, "memory_order", mem_k);   /* which model answered */
    jsonw_field_int(&w, "cache_order", cache_k);
    jsonw_object_end(&w);
    int json_rc = jsonw_finish(&w, &err);
    int any_ok = 0;
    for (int i = 0; i < n; i++)
        any_ok |= r[i].status == ICL_TASK_OK;
    free(r);
    if (json_rc || (out_dir && dir_create(out_dir, &err)))
        rc = cli_report(&err);
    else
        rc = cli_emit_result(&js, out_dir);
    strbuf_free(&js);
    if (!rc && !any_ok) {
        fprintf(stderr, "tempo: icl: no task could be evaluated\n");
        return 1;
    }
    return rc;
}
