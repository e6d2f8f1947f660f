/* fileio.h - file helpers with tempo_error reporting: atomic writes (temp
 * file, fsync, rename, fsync of the folder) so a crash never leaves a torn or
 * half-written file under the final name; whole-file reads; folder creation.
 * Nothing format-specific lives here. */
#ifndef TEMPO_FILEIO_H
#define TEMPO_FILEIO_H

#include <stdio.h>
#include <stddef.h>
#include "core/error.h"

typedef struct {
    FILE *f;              /* write here (NULL in staged mode) */
    char path[1024];      /* final name */
    char tmp_path[1040];  /* path + ".tmp.<pid>" */
    int failed;           /* set by atomic_write on a short write */
    /* staged mode (atomic_open_direct): bytes gather in an aligned buffer and
     * go out in whole blocks, with O_DIRECT where the file system takes it */
    int fd;               /* -1 unless staged */
    int direct;           /* O_DIRECT in effect */
    unsigned char *stage; /* ATOMIC_STAGE_BYTES, aligned */
    size_t staged;        /* bytes waiting in stage */
    unsigned long long written; /* bytes handed to the file so far */
} atomic_file;

/* The staging buffer of atomic_open_direct (a multiple of the 4096-byte
 * alignment O_DIRECT needs). */
#define ATOMIC_STAGE_BYTES ((size_t)8 << 20)

/* Open PATH.tmp.<pid> for writing. */
int atomic_open(atomic_file *af, const char *path, tempo_error *err);
/* The same for large files written once and not read back soon (a count
 * memory of gigabytes): writes bypass the page cache (O_DIRECT), so the
 * kernel neither copies the bytes nor allocates and later writes back a
 * page for each 4 KiB, which otherwise costs a core for seconds per
 * gigabyte. Falls back to ordinary writes where O_DIRECT is refused (tmpfs).
 * af->f is NULL: use atomic_write only. */
int atomic_open_direct(atomic_file *af, const char *path, tempo_error *err);
/* Write n bytes; on failure (e.g. disk full) sets err naming the final path. */
int atomic_write(atomic_file *af, const void *data, size_t n, tempo_error *err);
/* Flush, fsync, close, rename over the final name, fsync the folder.
 * On any failure the temp file is removed and the old file (if any) stays. */
int atomic_commit(atomic_file *af, tempo_error *err);
/* Close and remove the temp file; the final name is untouched. */
void atomic_abort(atomic_file *af);

/* Remove from folder dir the temporaries that atomic_open made
 * ("NAME.tmp.<pid>") for processes that are no longer alive: a process killed
 * mid-write never reaches atomic_commit or atomic_abort, and its pid is in
 * the name. Temporaries of live processes (a concurrent writer) and of this
 * one stay. Returns how many were removed (0 when dir cannot be read). */
int atomic_remove_stale(const char *dir);

/* Write a whole buffer atomically to path. */
int file_write_atomic(const char *path, const void *data, size_t n, tempo_error *err);

/* Read a whole file into a malloc'd buffer with a trailing NUL (not counted in
 * *len). max_len > 0 refuses larger files. */
int file_read_all(const char *path, char **data, size_t *len, size_t max_len, tempo_error *err);

/* The same for an open stream read to its end (stdin, a pipe); `what` names
 * it in errors. */
int file_read_stream(FILE *f, const char *what, char **data, size_t *len, tempo_error *err);

/* mkdir -p; error names the folder. */
int dir_create(const char *path, tempo_error *err);

/* rm -rf path, without following symbolic links: a link inside the tree is
 * removed, never what it points to, and path itself, when a link, is removed
 * as a link. A path that does not exist is fine. Error names the entry that
 * could not be removed. */
int dir_remove_tree(const char *path, tempo_error *err);

/* 1 if path exists (any kind), 0 otherwise. */
int path_exists(const char *path);

/* Join folder and name into out (size n); returns out. */
char *path_join(char *out, size_t n, const char *dir, const char *name);

#endif
