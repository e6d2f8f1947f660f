/* gguf_format.h - the constants of the GGUF file format (version 3) that
 * tempo writes (gguf_write.c) and reads (gguf_read.c):
 *
 *   "GGUF" u32 version u64 n_tensors u64 n_kv
 *   n_kv x   (string key, u32 value type, value)
 *   n_tensors x (string name, u32 n_dims, u64 ne[n_dims] (innermost first),
 *                u32 ggml type, u64 offset from the data section)
 *   padding to general.alignment (32), then the tensor data, each tensor
 *   starting at an aligned offset.
 *
 * A string is u64 length + bytes (no NUL); an array is u32 element type, u64
 * count, elements. All numbers little-endian. A row-major tempo matrix
 * [rows, cols] is the GGUF tensor ne = {cols, rows}. */
#ifndef TEMPO_EXPORT_GGUF_FORMAT_H
#define TEMPO_EXPORT_GGUF_FORMAT_H

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3
#define GGUF_ALIGNMENT 32

enum {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12, GGUF_TYPE_COUNT = 13
};

/* ggml tensor types tempo uses */
enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q8_0 = 8 };

/* general.file_type values */
enum { GGUF_FILE_ALL_F32 = 0, GGUF_FILE_MOSTLY_F16 = 1, GGUF_FILE_MOSTLY_Q8_0 = 7 };

/* tokenizer.ggml.token_type values */
enum { GGUF_TOKEN_NORMAL = 1, GGUF_TOKEN_CONTROL = 3 };

#endif
