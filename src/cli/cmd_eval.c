/* cmd_eval.c - `tempo eval`: placeholder until the eval slice lands. */
#include "cli/cli.h"

int cmd_eval(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("eval: not implemented yet");
}
