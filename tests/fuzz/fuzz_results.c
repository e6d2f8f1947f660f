/* fuzz_results.c - libFuzzer harness for the readers of the documents that
 * cross process boundaries: result.json (run_result_read: a submission's
 * own file, read by the judge), a metrics.jsonl line (metrics_record_read:
 * the submission's learning curve), eval's phase-1 line and the phase-2
 * scorecard (eval_bpb_read, eval_scorecard_read). Any bytes must be
 * read or refused, never crash or leak, and what is read keeps the readers'
 * promises (a count is -1 or a whole number in [0, 2^53]). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_result.h"
#include "train/metrics_log.h"
#include "train/run_result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tempo_error err;
    run_result_summary s;
    if (run_result_read((const char *)data, size, &s, &err) == 0) {
        long long counts[] = {s.steps, s.tokens, s.params};
        for (int i = 0; i < 3; i++)
            if (counts[i] < -1 || counts[i] > 9007199254740992ll)
                __builtin_trap();
    }
    metrics_record r;
    if (metrics_record_read((const char *)data, size, &r, &err) == 0 &&
        (r.step < -1 || r.kind < METRICS_STEP || r.kind > METRICS_OTHER || r.note != NULL))
        __builtin_trap();
    char *line = malloc(size + 1);   /* the eval readers take one NUL-terminated line */
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    bpb_result f;
    (void)eval_bpb_read(line, &f, &err);
    double core, decode;
    if (eval_scorecard_read(line, &core, &decode, &err) != 0 && (!isnan(core) || !isnan(decode)))
        __builtin_trap();
    free(line);
    return 0;
}
