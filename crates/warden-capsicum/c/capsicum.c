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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* ---- scrubbed sandbox start (lch_start) ---------------------------------------------------- */

static const char *const right_names[] = {
    "read", "write", "seek", "fstat", "lookup", "create", "mkdir", "unlink", "mmap",
    "fchmod", "fchown", "ioctl", "event", "accept", "connect", "bind", "fexecve", "mknod",
};

static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    if (nfds < 0 || nfds > LC_MAX_FDS || len > LC_MAX_MESSAGE) {
        errno = EMSGSIZE;
        return -1;
    }
    char control[CMSG_SPACE(sizeof(int) * LC_MAX_FDS)] = {0};
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    long n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0)
        return -1;
    if ((size_t)n != len) {
        errno = EIO;
        return -1;
    }
    return 0;
}

static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds) {
    char control[CMSG_SPACE(sizeof(int) * LC_MAX_FDS)] = {0};
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return -1;
    int room = nfds ? *nfds : 0, got = 0, cut = msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (got < room)
                fds[got++] = fd;
            else {
                close(fd);
                cut = 1;
            }
        }
    }
    if (nfds)
        *nfds = got;
    if (cut) {
        for (int i = 0; i < got; i++)
            close(fds[i]);
        if (nfds)
            *nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}

/* Whether fd reads / writes, by its access mode. */
static int access_of(int fd, int *reads, int *writes) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    *reads = *writes = 0;
    if (fl & O_PATH)
        return 0;
    *reads = (fl & O_ACCMODE) != O_WRONLY;
    *writes = (fl & O_ACCMODE) != O_RDONLY;
    return 0;
}

/* A close-on-exec descriptor for fd's object no wider than rights (warden_capsicum::sandbox::
 * narrow): a copy, or the object opened again through /proc/self/fd with the narrower mode. */
