/* sandbox.h - a submission's run inside bubblewrap (bwrap, the sandbox
 * Flatpak is built on): its own user, PID, mount, network, IPC and UTS
 * namespaces, no capabilities, no_new_privs, no further user namespaces, and
 * a file system of read-only system folders plus exactly the folders the
 * judge hands over (docs/submission.md, "The sandbox"). This file builds the
 * bwrap command and prepares the folders; judge/runner.h runs it (its tree
 * mode) and judge/judge.c decides what goes in. */
#ifndef TEMPO_JUDGE_SANDBOX_H
#define TEMPO_JUDGE_SANDBOX_H

#include <sys/types.h>

#include "core/error.h"

/* The user a root judge runs submissions as (nobody on Debian). */
#define JUDGE_SANDBOX_UID 65534
#define JUDGE_SANDBOX_GID 65534
#define JUDGE_SANDBOX_MAX_BINDS 8

typedef struct {
    char bwrap[4096];  /* bwrap's path */
    int drop_uid;      /* 1: the judge is root and runs the sandbox as uid/gid */
    uid_t uid;
    gid_t gid;
} judge_sandbox;

/* What a sandboxed command sees besides the system folders (/usr, /etc,
 * /bin, /lib*, /sbin read-only; a fresh /proc and a minimal /dev). Every
 * folder appears at its own path, so the paths handed over stay valid. */
typedef struct {
    const char *ro[JUDGE_SANDBOX_MAX_BINDS];  /* read-only folders or files */
    int n_ro;
    const char *rw[JUDGE_SANDBOX_MAX_BINDS];  /* read-write folders */
    int n_rw;
    const char *tmp;        /* read-write, also at /tmp and /dev/shm */
    struct {
        const char *src, *dst;
    } files[2];             /* copies shown read-only at another path (tempo's binary and configs/) */
    int n_files;
    const char *cwd;        /* where the command starts */
} judge_sandbox_view;

/* Find bwrap ($TEMPO_BWRAP, else on PATH) and start a trial sandbox
 * (`/bin/true`) as the user runs will use. 0, or -1 with err saying why a sandbox cannot start here. */
int judge_sandbox_probe(judge_sandbox *sb, tempo_error *err);

/* The bwrap command running cmd inside view, through /bin/sh, which writes
 * the start mark to fd 3 (proc_spec.start_mark_fd3) and execs cmd
 * with fd 3 closed: a NULL-terminated array
 * (free it with free(); its strings belong to view, cmd and sb, or are
 * literals). NULL when out of memory. */
char **judge_sandbox_argv(const judge_sandbox *sb, const judge_sandbox_view *view, char *const *cmd);

/* Whether the sandbox's user can reach (search every folder above, and
 * read) each path: 0, or -1 with err naming the first folder in the way.
 * Always 0 unless drop_uid (otherwise the sandbox runs as the judge's user). */
int judge_sandbox_check_reach(const judge_sandbox *sb, const char *const *paths, int n, tempo_error *err);

/* Give the folder dir and everything under it (no link followed) to the
 * sandbox's user, so that a run can write there. No-op unless drop_uid. */
int judge_sandbox_give(const judge_sandbox *sb, const char *dir, tempo_error *err);

#endif
