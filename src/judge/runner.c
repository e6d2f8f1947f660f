/* runner.c - fork/exec in a process group, deadline, limits, capped output
 * (see runner.h). Between fork and exec the child calls only
 * async-signal-safe functions; everything it needs is prepared before. */
#include "judge/runner.h"
#include "judge/text.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timer.h"

#define READ_CHUNK 65536
#define TICK_MS 20

extern char **environ;

/* In the child: report errno through the exec-status pipe and leave. */
static void child_fail(int status_fd)
{
    int e = errno ? errno : EINVAL;
    ssize_t w = write(status_fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

static void child_setlimit(int resource, uint64_t bytes)
{
    struct rlimit rl = {(rlim_t)bytes, (rlim_t)bytes};
    setrlimit(resource, &rl);
}

static void child_run(const judge_proc_spec *s, pid_t judge_pid, int out_w, int err_w, int status_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != judge_pid)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        child_fail(status_fd);
    if (s->memory_bytes)
        child_setlimit(RLIMIT_AS, s->memory_bytes);
    if (s->file_bytes)
        child_setlimit(RLIMIT_FSIZE, s->file_bytes);
    child_setlimit(RLIMIT_CORE, 0);
    if (s->cwd && chdir(s->cwd) != 0)
        child_fail(status_fd);
    /* nothing but 0, 1, 2 survives exec (the status pipe is close-on-exec) */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
            max = 65536;
        for (int fd = 3; fd < max; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    execvpe(s->argv[0], s->argv, s->envp ? s->envp : environ);
    child_fail(status_fd);
}

static int pidfd_for(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

/* Read what is available on fd into log; returns bytes read, -1 at EOF. */
static long drain(int fd, judge_caplog *log)
{
    char buf[READ_CHUNK];
    long got = 0;
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            judge_caplog_add(log, buf, (size_t)n);
            got += n;
            continue;
        }
        if (n == 0)
            return got ? got : -1;
        if (errno == EINTR)
            continue;
        break; /* EAGAIN */
    }
    return got;
}

static void record_status(judge_proc_result *r, int status)
{
    if (WIFEXITED(status)) {
        r->exited = 1;
        r->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r->exited = 0;
        r->term_signal = WTERMSIG(status);
    }
}

/* After the leader is gone: kill and reap what is left of its group. */
static void kill_strays(pid_t pgid, judge_proc_result *r)
{
    if (kill(-pgid, 0) != 0)
        return;
    r->strays = 1;
    double until = timer_now() + 2.0;
    while (timer_now() < until) {
        kill(-pgid, SIGCONT);
        if (kill(-pgid, SIGKILL) != 0 && errno == ESRCH)
            return;
        while (waitpid(-pgid, NULL, WNOHANG) > 0)
            ;
        if (kill(-pgid, 0) != 0)
            return;
        usleep(10000);
    }
}

int judge_proc_run(const judge_proc_spec *s, judge_proc_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->out.fd = r->err.fd = -1;
    size_t tail = s->log_tail_bytes ? s->log_tail_bytes : 4096;
    if (judge_caplog_open(&r->out, s->stdout_log, s->log_head_bytes, tail, err))
        return -1;
    if (judge_caplog_open(&r->err, s->stderr_log, s->log_head_bytes, tail, err)) {
        judge_caplog_free(&r->out);
        return -1;
    }
    int out_p[2], err_p[2], st_p[2];
    if (pipe2(out_p, O_CLOEXEC) != 0) {
        judge_proc_free(r);
        return tempo_fail(err, "%s: pipe: %s", s->argv[0], strerror(errno));
    }
    if (pipe2(err_p, O_CLOEXEC) != 0) {
        close(out_p[0]), close(out_p[1]);
        judge_proc_free(r);
        return tempo_fail(err, "%s: pipe: %s", s->argv[0], strerror(errno));
    }
    if (pipe2(st_p, O_CLOEXEC) != 0) {
        close(out_p[0]), close(out_p[1]), close(err_p[0]), close(err_p[1]);
        judge_proc_free(r);
        return tempo_fail(err, "%s: pipe: %s", s->argv[0], strerror(errno));
    }
    /* leftovers of the group are re-parented to the judge, which reaps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t judge_pid = getpid();
    fflush(NULL);
    double t0 = timer_now();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out_p[0]), close(out_p[1]), close(err_p[0]), close(err_p[1]), close(st_p[0]), close(st_p[1]);
        judge_proc_free(r);
        return tempo_fail(err, "%s: fork: %s", s->argv[0], strerror(e));
    }
    if (pid == 0) {
        close(out_p[0]), close(err_p[0]), close(st_p[0]);
        child_run(s, judge_pid, out_p[1], err_p[1], st_p[1]);
    }
    setpgid(pid, pid); /* also from here, so the group exists before any kill */
    close(out_p[1]), close(err_p[1]), close(st_p[1]);
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(st_p[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(st_p[0]);
    if (n != (ssize_t)sizeof exec_errno)
        exec_errno = 0;
    fcntl(out_p[0], F_SETFL, O_NONBLOCK);
    fcntl(err_p[0], F_SETFL, O_NONBLOCK);
    int pidfd = pidfd_for(pid);

    int fds_open[2] = {out_p[0], err_p[0]};
    judge_caplog *logs[2] = {&r->out, &r->err};
    double deadline = s->budget_s > 0 ? t0 + s->budget_s : 0, term_at = 0;
    int leader_done = 0, status = 0, ended_called = 0;
    while (!leader_done) {
        double now = timer_now();
        if (deadline && !r->deadline_hit && now >= deadline && !exec_errno) {
            r->deadline_hit = 1;
            kill(-pid, SIGSTOP);
            if (s->at_end)
                s->at_end(s->ctx, 1);
            ended_called = 1;
            kill(-pid, SIGTERM);
            kill(-pid, SIGCONT);
            term_at = timer_now();
        }
        if (term_at && !r->killed && now >= term_at + s->grace_s) {
            kill(-pid, SIGKILL);
            r->killed = 1;
        }
        double next = 0.001 * TICK_MS;
        if (deadline && !r->deadline_hit && deadline - now < next)
            next = deadline - now;
        if (term_at && !r->killed && term_at + s->grace_s - now < next)
            next = term_at + s->grace_s - now;
        int timeout_ms = next > 0 ? (int)(next * 1000) + 1 : 0;
        struct pollfd pf[3];
        int np = 0;
        for (int i = 0; i < 2; i++)
            if (fds_open[i] >= 0)
                pf[np++] = (struct pollfd){.fd = fds_open[i], .events = POLLIN};
        if (pidfd >= 0)
            pf[np++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        poll(pf, (nfds_t)np, timeout_ms);
        for (int i = 0; i < 2; i++) {
            if (fds_open[i] < 0)
                continue;
            if (drain(fds_open[i], logs[i]) < 0) {
                close(fds_open[i]);
                fds_open[i] = -1;
            }
        }
        if (s->flood_bytes && !r->flooded && r->out.total + r->err.total > s->flood_bytes) {
            r->flooded = 1;
            r->killed = 1;
            kill(-pid, SIGKILL);
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            leader_done = 1;
            r->wall_s = timer_now() - t0;
        } else if (w < 0 && errno != EINTR) {
            leader_done = 1; /* cannot happen for our own child; do not spin */
            r->wall_s = timer_now() - t0;
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    record_status(r, status);
    kill_strays(pid, r);
    /* the group is gone: read what is left in the pipes (bounded, in case an
     * escaped process still holds them open) */
    double until = timer_now() + 1.0;
    while ((fds_open[0] >= 0 || fds_open[1] >= 0) && timer_now() < until) {
        struct pollfd pf[2];
        int np = 0, idx[2];
        for (int i = 0; i < 2; i++)
            if (fds_open[i] >= 0) {
                idx[np] = i;
                pf[np++] = (struct pollfd){.fd = fds_open[i], .events = POLLIN};
            }
        poll(pf, (nfds_t)np, 50);
        for (int k = 0; k < np; k++) {
            int i = idx[k];
            if (drain(fds_open[i], logs[i]) < 0 ||
                (s->flood_bytes && r->out.total + r->err.total > 2 * s->flood_bytes)) {
                close(fds_open[i]);
                fds_open[i] = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds_open[i] >= 0)
            close(fds_open[i]);
    r->exec_errno = exec_errno;
    if (!ended_called && !exec_errno && s->at_end)
        s->at_end(s->ctx, 0);
    judge_caplog_close(&r->out);
    judge_caplog_close(&r->err);
    return 0;
}

void judge_proc_free(judge_proc_result *r)
{
    judge_caplog_free(&r->out);
    judge_caplog_free(&r->err);
}

void judge_proc_describe(const judge_proc_result *r, char *out, size_t n)
{
    if (r->exec_errno)
        judge_fmt(out, n, "could not start: %s", strerror(r->exec_errno));
    else if (r->exited)
        judge_fmt(out, n, "exited with status %d", r->exit_code);
    else
        judge_fmt(out, n, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
}
