/* cli.h - what the thin subcommand files share: reporting an error the
 * DESIGN.md way ("tempo: <thing>: <problem>", exit 1 or 2) and printing the
 * final JSON result line. No training, data or model logic lives in src/cli/. */
#ifndef TEMPO_CLI_H
#define TEMPO_CLI_H

#include "core/error.h"
#include "core/strbuf.h"

/* Print "tempo: <msg>" to stderr and return the exit code to use (1 or 2). */
int cli_report(const tempo_error *err);

/* Print a usage error "tempo: <msg>" and return 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
int cmd_leaderboard(int argc, char **argv);

#endif
