/* Capsicum's program-side calls for C programs run by warden (crate warden-capsicum, module
 * `program`, says how they work; docs/design.md section 9).
 *
 * Works under `warden run --capsicum` (the program enters capability mode when it chooses) and
 * `warden run --capability-mode` (it is in it from the start). Anywhere else every call fails
 * with ENOSYS, as Capsicum's do on a kernel built without it.
 *
 * Build: cc -c capsicum.c, and link capsicum.o with the program. */
#ifndef WARDEN_CAPSICUM_H
#define WARDEN_CAPSICUM_H

#include <errno.h>
#include <stdint.h>

/* FreeBSD's errnos are other numbers on Linux: warden answers these (docs/design.md 9). */
#define ECAPMODE EPERM      /* a global namespace named in capability mode */
#define ENOTCAPABLE EACCES  /* a descriptor lacks a right (the kernel's own refusals are EBADF) */

/* The rights, bit for bit warden_capsicum::Rights::bits (a test compares them). */
#define CAP_READ     (1ULL << 0)
#define CAP_WRITE    (1ULL << 1)
#define CAP_SEEK     (1ULL << 2)
#define CAP_FSTAT    (1ULL << 3)
#define CAP_LOOKUP   (1ULL << 4)
#define CAP_CREATE   (1ULL << 5)
#define CAP_MKDIRAT  (1ULL << 6)
#define CAP_UNLINKAT (1ULL << 7)
#define CAP_MMAP     (1ULL << 8)
#define CAP_FCHMOD   (1ULL << 9)
#define CAP_FCHOWN   (1ULL << 10)
#define CAP_IOCTL    (1ULL << 11)
#define CAP_EVENT    (1ULL << 12)
#define CAP_ACCEPT   (1ULL << 13)
#define CAP_CONNECT  (1ULL << 14)
#define CAP_BIND     (1ULL << 15)
#define CAP_FEXECVE  (1ULL << 16)
#define CAP_MKNODAT  (1ULL << 17)
#define CAP_ALL_KNOWN ((1ULL << 18) - 1)

/* The requests travel as socket(2) calls of these address families (warden_capsicum::request). */
#define WARDEN_CAPSICUM_FAMILY 0x5700
#define WARDEN_CAPSICUM_GETMODE 1
#define WARDEN_CAPSICUM_ENTER 2
#define WARDEN_CAPSICUM_LIMIT 3
#define WARDEN_CAPSICUM_GET 4

typedef struct {
    uint64_t cr_rights;
} cap_rights_t;

cap_rights_t *warden_cap_rights_init(cap_rights_t *rights, ...);
cap_rights_t *warden_cap_rights_set(cap_rights_t *rights, ...);
int warden_cap_rights_is_set(const cap_rights_t *rights, ...);
/* As FreeBSD's: cap_rights_init(&r, CAP_READ, CAP_SEEK). */
#define cap_rights_init(...) warden_cap_rights_init(__VA_ARGS__, 0ULL)
#define cap_rights_set(...) warden_cap_rights_set(__VA_ARGS__, 0ULL)
#define cap_rights_is_set(...) warden_cap_rights_is_set(__VA_ARGS__, 0ULL)

/* Enters capability mode for good: this process, its threads, and what it starts. */
int cap_enter(void);
/* *mode = 1 in capability mode, 0 outside it. */
int cap_getmode(unsigned int *mode);
/* Narrows what fd may do (never widens: ENOTCAPABLE). Taking read or write away re-opens the
 * descriptor at the same number with the narrower access mode, so the kernel refuses them
 * (EBADF); a socket cannot be re-opened, and its limit fails (ENOTCAPABLE) unchanged. */
int cap_rights_limit(int fd, const cap_rights_t *rights);
int cap_rights_get(int fd, cap_rights_t *rights);

