/* prepare.h - the data pipeline behind `tempo prepare`: text corpora in, a
 * data folder out. Reading lives in corpus.h, the tokenizer in tokenizer.h /
 * bpe_train.h, the token files in token_store.h; this file decides what goes
 * where and writes the folder. It never prints: progress goes to a callback.
 *
 * DATA_DIR after a successful run:
 *   tokenizer.tiktoken  the tokenizer (tokenizer.h format)
 *   train.tok, val.tok  token streams (token_store.h layout: SEP d1 SEP ... dn SEP)
 *   meta.json           what was done (below); written last, so a folder
 *                       without it is not a finished prepare
 *   result.json         written by the CLI: the same object plus "reused"
 *
 * Steps (deterministic for given inputs and options, whatever the thread count):
 *  1. scan: read every input once (nothing is written yet): per-file bytes,
 *     sha256 of the decompressed content, documents; pick the validation
 *     documents and the tokenizer sample. Inputs are read in the order given,
 *     folders expanded in name order; document i is the i-th document of that
 *     sequence (0-based).
 *  2. validation split: with --val FILE, the validation set is FILE's
 *     documents and every input document is training data. Otherwise document
 *     i is held out when u(i) < val_share, where u(i) = splitmix64(i ^
 *     0x76616c) / 2^64 (a hash of the index, so about val_share of the
 *     documents, spread evenly); if that selects none (small corpora), the
 *     document with the smallest u(i) is held out. val_share 0 means no
 *     validation documents (val.tok then holds just the separator).
 *  3. tokenizer sample: among the training documents, those with the smallest
 *     splitmix64(i ^ 0x746f6b) (so the choice does not depend on input order
 *     or size), taken until they hold tok_sample_mb MB of text (the last one
 *     may cross the limit; all of them if the corpus is smaller). The sample is
 *     pre-split and counted (in parallel), then BPE-trained to the vocab.
 *  4. encode: read the inputs again, encode documents in parallel batches,
 *     append them in order to train.tok / val.tok (streaming, atomic), check
 *     every input still has the bytes and sha256 seen by the scan.
 *  5. write meta.json atomically.
 *
 * Caching: meta.json holds "cache_key", a sha256 of the format version, the
 * options that change the output (vocab, val file or val_share,
 * tok_sample_mb) and every input file's absolute path, size and mtime. When
 * it matches and the outputs open cleanly, the folder is reused as is (unless
 * force). Memory: the tokenizer sample (~tok_sample_mb MB), one batch of
 * documents (16 MB) and their ids, one read buffer per reader; raw text is
 * never held whole.
 *
 * meta.json: {"format":"tempo-data","format_version":1,"vocab":N,
 *   "total_vocab":N+1,"sep_id":N,"sep_token":"<|sep|>","options":{...},
 *   "sources":[{"path","role":"train"|"val","size","mtime_ns","bytes"
 *   (decompressed),"sha256" (of the decompressed file),"documents",
 *   "text_bytes" (documents without framing)}...],
 *   "train"/"val":{"file","documents","bytes","tokens" (all tokens in the
 *   file, separators included),"bytes_per_token" (bytes / document tokens,
 *   separators excluded)},
 *   "tokenizer":{"file","sample","sample_documents","sample_bytes",
 *   "distinct_pieces"},"seconds":{"scan","tokenizer","encode","total"},
 *   "threads":T,"cache_key":"..."} */
#ifndef TEMPO_PREPARE_H
#define TEMPO_PREPARE_H

#include "core/error.h"
#include "core/strbuf.h"

#define PREPARE_DEFAULT_VOCAB 4096
#define PREPARE_DEFAULT_VAL_SHARE 0.005
#define PREPARE_DEFAULT_TOK_SAMPLE_MB 40.0
#define PREPARE_MAX_VAL_SHARE 0.5

typedef struct {
    const char *out_dir;          /* DATA_DIR (created if missing) */
    char *const *inputs;          /* files or folders */
    int n_inputs;
    int vocab;                    /* regular tokens, 256..65536 */
    const char *val_path;         /* validation file, or NULL to hold out val_share */
    double val_share;             /* 0..PREPARE_MAX_VAL_SHARE */
    double tok_sample_mb;         /* > 0 */
    int threads;                  /* 0: OpenMP's default */
    int force;                    /* rebuild even if meta.json matches */
    /* progress lines (no newline), e.g. "scan: 120.5 MB read (45.1 MB/s)"; may be NULL */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
} prepare_options;

/* Fill the defaults (vocab 4096, val_share 0.005, tok_sample_mb 40, threads 0). */
void prepare_defaults(prepare_options *o);

/* One sentence describing the tokenizer sample rule (for --help and meta.json). */
const char *prepare_sample_rule(void);

/* Run the pipeline. On success returns 0, sets *reused (1 if the folder was
 * already up to date) and appends meta.json's object (one line, no newline)
 * to meta. Errors: "x.txt: cannot open: No such file or directory", "inputs:
 * no documents", "vocab 70000: must be from 256 to 65536" (code 2 for bad
 * option values), ... On failure meta.json does not exist in out_dir (any
 * old one is removed before new outputs are written). */
int prepare_run(const prepare_options *o, strbuf *meta, int *reused, tempo_error *err);

#endif
