/* filter-floor: the kernel's floor for "any seccomp filter": installs a one-instruction filter
 * that allows every call, then execs. The kernel's action cache answers every call without
 * running it, so what remains is the slow syscall entry a filtered task takes; warden's own
 * filter cannot cost less on a call it lets through.
 *
 * Usage: filter-floor PROGRAM [ARGS...] */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: filter-floor PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {.len = 1, .filter = allow};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
        fprintf(stderr, "filter-floor: cannot install the filter: %s\n", strerror(errno));
        return 125;
    }
    execv(argv[1], argv + 1);
    fprintf(stderr, "filter-floor: cannot run %s: %s\n", argv[1], strerror(errno));
    return 127;
}
