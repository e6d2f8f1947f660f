/* submission.c - walking, hashing and copying a submission folder (see
 * submission.h). */
#include "judge/submission.h"
#include "core/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/sha256.h"

typedef struct {
    char *rel;      /* path relative to the root */
    int is_dir;
    mode_t mode;
    uint64_t size;
} entry;

typedef struct {
    entry *items;
    size_t n, cap;
    uint64_t bytes;
    size_t files;
    int no_limits;
} entry_list;

static void entries_free(entry_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].rel);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int entries_push(entry_list *l, const char *rel, int is_dir, mode_t mode, uint64_t size, tempo_error *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        entry *p = realloc(l->items, cap * sizeof *p);
        if (!p)
            return tempo_fail(err, "submission: out of memory");
        l->items = p;
        l->cap = cap;
    }
    char *r = strdup(rel);
    if (!r)
        return tempo_fail(err, "submission: out of memory");
    l->items[l->n++] = (entry){r, is_dir, mode, size};
    return 0;
}

static int walk(const char *root, const char *rel, entry_list *l, int depth, tempo_error *err)
{
    char path[PATH_MAX];
    text_fmt(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    if (depth > 32)
        return tempo_fail(err, "%s: folders nested too deeply", *rel ? rel : root);
    DIR *d = opendir(path);
    if (!d)
        return tempo_fail(err, "%s: cannot read folder: %s", *rel ? rel : root, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[PATH_MAX], full[PATH_MAX];
        if (text_fmt(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= (int)sizeof sub ||
            text_fmt(full, sizeof full, "%s/%s", root, sub) >= (int)sizeof full) {
            rc = tempo_fail(err, "%s: path too long", sub);
            break;
        }
        struct stat st;
        if (lstat(full, &st) != 0) {
            rc = tempo_fail(err, "%s: %s", sub, strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            rc = tempo_fail(err, "%s: symlinks are not allowed in a submission (copy the file in)", sub);
        } else if (S_ISDIR(st.st_mode)) {
            rc = entries_push(l, sub, 1, st.st_mode, 0, err);
            if (rc == 0)
                rc = walk(root, sub, l, depth + 1, err);
        } else if (S_ISREG(st.st_mode)) {
            l->files++;
            l->bytes += (uint64_t)st.st_size;
            if (!l->no_limits && l->files > JUDGE_SUBMISSION_MAX_FILES)
                rc = tempo_fail(err, "submission: more than %d files", JUDGE_SUBMISSION_MAX_FILES);
            else if (!l->no_limits && l->bytes > JUDGE_SUBMISSION_MAX_BYTES)
                rc = tempo_fail(err, "submission: more than %llu bytes",
                                (unsigned long long)JUDGE_SUBMISSION_MAX_BYTES);
            else
                rc = entries_push(l, sub, 0, st.st_mode, (uint64_t)st.st_size, err);
        } else {
            rc = tempo_fail(err, "%s: not a regular file or folder (devices, fifos and sockets are not allowed)", sub);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->rel, ((const entry *)b)->rel);
}

static int list_tree(const char *dir, entry_list *l, int no_limits, tempo_error *err)
{
    memset(l, 0, sizeof *l);
    l->no_limits = no_limits;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tempo_fail(err, "%s: not a folder", dir);
    if (walk(dir, "", l, 0, err)) {
        entries_free(l);
        return -1;
    }
    qsort(l->items, l->n, sizeof *l->items, cmp_entry);
    return 0;
}

int judge_submission_hash(const char *dir, char hex[65], uint64_t *n_files, uint64_t *n_bytes, tempo_error *err)
{
    entry_list l;
    if (list_tree(dir, &l, 0, err))
        return -1;
    sha256_ctx c;
    sha256_init(&c);
    char *buf = malloc(1 << 20);
    int rc = buf ? 0 : tempo_fail(err, "submission: out of memory");
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const entry *e = &l.items[i];
        if (e->is_dir)
            continue;
        char head[64];
        int hn = text_fmt(head, sizeof head, "%llu", (unsigned long long)e->size);
        sha256_update(&c, e->rel, strlen(e->rel) + 1);
        sha256_update(&c, head, (size_t)hn + 1);
        char full[PATH_MAX];
        text_fmt(full, sizeof full, "%s/%s", dir, e->rel);
        int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rc = tempo_fail(err, "%s: cannot open: %s", e->rel, strerror(errno));
            break;
        }
        uint64_t got = 0;
        ssize_t n;
        while ((n = read(fd, buf, 1 << 20)) > 0) {
            sha256_update(&c, buf, (size_t)n);
            got += (uint64_t)n;
        }
        close(fd);
        if (n < 0 || got != e->size)
            rc = tempo_fail(err, "%s: changed while being read", e->rel);
    }
    if (rc == 0) {
        uint8_t digest[32];
        sha256_final(&c, digest);
        sha256_hex(digest, hex);
        if (n_files)
            *n_files = l.files;
        if (n_bytes)
            *n_bytes = l.bytes;
    }
    free(buf);
    entries_free(&l);
    return rc;
}

static int copy_fd(int in, int out, const char *what, tempo_error *err)
{
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return tempo_fail(err, "%s: read failed: %s", what, strerror(errno));
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return tempo_fail(err, "%s: write failed: %s", what, strerror(errno));
            off += w;
        }
    }
    return 0;
}

