/* cmd_judge.c - `tempo judge`: parse flags, call judge_run (src/judge/judge.h),
 * print the human summary to stderr and the attempt as the last stdout line
 * (also written to the attempt folder's result.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fileio.h"
#include "core/number.h"
#include "data/tokenizer.h"
#include "judge/judge.h"
#include "judge/report.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tempo judge --submission DIR [options]\n"
        "  --submission DIR   a folder with manifest.json (see docs/submission.md)\n"
        "  --phase N          1: val bpb; 2: + ICL and inference (default: the manifest's)\n"
        "  --budget D         wall-clock budget per run: 90s, 10m, 1h30m (default 30m)\n"
        "  --seeds N          runs, reported as mean and standard deviation (default 1)\n"
        "  --seed N           the first seed; run i uses seed + i (default 1)\n"
        "  --threads N        threads for the submission (default: the manifest's, else all cores)\n"
        "  --steps N          step cap for reproducible runs (default: the manifest's, else none)\n"
        "  --vocab N          vocabulary of the prepared training data when the manifest has none (default 4096)\n"
        "  --memory SIZE      address-space limit (RLIMIT_AS) per process, and the limit on a run's resident\n"
        "                     memory summed over its processes, e.g. 8G (default 80%% of RAM)\n"
        "  --max-procs N      processes and threads a run may have at once (default 512)\n"
        "  --disk SIZE        bytes a run may keep in its writable folders (default 16G)\n"
        "  --no-sandbox       run submissions without the sandbox (bubblewrap: own namespaces, no network,\n"
        "                     only the handed-over folders visible); recorded as sandbox: none. Without\n"
        "                     it the judge refuses where a sandbox cannot start ($TEMPO_BWRAP: the bwrap to use)\n"
        "  --grace D          SIGTERM -> SIGKILL delay at the deadline (default 5s)\n"
        "  --log-bytes SIZE   per output stream: keep the first SIZE and the last SIZE/4 bytes (default 1M)\n"
        "  --flood-bytes SIZE output beyond this fails the run as flooding (default 64M)\n"
        "  --eval-timeout D   limit on each evaluation of a model (default: the budget, at least 10m)\n"
        "  --db FILE          the leaderboard (default leaderboard.sqlite)\n"
        "  --work DIR         run folders and the training-data cache (default runs/judge)\n"
        "  --corpus DIR       training files train*.txt[.xz]/train*.jsonl[.xz] (default $TEMPO_DATA/corpus)\n"
        "  --val FILE         the official validation text (default CORPUS/val.txt.xz, else val.txt)\n"
        "  --data-dir DIR     hand this prepared training folder over instead of preparing one\n"
        "  --icl DIR          ICL tasks for phase 2 (default $TEMPO_DATA/icl)\n"
        "  --icl-limit N      items per ICL task in phase 2 (default: all)\n"
        "  --tempo PATH       the tempo binary used to train/evaluate (default: this one)\n"
        "TEMPO_DATA defaults to ../shared/data. The judge exits 0 when the attempt is recorded, whatever its\n"
        "verdict; 1 when it could not judge; 2 on bad usage.\n");
}

/* Limits of the judge's own numbers (besides number.h's shared ones). */
#define JUDGE_MAX_SEEDS 1000                   /* each seed is a whole training run */
#define JUDGE_MAX_MEMORY (1ULL << 50)          /* 1 PiB of address space */
#define JUDGE_MAX_LOG_BYTES (1ULL << 30)       /* kept in memory while the command runs */

/* The flags into o (its defaults already there): 0, the exit code of a
 * usage error (printed), or -1 after --help. */
static int judge_flags(int argc, char **argv, judge_options *o)
{
    long long seed = (long long)o->seed;
    uint64_t log_bytes = o->log_bytes;
    int max_procs = (int)o->max_procs;
    const cli_flag flags[] = {
        CLI_F_STRING("--submission", &o->submission),
        CLI_F_INT("--phase", &o->phase, 1, 2),
        CLI_F_DURATION("--budget", &o->budget_s),
        CLI_F_INT("--seeds", &o->seeds, 1, JUDGE_MAX_SEEDS),
        /* run i uses seed + i: all of them stay within the shared range */
        CLI_F_INT64("--seed", &seed, 0, NUMBER_MAX_SEED - JUDGE_MAX_SEEDS),
        CLI_F_INT("--threads", &o->threads, 1, NUMBER_MAX_THREADS),
        CLI_F_INT64("--steps", &o->steps, 1, NUMBER_MAX_STEPS),
        CLI_F_INT("--vocab", &o->vocab, TOK_MIN_VOCAB, TOK_MAX_VOCAB),
        CLI_F_INT("--icl-limit", &o->icl_limit, 1, 1000000000),
        CLI_F_SIZE("--memory", &o->memory_bytes, 1 << 20, JUDGE_MAX_MEMORY),
        CLI_F_INT("--max-procs", &max_procs, 8, 1000000),
        CLI_F_SIZE("--disk", &o->disk_bytes, 1 << 20, JUDGE_MAX_MEMORY),
        CLI_F_SIZE("--log-bytes", &log_bytes, 1, JUDGE_MAX_LOG_BYTES),
        CLI_F_SIZE("--flood-bytes", &o->flood_bytes, 1, JUDGE_MAX_MEMORY),
        CLI_F_DURATION("--grace", &o->grace_s),
        CLI_F_DURATION("--eval-timeout", &o->eval_timeout_s),
        CLI_F_STRING("--db", &o->db_path),
        CLI_F_STRING("--work", &o->work_dir),
        CLI_F_STRING("--corpus", &o->corpus_dir),
        CLI_F_STRING("--val", &o->val_path),
        CLI_F_STRING("--data-dir", &o->data_dir),
        CLI_F_STRING("--icl", &o->icl_dir),
        CLI_F_STRING("--tempo", &o->tempo_bin),
        CLI_F_SWITCH("--no-sandbox", &o->no_sandbox),
        CLI_F_DURATION("--test-pause-in-transaction", &o->test_pause_in_tx_s),
    };
    int help, bad = cli_parse_flags("judge", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return -1; }
    o->seed = (uint64_t)seed;
    o->log_bytes = (size_t)log_bytes;
    o->max_procs = max_procs;
    return 0;
}

int cmd_judge(int argc, char **argv)
{
    judge_options o;
    judge_options_default(&o);
    const char *data_root = getenv("TEMPO_DATA");
    if (!data_root || !*data_root)
        data_root = "../shared/data";
    char corpus[1024], val[1100], icl[1024];
    path_join(corpus, sizeof corpus, data_root, "corpus");
    path_join(icl, sizeof icl, data_root, "icl");
    o.corpus_dir = corpus;
    o.icl_dir = icl;
    int bad = judge_flags(argc, argv, &o);
    if (bad)
        return bad < 0 ? 0 : bad;
    if (!o.submission)
        return cli_usage_error("judge: --submission DIR is required (see tempo judge --help)");
    if (!o.val_path) {
        path_join(val, sizeof val, o.corpus_dir, "val.txt.xz");
        if (!path_exists(val))
            path_join(val, sizeof val, o.corpus_dir, "val.txt");
        o.val_path = val;
    }
    tempo_error err;
    tempo_error_clear(&err);
    judge_attempt a;
    if (judge_run(&o, &a, &err)) {
        judge_attempt_free(&a);
        return cli_report(&err);
    }
    strbuf summary = {0}, json = {0};
    judge_report_attempt(&a, &summary);
    if (summary.data)
        fputs(summary.data, stderr);
    int rc = judge_attempt_to_json(&a, &json, &err) ? cli_report(&err)
                                                      : cli_emit_result(&json, a.work_dir[0] ? a.work_dir : NULL);
    strbuf_free(&summary);
    strbuf_free(&json);
    judge_attempt_free(&a);
    return rc;
}
