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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        uint64_t sz = 0;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-sandbox")) {
            o.no_sandbox = 1;
            continue;
        }
        if (!v)
            return cli_usage_error("%s: missing value (see tempo judge --help)", a);
        if (!strcmp(a, "--submission")) o.submission = v;
        else if (!strcmp(a, "--phase")) { if ((rc = cli_parse_int(a, v, 1, 2, &x)) == 0) o.phase = (int)x; }
        else if (!strcmp(a, "--budget")) rc = cli_parse_duration(a, v, &o.budget_s);
        else if (!strcmp(a, "--seeds")) { if ((rc = cli_parse_int(a, v, 1, JUDGE_MAX_SEEDS, &x)) == 0) o.seeds = (int)x; }
        else if (!strcmp(a, "--seed")) {
            /* run i uses seed + i: all of them stay within the shared range */
            if ((rc = cli_parse_int(a, v, 0, NUMBER_MAX_SEED - JUDGE_MAX_SEEDS, &x)) == 0) o.seed = (uint64_t)x;
        } else if (!strcmp(a, "--threads")) { if ((rc = cli_parse_int(a, v, 1, NUMBER_MAX_THREADS, &x)) == 0) o.threads = (int)x; }
        else if (!strcmp(a, "--steps")) { if ((rc = cli_parse_int(a, v, 1, NUMBER_MAX_STEPS, &x)) == 0) o.steps = x; }
        else if (!strcmp(a, "--vocab")) { if ((rc = cli_parse_int(a, v, TOK_MIN_VOCAB, TOK_MAX_VOCAB, &x)) == 0) o.vocab = (int)x; }
        else if (!strcmp(a, "--icl-limit")) { if ((rc = cli_parse_int(a, v, 1, 1000000000, &x)) == 0) o.icl_limit = (int)x; }
        else if (!strcmp(a, "--memory")) { if ((rc = cli_parse_size(a, v, 1 << 20, JUDGE_MAX_MEMORY, &sz)) == 0) o.memory_bytes = sz; }
        else if (!strcmp(a, "--max-procs")) { if ((rc = cli_parse_int(a, v, 8, 1000000, &x)) == 0) o.max_procs = (long)x; }
        else if (!strcmp(a, "--disk")) { if ((rc = cli_parse_size(a, v, 1 << 20, JUDGE_MAX_MEMORY, &sz)) == 0) o.disk_bytes = sz; }
        else if (!strcmp(a, "--log-bytes")) { if ((rc = cli_parse_size(a, v, 1, JUDGE_MAX_LOG_BYTES, &sz)) == 0) o.log_bytes = (size_t)sz; }
        else if (!strcmp(a, "--flood-bytes")) { if ((rc = cli_parse_size(a, v, 1, JUDGE_MAX_MEMORY, &sz)) == 0) o.flood_bytes = sz; }
        else if (!strcmp(a, "--grace")) rc = cli_parse_duration(a, v, &o.grace_s);
        else if (!strcmp(a, "--eval-timeout")) rc = cli_parse_duration(a, v, &o.eval_timeout_s);
        else if (!strcmp(a, "--db")) o.db_path = v;
        else if (!strcmp(a, "--work")) o.work_dir = v;
        else if (!strcmp(a, "--corpus")) o.corpus_dir = v;
        else if (!strcmp(a, "--val")) o.val_path = v;
        else if (!strcmp(a, "--data-dir")) o.data_dir = v;
        else if (!strcmp(a, "--icl")) o.icl_dir = v;
        else if (!strcmp(a, "--tempo")) o.tempo_bin = v;
        else if (!strcmp(a, "--test-pause-in-transaction")) rc = cli_parse_duration(a, v, &o.test_pause_in_tx_s);
        else return cli_usage_error("%s: unknown option (see tempo judge --help)", a);
        if (rc)
            return rc;
        i++;
    }
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
