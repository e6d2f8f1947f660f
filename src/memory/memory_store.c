/* memory_store.c - the content-addressed store of count memories (see
 * memory_store.h). */
#include "memory/memory_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/sha256.h"
#include "memory/memory_file.h"

/* A name of 64 lower-case hex digits and `ext`. */
static int hex_name(const char *name, const char *ext)
{
    size_t n = strlen(name);
    if (n != 64 + strlen(ext) || strcmp(name + 64, ext))
        return 0;
    for (int i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

/* An entry's name: 64 lower-case hex digits and ".bin". */
static int entry_name(const char *name)
{
    return hex_name(name, ".bin");
}

/* An entry's stamp, "<hex>.verified" beside "<hex>.bin": the entry file's device, inode, size
 * and modification time when every byte of it was last found to match its checksum (or was
 * written from the memory by the run that added it). A share whose entry still has them does
 * not read its gigabytes again beside the training: the first minute of a 2-minute run on the
 * corpus lost a fifth of its speed to that read. An edit in place changes the time, a new file
 * the inode, and every load of a memory (memory_file_load) checks every byte anyway. */
#define STAMP_EXT ".verified"

static int stamp_path(const char *entry, char *out, size_t n)
{
    size_t len = strlen(entry);
    return len > 4 && !strcmp(entry + len - 4, ".bin") &&
           snprintf(out, n, "%.*s%s", (int)(len - 4), entry, STAMP_EXT) < (int)n;
}

static int stamp_text(const char *entry, char *out, size_t n)
{
    struct stat st;
    if (lstat(entry, &st) || !S_ISREG(st.st_mode))
        return -1;
    snprintf(out, n, "%llu %llu %llu %lld %ld\n", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    return 0;
}

/* Best effort: a stamp that cannot be written only costs the next share a full read. */
static void stamp_write(const char *entry)
{
    char path[1400], text[128];
    tempo_error e;
    if (stamp_path(entry, path, sizeof path) && !stamp_text(entry, text, sizeof text))
        file_write_atomic(path, text, strlen(text), &e);
}

static int stamp_matches(const char *entry)
{
    char path[1400], want[128], *got = NULL;
    size_t len = 0;
    tempo_error e;
    if (!stamp_path(entry, path, sizeof path) || stamp_text(entry, want, sizeof want) ||
        file_read_all(path, &got, &len, sizeof want, &e))
        return 0;
    int same = len == strlen(want) && !memcmp(got, want, len);
    free(got);
    return same;
}

/* fsync a folder so a rename or unlink in it survives a crash (best effort). */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static void dir_of(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = 0;
    else
        *slash = 0;
}

/* Put a hard link to `from` at `to`, atomically (a link at to.tmp.<pid>,
 * renamed over `to`): `to` is the old file or the new one, never missing
 * or torn. A `to` that is already `from` is left as it is: rename() of two
 * links to one file does nothing and would leave the temporary link behind
 * (a run folder trained again kept a memory.bin.tmp.<pid> that way). 0, or
 * -1 with errno set. */
static int link_over(const char *from, const char *to)
{
    struct stat sf, st;
    if (!stat(from, &sf) && !lstat(to, &st) && sf.st_dev == st.st_dev && sf.st_ino == st.st_ino)
        return 0;
    char tmp[1300];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", to, (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp);
    if (link(from, tmp))
        return -1;
    if (rename(tmp, to)) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    unlink(tmp); /* still there only when `to` became `from` meanwhile (rename did nothing) */
    char dir[1300];
    dir_of(to, dir, sizeof dir);
    sync_dir(dir);
    return 0;
}

/* 1 when path holds this identity's memory: its header (which holds the
 * tables' checksum) names it, and every byte after the header matches that
 * checksum, as read now or as its stamp says. */
static int entry_valid(const char *path, const uint8_t id[32])
{
    tempo_error e;
    uint8_t got[32];
    if (memory_file_identity(path, got, &e) || memcmp(got, id, 32))
        return 0;
    if (stamp_matches(path))
        return 1;
    if (memory_file_verify(path, &e))
        return 0;
    stamp_write(path);
    return 1;
}

int memory_store_prune(const char *store_dir)
{
    atomic_remove_stale(store_dir);   /* links of dead processes' unfinished shares */
    DIR *d = opendir(store_dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        if (!entry_name(e->d_name) || !path_join(path, sizeof path, store_dir, e->d_name))
            continue;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && unlink(path) == 0)
            removed++;
    }
    rewinddir(d);   /* the stamps of entries that are gone */
    while ((e = readdir(d)) != NULL) {
        char path[4096], entry[4096];
        if (!hex_name(e->d_name, STAMP_EXT) || !path_join(path, sizeof path, store_dir, e->d_name) ||
            snprintf(entry, sizeof entry, "%.*s.bin", (int)(strlen(path) - strlen(STAMP_EXT)), path) >=
                (int)sizeof entry)
            continue;
        if (!path_exists(entry))
            unlink(path);
    }
    closedir(d);
    if (removed)
        sync_dir(store_dir);
    return removed;
}

/* The store's file for identity id: STORE/<hex>.bin. */
static int entry_path(const char *store_dir, const uint8_t id[32], char *out, size_t n, tempo_error *err)
{
    char hex[65], name[80];
    sha256_hex(id, hex);
    snprintf(name, sizeof name, "%s.bin", hex);
    if (!path_join(out, n, store_dir, name))
        return tempo_fail(err, "%s: path too long", store_dir);
    return 0;
}

/* Make run_file a link to r->entry when that is a valid copy of identity id (entry_valid), unless
 * the caller found it damaged already (known_bad). 1 when linked (r->reused, r->bytes, the store
 * pruned); 0 when there is no valid copy (*bad: a damaged one is there) or another process pruned
 * it meanwhile; -1 with err when the link failed (run_file untouched). */
static int link_to_entry(const char *store_dir, const uint8_t id[32], const char *run_file, int known_bad,
                         memory_store_result *r, int *bad, tempo_error *err)
{
    struct stat st;
    *bad = 0;
    if (stat(r->entry, &st))
        return 0;
    if (known_bad || !S_ISREG(st.st_mode) || !entry_valid(r->entry, id)) {
        *bad = 1;
        return 0;
    }
    if (link_over(r->entry, run_file)) {
        if (errno == ENOENT)   /* pruned meanwhile by another process: the run's own copy goes in */
            return 0;
        return tempo_fail(err, "%s: cannot link it to %s: %s", run_file, r->entry,
                          errno == EXDEV ? "the store is on another file system" : strerror(errno));
    }
    r->bytes = (uint64_t)st.st_size;
    r->reused = 1;
    r->pruned = memory_store_prune(store_dir);
    return 1;
}

int memory_store_link_existing(const char *store_dir, const uint8_t id[32], const char *run_file,
                               memory_store_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    if (entry_path(store_dir, id, r->entry, sizeof r->entry, err))
        return -1;
    return link_to_entry(store_dir, id, run_file, 0, r, &r->found_bad, err);
}

int memory_store_share(const char *store_dir, const char *run_file, int known_bad, memory_store_result *r,
                       tempo_error *err)
{
    memset(r, 0, sizeof *r);
    uint8_t id[32];
    struct stat run_st, entry_st;
    if (stat(run_file, &run_st))
        return tempo_fail(err, "%s: %s", run_file, strerror(errno));
    r->bytes = (uint64_t)run_st.st_size;
    if (memory_file_identity(run_file, id, err))
        return -1;
    if (dir_create(store_dir, err) || entry_path(store_dir, id, r->entry, sizeof r->entry, err))
        return -1;
    int have = stat(r->entry, &entry_st) == 0;
    if (have && entry_st.st_dev == run_st.st_dev && entry_st.st_ino == run_st.st_ino) {
        r->pruned = memory_store_prune(store_dir);   /* shared already */
        return 0;
    }
    /* the store's valid copy replaces the run's; else (none, a damaged one, or one another process
     * pruned meanwhile) the run's is added */
    int linked = have ? link_to_entry(store_dir, id, run_file, known_bad, r, &r->replaced_bad, err) : 0;
    if (linked)
        return linked < 0 ? -1 : 0;
    if (link_over(run_file, r->entry))
        return tempo_fail(err, "%s: cannot add it to the store (%s): %s", run_file, store_dir,
                          errno == EXDEV ? "the store is on another file system" : strerror(errno));
    chmod(r->entry, 0444);   /* the runs' links share these bytes: replaced by a rename, never written in place */
    stamp_write(r->entry);   /* written from the memory a moment ago */
    r->pruned = memory_store_prune(store_dir);
    return 0;
}
