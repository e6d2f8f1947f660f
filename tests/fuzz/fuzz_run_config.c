/* fuzz_run_config.c - libFuzzer harness for the run-config readers
 * (src/run/run_config.c): preset files (`key = value` lines) and the JSON
 * form kept in checkpoints and model metadata. The first input byte picks
 * the reader (even: a .conf file, odd: JSON); the rest is the input. Any
 * input must load or be refused with one error, never crash or leak; a
 * loaded config written as JSON must read back to the same JSON. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "run/run_config.h"

/* The config as JSON, without its preset name (a name cut to fit may end
 * inside a UTF-8 sequence, which the writer escapes byte by byte). */
static void to_json(run_config c, strbuf *out)
{
    c.preset[0] = '\0';
    if (run_config_to_json(&c, out, NULL))
        __builtin_trap(); /* the writer refused a config (not memory: the inputs are small) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    run_config c;
    run_config_defaults(&c);
    tempo_error err;
    int rc;
    if (data[0] & 1) {
        rc = run_config_from_json(&c, (const char *)data + 1, size - 1, &err);
    } else {
        char path[64];
        snprintf(path, sizeof path, "/tmp/tempo_fuzz_preset.%d.conf", (int)getpid());
        FILE *f = fopen(path, "wb");
        if (!f)
            return 0;
        size_t wrote = fwrite(data + 1, 1, size - 1, f);
        if (fclose(f) || wrote != size - 1)
            return 0;
        rc = run_config_load_preset(&c, path, &err);
        unlink(path);
    }
    if (rc)
        return 0;
    (void)run_config_finish(&c, &err);
    strbuf a = {0}, b = {0};
    to_json(c, &a);
    run_config back;
    run_config_defaults(&back);
    if (run_config_from_json(&back, a.data, a.len, &err))
        __builtin_trap(); /* what the writer wrote does not read back */
    to_json(back, &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len))
        __builtin_trap();
    strbuf_free(&a);
    strbuf_free(&b);
    return 0;
}
