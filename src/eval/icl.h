/* icl.h - in-context-learning accuracy by the DCLM "CORE" protocol: per task,
 * items in a fixed shuffled order (Python random.Random(1337).shuffle), each
 * with num_fewshot other items of the same file as examples
 * (random.Random(seed + i).sample, seed 1234 by default; icl_random.h),
 * rendered and cut as icl_prompt.h says, then scored by a language model:
 *   multiple_choice / schema: the prediction is the choice (context option)
 *     whose continuation has the lowest mean negative log-likelihood per
 *     token (ties: the first); correct when it is gold;
 *   language_modeling: correct when every continuation token is the model's
 *     greedy (argmax) choice given what precedes it.
 * Per task: accuracy over the items evaluated, the random baseline, and the
 * centered accuracy (acc - base) / (1 - base), with the accuracy's 95 %
 * interval (bootstrap over items, icl_interval.h). CORE = the mean centered
 * accuracy over the table's entries that could be evaluated, reported with
 * how many of the table's entries that is ("N of 22"); extra entries (the
 * HellaSwag subset) are reported beside it, never inside.
 *
 * The model sits behind icl_lm, a single scoring function over a batch of
 * token sequences, so tests can plug in a stub with known probabilities;
 * icl_engine.h provides the real one. Items that cannot be scored are
 * skipped, counted by reason and reported (icl_task.h), never guessed.
 * With --limit N only the first N items of the shuffled order are scored,
 * but examples are drawn from the whole file, so a limited run is exactly
 * a prefix of the full run (nanochat draws them from the first N only). */
#ifndef TEMPO_ICL_H
#define TEMPO_ICL_H

#include <stdint.h>

#include "core/error.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "data/tokenizer.h"
#include "eval/icl_task.h"

/* One sequence to score: tokens [n] (starting with the separator), the span
 * [start, end) scored (1 <= start < end = n <= the model's context). Requests
 * of the same item have the same group (and usually share a prefix). */
typedef struct {
    const int32_t *tokens;
    int n, start, end;
    int group;
} icl_request;

/* For each request: sum over t in [start, end) of -ln p(tokens[t] | tokens[<t])
 * in nats, and whether every tokens[t] was the argmax (first index of the
 * maximum) of its distribution. */
typedef struct {
    double nll_sum;
    int all_argmax;
} icl_answer;

typedef struct {
    void *ctx;
    int context;   /* longest sequence the model takes */
    int32_t sep;   /* the separator (BOS) id */
    /* Score n requests into ans[0..n). Returns 0, or -1 with err set. */
    int (*score)(void *ctx, const icl_request *req, int n, icl_answer *ans, tempo_error *err);
} icl_lm;

typedef struct {
    int limit;          /* items per task, 0 = all */
    int shots;          /* few-shot count for every task; -1 = the table's */
    uint64_t seed;      /* few-shot seed base (the protocol's 1234) */
    int batch_tokens;   /* tokens handed to one score call, about (0: 8192; icl_engine_run sizes it to its cache) */
    /* Called after each batch and at the end of a task; may be NULL. */
    void (*progress)(void *user, const char *label, int done, int total);
    void *user;
} icl_options;

void icl_options_default(icl_options *o); /* limit 0, shots -1, seed 1234, batch 0 */

typedef enum {
    ICL_TASK_OK = 0,     /* evaluated (n_eval >= 1) */
    ICL_TASK_MISSING,    /* the file is not there (CORE says how many entries are missing) */
    ICL_TASK_FAILED      /* unreadable file, or no item could be evaluated: see error */
} icl_task_status;

typedef struct {
    icl_task_spec spec;
    icl_task_status status;
    char error[512];
    int shots;                    /* few-shot count used */
    int n_records;                /* valid records in the file */
    int n_eval, n_correct;        /* items scored, items right */
    int skipped[ICL_SKIP_COUNT];  /* bad records (loading) + unscorable items (evaluation) */
    char first_skip[320];
    double accuracy, centered;    /* NaN unless status OK */
    double accuracy_lo, accuracy_hi; /* its 95 % interval (icl_interval.h); NaN unless status OK */
    double seconds;
    long long tokens;             /* tokens scored (all sequences) */
} icl_task_result;

/* Evaluate one task from tasks_dir/spec->file. Problems of the task (file
 * missing, unreadable, nothing to evaluate) go into r->status and r->error
 * and return 0; -1 (err set) only when the model fails or memory runs out. */
int icl_evaluate_task(const icl_lm *lm, const tokenizer *tok, const char *tasks_dir,
                      const icl_task_spec *spec, const icl_options *o, icl_task_result *r,
                      tempo_error *err);

/* Evaluate the entries of tasks_dir/core_tasks.tsv (icl_table_read) in table
 * order, then the extra entry: all of them when n_names == 0, else only the
 * labels named (an unknown label is an error, code 2, listing the known
 * ones). *results (malloc'd, *n_results entries) and the summary are filled.
 * Returns 0, or -1 with err set when the table is unreadable or the model
 * fails (task-level problems are in the results). */
typedef struct icl_summary icl_summary;
int icl_run(const icl_lm *lm, const tokenizer *tok, const char *tasks_dir,
            const char *const *names, int n_names, const icl_options *o,
            icl_task_result **results, int *n_results, icl_summary *s, tempo_error *err);

struct icl_summary {
    double core;        /* mean centered accuracy over the table entries evaluated (NaN: none) */
    double core_lo, core_hi; /* its 95 % interval, bootstrap over items (icl_interval.h) */
    int n_core;         /* table entries evaluated */
    int n_table;        /* table entries (22 for CORE) */
    int n_missing;      /* table entries whose file is absent */
    int n_failed;       /* entries that failed or were not asked for */
    double seconds;
    long long tokens;
};

void icl_summarize(const icl_task_result *r, int n, int n_table, icl_summary *s);

/* The result object: {"core": x, "core_ci95": [lo, hi], "core_entries": n,
 * "core_of": 22, "core_label": "CORE-18", "tasks": [{label, type, shots,
 * delimiter, random_baseline, accuracy, accuracy_ci95, centered, evaluated,
 * correct, records, skipped: {...}, first_skip, status, error, seconds,
 * tokens, in_core}, ...], "extra": {label: {accuracy, accuracy_ci95,
 * centered, random_baseline}}, ...} (no newline). A failure (out of memory)
 * sets out->oom and leaves out as it was. */
void icl_summary_json(strbuf *out, const icl_task_result *r, int n, const icl_summary *s,
                      const icl_options *o);
/* The same object's members, written into an object the caller opened (so
 * it can add its own, as `tempo icl` adds which model answered). */
void icl_summary_members(jsonw *w, const icl_task_result *r, int n, const icl_summary *s, const icl_options *o);

#endif
