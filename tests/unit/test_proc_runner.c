/* test_judge_runner.c - judge/caplog.h and judge/runner.h with small shell
 * commands: exit codes, signals, exec failures, the deadline (SIGTERM, and
 * SIGKILL for a command that ignores it), files written after the deadline,
 * output flooding, leftover processes, limits, environment, descriptors.
 * No assertion depends on how fast the machine is. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "proc/caplog.h"
#include "proc/runner.h"
#include "test.h"

static char tmp_dir[256];

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp_dir, name);
    return buf[k];
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_caplog(void)
{
    tempo_error err;
    proc_caplog l;
    const char *p = tmp_path("cap.log");
    CHECK(proc_caplog_open(&l, p, 10, 8, &err) == 0);
    proc_caplog_add(&l, "0123456789abcdef", 16);
    proc_caplog_add(&l, "ghijk\nlast line \n\n", 18);
    char line[64];
    /* the 8-byte tail is " line \n\n": its last line is cut at the ring's start */
    CHECK(proc_caplog_last_line(&l, line, sizeof line) == 4 && strcmp(line, "line") == 0);
    proc_caplog_close(&l);
    char *data;
    size_t n;
    CHECK(file_read_all(p, &data, &n, 0, &err) == 0);
    /* 34 bytes offered: 10 head, 8 tail, 16 dropped */
    CHECK(strncmp(data, "0123456789", 10) == 0);
    CHECK(strstr(data, "[tempo judge: 16 bytes dropped]") != NULL);
    CHECK(n >= 8 && memcmp(data + n - 8, " line \n\n", 8) == 0);
    free(data);
    proc_caplog_free(&l);

    /* small output: the file is the output, nothing dropped */
    CHECK(proc_caplog_open(&l, p, 100, 64, &err) == 0);
    proc_caplog_add(&l, "a\nb\n", 4);
    proc_caplog_add(&l, "  tempo: x: \001bad  \n  \n", 22);
    CHECK(proc_caplog_last_line(&l, line, sizeof line) > 0);
    CHECK(strcmp(line, "tempo: x:  bad") == 0);
    CHECK(proc_caplog_last_line(&l, line, 6) == 5 && strcmp(line, "tempo") == 0);
    proc_caplog_close(&l);
    CHECK(file_size(p) == 26);
    proc_caplog_free(&l);

    /* tail exactly reaching back into the head: no marker, no duplicate */
    CHECK(proc_caplog_open(&l, p, 4, 6, &err) == 0);
    proc_caplog_add(&l, "abcdefgh", 8);
    proc_caplog_close(&l);
    CHECK(file_read_all(p, &data, &n, 0, &err) == 0);
    CHECK(n == 8 && memcmp(data, "abcdefgh", 8) == 0);
    free(data);
    proc_caplog_free(&l);
}

typedef struct {
    int calls, at_deadline;
    int late_file_seen;
    const char *late_file;
} end_probe;

static void on_end(void *ctx, int at_deadline)
{
    end_probe *p = ctx;
    p->calls++;
    p->at_deadline = at_deadline;
    p->late_file_seen = p->late_file && path_exists(p->late_file);
}

static int run_sh(const char *script, double budget, double grace, proc_result *r, end_probe *probe)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.cwd = tmp_dir;
    s.stdout_log = tmp_path("out.log");
    s.stderr_log = tmp_path("err.log");
    s.log_head_bytes = 4096;
    s.log_tail_bytes = 4096;
    s.budget_s = budget;
    s.grace_s = grace;
    s.at_end = on_end;
    s.ctx = probe;
    tempo_error err;
    tempo_error_clear(&err);
    int rc = proc_run(&s, r, &err);
    if (rc)
        fprintf(stderr, "proc_run: %s\n", err.msg);
    return rc;
}

static void test_exit_and_output(void)
{
    proc_result r;
    end_probe p = {0};
    CHECK(run_sh("echo hello; echo 'tempo: x: broken' >&2; exit 3", 0, 1, &r, &p) == 0);
    CHECK(r.exited && r.exit_code == 3 && !r.deadline_hit && !r.killed && !r.flooded);
    char line[128], what[128];
    proc_caplog_last_line(&r.out, line, sizeof line);
    CHECK(strcmp(line, "hello") == 0);
    proc_caplog_last_line(&r.err, line, sizeof line);
    CHECK(strcmp(line, "tempo: x: broken") == 0);
    CHECK(p.calls == 1 && p.at_deadline == 0);
    proc_describe(&r, what, sizeof what);
    CHECK(strcmp(what, "exited with status 3") == 0);
    CHECK(file_size(tmp_path("out.log")) == 6);
    proc_free(&r);
}

