/* main.c - the `tempo` command: dispatches to subcommands. Holds no logic. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cli/cli.h"
#include "core/cpu_info.h"
#include "core/thread_pin.h"
#include "parallel/dist.h"
#include "kernels/cuda/gpu.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo <command> [options]\n"
            "commands:\n"
            "  prepare   text files -> tokenizer + token files\n"
            "  train     train a model under a wall-clock budget\n"
            "  eval      bits-per-byte of a model on a text file or data dir (--phase 2: scorecard)\n"
            "  compress  a text coded by the model's whole distribution: eval's bits as a file (decompress: back)\n"
            "  icl       in-context-learning accuracy (CORE) over the ICL task files\n"
            "  generate  sample text from a trained model\n"
            "  export    a trained model as GGUF (llama.cpp) or a Hugging Face folder\n"
            "  plan      the best model for a chip and a budget, predicted (partial)\n"
            "  bench     benchmarks (peak, kernels, train, infer)\n"
            "  judge     run a submission under the budget and score it\n"
            "  leaderboard  the judged results (terminal table or HTML page)\n"
            "run 'tempo <command> --help' for a command's options; 'tempo --version' says whether MPI is built in, the CPU's kernel path and what the GPU path found\n");
}

/* OpenMP settings that libgomp reads when it loads, before main, so tempo
 * re-executes itself once with them set:
 *  - OMP_WAIT_POLICY=PASSIVE unless the user chose a policy. Threads that
 *    spin at barriers lose badly when the machine is shared: measured here
 *    under load (d128/L4 step, 2 threads), 6.6 s per step with ACTIVE
 *    against 1.1-2.5 s with PASSIVE. On an idle machine PASSIVE costs the
 *    wake-ups (32-40 us a region on a paravirtualised host): cpu-default at
 *    2 threads trains 6 % slower than with ACTIVE (lab notebook,
 *    2026-12-05), the learning reader reads 7-10 % slower than with
 *    GOMP_SPINCOUNT=20000 (README, threads; 2026-12-06).
 *  - With --pin-threads anywhere on the command line (train, bench train):
 *    OMP_PROC_BIND=close and OMP_PLACES=cores, unless the user set them:
 *    one thread per core, never migrated. */
static void set_openmp_environment(int argc, char **argv)
{
    int again = 0;
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        again = 1;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--pin-threads") && !getenv("OMP_PROC_BIND")) {
            setenv("OMP_PROC_BIND", "close", 1);
            if (!getenv("OMP_PLACES"))
                setenv("OMP_PLACES", "cores", 1);
            again = 1;
            break;
        }
    if (again) {
        /* an exec keeps the mask libgomp bound this thread to (one place when
         * OMP_PROC_BIND is set): give it back the places' whole mask */
        cpu_set_t places;
        if (thread_pin_places_mask(&places) > 0)
            sched_setaffinity(0, sizeof places, &places);
        execv("/proc/self/exe", argv);
    }
    /* exec failed: carry on with the defaults */
}

int main(int argc, char **argv)
{
    set_openmp_environment(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        char v[256];
        printf("tempo\nmpi: %s\n", dist_built_with_mpi()
                   ? dist_library_version(v, sizeof v)
                   : "not built in (no mpicc when tempo was built; mpirun -np N tempo train refuses)");
        cpu_info ci;
        cpu_info_query(&ci);
        printf("cpu: %s kernels (%s, %d cores; TEMPO_KERNELS=avx2 or portable caps the path)\n",
               cpu_kernel_path_name(cpu_kernel_path_select(&ci)), ci.model, ci.cores);
        char cuda[512];
        gpu_describe(cuda, sizeof cuda);
        printf("cuda: %s\n", cuda);
        return 0;
    }
    const char *c = argv[1];
    /* under mpirun only the commands that work together as ranks may run; any other would run
     * N times over the same files */
    int w = dist_launched_world();
    if (w > 1 && strcmp(c, "train") &&
        !(!strcmp(c, "bench") && argc > 2 && (!strcmp(argv[2], "allreduce") || !strcmp(argv[2], "train")))) {
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        if (!rank || !strcmp(rank, "0"))   /* one line for the job */
            fprintf(stderr, "tempo: %s runs as one process; under mpirun (-np %d) it would run %d times "
                            "(only train, bench train and bench allreduce work as ranks)\n", c, w, w);
        return 2;
    }
    if (!strcmp(c, "prepare"))
        return cmd_prepare(argc - 1, argv + 1);
    if (!strcmp(c, "train"))
        return cmd_train(argc - 1, argv + 1);
    if (!strcmp(c, "eval"))
        return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(c, "compress"))
        return cmd_compress(argc - 1, argv + 1);
    if (!strcmp(c, "decompress"))
        return cmd_decompress(argc - 1, argv + 1);
    if (!strcmp(c, "icl"))
        return cmd_icl(argc - 1, argv + 1);
    if (!strcmp(c, "generate"))
        return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(c, "export"))
        return cmd_export(argc - 1, argv + 1);
    if (!strcmp(c, "plan"))
        return cmd_plan(argc - 1, argv + 1);
    if (!strcmp(c, "bench"))
        return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(c, "judge"))
        return cmd_judge(argc - 1, argv + 1);
    if (!strcmp(c, "leaderboard"))
        return cmd_leaderboard(argc - 1, argv + 1);
    /* one line: the usage would bury the error under a screenful */
    return cli_usage_error("unknown command '%s'; see tempo --help", c);
}
