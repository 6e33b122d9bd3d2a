/* Runs a command under a seccomp filter that refuses namespaces the way a host does, for
 * warden's no-namespace tests (crates/warden-cli/tests/nouserns.rs):
 *
 *   nouserns_wrap docker CMD...   Docker's and Kubernetes' default profile: clone and unshare
 *                                 with any CLONE_NEW* flag EPERM, clone3 ENOSYS, setns EPERM.
 *   nouserns_wrap eperm CMD...    a security module's refusal of the user namespace alone:
 *                                 CLONE_NEWUSER EPERM, other namespace flags allowed.
 *   nouserns_wrap enospc CMD...   user.max_user_namespaces=0: CLONE_NEWUSER ENOSPC ("No space
 *                                 left on device"), other namespace flags allowed.
 *   nouserns_wrap nocaps CMD...   Ubuntu 24.04's AppArmor restriction, as far as a sandbox
 *                                 sees it: clone may make namespaces, but the first privileged
 *                                 step in them, unshare with a namespace flag, is EPERM.
 *
 * clone3 is ENOSYS in every mode (its flags are in memory a filter cannot read). The filter is
 * inherited by the command and everything it starts, as a container's is. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ALL_NEW (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                 CLONE_NEWPID | CLONE_NEWNET | 0x80 /* CLONE_NEWTIME */)
#define NR offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define ARG0 offsetof(struct seccomp_data, args[0])

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: nouserns_wrap docker|eperm|enospc|nocaps CMD...\n");
        return 2;
    }
    unsigned mask = ALL_NEW, unshare_mask = ALL_NEW, err = EPERM, setns_err = EPERM;
    if (strcmp(argv[1], "docker") == 0) {
    } else if (strcmp(argv[1], "eperm") == 0) {
        mask = unshare_mask = CLONE_NEWUSER;
        setns_err = 0;
    } else if (strcmp(argv[1], "nocaps") == 0) {
        mask = 0;
        setns_err = 0;
    } else if (strcmp(argv[1], "enospc") == 0) {
        mask = unshare_mask = CLONE_NEWUSER;
        err = ENOSPC;
        setns_err = 0;
    } else {
        fprintf(stderr, "nouserns_wrap: unknown mode %s\n", argv[1]);
        return 2;
    }
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setns, 0, 2),
        BPF_STMT(BPF_RET | BPF_K, setns_err ? (SECCOMP_RET_ERRNO | setns_err) : SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, unshare_mask, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fprog = {.len = sizeof prog / sizeof prog[0], .filter = prog};
    /* As a container engine does: no_new_privs unless the caller may install filters anyway. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("nouserns_wrap: no_new_privs");
        return 2;
    }
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
        perror("nouserns_wrap: seccomp");
        return 2;
    }
    execvp(argv[2], argv + 2);
    perror("nouserns_wrap: exec");
    return 127;
}
