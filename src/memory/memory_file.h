/* memory_file.h - a built count memory on disk (RUN_DIR/memory.bin), written
 * atomically and mapped back read-only, so a run folder's memory costs no
 * parse and shares the page cache between processes. The estimator and the
 * counting live in ngram_memory.h; this file only moves tables to and from
 * disk.
 *
 * Layout, little-endian, every table 8-byte aligned:
 *     0   8  magic "TEMPOMEM"
 *     8   4  version: 1 = every order has exact base-V keys; 2 = the top
 *           order is one above ngram_max_order(vocab), its keys hashed as
 *           ngram_memory.h says (the hash is part of the format: a change to
 *           it needs a new version). 3 and 4: the same as 1 and 2, with what
 *           the memory was built from after the discounts (below). 3 or 4 is
 *           written; 1 and 2 (written before) are still read.
 *    12   4  vocab, 16 order, 20 shards, 24 prune_min, 28 ctx words (5)
 *    32   8  tokens counted
 *    40   8  tokenizer id (ngram_tokenizer_id of the tokenizer the ids belong to)
 *    48   8  checksum of every byte after the header
 *    56   8  file size
 *    64     count-of-counts [9][5] u64, then discounts [9][4] f64
 *   712     versions 3 and 4: the data's id (32 bytes: sha256 of the data
 *           folder's meta.json; zero = unknown), then the build's seconds
 *           (f64), so a resumed run can tell that the file is the memory it
 *           would build (memory_stage.h) and charge its build to the budget
 *   712 or 752 (versions 3, 4)  directory: per order 1..K, per shard, grams
 *           then contexts: capacity, count, offset (u64 each)
 *   header end (a multiple of 64): each table's slots as count_table.h lays them
 *           out (key + 1, then the u32 values), each table padded to 8 bytes.
 * Loading checks the size, every offset, the checksum, that each table's
 * occupied slots number its count (< its capacity, so a probe ends), that
 * every key is an n-gram of its order (below V^n, or 2^49 V for a hashed
 * order's n-grams and 2^49 for its contexts) and every context total is positive:
 * a truncated, corrupt or foreign file is one error naming it. A version 1
 * or 2 file loads with an unknown data id and no build seconds. */
#ifndef TEMPO_MEMORY_FILE_H
#define TEMPO_MEMORY_FILE_H

#include <stdint.h>

#include "core/error.h"
#include "data/tokenizer.h"
#include "memory/ngram_memory.h"

/* Write m (built, or any memory of at most one hashed order) to path
 * atomically, with its data_id and build_seconds: memory_file_header, then
 * memory_file_write. */
int memory_file_save(const ngram_memory *m, const char *path, tempo_error *err);

/* The header memory_file_save writes first, in memory: it holds the
 * tables' checksum, so making it reads every table once (about a second
 * for the corpus's 5.47 GB; writing them takes several). Its identity tells
 * before any write whether a file of this memory exists already
 * (memory_store.h). */
typedef struct {
    uint8_t *bytes;
    uint64_t size;
} memory_header;

/* m's header into *hd (free with memory_header_free); errors name path. */
int memory_file_header(const ngram_memory *m, memory_header *hd, const char *path, tempo_error *err);
/* memory_file_identity's digest of a file that begins with hd. */
void memory_header_identity(memory_header *hd, uint8_t digest[32]);
/* Write hd (m's, from memory_file_header) and m's tables to path atomically. */
int memory_file_write(const ngram_memory *m, const memory_header *hd, const char *path, tempo_error *err);
void memory_header_free(memory_header *hd);

/* Map path into *m (tables are read-only views). expect_vocab > 0 and
 * expect_tokenizer != 0 are checked against the file. Bytes mapped: *bytes. */
int memory_file_load(ngram_memory *m, const char *path, int expect_vocab, uint64_t expect_tokenizer,
                     tempo_error *err);

/* The memory's identity: the sha256 of path's header with the build's
 * seconds zeroed. The header holds the settings, the data's id, the count
 * of every table and the checksum of their bytes, so two files of one
 * identity hold the same memory (src/memory/memory_store.h keys its copies
 * by it). Reads the header only: the tables are not checked here. */
int memory_file_identity(const char *path, uint8_t digest[32], tempo_error *err);

/* The file's tables against the checksum its header holds, read once in
 * order (no key checks: memory_file_load makes those): 0 when every byte
 * after the header is the one written, else -1 with err naming path. */
int memory_file_verify(const char *path, tempo_error *err);

/* A fingerprint of a tokenizer's id -> bytes table (not of its file text). */
uint64_t ngram_tokenizer_id(const tokenizer *tok);

#endif
