/* provenance.h - what the leaderboard records about the judge itself: the
 * tempo version, the git commit of its binary's source tree (proc/self.h),
 * and the hardware profile (bench/hw_profile.h: loaded from
 * its cache file or measured once, ~0.5 s; NULL when that fails). */
#ifndef TEMPO_JUDGE_PROVENANCE_H
#define TEMPO_JUDGE_PROVENANCE_H

#include <stddef.h>

#include "core/error.h"

#ifndef TEMPO_VERSION
#define TEMPO_VERSION "0.1.0-dev"
#endif

/* The hardware profile as a JSON object (malloc'd), or NULL when none is
 * available; never fails the judging. */
char *judge_hardware_json(void);

#endif
