/* data_path.c - where tempo finds the files it ships (see data_path.h). */
#include "core/data_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int data_dir_beside(const char *exe, const char *top, char *out, size_t n)
{
    char self[4096];
    if (!exe) {
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        if (l <= 0)
            return 0;
        self[l] = '\0';
        exe = self;
    }
    const char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    int dir_len = (int)(slash - exe);
    const char *layouts[] = {"../", "../share/tempo/"};
    for (int i = 0; i < 2; i++) {
        int k = snprintf(out, n, "%.*s/%s%s", dir_len, exe, layouts[i], top);
        if (k > 0 && (size_t)k < n && is_dir(out))
            return 1;
    }
    return 0;
}

int data_path_find(const char *top, const char *rel, char *out, size_t n)
{
    char dir[4096];
    const char *env = getenv("TEMPO_CONFIGS");
    if (!strcmp(top, "configs") && env && *env) {
        int k = snprintf(out, n, "%s/%s", env, rel);
        if (k > 0 && (size_t)k < n && path_exists(out))
            return 1;
    }
    if (data_dir_beside(NULL, top, dir, sizeof dir)) {
        int k = snprintf(out, n, "%s/%s", dir, rel);
        if (k > 0 && (size_t)k < n && path_exists(out))
            return 1;
    }
    int k = snprintf(out, n, "%s/%s", top, rel);
    return k > 0 && (size_t)k < n && path_exists(out);
}
