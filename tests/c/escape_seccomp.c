/* A second seccomp listener (issue #2, item 11). If the program could install a filter with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER that returns USER_NOTIF for openat, its own listener would
 * be asked before warden's agent, and could answer CONTINUE: the kernel would then open the
 * path itself. This program tries exactly that, with a thread serving its listener.
 *
 * usage: escape_seccomp SECRET_FILE
 */
#include "escape_common.h"
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

static int listener = -1;

static void *serve(void *arg) {
    (void)arg;
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
        return NULL;
    struct seccomp_notif *req = calloc(1, sizes.seccomp_notif > sizeof *req ? sizes.seccomp_notif : sizeof *req);
    struct seccomp_notif_resp *resp = calloc(1, sizes.seccomp_notif_resp > sizeof *resp ? sizes.seccomp_notif_resp : sizeof *resp);
    for (;;) {
        memset(req, 0, sizes.seccomp_notif);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        memset(resp, 0, sizes.seccomp_notif_resp);
        resp->id = req->id;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);
    }
}

int main(int argc, char **argv) {
    setup_output();
    if (argc != 2) {
        fprintf(stderr, "usage: %s SECRET_FILE\n", argv[0]);
        return 2;
    }
    const char *secret = argv[1];
    result_rc("benign_no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));

    /* Benign: a plain filter (allow everything) may be added. */
    struct sock_filter allow_all[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog allow_prog = {.len = 1, .filter = allow_all};
    result_rc("benign_plain_filter", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &allow_prog));

    /* A filter that notifies its own listener for openat, everything else allowed. */
    struct sock_filter notify_openat[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof notify_openat / sizeof notify_openat[0], .filter = notify_openat};
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    result("new_listener", rc >= 0, errno);
    /* Flags in the upper half of the register (the kernel reads an unsigned int). */
    long rc2 = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0x100000000UL | SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    result("new_listener_highbits", rc2 >= 0, errno);
    if (rc2 >= 0 && rc < 0)
        rc = rc2;
    /* With another flag in the same call. */
    long rc3 = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_LOG, &prog);
    result("new_listener_with_log", rc3 >= 0, errno);
    if (rc3 >= 0 && rc < 0)
        rc = rc3;

    if (rc >= 0) {
        listener = (int)rc;
        pthread_t t;
        pthread_create(&t, NULL, serve, NULL);
    }
    /* Whatever happened above, the secret stays out of reach (through openat, which the rogue
     * filter would hand to the rogue listener). */
    try_open_read("open_secret_after", AT_FDCWD, secret);
    try_open_read("open_shadow_after", AT_FDCWD, "/etc/shadow");
    done();
    fflush(stdout);
    _exit(0);
}
