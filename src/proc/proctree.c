/* proctree.c - see proctree.h. One pass reads /proc/<pid>/stat of every
 * process (pid, state, parent, threads, address space, resident pages),
 * then marks the descendants of the root by following parents. */
#include "proc/proctree.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"

typedef struct {
    pid_t pid, ppid;
    char state;
    long threads;
    uint64_t vm_bytes, rss_pages;
    int in_tree;            /* 0: not known yet, 1: in the tree, 2: not */
} proc_row;

typedef struct {
    proc_row *rows;
    size_t n, cap;
} proc_table;

/* One /proc/<pid>/stat into r; 0, or -1 when the process is gone. */
static int read_stat(pid_t pid, proc_row *r)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and ')' */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -1;
    p += 2;
    r->pid = pid;
    r->state = *p;
    /* fields after comm, counted from 3 (state): ppid 4, num_threads 20, vsize 23, rss 24 */
    long long ppid = 0, threads = 0;
    unsigned long long vsize = 0, rss = 0;
    int field = 3;
    for (char *tok = p; *tok && field <= 24; field++) {
        char *end = strchr(tok, ' ');
        if (field == 4)
            ppid = strtoll(tok, NULL, 10);
        else if (field == 20)
            threads = strtoll(tok, NULL, 10);
        else if (field == 23)
            vsize = strtoull(tok, NULL, 10);
        else if (field == 24)
            rss = strtoull(tok, NULL, 10);
        if (!end)
            break;
        tok = end + 1;
    }
    r->ppid = (pid_t)ppid;
    r->threads = threads > 0 ? threads : 1;
    r->vm_bytes = vsize;
    r->rss_pages = rss;
    r->in_tree = 0;
    return 0;
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const proc_row *)a)->pid, y = ((const proc_row *)b)->pid;
    return (x > y) - (x < y);
}

/* Every process now, with root's tree marked (in_tree 1; 2: not in it). 0, or -1 (no /proc, no memory). */
static int scan(pid_t root, proc_table *t)
{
    t->n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 1024;
            proc_row *rows = realloc(t->rows, cap * sizeof *rows);
            if (!rows) {
                closedir(d);
                return -1;
            }
            t->rows = rows;
            t->cap = cap;
        }
        if (read_stat((pid_t)atol(e->d_name), &t->rows[t->n]) == 0)
            t->n++;
    }
    closedir(d);
    /* sorted by pid, each row's parent is a binary search away; a row's
     * membership is its parent's, resolved up the chain once (memoised) */
    qsort(t->rows, t->n, sizeof *t->rows, by_pid);
    for (size_t i = 0; i < t->n; i++)
        t->rows[i].in_tree = t->rows[i].pid == root ? 1 : 0;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = i, hops = 0;
        int verdict = -1;
        while (verdict < 0) {
            proc_row *r = &t->rows[j];
            if (r->in_tree)
                verdict = r->in_tree == 1;
            else if (r->ppid <= 0 || ++hops > t->n)
                verdict = 0;
            else {
                proc_row key = {.pid = r->ppid}, *parent = bsearch(&key, t->rows, t->n, sizeof *t->rows, by_pid);
                if (!parent)
                    verdict = 0;
                else
                    j = (size_t)(parent - t->rows);
            }
        }
        /* write the verdict down the chain walked from i */
        for (size_t k = i, h = 0; h <= hops && !t->rows[k].in_tree; h++) {
            t->rows[k].in_tree = verdict ? 1 : 2;
            proc_row key = {.pid = t->rows[k].ppid}, *parent = bsearch(&key, t->rows, t->n, sizeof *t->rows, by_pid);
            if (!parent)
                break;
            k = (size_t)(parent - t->rows);
        }
    }
    return 0;
}

static int gone(char state)
{
    return state == 'Z' || state == 'X' || state == 'x';
}

