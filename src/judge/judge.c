/* judge.c - one attempt from submission folder to leaderboard row (see
 * judge.h). Process control is judge/runner.h, data judge/train_data.h,
 * scoring judge/score.h and judge/stats.h, storage judge/leaderboard_db.h. */
#include "judge/judge.h"
#include "core/text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/data_path.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "eval/eval_result.h"
#include "judge/curves.h"
#include "judge/leaderboard_db.h"
#include "judge/manifest.h"
#include "judge/model_check.h"
#include "judge/provenance.h"
#include "proc/self.h"
#include "proc/runner.h"
#include "judge/sandbox.h"
#include "judge/score.h"
#include "judge/stats.h"
#include "judge/submission.h"
#include "judge/train_data.h"
#include "train/metrics_log.h"
#include "train/run_result.h"

extern char **environ;

#define MAX_ENV 64
#define EVAL_LINE_MAX (1 << 20)

/* Everything one attempt's runs share. */
typedef struct {
    const judge_options *o;
    judge_manifest m;
    judge_data data;
    char tempo_bin[PATH_MAX];
    char attempt_dir[PATH_MAX];
    char val_path[PATH_MAX];
    int phase, threads;
    int ranks;                 /* > 1: tempo train under mpirun -np ranks, threads / ranks each */
    long long steps;
    int train_has_no_eval;     /* `tempo train --help` lists --no-eval */
    int sandboxed;             /* runs go through judge/sandbox.h (not --no-sandbox) */
    judge_sandbox sb;
    char bin_copy[PATH_MAX + 32]; /* the read-only copy of tempo a sandbox sees at tempo_bin */
    char configs_dir[PATH_MAX];   /* tempo's configs/ beside its binary (presets), "" when absent */
    char configs_copy[PATH_MAX + 32]; /* its copy in the attempt folder, shown read-only at configs_dir */
} attempt_ctx;

/* The deadline snapshot: the model (its weights, and a hybrid model's
 * memory.bin and mixer.json) as it is when the run ends or is stopped. */
typedef struct {
    char src[PATH_MAX + 32], dst[PATH_MAX + 32];
    int taken;
    int at_deadline;
    char problem[300];
} snapshot;

static void take_snapshot(void *ctx, int at_deadline)
{
    snapshot *s = ctx;
    s->at_deadline = at_deadline;
    struct stat st;
    if (lstat(s->src, &st) != 0) {
        text_fmt(s->problem, sizeof s->problem, "no model.safetensors in the output folder");
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        text_fmt(s->problem, sizeof s->problem, "model.safetensors is not a regular file (a symlink?)");
        return;
    }
    tempo_error e;
    if (judge_copy_file(s->src, s->dst, &e)) {
        text_fmt(s->problem, sizeof s->problem, "cannot take the model: %s", e.msg);
        return;
    }
    /* a hybrid model's other parts live beside its weights (docs/hybrid_model.md) */
    static const char *const parts[] = {"memory.bin", "mixer.json"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char from[PATH_MAX + 32], to[PATH_MAX + 32];
        text_fmt(from, sizeof from, "%.*s/%s", (int)(strrchr(s->src, '/') - s->src), s->src, parts[i]);
        text_fmt(to, sizeof to, "%.*s/%s", (int)(strrchr(s->dst, '/') - s->dst), s->dst, parts[i]);
        if (lstat(from, &st) != 0)
            continue;
        if (!S_ISREG(st.st_mode) || judge_copy_file(from, to, &e)) {
            text_fmt(s->problem, sizeof s->problem, "cannot take the model's %s%s%s", parts[i],
                      S_ISREG(st.st_mode) ? ": " : " (not a regular file)", S_ISREG(st.st_mode) ? e.msg : "");
            return;
        }
    }
    s->taken = 1;
}

void judge_options_default(judge_options *o)
{
    memset(o, 0, sizeof *o);
    o->budget_s = 1800;
    o->seeds = 1;
    o->seed = 1;
    o->vocab = 4096;
    o->grace_s = 5;
    o->log_bytes = 1 << 20;
    o->flood_bytes = 64ull << 20;
    o->eval_timeout_s = 0;   /* the budget (at least EVAL_CAP_MIN_S): judge_eval_cap */
    o->max_procs = 512;
    o->disk_bytes = 16ull << 30;
    o->db_path = "leaderboard.sqlite";
    o->work_dir = "runs/judge";
    o->progress = stderr;
}

static void say(const judge_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const judge_options *o, const char *fmt, ...)
{
    if (!o->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("judge: ", o->progress);
    vfprintf(o->progress, fmt, ap);
    fputc('\n', o->progress);
    fflush(o->progress);
    va_end(ap);
}

static uint64_t default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)page / 10 * 8;
}

/* ---- environment ------------------------------------------------------ */

typedef struct {
    char *items[MAX_ENV + 1];
    int n;
    char store[MAX_ENV][PATH_MAX + 64];
} env_list;

static void env_add(env_list *e, const char *name, const char *value)
{
    if (e->n >= MAX_ENV || !value)
        return;
    text_fmt(e->store[e->n], sizeof e->store[e->n], "%s=%s", name, value);
    e->items[e->n] = e->store[e->n];
    e->n++;
    e->items[e->n] = NULL;
}

