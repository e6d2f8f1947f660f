/* self.c - the running tempo binary: its path and the git commit of the
 * source tree it was built from (see self.h). */
#include "proc/self.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/text.h"
#include "proc/runner.h"

int proc_self_exe(char *out, size_t n, tempo_error *err)
{
    ssize_t k = readlink("/proc/self/exe", out, n - 1);
    if (k <= 0 || (size_t)k >= n - 1)
        return tempo_fail(err, "/proc/self/exe: cannot find the tempo binary: %s", strerror(errno));
    out[k] = '\0';
    return 0;
}

/* Run git with args in folder dir; the last stdout line into out. */
static int git_line(const char *dir, char *const *args, int n_args, char *out, size_t n, int *nonempty)
{
    char *argv[12] = {"git", "-C", (char *)dir};
    int k = 3;
    for (int i = 0; i < n_args && k < 11; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    proc_spec s = {0};
    s.argv = argv;
    s.log_tail_bytes = 4096;
    s.budget_s = 10;
    s.grace_s = 1;
    proc_result r;
    tempo_error e;
    if (proc_run(&s, &r, &e))
        return -1;
    int ok = !r.exec_errno && r.exited && r.exit_code == 0;
    if (ok && out)
        proc_caplog_last_line(&r.out, out, n);
    if (ok && nonempty)
        *nonempty = r.out.total > 0;
    proc_free(&r);
    return ok ? 0 : -1;
}

void proc_git_commit(const char *tempo_bin, char *out, size_t n)
{
    text_fmt(out, n, "unknown");
    char bin[PATH_MAX], dir[PATH_MAX];
    if (!realpath(tempo_bin, bin))
        return;
    text_fmt(dir, sizeof dir, "%s", dirname(bin)); /* build/ */
    char sha[128];
    char *rev[] = {"rev-parse", "HEAD"};
    if (git_line(dir, rev, 2, sha, sizeof sha, NULL) != 0 || strlen(sha) < 7)
        return;
    for (const char *p = sha; *p; p++)
        if (!isxdigit((unsigned char)*p))
            return;
    int dirty = 0;
    char *status[] = {"status", "--porcelain", "--untracked-files=no"};
    git_line(dir, status, 3, NULL, 0, &dirty);
    text_fmt(out, n, "%s%s", sha, dirty ? "-dirty" : "");
}