static void test_signal_and_exec_failure(void)
{
    proc_result r;
    end_probe p = {0};
    CHECK(run_sh("kill -SEGV $$", 0, 1, &r, &p) == 0);
    CHECK(!r.exited && r.term_signal == SIGSEGV);
    char what[128];
    proc_describe(&r, what, sizeof what);
    CHECK(strstr(what, "signal 11") != NULL);
    proc_free(&r);

    char *argv[] = {"./no-such-trainer", NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.cwd = tmp_dir;
    s.log_tail_bytes = 256;
    s.at_end = on_end;
    end_probe q = {0};
    s.ctx = &q;
    tempo_error err;
    CHECK(proc_run(&s, &r, &err) == 0);
    CHECK(r.exec_errno == ENOENT);
    CHECK(q.calls == 0);
    proc_describe(&r, what, sizeof what);
    CHECK(strstr(what, "could not start") != NULL);
    proc_free(&r);

    /* a folder that does not exist is an exec-side failure too */
    char *argv2[] = {"/bin/true", NULL};
    s.argv = argv2;
    s.cwd = tmp_path("missing-folder");
    CHECK(proc_run(&s, &r, &err) == 0);
    CHECK(r.exec_errno == ENOENT);
    proc_free(&r);
}

static void test_deadline_term(void)
{
    /* the shell and its sleep both get SIGTERM (whole group) */
    proc_result r;
    end_probe p = {0};
    CHECK(run_sh("sleep 30", 0.3, 5, &r, &p) == 0);
    CHECK(r.deadline_hit && !r.killed);
    CHECK(!r.exited && r.term_signal == SIGTERM);
    CHECK(p.calls == 1 && p.at_deadline == 1);
    CHECK(r.wall_s >= 0.3);
    proc_free(&r);
}

static void test_deadline_kill_and_late_file(void)
{
    /* ignores SIGTERM (and so does its sleep): SIGKILL after the grace;
     * the file it writes on SIGTERM is not there when at_end runs */
    proc_result r;
    end_probe p = {0};
    p.late_file = tmp_path("late.txt");
    unlink(p.late_file);
    CHECK(run_sh("trap 'echo late > late.txt' TERM; while :; do sleep 0.05; done", 0.3, 0.5, &r, &p) == 0);
    CHECK(r.deadline_hit);
    CHECK(p.calls == 1 && p.at_deadline == 1 && !p.late_file_seen);
    CHECK(path_exists(p.late_file)); /* written in the grace period */
    proc_free(&r);

    end_probe q = {0};
    CHECK(run_sh("trap '' TERM; sleep 30", 0.2, 0.3, &r, &q) == 0);
    CHECK(r.deadline_hit && r.killed && !r.exited && r.term_signal == SIGKILL);
    proc_free(&r);
}

static void test_flood(void)
{
    char *argv[] = {"yes", "flood", NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.stdout_log = tmp_path("flood.log");
    s.log_head_bytes = 1000;
    s.log_tail_bytes = 1000;
    s.flood_bytes = 4 << 20;
    s.budget_s = 60;
    s.grace_s = 1;
    proc_result r;
    tempo_error err;
    CHECK(proc_run(&s, &r, &err) == 0);
    CHECK(r.flooded && r.killed && !r.deadline_hit);
    CHECK(r.out.total > (4u << 20));
    long size = file_size(s.stdout_log);
    CHECK(size > 2000 && size < 2100);
    proc_free(&r);
}

static void test_strays_are_killed(void)
{
    proc_result r;
    end_probe p = {0};
    unlink(tmp_path("stray.pid"));
    CHECK(run_sh("sleep 30 & echo $! > stray.pid; exit 0", 0, 1, &r, &p) == 0);
    CHECK(r.exited && r.exit_code == 0 && r.strays);
    char *data;
    size_t n;
    tempo_error err;
    CHECK(file_read_all(tmp_path("stray.pid"), &data, &n, 0, &err) == 0);
    pid_t stray = (pid_t)atoi(data);
    free(data);
    CHECK(stray > 0 && kill(stray, 0) != 0 && errno == ESRCH);
    proc_free(&r);
}

static void test_memory_limit_env_cwd_fds(void)
{
    /* a 40 MB string in a shell under a 24 MB address-space limit fails */
    char *argv[] = {"/bin/sh", "-c", "x=$(head -c 40000000 /dev/zero | tr '\\0' a); echo ${#x}", NULL};
    proc_spec s = {0};
    s.argv = argv;
    s.log_tail_bytes = 1024;
    s.memory_bytes = 24u << 20;
    proc_result r;
    tempo_error err;
    CHECK(proc_run(&s, &r, &err) == 0);
    char line[256];
    proc_caplog_last_line(&r.out, line, sizeof line);
    CHECK(strcmp(line, "40000000") != 0);
    proc_free(&r);

    /* environment and folder as given; no descriptor of the judge leaks */
    int leak = open("/dev/null", O_RDONLY); /* not close-on-exec */
    CHECK(dup2(leak, 57) == 57);
    char *argv2[] = {"/bin/sh", "-c", "echo \"$FOO:$HOME:$(pwd)\"; ls /proc/self/fd | tr '\\n' ' ' >&2", NULL};
    char *envp[] = {"FOO=bar", "PATH=/usr/bin:/bin", NULL};
    s.argv = argv2;
    s.envp = envp;
    s.cwd = tmp_dir;
    s.memory_bytes = 0;
    CHECK(proc_run(&s, &r, &err) == 0);
    proc_caplog_last_line(&r.out, line, sizeof line);
    char want[512];
    snprintf(want, sizeof want, "bar::%s", tmp_dir);
    CHECK_MSG(strcmp(line, want) == 0, "%s", line);
    proc_caplog_last_line(&r.err, line, sizeof line);
    CHECK_MSG(strstr(line, "57") == NULL, "fds: %s", line);
    close(57);
    close(leak);
    proc_free(&r);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_judge_runner.XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_caplog);
    RUN(test_exit_and_output);
    RUN(test_signal_and_exec_failure);
    RUN(test_deadline_term);
    RUN(test_deadline_kill_and_late_file);
    RUN(test_flood);
    RUN(test_strays_are_killed);
    RUN(test_memory_limit_env_cwd_fds);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return test_summary("test_judge_runner");
}
