/* The program's first call, made as soon as it runs: memfd_create, which the agent performs
 * (it creates every memfd with MFD_NOEXEC_SEAL). In a view that decides execs, the program's
 * exec does not wait for the agent, only for warden to hold the listener; had it run before,
 * the filter would have no listener and this call would fail with ENOSYS.
 * Prints "first call ok" or "first call failed ERRNO". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void) {
    int fd = memfd_create("first", MFD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        printf("first call failed %s\n", strerrorname_np(e) ? strerrorname_np(e) : "?");
        return 1;
    }
    printf("first call ok\n");
    return 0;
}
