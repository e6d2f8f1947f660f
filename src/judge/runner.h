/* runner.h - process control for the judge: run one command in its own
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
 * leaves the group (setsid) escapes this control; a cgroup would be needed
 * to catch it (not used). Nothing here knows about submissions or models. */
#ifndef TEMPO_JUDGE_RUNNER_H
#define TEMPO_JUDGE_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "judge/caplog.h"

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
    /* Called exactly once (when not NULL): with at_deadline 1 while the group
     * is stopped at the deadline, or with 0 after the group has ended before
     * it. Not called when the command could not be started. */
    void (*at_end)(void *ctx, int at_deadline);
    void *ctx;
} judge_proc_spec;

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
    judge_caplog out, err; /* closed logs with their in-memory tails */
} judge_proc_result;

/* Run the command to its end as described above. Returns 0 whatever the
 * command did (see *r); -1 only when the judge itself could not run it
 * (pipe, fork, log file), with err set. Free r with judge_proc_free. */
int judge_proc_run(const judge_proc_spec *s, judge_proc_result *r, tempo_error *err);
void judge_proc_free(judge_proc_result *r);

/* How it ended, in words: "exited with status 1", "killed by signal 11
 * (Segmentation fault)", "could not start: No such file or directory". */
void judge_proc_describe(const judge_proc_result *r, char *out, size_t n);

#endif
