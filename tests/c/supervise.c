/* Another supervisor above warden: installs a seccomp filter with a user-notification listener
 * (for acct(2) only, which nothing here calls), keeps the listener open in a child that answers
 * every notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE (and dies with its parent), then
 * execs argv[1..]. A process under it that installs a filter with a listener of its own gets
 * EBUSY: the kernel allows one listener per filter chain.
 *
 * SUPERVISE_DENY=NAME[,NAME...] (process_vm_readv, process_vm_writev, pread64, pwrite64,
 * pidfd_getfd) also refuses those calls with EPERM, as some container profiles do (Docker's
 * default refuses pidfd_getfd without CAP_SYS_PTRACE), so the agent below must take its other
 * route (or refuse). The mount API's calls (open_tree, fsopen, mount_setattr) are refused with
 * ENOSYS instead, as by a kernel or a container profile without them.
 * SUPERVISE_NO_WAIT_KILLABLE=1 makes seccomp(SECCOMP_SET_MODE_FILTER) with
 * SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV fail with EINVAL, as a kernel before 5.19 does (RHEL
 * 9's 5.14), so warden must install its listener without it. SUPERVISE_NO_LISTENER=1 installs the filter without a listener
 * (acct fails with ENOSYS), so warden can start under it. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
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
    int listen = !(getenv("SUPERVISE_NO_LISTENER"));
    int no_wait_killable = getenv("SUPERVISE_NO_WAIT_KILLABLE") != NULL;
    struct sock_filter prog[32];
    int n = 0;
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_acct, 0, 1);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                             listen ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ERRNO | ENOSYS);
    if (no_wait_killable) {
        /* seccomp(SECCOMP_SET_MODE_FILTER, flags & WAIT_KILLABLE_RECV, ...): EINVAL, the answer of
         * a kernel that does not know the flag. The arguments are 64-bit; the flags fit in the
         * low half (x86-64 is little-endian). */
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 5);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 0, 3);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL);
        /* Every path above leaves nr or an argument in the accumulator: load nr again. */
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    }
    static const struct {
        const char *name;
        int nr;
        int err;
    } known[] = {{"process_vm_readv", SYS_process_vm_readv, EPERM},
                 {"process_vm_writev", SYS_process_vm_writev, EPERM},
                 {"pread64", SYS_pread64, EPERM},
                 {"pwrite64", SYS_pwrite64, EPERM},
                 {"pidfd_getfd", SYS_pidfd_getfd, EPERM},
                 {"open_tree", 428, ENOSYS},
                 {"fsopen", 430, ENOSYS},
                 {"mount_setattr", 442, ENOSYS}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (!deny)
            break;
        char list[256];
        snprintf(list, sizeof list, ",%s,", deny);
        char want[64];
        snprintf(want, sizeof want, ",%s,", known[i].name);
        if (!strstr(list, want))
            continue;
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, known[i].nr, 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | known[i].err);
    }
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = {(unsigned short)n, prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        perror("supervise: no_new_privs");
        return 2;
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
                /* The death signal alone left this child behind once (a run as nobody through
                 * setpriv, the child asleep in RECV after warden ended): look at the parent every
                 * second as well. */
                struct pollfd pfd = {.fd = fd, .events = POLLIN};
                if (poll(&pfd, 1, 1000) == 0) {
                    if (getppid() != parent)
                        _exit(0);
                    continue;
                }
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