/* Process descriptors (FreeBSD's pdfork, pdkill, pdwait, pdgetpid), on pidfds. They need no
 * warden and work in capability mode, where kill(2) of another pid does not.
 *
 * pdfork returns 0 in the child and the child's pid in the parent, and puts the process
 * descriptor in *fdp. The child is made with clone(CLONE_PIDFD) and no exit signal: its parent
 * gets no SIGCHLD. The descriptor is one end of a unix socket pair whose queue holds the
 * child's pidfd (and pid); the child keeps the other end, across exec, with O_ASYNC and
 * F_SETSIG(SIGKILL) and itself as owner, so when the last copy of the process descriptor is
 * closed the kernel sends the child SIGKILL. When the child exits its end closes, and poll
 * reports POLLHUP on the process descriptor (poll for POLLHUP, as on FreeBSD: POLLIN means
 * nothing). Limits, documented in docs/design.md section 9: a child that closes its end (or
 * forks before exiting, so a grandchild holds it) is not killed by the close, and the exit shows
 * only when every holder is gone; an exited child stays a zombie until pdwait or the parent's
 * own exit (Linux does not reap a child without an exit signal).
 *
 * flags: PD_CLOEXEC makes the process descriptor close-on-exec. */
#define PD_CLOEXEC 0x1
int pdfork(int *fdp, int flags);
int pdkill(int fd, int signum);
/* Waits for the process (options: WNOHANG); *status as waitpid's; returns its pid (0: still
 * running under WNOHANG). */
int pdwait(int fd, int *status, int options);
int pdgetpid(int fd, int *pidp);

/* libcapsicum's fdlist_lookup: the descriptor warden's --fd named NAME (WARDEN_FDLIST). */
int fdlist_lookup(const char *name);

/* Scrubbed sandbox start (libcapsicum's lch_start; warden_capsicum::sandbox says how, and
 * speaks the same protocol). The host starts PROGRAM under `WARDEN run --capability-mode`, with
 * WARDEN_ARGS (NULL-terminated, e.g. {"--exec", DIR, NULL}) before the program, holding
 * exactly the descriptors FDS (each narrowed to its rights' access mode, found by name in the
 * sandbox with fdlist_lookup) and a SOCK_SEQPACKET socket to the host, named "host" (lcs_get).
 * lch_send passes more descriptors later, each narrowed and recorded with its rights by the
 * sandbox's agent before it is sent, so it arrives with exactly them. lch_stop (or the host's
 * exit, which closes the process descriptor) kills warden, and the sandbox with it. A message
 * is at most LC_MAX_MESSAGE bytes and LC_MAX_FDS descriptors. */
#include <stddef.h>
#include <sys/types.h>
#define LC_MAX_MESSAGE 65536
#define LC_MAX_FDS 16
struct lc_named_fd {
    const char *name;
    int fd;
    cap_rights_t rights;
};
struct lc_host {
    int pd;     /* the process descriptor of warden's process */
    int sock;   /* the host's end of the socket */
    int grants; /* the socket to the sandbox's agent */
};
int lch_start(struct lc_host *h, const char *warden, const char *const *warden_args,
              const char *const *argv, const struct lc_named_fd *fds, int nfds);
/* Sends LEN bytes and NFDS descriptors, FDS[i] with RIGHTS[i]. */
int lch_send(struct lc_host *h, const void *buf, size_t len, const int *fds,
             const cap_rights_t *rights, int nfds);
/* Receives one message (0 bytes and no descriptor: the sandbox closed its end); *nfds holds
 * the room in FDS on entry and the descriptors received on return. */
ssize_t lch_recv(struct lc_host *h, void *buf, size_t len, int *fds, int *nfds);
/* Closes the sockets, kills warden and waits for it; its status as waitpid's. */
int lch_stop(struct lc_host *h, int *status);
/* In the sandbox: its socket to the host, and messages on it (as lch_recv; lcs_send carries
 * descriptors without rights the host need trust). */
int lcs_get(void);
ssize_t lcs_recv(int sock, void *buf, size_t len, int *fds, int *nfds);
int lcs_send(int sock, const void *buf, size_t len, const int *fds, int nfds);

#endif
