/* torch_reference.h - running a PyTorch reference script for
 * `tempo bench train --vs-torch` (CPU and GPU alike): finding the script and
 * reading the tokens/s of the JSON lines it prints. */
#ifndef TEMPO_BENCH_TORCH_REFERENCE_H
#define TEMPO_BENCH_TORCH_REFERENCE_H

#include <stddef.h>

#include "run/run_config.h"

/* scripts/NAME beside the binary's tree or under ./scripts into path; 1 when
 * it exists, else 0 with "bench train: --vs-torch: scripts/NAME not found" on
 * stderr. */
int torch_reference_find(const char *name, char *path, size_t n);

/* Run the shell command cmd, echo each JSON line it prints on stdout and
 * return the last "tokens_per_s", or -1 with the reason on stderr (exit 3 is
 * the scripts' "PyTorch is missing or sees no device"). */
double torch_reference_run(const char *cmd);

/* scripts/torch_reference.py on cfg's shape (fp32, threads CPU threads):
 * its tokens/s, or -1 with the reason on stderr. */
double torch_reference_cpu(const run_config *cfg, int threads, int steps, int warmup);

/* scripts/torch_reference_cuda.py on cfg's shape (PyTorch eager on the GPU,
 * precision "bf16" or "fp32", $TEMPO_PYTHON or python3): its tokens/s, or -1. */
double torch_reference_gpu(const run_config *cfg, int steps, int warmup, const char *precision);

#endif
