/* limit_fdmeta: tries to change the file behind its stdin, a file warden opened for it outside
 * the policy (--stdin), through the descriptor (issue #4). Runs inside the sandbox.
 * Prints "ATTEMPT=OK" or "ATTEMPT=ERRNO" for each, then "DONE"; exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static void report(const char *name, int r) {
    printf("%s=%s\n", name, r >= 0 ? "OK" : strerrorname_np(errno));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    report("fchmod", fchmod(0, 0777));
    report("fchown", fchown(0, 1234, 1234));
    struct timespec zero[2] = {{0, 0}, {0, 0}};
    report("futimens", futimens(0, zero));
    report("fsetxattr", fsetxattr(0, "user.warden_test", "1", 1, 0));
    report("write", (int)write(0, "x", 1));
    report("ftruncate", ftruncate(0, 0));
    report("fallocate", fallocate(0, 0, 0, 4096));
    int fd = open("/proc/self/fd/0", O_RDWR);
    report("reopen_rw", fd);
    if (fd >= 0)
        report("write_reopened", (int)write(fd, "x", 1));
    report("chmod_proc_link", chmod("/proc/self/fd/0", 0777));
    printf("DONE\n");
    return 0;
}
