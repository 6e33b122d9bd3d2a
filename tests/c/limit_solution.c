/* limit_solution [IN_FD OUT_FD]: the sandboxed side of an interactive task (issue #4; the idea
 * of bench/solution.c). Reads queries, one decimal number per line, from IN_FD (default 0) and
 * answers each with one line, x*x mod 1000000007, on OUT_FD (default 1), one write per answer.
 * Exits 0 at end of input. If IN_FD or OUT_FD is not an open descriptor it prints
 * "bad fd N" on stderr and exits 3. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    int in_fd = argc > 1 ? atoi(argv[1]) : 0;
    int out_fd = argc > 2 ? atoi(argv[2]) : 1;
    int fds[2] = {in_fd, out_fd};
    for (int i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_GETFD) < 0) {
            fprintf(stderr, "bad fd %d\n", fds[i]);
            return 3;
        }
    }
    static char in[65536];
    char out[64];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(in_fd, in + len, sizeof in - len);
        if (r < 0)
            return 1;
        if (r == 0)
            break;
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
            if (write_all(out_fd, out, (size_t)n) < 0)
                return 1;
            pos = (size_t)(nl - in) + 1;
        }
        memmove(in, in + pos, len - pos);
        len -= pos;
        if (len == sizeof in)
            return 1;
    }
    return 0;
}