static void env_addf(env_list *e, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void env_addf(env_list *e, const char *name, const char *fmt, ...)
{
    char v[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    env_add(e, name, v);
}

/* The PATH a submission's command runs with (and mpirun is looked up in):
 * the judge's own, or a plain default when it has none. */
static const char *child_path(void)
{
    const char *path = getenv("PATH");
    return path ? path : "/usr/local/bin:/usr/bin:/bin";
}

/* What a submission's command sees: a clean environment (no TEMPO_DATA: it
 * would lead to the validation text) with the documented variables. */
static void submission_env(env_list *e, const attempt_ctx *c, const char *run_dir, const char *out_dir,
                           const char *copy_dir, uint64_t seed, uint64_t memory)
{
    e->n = 0;
    e->items[0] = NULL;
    const char *keep[] = {"HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "XDG_CACHE_HOME", "TEMPO_HW_PROFILE"};
    env_add(e, "PATH", child_path());
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        if (!c->sandboxed || (strcmp(keep[i], "HOME") && strcmp(keep[i], "XDG_CACHE_HOME")))
            env_add(e, keep[i], getenv(keep[i]));
    if (c->sandboxed) { /* the judge's home is not in the sandbox: the private temporary folder stands in */
        env_addf(e, "HOME", "%s/tmp", run_dir);
        env_addf(e, "XDG_CACHE_HOME", "%s/tmp/.cache", run_dir);
    }
    env_addf(e, "TMPDIR", "%s/tmp", run_dir);
    env_add(e, "TEMPO_DATA_DIR", c->data.dir);
    if (c->data.text_dir[0])
        env_add(e, "TEMPO_TRAIN_TEXT", c->data.text_dir);
    env_add(e, "TEMPO_OUT_DIR", out_dir);
    env_add(e, "TEMPO_SUBMISSION_DIR", copy_dir);
    env_addf(e, "TEMPO_BUDGET_SECONDS", "%.3f", c->o->budget_s);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* to the millisecond: time() would round the deadline down */
    env_addf(e, "TEMPO_DEADLINE_UNIX", "%.3f", (double)now.tv_sec + 1e-9 * (double)now.tv_nsec + c->o->budget_s);
    env_addf(e, "TEMPO_THREADS", "%d", c->threads);
    env_addf(e, "TEMPO_SEED", "%llu", (unsigned long long)seed);
    if (c->steps > 0)
        env_addf(e, "TEMPO_STEPS", "%lld", c->steps);
    env_addf(e, "TEMPO_PHASE", "%d", c->phase);
    env_add(e, "TEMPO_BIN", c->tempo_bin);
    if (memory)
        env_addf(e, "TEMPO_MEMORY_BYTES", "%llu", (unsigned long long)memory);
    int per_rank = c->ranks > 1 && c->threads / c->ranks > 0 ? c->threads / c->ranks : c->threads;
    env_addf(e, "OMP_NUM_THREADS", "%d", per_rank);
    env_addf(e, "OMP_THREAD_LIMIT", "%d", per_rank);
    if (c->ranks > 1)   /* the operator's Open MPI settings (e.g. a container's transport) reach mpirun */
        for (char **v = environ; *v && e->n < MAX_ENV - 8; v++)
            if (!strncmp(*v, "OMPI_MCA_", 9)) {
                e->items[e->n] = *v;
                e->n++;
                e->items[e->n] = NULL;
            }
    env_addf(e, "OPENBLAS_NUM_THREADS", "%d", c->threads);
    env_addf(e, "MKL_NUM_THREADS", "%d", c->threads);
}

/* The submission runs in its own folder, where a relative path would name
 * something else: every path handed over must be absolute. Returns 0, or -1
 * with err naming the first variable that is not. */
static int check_paths_absolute(const env_list *e, tempo_error *err)
{
    static const char *const paths[] = {"TMPDIR=", "TEMPO_DATA_DIR=", "TEMPO_TRAIN_TEXT=", "TEMPO_OUT_DIR=",
                                        "TEMPO_SUBMISSION_DIR=", "TEMPO_BIN="};
    for (int i = 0; i < e->n; i++)
        for (size_t k = 0; k < sizeof paths / sizeof *paths; k++) {
            size_t l = strlen(paths[k]);
            if (!strncmp(e->items[i], paths[k], l) && e->items[i][l] != '/')
                return tempo_fail(err, "judge: %.*s: not an absolute path: %s", (int)(l - 1), paths[k],
                                  e->items[i] + l);
        }
    return 0;
}

/* The judge's own environment with OMP_NUM_THREADS set (for its evaluations). */
static char **eval_env(int threads, char *omp, size_t omp_n)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16) != 0)
            env[k++] = environ[i];
    text_fmt(omp, omp_n, "OMP_NUM_THREADS=%d", threads);
    env[k++] = omp;
    env[k] = NULL;
    return env;
}

/* A run's address-space limit. */
static uint64_t launch_memory(const attempt_ctx *c)
{
    return c->o->memory_bytes ? c->o->memory_bytes : default_memory();
}

/* RLIMIT_FSIZE of a run: --disk, and never more than the largest model read. */
static uint64_t file_limit(const attempt_ctx *c)
{
    uint64_t d = c->o->disk_bytes;
    return d && d < JUDGE_MODEL_MAX_BYTES ? d : JUDGE_MODEL_MAX_BYTES;
}

/* ---- one run ------------------------------------------------------------ */

