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

/* One running command as the judge watches it. */
typedef struct {
    pid_t pid;                /* the leader; its process group has the same id */
    int pidfd;                /* readable when the leader exits; -1 where unsupported */
    int fds[2];               /* read ends of stdout and stderr; -1 once closed */
    judge_caplog *logs[2];    /* where each goes */
    int exec_errno;           /* != 0: the command did not start */
    double t0;                /* fork time */
    double deadline, term_at; /* 0: no deadline / SIGTERM not sent yet */
    int status, ended_called;
} watch;

/* The two capped logs and three close-on-exec pipes: stdout, stderr and the
 * exec status (p[4..5]). On failure everything opened is closed again. */
static int open_logs_and_pipes(const judge_proc_spec *s, judge_proc_result *r, int p[6], tempo_error *err)
{
    size_t tail = s->log_tail_bytes ? s->log_tail_bytes : 4096;
    if (judge_caplog_open(&r->out, s->stdout_log, s->log_head_bytes, tail, err))
        return -1;
    if (judge_caplog_open(&r->err, s->stderr_log, s->log_head_bytes, tail, err)) {
        judge_caplog_free(&r->out);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (pipe2(p + 2 * i, O_CLOEXEC) != 0) {
            int e = errno;
            for (int k = 0; k < 2 * i; k++)
                close(p[k]);
            judge_proc_free(r);
            return tempo_fail(err, "%s: pipe: %s", s->argv[0], strerror(e));
        }
    }
    return 0;
}

/* Fork the child into its own group and learn whether exec worked (the
 * status pipe closes on exec, or carries errno). Fills w's pid, pipes,
 * t0 and exec_errno. */
static int start_child(const judge_proc_spec *s, judge_proc_result *r, int p[6], watch *w, tempo_error *err)
{
    /* leftovers of the group are re-parented to the judge, which reaps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t judge_pid = getpid();
    fflush(NULL);
    w->t0 = timer_now();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        for (int k = 0; k < 6; k++)
            close(p[k]);
        judge_proc_free(r);
        return tempo_fail(err, "%s: fork: %s", s->argv[0], strerror(e));
    }
    if (pid == 0) {
        close(p[0]), close(p[2]), close(p[4]);
        child_run(s, judge_pid, p[1], p[3], p[5]);
    }
    setpgid(pid, pid); /* also from here, so the group exists before any kill */
    close(p[1]), close(p[3]), close(p[5]);
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(p[4], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(p[4]);
    w->exec_errno = n == (ssize_t)sizeof exec_errno ? exec_errno : 0;
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    fcntl(p[2], F_SETFL, O_NONBLOCK);
    w->pid = pid;
    w->pidfd = pidfd_for(pid);
    w->fds[0] = p[0];
    w->fds[1] = p[2];
    w->logs[0] = &r->out;
    w->logs[1] = &r->err;
    w->deadline = s->budget_s > 0 ? w->t0 + s->budget_s : 0;
    return 0;
}

/* At the deadline: stop the group, let the caller take its files (at_end),
 * then SIGTERM; after the grace, SIGKILL. Returns the seconds until the next
 * of these is due (at most one tick). */
static double enforce_deadline(const judge_proc_spec *s, judge_proc_result *r, watch *w, double now)
{
    if (w->deadline && !r->deadline_hit && now >= w->deadline && !w->exec_errno) {
        r->deadline_hit = 1;
        kill(-w->pid, SIGSTOP);
        if (s->at_end)
            s->at_end(s->ctx, 1);
        w->ended_called = 1;
        kill(-w->pid, SIGTERM);
        kill(-w->pid, SIGCONT);
        w->term_at = timer_now();
    }
    if (w->term_at && !r->killed && now >= w->term_at + s->grace_s) {
        kill(-w->pid, SIGKILL);
        r->killed = 1;
    }
    double next = 0.001 * TICK_MS;
    if (w->deadline && !r->deadline_hit && w->deadline - now < next)
        next = w->deadline - now;
    if (w->term_at && !r->killed && w->term_at + s->grace_s - now < next)
        next = w->term_at + s->grace_s - now;
    return next;
}

/* Until the leader exits: keep the deadline, read both pipes into their
 * logs, and kill the group at once when the output floods. */
static void watch_until_exit(const judge_proc_spec *s, judge_proc_result *r, watch *w)
{
    int leader_done = 0;
    while (!leader_done) {
        double next = enforce_deadline(s, r, w, timer_now());
        int timeout_ms = next > 0 ? (int)(next * 1000) + 1 : 0;
        struct pollfd pf[3];
        int np = 0;
        for (int i = 0; i < 2; i++)
            if (w->fds[i] >= 0)
                pf[np++] = (struct pollfd){.fd = w->fds[i], .events = POLLIN};
        if (w->pidfd >= 0)
            pf[np++] = (struct pollfd){.fd = w->pidfd, .events = POLLIN};
        poll(pf, (nfds_t)np, timeout_ms);
        for (int i = 0; i < 2; i++) {
            if (w->fds[i] >= 0 && drain(w->fds[i], w->logs[i]) < 0) {
                close(w->fds[i]);
                w->fds[i] = -1;
            }
        }
        if (s->flood_bytes && !r->flooded && r->out.total + r->err.total > s->flood_bytes) {
            r->flooded = 1;
            r->killed = 1;
            kill(-w->pid, SIGKILL);
        }
        pid_t got = waitpid(w->pid, &w->status, WNOHANG);
        /* got < 0 cannot happen for our own child; leave rather than spin */
        if (got == w->pid || (got < 0 && errno != EINTR)) {
            leader_done = 1;
            r->wall_s = timer_now() - w->t0;
        }
    }
}

/* The group is gone: read what is left in the pipes (bounded, in case an
 * escaped process still holds them open), then close them. */
static void drain_after_exit(const judge_proc_spec *s, judge_proc_result *r, watch *w)
{
    double until = timer_now() + 1.0;
    while ((w->fds[0] >= 0 || w->fds[1] >= 0) && timer_now() < until) {
        struct pollfd pf[2];
        int np = 0, idx[2];
        for (int i = 0; i < 2; i++)
            if (w->fds[i] >= 0) {
                idx[np] = i;
                pf[np++] = (struct pollfd){.fd = w->fds[i], .events = POLLIN};
            }
        poll(pf, (nfds_t)np, 50);
        for (int k = 0; k < np; k++) {
            int i = idx[k];
            if (drain(w->fds[i], w->logs[i]) < 0 ||
                (s->flood_bytes && r->out.total + r->err.total > 2 * s->flood_bytes)) {
                close(w->fds[i]);
                w->fds[i] = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (w->fds[i] >= 0)
            close(w->fds[i]);
}

int judge_proc_run(const judge_proc_spec *s, judge_proc_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->out.fd = r->err.fd = -1;
    int p[6];
    watch w = {0};
    if (open_logs_and_pipes(s, r, p, err) || start_child(s, r, p, &w, err))
        return -1;
    watch_until_exit(s, r, &w);
    if (w.pidfd >= 0)
        close(w.pidfd);
    record_status(r, w.status);
    kill_strays(w.pid, r);
    drain_after_exit(s, r, &w);
    r->exec_errno = w.exec_errno;
    if (!w.ended_called && !w.exec_errno && s->at_end)
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
