/* train_data.h - the training folder the judge hands to submissions, made
 * so that the official validation text is never in it.
 *
 * From a corpus folder (train*.txt, train*.jsonl, optionally .xz; val.* is
 * never read here) the judge builds, once per (train files, vocab), a cached
 * folder WORK/data/v<vocab>-<key>/:
 *   text/train/   the training files; the last one minus a small dev split
 *   text/dev.txt  the dev split: whole documents taken out of the last
 *                 training file (about 5 % of it, at most 512 KiB)
 *   train.tok, val.tok, tokenizer.tiktoken, meta.json
 *                 `tempo prepare --vocab N text/train --val text/dev.txt`,
 *                 so val.tok is the dev split, never the validation text
 * and records every file's sha256 beside it (WORK/data/<name>.sha256). Each
 * run verifies the folder against that record first (every file listed once,
 * its sha256 matching, no other file); a folder changed by an earlier
 * submission, or without its record, is rebuilt with a note, and one that
 * cannot be removed is refused: a changed folder is never handed over. The
 * record lies beside the folder, as writable as it: a process of the same
 * user that rewrites both consistently is not detected. Alternatively a prepared folder given by
 * the organiser (--data-dir) is handed over as is, after checking that no
 * file in it is the validation text and that its meta.json does not name it.
 * Running submissions and scoring live elsewhere (judge/judge.h). */
#ifndef TEMPO_JUDGE_TRAIN_DATA_H
#define TEMPO_JUDGE_TRAIN_DATA_H

#include <stdio.h>

#include "core/error.h"

typedef struct {
    const char *tempo_bin;   /* runs `prepare` */
    const char *corpus_dir;  /* folder with train* files (used when data_dir is NULL) */
    const char *data_dir;    /* a prepared folder to hand over as is, or NULL */
    const char *val_path;    /* the official validation text (only fingerprinted here) */
    const char *work_dir;    /* the cache lives in work_dir/data */
    int vocab;
    FILE *progress;          /* human progress lines, or NULL */
} judge_data_options;

typedef struct {
    char dir[1024];          /* the folder handed to submissions (TEMPO_DATA_DIR), an absolute path */
    char text_dir[1100];     /* its raw training text (TEMPO_TRAIN_TEXT), "" when absent */
    char sums_path[1100];    /* the checksum record ("" for --data-dir) */
    char id[160];            /* "corpus v<vocab> <key>" or "dir <path>" */
    char val_sha256[65];     /* sha256 of the validation file's bytes */
    char val_text_sha256[65];/* sha256 of its decompressed text */
} judge_data;

/* Build or reuse the training folder (see above) and fingerprint the
 * validation file. Errors are the judge's (exit 1), not a submission's. */
int judge_data_prepare(const judge_data_options *o, judge_data *d, tempo_error *err);

/* Before each run: check the cached folder against its record (a no-op for
 * --data-dir). Returns 0 when intact, -1 with err naming the changed file. */
int judge_data_verify(const judge_data *d, tempo_error *err);

/* sha256 (hex) of a file's bytes. */
int judge_sha256_file(const char *path, char hex[65], tempo_error *err);

/* The documents of one corpus file, read with the data module's reader
 * (data/corpus.h: .txt or .jsonl, optionally .xz), each framed again as its
 * format frames documents (txt: the text, a "\n" when it lacks one, then the
 * line "\x1e"; jsonl: {"text": ...} and "\n"). Document i is
 * text[ends[i-1] .. ends[i]) (ends[-1] = 0). */
typedef struct {
    unsigned char *text;
    size_t len, cap;
    size_t *ends;
    size_t n;
    int jsonl;
} judge_docs;

/* Read path's documents; errors are the corpus reader's, naming the file. */
int judge_docs_read(const char *path, judge_docs *d, tempo_error *err);
void judge_docs_free(judge_docs *d); /* zeroes d */

/* The dev split of a file's documents: picks whole documents, the last ones
 * first and documents of at most target/8 before larger ones, totalling at
 * most target bytes and at least target/2 when documents that small exist,
 * always leaving one in train. Writes the remaining documents (in order) to
 * train_out and the picked ones (in order) to dev_out. Returns the number of
 * dev documents (0: the file has fewer than two documents). */
size_t judge_split_dev(const judge_docs *d, size_t target, FILE *train_out, FILE *dev_out);

#endif
