/* limit_nofile MAX: opens /dev/null until an open fails or MAX are open (issue #4). Runs inside
 * the sandbox. Prints "opened=K errno=NAME maxfd=F" (NAME "none" when all MAX opened; F the
 * highest descriptor obtained, -1 if none) and exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: limit_nofile MAX\n");
        return 3;
    }
    int max = atoi(argv[1]), opened = 0, err = 0, maxfd = -1;
    while (opened < max) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            err = errno;
            break;
        }
        opened++;
        if (fd > maxfd)
            maxfd = fd;
    }
    printf("opened=%d errno=%s maxfd=%d\n", opened, err ? strerrorname_np(err) : "none", maxfd);
    return 0;
}
