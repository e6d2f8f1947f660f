/* child_stops.h - a piece of a test run in a child process, for the checks
 * that something stops the process (a sanitizer's report, an abort): the
 * child's stderr is collected and the parent says whether it stopped.
 * Header-only; C and C++ (test_cuda_kernels.c, test_emulator.cpp). */
#ifndef TEMPO_CHILD_STOPS_H
#define TEMPO_CHILD_STOPS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn(ctx) in a child whose stderr goes into buf (cap bytes, NUL
 * terminated); returns whether the child stopped: a signal, or a non-zero
 * exit (fn's own or one that fn calls); a child that returns from fn exits 0.
 * 0 when no child could be started. */
static inline int child_stops(void (*fn)(void *ctx), void *ctx, char *buf, size_t cap)
{
    int fd[2];
    buf[0] = 0;
    if (pipe(fd))
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return 0;
    }
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn(ctx);
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t k;
    while (n < cap - 1 && (k = read(fd[0], buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif
