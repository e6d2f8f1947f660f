/* test_judge_sandbox.c - the pieces of the judge's sandbox that hold without
 * one: judge/disk_usage.h (allocated bytes, sparse files, links not
 * followed, depth), judge/proctree.h (a process tree with a setsid child:
 * counted, frozen, signalled below a depth, its namespace found) and
 * judge/sandbox.h's bwrap command (what is bound, and in which order). The
 * sandbox itself, and every attack it stops, is tests/e2e/judge_hostile.sh. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/disk_usage.h"
#include "proc/proctree.h"
#include "judge/sandbox.h"
#include "test.h"

static char dir[] = "/tmp/test_judge_sandbox.XXXXXX";

static void write_bytes(const char *path, size_t n)
{
    FILE *f = fopen(path, "wb");
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    for (size_t done = 0; f && done < n; done += sizeof buf)
        fwrite(buf, 1, n - done < sizeof buf ? n - done : sizeof buf, f);
    if (f)
        fclose(f);
}

static void test_disk_usage(void)
{
    char a[256], b[256], big[256], sparse[256], link[256], outside[256];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/a/b", dir);
    CHECK(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
    snprintf(big, sizeof big, "%s/a/b/big", dir);
    write_bytes(big, 3u << 20);
    /* a 1 GiB sparse file takes (almost) nothing */
    snprintf(sparse, sizeof sparse, "%s/a/sparse", dir);
    int fd = open(sparse, O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0 && ftruncate(fd, 1ll << 30) == 0);
    close(fd);
    /* a link to a big file outside the folders is not followed */
    snprintf(outside, sizeof outside, "%s/outside", dir);
    write_bytes(outside, 8u << 20);
    snprintf(link, sizeof link, "%s/a/link", dir);
    CHECK(symlink(outside, link) == 0);
    const char *dirs[] = {a, "/nonexistent-folder-of-the-test"};
    proc_disk_usage u;
    proc_disk_usage_get(dirs, 2, &u);
    CHECK_MSG(u.bytes >= (3u << 20) && u.bytes < (4u << 20), "%llu bytes", (unsigned long long)u.bytes);
    CHECK(u.entries == 4); /* b, big, sparse, link */
    CHECK(!u.too_deep);
    /* deeper than PROC_DISK_MAX_DEPTH: reported, not walked */
    char deep[256];
    snprintf(deep, sizeof deep, "%s/deep", dir);
    CHECK(mkdir(deep, 0755) == 0);
    int dfd = open(deep, O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < PROC_DISK_MAX_DEPTH + 5 && dfd >= 0; i++) {
        CHECK(mkdirat(dfd, "d", 0755) == 0);
        int next = openat(dfd, "d", O_RDONLY | O_DIRECTORY);
        close(dfd);
        dfd = next;
    }
    if (dfd >= 0)
        close(dfd);
    const char *deep_dirs[] = {deep};
    proc_disk_usage_get(deep_dirs, 1, &u);
    CHECK(u.too_deep);
    CHECK(u.entries >= PROC_DISK_MAX_DEPTH - 1);
}

/* In the child (the root): a child with a grandchild, plus a
 * setsid grandchild; all sleep. */
static void spawn_tree(void)
{
    if (fork() == 0) {
        if (fork() == 0) {
            pause();
            _exit(0);
        }
        pause();
        _exit(0);
    }
    if (fork() == 0) {
        setsid();
        pause();
        _exit(0);
    }
    pause();
    _exit(0);
}

static char state_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

