/* provenance.h - what the leaderboard records about the judge itself: the
 * tempo version, the git commit of the source tree the tempo binary was
 * built from (found at run time with `git rev-parse HEAD` in the folder
 * above the binary, "-dirty" appended when tracked files differ; "unknown"
 * without git), and the hardware profile (bench/hw_profile.h: loaded from
 * its cache file or measured once, ~0.5 s; NULL when that fails). */
#ifndef TEMPO_JUDGE_PROVENANCE_H
#define TEMPO_JUDGE_PROVENANCE_H

#include <stddef.h>

#include "core/error.h"

#ifndef TEMPO_VERSION
#define TEMPO_VERSION "0.1.0-dev"
#endif

/* The absolute path of the running executable (/proc/self/exe). */
int judge_self_exe(char *out, size_t n, tempo_error *err);

/* git commit of the tree around tempo_bin ("<sha>[-dirty]" or "unknown"). */
void judge_git_commit(const char *tempo_bin, char *out, size_t n);

/* The hardware profile as a JSON object (malloc'd), or NULL when none is
 * available; never fails the judging. */
char *judge_hardware_json(void);

#endif
