/* cmd_train.c - `tempo train`: placeholder until the train slice lands. */
#include "cli/cli.h"

int cmd_train(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("train: not implemented yet");
}
