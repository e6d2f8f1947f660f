/* data_path.h - where tempo finds the files it ships beside its binary:
 * presets, chip profiles and the planner's fits under configs/, the PyTorch
 * reference scripts under scripts/, llama.cpp's setup under tools/. In a
 * build tree the binary is <root>/build/tempo and they are <root>/TOP; after
 * `make install` it is <prefix>/bin/tempo and they are
 * <prefix>/share/tempo/TOP. configs/ is also looked for in $TEMPO_CONFIGS
 * first, and every TOP in ./TOP last (a source tree's files, for a binary
 * with none beside it). */
#ifndef TEMPO_CORE_DATA_PATH_H
#define TEMPO_CORE_DATA_PATH_H

#include <stddef.h>

/* The folder TOP ("configs", "scripts", "tools") beside the binary exe (a
 * path; NULL = the running one): <exe dir>/../TOP or <exe dir>/../share/tempo/TOP,
 * the first that exists, into out (an absolute path when exe is). 1 when
 * found, 0 when neither exists. */
int data_dir_beside(const char *exe, const char *top, char *out, size_t n);

/* TOP/rel (a file or a folder): in $TEMPO_CONFIGS (top "configs" only),
 * beside the running binary (data_dir_beside), or ./TOP/rel. 1 when found
 * (out is that path); 0 when not (out is ./TOP/rel, for a message). */
int data_path_find(const char *top, const char *rel, char *out, size_t n);

#endif
