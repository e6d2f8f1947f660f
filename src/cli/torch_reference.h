/* torch_reference.h - running a PyTorch reference script for
 * `tempo bench train --vs-torch` (CPU and GPU alike): finding the script and
 * reading the tokens/s of the JSON lines it prints. */
#ifndef TEMPO_CLI_TORCH_REFERENCE_H
#define TEMPO_CLI_TORCH_REFERENCE_H

#include <stddef.h>

/* scripts/NAME beside the binary's tree or under ./scripts into path; 1 when
 * it exists, else 0 with "bench train: --vs-torch: scripts/NAME not found" on
 * stderr. */
int torch_reference_find(const char *name, char *path, size_t n);

/* Run the shell command cmd, echo each JSON line it prints on stdout and
 * return the last "tokens_per_s", or -1 with the reason on stderr (exit 3 is
 * the scripts' "PyTorch is missing or sees no device"). */
double torch_reference_run(const char *cmd);

#endif
