/* walkbench: stat of one path, many times, for the agent's per-call work on walks (bench/run.sh
 * --only agent).
 *
 * Usage: walkbench PATH [ITERATIONS]
 *
 * Calls stat(PATH) ITERATIONS times (after a short warm-up) from the current directory, so a
 * relative PATH is looked up from there, and prints one line:
 *   stat NS_PER_OP ERRNO
 * where ERRNO is 0 when the calls succeeded, else the errno of the last one. Every call is one
 * request to the agent under `warden run --view off`; its report's agent-time and agent-cpu
 * divided by the delegated stats are the agent's own work per walk. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: walkbench PATH [ITERATIONS]\n");
        return 2;
    }
    const char *path = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 5000;
    if (n < 1)
        n = 1;
    struct stat st;
    int err = 0;
    for (long i = 0; i < n / 10 + 1; i++)
        err = stat(path, &st) == 0 ? 0 : errno;
    long long t0 = now_ns();
    for (long i = 0; i < n; i++)
        err = stat(path, &st) == 0 ? 0 : errno;
    long long t1 = now_ns();
    printf("stat %.1f %d\n", (double)(t1 - t0) / (double)n, err);
    return 0;
}
