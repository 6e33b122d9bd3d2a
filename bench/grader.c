/* grader: the judge's side of the reactive benchmark (Merry). Runs outside the sandbox.
 *
 * Usage: grader [-c GRADER_CPU,SOLUTION_CPU] QUERIES PROGRAM [ARGS...]
 *
 * Starts PROGRAM (the solution, natively or as `warden run ... -- solution`) with its stdin and
 * stdout connected to two pipes, sends QUERIES pseudo-random numbers (a fixed seed), one per line,
 * each with one write(2), and reads and checks each answer (x*x mod 1000000007) before sending the
 * next. Then it closes the solution's stdin, reads its final `rusage TOTAL_US MAIN_US` line and
 * waits for it. Prints
 *   WALL_NS TOTAL_US MAIN_US
 * (wall time of the query loop; the solution's own CPU time report). Exits 1 on a wrong or missing
 * answer or if the program fails. With -c, the grader pins itself to GRADER_CPU and the program
 * (and whatever it starts: warden, its agent, the solution) to SOLUTION_CPU. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
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

static int from_fd;
static char buf[4096];
static size_t have, at;

/* Reads one line (without its newline) into line; returns its length, or -1 at EOF/error. */
static int read_line(char *line, size_t cap) {
    size_t n = 0;
    for (;;) {
        if (at == have) {
            ssize_t r = read(from_fd, buf, sizeof buf);
            if (r <= 0)
                return -1;
            have = (size_t)r;
            at = 0;
        }
        char c = buf[at++];
        if (c == '\n') {
            line[n] = 0;
            return (int)n;
        }
        if (n + 1 >= cap)
            return -1;
        line[n++] = c;
    }
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) < 0) {
        perror("grader: sched_setaffinity");
        _exit(1);
    }
}

int main(int argc, char **argv) {
    int grader_cpu = -1, solution_cpu = -1;
    if (argc > 2 && strcmp(argv[1], "-c") == 0) {
        if (sscanf(argv[2], "%d,%d", &grader_cpu, &solution_cpu) != 2 || grader_cpu < 0 ||
            solution_cpu < 0) {
            fprintf(stderr, "grader: -c needs GRADER_CPU,SOLUTION_CPU\n");
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: grader [-c GRADER_CPU,SOLUTION_CPU] QUERIES PROGRAM [ARGS...]\n");
        return 2;
    }
    long queries = atol(argv[1]);
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0) {
        perror("grader: pipe");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = fork();
    if (pid < 0) {
        perror("grader: fork");
        return 1;
    }
    if (pid == 0) {
        if (solution_cpu >= 0)
            pin(solution_cpu);
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execv(argv[2], argv + 2);
        perror("grader: exec");
        _exit(127);
    }
    if (grader_cpu >= 0)
        pin(grader_cpu);
    close(to[0]);
    close(from[1]);
    from_fd = from[0];
    unsigned long long state = 0x9e3779b97f4a7c15ULL;
    char out[32], line[128];
    int bad = 0;
    long long t0 = now_ns();
    for (long i = 0; i < queries && !bad; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned long long x = (state >> 33) % 1000000000ULL;
        int n = snprintf(out, sizeof out, "%llu\n", x);
        if (write(to[1], out, (size_t)n) != n) {
            fprintf(stderr, "grader: query %ld: the solution stopped reading\n", i);
            bad = 1;
            break;
        }
        if (read_line(line, sizeof line) < 0) {
            fprintf(stderr, "grader: query %ld: no answer\n", i);
            bad = 1;
            break;
        }
        if (strtoull(line, NULL, 10) != x * x % 1000000007ULL) {
            fprintf(stderr, "grader: query %ld: wrong answer %s to %llu\n", i, line, x);
            bad = 1;
        }
    }
    long long t1 = now_ns();
    close(to[1]);
    long long total = -1, in_main = -1;
    if (!bad) {
        if (read_line(line, sizeof line) < 0 || sscanf(line, "rusage %lld %lld", &total, &in_main) != 2) {
            fprintf(stderr, "grader: no rusage line from the solution\n");
            bad = 1;
        }
    }
    close(from[0]);
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "grader: the solution failed (status 0x%x)\n", status);
        bad = 1;
    }
    if (bad)
        return 1;
    printf("%lld %lld %lld\n", t1 - t0, total, in_main);
    return 0;
}
