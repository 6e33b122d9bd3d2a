/* limit_cpu: CPU-bound workloads for the limits suite (issue #4). Runs inside the sandbox.
 *
 *   limit_cpu spin SEC          spin until this process has used SEC s of CPU ("inf": forever)
 *   limit_cpu work N            N iterations of a fixed computation (a deterministic amount of
 *                               work for comparing CPU time natively and under warden); prints
 *                               "work RESULT cpu_us=T", T its own user+sys CPU time at the end
 *   limit_cpu forkwork N K      K children do N/K iterations each; the parent only waits, then
 *                               prints "forkwork done cpu_us=T", T its own and its children's
 *   limit_cpu forkspin K SEC    K children and the parent each spin SEC s of CPU ("inf")
 *   limit_cpu forkchain SEC     forever: fork a child that spins SEC s of CPU and exits, reap
 *                               it, start the next (no process ever holds much CPU time)
 *   limit_cpu orphanchain SEC   the same, but each spinner is an orphan (its parent exits at
 *                               once) that the sandbox's init reaps
 *
 * The spinning modes ignore SIGXCPU and SIGTERM: only SIGKILL stops them early.
 * Prints one line when done ("spun", "work", ...); exits 0, or 3 on bad usage or a failed
 * child. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long long sink;

/* user+sys of RUSAGE_SELF or RUSAGE_CHILDREN, in microseconds. */
static long long rusage_us(int who) {
    struct rusage ru;
    getrusage(who, &ru);
    return (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static void spin(double sec) {
    signal(SIGXCPU, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    unsigned long long x = 88172645463325252ULL;
    for (;;) {
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        sink = x;
        if (sec >= 0 && cpu_seconds() >= sec)
            return;
    }
}

static unsigned long long work(long long n) {
    unsigned long long x = 88172645463325252ULL, acc = 0;
    for (long long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc += x % 1000003ULL;
    }
    sink = acc;
    return acc;
}

static double parse_sec(const char *s) {
    return strcmp(s, "inf") == 0 ? -1.0 : atof(s);
}

static int wait_all(int k) {
    int bad = 0;
    for (int i = 0; i < k; i++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    }
    return bad;
}

/* fork(2), saying why on stdout when it fails (the caller then exits 3). */
static pid_t fork_or_say(void) {
    pid_t p = fork();
    if (p < 0)
        printf("fork: %s\n", strerror(errno));
    return p;
}

/* What each forked child does before it exits 0: spin SEC s of CPU, or N iterations of work. */
struct job {
    int spin;
    double sec;
    long long n;
};

/* Forks K children that each do JOB. Returns 0, or -1 when a fork fails. */
static int fork_children(int k, struct job job) {
    for (int i = 0; i < k; i++) {
        pid_t p = fork_or_say();
        if (p < 0)
            return -1;
        if (p == 0) {
            if (job.spin)
                spin(job.sec);
            else
                work(job.n);
            _exit(0);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 3 && strcmp(argv[1], "spin") == 0) {
        spin(parse_sec(argv[2]));
        printf("spun %s\n", argv[2]);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "work") == 0) {
        unsigned long long r = work(atoll(argv[2]));
        printf("work %llu cpu_us=%lld\n", r, rusage_us(RUSAGE_SELF));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "forkwork") == 0) {
        long long n = atoll(argv[2]);
        int k = atoi(argv[3]);
        if (fork_children(k, (struct job){.n = n / k}) < 0 || wait_all(k))
            return 3;
        printf("forkwork done cpu_us=%lld\n", rusage_us(RUSAGE_SELF) + rusage_us(RUSAGE_CHILDREN));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "forkspin") == 0) {
        int k = atoi(argv[2]);
        double sec = parse_sec(argv[3]);
        if (fork_children(k, (struct job){.spin = 1, .sec = sec}) < 0)
            return 3;
        spin(sec);
        if (wait_all(k))
            return 3;
        printf("forkspin done\n");
        return 0;
    }
    if (argc == 3 && (strcmp(argv[1], "forkchain") == 0 || strcmp(argv[1], "orphanchain") == 0)) {
        int orphans = argv[1][0] == 'o';
        double sec = parse_sec(argv[2]);
        for (long i = 1;; i++) {
            int done[2];
            if (pipe(done) < 0)
                return 3;
            pid_t p = fork_or_say();
            if (p < 0)
                return 3;
            if (p == 0) {
                close(done[0]);
                if (orphans && fork() != 0)
                    _exit(0); /* the spinner is the grandchild, holding done[1] */
                spin(sec);
                _exit(0);
            }
            close(done[1]);
            waitpid(p, NULL, 0);
            char c;
            while (read(done[0], &c, 1) > 0) /* EOF when the spinner has exited */
                ;
            close(done[0]);
            printf("spinners %ld\n", i);
        }
    }
    fprintf(stderr, "usage: limit_cpu spin SEC | work N | forkwork N K | forkspin K SEC | "
                    "forkchain SEC | orphanchain SEC\n");
    return 3;
}
