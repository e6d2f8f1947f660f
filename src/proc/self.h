/* self.h - the running tempo binary as the commands that record provenance
 * see it (train and export write it into models, the judge into the
 * leaderboard): its absolute path, and the git commit of the source tree it
 * was built from (`git rev-parse HEAD` run in the folder above the binary,
 * "-dirty" appended when tracked files differ; "unknown" without git). */
#ifndef TEMPO_PROC_SELF_H
#define TEMPO_PROC_SELF_H

#include <stddef.h>

#include "core/error.h"

/* The absolute path of the running executable (/proc/self/exe). */
int proc_self_exe(char *out, size_t n, tempo_error *err);

/* git commit of the tree around tempo_bin ("<sha>[-dirty]" or "unknown"). */
void proc_git_commit(const char *tempo_bin, char *out, size_t n);

#endif
