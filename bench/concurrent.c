/* concurrent: start N copies of a command at once and time each from launch to exit.
 *
 * Usage: concurrent N OUTFILE COMMAND [ARGS...]
 *
 * Forks N children first; each waits on a pipe, so that none starts before the last is forked.
 * Then the clock is read and the pipe closed: every child sets stdin to /dev/null and stdout and
 * stderr to OUTFILE (opened O_APPEND, shared by all) and execs COMMAND. The parent reaps them with
 * waitpid(-1) and reads the clock as each returns. Prints
 *   total NS          from the release to the last child reaped
 *   NS                one line per child: from the release to its reaping (its start's latency)
 * and exits 1 if any child did not exit 0 (after reaping all of them), 2 on a usage or system
 * error. Timing in C, not in the harness: Python's own cost per child would be of the order of the
 * run being measured. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: concurrent N OUTFILE COMMAND [ARGS...]\n");
        return 2;
    }
    long n = atol(argv[1]);
    if (n < 1 || n > 100000) {
        fprintf(stderr, "concurrent: N must be between 1 and 100000\n");
        return 2;
    }
    int out = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) {
        perror("concurrent: OUTFILE");
        return 2;
    }
    long long *lat = calloc((size_t)n, sizeof *lat);
    int gate[2];
    if (!lat || pipe2(gate, O_CLOEXEC) != 0) {
        perror("concurrent");
        return 2;
    }
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("concurrent: fork");
            return 2; /* the children forked so far read EOF, run and are reparented */
        }
        if (pid == 0) {
            char c;
            close(gate[1]);
            while (read(gate[0], &c, 1) < 0 && errno == EINTR)
                ;
            int in = open("/dev/null", O_RDONLY);
            if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
                _exit(126);
            execv(argv[3], argv + 3);
            dprintf(2, "concurrent: exec %s: %m\n", argv[3]);
            _exit(127);
        }
    }
    close(gate[0]);
    long long t0 = now_ns();
    close(gate[1]); /* every child's read returns: they all start now */
    long failed = 0;
    for (long i = 0; i < n; i++) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, 0)) < 0 && errno == EINTR)
            ;
        if (pid < 0) {
            perror("concurrent: waitpid");
            return 2;
        }
        lat[i] = now_ns() - t0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (failed++ == 0)
                fprintf(stderr, "concurrent: a child %s %d\n",
                        WIFEXITED(status) ? "exited" : "was killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        }
    }
    printf("total %lld\n", lat[n - 1]);
    for (long i = 0; i < n; i++)
        printf("%lld\n", lat[i]);
    if (failed) {
        fprintf(stderr, "concurrent: %ld of %ld children failed\n", failed, n);
        return 1;
    }
    return 0;
}
