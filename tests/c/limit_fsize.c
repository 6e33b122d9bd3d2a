/* limit_fsize BYTES: writes BYTES bytes to $TMPDIR/limit_fsize.out in 64 KiB chunks (issue #4).
 * Runs inside the sandbox. Prints "wrote N" and exits 0; a failed write prints "write failed at
 * N: ERRNO" and exits 3 (with RLIMIT_FSIZE the default SIGXFSZ kills it first).
 *
 * limit_fsize truncate BYTES: creates the file empty and extends it with truncate(2) on its
 * path (a call the agent performs), SIGXFSZ ignored; prints "truncate=OK|ERRNO size=N" and
 * exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *dir = getenv("TMPDIR");
    if (argc == 3 && strcmp(argv[1], "truncate") == 0 && dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/limit_fsize.out", dir);
        signal(SIGXFSZ, SIG_IGN);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            printf("open %s: %s\n", path, strerrorname_np(errno));
            return 3;
        }
        close(fd);
        int r = truncate(path, (off_t)atoll(argv[2]));
        const char *res = r == 0 ? "OK" : strerrorname_np(errno);
        struct stat st;
        long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
        printf("truncate=%s size=%lld\n", res, size);
        return 0;
    }
    if (argc != 2 || !dir) {
        fprintf(stderr, "usage: limit_fsize BYTES (with TMPDIR set)\n");
        return 3;
    }
    long long want = atoll(argv[1]);
    char path[4096];
    snprintf(path, sizeof path, "%s/limit_fsize.out", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("open %s: %s\n", path, strerrorname_np(errno));
        return 3;
    }
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    long long done = 0;
    while (done < want) {
        size_t n = want - done < (long long)sizeof buf ? (size_t)(want - done) : sizeof buf;
        ssize_t w = write(fd, buf, n);
        if (w <= 0) {
            printf("write failed at %lld: %s\n", done, strerrorname_np(errno));
            return 3;
        }
        done += w;
    }
    close(fd);
    printf("wrote %lld\n", done);
    return 0;
}
