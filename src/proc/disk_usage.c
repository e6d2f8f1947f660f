/* disk_usage.c - see disk_usage.h. Each folder is walked through a stack
 * of open directory streams (openat with O_NOFOLLOW, so no path grows past
 * PATH_MAX and no link is followed); entries on another device are counted
 * but not entered. */
#include "proc/disk_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void walk(int dir_fd, dev_t dev, proc_disk_usage *u)
{
    DIR *stack[PROC_DISK_MAX_DEPTH];
    int depth = 0;
    stack[depth] = fdopendir(dir_fd);
    if (!stack[depth]) {
        close(dir_fd);
        return;
    }
    depth++;
    while (depth > 0) {
        DIR *d = stack[depth - 1];
        struct dirent *e = readdir(d);
        if (!e) {
            closedir(d);
            depth--;
            continue;
        }
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* removed meanwhile */
        u->entries++;
        u->bytes += (uint64_t)st.st_blocks * 512u;
        if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
            continue;
        if (depth == PROC_DISK_MAX_DEPTH) {
            u->too_deep = 1;
            continue;
        }
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        DIR *sub = fdopendir(fd);
        if (!sub) {
            close(fd);
            continue;
        }
        stack[depth++] = sub;
    }
}

void proc_disk_usage_get(const char *const *dirs, int n, proc_disk_usage *u)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < n; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) != 0) {
            close(fd);
            continue;
        }
        u->bytes += (uint64_t)st.st_blocks * 512u;
        walk(fd, st.st_dev, u);
    }
}
