/* fuzz_manifest.c - libFuzzer harness for the submission manifest reader
 * (judge_manifest_parse, src/judge/manifest.c): any bytes must parse or be
 * refused with "manifest.json: problem", never crash or leak. An accepted
 * manifest keeps its documented promises (a valid name, exactly one of
 * preset or command, bounded lists), and its overrides go through the
 * run-config key table as the judge hands them to `tempo train --set`. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "judge/manifest.h"
#include "run/run_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    judge_manifest m;
    tempo_error err;
    if (judge_manifest_parse(&m, (const char *)data, size, &err))
        return 0;
    if (!isalnum((unsigned char)m.name[0]) || (m.phase != 1 && m.phase != 2) || !m.preset[0] == !m.n_command ||
        m.n_overrides < 0 || m.n_overrides > JUDGE_MAX_OVERRIDES || m.n_command < 0 || m.n_command > JUDGE_MAX_ARGS ||
        m.ranks < 1 || m.ranks > 256 || (m.ranks > 1 && (m.phase != 2 || !m.preset[0])))
        __builtin_trap(); /* a manifest manifest.h forbids was accepted */
    run_config c;
    run_config_defaults(&c);
    for (int i = 0; i < m.n_overrides; i++) {
        if (!strchr(m.overrides[i], '='))
            __builtin_trap();
        (void)run_config_set_pair(&c, m.overrides[i], &err);
    }
    (void)run_config_finish(&c, &err);
    return 0;
}
