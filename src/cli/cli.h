/* cli.h - what the thin subcommand files share: reporting an error the
 * DESIGN.md way ("tempo: <thing>: <problem>", exit 1 or 2) and printing the
 * final JSON result line. No training, data or model logic lives in src/cli/. */
#ifndef TEMPO_CLI_H
#define TEMPO_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "bench/bench_infer.h"
#include "core/error.h"
#include "core/strbuf.h"
#include "eval/icl.h"
#include "memory/hybrid.h"
#include "train/run_config.h"

/* Print "tempo: <msg>" to stderr and return the exit code to use (1 or 2). */
int cli_report(const tempo_error *err);

/* Print a usage error "tempo: <msg>" and return 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A flag's numeric value through core/number.h: 0 with *out set, or, after
 * printing the one-line error, the exit code (2). Durations are at most
 * NUMBER_MAX_DURATION_S. */
int cli_parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out);
int cli_parse_real(const char *flag, const char *v, double lo, double hi, int lo_open, double *out);
int cli_parse_duration(const char *flag, const char *v, double *out);
int cli_parse_size(const char *flag, const char *v, uint64_t lo, uint64_t hi, uint64_t *out);

/* Print the JSON object as the last stdout line; if out_dir is not NULL,
 * also write it atomically to out_dir/result.json. Returns 0 or an exit code. */
int cli_emit_result(const strbuf *json, const char *out_dir);

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

/* The hybrid model's parts beside a loaded model (memory.bin, mixer.json),
 * each component switched off by use_memory/use_cache = 0 (cmd_icl.c). */
int cli_load_hybrid(const char *model_path, const run_config *cfg, const tokenizer *tok, int use_memory,
                    int use_cache, hybrid_parts *h, tempo_error *err);

/* Shared by `tempo bench infer` and `tempo eval --phase 2` (cmd_bench_infer.c):
 * the thread counts to measure at (threads > 0: that one; 0: 1 and all
 * cores), the chip limits at each (peak and bandwidth from the hardware
 * profile, a quick triad when it has no bandwidth) and the run's training
 * speed from RUN_DIR/result.json when there is one. */
int cli_bench_infer_setup(const char *model_path, int threads, bench_infer_options *o, tempo_error *err);

#endif
