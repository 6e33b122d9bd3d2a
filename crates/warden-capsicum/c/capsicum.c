/* Capsicum's program-side calls for C programs run by warden: see capsicum.h. */
#define _GNU_SOURCE
#include "capsicum.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* One request to warden's agent; the kernel's own answer (no agent) is ENOSYS. */
static long ask(int op, unsigned int a, unsigned int b) {
    long r = syscall(SYS_socket, WARDEN_CAPSICUM_FAMILY + op, a, b);
    if (r < 0 && errno == EAFNOSUPPORT)
        errno = ENOSYS;
    return r;
}

cap_rights_t *warden_cap_rights_init(cap_rights_t *rights, ...) {
    va_list ap;
    uint64_t r;
    rights->cr_rights = 0;
    va_start(ap, rights);
    while ((r = va_arg(ap, uint64_t)) != 0)
        rights->cr_rights |= r;
    va_end(ap);
    return rights;
}

cap_rights_t *warden_cap_rights_set(cap_rights_t *rights, ...) {
    va_list ap;
    uint64_t r;
    va_start(ap, rights);
    while ((r = va_arg(ap, uint64_t)) != 0)
        rights->cr_rights |= r;
    va_end(ap);
    return rights;
}

int warden_cap_rights_is_set(const cap_rights_t *rights, ...) {
    va_list ap;
    uint64_t r, want = 0;
    va_start(ap, rights);
    while ((r = va_arg(ap, uint64_t)) != 0)
        want |= r;
    va_end(ap);
    return (rights->cr_rights & want) == want;
}

int cap_getmode(unsigned int *mode) {
    long r = ask(WARDEN_CAPSICUM_GETMODE, 0, 0);
    if (r < 0)
        return -1;
    *mode = (unsigned int)r;
    return 0;
}

int cap_enter(void) {
    /* The agent first: it says whether it can hold this sandbox's processes to the mode. */
    if (ask(WARDEN_CAPSICUM_ENTER, 0, 0) < 0)
        return -1;
    /* The mark: a filter that allows everything, on every thread. The kernel counts it, copies
     * the count to children and keeps it across exec; nothing can remove it. */
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {.len = 1, .filter = &allow};
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (r != 0) {
        if (r > 0) /* a thread that could not take the filter */
            errno = EAGAIN;
        return -1;
    }
    unsigned int mode = 0;
    if (cap_getmode(&mode) < 0)
        return -1;
    if (mode != 1) {
        errno = ENOSYS;
        return -1;
    }
    return 0;
}

int cap_rights_limit(int fd, const cap_rights_t *rights) {
    if (rights->cr_rights & ~CAP_ALL_KNOWN) {
        errno = EINVAL;
        return -1;
    }
    return ask(WARDEN_CAPSICUM_LIMIT, (unsigned int)fd, (unsigned int)rights->cr_rights) < 0 ? -1 : 0;
}

int cap_rights_get(int fd, cap_rights_t *rights) {
    long r = ask(WARDEN_CAPSICUM_GET, (unsigned int)fd, 0);
    if (r < 0)
        return -1;
    rights->cr_rights = (uint64_t)r;
    return 0;
}

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int pdfork(int *fdp, int flags) {
    int sv[2];
    if (flags & ~PD_CLOEXEC) {
        errno = EINVAL;
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    int pidfd = -1;
    /* x86_64's clone(flags, stack, parent_tid, child_tid, tls); CLONE_PIDFD puts the pidfd at
     * parent_tid. No exit signal in the flags' low byte: no SIGCHLD. */
    long pid = syscall(SYS_clone, (unsigned long)CLONE_PIDFD, NULL, &pidfd, NULL, NULL);
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        /* The child's end: kept across exec, and SIGKILL to this process when the last copy
         * of the process descriptor closes. */
        /* F_SETOWN with its own pid (a register: capability mode allows it; F_SETOWN_EX's
         * pid is in memory, which it does not). */
        if (fcntl(sv[1], F_SETFD, 0) < 0 || fcntl(sv[1], F_SETOWN, getpid()) < 0 ||
            fcntl(sv[1], F_SETSIG, SIGKILL) < 0 ||
            fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_ASYNC) < 0)
            _exit(127);
        /* Closed before the above took hold: no signal came, so act on it now. */
        struct pollfd p = {.fd = sv[1], .events = POLLIN};
        if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
            kill(getpid(), SIGKILL);
        return 0;
    }
    /* The parent's end holds the pidfd and the pid in its own queue, sent from the other end:
     * pdkill and pdwait peek at it. */
    int child = (int)pid;
    char control[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = &child, .iov_len = sizeof child};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
    long sent = sendmsg(sv[1], &msg, MSG_NOSIGNAL);
    int e = errno;
    close(pidfd);
    close(sv[1]);
    if (sent != sizeof child) {
        kill(child, SIGKILL);
        close(sv[0]);
        errno = sent < 0 ? e : EIO;
        return -1;
    }
    if (!(flags & PD_CLOEXEC))
        fcntl(sv[0], F_SETFD, 0);
    *fdp = sv[0];
    return child;
}

/* The pidfd and pid a process descriptor holds (a new descriptor: close it). */
static int peek(int fd, int *pid) {
    char control[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = pid, .iov_len = sizeof *pid};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    long n = recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (n != sizeof *pid || !c || c->cmsg_type != SCM_RIGHTS) {
        errno = n < 0 && errno != EAGAIN ? errno : EBADF;
        return -1;
    }
    int pidfd;
    memcpy(&pidfd, CMSG_DATA(c), sizeof pidfd);
    return pidfd;
}

int pdgetpid(int fd, int *pidp) {
    int pidfd = peek(fd, pidp);
    if (pidfd < 0)
        return -1;
    close(pidfd);
    return 0;
}

int pdkill(int fd, int signum) {
    int pid;
    int pidfd = peek(fd, &pid);
    if (pidfd < 0)
        return -1;
    long r = syscall(SYS_pidfd_send_signal, pidfd, signum, NULL, 0);
    int e = errno;
    close(pidfd);
    errno = e;
    return r < 0 ? -1 : 0;
}

int pdwait(int fd, int *status, int options) {
    int pid;
    int pidfd = peek(fd, &pid);
    if (pidfd < 0)
        return -1;
    siginfo_t info = {0};
    long r = syscall(SYS_waitid, P_PIDFD, pidfd, &info, WEXITED | __WALL | (options & WNOHANG),
                     NULL);
    int e = errno;
    close(pidfd);
    if (r < 0) {
        errno = e;
        return -1;
    }
    if (info.si_pid == 0)
        return 0;
    if (status)
        *status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8
                                              : (info.si_status & 0x7f) |
                                                    (info.si_code == CLD_DUMPED ? 0x80 : 0);
    return info.si_pid;
}

int fdlist_lookup(const char *name) {
    const char *list = getenv("WARDEN_FDLIST");
    size_t n = strlen(name);
    while (list && *list) {
        if (strncmp(list, name, n) == 0 && list[n] == '=')
            return atoi(list + n + 1);
        list = strchr(list, ',');
        if (list)
            list++;
    }
    errno = ENOENT;
    return -1;
}
