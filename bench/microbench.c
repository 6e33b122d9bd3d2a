/* microbench: per-call cost of a few system calls, to compare native with `warden run`.
 *
 * Usage: microbench ALLOWED_FILE DENIED_FILE [ITERATIONS]
 *
 * Loops ITERATIONS times (geteuid: 50x that, it is cheap) over each of:
 *   geteuid      the cheapest syscall: what any seccomp filter adds
 *   open_close   open(ALLOWED_FILE, O_RDONLY) + close
 *   stat         stat(ALLOWED_FILE)
 *   getcwd       getcwd() into a buffer (a direct call under warden: never leaves the kernel)
 *   open_denied  open(DENIED_FILE, O_RDONLY) (+ close if it succeeds, as it does natively)
 * after a short warm-up of each, and prints one line per benchmark:
 *   NAME NS_PER_OP ERRNO
 * where ERRNO is 0 when the call succeeded, else the errno of the last iteration (so the harness
 * can check that the denied open really was denied under warden, and the others were not). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *allowed, *denied;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int op_geteuid(void) {
    volatile uid_t u = geteuid();
    (void)u;
    return 0;
}

static int op_open_close(void) {
    int fd = open(allowed, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static int op_stat(void) {
    struct stat st;
    return stat(allowed, &st) == 0 ? 0 : errno;
}

static int op_getcwd(void) {
    char buf[4096];
    return getcwd(buf, sizeof buf) ? 0 : errno;
}

static int op_open_denied(void) {
    int fd = open(denied, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static void bench(const char *name, int (*op)(void), long iters) {
    int err = 0;
    for (long i = 0; i < iters / 20 + 1; i++)
        err = op();
    long long t0 = now_ns();
    for (long i = 0; i < iters; i++)
        err = op();
    long long t1 = now_ns();
    printf("%s %.1f %d\n", name, (double)(t1 - t0) / (double)iters, err);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: microbench ALLOWED_FILE DENIED_FILE [ITERATIONS]\n");
        return 2;
    }
    allowed = argv[1];
    denied = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 20000;
    if (n < 1) {
        fprintf(stderr, "microbench: ITERATIONS must be positive\n");
        return 2;
    }
    bench("geteuid", op_geteuid, n * 50);
    bench("open_close", op_open_close, n);
    bench("stat", op_stat, n);
    bench("getcwd", op_getcwd, n);
    bench("open_denied", op_open_denied, n);
    return 0;
}
