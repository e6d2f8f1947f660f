/* main.c - the `tempo` command: dispatches to subcommands. Holds no logic. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo <command> [options]\n"
            "commands:\n"
            "  prepare   text files -> tokenizer + token files\n"
            "  train     train a model under a wall-clock budget\n"
            "  eval      bits-per-byte of a model on a text file or data dir\n"
            "  bench     benchmarks (peak)\n"
            "run 'tempo <command> --help' for a command's options\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "tempo: %s: unknown command\n", argv[1]);
    usage(stderr);
    return 2;
}
