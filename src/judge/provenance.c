/* provenance.c - the hardware profile for the leaderboard (see provenance.h). */
#include "judge/provenance.h"

#include "bench/hw_profile.h"
#include "core/strbuf.h"

char *judge_hardware_json(void)
{
    hw_profile p;
    tempo_error e;
    tempo_error_clear(&e);
    if (hw_profile_load_or_measure(&p, &e) != 0)
        return NULL;
    strbuf sb = {0};
    if (hw_profile_to_json(&p, &sb, &e)) {
        strbuf_free(&sb);
        return NULL;
    }
    return sb.data;
}
