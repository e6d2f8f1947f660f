/* cli.h - what the thin subcommand files share: reporting an error the
 * project's way ("tempo: <thing>: <problem>", exit 1 or 2) and printing the
 * final JSON result line. No training, data or model logic lives in src/cli/. */
#ifndef TEMPO_CLI_H
#define TEMPO_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "bench/bench_infer.h"
#include "core/error.h"
#include "core/json_write.h"
#include "core/strbuf.h"
#include "eval/icl.h"
#include "memory/hybrid.h"
#include "run/run_config.h"

/* Print "tempo: <msg>" to stderr and return the exit code to use (1 or 2). */
int cli_report(const tempo_error *err);

/* Print a usage error "tempo: <msg>" and return 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A flag's numeric value through core/number.h: 0 with *out set, or, after
 * printing the one-line error, the exit code (2). Durations are at most
 * NUMBER_MAX_DURATION_S. */
int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out);
/* cli_parse_int into an int (lo and hi within int's range). */
int cli_parse_int32(const char *flag, const char *v, int lo, int hi, int *out);
int cli_parse_real(const char *flag, const char *v, double lo, double hi, int lo_open, double *out);
int cli_parse_duration(const char *flag, const char *v, double *out);
int cli_parse_size(const char *flag, const char *v, uint64_t lo, uint64_t hi, uint64_t *out);

/* A command's flags as a table: cli_parse_flags walks argv[1..] once. A
 * flag given twice keeps its last value (a CLI_LIST appends). A flag that
 * takes a value also reads as --flag=VALUE. Arguments that are not options
 * (not starting with '-', a lone "-", every one after "--") go to the
 * table's CLI_ARGS row; without one they are unknown options. Errors (an
 * unknown flag, a missing or bad value, too many list items) are one line
 * on stderr naming the flag and "tempo CMD --help"; the return is then 2.
 * --help and -h set *help and stop (return 0). */
typedef enum {
    CLI_SWITCH,     /* no value: *(int *)dst = 1 */
    CLI_STRING,     /* *(const char **)dst = the value */
    CLI_CHOICE,     /* CLI_STRING whose value must be one of choices ("cpu|cuda") */
    CLI_LIST,       /* ((const char **)dst)[(*count)++] = the value, at most max */
    CLI_INT,        /* *(int *)dst, in [lo, hi] */
    CLI_INT64,      /* *(long long *)dst, in [lo, hi] */
    CLI_REAL,       /* *(double *)dst, in (lo, hi] (real_lo_open) or [lo, hi] */
    CLI_DURATION,   /* *(double *)dst, seconds (cli_parse_duration) */
    CLI_SIZE,       /* *(uint64_t *)dst, bytes (cli_parse_size: 64K, 8G), in [lo, hi] */
    CLI_ARGS,       /* the arguments that are not options, as a CLI_LIST; name says them ("INPUT") */
} cli_flag_kind;

typedef struct {
    const char *name;      /* "--steps" */
    cli_flag_kind kind;
    void *dst;
    long long lo, hi;      /* CLI_INT, CLI_INT64, CLI_SIZE */
    double real_lo, real_hi;
    int real_lo_open;
    const char *choices;   /* CLI_CHOICE */
    int *count, max;       /* CLI_LIST, CLI_ARGS */
} cli_flag;

/* Table rows (designated, so unused fields stay zero). */
#define CLI_F_SWITCH(n, d) {.name = (n), .kind = CLI_SWITCH, .dst = (d)}
#define CLI_F_STRING(n, d) {.name = (n), .kind = CLI_STRING, .dst = (d)}
#define CLI_F_CHOICE(n, d, c) {.name = (n), .kind = CLI_CHOICE, .dst = (d), .choices = (c)}
#define CLI_F_LIST(n, d, cnt, m) {.name = (n), .kind = CLI_LIST, .dst = (d), .count = (cnt), .max = (m)}
#define CLI_F_INT(n, d, l, h) {.name = (n), .kind = CLI_INT, .dst = (d), .lo = (l), .hi = (h)}
#define CLI_F_INT64(n, d, l, h) {.name = (n), .kind = CLI_INT64, .dst = (d), .lo = (l), .hi = (h)}
#define CLI_F_REAL(n, d, l, h, open) \
    {.name = (n), .kind = CLI_REAL, .dst = (d), .real_lo = (l), .real_hi = (h), .real_lo_open = (open)}
#define CLI_F_DURATION(n, d) {.name = (n), .kind = CLI_DURATION, .dst = (d)}
#define CLI_F_SIZE(n, d, l, h) {.name = (n), .kind = CLI_SIZE, .dst = (d), .lo = (l), .hi = (h)}
#define CLI_F_ARGS(n, d, cnt, m) {.name = (n), .kind = CLI_ARGS, .dst = (d), .count = (cnt), .max = (m)}

