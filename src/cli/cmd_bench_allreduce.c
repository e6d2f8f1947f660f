/* cmd_bench_allreduce.c - `tempo bench allreduce`: flags, the MPI session,
 * and rank 0 printing bench/bench_allreduce.c's JSON lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_allreduce.h"
#include "cli/cli.h"
#include "parallel/dist.h"

#define MAX_SIZES 32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N tempo bench allreduce [--sizes 4K,64K,1M,10M,64M] [--iters N]\n"
            "  the all-reduce (sum of floats) the trainer averages gradients with, timed on the ranks of the\n"
            "  job: one JSON line per size with the median time, algorithm bandwidth (bytes / time), bus\n"
            "  bandwidth (algbw x 2(N-1)/N) and, beside it, one rank's memcpy of the same bytes.\n"
            "  --sizes  comma list of byte counts (K/M/G = 1024^k; default above; 10M is about the\n"
            "           default model's gradient); --iters: timed repetitions per size (default 20).\n"
            "  Under one process there is nothing to reduce: it says so and exits 2.\n");
}

/* "4K,1M" -> sizes[0..*n): 0, or the exit code (the error printed). */
static int parse_sizes(const char *text, size_t *sizes, int *n)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        if (*n == MAX_SIZES) return cli_usage_error("bench allreduce: --sizes: at most %d", MAX_SIZES);
        if (cli_parse_size("--sizes", tok, 4, (uint64_t)1 << 32, &b)) return 2;
        sizes[(*n)++] = (size_t)b;
    }
    return *n ? 0 : cli_usage_error("bench allreduce: --sizes '%s': no sizes", text);
}

int bench_allreduce_main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {4u << 10, 64u << 10, 1u << 20, 10u << 20, 64u << 20};
    int n_sizes = 5, iters = 20;
    const char *sizes_text = NULL;
    const cli_flag flags[] = {
        CLI_F_INT("--iters", &iters, 1, 100000),
        CLI_F_STRING("--sizes", &sizes_text),
    };
    int help, bad = cli_parse_flags("bench allreduce", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]),
                                    &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    if (sizes_text && (bad = parse_sizes(sizes_text, sizes, &n_sizes)))
        return bad;
    dist_context d;
    tempo_error err;
    if (dist_init(&d, &argc, &argv, &err))
        return cli_report(&err);
    if (d.world < 2) {
        dist_finalize(&d);
        return cli_usage_error("bench allreduce: one process has nothing to reduce; run it as "
                               "mpirun -np N tempo bench allreduce%s",
                               dist_built_with_mpi() ? "" : " (and build tempo with MPI)");
    }
    bench_allreduce_row rows[MAX_SIZES];
    if (bench_allreduce_run(&d, sizes, n_sizes, iters, rows, &err)) {
        cli_report(&err);
        dist_abort(&d, 1);
    }
    int rc = 0;
    for (int s = 0; d.rank == 0 && s < n_sizes && !rc; s++) {
        strbuf js = {0};
        jsonw w;
        jsonw_init(&w, &js);
        bench_allreduce_json(&w, &d, &rows[s]);
        if (jsonw_finish(&w, &err))
            rc = cli_report(&err);
        else
            printf("%s\n", js.data);
        strbuf_free(&js);
    }
    fflush(stdout);
    dist_finalize(&d);
    return rc;
}