static int narrow(int fd, uint64_t rights) {
    int reads, writes;
    struct stat st;
    if (access_of(fd, &reads, &writes) < 0 || fstat(fd, &st) < 0)
        return -1;
    int dir = S_ISDIR(st.st_mode);
    int r = (rights & CAP_READ) != 0, w = (rights & CAP_WRITE) != 0;
    if (!(writes && !w) && !(reads && !r && !dir))
        return fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (S_ISSOCK(st.st_mode)) {
        errno = EOPNOTSUPP;
        return -1;
    }
    int rr = r || (dir && reads);
    int mode = rr && w ? O_RDWR : rr ? O_RDONLY : w ? O_WRONLY : O_PATH;
    int fl = fcntl(fd, F_GETFL);
    int kept = fl & (O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_SYNC | O_DSYNC);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int n = open(path, mode | kept | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (n < 0)
        return -1;
    if (mode != O_PATH) {
        fcntl(n, F_SETFL, kept);
        if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
            lseek(n, lseek(fd, 0, SEEK_CUR), SEEK_SET);
    }
    return n;
}

static void rights_text(uint64_t rights, char *out, size_t size) {
    out[0] = 0;
    for (size_t i = 0; i < sizeof right_names / sizeof *right_names; i++)
        if (rights & (1ULL << i)) {
            if (out[0])
                strncat(out, ",", size - strlen(out) - 1);
            strncat(out, right_names[i], size - strlen(out) - 1);
        }
}

static int grant(int grants, int fd, uint64_t rights) {
    if (send_fds(grants, &rights, sizeof rights, &fd, 1) < 0)
        return -1;
    int answer, none = 0;
    ssize_t n = recv_fds(grants, &answer, sizeof answer, NULL, &none);
    if (n != sizeof answer) {
        errno = n < 0 ? errno : EPIPE;
        return -1;
    }
    if (answer) {
        errno = answer;
        return -1;
    }
    return 0;
}

int lch_start(struct lc_host *h, const char *warden, const char *const *warden_args,
              const char *const *argv, const struct lc_named_fd *fds, int nfds) {
    int sv[2], gv[2];
    if (nfds < 0 || nfds > 64 || !argv || !argv[0]) {
        errno = EINVAL;
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gv) < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    int pass[66], npass = 0, e = 0;
    char specs[66][256];
    for (int i = 0; i < nfds && !e; i++) {
        if (!strcmp(fds[i].name, "host")) {
            e = EINVAL;
            break;
        }
        int n = narrow(fds[i].fd, fds[i].rights.cr_rights);
        if (n < 0) {
            e = errno;
            break;
        }
        char text[200];
        rights_text(fds[i].rights.cr_rights, text, sizeof text);
        pass[npass] = n;
        snprintf(specs[npass++], sizeof specs[0], "%s=%d:%s", fds[i].name, n, text);
    }
    pass[npass] = sv[1];
    snprintf(specs[npass++], sizeof specs[0], "host=%d:read,write,event", sv[1]);
    int nargs = 0, nw = 0, na = 0;
    while (warden_args && warden_args[nw])
        nw++;
    while (argv[na])
        na++;
    const char **args = e ? NULL : calloc(4 + nw + 2 * nfds + 2 + 2 + 1 + na + 1, sizeof *args);
    if (!e && !args)
        e = ENOMEM;
    char grant_fd[16];
    snprintf(grant_fd, sizeof grant_fd, "%d", gv[1]);
    if (!e) {
        args[nargs++] = "warden";
        args[nargs++] = "run";
        args[nargs++] = "--capability-mode";
        for (int i = 0; i < nw; i++)
            args[nargs++] = warden_args[i];
        for (int i = 0; i < npass; i++) {
            args[nargs++] = "--fd-inherited";
            args[nargs++] = specs[i];
        }
        args[nargs++] = "--grant-socket";
        args[nargs++] = grant_fd;
        args[nargs++] = "--";
        for (int i = 0; i < na; i++)
            args[nargs++] = argv[i];
        args[nargs] = NULL;
        int pd;
        int pid = pdfork(&pd, PD_CLOEXEC);
        if (pid == 0) {
            for (int i = 0; i < npass; i++)
                fcntl(pass[i], F_SETFD, 0);
            fcntl(gv[1], F_SETFD, 0);
            execv(warden, (char *const *)args);
            _exit(127);
        }
        if (pid < 0)
            e = errno;
        else
            h->pd = pd;
        free(args);
    }
    for (int i = 0; i < npass; i++)
        if (pass[i] != sv[1])
            close(pass[i]);
    close(sv[1]);
    close(gv[1]);
    if (e) {
        close(sv[0]);
        close(gv[0]);
        errno = e;
        return -1;
    }
    h->sock = sv[0];
    h->grants = gv[0];
    return 0;
}

int lch_send(struct lc_host *h, const void *buf, size_t len, const int *fds,
             const cap_rights_t *rights, int nfds) {
    int narrowed[LC_MAX_FDS] = {0}, n = 0, e = 0;
    if (nfds < 0 || nfds > LC_MAX_FDS) {
        errno = EMSGSIZE;
        return -1;
    }
    for (; n < nfds; n++) {
        narrowed[n] = narrow(fds[n], rights[n].cr_rights);
        if (narrowed[n] < 0 || grant(h->grants, narrowed[n], rights[n].cr_rights) < 0) {
            e = errno;
            if (narrowed[n] >= 0)
                n++;
            break;
        }
    }
    if (!e && send_fds(h->sock, buf, len, narrowed, nfds) < 0)
        e = errno;
    for (int i = 0; i < n; i++)
        close(narrowed[i]);
    errno = e;
    return e ? -1 : 0;
}

ssize_t lch_recv(struct lc_host *h, void *buf, size_t len, int *fds, int *nfds) {
    return recv_fds(h->sock, buf, len, fds, nfds);
}

int lch_stop(struct lc_host *h, int *status) {
    close(h->sock);
    close(h->grants);
    pdkill(h->pd, SIGKILL);
    int r = pdwait(h->pd, status, 0);
    close(h->pd);
    return r < 0 ? -1 : 0;
}

int lcs_get(void) { return fdlist_lookup("host"); }

ssize_t lcs_recv(int sock, void *buf, size_t len, int *fds, int *nfds) {
    return recv_fds(sock, buf, len, fds, nfds);
}

int lcs_send(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    return send_fds(sock, buf, len, fds, nfds);
}
