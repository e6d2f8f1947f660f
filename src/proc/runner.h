/* runner.h - process control (the judge, plan --validate, git): run one command in its own
 * process group under a wall-clock deadline, resource limits and capped
 * output logs, and say precisely how it ended.
 *
 * The child: a new process group (setpgid), SIGKILL when the judge dies
 * (PR_SET_PDEATHSIG, direct child only), default signal dispositions, stdin
 * from /dev/null, stdout/stderr into pipes read by the judge, RLIMIT_AS
 * (memory; note that it counts address space: glibc's per-thread malloc
 * arenas and each thread's stack count in full), RLIMIT_FSIZE, no core
 * files, no other inherited descriptors, the given environment and folder.
 *
 * The judge, meanwhile: reads both pipes into judge/caplog.h logs; kills
 * the group at once when the output passes flood_bytes; at the deadline
 * stops the whole group (SIGSTOP), calls at_end (so the caller can take the
 * files that exist at that instant), then sends SIGTERM (and SIGCONT), and
 * SIGKILL after grace_s. When the group leader exits first, whatever is left
 * in its group is killed and at_end is called after that. The judge is made
 * a child subreaper so that such leftovers can be reaped. A process that
 * leaves the group (setsid) escapes this control.
 *
 * In tree mode (a sandboxed run: judge/sandbox.h makes argv a bwrap command
 * whose PID namespace keeps every process of the run a descendant of the
 * started one, setsid or not), the freeze, the signals and the kills act on
 * that whole tree (judge/proctree.h) instead of the process group. In either
 * mode the watch polls the limits: the tree's tasks (max_tasks), its summed
 * resident memory (tree_memory_bytes) and the bytes under the run's writable
 * folders (disk_bytes); passing one kills the run and names it in
 * proc_result.limit. Nothing here knows about submissions or models. */
#ifndef TEMPO_PROC_RUNNER_H
#define TEMPO_PROC_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "core/error.h"
#include "proc/caplog.h"

typedef struct {
    char *const *argv;          /* argv[0]: a path, or a name looked up in PATH */
    char *const *envp;          /* the child's whole environment; NULL: the judge's */
    const char *cwd;            /* the child's folder; NULL: the judge's */
    const char *stdout_log;     /* capped log files; NULL keeps only the in-memory tail */
    const char *stderr_log;
    size_t log_head_bytes;      /* per stream, written as it comes */
    size_t log_tail_bytes;      /* per stream, kept and appended at the end (>= 1) */
    uint64_t flood_bytes;       /* stdout + stderr above this: killed as flooding (0: no limit) */
    double budget_s;            /* deadline after the start; 0: none */
    double grace_s;             /* between SIGTERM and SIGKILL */
    uint64_t memory_bytes;      /* RLIMIT_AS; 0: unchanged */
    uint64_t file_bytes;        /* RLIMIT_FSIZE; 0: unchanged */
    int tree;                   /* 1: freeze/signal/kill the started process's whole tree (sandboxed runs) */
    int exit_128_is_signal;     /* 1: an exit status 128 + N means killed by signal N (bwrap reports it so) */
    int drop_uid;               /* 1: the child takes run_uid/run_gid, no supplementary groups, before exec */
    uid_t run_uid;
    gid_t run_gid;
    int no_new_privs;           /* 1: PR_SET_NO_NEW_PRIVS in the child */
    int start_mark_fd3;         /* 1: fd 3 of the child is a pipe; a byte written there sets result.started
                                 * (how a sandbox says that it was set up and the command is starting) */
    long max_tasks;             /* > 0: RLIMIT_NPROC (with PROC_NPROC_SLACK) and killed at this many tasks */
    uint64_t tree_memory_bytes; /* > 0: killed when the tree's resident memory passes it */
    const char *const *disk_dirs; /* the folders whose size disk_bytes caps */
    int n_disk_dirs;
    uint64_t disk_bytes;        /* > 0: killed when disk_dirs hold more */
    /* Called exactly once (when not NULL): with at_deadline 1 while the group
     * is stopped at the deadline, or with 0 after the group has ended before
     * it. Not called when the command could not be started. */
    void (*at_end)(void *ctx, int at_deadline);
    void *ctx;
} proc_spec;

/* Tree mode: the run's own processes start this many levels below the
 * started one (bwrap, then the PID namespace's first process, then the
 * command); the deadline's SIGTERM goes to them only. */
#define PROC_SANDBOX_DEPTH 2

/* RLIMIT_NPROC is max_tasks plus this: the kernel's cap counts every process
 * of the user, the watch's only the run's, which it kills at max_tasks. */
#define PROC_NPROC_SLACK 64

typedef enum { PROC_LIMIT_NONE, PROC_LIMIT_PROCS, PROC_LIMIT_MEMORY, PROC_LIMIT_DISK } judge_limit;

typedef struct {
    int exec_errno;        /* != 0: the command could not be started (errno of execvp) */
    int exited;            /* 1: exit_code holds the status; 0: term_signal the signal */
    int exit_code;
    int term_signal;
    int deadline_hit;      /* the group was still running at the deadline */
    int killed;            /* SIGKILL was needed: after the grace, or for flooding */
    int flooded;           /* output passed flood_bytes */
    int strays;            /* processes left in the group after the leader exited (killed) */
    double wall_s;         /* from the start to the leader's exit */
    judge_limit limit;     /* the limit the watch killed the run for */
    char limit_detail[200];/* its figures, in words */
    long peak_tasks;       /* the most tasks, resident bytes and disk bytes the watch saw */
    uint64_t peak_rss_bytes, peak_vm_bytes, peak_disk_bytes;
    int started;           /* start_mark_fd3: the mark came */
    int freeze_failed;     /* tree mode: not every process stopped at the deadline; the tree was killed first */
    proc_caplog out, err; /* closed logs with their in-memory tails */
} proc_result;

/* Run the command to its end as described above. Returns 0 whatever the
 * command did (see *r); -1 only when the judge itself could not run it
 * (pipe, fork, log file), with err set. Free r with proc_free. */
int proc_run(const proc_spec *s, proc_result *r, tempo_error *err);
void proc_free(proc_result *r);

/* How it ended, in words: "exited with status 1", "killed by signal 11
 * (Segmentation fault)", "could not start: No such file or directory". */
void proc_describe(const proc_result *r, char *out, size_t n);

#endif
