/* runner.c - fork/exec in a process group, deadline, limits, capped output
 * (see runner.h). Between fork and exec the child calls only
 * async-signal-safe functions; everything it needs is prepared before. */
#include "proc/runner.h"
#include "core/text.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "proc/disk_usage.h"
#include "proc/proctree.h"

#define READ_CHUNK 65536
#define TICK_MS 20
#define TREE_POLL_S 0.1   /* tasks and memory */
#define DISK_POLL_S 0.5   /* at least; a slow walk waits 20 times its length */
#define FREEZE_TIMEOUT_S 2.0

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

static void child_run(const proc_spec *s, pid_t judge_pid, int out_w, int err_w, int status_fd, int mark_w)
{
    setpgid(0, 0);
    if (s->max_tasks > 0)
        child_setlimit(RLIMIT_NPROC, (uint64_t)s->max_tasks + PROC_NPROC_SLACK);
    /* a change of credentials clears the parent-death signal: drop first */
    if (s->drop_uid && (setgroups(0, NULL) != 0 || setresgid(s->run_gid, s->run_gid, s->run_gid) != 0 ||
                        setresuid(s->run_uid, s->run_uid, s->run_uid) != 0))
        child_fail(status_fd);
    if (s->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        child_fail(status_fd);
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
    /* fd 3: the start mark's pipe, kept open across exec (the status pipe moved off it first) */
    if (s->start_mark_fd3) {
        if (status_fd == 3 && (status_fd = fcntl(3, F_DUPFD_CLOEXEC, 4)) < 0)
            _exit(127);
        if ((mark_w != 3 && dup2(mark_w, 3) < 0) || fcntl(3, F_SETFD, 0) != 0)
            child_fail(status_fd);
    }
    if (s->memory_bytes)
        child_setlimit(RLIMIT_AS, s->memory_bytes);
    if (s->file_bytes)
        child_setlimit(RLIMIT_FSIZE, s->file_bytes);
    child_setlimit(RLIMIT_CORE, 0);
    if (s->cwd && chdir(s->cwd) != 0)
        child_fail(status_fd);
    /* nothing but 0, 1, 2 (and 3) survives exec (the status pipe is close-on-exec) */
    unsigned first = s->start_mark_fd3 ? 4u : 3u;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, first, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
            max = 65536;
        for (int fd = (int)first; fd < max; fd++)
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
static long drain(int fd, proc_caplog *log)
{
    char buf[READ_CHUNK];
    long got = 0;
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            proc_caplog_add(log, buf, (size_t)n);
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

static void record_status(const proc_spec *s, proc_result *r, int status)
{
    if (WIFEXITED(status) && s->exit_128_is_signal && WEXITSTATUS(status) > 128 &&
        WEXITSTATUS(status) < 128 + NSIG) {
        r->exited = 0;
        r->term_signal = WEXITSTATUS(status) - 128;
    } else if (WIFEXITED(status)) {
        r->exited = 1;
        r->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r->exited = 0;
        r->term_signal = WTERMSIG(status);
    }
}

/* After the leader is gone: kill and reap what is left of its group. */
static void kill_strays(pid_t pgid, proc_result *r)
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
    proc_caplog *logs[2];    /* where each goes */
    int exec_errno;           /* != 0: the command did not start */
    double t0;                /* fork time */
    double deadline, term_at; /* 0: no deadline / SIGTERM not sent yet */
    int status, ended_called;
    int tree;                 /* signals go to the leader's tree, not its group */
    double next_tree_poll, next_disk_poll;
    uint64_t inner_ns;        /* tree mode: the sandbox's PID namespace, once seen */
    int mark_fd;              /* read end of the start mark's pipe; -1 once read or closed */
    int ended;                /* the run is over: limits are checked once more, nothing is killed */
} watch;

/* Send sig to the run: its process group, or in tree mode its whole tree. */
static void signal_run(const watch *w, int sig)
{
    if (w->tree)
        proc_tree_signal(w->pid, sig);
    else
        kill(-w->pid, sig);
}

/* The two capped logs and four close-on-exec pipes: stdout, stderr, the
 * exec status (p[4..5]) and the start mark (p[6..7], fd 3 of the child). On failure everything opened is closed again. */
static int open_logs_and_pipes(const proc_spec *s, proc_result *r, int p[8], tempo_error *err)
{
    size_t tail = s->log_tail_bytes ? s->log_tail_bytes : 4096;
    if (proc_caplog_open(&r->out, s->stdout_log, s->log_head_bytes, tail, err))
        return -1;
    if (proc_caplog_open(&r->err, s->stderr_log, s->log_head_bytes, tail, err)) {
        proc_caplog_free(&r->out);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if (pipe2(p + 2 * i, O_CLOEXEC) != 0) {
            int e = errno;
            for (int k = 0; k < 2 * i; k++)
                close(p[k]);
            proc_free(r);
            return tempo_fail(err, "%s: pipe: %s", s->argv[0], strerror(e));
        }
    }
    return 0;
}

/* Fork the child into its own group and learn whether exec worked (the
 * status pipe closes on exec, or carries errno). Fills w's pid, pipes,
 * t0 and exec_errno. */
static int start_child(const proc_spec *s, proc_result *r, int p[8], watch *w, tempo_error *err)
{
    /* leftovers of the group are re-parented to the judge, which reaps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t judge_pid = getpid();
    fflush(NULL);
    w->t0 = timer_now();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        for (int k = 0; k < 8; k++)
            close(p[k]);
        proc_free(r);
        return tempo_fail(err, "%s: fork: %s", s->argv[0], strerror(e));
    }
    if (pid == 0) {
        close(p[0]), close(p[2]), close(p[4]), close(p[6]);
        child_run(s, judge_pid, p[1], p[3], p[5], p[7]);
    }
    setpgid(pid, pid); /* also from here, so the group exists before any kill */
    close(p[1]), close(p[3]), close(p[5]), close(p[7]);
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
    w->tree = s->tree;
    fcntl(p[6], F_SETFL, O_NONBLOCK);
    w->mark_fd = p[6];
    return 0;
}

/* Tree mode: SIGKILL the tree until nothing but the leader (a zombie, left
 * for waitpid) is alive, for at most two seconds. */
static void kill_tree_until_gone(const watch *w)
{
    double until = timer_now() + 2.0;
    proc_tree_stats st;
    do {
        proc_tree_signal(w->pid, SIGKILL);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    } while (proc_tree_stats_get(w->pid, &st) == 0 && st.processes > 0 && timer_now() < until);
}

/* Poll the limits (tasks and memory every TREE_POLL_S, the disk every
 * DISK_POLL_S or more); the first one passed kills the run. */
static void enforce_limits(const proc_spec *s, proc_result *r, watch *w, double now)
{
    if (r->limit || w->exec_errno)
        return;
    if (!w->ended && (s->max_tasks > 0 || s->tree_memory_bytes || w->tree) && now >= w->next_tree_poll) {
        w->next_tree_poll = now + TREE_POLL_S;
        if (w->tree && !w->inner_ns)
            w->inner_ns = proc_tree_inner_pid_ns(w->pid);
        proc_tree_stats st;
        if (proc_tree_stats_get(w->pid, &st) == 0) {
            if (st.tasks > r->peak_tasks)
                r->peak_tasks = st.tasks;
            if (st.rss_bytes > r->peak_rss_bytes)
                r->peak_rss_bytes = st.rss_bytes;
            if (st.max_vm_bytes > r->peak_vm_bytes)
                r->peak_vm_bytes = st.max_vm_bytes;
            if (s->max_tasks > 0 && st.tasks >= s->max_tasks) {
                r->limit = PROC_LIMIT_PROCS;
                text_fmt(r->limit_detail, sizeof r->limit_detail, "%ld processes and threads (--max-procs %ld)",
                          st.tasks, s->max_tasks);
            } else if (s->tree_memory_bytes && st.rss_bytes > s->tree_memory_bytes) {
                char used[32], cap[32];
                text_bytes(st.rss_bytes, used, sizeof used);
                text_bytes(s->tree_memory_bytes, cap, sizeof cap);
                r->limit = PROC_LIMIT_MEMORY;
                text_fmt(r->limit_detail, sizeof r->limit_detail, "%s resident over %d processes (--memory %s)", used,
                          st.processes, cap);
            }
        }
    }
    if (!r->limit && s->disk_bytes && s->n_disk_dirs && now >= w->next_disk_poll) {
        proc_disk_usage u;
        proc_disk_usage_get(s->disk_dirs, s->n_disk_dirs, &u);
        double took = timer_now() - now;
        w->next_disk_poll = now + (20 * took > DISK_POLL_S ? 20 * took : DISK_POLL_S);
        if (u.bytes > r->peak_disk_bytes)
            r->peak_disk_bytes = u.bytes;
        if (u.bytes > s->disk_bytes || u.too_deep) {
            r->limit = PROC_LIMIT_DISK;
            if (u.too_deep)
                text_fmt(r->limit_detail, sizeof r->limit_detail, "folders nested deeper than %d levels",
                          PROC_DISK_MAX_DEPTH);
            else {
                char used[32], cap[32];
                text_bytes(u.bytes, used, sizeof used);
                text_bytes(s->disk_bytes, cap, sizeof cap);
                text_fmt(r->limit_detail, sizeof r->limit_detail, "%s in the run's folders (--disk %s)", used, cap);
            }
        }
    }
    if (r->limit && !w->ended) {
        r->killed = 1;
        if (w->tree)
            kill_tree_until_gone(w);
        else
            kill(-w->pid, SIGKILL);
    }
}

/* At the deadline: stop the group, let the caller take its files (at_end),
 * then SIGTERM; after the grace, SIGKILL. Returns the seconds until the next
 * of these is due (at most one tick). */
static double enforce_deadline(const proc_spec *s, proc_result *r, watch *w, double now)
{
    if (w->deadline && !r->deadline_hit && now >= w->deadline && !w->exec_errno) {
        r->deadline_hit = 1;
        if (!w->tree) {
            kill(-w->pid, SIGSTOP);
        } else if (proc_tree_freeze(w->pid, FREEZE_TIMEOUT_S) != 0) {
            /* it forks faster than it can be stopped: end it, so that the files are still */
            r->freeze_failed = 1;
            kill_tree_until_gone(w);
        }
        if (s->at_end)
            s->at_end(s->ctx, 1);
        w->ended_called = 1;
        if (w->tree) /* the command's processes, not the sandbox's own (bwrap would end them all) */
            proc_tree_signal_below(w->pid, PROC_SANDBOX_DEPTH, SIGTERM);
        else
            kill(-w->pid, SIGTERM);
        signal_run(w, SIGCONT);
        w->term_at = timer_now();
    }
    if (w->term_at && !r->killed && now >= w->term_at + s->grace_s) {
        signal_run(w, SIGKILL);
        r->killed = 1;
    }
    double next = 0.001 * TICK_MS;
    if (w->deadline && !r->deadline_hit && w->deadline - now < next)
        next = w->deadline - now;
    if (w->term_at && !r->killed && w->term_at + s->grace_s - now < next)
        next = w->term_at + s->grace_s - now;
    return next;
}

/* Whether the start mark has come through fd 3 (its pipe is closed once it
 * has, or at EOF). */
static void read_mark(proc_result *r, watch *w)
{
    if (w->mark_fd < 0)
        return;
    char c;
    ssize_t n = read(w->mark_fd, &c, 1);
    if (n > 0)
        r->started = 1;
    if (n > 0 || n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(w->mark_fd);
        w->mark_fd = -1;
    }
}

/* Until the leader exits: keep the deadline, read both pipes into their
 * logs, and kill the group at once when the output floods. */
static void watch_until_exit(const proc_spec *s, proc_result *r, watch *w)
{
    int leader_done = 0;
    while (!leader_done) {
        double next = enforce_deadline(s, r, w, timer_now());
        enforce_limits(s, r, w, timer_now());
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
            if (w->tree)
                kill_tree_until_gone(w);
            else
                kill(-w->pid, SIGKILL);
        }
        read_mark(r, w);
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
static void drain_after_exit(const proc_spec *s, proc_result *r, watch *w)
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

int proc_run(const proc_spec *s, proc_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    r->out.fd = r->err.fd = -1;
    int p[8];
    watch w = {0};
    if (open_logs_and_pipes(s, r, p, err) || start_child(s, r, p, &w, err))
        return -1;
    watch_until_exit(s, r, &w);
    read_mark(r, &w);
    if (w.mark_fd >= 0)
        close(w.mark_fd);
    if (w.pidfd >= 0)
        close(w.pidfd);
    record_status(s, r, w.status);
    /* what the run leaves counts too: one last look at the disk */
    w.ended = 1;
    w.next_disk_poll = 0;
    enforce_limits(s, r, &w, timer_now());
    kill_strays(w.pid, r);
    /* the namespace dies with its first process; this only makes sure of it */
    if (w.tree && proc_pid_ns_kill(w.inner_ns, 2.0) > 0)
        r->strays = 1;
    if (w.tree) /* bwrap's first process in the namespace may have come to the judge as an orphan */
        proc_reap_zombie_children();
    drain_after_exit(s, r, &w);
    r->exec_errno = w.exec_errno;
    if (!w.ended_called && !w.exec_errno && s->at_end)
        s->at_end(s->ctx, 0);
    proc_caplog_close(&r->out);
    proc_caplog_close(&r->err);
    return 0;
}

void proc_free(proc_result *r)
{
    proc_caplog_free(&r->out);
    proc_caplog_free(&r->err);
}

void proc_describe(const proc_result *r, char *out, size_t n)
{
    if (r->exec_errno)
        text_fmt(out, n, "could not start: %s", strerror(r->exec_errno));
    else if (r->exited)
        text_fmt(out, n, "exited with status %d", r->exit_code);
    else
        text_fmt(out, n, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
}
