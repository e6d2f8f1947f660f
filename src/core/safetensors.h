/* safetensors.h - reading and writing the safetensors format: an 8-byte
 * little-endian header length, a JSON header mapping tensor names to
 * {"dtype","shape","data_offsets"} plus an optional "__metadata__" object of
 * string values, then raw little-endian tensor bytes. tempo writes F32 (and
 * F16 for exports) and reads F32 only.
 * Writes are atomic (core/fileio.h); reads validate every offset so a
 * truncated or foreign file is an error naming the file, never a crash.
 * Nothing here knows about models or optimizers.
 *
 * Checksum: every file written carries "__metadata__" "checksum":
 * "sha256:<64 lower-case hex>", the SHA-256 of, in order:
 *   - the text "tempo-safetensors-checksum-1\n";
 *   - every other metadata key and value (as decoded from the JSON), in the
 *     header's order, each followed by a NUL byte; then "\n";
 *   - for every tensor, in the header's order: its name, its dtype, its
 *     shape (decimal dimensions joined by ",") and its data_offsets
 *     ("begin,end"), each followed by a NUL byte; then "\n";
 *   - the whole data block (every byte after the header).
 * So a flipped byte in the data, or any change to what the header says (a
 * number in the run state, the config, a shape), no longer matches, while
 * the header's whitespace and key escapes do not count. safetensors_open
 * checks it when the file has one; a file without it (written before tempo
 * wrote checksums, or by another tool) opens with checksummed = 0. */
#ifndef TEMPO_SAFETENSORS_H
#define TEMPO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define ST_MAX_DIMS 4
#define ST_CHECKSUM_KEY "checksum"   /* the metadata key of the checksum above */

typedef struct {
    const char *name;
    const float *data;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
} st_write_tensor;

typedef struct {
    const char *key;
    const char *value;   /* any bytes valid as a JSON string after escaping */
} st_meta;

/* Write tensors (in the given order) and metadata to path atomically, with
 * the checksum as the last metadata entry (a "checksum" entry in meta, e.g.
 * copied from a file read, is left out: it would no longer match). */
int safetensors_write(const char *path, const st_write_tensor *tensors, int n_tensors,
                      const st_meta *meta, int n_meta, tempo_error *err);
/* The same, where f16 (NULL, or one pointer per tensor) gives tensors to
 * store as F16 instead: tensor i is written from f16[i] when that is not
 * NULL (its data is then unused). */
int safetensors_write_f16(const char *path, const st_write_tensor *tensors, const uint16_t *const *f16,
                          int n_tensors, const st_meta *meta, int n_meta, tempo_error *err);

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t numel;
    const float *data;   /* points into the loaded file; aligned copy not guaranteed */
} st_tensor;

typedef struct {
    char *file;          /* the whole file */
    size_t file_len;
    st_tensor *tensors;
    int n_tensors;
    char **meta_keys, **meta_values;
    int n_meta;
    int checksummed;     /* 1: the file carries a checksum (and it matched); 0: none */
    char path[1024];
} safetensors_file;

/* Load and validate path. Errors: "<path>: not a safetensors file (...)",
 * "<path>: truncated (...)", "<path>: tensor X: unsupported dtype BF16",
 * "<path>: checksum mismatch (...)" (a damaged file: never returned open). */
int safetensors_open(safetensors_file *sf, const char *path, tempo_error *err);
void safetensors_close(safetensors_file *sf);
const st_tensor *safetensors_find(const safetensors_file *sf, const char *name);
/* The metadata value for key, or NULL. */
const char *safetensors_meta(const safetensors_file *sf, const char *key);

#endif
