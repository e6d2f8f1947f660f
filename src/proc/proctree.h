/* proctree.h - the processes descended from one process, as /proc shows
 * them: how many (threads included), how much memory, and signals to all of
 * them. A sandboxed run keeps every process of a submission a descendant of
 * the sandbox's first process (its PID namespace reaps orphans inside it, a
 * setsid child included), so this is how the judge counts, freezes and ends
 * one (judge/runner.h). Linux only; nothing else lives here. */
#ifndef TEMPO_PROC_PROCTREE_H
#define TEMPO_PROC_PROCTREE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int processes;          /* root and its descendants alive now (zombies not counted) */
    long tasks;             /* their threads, summed (what RLIMIT_NPROC counts) */
    uint64_t rss_bytes;     /* their resident memory, summed (shared pages count in each) */
    uint64_t max_vm_bytes;  /* the largest address space among them (what RLIMIT_AS caps) */
} proc_tree_stats;

/* The figures of root's tree now; 0, or -1 when /proc cannot be read. */
int proc_tree_stats_get(pid_t root, proc_tree_stats *st);

/* Send sig to root and every descendant alive now; returns how many were
 * signalled (0 when the tree is gone). */
int proc_tree_signal(pid_t root, int sig);

/* The same for the descendants min_depth or more levels below root (1:
 * its children, ...): a sandbox's own processes (bwrap and the namespace's
 * first process, depths 0 and 1) are spared a SIGTERM meant for the run. */
int proc_tree_signal_below(pid_t root, int min_depth, int sig);

/* SIGSTOP root and every descendant, scanning again until every one of them
 * (children forked meanwhile included) is stopped. Returns 0 then, or -1
 * when that did not happen within timeout_s (the tree keeps running). */
int proc_tree_freeze(pid_t root, double timeout_s);

/* The PID namespace (its inode) of the first descendant of root that is in
 * another namespace than root: a sandbox's, once it has started; 0 if none. */
uint64_t proc_tree_inner_pid_ns(pid_t root);

/* SIGKILL every process of the PID namespace ns (proc_tree_inner_pid_ns)
 * until none is left, for at most timeout_s; returns how many were found
 * the first time (0: the namespace was already empty). */
int proc_pid_ns_kill(uint64_t ns, double timeout_s);

/* Reap the calling process's zombie children (a sandbox's first process
 * re-parented to the judge, a child subreaper, when bwrap exits first);
 * returns how many. */
int proc_reap_zombie_children(void);

#endif