static int copy_file(const char *src, const char *dst, int sync, tempo_error *err)
{
    int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return tempo_fail(err, "%s: cannot open: %s", src, strerror(errno));
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(in);
        return tempo_fail(err, "%s: not a regular file", src);
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return tempo_fail(err, "%s: cannot write: %s", dst, strerror(e));
    }
    int rc = copy_fd(in, out, src, err);
    if (rc == 0 && sync && fsync(out) != 0)
        rc = tempo_fail(err, "%s: fsync failed: %s", dst, strerror(errno));
    close(in);
    if (close(out) != 0 && rc == 0)
        rc = tempo_fail(err, "%s: write failed: %s", dst, strerror(errno));
    return rc;
}

int judge_copy_file(const char *src, const char *dst, tempo_error *err)
{
    return copy_file(src, dst, 1, err);
}

int judge_submission_copy(const char *dir, const char *dest, tempo_error *err)
{
    char real_src[PATH_MAX], real_parent[PATH_MAX], parent[PATH_MAX];
    if (!realpath(dir, real_src))
        return tempo_fail(err, "%s: %s", dir, strerror(errno));
    if (path_exists(dest))
        return tempo_fail(err, "%s: already exists", dest);
    /* dest's parent must exist; refuse to copy a folder into itself */
    text_fmt(parent, sizeof parent, "%s", dest);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    else
        text_fmt(parent, sizeof parent, ".");
    if (!realpath(*parent ? parent : "/", real_parent))
        return tempo_fail(err, "%s: %s", parent, strerror(errno));
    size_t ls = strlen(real_src);
    if (!strncmp(real_parent, real_src, ls) && (real_parent[ls] == '/' || real_parent[ls] == '\0'))
        return tempo_fail(err, "%s: the run folder lies inside the submission folder", dest);
    entry_list l;
    if (list_tree(dir, &l, 0, err))
        return -1;
    int rc = 0;
    if (mkdir(dest, 0755) != 0)
        rc = tempo_fail(err, "%s: cannot create folder: %s", dest, strerror(errno));
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const entry *e = &l.items[i];
        char from[PATH_MAX], to[PATH_MAX];
        text_fmt(from, sizeof from, "%s/%s", dir, e->rel);
        if (text_fmt(to, sizeof to, "%s/%s", dest, e->rel) >= (int)sizeof to) {
            rc = tempo_fail(err, "%s: path too long", to);
            break;
        }
        if (e->is_dir) {
            if (mkdir(to, 0755) != 0)
                rc = tempo_fail(err, "%s: cannot create folder: %s", to, strerror(errno));
            continue;
        }
        rc = copy_file(from, to, 0, err);
        if (rc == 0)
            chmod(to, e->mode & 0777);
    }
    entries_free(&l);
    return rc;
}

int judge_tree_files(const char *dir, char ***rel, size_t *n, tempo_error *err)
{
    *rel = NULL;
    *n = 0;
    entry_list l;
    if (list_tree(dir, &l, 1, err))
        return -1;
    char **out = malloc((l.files ? l.files : 1) * sizeof *out);
    if (!out) {
        entries_free(&l);
        return tempo_fail(err, "%s: out of memory", dir);
    }
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++)
        if (!l.items[i].is_dir) {
            out[k++] = l.items[i].rel; /* ownership moves to out */
            l.items[i].rel = NULL;
        }
    entries_free(&l);
    *rel = out;
    *n = k;
    return 0;
}

void judge_tree_free(char **rel, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rel[i]);
    free(rel);
}
