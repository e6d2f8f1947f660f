/* submission.h - a submission folder as files: its fingerprint (sha256 over
 * every file's relative path, size and bytes) and a fresh copy of it for
 * each run. Only regular files and folders are accepted: a symlink (which
 * could point at the validation text), a device or a fifo is an error
 * naming it. Manifest parsing lives in judge/manifest.h. */
#ifndef TEMPO_JUDGE_SUBMISSION_H
#define TEMPO_JUDGE_SUBMISSION_H

#include <stdint.h>

#include "core/error.h"

#define JUDGE_SUBMISSION_MAX_FILES 10000
#define JUDGE_SUBMISSION_MAX_BYTES (1ull << 30)

/* sha256 (hex) over, for each regular file in byte order of its relative
 * path: "<path>\0<size>\0<bytes>". Folders contribute through their files
 * only (an empty folder changes nothing). Fails on a symlink or special
 * file, or beyond JUDGE_SUBMISSION_MAX_FILES / _MAX_BYTES. */
int judge_submission_hash(const char *dir, char hex[65], uint64_t *n_files, uint64_t *n_bytes, tempo_error *err);

/* Copy dir's tree into dest (created; must not exist yet and must not lie
 * inside dir). File modes keep their permission bits. Same checks as above. */
int judge_submission_copy(const char *dir, const char *dest, tempo_error *err);

/* The regular files under dir (recursively), as paths relative to dir in
 * byte order; *rel (n of them) is owned by the caller: free each, then the
 * array (judge_tree_free). Fails on symlinks and special files like the above
 * (no size limits). */
int judge_tree_files(const char *dir, char ***rel, size_t *n, tempo_error *err);
void judge_tree_free(char **rel, size_t n);

/* Copy one regular file (not following a symlink at src) to dst, which is
 * created or truncated with mode 0644; dst is fsync'ed. */
int judge_copy_file(const char *src, const char *dst, tempo_error *err);

#endif
