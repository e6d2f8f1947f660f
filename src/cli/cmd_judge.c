/* cmd_judge.c - `tempo judge`: placeholder until the judge slice lands. */
#include "cli/cli.h"

int cmd_judge(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("judge: not implemented yet");
}