int cli_parse_flags(const char *cmd, int argc, char **argv, const cli_flag *flags, int n_flags, int *help);

/* Print the JSON object as the last stdout line; if out_dir is not NULL,
 * also write it atomically to out_dir/result.json. Returns 0 or an exit code. */
int cli_emit_result(const strbuf *json, const char *out_dir);

/* Finish w's object (jsonw_finish), print it as the last stdout line, free
 * its buffer: 0, or -1 with err (an unfinished object, out of memory). */
int cli_emit_jsonw(jsonw *w, tempo_error *err);

/* Subcommands: each parses argv (argv[0] is the subcommand name), calls the
 * library and returns the process exit code. */
int cmd_prepare(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_judge(int argc, char **argv);
int cmd_icl(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_decompress(int argc, char **argv);
/* `tempo bench infer` (cmd_bench_infer.c) and `tempo bench train`
 * (cmd_bench_train.c), dispatched by cmd_bench. */
int bench_infer_main(int argc, char **argv);
int bench_train_main(int argc, char **argv);
int bench_allreduce_main(int argc, char **argv);
int bench_scale_main(int argc, char **argv);
/* `tempo bench peak|train --device cuda` (cmd_bench_cuda.c) */
int bench_peak_cuda_main(int argc, char **argv);
int bench_train_cuda_main(int argc, char **argv);
/* From cmd_plan.c, shared with bench scale: configs/REL as found from
 * $TEMPO_CONFIGS, beside the executable, or ./configs. */
void plan_find_config(const char *rel, char *out, size_t n);
/* A preset (name or path) on top of the defaults, then the "key=value"
 * pairs sets[0..n_sets) and the vocabulary, finished (run_config_finish). */
int cli_load_preset(const char *name, const char *const *sets, int n_sets, int vocab, run_config *c,
                    tempo_error *err);
/* "1,2" -> thread counts in out[0..max-1]; returns how many, or 0 / -1 on a
 * bad list (each count in [1, NUMBER_MAX_THREADS]). */
int cli_parse_thread_list(const char *text, int *out, int max);
/* The benchmarks' default thread counts: 1, then all (omp_get_max_threads())
 * when that is more. Writes out[0..1]; returns how many. */
int cli_default_thread_list(int out[2]);
int cmd_leaderboard(int argc, char **argv);

/* Shared by `tempo icl` and `tempo eval --phase 2` (cmd_icl.c): the ICL
 * progress line on stderr (a bar on a TTY, a line per task otherwise), the
 * results table, and the default tasks folder ($TEMPO_DATA/icl). */
typedef struct {
    int tty;
    double t0;
} cli_icl_progress_state;
void cli_icl_progress_init(cli_icl_progress_state *p);
void cli_icl_progress(void *user, const char *label, int done, int total);
void cli_icl_print_table(FILE *f, const icl_task_result *r, int n, const icl_summary *s);
int cli_icl_default_tasks(char *out, size_t n);

/* The GPU a subcommand's model runs on (cli_model.c): NULLs on the CPU. */
struct gpu;
struct model_cuda;
typedef struct {
    struct gpu *g;
    struct model_cuda *gm;
} cli_device;

/* Load the model of model_path (a run folder, .safetensors or GGUF file; its
 * config and tokenizer) for batches of up to `batch` sequences; with device
 * "cuda" its passes run on a GPU from now on (precision "fp32" or "bf16", for
 * its own forwards: the inference engine is fp32 either way), saying so on
 * stderr as "<what>: on <GPU> (<precision>)". Nothing is left to free on
 * failure. Release with cli_free_model. */
int cli_load_model(const char *what, const char *model_path, int batch, const char *device, const char *precision,
                   run_config *cfg, model **m, tokenizer **tok, cli_device *d, tempo_error *err);
void cli_free_model(model *m, tokenizer *tok, cli_device *d);

/* Shared by `tempo bench infer` and `tempo eval --phase 2` (cmd_bench_infer.c):
 * the thread counts to measure at (threads > 0: that one; 0: 1 and all
 * cores), the chip limits at each (peak and bandwidth from the hardware
 * profile, a quick triad when it has no bandwidth) and the run's training
 * speed from RUN_DIR/result.json when there is one. */
int cli_bench_infer_setup(const char *model_path, int threads, bench_infer_options *o, tempo_error *err);
/* The same for a model on GPU g: one measurement (no thread counts), the
 * bound from g's fp32 matrix rate and copy bandwidth measured now. */
int cli_bench_infer_setup_gpu(struct gpu *g, bench_infer_options *o, tempo_error *err);

#endif
