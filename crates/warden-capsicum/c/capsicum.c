/* Capsicum's program-side calls for C programs run by warden: see capsicum.h. */
#define _GNU_SOURCE
#include "capsicum.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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
