/* gguf_write.h - writes a tempo model as a GGUF file that llama.cpp loads:
 * the architecture of export_map.h (llama or qwen3), its hyper-parameters,
 * the tokenizer (tokenizer.ggml.*: "gpt2" byte-level BPE tokens, merges,
 * token types, the separator as BOS and EOS), the tensors in F32, F16 or
 * Q8_0 (norms stay F32; a matrix whose rows are not a multiple of 32 values
 * falls back from Q8_0 to F16), and tempo's provenance (tempo.config,
 * tempo.data_id, tempo.commit). The file is written atomically: on any error
 * nothing is left at the path. Only the transformer is written; a count
 * memory or mixer of the run is not part of any llama.cpp architecture. */
#ifndef TEMPO_EXPORT_GGUF_WRITE_H
#define TEMPO_EXPORT_GGUF_WRITE_H

#include "core/error.h"
#include "data/tokenizer.h"
#include "model/model.h"

typedef enum { EXPORT_F32 = 0, EXPORT_F16 = 1, EXPORT_Q8_0 = 2 } export_dtype;

/* Where the model came from, recorded in the file (NULL: "unknown"). */
typedef struct {
    const char *config_json; /* the run config (checkpoint metadata "config") */
    const char *data_id;     /* the training data's id */
    const char *commit;      /* the git commit tempo was built from */
} export_provenance;

/* "f32", "f16", "q8_0" -> dtype; -1 for anything else. */
int export_dtype_parse(const char *s);
const char *export_dtype_name(export_dtype d);

/* Write m (with tokenizer tok, whose vocabulary size must be the model's)
 * to path. Errors: the config has no architecture (export_map.h), the
 * vocabulary has no merge list, I/O (the message names path). */
int gguf_write_model(const char *path, model *m, const tokenizer *tok, export_dtype dtype,
                     const export_provenance *prov, tempo_error *err);

#endif
