/* The answering loop of an interactive (reactive) task, shared by the benchmark's solution
 * (bench/solution.c) and the tests' (tests/c/limit_solution.c).
 *
 * Reads queries, one decimal number per line, from in_fd and answers each with one line,
 * x*x mod 1000000007, on out_fd: read(2) and write(2) directly (no stdio buffering), one write per
 * answer, so every query costs one read and one write system call. Returns 0 at end of input, 1
 * on an I/O error or a line longer than the buffer (not a query). */
#ifndef WARDEN_REACTIVE_H
#define WARDEN_REACTIVE_H
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int reactive_write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int answer_queries(int in_fd, int out_fd) {
    static char in[65536];
    char out[64];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(in_fd, in + len, sizeof in - len);
        if (r < 0)
            return 1;
        if (r == 0)
            return 0;
        len += (size_t)r;
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(in + pos, '\n', len - pos);
            if (!nl)
                break;
            unsigned long long x = 0;
            for (char *c = in + pos; c < nl; c++)
                x = x * 10 + (unsigned)(*c - '0');
            int n = snprintf(out, sizeof out, "%llu\n", x * x % 1000000007ULL);
            if (reactive_write_all(out_fd, out, (size_t)n) < 0)
                return 1;
            pos = (size_t)(nl - in) + 1;
        }
        memmove(in, in + pos, len - pos);
        len -= pos;
        if (len == sizeof in)
            return 1;
    }
}
#endif
