/* cmd_bench.c - `tempo bench`: placeholder until the bench slice lands. */
#include "cli/cli.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("bench: not implemented yet");
}
