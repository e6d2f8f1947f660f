/* icl_task.h - the ICL task files and their table: reading core_tasks.tsv
 * (which CORE entries exist, with their type, few-shot count, continuation
 * delimiter and random baseline) and the JSON-lines task files of the
 * MosaicML/DCLM format, validating every record. Scoring is icl.h.
 *
 * Record formats (one JSON object per line; blank lines are ignored):
 *   multiple_choice:   {"query": str, "choices": [str, ...], "gold": int}
 *   schema:            {"context_options": [str, ...], "continuation": str, "gold": int}
 *   language_modeling: {"context": str, "continuation": str}
 * A record that breaks these rules is not an error for the task: it is
 * skipped, counted by reason, and the first one is remembered as
 * "file:line: problem" so that reports can show it. The rules: the line is
 * one JSON object with the fields of its type, of the right JSON types
 * (other fields are ignored); strings are valid UTF-8 without NUL bytes;
 * at least two choices/options; gold an integer in range; a continuation
 * that is not only whitespace. */
#ifndef TEMPO_ICL_TASK_H
#define TEMPO_ICL_TASK_H

#include "core/error.h"

typedef enum { ICL_MULTIPLE_CHOICE = 0, ICL_SCHEMA, ICL_LANGUAGE_MODELING } icl_type;

/* "multiple_choice", "schema", "language_modeling" */
const char *icl_type_name(icl_type t);

typedef struct {
    char label[64];         /* e.g. "arc_easy" */
    char file[256];         /* relative to the tasks folder */
    icl_type type;
    int num_fewshot;
    char delimiter[64];     /* the continuation delimiter, decoded (e.g. "\nAnswer: ") */
    double random_baseline; /* a fraction in [0, 1) (the table gives percent) */
    int in_core;            /* 1: one of the table's entries; 0: an extra reported beside CORE */
} icl_task_spec;

/* The extra entry: a 1,000-item HellaSwag validation subset, scored with the
 * CORE "hellaswag" entry's settings (10-shot, " ", baseline 25 %) when the
 * file exists, reported beside CORE, never inside it. */
#define ICL_EXTRA_HELLASWAG_FILE "extra/hellaswag_val_subset1000.jsonl"

/* Read TASKS_DIR/core_tasks.tsv: '#' comment lines, a header line starting
 * "label\t", then per line: label, file, task_type, num_fewshot,
 * continuation_delimiter (a JSON string literal), random_baseline_pct,
 * present, records (the last two are informational: whether a file is
 * present is decided by looking). Appends the extra HellaSwag entry
 * (in_core 0). Any malformed line or unknown task type is an error
 * "core_tasks.tsv:LINE: problem" (code 1). *specs is malloc'd; *n_core
 * counts the table's entries (22 for the CORE table). */
int icl_table_read(const char *tasks_dir, icl_task_spec **specs, int *n_specs, int *n_core,
                   tempo_error *err);

/* One validated record. */
typedef struct {
    char *text;          /* multiple_choice: query; language_modeling: context; schema: NULL */
    char **options;      /* multiple_choice: choices; schema: context_options; else NULL */
    int n_options;
    char *continuation;  /* schema, language_modeling; else NULL */
    int gold;            /* multiple_choice, schema; else -1 */
    int line;            /* 1-based line in the file */
} icl_item;

typedef enum {
    ICL_SKIP_MALFORMED = 0, /* not JSON, not an object, a field missing or of the wrong type */
    ICL_SKIP_GOLD,          /* gold not an integer index of the choices */
    ICL_SKIP_CHOICES,       /* fewer than two choices / context options */
    ICL_SKIP_TEXT,          /* a string that is not valid UTF-8 or holds a NUL byte */
    ICL_SKIP_EMPTY,         /* nothing to score: empty continuation, identical choices */
    ICL_SKIP_TOO_LONG,      /* the continuation does not fit in the model's context */
    ICL_SKIP_COUNT
} icl_skip;

/* "malformed", "gold_out_of_range", "too_few_choices", "invalid_text",
 * "empty_continuation", "continuation_too_long" */
const char *icl_skip_name(icl_skip s);

typedef struct {
    icl_item *items;
    int n_items;
    int n_lines;                   /* non-blank lines read */
    int skipped[ICL_SKIP_COUNT];   /* records left out, by reason */
    char first_skip[320];          /* "file:line: problem" of the first, or "" */
} icl_task_data;

/* Read and validate a task file of the given type. Returns 0 (even when
 * records were skipped, or none is valid), or -1 with err set when the file
 * cannot be read or memory runs out. */
int icl_task_load(const char *path, icl_type type, icl_task_data *d, tempo_error *err);
void icl_task_free(icl_task_data *d); /* zeroes d */

/* 1 when s[0..n) is valid UTF-8 (shortest forms, no surrogates, at most
 * U+10FFFF) with no NUL byte. */
int icl_text_ok(const char *s, size_t n);

#endif