static void test_proctree(void)
{
    pid_t root = fork();
    if (root == 0)
        spawn_tree();
    proc_tree_stats st = {0};
    for (int i = 0; i < 200; i++) { /* until all four are there */
        CHECK(proc_tree_stats_get(root, &st) == 0);
        if (st.processes == 4)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(st.processes == 4, "%d processes", st.processes);
    CHECK(st.tasks >= 4 && st.rss_bytes > 0 && st.max_vm_bytes > 0);
    CHECK(proc_tree_inner_pid_ns(root) == 0); /* one namespace: no sandbox inside */
    /* frozen: every one of them, the setsid one included */
    CHECK(proc_tree_freeze(root, 5.0) == 0);
    CHECK(state_of(root) == 'T');
    CHECK(proc_tree_signal(root, SIGCONT) == 4);
    /* below depth 1: the three descendants, not the root */
    CHECK(proc_tree_signal_below(root, 1, SIGKILL) == 3);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    CHECK(kill(root, 0) == 0);
    CHECK(proc_tree_stats_get(root, &st) == 0 && st.processes == 1);
    CHECK(proc_tree_signal(root, SIGKILL) == 1);
    int status;
    CHECK(waitpid(root, &status, 0) == root && WIFSIGNALED(status));
    CHECK(proc_tree_signal(root, SIGKILL) == 0); /* gone */
    proc_reap_zombie_children();
}

/* index of arg in argv, or -1 */
static int find_arg(char **argv, const char *a, int from)
{
    for (int i = from; argv[i]; i++)
        if (!strcmp(argv[i], a))
            return i;
    return -1;
}

static void test_bwrap_command(void)
{
    judge_sandbox sb = {.bwrap = "/usr/bin/bwrap"};
    judge_sandbox_view v = {0};
    v.ro[v.n_ro++] = "/work/data/v256";
    v.rw[v.n_rw++] = "/tmp/runs/x/seed-1/submission";
    v.rw[v.n_rw++] = "/tmp/runs/x/seed-1/out";
    v.tmp = "/tmp/runs/x/seed-1/tmp";
    v.files[v.n_files].src = "/tmp/runs/x/tempo-for-sandbox";
    v.files[v.n_files++].dst = "/opt/tempo/build/tempo";
    v.cwd = "/tmp/runs/x/seed-1/submission";
    char *cmd[] = {"python3", "train.py", "--fast", NULL};
    char **argv = judge_sandbox_argv(&sb, &v, cmd);
    CHECK(argv != NULL);
    if (!argv)
        return;
    CHECK(!strcmp(argv[0], "/usr/bin/bwrap"));
    const char *must[] = {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"};
    for (size_t i = 0; i < sizeof must / sizeof *must; i++)
        CHECK_MSG(find_arg(argv, must[i], 0) > 0, "%s", must[i]);
    int cap = find_arg(argv, "--cap-drop", 0);
    CHECK(cap > 0 && !strcmp(argv[cap + 1], "ALL"));
    /* /tmp is bound before the folders handed over (which may lie under /tmp) */
    int tmp = find_arg(argv, "/tmp", 0), sub = find_arg(argv, "/tmp/runs/x/seed-1/submission", 0);
    CHECK(tmp > 0 && sub > tmp && !strcmp(argv[sub - 1], "--bind"));
    int data = find_arg(argv, "/work/data/v256", 0);
    CHECK(data > 0 && !strcmp(argv[data - 1], "--ro-bind") && !strcmp(argv[data + 1], "/work/data/v256"));
    int bin = find_arg(argv, "/tmp/runs/x/tempo-for-sandbox", 0);
    CHECK(bin > 0 && !strcmp(argv[bin - 1], "--ro-bind") && !strcmp(argv[bin + 1], "/opt/tempo/build/tempo"));
    /* the root and /dev read-only after every bind; the command last, after the start-mark wrapper */
    int dashes = find_arg(argv, "--", 0), ro_root = find_arg(argv, "/", 0);
    CHECK(ro_root > bin && !strcmp(argv[ro_root - 1], "--remount-ro") && dashes > ro_root);
    CHECK(!strcmp(argv[dashes + 1], "/bin/sh") && strstr(argv[dashes + 3], ">&3") != NULL);
    CHECK(!strcmp(argv[dashes + 5], "python3") && !strcmp(argv[dashes + 7], "--fast") && argv[dashes + 8] == NULL);
    /* nothing of the judge's own is bound: no home, no /proc of the host, no validation folder */
    CHECK(find_arg(argv, "/root", 0) < 0 && find_arg(argv, "/home", 0) < 0);
    int proc = find_arg(argv, "--proc", 0);
    CHECK(proc > 0 && !strcmp(argv[proc + 1], "/proc"));
    free(argv);
}

/* A root judge hands over only what nobody can enter. */
static void test_reach(void)
{
    if (geteuid() != 0) {
        TEST_SKIP("reach: not root (the sandbox runs as this user): a root judge's hand-over not checked");
        return;
    }
    judge_sandbox sb = {.drop_uid = 1, .uid = JUDGE_SANDBOX_UID, .gid = JUDGE_SANDBOX_GID};
    char closed[256], inner[300];
    snprintf(closed, sizeof closed, "%s/closed", dir);
    snprintf(inner, sizeof inner, "%s/inner", closed);
    CHECK(mkdir(closed, 0700) == 0 && mkdir(inner, 0755) == 0);
    CHECK(chmod(dir, 0755) == 0);
    tempo_error err;
    const char *bad[] = {inner};
    CHECK(judge_sandbox_check_reach(&sb, bad, 1, &err) == -1);
    CHECK_MSG(strstr(err.msg, closed) != NULL && strstr(err.msg, "cannot enter") != NULL, "%s", err.msg);
    CHECK(chmod(closed, 0755) == 0);
    CHECK(judge_sandbox_check_reach(&sb, bad, 1, &err) == 0);
    /* giving a folder to the sandbox's user */
    char f[320];
    snprintf(f, sizeof f, "%s/file", inner);
    write_bytes(f, 10);
    CHECK(judge_sandbox_give(&sb, closed, &err) == 0);
    struct stat st;
    CHECK(stat(f, &st) == 0 && st.st_uid == JUDGE_SANDBOX_UID && st.st_gid == JUDGE_SANDBOX_GID);
    CHECK(stat(inner, &st) == 0 && st.st_uid == JUDGE_SANDBOX_UID);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_disk_usage);
    RUN(test_proctree);
    RUN(test_bwrap_command);
    RUN(test_reach);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_judge_sandbox");
}
