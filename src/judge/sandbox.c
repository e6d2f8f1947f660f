/* sandbox.c - see sandbox.h. The bwrap options, in order: namespaces and
 * privileges, the system folders, the handed-over folders, then the root
 * and /dev made read-only, so that nothing but the read-write binds (all
 * of them under the run's folder, where --disk counts) can be written. */
#include "judge/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/runner.h"
#include "core/text.h"

#define MAX_ARGS 160

/* The system folders shown read-only (or as the symlinks they are). */
static const char *const system_dirs[] = {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                          "/sys/devices/system/cpu"};

typedef struct {
    char **v;
    int n;
    char links[sizeof system_dirs / sizeof *system_dirs][PATH_MAX];
} arg_list;

static void add(arg_list *a, const char *s)
{
    if (a->n < MAX_ARGS - 1)
        a->v[a->n++] = (char *)s;
}

static void add3(arg_list *a, const char *opt, const char *x, const char *y)
{
    add(a, opt);
    add(a, x);
    add(a, y);
}

char **judge_sandbox_argv(const judge_sandbox *sb, const judge_sandbox_view *view, char *const *cmd)
{
    /* the symlink targets live after the pointer array, in one allocation */
    size_t head = MAX_ARGS * sizeof(char *);
    char *block = malloc(head + sizeof ((arg_list *)0)->links);
    if (!block)
        return NULL;
    arg_list a = {.v = (char **)block};
    char (*links)[PATH_MAX] = (char (*)[PATH_MAX])(block + head);
    add(&a, sb->bwrap);
    add(&a, "--unshare-all");       /* user, PID, mount, network (loopback only), IPC, UTS, cgroup */
    add(&a, "--unshare-user");
    add(&a, "--disable-userns");    /* no namespace nested inside: every process stays in view */
    add(&a, "--die-with-parent");   /* the judge gone (kill -9 included): the sandbox goes */
    add(&a, "--new-session");       /* no terminal to push input into */
    add(&a, "--cap-drop");
    add(&a, "ALL");
    add(&a, "--hostname");
    add(&a, "tempo-sandbox");
    for (size_t i = 0; i < sizeof system_dirs / sizeof *system_dirs; i++) {
        struct stat st;
        if (lstat(system_dirs[i], &st) != 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(system_dirs[i], links[i], PATH_MAX - 1);
            if (n <= 0)
                continue;
            links[i][n] = '\0';
            add3(&a, "--symlink", links[i], system_dirs[i]);
        } else {
            add3(&a, "--ro-bind", system_dirs[i], system_dirs[i]);
        }
    }
    add(&a, "--proc");
    add(&a, "/proc");
    add(&a, "--dev");
    add(&a, "/dev");
    /* /tmp first: a folder handed over may lie under /tmp, and is then bound over this one */
    if (view->tmp) {
        add3(&a, "--bind", view->tmp, "/tmp");
        add3(&a, "--bind", view->tmp, "/dev/shm");
    }
    for (int i = 0; i < view->n_ro; i++)
        add3(&a, "--ro-bind", view->ro[i], view->ro[i]);
    for (int i = 0; i < view->n_rw; i++)
        add3(&a, "--bind", view->rw[i], view->rw[i]);
    if (view->tmp)
        add3(&a, "--bind", view->tmp, view->tmp);
    for (int i = 0; i < view->n_files; i++)
        add3(&a, "--ro-bind", view->files[i].src, view->files[i].dst);
    add(&a, "--remount-ro");
    add(&a, "/dev");
    add(&a, "--remount-ro");
    add(&a, "/");
    if (view->cwd) {
        add(&a, "--chdir");
        add(&a, view->cwd);
    }
    add(&a, "--");
    /* the start mark (judge/runner.h): the sandbox is set up and the command is next */
    add(&a, "/bin/sh");
    add(&a, "-c");
    add(&a, "printf s >&3 && exec \"$@\" 3>&-");
    add(&a, "tempo-sandbox");
    for (int i = 0; cmd[i]; i++)
        add(&a, cmd[i]);
    a.v[a.n] = NULL;
    return a.v;
}

