/* manifest.h - a submission's manifest.json: who made it, which phase it
 * enters, and how to train it. Strict: unknown keys, wrong types and
 * out-of-range values are errors naming the key, so a typo never silently
 * changes what is run. The format is documented in docs/submission.md:
 *
 *   {"name": "tiny-baseline", "authors": ["Ada"], "description": "...",
 *    "phase": 1,
 *    "preset": "cpu-default", "overrides": {"lr": 0.003, "n_layers": 6}}
 *   or instead of preset/overrides:
 *    "command": ["./train.sh", "--fast"]      (exec'd in the submission copy)
 *    "command": "python3 train.py"            (run by /bin/sh -c)
 *   optional: "threads": N, "vocab": N (data the judge prepares), "steps": N
 *
 * Nothing here runs anything or touches other files. */
#ifndef TEMPO_JUDGE_MANIFEST_H
#define TEMPO_JUDGE_MANIFEST_H

#include "core/error.h"

#define JUDGE_MANIFEST_FILE "manifest.json"
#define JUDGE_MAX_ARGS 32
#define JUDGE_MAX_ARG_LEN 512
#define JUDGE_MAX_OVERRIDES 64
#define JUDGE_MAX_OVERRIDE_LEN 256

typedef struct {
    char name[65];          /* [A-Za-z0-9._-], starting with a letter or digit */
    char authors[512];      /* joined with ", " */
    char description[1024];
    int phase;              /* 1 or 2 */
    /* exactly one of preset / command */
    char preset[65];        /* non-empty: train with `tempo train --preset` */
    int n_overrides;
    char overrides[JUDGE_MAX_OVERRIDES][JUDGE_MAX_OVERRIDE_LEN];  /* "key=value", for --set */
    int n_command;          /* > 0: run this command */
    int command_shell;      /* 1: command[0] is a shell line for /bin/sh -c */
    char command[JUDGE_MAX_ARGS][JUDGE_MAX_ARG_LEN];
    int threads;            /* 0: the judge's choice */
    int ranks;              /* 1: one process; > 1 (phase 2, a preset): tempo train under mpirun -np ranks */
    int vocab;              /* 0: the judge's choice */
    long long steps;        /* 0: no step cap */
} judge_manifest;

/* Parse manifest text (len bytes). Errors read "manifest.json: <problem>". */
int judge_manifest_parse(judge_manifest *m, const char *text, size_t len, tempo_error *err);

/* Read and parse DIR/manifest.json ("manifest.json: missing" when absent). */
int judge_manifest_load(judge_manifest *m, const char *dir, tempo_error *err);

#endif
