/* cmd_leaderboard.c - `tempo leaderboard`: placeholder until the judge slice lands. */
#include "cli/cli.h"

int cmd_leaderboard(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_usage_error("leaderboard: not implemented yet");
}
