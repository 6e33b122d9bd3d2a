/* limit_output OUT [ERR]: writes OUT bytes to stdout, then ERR bytes to stderr, in 64 KiB
 * writes (issue #4). Runs inside the sandbox. Byte i of each stream is (i % 251), so the test
 * can check the exact content. Exits 0, or 3 when a write fails. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int emit(int fd, long long n) {
    static unsigned char buf[65536];
    long long done = 0;
    while (done < n) {
        size_t chunk = n - done < (long long)sizeof buf ? (size_t)(n - done) : sizeof buf;
        for (size_t i = 0; i < chunk; i++)
            buf[i] = (unsigned char)((done + (long long)i) % 251);
        size_t off = 0;
        while (off < chunk) {
            ssize_t w = write(fd, buf + off, chunk - off);
            if (w <= 0)
                return -1;
            off += (size_t)w;
        }
        done += (long long)chunk;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: limit_output OUT [ERR]\n");
        return 3;
    }
    if (emit(1, atoll(argv[1])) < 0)
        return 3;
    if (argc == 3 && emit(2, atoll(argv[2])) < 0)
        return 3;
    return 0;
}
