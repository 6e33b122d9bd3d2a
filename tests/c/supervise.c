/* Another supervisor above warden: installs a seccomp filter with a user-notification listener
 * (for acct(2) only, which nothing here calls), keeps the listener open in a child that answers
 * every notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE (and dies with its parent), then
 * execs argv[1..]. A process under it that installs a filter with a listener of its own gets
 * EBUSY: the kernel allows one listener per filter chain.
 *
 * With SUPERVISE_DENY=process_vm_readv, the filter also refuses process_vm_readv with EPERM (as
 * some container profiles do), so the agent below must take its other route. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: supervise PROGRAM [ARG...]\n");
        return 2;
    }
    const char *deny = getenv("SUPERVISE_DENY");
    int deny_vm = deny && strcmp(deny, "process_vm_readv") == 0;
    int listen = !(getenv("SUPERVISE_NO_LISTENER"));
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_acct, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny_vm ? SYS_process_vm_readv : 0xfffff, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fprog = {sizeof prog / sizeof prog[0], prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        perror("supervise: no_new_privs");
        return 2;
    }
    if (!listen) {
        prog[2] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    }
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                      listen ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &fprog);
    if (fd < 0) {
        perror("supervise: seccomp");
        return 2;
    }
    if (listen) {
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
            perror("supervise: fork");
            return 2;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            for (;;) {
                struct seccomp_notif req;
                memset(&req, 0, sizeof req);
                if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                    if (errno == EINTR || errno == ENOENT)
                        continue;
                    _exit(0);
                }
                struct seccomp_notif_resp resp = {.id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
                ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            }
        }
        close(fd);
    }
    execv(argv[1], argv + 1);
    perror("supervise: exec");
    return 127;
}
