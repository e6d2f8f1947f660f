/* gguf_import.h - a GGUF file of an architecture tempo implements (llama,
 * qwen3; export_map.h) read back as a tempo model, so `tempo eval`,
 * `generate`, `icl` and `bench infer` can score a model exported by tempo or
 * made elsewhere. What is refused, with one line naming the file: another
 * architecture (say which), a tensor type other than F32/F16/Q8_0 (say
 * which), RoPE scaling, a head size other than d_model / n_heads, a missing,
 * misshapen or extra tensor, non-finite weights, and a tokenizer that is not
 * tempo's layout (byte-level "gpt2" BPE whose ids 0..255 are the single
 * bytes, merged tokens in rank order, one control token last, the
 * separator); a context longer than GGUF_IMPORT_MAX_CONTEXT is cut to it. The
 * imported run config has no count memory or cache: the model is the
 * transformer alone. Parsing is gguf_read.h. */
#ifndef TEMPO_RUN_GGUF_IMPORT_H
#define TEMPO_RUN_GGUF_IMPORT_H

#include "core/error.h"
#include "data/tokenizer.h"
#include "export/export_map.h"
#include "export/gguf_read.h"
#include "model/model.h"
#include "run/run_config.h"

#define GGUF_IMPORT_MAX_CONTEXT 8192

/* The steps, each on a parsed file (the fuzz harness runs them on memory). */
int gguf_import_config(const gguf_file *g, run_config *cfg, export_arch *arch, tempo_error *err);
int gguf_import_tokenizer(const gguf_file *g, int vocab_size, tokenizer **tok, tempo_error *err);
/* Fills m (built from the imported config) from the file's tensors. */
int gguf_import_weights(const gguf_file *g, export_arch arch, model *m, tempo_error *err);

/* 1 when path is a GGUF file (starts with the magic). */
int gguf_is_file(const char *path);

/* The whole import of path, as checkpoint_load_model does for a run folder:
 * config, the model for up to max_batch sequences, the tokenizer. */
int gguf_import_model(const char *path, int max_batch, run_config *cfg, model **m, tokenizer **tok,
                      tempo_error *err);

#endif
