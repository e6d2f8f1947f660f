/* cmd_bench.c - `tempo bench`: parses options, calls the benchmark library
 * (src/bench/), prints its JSON lines. No measuring logic lives here.
 *
 *   tempo bench peak [--out FILE] [--seconds S]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/hw_profile.h"
#include "cli/cli.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench peak [--out FILE] [--seconds S]\n"
            "  peak     fp32 FMA peak and triad memory bandwidth at 1 and all threads;\n"
            "           writes the hardware profile (default: $TEMPO_HW_PROFILE, else\n"
            "           $XDG_CACHE_HOME/tempo/hardware.json or ~/.cache/tempo/hardware.json)\n"
            "           and prints it as a JSON line. --seconds: total time (default 4).\n");
}

static int parse_positive(const char *flag, const char *text, double *v)
{
    char *end;
    *v = strtod(text, &end);
    if (end == text || *end || !(*v > 0) || *v > 1e6)
        return cli_usage_error("bench: %s '%s': expected a positive number", flag, text);
    return 0;
}

static int bench_peak(int argc, char **argv)
{
    const char *out = NULL;
    hw_measure_options o = {.seconds = 4, .bandwidth = 1, .triad_array_bytes = 256u << 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc)
            return cli_usage_error("bench peak: %s: unknown option or missing value", a);
        if (!strcmp(a, "--out")) {
            out = argv[++i];
        } else if (!strcmp(a, "--seconds")) {
            if (parse_positive("--seconds", argv[++i], &o.seconds))
                return 2;
        } else {
            return cli_usage_error("bench peak: %s: unknown option", a);
        }
    }
    tempo_error err;
    tempo_error_clear(&err);
    char path[1024];
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else if (hw_profile_path(path, sizeof path, &err))
        return cli_report(&err);

    fprintf(stderr, "bench peak: measuring FMA peak and triad bandwidth (~%.0f s)\n", o.seconds);
    hw_profile p;
    if (hw_profile_measure(&p, &o, &err))
        return cli_report(&err);
    if (p.contended)
        fprintf(stderr, "bench peak: other processes used %.2f cores meanwhile: figures are low\n",
                p.other_load_cores);
    if (hw_profile_save(&p, path, &err))
        return cli_report(&err);
    fprintf(stderr, "bench peak: wrote %s\n", path);
    strbuf json = {0};
    hw_profile_to_json(&p, &json);
    int rc = cli_emit_result(&json, NULL);
    strbuf_free(&json);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "peak"))
        return bench_peak(argc - 1, argv + 1);
    return cli_usage_error("bench: %s: unknown benchmark (try: peak)", argv[1]);
}
