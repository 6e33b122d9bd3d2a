/* limit_tty N: opens /dev/tty for writing and writes N bytes of 'Z' to it, for the test that
 * the terminal does not bypass --stdout and --output-limit (issue 18 item 4). Runs inside the
 * sandbox.
 *
 * Prints one short line on stdout: "tty=ERRNO" when the open fails (ENXIO for a process without
 * a controlling terminal), else "tty=OK wrote=N" (or "tty=OK write=ERRNO wrote=N" when a write
 * fails). Exits 0, or 3 when a write fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: limit_tty N\n");
        return 3;
    }
    long n = atol(argv[1]);
    int fd = open("/dev/tty", O_WRONLY);
    if (fd < 0) {
        printf("tty=%s\n", strerrorname_np(errno));
        return 0;
    }
    static char buf[4096];
    memset(buf, 'Z', sizeof buf);
    long done = 0;
    while (done < n) {
        size_t chunk = n - done < (long)sizeof buf ? (size_t)(n - done) : sizeof buf;
        ssize_t w = write(fd, buf, chunk);
        if (w <= 0) {
            printf("tty=OK write=%s wrote=%ld\n", strerrorname_np(errno), done);
            return 3;
        }
        done += w;
    }
    printf("tty=OK wrote=%ld\n", done);
    return 0;
}