int proc_tree_stats_get(pid_t root, proc_tree_stats *st)
{
    memset(st, 0, sizeof *st);
    proc_table t = {0};
    if (scan(root, &t)) {
        free(t.rows);
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < t.n; i++) {
        const proc_row *r = &t.rows[i];
        if (r->in_tree != 1 || gone(r->state))
            continue;
        st->processes++;
        st->tasks += r->threads;
        st->rss_bytes += r->rss_pages * (uint64_t)(page > 0 ? page : 4096);
        if (r->vm_bytes > st->max_vm_bytes)
            st->max_vm_bytes = r->vm_bytes;
    }
    free(t.rows);
    return 0;
}

/* How many parents up row i's root is (0: the root itself); the table is
 * sorted by pid and i is in the tree. */
static int depth_of(const proc_table *t, size_t i, pid_t root)
{
    int depth = 0;
    for (pid_t pid = t->rows[i].pid; pid != root && depth <= (int)t->n; depth++) {
        proc_row key = {.pid = pid}, *r = bsearch(&key, t->rows, t->n, sizeof *t->rows, by_pid);
        if (!r)
            break;
        pid = r->ppid;
    }
    return depth;
}

int proc_tree_signal_below(pid_t root, int min_depth, int sig)
{
    proc_table t = {0};
    int n = 0;
    if (scan(root, &t) == 0)
        for (size_t i = 0; i < t.n; i++)
            if (t.rows[i].in_tree == 1 && !gone(t.rows[i].state) &&
                (min_depth == 0 || depth_of(&t, i, root) >= min_depth) && kill(t.rows[i].pid, sig) == 0)
                n++;
    free(t.rows);
    return n;
}

int proc_tree_signal(pid_t root, int sig)
{
    return proc_tree_signal_below(root, 0, sig);
}

int proc_tree_freeze(pid_t root, double timeout_s)
{
    proc_table t = {0};
    double until = timer_now() + timeout_s;
    int rc = -1;
    for (;;) {
        if (scan(root, &t))
            break;
        int running = 0;
        for (size_t i = 0; i < t.n; i++) {
            const proc_row *r = &t.rows[i];
            if (r->in_tree != 1 || gone(r->state) || r->state == 'T' || r->state == 't')
                continue;
            running++;
            kill(r->pid, SIGSTOP);
        }
        if (!running) {
            rc = 0;
            break;
        }
        if (timer_now() > until)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    free(t.rows);
    return rc;
}

/* The inode of /proc/<pid>/ns/pid, or 0. */
static uint64_t pid_ns_of(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

uint64_t proc_tree_inner_pid_ns(pid_t root)
{
    uint64_t outer = pid_ns_of(root), inner = 0;
    proc_table t = {0};
    if (outer && scan(root, &t) == 0)
        for (size_t i = 0; i < t.n && !inner; i++)
            if (t.rows[i].in_tree == 1 && !gone(t.rows[i].state)) {
                uint64_t ns = pid_ns_of(t.rows[i].pid);
                if (ns && ns != outer)
                    inner = ns;
            }
    free(t.rows);
    return inner;
}

int proc_pid_ns_kill(uint64_t ns, double timeout_s)
{
    if (!ns)
        return 0;
    double until = timer_now() + timeout_s;
    int first = -1;
    for (;;) {
        int found = 0;
        DIR *d = opendir("/proc");
        if (!d)
            break;
        struct dirent *e;
        while ((e = readdir(d)))
            if (isdigit((unsigned char)e->d_name[0])) {
                pid_t pid = (pid_t)atol(e->d_name);
                if (pid_ns_of(pid) == ns) {
                    proc_row r;
                    if (read_stat(pid, &r) == 0 && !gone(r.state)) {
                        found++;
                        kill(pid, SIGKILL);
                    }
                }
            }
        closedir(d);
        if (first < 0)
            first = found;
        if (!found || timer_now() > until)
            break;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return first < 0 ? 0 : first;
}

int proc_reap_zombie_children(void)
{
    proc_table t = {0};
    pid_t self = getpid();
    int n = 0;
    if (scan(self, &t) == 0)
        for (size_t i = 0; i < t.n; i++)
            if (t.rows[i].ppid == self && gone(t.rows[i].state) && waitpid(t.rows[i].pid, NULL, WNOHANG) > 0)
                n++;
    free(t.rows);
    return n;
}
