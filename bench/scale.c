/* scale: open+close of many files, split over many processes (Ostia T4).
 *
 * Usage: scale DIR NFILES NPROCS TOTAL
 *
 * DIR holds the files f0 .. f(NFILES-1). The parent starts a clock, forks NPROCS children, each of
 * which opens (O_RDONLY) and closes TOTAL/NPROCS of those files in a loop (child i starts at file
 * i and walks round-robin), waits for all of them and stops the clock. It prints
 *   NS_TOTAL OPENS
 * (wall time from before the first fork to after the last wait, and the number of opens done).
 * Any failed open makes the child, and then the parent, exit 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: scale DIR NFILES NPROCS TOTAL\n");
        return 2;
    }
    const char *dir = argv[1];
    long nfiles = atol(argv[2]), nprocs = atol(argv[3]), total = atol(argv[4]);
    if (nfiles < 1 || nprocs < 1 || total < nprocs) {
        fprintf(stderr, "scale: need NFILES >= 1, NPROCS >= 1, TOTAL >= NPROCS\n");
        return 2;
    }
    /* Paths are built before the clock starts: the loop is open+close and nothing else. */
    char **paths = calloc((size_t)nfiles, sizeof *paths);
    for (long i = 0; i < nfiles; i++) {
        if (asprintf(&paths[i], "%s/f%ld", dir, i) < 0) {
            perror("scale: asprintf");
            return 1;
        }
    }
    long per = total / nprocs;
    fflush(stdout);
    long long t0 = now_ns();
    for (long p = 0; p < nprocs; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("scale: fork");
            return 1;
        }
        if (pid == 0) {
            long f = p % nfiles;
            for (long i = 0; i < per; i++) {
                int fd = open(paths[f], O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                    fprintf(stderr, "scale: open %s: %s\n", paths[f], strerror(errno));
                    _exit(1);
                }
                close(fd);
                if (++f == nfiles)
                    f = 0;
            }
            _exit(0);
        }
    }
    int failed = 0, status;
    for (long p = 0; p < nprocs; p++) {
        if (wait(&status) < 0) {
            perror("scale: wait");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    long long t1 = now_ns();
    if (failed) {
        fprintf(stderr, "scale: a child failed\n");
        return 1;
    }
    printf("%lld %ld\n", t1 - t0, per * nprocs);
    return 0;
}
