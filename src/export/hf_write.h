/* hf_write.h - writes a tempo model as a Hugging Face model folder that
 * transformers loads with AutoModelForCausalLM: config.json
 * (LlamaForCausalLM or Qwen3ForCausalLM, export_map.h), model.safetensors
 * (the standard tensor names, F32 or F16, metadata format "pt" plus tempo's
 * provenance), tokenizer.json (byte-level BPE: vocab, merges, tempo's
 * pre-split rule as one Split regex, the separator as an added special
 * token) and tokenizer_config.json. The folder is built under a temporary
 * name beside OUT and renamed into place, so a failure leaves nothing at
 * OUT; an existing OUT is refused. Only the transformer is written. */
#ifndef TEMPO_EXPORT_HF_WRITE_H
#define TEMPO_EXPORT_HF_WRITE_H

#include "core/error.h"
#include "data/tokenizer.h"
#include "export/gguf_write.h"
#include "model/model.h"

/* The pre-split rule of data/pretokenize.h as a regular expression
 * (Oniguruma syntax, as the tokenizers library uses). */
extern const char *const HF_PRESPLIT_REGEX;

/* dtype: EXPORT_F32 or EXPORT_F16. */
int hf_write_model(const char *out_dir, model *m, const tokenizer *tok, export_dtype dtype,
                   const export_provenance *prov, tempo_error *err);

#endif
