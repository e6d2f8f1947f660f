/* cmd_prepare.c - `tempo prepare`: placeholder until the prepare slice lands. */
#include "cli/cli.h"

int cmd_prepare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("prepare: not implemented yet");
}
