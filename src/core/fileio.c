/* fileio.c - atomic writes, whole-file reads, folders (see fileio.h). */
#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int atomic_names(atomic_file *af, const char *path, tempo_error *err)
{
    memset(af, 0, sizeof *af);
    af->fd = -1;
    if (strlen(path) >= sizeof af->path)
        return tempo_fail(err, "%s: path too long", path);
    snprintf(af->path, sizeof af->path, "%s", path);
    snprintf(af->tmp_path, sizeof af->tmp_path, "%s.tmp.%d", path, (int)getpid());
    return 0;
}

int atomic_open(atomic_file *af, const char *path, tempo_error *err)
{
    if (atomic_names(af, path, err))
        return -1;
    af->f = fopen(af->tmp_path, "wb");
    if (!af->f)
        return tempo_fail(err, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

#define DIRECT_ALIGN 4096

int atomic_open_direct(atomic_file *af, const char *path, tempo_error *err)
{
    if (atomic_names(af, path, err))
        return -1;
    af->stage = aligned_alloc(DIRECT_ALIGN, ATOMIC_STAGE_BYTES);
    if (!af->stage)
        return atomic_open(af, path, err);   /* no buffer: ordinary writes */
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    af->fd = open(af->tmp_path, flags | O_DIRECT, 0666);
    af->direct = af->fd >= 0;
    if (af->fd < 0 && errno == EINVAL)   /* the file system refuses O_DIRECT */
        af->fd = open(af->tmp_path, flags, 0666);
    if (af->fd < 0) {
        int e = errno;
        free(af->stage);
        af->stage = NULL;
        return tempo_fail(err, "%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

/* Go on with ordinary writes on the same descriptor. 0, or -1 with errno. */
static int drop_direct(atomic_file *af)
{
    int fl = fcntl(af->fd, F_GETFL);
    if (fl == -1 || fcntl(af->fd, F_SETFL, fl & ~O_DIRECT) != 0)
        return -1;
    af->direct = 0;
    return 0;
}

/* Write stage[0, n) at the end of the file; n is a multiple of DIRECT_ALIGN
 * or the file's last piece. A file system that takes O_DIRECT at open but
 * refuses the write (EINVAL) gets the same bytes written the ordinary way. */
static int stage_out(atomic_file *af, size_t n, tempo_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(af->fd, af->stage + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EINVAL && af->direct && drop_direct(af) == 0)
            continue;
        if (w <= 0) {
            af->failed = 1;
            return tempo_fail(err, "%s: write failed: %s", af->path, w < 0 ? strerror(errno) : "no space left");
        }
        done += (size_t)w;
        /* a short write that left the offset unaligned: go on without O_DIRECT */
        if (af->direct && done < n && done % DIRECT_ALIGN && drop_direct(af) != 0) {
            af->failed = 1;
            return tempo_fail(err, "%s: write failed: %s", af->path, strerror(errno));
        }
    }
    af->written += n;
    return 0;
}

int atomic_write(atomic_file *af, const void *data, size_t n, tempo_error *err)
{
    if (af->failed)
        return -1;
    if (af->fd >= 0) {
        const unsigned char *p = data;
        while (n) {
            size_t take = ATOMIC_STAGE_BYTES - af->staged;
            if (take > n)
                take = n;
            memcpy(af->stage + af->staged, p, take);
            af->staged += take;
            p += take;
            n -= take;
            if (af->staged == ATOMIC_STAGE_BYTES) {
                if (stage_out(af, af->staged, err))
                    return -1;
                af->staged = 0;
            }
        }
        return 0;
    }
    if (n && fwrite(data, 1, n, af->f) != n) {
        af->failed = 1;
        return tempo_fail(err, "%s: write failed: %s", af->path, strerror(errno));
    }
    return 0;
}

/* Staged mode's last piece: O_DIRECT writes whole blocks, so the tail goes
 * out padded with zeros and the file is cut back to its length. */
static int stage_finish(atomic_file *af)
{
    unsigned long long length = af->written + af->staged;
    size_t n = af->staged;
    if (af->direct && n % DIRECT_ALIGN) {
        size_t padded = (n + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
        memset(af->stage + n, 0, padded - n);
        n = padded;
    }
    tempo_error ignored;
    if (n && stage_out(af, n, &ignored))
        return -1;
    return ftruncate(af->fd, (off_t)length) != 0 || fsync(af->fd) != 0 ? -1 : 0;
}

static void fsync_dir_of(const char *path)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int atomic_commit(atomic_file *af, tempo_error *err)
{
    if (af->failed) {
        atomic_abort(af);
        return -1;
    }
    int bad, saved;
    if (af->fd >= 0) {
        errno = 0;
        bad = stage_finish(af) != 0;
        saved = errno;
        bad |= close(af->fd) != 0;
        af->fd = -1;
        free(af->stage);
        af->stage = NULL;
    } else {
        bad = fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
        saved = errno;
        bad |= fclose(af->f) != 0;
        af->f = NULL;
    }
    if (!bad && saved == 0)
        saved = errno;
    if (bad) {
        unlink(af->tmp_path);
        return tempo_fail(err, "%s: write failed: %s", af->path, strerror(saved ? saved : EIO));
    }
    if (rename(af->tmp_path, af->path) != 0) {
        int e = errno;
        unlink(af->tmp_path);
        return tempo_fail(err, "%s: cannot rename into place: %s", af->path, strerror(e));
    }
    fsync_dir_of(af->path);
    return 0;
}

void atomic_abort(atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    af->f = NULL;
    if (af->fd >= 0)
        close(af->fd);
    af->fd = -1;
    free(af->stage);
    af->stage = NULL;
    if (af->tmp_path[0])
        unlink(af->tmp_path);
}

/* The pid of an atomic_open temporary's name ("NAME.tmp.<digits>"), or 0. */
static pid_t temp_owner(const char *name)
{
    const char *tag = NULL;
    for (const char *p = strstr(name, ".tmp."); p; p = strstr(p + 1, ".tmp."))
        tag = p;
    if (!tag || tag == name)
        return 0;
    const char *digits = tag + 5;
    long long pid = 0;
    for (const char *d = digits; *d; d++) {
        if (*d < '0' || *d > '9' || d - digits >= 10)
            return 0;
        pid = pid * 10 + (*d - '0');
    }
    return *digits && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

int atomic_remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t pid = temp_owner(e->d_name);
        /* kill(pid, 0): 0 or EPERM when the process exists, ESRCH when it is gone */
        if (pid <= 0 || pid == self || kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[4096];
        struct stat st;
        if (path_join(path, sizeof path, dir, e->d_name) && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int file_write_atomic(const char *path, const void *data, size_t n, tempo_error *err)
{
    atomic_file af;
    if (atomic_open(&af, path, err))
        return -1;
    if (atomic_write(&af, data, n, err)) {
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af, err);
}

int file_read_all(const char *path, char **data, size_t *len, size_t max_len, tempo_error *err)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tempo_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return tempo_fail(err, "%s: not a regular file", path);
    }
    size_t n = (size_t)st.st_size;
    if (max_len && n > max_len) {
        fclose(f);
        return tempo_fail(err, "%s: too large (%zu bytes, limit %zu)", path, n, max_len);
    }
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return tempo_fail(err, "%s: out of memory reading %zu bytes", path, n);
    }
    if (n && fread(buf, 1, n, f) != n) {
        int e = ferror(f) ? errno : 0;
        fclose(f);
        free(buf);
        return tempo_fail(err, "%s: read failed: %s", path, e ? strerror(e) : "file shrank");
    }
    fclose(f);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int file_read_stream(FILE *f, const char *what, char **data, size_t *len, tempo_error *err)
{
    *data = NULL;
    *len = 0;
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            return tempo_fail(err, "%s: out of memory reading %zu bytes", what, n);
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (ferror(f)) {
            free(buf);
            return tempo_fail(err, "%s: read failed: %s", what, strerror(errno));
        }
        if (feof(f))
            break;
        if (n == cap - 1) {
            char *b = realloc(buf, cap * 2);
            if (!b)
                free(buf);
            buf = b;
            cap *= 2;
        }
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

/* Remove name (relative to the open folder at) and, when it is a folder
 * (never a link to one: O_NOFOLLOW), everything under it. 0, or -1 with errno. */
static int remove_at(int at, const char *name, int depth)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(at, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    if (depth > 256) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    /* passes until a pass finds nothing: entries removed while reading a
     * folder may make readdir skip others */
    int rc = 0, found = 1;
    while (rc == 0 && found) {
        found = 0;
        rewinddir(d);
        struct dirent *e;
        while (rc == 0 && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            found = 1;
            rc = remove_at(dirfd(d), e->d_name, depth + 1);
        }
    }
    int saved = errno;
    closedir(d);
    if (rc) {
        errno = saved;
        return -1;
    }
    return unlinkat(at, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

int dir_remove_tree(const char *path, tempo_error *err)
{
    if (remove_at(AT_FDCWD, path, 0))
        return tempo_fail(err, "%s: cannot remove: %s", path, strerror(errno));
    return 0;
}

int dir_create(const char *path, tempo_error *err)
{
    char buf[1024];
    if (strlen(path) >= sizeof buf)
        return tempo_fail(err, "%s: path too long", path);
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return tempo_fail(err, "%s: cannot create folder: %s", buf, strerror(errno));
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                return tempo_fail(err, "%s: exists and is not a folder", buf);
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

int path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *path_join(char *out, size_t n, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    if (dl && dir[dl - 1] == '/')
        snprintf(out, n, "%s%s", dir, name);
    else
        snprintf(out, n, "%s/%s", dir, name);
    return out;
}
