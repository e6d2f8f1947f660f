/* disk_usage.h - the bytes a set of folders holds on disk (allocated blocks,
 * so a sparse file counts what it really takes), walked without following
 * symbolic links or crossing into other mounts. The judge polls it over a
 * sandboxed run's writable folders to enforce --disk. Nothing else lives
 * here. */
#ifndef TEMPO_PROC_DISK_USAGE_H
#define TEMPO_PROC_DISK_USAGE_H

#include <stdint.h>

/* Folders nested deeper than this are not walked: the walk reports it and
 * the judge treats it as over the limit. */
#define PROC_DISK_MAX_DEPTH 256

typedef struct {
    uint64_t bytes;    /* allocated bytes of every entry (a hard link counts each time) */
    uint64_t entries;  /* files, folders and others */
    int too_deep;      /* a folder was nested deeper than PROC_DISK_MAX_DEPTH */
} proc_disk_usage;

/* Sum the n folders (a missing one counts 0) into *u. */
void proc_disk_usage_get(const char *const *dirs, int n, proc_disk_usage *u);

#endif
