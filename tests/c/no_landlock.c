/* Runs a command on a kernel that looks as if it had no Landlock: a seccomp filter makes
 * landlock_create_ruleset, landlock_add_rule and landlock_restrict_self fail with ENOSYS, as they
 * do where Landlock is not built in. The degraded-mode tests run warden under it.
 *
 *     no_landlock PROGRAM [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: no_landlock PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 444, 0, 2), /* landlock_create_ruleset */
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 446, 1, 0), /* ... landlock_restrict_self */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fprog = {.len = sizeof prog / sizeof prog[0], .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
        perror("no_landlock: seccomp");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror("no_landlock: exec");
    return 127;
}
