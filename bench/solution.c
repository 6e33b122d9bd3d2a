/* solution: the contestant's side of the reactive benchmark (Merry). Runs inside the sandbox.
 *
 * Reads queries, one decimal number per line, from stdin and answers each with one line on
 * stdout: x*x mod 1000000007. Uses read(2) and write(2) directly (no stdio buffering), one write
 * per answer, so every query costs the solution one read and one write system call. At end of
 * input it writes one more line,
 *   rusage TOTAL_US MAIN_US
 * where TOTAL_US is its own user+sys CPU time (getrusage(RUSAGE_SELF)) at exit, in microseconds,
 * which is what a judge measures, and MAIN_US the part spent after main() started. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long long cpu_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static int write_all(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(void) {
    long long start = cpu_us();
    char in[65536], out[64];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(0, in + len, sizeof in - len);
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
            if (write_all(out, (size_t)n) < 0)
                return 1;
            pos = (size_t)(nl - in) + 1;
        }
        memmove(in, in + pos, len - pos);
        len -= pos;
        if (len == sizeof in)
            return 1; /* a line longer than the buffer: not a query */
    }
    long long end = cpu_us();
    char line[96];
    int n = snprintf(line, sizeof line, "rusage %lld %lld\n", end, end - start);
    return write_all(line, (size_t)n) < 0 ? 1 : 0;
}