/* $TEMPO_BWRAP, else bwrap on PATH (or the usual places), into out. */
static int find_bwrap(char *out, size_t n)
{
    const char *given = getenv("TEMPO_BWRAP");
    if (given && *given) {
        text_fmt(out, n, "%s", given);
        return access(out, X_OK);
    }
    const char *path = getenv("PATH");
    char buf[8192];
    text_fmt(buf, sizeof buf, "%s:/usr/bin:/bin", path ? path : "");
    for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        text_fmt(out, n, "%s/bwrap", dir);
        if (dir[0] == '/' && access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

int judge_sandbox_probe(judge_sandbox *sb, tempo_error *err)
{
    memset(sb, 0, sizeof *sb);
    if (find_bwrap(sb->bwrap, sizeof sb->bwrap))
        return tempo_fail(err, "%s is not there (apt-get install bubblewrap)",
                          getenv("TEMPO_BWRAP") && *getenv("TEMPO_BWRAP") ? sb->bwrap : "bwrap (bubblewrap)");
    if (geteuid() == 0) {
        sb->drop_uid = 1;
        sb->uid = JUDGE_SANDBOX_UID;
        sb->gid = JUDGE_SANDBOX_GID;
    } else {
        sb->uid = geteuid();
        sb->gid = getegid();
    }
    char *cmd[] = {"/bin/true", NULL};
    judge_sandbox_view view = {.cwd = "/"};
    char **argv = judge_sandbox_argv(sb, &view, cmd);
    if (!argv)
        return tempo_fail(err, "judge: out of memory");
    proc_spec s = {0};
    s.argv = argv;
    s.log_tail_bytes = 4096;
    s.budget_s = 30;
    s.grace_s = 1;
    s.tree = 1;
    s.drop_uid = sb->drop_uid;
    s.run_uid = sb->uid;
    s.run_gid = sb->gid;
    s.no_new_privs = 1;
    s.start_mark_fd3 = 1;
    proc_result r;
    int rc = proc_run(&s, &r, err);
    free(argv);
    if (rc)
        return -1;
    if (!r.exec_errno && r.started && r.exited && r.exit_code == 0) {
        proc_free(&r);
        return 0;
    }
    char last[300], how[160];
    proc_caplog_last_line(&r.err, last, sizeof last);
    proc_describe(&r, how, sizeof how);
    proc_free(&r);
    return tempo_fail(err, "a sandbox cannot start here (%s%s%s; user namespaces may be disabled)", how,
                      last[0] ? ": " : "", last);
}

/* chown dir's tree, entered through descriptors with O_NOFOLLOW. */
static int give_tree(int dir_fd, uid_t uid, gid_t gid, int depth)
{
    if (fchown(dir_fd, uid, gid) != 0)
        return -1;
    if (depth > 256)
        return 0;
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = sub < 0 ? -1 : give_tree(sub, uid, gid, depth + 1);
            if (sub >= 0)
                close(sub);
        } else if (fchownat(dir_fd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

int judge_sandbox_give(const judge_sandbox *sb, const char *dir, tempo_error *err)
{
    if (!sb->drop_uid)
        return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = fd < 0 ? -1 : give_tree(fd, sb->uid, sb->gid, 0);
    int e = errno;
    if (fd >= 0)
        close(fd);
    return rc ? tempo_fail(err, "%s: cannot give it to the sandbox's user: %s", dir, strerror(e)) : 0;
}

int judge_sandbox_check_reach(const judge_sandbox *sb, const char *const *paths, int n, tempo_error *err)
{
    if (!sb->drop_uid)
        return 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return tempo_fail(err, "judge: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]), close(p[1]);
        return tempo_fail(err, "judge: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* as the sandbox's user: the first path (and the folder above it) it cannot reach */
        if (setgroups(0, NULL) != 0 || setresgid(sb->gid, sb->gid, sb->gid) != 0 ||
            setresuid(sb->uid, sb->uid, sb->uid) != 0)
            _exit(2);
        for (int i = 0; i < n; i++) {
            if (access(paths[i], R_OK | X_OK) == 0)
                continue;
            char blocker[PATH_MAX];
            text_fmt(blocker, sizeof blocker, "%s", paths[i]);
            for (char *slash; (slash = strrchr(blocker, '/')) && slash != blocker;) {
                *slash = '\0';
                if (access(blocker, X_OK) == 0) {
                    *slash = '/';
                    break;
                }
            }
            ssize_t w = write(p[1], blocker, strlen(blocker));
            (void)w;
            _exit(1);
        }
        _exit(0);
    }
    close(p[1]);
    char blocker[PATH_MAX] = "";
    ssize_t got = read(p[0], blocker, sizeof blocker - 1);
    close(p[0]);
    blocker[got > 0 ? got : 0] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
        return tempo_fail(err, "judge: %s: the sandbox's user (uid %d) cannot enter it, so it cannot be handed "
                               "over: give --work (and --data-dir) under folders others can enter, or chmod o+rx it",
                          blocker, (int)sb->uid);
    return tempo_fail(err, "judge: cannot check what the sandbox's user can reach");
}