static void set_status(judge_run_record *r, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_status(judge_run_record *r, const char *status, const char *fmt, ...)
{
    text_fmt(r->status, sizeof r->status, "%s", status);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    for (char *p = r->reason; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
}

/* An error line of tempo about the model: without the "tempo: " prefix and
 * with the model's long path shortened to its file name. */
static void tidy_message(char *line, size_t n, const char *model_path)
{
    if (!strncmp(line, "tempo: ", 7))
        memmove(line, line + 7, strlen(line + 7) + 1);
    const char *base = strrchr(model_path, '/');
    size_t lp = strlen(model_path);
    char *hit = lp ? strstr(line, model_path) : NULL;
    if (base && hit) {
        char rest[512];
        text_fmt(rest, sizeof rest, "%s", hit + lp);
        text_fmt(hit, n - (size_t)(hit - line), "%s%s", base + 1, rest);
    }
}

double judge_eval_cap(const judge_options *o)
{
    if (o->eval_timeout_s > 0)
        return o->eval_timeout_s;
    return o->budget_s > EVAL_CAP_MIN_S ? o->budget_s : EVAL_CAP_MIN_S;
}

/* Run a tempo evaluation command; the last stdout line into line, its wall
 * seconds into *seconds. Returns 0 when it exited 0, else 1 with a one-line
 * account in why. */
static int run_eval(const attempt_ctx *c, char **argv, const char *log_prefix, char *line, size_t line_n, char *why,
                    size_t why_n, int *exit_code, double *seconds)
{
    char out_log[PATH_MAX + 32], err_log[PATH_MAX + 32], omp[64];
    text_fmt(out_log, sizeof out_log, "%s.stdout.log", log_prefix);
    text_fmt(err_log, sizeof err_log, "%s.stderr.log", log_prefix);
    char **env = eval_env(c->threads, omp, sizeof omp);
    proc_spec s = {0};
    s.argv = argv;
    s.envp = env;
    s.stdout_log = out_log;
    s.stderr_log = err_log;
    s.log_head_bytes = 1 << 20;
    s.log_tail_bytes = EVAL_LINE_MAX; /* the scorecard line holds every task's figures */
    s.flood_bytes = c->o->flood_bytes;
    s.budget_s = judge_eval_cap(c->o);
    s.grace_s = c->o->grace_s;
    s.memory_bytes = c->o->memory_bytes ? c->o->memory_bytes : default_memory();
    proc_result r;
    tempo_error e;
    line[0] = '\0';
    *exit_code = -1;
    if (!env || proc_run(&s, &r, &e)) {
        free(env);
        text_fmt(why, why_n, "judge could not run tempo %s", argv[1]);
        return 1;
    }
    free(env);
    *seconds = r.wall_s;
    int rc = 0;
    char errline[400];
    proc_caplog_last_line(&r.err, errline, sizeof errline);
    tidy_message(errline, sizeof errline, argv[3]);
    if (r.deadline_hit) {
        text_fmt(why, why_n, "evaluation did not finish within %.0f s (the evaluation cap)", judge_eval_cap(c->o));
        rc = 1;
    } else if (r.exec_errno || !r.exited || r.exit_code != 0) {
        char how[160];
        proc_describe(&r, how, sizeof how);
        text_fmt(why, why_n, "%s%s%s", errline[0] ? errline : "", errline[0] ? " (tempo eval " : "tempo eval ", how);
        if (errline[0])
            strncat(why, ")", why_n - strlen(why) - 1);
        *exit_code = r.exited ? r.exit_code : -1;
        rc = 1;
    } else {
        proc_caplog_last_line(&r.out, line, line_n);
        *exit_code = 0;
    }
    proc_free(&r);
    return rc;
}

/* Whether path is a regular file itself (not a symlink to one, a fifo that
 * would block the judge, or a device): the only kind of file the judge reads
 * from a run's output folder. The run's processes are all gone by then, so
 * nothing can swap it between this look and the read. */
static int regular_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Lenient read of the submission's own result.json (tempo's trainer writes
 * one; a custom command may not). */
static void read_result_json(const char *out_dir, judge_run_record *r)
{
    char path[PATH_MAX + 32], *text;
    size_t len;
    tempo_error e;
    text_fmt(path, sizeof path, "%s/" RUN_RESULT_FILE, out_dir);
    if (!regular_file(path) || file_read_all(path, &text, &len, 1 << 20, &e))
        return;
    judge_parse_run_result(text, len, r);
    free(text);
}

static void score_model(const attempt_ctx *c, const char *run_dir, const char *model, judge_run_record *r)
{
    tempo_error e;
    judge_model_verdict v = judge_model_check(model, &e);
    if (v != JUDGE_MODEL_OK) {
        const char *base = strstr(e.msg, "model.safetensors");
        set_status(r, v == JUDGE_MODEL_NONFINITE ? JUDGE_DIVERGED : JUDGE_INVALID_MODEL, "%s", base ? base : e.msg);
        return;
    }
    char prefix[PATH_MAX + 16], why[600];
    int code;
    char *line = malloc(EVAL_LINE_MAX);
    if (!line) {
        set_status(r, JUDGE_FAILED, "judge: out of memory");
        return;
    }
    text_fmt(prefix, sizeof prefix, "%s/eval", run_dir);
    char threads[16];
    text_fmt(threads, sizeof threads, "%d", c->threads);
    char *argv[] = {(char *)c->tempo_bin, "eval", "--model", (char *)model, "--text", (char *)c->val_path,
                    "--threads", threads, NULL};
    if (run_eval(c, argv, prefix, line, EVAL_LINE_MAX, why, sizeof why, &code, &r->eval_seconds)) {
        if (code == 1)
            set_status(r, strstr(why, "non-finite") ? JUDGE_DIVERGED : JUDGE_INVALID_MODEL, "%s", why);
        else
            set_status(r, JUDGE_FAILED, "judge: %s", why); /* the judge's evaluation is broken, not the model */
        goto done;
    }
    bpb_result ev;
    if (eval_bpb_read(line, &ev, &e)) {
        set_status(r, JUDGE_FAILED, "judge: %s", e.msg);
        goto done;
    }
    r->bpb = ev.bpb;
    r->val_bytes = ev.bytes ? (double)ev.bytes : NAN;   /* 0: the line did not say */
    r->val_tokens = ev.tokens ? (double)ev.tokens : NAN;
    if (!isfinite(ev.bpb)) {
        set_status(r, JUDGE_DIVERGED, "val bpb is not finite");
        goto done;
    }
    r->score = ev.bpb;
    if (c->phase != 2)
        goto done;
    judge_phase2 p2;
    judge_phase2_init(&p2, &ev);
    text_fmt(prefix, sizeof prefix, "%s/phase2", run_dir);
    char limit[32];
    text_fmt(limit, sizeof limit, "%d", c->o->icl_limit);
    char *argv2[] = {(char *)c->tempo_bin, "eval", "--model", (char *)model, "--phase", "2", "--threads", threads,
                     "--tasks", (char *)(c->o->icl_dir ? c->o->icl_dir : ""), c->o->icl_limit > 0 ? "--limit" : NULL,
                     limit, NULL};
    double phase2_s = 0;
    if (run_eval(c, argv2, prefix, line, EVAL_LINE_MAX, why, sizeof why, &code, &phase2_s))
        judge_phase2_unavailable(&p2, "phase 2 unavailable: `tempo eval --phase 2` failed: %s", why);
    else
        judge_phase2_from_scorecard(&p2, line);
    r->core = p2.core;
    r->decode_tokens_per_s = p2.decode_tokens_per_s;
    r->decode_bytes_per_s = p2.decode_bytes_per_s;
    r->icl_term = p2.icl_term;
    r->speed_term = p2.speed_term;
    r->score = p2.available ? p2.combined : NAN;
    text_fmt(r->phase2_reason, sizeof r->phase2_reason, "%s", p2.available ? "" : p2.reason);
    strbuf d = {0};
    judge_phase2_describe(&p2, &d);
    say(c->o, "seed %d: %s", r->seed, d.data ? d.data : "");
    strbuf_free(&d);
done:
    free(line);
}

static int build_command(const attempt_ctx *c, const char *out_dir, uint64_t seed, char **argv, int max,
                         char store[][64])
{
    int k = 0;
    const judge_manifest *m = &c->m;
    if (m->n_command) {
        if (m->command_shell) {
            argv[k++] = "/bin/sh";
            argv[k++] = "-c";
            argv[k++] = (char *)m->command[0];
        } else {
            for (int i = 0; i < m->n_command; i++)
                argv[k++] = (char *)m->command[i];
        }
        argv[k] = NULL;
        return k;
    }
    /* the preset path: tempo's trainer, with a margin for its startup */
    double inner = c->o->budget_s - (2 + 0.01 * c->o->budget_s);
    if (inner < 0.5 * c->o->budget_s)
        inner = 0.5 * c->o->budget_s;
    text_fmt(store[0], 64, "%.3fs", inner);
    text_fmt(store[1], 64, "%llu", (unsigned long long)seed);
    text_fmt(store[2], 64, "%d", c->ranks > 1 && c->threads / c->ranks > 0 ? c->threads / c->ranks : c->threads);
    text_fmt(store[3], 64, "%lld", c->steps);
    if (c->ranks > 1) {   /* every rank in the runner's process group: the budget's kill ends them all */
        text_fmt(store[4], 64, "%d", c->ranks);
        argv[k++] = "mpirun";
        if (geteuid() == 0)
            argv[k++] = "--allow-run-as-root";
        argv[k++] = "--oversubscribe";
        argv[k++] = "--bind-to";
        argv[k++] = "none";
        argv[k++] = "-np";
        argv[k++] = store[4];
    }
    argv[k++] = (char *)c->tempo_bin;
    argv[k++] = "train";
    argv[k++] = "--data";
    argv[k++] = (char *)c->data.dir;
    argv[k++] = "--out";
    argv[k++] = (char *)out_dir;
    argv[k++] = "--budget";
    argv[k++] = store[0];
    argv[k++] = "--preset";
    argv[k++] = (char *)m->preset;
    for (int i = 0; i < m->n_overrides && k < max - 12; i++) {
        argv[k++] = "--set";
        argv[k++] = (char *)m->overrides[i];
    }
    argv[k++] = "--seed";
    argv[k++] = store[1];
    argv[k++] = "--threads";
    argv[k++] = store[2];
    if (c->steps > 0) {
        argv[k++] = "--steps";
        argv[k++] = store[3];
    }
    if (c->train_has_no_eval)
        argv[k++] = "--no-eval"; /* the judge evaluates; the trainer's own final eval would eat the budget */
    argv[k] = NULL;
    return k;
}

/* The folders of one seed's run: RUN/{submission,out,tmp,scored}. */
typedef struct {
    char run[PATH_MAX], copy[PATH_MAX + 16], out[PATH_MAX + 16], tmp[PATH_MAX + 16], scored[PATH_MAX + 16];
} run_dirs;

static int make_run_dirs(const attempt_ctx *c, uint64_t seed, run_dirs *d, tempo_error *err)
{
    text_fmt(d->run, sizeof d->run, "%s/seed-%llu", c->attempt_dir, (unsigned long long)seed);
    text_fmt(d->copy, sizeof d->copy, "%s/submission", d->run);
    text_fmt(d->out, sizeof d->out, "%s/out", d->run);
    text_fmt(d->tmp, sizeof d->tmp, "%s/tmp", d->run);
    text_fmt(d->scored, sizeof d->scored, "%s/scored", d->run);
    return dir_create(d->run, err) || dir_create(d->out, err) || dir_create(d->tmp, err) ||
                   dir_create(d->scored, err) ? -1 : 0;
}

/* The training folder must be as the judge made it (an earlier run may have changed it). */
static int ensure_training_data(attempt_ctx *c, tempo_error *err)
{
    const judge_options *o = c->o;
    tempo_error e;
    if (judge_data_verify(&c->data, &e) == 0)
        return 0;
    say(o, "%s; rebuilding it", e.msg);
    judge_data_options d = {0};
    d.tempo_bin = c->tempo_bin;
    d.corpus_dir = o->corpus_dir;
    d.data_dir = o->data_dir;
    d.val_path = c->val_path;
    d.work_dir = o->work_dir;
    d.vocab = c->m.vocab ? c->m.vocab : o->vocab;
    d.progress = o->progress;
    return judge_data_prepare(&d, &c->data, err);
}

/* Run the submission's command under the budget; the model of the moment it
 * ends is snapshotted into scored/ (snap). */
static int launch(const attempt_ctx *c, const run_dirs *d, uint64_t seed, char **argv, snapshot *snap,
                  proc_result *pr, tempo_error *err)
{
    const judge_options *o = c->o;
    uint64_t memory = launch_memory(c);
    env_list *env = malloc(sizeof *env);
    if (!env)
        return tempo_fail(err, "judge: out of memory");
    submission_env(env, c, d->run, d->out, d->copy, seed, memory);
    if (check_paths_absolute(env, err)) {
        free(env);
        return -1;
    }
    char out_log[PATH_MAX + 32], err_log[PATH_MAX + 32];
    text_fmt(snap->src, sizeof snap->src, "%s/model.safetensors", d->out);
    text_fmt(snap->dst, sizeof snap->dst, "%s/model.safetensors", d->scored);
    text_fmt(out_log, sizeof out_log, "%s/stdout.log", d->run);
    text_fmt(err_log, sizeof err_log, "%s/stderr.log", d->run);
    proc_spec s = {0};
    s.argv = argv;
    char **boxed = NULL;
    if (c->sandboxed) {
        judge_sandbox_view v = {0};
        v.ro[v.n_ro++] = c->data.dir;
        if (c->configs_dir[0]) {
            v.files[v.n_files].src = c->configs_copy;
            v.files[v.n_files++].dst = c->configs_dir;
        }
        v.rw[v.n_rw++] = d->copy;
        v.rw[v.n_rw++] = d->out;
        v.tmp = d->tmp;
        v.files[v.n_files].src = c->bin_copy;
        v.files[v.n_files++].dst = c->tempo_bin;
        v.cwd = d->copy;
        boxed = judge_sandbox_argv(&c->sb, &v, argv);
        if (!boxed) {
            free(env);
            return tempo_fail(err, "judge: out of memory");
        }
        s.argv = boxed;
        s.tree = 1;
        s.exit_128_is_signal = 1;
        s.drop_uid = c->sb.drop_uid;
        s.run_uid = c->sb.uid;
        s.run_gid = c->sb.gid;
        s.no_new_privs = 1;
        s.start_mark_fd3 = 1;
    }
    const char *disk_dirs[] = {d->copy, d->out, d->tmp};
    s.max_tasks = o->max_procs;
    s.tree_memory_bytes = memory;
    s.disk_dirs = disk_dirs;
    s.n_disk_dirs = 3;
    s.disk_bytes = o->disk_bytes;
    s.envp = env->items;
    s.cwd = c->sandboxed ? "/" : d->copy; /* in the sandbox, bwrap's --chdir */
    s.stdout_log = out_log;
    s.stderr_log = err_log;
    s.log_head_bytes = o->log_bytes;
    s.log_tail_bytes = o->log_bytes / 4 ? o->log_bytes / 4 : 1;
    s.flood_bytes = o->flood_bytes;
    s.budget_s = o->budget_s;
    s.grace_s = o->grace_s;
    s.memory_bytes = memory;
    s.file_bytes = file_limit(c);
    s.at_end = take_snapshot;
    s.ctx = snap;
    say(o, "seed %llu: running %s (budget %.1f s, %d threads, %s)", (unsigned long long)seed,
        c->m.n_command ? "the submission's command" : "tempo train", o->budget_s, c->threads,
        c->sandboxed ? "sandboxed" : "NOT sandboxed (--no-sandbox)");
    int rc = proc_run(&s, pr, err);
    free(env);
    free(boxed);
    if (rc == 0 && c->sandboxed && !pr->started) {
        char last[300];
        proc_caplog_last_line(&pr->err, last, sizeof last);
        proc_free(pr);
        return tempo_fail(err, "judge: the sandbox did not start (%s); nothing is recorded", last[0] ? last : "no message");
    }
    return rc;
}

/* What the run left: the process's figures, its own result.json and curves. */
static void record_outputs(const attempt_ctx *c, const run_dirs *d, const proc_result *pr,
                           judge_run_record *r)
{
    r->wall_seconds = pr->wall_s;
    r->overrun_seconds = pr->wall_s > c->o->budget_s ? pr->wall_s - c->o->budget_s : 0;
    r->exit_code = pr->exec_errno ? 127 : pr->exited ? pr->exit_code : -1;
    r->term_signal = pr->exited || pr->exec_errno ? -1 : pr->term_signal;
    r->stdout_bytes = pr->out.total;
    r->stderr_bytes = pr->err.total;
    read_result_json(d->out, r);
    char path[PATH_MAX + 32];
    text_fmt(path, sizeof path, "%s/" METRICS_LOG_FILE, d->out);
    judge_curves curves;
    tempo_error e;
    if (regular_file(path) && judge_curves_read(path, &curves, &e) == 0) {
        if (curves.train_loss.n || curves.val_bpb.n) {
            strbuf sb = {0};
            judge_curves_to_json(&curves, &sb);
            r->curves_json = sb.oom ? NULL : sb.data;
        }
        judge_curves_free(&curves);
    }
}

/* Over the deadline: the status, and the model of the deadline scored for information. */
static void verdict_over_budget(attempt_ctx *c, const run_dirs *d, const proc_result *pr, const snapshot *snap,
                                judge_run_record *r)
{
    set_status(r, JUDGE_OVER_BUDGET, "still running at the %.1f s deadline; %s%s", c->o->budget_s,
               pr->killed ? "killed with SIGKILL after the grace period" : "stopped with SIGTERM",
               snap->taken ? " (the model of the deadline is scored for information)" : " and no model by then");
    if (!snap->taken)
        return;
    judge_run_record tmp = *r; /* shares curves_json, which score_model does not touch */
    set_status(&tmp, JUDGE_OK, "%s", "");
    score_model(c, d->run, snap->dst, &tmp);
    r->bpb = tmp.bpb;
    r->score = tmp.score;
    r->val_bytes = tmp.val_bytes;
    r->val_tokens = tmp.val_tokens;
    if (strcmp(tmp.status, JUDGE_OK) != 0) {
        size_t l = strlen(r->reason);
        text_fmt(r->reason + l, sizeof r->reason - l, "; that model is %s: %s", tmp.status, tmp.reason);
    }
}

/* Whether a failed run ran out of its address space (RLIMIT_AS): a process
 * came near the cap, or the last words are an allocation failure's. */
static int out_of_memory(const attempt_ctx *c, const proc_result *pr, const char *last)
{
    static const char *const says[] = {"MemoryError", "Cannot allocate memory", "out of memory", "bad_alloc",
                                       "std::bad_alloc", "memory exhausted", "ENOMEM"};
    if (pr->peak_vm_bytes >= launch_memory(c) / 10 * 9)
        return 1;
    for (size_t i = 0; i < sizeof says / sizeof *says; i++)
        if (strstr(last, says[i]))
            return 1;
    return 0;
}

/* In the sandbox the command is exec'ed by its /bin/sh wrapper (judge/sandbox.h),
 * which says "tempo-sandbox: 1: exec: ./train.sh: not found" and exits 127
 * when it cannot: that message's end, or NULL. */
static const char *sandbox_exec_failure(const proc_result *pr, const char *last)
{
    if (!pr->exited || pr->exit_code != 127 || strncmp(last, "tempo-sandbox: ", 15) != 0)
        return NULL;
    const char *p = strstr(last, ": exec: ");
    return p ? p + 8 : NULL;
}

/* The run's status from how the process ended, and its score when it is ok. */
static void verdict(attempt_ctx *c, const run_dirs *d, const char *cmd, const proc_result *pr,
                    const snapshot *snap, judge_run_record *r)
{
    char how[200], last[300];
    proc_describe(pr, how, sizeof how);
    proc_caplog_last_line(&pr->err, last, sizeof last);
    if (!last[0])
        proc_caplog_last_line(&pr->out, last, sizeof last);
    const char *sandbox_exec = c->sandboxed ? sandbox_exec_failure(pr, last) : NULL;
    if (pr->exec_errno) {
        set_status(r, JUDGE_FAILED, "command could not start: %s: %s", cmd, strerror(pr->exec_errno));
    } else if (sandbox_exec) {
        set_status(r, JUDGE_FAILED, "command could not start: %s", sandbox_exec);
    } else if (pr->limit == PROC_LIMIT_PROCS) {
        set_status(r, JUDGE_FAILED, "process limit: %s", pr->limit_detail);
    } else if (pr->limit == PROC_LIMIT_DISK) {
        set_status(r, JUDGE_FAILED, "disk limit: %s", pr->limit_detail);
    } else if (pr->limit == PROC_LIMIT_MEMORY) {
        set_status(r, JUDGE_FAILED, "memory limit: %s", pr->limit_detail);
    } else if (!pr->exited && pr->term_signal == SIGXFSZ) {
        char cap[32];
        text_bytes(file_limit(c), cap, sizeof cap);
        set_status(r, JUDGE_FAILED, "disk limit: a file reached %s, the most one file may hold (%s)", cap, how);
    } else if (pr->flooded) {
        set_status(r, JUDGE_FAILED, "output flooding: more than %llu MiB on stdout/stderr (logs keep the start and end)",
                   (unsigned long long)(c->o->flood_bytes >> 20));
    } else if (pr->deadline_hit) {
        verdict_over_budget(c, d, pr, snap, r);
    } else if ((!pr->exited || pr->exit_code != 0) && out_of_memory(c, pr, last)) {
        char cap[32];
        text_bytes(launch_memory(c), cap, sizeof cap);
        set_status(r, JUDGE_FAILED, "memory limit: a process's address space is capped at %s (--memory); %s%s%s", cap,
                   how, last[0] ? ": " : "", last);
    } else if (!pr->exited || pr->exit_code != 0) {
        /* a trainer that gives up on NaNs says so ("training diverged: non-finite loss ...") */
        int diverged = strstr(last, "diverged") || strstr(last, "non-finite");
        set_status(r, diverged ? JUDGE_DIVERGED : JUDGE_FAILED, "%s%s%s", how, last[0] ? ": " : "", last);
    } else if (!snap->taken) {
        set_status(r, JUDGE_NO_MODEL, "%s (exited 0 after %.1f s)", snap->problem, pr->wall_s);
    } else {
        set_status(r, JUDGE_OK, "%s", "");
        score_model(c, d->run, snap->dst, r);
    }
}

static int run_one(attempt_ctx *c, uint64_t seed, judge_run_record *r, tempo_error *err)
{
    const judge_options *o = c->o;
    run_dirs d;
    r->seed = (int)seed;
    judge_utc_now(r->started_at);
    if (make_run_dirs(c, seed, &d, err))
        return -1;
    text_fmt(r->run_dir, sizeof r->run_dir, "%s", d.run);
    tempo_error e;
    if (judge_submission_copy(o->submission, d.copy, &e)) {
        set_status(r, JUDGE_FAILED, "submission: %s", e.msg);
        judge_utc_now(r->ended_at);
        return 0;
    }
    if (c->sandboxed && (judge_sandbox_give(&c->sb, d.copy, err) || judge_sandbox_give(&c->sb, d.out, err) ||
                         judge_sandbox_give(&c->sb, d.tmp, err)))
        return -1;
    if (ensure_training_data(c, err))
        return -1;
    char *argv[JUDGE_MAX_ARGS + 2 * JUDGE_MAX_OVERRIDES + 40];
    char store[5][64];
    build_command(c, d.out, seed, argv, (int)(sizeof argv / sizeof *argv), store);
    snapshot snap = {0};
    proc_result pr;
    if (launch(c, &d, seed, argv, &snap, &pr, err))
        return -1;
    record_outputs(c, &d, &pr, r);
    verdict(c, &d, argv[0], &pr, &snap, r);
    proc_free(&pr);
    judge_utc_now(r->ended_at);
    if (!strcmp(r->status, JUDGE_OK))
        say(o, "seed %llu: ok, val bpb %.6f (wall %.1f s, evaluation %.1f s)", (unsigned long long)seed, r->bpb,
            r->wall_seconds, r->eval_seconds);
    else
        say(o, "seed %llu: %s: %s", (unsigned long long)seed, r->status, r->reason);
    return 0;
}

/* ---- the attempt -------------------------------------------------------- */

static int probe_train_no_eval(const char *tempo_bin)
{
    char *argv[] = {(char *)tempo_bin, "train", "--help", NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.log_tail_bytes = 1 << 16;
    s.budget_s = 20;
    s.grace_s = 1;
    proc_result r;
    tempo_error e;
    if (proc_run(&s, &r, &e))
        return 0;
    /* look for the flag in the kept output (small: all of it is in the tail) */
    int found = 0;
    for (proc_caplog *l = &r.out; !found && l; l = l == &r.out ? &r.err : NULL) {
        char *text = malloc(l->ring_len + 1);
        if (!text)
            break;
        for (size_t i = 0; i < l->ring_len; i++)
            text[i] = l->ring[(l->ring_start + i) % l->tail_max];
        text[l->ring_len] = '\0';
        found = strstr(text, "--no-eval") != NULL;
        free(text);
    }
    proc_free(&r);
    return found;
}

static void aggregate(judge_attempt *a)
{
    double *sc = malloc((size_t)(a->n_runs ? a->n_runs : 1) * sizeof *sc);
    double *bp = malloc((size_t)(a->n_runs ? a->n_runs : 1) * sizeof *bp);
    size_t n = 0, nb = 0;
    int all_ok = a->n_runs > 0;
    const judge_run_record *first_bad = NULL, *first_unscored = NULL;
    for (int i = 0; i < a->n_runs; i++) {
        const judge_run_record *r = &a->runs[i];
        if (strcmp(r->status, JUDGE_OK) != 0) {
            all_ok = 0;
            if (!first_bad)
                first_bad = r;
            continue;
        }
        if (sc && isfinite(r->score))
            sc[n++] = r->score;
        else if (!first_unscored)
            first_unscored = r;
        if (bp && isfinite(r->bpb))
            bp[nb++] = r->bpb;
    }
    a->n_scored = (int)n;
    a->score_mean = n ? judge_stats_mean(sc, n) : NAN;
    a->score_std = n > 1 ? judge_stats_std(sc, n) : NAN;
    a->bpb_mean = nb ? judge_stats_mean(bp, nb) : NAN;
    a->bpb_std = nb > 1 ? judge_stats_std(bp, nb) : NAN;
    if (all_ok) {
        text_fmt(a->status, sizeof a->status, JUDGE_OK);
        if (first_unscored) /* phase 2 with parts missing: ok runs, no combined score */
            text_fmt(a->reason, sizeof a->reason, "%s", first_unscored->phase2_reason);
        if (n < (size_t)a->n_runs) {
            a->score_mean = a->score_std = NAN; /* a partial score is not ranked */
            a->n_scored = (int)n;
        }
    } else if (first_bad) {
        text_fmt(a->status, sizeof a->status, "%s", first_bad->status);
        if (a->n_runs > 1)
            text_fmt(a->reason, sizeof a->reason, "seed %d: %s", first_bad->seed, first_bad->reason);
        else
            text_fmt(a->reason, sizeof a->reason, "%s", first_bad->reason);
    }
    free(sc);
    free(bp);
}

static void compare_with_leader(judge_db *db, judge_attempt *a, judge_options const *o)
{
    text_fmt(a->test_note, sizeof a->test_note, "one-sided Welch t-test over seeds, H1: mean score below the leader's, "
                                                "beats at p < 0.05");
    if (strcmp(a->status, JUDGE_OK) != 0 || !isfinite(a->score_mean))
        return;
    judge_attempt leader;
    tempo_error e;
    int found = judge_db_find_leader(db, a->phase, a->budget_s, a->val_sha256, 0, &leader, &e);
    if (found <= 0) {
        if (found < 0)
            say(o, "cannot look up the leader: %s", e.msg);
        strncat(a->test_note, "; no leader yet", sizeof a->test_note - strlen(a->test_note) - 1);
        return;
    }
    a->leader_id = leader.id;
    text_fmt(a->leader_submission, sizeof a->leader_submission, "%s", leader.submission);
    a->leader_mean = leader.score_mean;
    double *ls = malloc((size_t)(leader.n_runs ? leader.n_runs : 1) * sizeof *ls);
    double *ns = malloc((size_t)(a->n_runs ? a->n_runs : 1) * sizeof *ns);
    size_t nl = 0, nn = 0;
    for (int i = 0; ls && i < leader.n_runs; i++)
        if (!strcmp(leader.runs[i].status, JUDGE_OK) && isfinite(leader.runs[i].score))
            ls[nl++] = leader.runs[i].score;
    for (int i = 0; ns && i < a->n_runs; i++)
        if (!strcmp(a->runs[i].status, JUDGE_OK) && isfinite(a->runs[i].score))
            ns[nn++] = a->runs[i].score;
    judge_welch w;
    if (ls && ns && judge_stats_welch_less(ns, nn, ls, nl, &w) == 0) {
        a->t_stat = w.t;
        a->df = w.df;
        a->p_value = w.p;
        a->beats_leader = w.p < 0.05;
    } else {
        char more[96];
        text_fmt(more, sizeof more, "; not tested: needs >= 2 scored seeds on both sides (this %zu, leader %zu)", nn,
                 nl);
        strncat(a->test_note, more, sizeof a->test_note - strlen(a->test_note) - 1);
    }
    free(ls);
    free(ns);
    judge_attempt_free(&leader);
}

static void folder_name(const char *path, char *out, size_t n)
{
    char copy[PATH_MAX];
    text_fmt(copy, sizeof copy, "%s", path);
    size_t l = strlen(copy);
    while (l > 1 && copy[l - 1] == '/')
        copy[--l] = '\0';
    const char *b = basename(copy);
    size_t k = 0;
    for (const char *p = b; *p && k + 1 < n; p++)
        out[k++] = (isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-') ? *p : '_';
    out[k] = '\0';
    if (!k || out[0] == '.' || out[0] == '-')
        text_fmt(out, n, "submission");
}

static void describe_method(const judge_manifest *m, char *out, size_t n)
{
    strbuf sb = {0};
    if (m->n_command) {
        strbuf_puts(&sb, "command");
        for (int i = 0; i < m->n_command; i++) {
            strbuf_puts(&sb, " ");
            strbuf_puts(&sb, m->command[i]);
        }
    } else {
        strbuf_printf(&sb, "preset %s", m->preset);
        for (int i = 0; i < m->n_overrides; i++)
            strbuf_printf(&sb, " %s", m->overrides[i]);
    }
    text_fmt(out, n, "%s", sb.data ? sb.data : "");
    strbuf_free(&sb);
}

static int record(judge_db *db, judge_attempt *a, const judge_options *o, tempo_error *err)
{
    judge_utc_now(a->ended_at);
    say(o, "recording the attempt in %s", o->db_path);
    if (judge_db_insert_attempt(db, a, o->test_pause_in_tx_s, err))
        return -1;
    say(o, "recorded attempt %lld in %s", a->id, o->db_path);
    return 0;
}

/* The attempt's record of who and what: the submission, the judge's own
 * version and commit, the hardware, the options; and the manifest read into
 * c->m. Returns whether the manifest (and the submission's hash) is good; e
 * says why not. */
static int describe_attempt(attempt_ctx *c, judge_attempt *a, tempo_error *e)
{
    const judge_options *o = c->o;
    char real_sub[PATH_MAX];
    text_fmt(a->submission_path, sizeof a->submission_path, "%s",
             realpath(o->submission, real_sub) ? real_sub : o->submission);
    folder_name(o->submission, a->submission, sizeof a->submission);
    text_fmt(a->tempo_version, sizeof a->tempo_version, "%s", TEMPO_VERSION);
    char self[PATH_MAX];
    /* the commit of the judge itself (this binary), which also did the scoring unless --tempo says otherwise */
    proc_git_commit(proc_self_exe(self, sizeof self, e) == 0 ? self : c->tempo_bin, a->git_commit,
                     sizeof a->git_commit);
    tempo_error_clear(e);
    a->hardware_json = judge_hardware_json();
    a->budget_s = o->budget_s;
    a->seeds = o->seeds;
    a->first_seed = o->seed;
    a->memory_bytes = o->memory_bytes ? o->memory_bytes : default_memory();
    text_fmt(a->val_path, sizeof a->val_path, "%s", c->val_path);

    int manifest_ok = judge_manifest_load(&c->m, o->submission, e) == 0;
    c->phase = o->phase ? o->phase : manifest_ok ? c->m.phase : 1;
    a->phase = c->phase;
    text_fmt(a->formula, sizeof a->formula, "%s", judge_score_formula(c->phase));
    if (manifest_ok) {
        text_fmt(a->submission, sizeof a->submission, "%s", c->m.name);
        text_fmt(a->authors, sizeof a->authors, "%s", c->m.authors);
        text_fmt(a->description, sizeof a->description, "%s", c->m.description);
        describe_method(&c->m, a->method, sizeof a->method);
    }
    uint64_t nf = 0, nb = 0;
    if (judge_submission_hash(o->submission, a->submission_hash, &nf, &nb, manifest_ok ? e : &(tempo_error){0}) == 0) {
        a->submission_files = (long long)nf;
        a->submission_bytes = (long long)nb;
    } else if (manifest_ok) {
        manifest_ok = 0;
        a->submission_hash[0] = '\0';
        char msg[sizeof e->msg];
        text_fmt(msg, sizeof msg, "submission: %s", e->msg);
        text_fmt(e->msg, sizeof e->msg, "%s", msg);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = o->threads > 0 ? o->threads : c->m.threads > 0 ? c->m.threads : (int)(ncpu > 0 ? ncpu : 1);
    c->steps = o->steps > 0 ? o->steps : c->m.steps;
    c->ranks = manifest_ok && c->m.ranks > 1 ? c->m.ranks : 1;
    a->threads = c->threads;
    a->ranks = c->ranks;
    return manifest_ok;
}

/* 1 when an executable `name` is in a folder of the submission's PATH (as execvp would find it). */
static int on_path(const char *name)
{
    const char *path = child_path();
    char dir[PATH_MAX], full[PATH_MAX + 64];
    while (*path) {
        size_t n = strcspn(path, ":");
        text_fmt(dir, sizeof dir, "%.*s", (int)(n < sizeof dir - 1 ? n : sizeof dir - 1), path);
        text_fmt(full, sizeof full, "%s/%s", n ? dir : ".", name);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Whether runs are sandboxed: yes unless --no-sandbox; where a sandbox
 * cannot start, the judge refuses (nothing recorded) rather than run
 * unsandboxed unasked. */
static int choose_sandbox(attempt_ctx *c, judge_attempt *a, tempo_error *err)
{
    if (c->o->no_sandbox) {
        text_fmt(a->sandbox, sizeof a->sandbox, "none");
        say(c->o, "--no-sandbox: %s runs with the judge's view of the machine (recorded as sandbox: none)",
            a->submission);
        return 0;
    }
    tempo_error e;
    if (judge_sandbox_probe(&c->sb, &e))
        return tempo_fail(err, "judge: %s; refusing to run %s without one (--no-sandbox runs it anyway, "
                               "recorded as sandbox: none)", e.msg, a->submission);
    c->sandboxed = 1;
    text_fmt(a->sandbox, sizeof a->sandbox, "bwrap");
    return 0;
}

/* What a sandbox is shown of tempo: a read-only copy of the binary (at the
 * binary's own path inside) and its configs/ folder. */
static int sandbox_files(attempt_ctx *c, tempo_error *err)
{
    text_fmt(c->bin_copy, sizeof c->bin_copy, "%s/tempo-for-sandbox", c->attempt_dir);
    if (judge_copy_file(c->tempo_bin, c->bin_copy, err) || chmod(c->bin_copy, 0555) != 0)
        return tempo_fail(err, "%s: cannot copy tempo for the sandbox: %s", c->bin_copy, strerror(errno));
    char dir[PATH_MAX + 32], real[PATH_MAX];
    if (data_dir_beside(c->tempo_bin, "configs", dir, sizeof dir) && realpath(dir, real)) {
        text_fmt(c->configs_dir, sizeof c->configs_dir, "%s", real);
        text_fmt(c->configs_copy, sizeof c->configs_copy, "%s/configs-for-sandbox", c->attempt_dir);
        if (judge_submission_copy(c->configs_dir, c->configs_copy, err))
            return -1;
    }
    const char *reach[] = {c->attempt_dir};
    return judge_sandbox_check_reach(&c->sb, reach, 1, err);
}

/* The data every run gets (and the validation fingerprint), then the attempt's own folder. */
static int prepare_attempt(attempt_ctx *c, judge_attempt *a, int manifest_ok, tempo_error *err)
{
    const judge_options *o = c->o;
    /* the operator's machine lacks what the submission may ask for: not the submission's failure */
    if (c->ranks > 1 && !on_path("mpirun"))
        return tempo_fail(err, "judge: %s asks for %d ranks, and mpirun is not on PATH (install openmpi-bin)",
                          a->submission, c->ranks);
    judge_data_options d = {0};
    d.tempo_bin = c->tempo_bin;
    d.corpus_dir = o->corpus_dir;
    d.data_dir = o->data_dir;
    d.val_path = c->val_path;
    d.work_dir = o->work_dir;
    d.vocab = manifest_ok && c->m.vocab ? c->m.vocab : o->vocab;
    d.progress = o->progress;
    if (judge_data_prepare(&d, &c->data, err))
        return -1;
    /* a root judge's sandbox runs as nobody, who must be able to enter what is bound */
    const char *reach[] = {o->work_dir, c->data.dir};
    if (c->sandboxed && (dir_create(o->work_dir, err) || judge_sandbox_check_reach(&c->sb, reach, 2, err)))
        return -1;
    text_fmt(a->data_id, sizeof a->data_id, "%s", c->data.id);
    text_fmt(a->val_sha256, sizeof a->val_sha256, "%s", c->data.val_sha256);
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    text_fmt(c->attempt_dir, sizeof c->attempt_dir, "%s/%s-%s-%d", o->work_dir, a->submission, stamp, (int)getpid());
    if (dir_create(c->attempt_dir, err))
        return -1;
    char real_dir[PATH_MAX];
    text_fmt(a->work_dir, sizeof a->work_dir, "%s", realpath(c->attempt_dir, real_dir) ? real_dir : c->attempt_dir);
    text_fmt(c->attempt_dir, sizeof c->attempt_dir, "%s", a->work_dir);
    if (c->sandboxed && sandbox_files(c, err)) {
        tempo_error ignored;
        dir_remove_tree(c->attempt_dir, &ignored); /* nothing ran: no folder is left for an attempt not recorded */
        return -1;
    }
    return 0;
}

/* Every seed's run, one after the other. */
static int run_seeds(attempt_ctx *c, judge_attempt *a, tempo_error *err)
{
    const judge_options *o = c->o;
    if (!c->m.n_command)
        c->train_has_no_eval = probe_train_no_eval(c->tempo_bin);
    a->runs = calloc((size_t)o->seeds, sizeof *a->runs);
    if (!a->runs)
        return tempo_fail(err, "judge: out of memory");
    say(o, "%s: phase %d, budget %.1f s, %d seed%s from %llu, %d threads; data %s", a->submission, c->phase,
        o->budget_s, o->seeds, o->seeds > 1 ? "s" : "", (unsigned long long)o->seed, c->threads, c->data.dir);
    for (int i = 0; i < o->seeds; i++) {
        judge_run_record_init(&a->runs[i]);
        a->n_runs = i + 1;
        if (run_one(c, o->seed + (uint64_t)i, &a->runs[i], err))
            return -1;
    }
    return 0;
}

int judge_run(const judge_options *o, judge_attempt *a, tempo_error *err)
{
    judge_attempt_init(a);
    judge_utc_now(a->started_at);
    struct stat st;
    if (!o->submission || stat(o->submission, &st) != 0 || !S_ISDIR(st.st_mode))
        return tempo_fail(err, "%s: no such submission folder", o->submission ? o->submission : "(none)");
    if (!(o->budget_s > 0) || o->seeds < 1)
        return tempo_usage(err, "judge: the budget must be positive and seeds at least 1");
    attempt_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return tempo_fail(err, "judge: out of memory");
    c->o = o;
    int rc = 0;
    judge_db *db = NULL;
    if (o->tempo_bin) {
        if (!realpath(o->tempo_bin, c->tempo_bin))
            rc = tempo_fail(err, "%s: %s", o->tempo_bin, strerror(errno));
    } else {
        rc = proc_self_exe(c->tempo_bin, sizeof c->tempo_bin, err);
    }
    if (rc == 0 && !realpath(o->val_path, c->val_path))
        rc = tempo_fail(err, "%s: %s", o->val_path, strerror(errno));
    if (rc == 0)
        rc = judge_db_open(&db, o->db_path, 1, err);
    if (rc) {
        free(c);
        return -1;
    }
    tempo_error e;
    tempo_error_clear(&e);
    int manifest_ok = describe_attempt(c, a, &e);
    if (choose_sandbox(c, a, err) || prepare_attempt(c, a, manifest_ok, err)) {
        rc = -1;
    } else if (!manifest_ok) {
        text_fmt(a->status, sizeof a->status, JUDGE_FAILED);
        text_fmt(a->reason, sizeof a->reason, "%s", e.msg);
        say(o, "%s: failed: %s", a->submission, a->reason);
        compare_with_leader(db, a, o);
        rc = record(db, a, o, err);
    } else if (run_seeds(c, a, err)) {
        rc = -1;
    } else {
        aggregate(a);
        compare_with_leader(db, a, o);
        rc = record(db, a, o, err);
    }
    judge_db_close(db);
    free(c);
    return rc;
}
