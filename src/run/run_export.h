/* run_export.h - `tempo export`: a run folder (or model.safetensors) -> a GGUF
 * file (gguf_write.h) or a Hugging Face folder (hf_write.h). Loads and checks
 * the model (truncated files and non-finite weights are errors), finds its
 * architecture (export_map.h), and writes atomically. Only the transformer
 * leaves: a run's count memory and mixer (memory.bin, mixer.json) have no
 * counterpart in llama.cpp or transformers, and the summary says whether the
 * run had them. */
#ifndef TEMPO_RUN_EXPORT_H
#define TEMPO_RUN_EXPORT_H

#include "core/error.h"
#include "export/gguf_write.h"

typedef enum { EXPORT_GGUF = 0, EXPORT_HF = 1 } export_format;

typedef struct {
    const char *model_path; /* RUN_DIR or a .safetensors file */
    export_format format;
    export_dtype dtype;     /* Q8_0 only for GGUF */
    const char *out;        /* GGUF file, or HF folder */
    const char *commit;     /* of the exporting tempo, used when the run records none; may be NULL */
} export_options;

typedef struct {
    char arch[16];          /* "llama" / "qwen3" */
    long long params;       /* floats exported */
    long long bytes;        /* bytes written */
    int had_memory;         /* the run folder holds a count memory / mixer that was left out */
} export_summary;

int export_run(const export_options *o, export_summary *s, tempo_error *err);

#endif
